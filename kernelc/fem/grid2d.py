"""`Grid2D`: a regular 2-D grid of res[0] x res[1] square cells (Warp's `warp.fem.Grid2D`).

Numbering (Warp's, so that node and element indices agree):
- cell (i, j) has index i * res[1] + j; vertex (i, j) has index i * (res[1] + 1) + j;
- a side is (axis, origin): axis 0 sides are the lines x = const, axis 1 sides y = const;
  origin = (altitude along the axis, longitude along the side) in vertex units. Sides
  [0, 2 * cells) are the low sides of cells (axis 0 first, cell-ordered, with origin
  oriented so that altitude comes first), then the res[1] sides x = res[0], then the
  res[0] sides y = res[1];
- boundary side b is side (b // 2 < res[1] ? axis 0 : axis 1) at the low (b even) or high
  (b odd) end, longitude b // 2 (minus res[1] for axis 1).
"""

from functools import cache
from types import SimpleNamespace
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.geometry import Geometry, check_environment_count
from kernelc.fem.types import OUTSIDE, coords_type, vec_type


class Grid2D(Geometry):
    """A regular 2-D grid.

    Args:
        res: Number of cells along each axis.
        bounds_lo: Position of the lower corner (default (0, 0)).
        bounds_hi: Position of the upper corner (default (1, 1)).
        scalar_type: `kc.float32` or `kc.float64` positions.
        env_count: Number of copies of the grid, each an environment of its own (Warp's
            numbering: cells, vertices, sides and boundary sides environment after
            environment).
    """

    dimension = 2

    def __init__(self, res: Any, bounds_lo: Any = None, bounds_hi: Any = None,
                 scalar_type: Any = kc.float32, env_count: int = 1) -> None:
        super().__init__(scalar_type)
        self._env_count = check_environment_count(env_count)
        vec2 = vec_type(2, scalar_type)
        self._res = kc.vec2i(int(res[0]), int(res[1]))
        lo = (0.0, 0.0) if bounds_lo is None else (float(bounds_lo[0]), float(bounds_lo[1]))
        hi = (1.0, 1.0) if bounds_hi is None else (float(bounds_hi[0]), float(bounds_hi[1]))
        self.bounds_lo = vec2(*lo)
        self.bounds_hi = vec2(*hi)
        # Rounded in Warp's order: extents in the scalar type, then extent / res in Python.
        extents = vec2(float(self.bounds_hi[0]) - float(self.bounds_lo[0]),
                       float(self.bounds_hi[1]) - float(self.bounds_lo[1]))
        self.extents = extents
        self.cell_size = vec2(float(extents[0]) / self._res[0], float(extents[1]) / self._res[1])
        funcs = _grid2d_funcs(scalar_type)
        self.CellArg, self.SideArg = funcs.CellArg, funcs.SideArg
        # Boundary sides are computed from the side argument, as in Warp.
        self.SideIndexArg = self.SideArg
        for name in self.CELL_FUNCS + self.SIDE_FUNCS + (
                "boundary_side_index", "get_cell", "cell_environment_index",
                "side_environment_index"):
            setattr(self, name, getattr(funcs, name))
        self._args: dict[Any, Any] = {}

    @property
    def res(self) -> Any:
        """Number of cells along each axis (a `kc.vec2i`)."""
        return self._res

    @property
    def origin(self) -> Any:
        """Position of the lower corner."""
        return self.bounds_lo

    @property
    def cell_lookup(self) -> Any:
        """The `cell_lookup` overloads (`lookup.py`): with several environments, those
        taking an environment index."""
        from kernelc.fem.lookup import grid_cell_lookup

        return grid_cell_lookup(2, self.scalar_type, self.CellArg, self._env_count > 1)

    def environment_count(self) -> int:
        return self._env_count

    def _cells(self) -> int:
        """Cells of one environment."""
        return int(self._res[0] * self._res[1])

    def _sides(self) -> int:
        """Sides of one environment."""
        return 2 * self._cells() + int(self._res[0] + self._res[1])

    def cell_count(self) -> int:
        return self._env_count * self._cells()

    def vertex_count(self) -> int:
        return self._env_count * int((self._res[0] + 1) * (self._res[1] + 1))

    def side_count(self) -> int:
        return self._env_count * self._sides()

    def boundary_side_count(self) -> int:
        return self._env_count * 2 * int(self._res[0] + self._res[1])

    def reference_cell(self) -> Element:
        return Element.SQUARE

    def reference_side(self) -> Element:
        return Element.LINE_SEGMENT

    def cell_arg_value(self, device: Any = None) -> Any:
        key = ("cell", str(kc.get_device(device)))
        if key not in self._args:
            arg = self.CellArg()
            arg.res = self._res
            arg.cell_size = self.cell_size
            arg.origin = self.bounds_lo
            arg.env_count = self._env_count
            self._args[key] = arg
        return self._args[key]

    def side_arg_value(self, device: Any = None) -> Any:
        key = ("side", str(kc.get_device(device)))
        if key not in self._args:
            arg = self.SideArg()
            arg.cell_arg = self.cell_arg_value(device)
            arg.cell_count = self._cells()  # of one environment
            arg.axis_offsets = kc.vec2i(0, int(self._res[1]))
            self._args[key] = arg
        return self._args[key]

    def host_cell_positions(self, coords: np.ndarray) -> np.ndarray:
        """(cells, points, dimension) world positions of cell coordinates `coords`, float64."""
        res = tuple(int(r) for r in self._res)
        cell_xyz = np.stack(np.unravel_index(np.arange(self.cell_count()) % self._cells(),
                                             res), axis=1)
        size = np.array([float(c) for c in self.cell_size], dtype=np.float64)
        lo = np.array([float(c) for c in self.bounds_lo], dtype=np.float64)
        local = cell_xyz[:, None, :] + np.asarray(coords, dtype=np.float64)[None, :, :len(res)]
        return local * size + lo

    # ---- host topology -----------------------------------------------------------------

    def _side_index(self, axis: np.ndarray, altitude: np.ndarray,
                    longitude: np.ndarray) -> np.ndarray:
        res = np.array([int(self._res[0]), int(self._res[1])])
        cells = self._cells()
        top = altitude == res[axis]
        offsets = np.where(axis == 0, 0, res[1])
        # A low side (axis 0 at x = i or axis 1 at y = j) is numbered after its cell.
        cx = np.where(axis == 0, altitude, longitude)
        cy = np.where(axis == 0, longitude, altitude)
        low = axis * cells + cx * res[1] + cy
        return np.where(top, 2 * cells + offsets + longitude, low).astype(np.int32)

    def boundary_side_indices(self) -> np.ndarray:
        res = np.array([int(self._res[0]), int(self._res[1])])
        b = np.arange(self.boundary_side_count() // self._env_count)
        along, border = b // 2, b % 2
        axis = (along >= res[1]).astype(np.int64)
        longitude = along - np.where(axis == 0, 0, res[1])
        local = self._side_index(axis, border * res[axis], longitude)
        return _tile(local, self._env_count, self._sides())

    def _decode_sides(self, sides: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        res = np.array([int(self._res[0]), int(self._res[1])])
        cells = self._cells()
        sides = np.asarray(sides, dtype=np.int64) % self._sides()
        low = sides < 2 * cells
        axis_low = sides // cells
        c = sides - axis_low * cells
        cx, cy = c // res[1], c % res[1]
        t = sides - 2 * cells
        axis_top = (t >= res[1]).astype(np.int64)
        axis = np.where(low, axis_low, axis_top)
        altitude = np.where(low, np.where(axis_low == 0, cx, cy), res[np.minimum(axis, 1)])
        longitude = np.where(low, np.where(axis_low == 0, cy, cx),
                             t - np.where(axis_top == 0, 0, res[1]))
        return axis, altitude, longitude

    def side_cells(self, sides: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        res = np.array([int(self._res[0]), int(self._res[1])])
        axis, altitude, longitude = self._decode_sides(sides)
        inner_alt = np.where(altitude == 0, 0, altitude - 1)
        outer_alt = np.where(altitude == res[axis], res[axis] - 1, altitude)

        first = np.asarray(sides, dtype=np.int64) // self._sides() * self._cells()

        def cell(alt: np.ndarray) -> np.ndarray:
            cx = np.where(axis == 0, alt, longitude)
            cy = np.where(axis == 0, longitude, alt)
            return (first + cx * res[1] + cy).astype(np.int32)

        return cell(inner_alt), cell(outer_alt)


@cache
def _grid2d_funcs(scalar: Any) -> SimpleNamespace:
    """Argument structs and device funcs of 2-D grids with `scalar` positions."""
    vec2 = vec_type(2, scalar)
    Coords = coords_type(scalar)
    suffix = "" if scalar == kc.float32 else "_f64"

    CellArg = kc.struct(type(f"Grid2DCellArg{suffix}", (), {"__annotations__": {
        "res": kc.vec2i, "cell_size": vec2, "origin": vec2, "env_count": int}}))
    SideArg = kc.struct(type(f"Grid2DSideArg{suffix}", (), {"__annotations__": {
        "cell_count": int, "axis_offsets": kc.vec2i, "cell_arg": CellArg}}))

    @kc.func
    def get_cell(res: kc.vec2i, cell_index: int):
        # the cell's place in its environment
        local = cell_index % (res[0] * res[1])
        x = local // res[1]
        return kc.vec2i(x, local - res[1] * x)

    @kc.func
    def env_sides(arg: SideArg):
        # sides of one environment
        return 2 * arg.cell_count + arg.cell_arg.res[0] + arg.cell_arg.res[1]

    @kc.func
    def orient_vec(axis: int, v: vec2):
        return kc.where(axis == 0, v, vec2(v[1], v[0]))

    @kc.func
    def orient_cell(axis: int, v: kc.vec2i):
        return kc.where(axis == 0, v, kc.vec2i(v[1], v[0]))

    @kc.func
    def get_side(arg: SideArg, global_side: int):
        # (axis, (altitude, longitude)) of a side, in its environment
        side_index = global_side % env_sides(arg)
        res = arg.cell_arg.res
        if side_index < 2 * arg.cell_count:
            axis = side_index // arg.cell_count
            cell = get_cell(res, side_index - axis * arg.cell_count)
            return axis, orient_cell(axis, cell)
        t = side_index - 2 * arg.cell_count
        axis = kc.where(t < arg.axis_offsets[1], 0, 1)
        return axis, kc.vec2i(res[axis], t - arg.axis_offsets[axis])

    @kc.func
    def is_flipped(axis: int, origin: kc.vec2i):
        # Side coordinates run so that the (inner cell, side) frame is direct.
        return (axis == 0) == (origin[0] == 0)

    @kc.func
    def side_index_of(arg: SideArg, axis: int, origin: kc.vec2i):
        res = arg.cell_arg.res
        if origin[0] == res[axis]:
            return 2 * arg.cell_count + arg.axis_offsets[axis] + origin[1]
        cell = orient_cell(axis, origin)
        return axis * arg.cell_count + cell[0] * res[1] + cell[1]

    @kc.func
    def boundary_side_index(arg: SideArg, global_boundary: int):
        res = arg.cell_arg.res
        per_env = 2 * (res[0] + res[1])
        env = global_boundary // per_env
        boundary_index = global_boundary - env * per_env
        along = boundary_index // 2
        border = boundary_index - 2 * along
        axis = kc.where(along < arg.axis_offsets[1], 0, 1)
        return env * env_sides(arg) + side_index_of(
            arg, axis, kc.vec2i(border * res[axis], along - arg.axis_offsets[axis]))

    @kc.func
    def cell_position(arg: CellArg, s: Any):
        cell = get_cell(arg.res, s.element_index)
        return vec2((scalar(cell[0]) + s.element_coords[0]) * arg.cell_size[0],
                    (scalar(cell[1]) + s.element_coords[1]) * arg.cell_size[1]) + arg.origin

    @kc.func
    def cell_deformation_gradient(arg: CellArg, s: Any):
        return kc.diag(arg.cell_size)

    @kc.func
    def cell_inverse_deformation_gradient(arg: CellArg, s: Any):
        return kc.diag(kc.cw_div(vec2(scalar(1.0)), arg.cell_size))

    @kc.func
    def cell_measure(arg: CellArg, s: Any):
        return arg.cell_size[0] * arg.cell_size[1]

    @kc.func
    def cell_normal(arg: CellArg, s: Any):
        return vec2(scalar(0.0))

    @kc.func
    def side_to_cell_arg(arg: SideArg):
        return arg.cell_arg

    @kc.func
    def side_position(arg: SideArg, s: Any):
        axis, origin = get_side(arg, s.element_index)
        coord = kc.where(is_flipped(axis, origin), scalar(1.0) - s.element_coords[0],
                         s.element_coords[0])
        local = vec2(scalar(origin[0]), scalar(origin[1]) + coord)
        return arg.cell_arg.origin + kc.cw_mul(orient_vec(axis, local), arg.cell_arg.cell_size)

    @kc.func
    def side_deformation_gradient(arg: SideArg, s: Any):
        axis, origin = get_side(arg, s.element_index)
        sign = kc.where(is_flipped(axis, origin), scalar(-1.0), scalar(1.0))
        return kc.cw_mul(orient_vec(axis, vec2(scalar(0.0), sign)), arg.cell_arg.cell_size)

    @kc.func
    def side_inner_inverse_deformation_gradient(arg: SideArg, s: Any):
        return cell_inverse_deformation_gradient(arg.cell_arg, s)

    @kc.func
    def side_outer_inverse_deformation_gradient(arg: SideArg, s: Any):
        return cell_inverse_deformation_gradient(arg.cell_arg, s)

    @kc.func
    def side_measure(arg: SideArg, s: Any):
        axis, origin = get_side(arg, s.element_index)
        return arg.cell_arg.cell_size[1 - axis]

    @kc.func
    def side_measure_ratio(arg: SideArg, s: Any):
        axis, origin = get_side(arg, s.element_index)
        return scalar(1.0) / arg.cell_arg.cell_size[axis]

    @kc.func
    def side_normal(arg: SideArg, s: Any):
        axis, origin = get_side(arg, s.element_index)
        sign = kc.where(origin[0] == 0, scalar(-1.0), scalar(1.0))
        return orient_vec(axis, vec2(sign, scalar(0.0)))

    @kc.func
    def side_inner_cell_index(arg: SideArg, side_index: int):
        axis, origin = get_side(arg, side_index)
        alt = kc.where(origin[0] == 0, 0, origin[0] - 1)
        cell = orient_cell(axis, kc.vec2i(alt, origin[1]))
        first = side_index // env_sides(arg) * arg.cell_count
        return first + cell[0] * arg.cell_arg.res[1] + cell[1]

    @kc.func
    def side_outer_cell_index(arg: SideArg, side_index: int):
        axis, origin = get_side(arg, side_index)
        top = arg.cell_arg.res[axis]
        alt = kc.where(origin[0] == top, top - 1, origin[0])
        cell = orient_cell(axis, kc.vec2i(alt, origin[1]))
        first = side_index // env_sides(arg) * arg.cell_count
        return first + cell[0] * arg.cell_arg.res[1] + cell[1]

    @kc.func
    def side_cell_coords(arg: SideArg, side_index: int, side_coords: Any, alt: Any):
        axis, origin = get_side(arg, side_index)
        coord = kc.where(is_flipped(axis, origin), scalar(1.0) - side_coords[0], side_coords[0])
        c = orient_vec(axis, vec2(alt, coord))
        return Coords(c[0], c[1], scalar(0.0))

    @kc.func
    def side_inner_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        axis, origin = get_side(arg, side_index)
        alt = kc.where(origin[0] == 0, scalar(0.0), scalar(1.0))
        return side_cell_coords(arg, side_index, side_coords, alt)

    @kc.func
    def side_outer_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        axis, origin = get_side(arg, side_index)
        alt = kc.where(origin[0] == arg.cell_arg.res[axis], scalar(1.0), scalar(0.0))
        return side_cell_coords(arg, side_index, side_coords, alt)

    @kc.func
    def side_from_cell_coords(arg: SideArg, side_index: int, cell_index: int, cell_coords: Any):
        # The side coordinates of a point of a cell, or OUTSIDE if it is not on the side.
        axis, origin = get_side(arg, side_index)
        cell = get_cell(arg.cell_arg.res, cell_index)
        same_env = side_index // env_sides(arg) == cell_index // arg.cell_count
        if same_env and scalar(origin[0] - cell[axis]) == cell_coords[axis]:
            along = cell_coords[1 - axis]
            coord = kc.where(is_flipped(axis, origin), scalar(1.0) - along, along)
            return Coords(coord, scalar(0.0), scalar(0.0))
        return Coords(scalar(OUTSIDE))

    @kc.func
    def cell_environment_index(arg: CellArg, s: Any):
        return s.element_index // (arg.res[0] * arg.res[1])

    @kc.func
    def side_environment_index(arg: SideArg, s: Any):
        return s.element_index // env_sides(arg)

    return SimpleNamespace(
        cell_environment_index=cell_environment_index,
        side_environment_index=side_environment_index,
        CellArg=CellArg, SideArg=SideArg, get_cell=get_cell, get_side=get_side,
        is_flipped=is_flipped, boundary_side_index=boundary_side_index,
        cell_position=cell_position,
        cell_deformation_gradient=cell_deformation_gradient,
        cell_inverse_deformation_gradient=cell_inverse_deformation_gradient,
        cell_measure=cell_measure, cell_normal=cell_normal, side_to_cell_arg=side_to_cell_arg,
        side_position=side_position, side_deformation_gradient=side_deformation_gradient,
        side_inner_inverse_deformation_gradient=side_inner_inverse_deformation_gradient,
        side_outer_inverse_deformation_gradient=side_outer_inverse_deformation_gradient,
        side_measure=side_measure, side_measure_ratio=side_measure_ratio,
        side_normal=side_normal, side_inner_cell_index=side_inner_cell_index,
        side_outer_cell_index=side_outer_cell_index,
        side_inner_cell_coords=side_inner_cell_coords,
        side_outer_cell_coords=side_outer_cell_coords,
        side_from_cell_coords=side_from_cell_coords)


def _tile(local: np.ndarray, env_count: int, stride: int) -> np.ndarray:
    """`local` indices of one environment, repeated for each, shifted by `stride` each."""
    shifts = np.arange(env_count, dtype=np.int64)[:, None] * stride
    return (np.asarray(local, dtype=np.int64)[None, :] + shifts).reshape(-1).astype(np.int32)
