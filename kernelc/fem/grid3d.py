"""`Grid3D`: a regular 3-D grid of res[0] x res[1] x res[2] boxes (Warp's `warp.fem.Grid3D`).

Numbering (Warp's): cell (i, j, k) is (i * res[1] + j) * res[2] + k. A side is (axis,
origin) with origin = (altitude, longitude, latitude) in the axis' local frame, whose axes
are (axis, axis + 1, axis + 2) mod 3. Sides [0, 3 * cells) are the low faces of the cells
(axis-major, then cell order); then, per axis, the faces at altitude res[axis], ordered by
(longitude, latitude). Boundary side b is face b // 2 of that per-axis list, at the low (b
even) or high (b odd) end.
"""

from functools import cache
from types import SimpleNamespace
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.geometry import Geometry, check_environment_count
from kernelc.fem.grid2d import _tile
from kernelc.fem.types import OUTSIDE, coords_type, vec_type


class Grid3D(Geometry):
    """A regular 3-D grid.

    Args:
        res: Number of cells along each axis.
        bounds_lo: Position of the lower corner (default (0, 0, 0)).
        bounds_hi: Position of the upper corner (default (1, 1, 1)).
        scalar_type: `kc.float32` or `kc.float64` positions.
        env_count: Number of copies of the grid, each an environment of its own (Warp's
            numbering: cells, vertices, sides, boundary sides and edges environment after
            environment).
    """

    dimension = 3

    def __init__(self, res: Any, bounds_lo: Any = None, bounds_hi: Any = None,
                 scalar_type: Any = kc.float32, env_count: int = 1) -> None:
        super().__init__(scalar_type)
        self._env_count = check_environment_count(env_count)
        vec3 = vec_type(3, scalar_type)
        self._res = kc.vec3i(int(res[0]), int(res[1]), int(res[2]))
        lo = (0.0,) * 3 if bounds_lo is None else tuple(float(b) for b in bounds_lo)
        hi = (1.0,) * 3 if bounds_hi is None else tuple(float(b) for b in bounds_hi)
        self.bounds_lo, self.bounds_hi = vec3(*lo), vec3(*hi)
        self.extents = vec3(*[float(self.bounds_hi[a]) - float(self.bounds_lo[a])
                              for a in range(3)])
        self.cell_size = vec3(*[float(self.extents[a]) / self._res[a] for a in range(3)])
        funcs = _grid3d_funcs(scalar_type)
        self.CellArg, self.SideArg = funcs.CellArg, funcs.SideArg
        # Boundary sides are computed from the side argument, as in Warp.
        self.SideIndexArg = self.SideArg
        for name in self.CELL_FUNCS + self.SIDE_FUNCS + (
                "boundary_side_index", "cell_environment_index", "side_environment_index"):
            setattr(self, name, getattr(funcs, name))
        self._args: dict[Any, Any] = {}

    @property
    def res(self) -> Any:
        """Number of cells along each axis (a `kc.vec3i`)."""
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

        return grid_cell_lookup(3, self.scalar_type, self.CellArg, self._env_count > 1)

    def _r(self) -> np.ndarray:
        return np.array([int(r) for r in self._res])

    def environment_count(self) -> int:
        return self._env_count

    def _cells(self) -> int:
        """Cells of one environment."""
        return int(np.prod(self._r()))

    def _sides(self) -> int:
        """Sides of one environment."""
        return 3 * self._cells() + int(self._axis_face_counts().sum())

    def cell_count(self) -> int:
        return self._env_count * self._cells()

    def vertex_count(self) -> int:
        return self._env_count * int(np.prod(self._r() + 1))

    def _axis_face_counts(self) -> np.ndarray:
        r = self._r()
        return np.array([r[1] * r[2], r[2] * r[0], r[0] * r[1]])

    def side_count(self) -> int:
        return self._env_count * self._sides()

    def boundary_side_count(self) -> int:
        return self._env_count * 2 * int(self._axis_face_counts().sum())

    def edge_count(self) -> int:
        """Number of cell edges: along each axis, its cells' count times the vertex lines."""
        r = self._r()
        return self._env_count * int(sum(r[a] * (r[(a + 1) % 3] + 1) * (r[(a + 2) % 3] + 1)
                                         for a in range(3)))

    def reference_cell(self) -> Element:
        return Element.CUBE

    def reference_side(self) -> Element:
        return Element.SQUARE

    def cell_arg_value(self, device: Any = None) -> Any:
        key = ("cell", str(kc.get_device(device)))
        if key not in self._args:
            arg = self.CellArg()
            arg.res, arg.cell_size, arg.origin = self._res, self.cell_size, self.bounds_lo
            arg.env_count = self._env_count
            self._args[key] = arg
        return self._args[key]

    def side_arg_value(self, device: Any = None) -> Any:
        key = ("side", str(kc.get_device(device)))
        if key not in self._args:
            counts = self._axis_face_counts()
            arg = self.SideArg()
            arg.cell_arg = self.cell_arg_value(device)
            arg.cell_count = self._cells()  # of one environment
            arg.axis_offsets = kc.vec3i(0, int(counts[0]), int(counts[0] + counts[1]))
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

    def _local_to_world(self, axis: np.ndarray, local: np.ndarray) -> np.ndarray:
        # local (..., 3) in the frame (axis, axis + 1, axis + 2) -> world (..., 3)
        idx = (np.arange(3)[None, :] - axis[:, None]) % 3
        return np.take_along_axis(local, idx, axis=1)

    def boundary_side_indices(self) -> np.ndarray:
        r = self._r()
        counts = self._axis_face_counts()
        offsets = np.array([0, counts[0], counts[0] + counts[1]])
        b = np.arange(self.boundary_side_count() // self._env_count)
        along, border = b // 2, b % 2
        axis = np.searchsorted(offsets, along, side="right") - 1
        lat_long = along - offsets[axis]
        lat_res = r[(axis + 2) % 3]
        longitude, latitude = lat_long // lat_res, lat_long % lat_res
        altitude = border * r[axis]
        top = 3 * self._cells() + offsets[axis] + lat_long
        cell = self._local_to_world(axis, np.stack([altitude, longitude, latitude], axis=1))
        low = axis * self._cells() + (cell[:, 0] * r[1] + cell[:, 1]) * r[2] + cell[:, 2]
        local = np.where(altitude == r[axis], top, low)
        return _tile(local, self._env_count, self._sides())

    def side_cells(self, sides: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r = self._r()
        cells = self._cells()
        counts = self._axis_face_counts()
        offsets = np.array([0, counts[0], counts[0] + counts[1]])
        first = np.asarray(sides, dtype=np.int64) // self._sides() * cells
        sides = np.asarray(sides, dtype=np.int64) % self._sides()
        low = sides < 3 * cells
        axis_low = np.minimum(sides // cells, 2)
        c = sides - axis_low * cells
        cell_low = np.stack([c // (r[1] * r[2]), (c // r[2]) % r[1], c % r[2]], axis=1)
        t = np.maximum(sides - 3 * cells, 0)
        axis_top = np.searchsorted(offsets, t, side="right") - 1
        lat_long = t - offsets[axis_top]
        lat_res = r[(axis_top + 2) % 3]
        local_top = np.stack([r[axis_top], lat_long // lat_res, lat_long % lat_res], axis=1)
        axis = np.where(low, axis_low, axis_top)
        local_low = np.take_along_axis(cell_low, (np.arange(3)[None, :] + axis[:, None]) % 3, 1)
        local = np.where(low[:, None], local_low, local_top)
        alt = local[:, 0]
        inner, outer = local.copy(), local.copy()
        inner[:, 0] = np.where(alt == 0, 0, alt - 1)
        outer[:, 0] = np.where(alt == r[axis], r[axis] - 1, alt)

        def index(loc: np.ndarray) -> np.ndarray:
            w = self._local_to_world(axis, loc)
            return (first + (w[:, 0] * r[1] + w[:, 1]) * r[2] + w[:, 2]).astype(np.int32)

        return index(inner), index(outer)


@cache
def _grid3d_funcs(scalar: Any) -> SimpleNamespace:
    """Argument structs and device funcs of 3-D grids with `scalar` positions."""
    vec3 = vec_type(3, scalar)
    Coords = coords_type(scalar)
    suffix = "" if scalar == kc.float32 else "_f64"

    CellArg = kc.struct(type(f"Grid3DCellArg{suffix}", (), {"__annotations__": {
        "res": kc.vec3i, "cell_size": vec3, "origin": vec3, "env_count": int}}))
    SideArg = kc.struct(type(f"Grid3DSideArg{suffix}", (), {"__annotations__": {
        "cell_count": int, "axis_offsets": kc.vec3i, "cell_arg": CellArg}}))

    @kc.func
    def get_cell(res: kc.vec3i, global_cell: int):
        # the cell's place in its environment
        cell_index = global_cell % (res[0] * res[1] * res[2])
        x = cell_index // (res[1] * res[2])
        y = (cell_index - res[1] * res[2] * x) // res[2]
        return kc.vec3i(x, y, cell_index - res[1] * res[2] * x - res[2] * y)

    # Frame changes, for integer and for real vectors (overloads by annotation).
    @kc.func
    def to_local(axis: int, v: kc.vec3i):
        return kc.vec3i(v[axis], v[(axis + 1) % 3], v[(axis + 2) % 3])

    @kc.func
    def to_world(axis: int, v: kc.vec3i):
        return kc.vec3i(v[(2 * axis) % 3], v[(2 * axis + 1) % 3], v[(2 * axis + 2) % 3])

    @kc.func
    def to_world(axis: int, v: vec3):  # noqa: F811
        return vec3(v[(2 * axis) % 3], v[(2 * axis + 1) % 3], v[(2 * axis + 2) % 3])

    @kc.func
    def env_sides(arg: SideArg):
        # sides of one environment
        res = arg.cell_arg.res
        return 3 * arg.cell_count + arg.axis_offsets[2] + res[0] * res[1]

    @kc.func
    def get_side(arg: SideArg, global_side: int):
        side_index = global_side % env_sides(arg)
        res = arg.cell_arg.res
        if side_index < 3 * arg.cell_count:
            axis = side_index // arg.cell_count
            return axis, to_local(axis, get_cell(res, side_index - axis * arg.cell_count))
        t = side_index - 3 * arg.cell_count
        axis = kc.where(t < arg.axis_offsets[1], 0, kc.where(t < arg.axis_offsets[2], 1, 2))
        lat_long = t - arg.axis_offsets[axis]
        lat_res = res[(axis + 2) % 3]
        longitude = lat_long // lat_res
        return axis, kc.vec3i(res[axis], longitude, lat_long - longitude * lat_res)

    @kc.func
    def side_index_of(arg: SideArg, axis: int, origin: kc.vec3i):
        res = arg.cell_arg.res
        if origin[0] == res[axis]:
            lat_long = res[(axis + 2) % 3] * origin[1] + origin[2]
            return 3 * arg.cell_count + arg.axis_offsets[axis] + lat_long
        cell = to_world(axis, origin)
        return axis * arg.cell_count + (cell[0] * res[1] + cell[1]) * res[2] + cell[2]

    @kc.func
    def boundary_side_index(arg: SideArg, global_boundary: int):
        res = arg.cell_arg.res
        per_env = 2 * (arg.axis_offsets[2] + res[0] * res[1])
        env = global_boundary // per_env
        boundary_index = global_boundary - env * per_env
        along = boundary_index // 2
        border = boundary_index - 2 * along
        axis = kc.where(along < arg.axis_offsets[1], 0,
                        kc.where(along < arg.axis_offsets[2], 1, 2))
        lat_long = along - arg.axis_offsets[axis]
        lat_res = res[(axis + 2) % 3]
        longitude = lat_long // lat_res
        origin = kc.vec3i(border * res[axis], longitude, lat_long - longitude * lat_res)
        return env * env_sides(arg) + side_index_of(arg, axis, origin)

    @kc.func
    def cell_position(arg: CellArg, s: Any):
        cell = get_cell(arg.res, s.element_index)
        return vec3((scalar(cell[0]) + s.element_coords[0]) * arg.cell_size[0],
                    (scalar(cell[1]) + s.element_coords[1]) * arg.cell_size[1],
                    (scalar(cell[2]) + s.element_coords[2]) * arg.cell_size[2]) + arg.origin

    @kc.func
    def cell_deformation_gradient(arg: CellArg, s: Any):
        return kc.diag(arg.cell_size)

    @kc.func
    def cell_inverse_deformation_gradient(arg: CellArg, s: Any):
        return kc.diag(kc.cw_div(vec3(scalar(1.0)), arg.cell_size))

    @kc.func
    def cell_measure(arg: CellArg, s: Any):
        return arg.cell_size[0] * arg.cell_size[1] * arg.cell_size[2]

    @kc.func
    def cell_normal(arg: CellArg, s: Any):
        return vec3(scalar(0.0))

    @kc.func
    def side_to_cell_arg(arg: SideArg):
        return arg.cell_arg

    @kc.func
    def side_position(arg: SideArg, s: Any):
        axis, origin = get_side(arg, s.element_index)
        c0 = kc.where(origin[0] == 0, scalar(1.0) - s.element_coords[0], s.element_coords[0])
        local = vec3(scalar(origin[0]), scalar(origin[1]) + c0,
                     scalar(origin[2]) + s.element_coords[1])
        return arg.cell_arg.origin + kc.cw_mul(to_world(axis, local), arg.cell_arg.cell_size)

    @kc.func
    def side_deformation_gradient(arg: SideArg, s: Any):
        axis, origin = get_side(arg, s.element_index)
        sign = kc.where(origin[0] == 0, scalar(-1.0), scalar(1.0))
        size = arg.cell_arg.cell_size
        return kc.matrix_from_cols(
            kc.cw_mul(to_world(axis, vec3(scalar(0.0), sign, scalar(0.0))), size),
            kc.cw_mul(to_world(axis, vec3(scalar(0.0), scalar(0.0), scalar(1.0))), size))

    @kc.func
    def side_inner_inverse_deformation_gradient(arg: SideArg, s: Any):
        return cell_inverse_deformation_gradient(arg.cell_arg, s)

    @kc.func
    def side_outer_inverse_deformation_gradient(arg: SideArg, s: Any):
        return cell_inverse_deformation_gradient(arg.cell_arg, s)

    @kc.func
    def side_measure(arg: SideArg, s: Any):
        axis, origin = get_side(arg, s.element_index)
        size = arg.cell_arg.cell_size
        return size[(axis + 1) % 3] * size[(axis + 2) % 3]

    @kc.func
    def side_measure_ratio(arg: SideArg, s: Any):
        axis, origin = get_side(arg, s.element_index)
        return scalar(1.0) / arg.cell_arg.cell_size[axis]

    @kc.func
    def side_normal(arg: SideArg, s: Any):
        axis, origin = get_side(arg, s.element_index)
        sign = kc.where(origin[0] == 0, scalar(-1.0), scalar(1.0))
        return to_world(axis, vec3(sign, scalar(0.0), scalar(0.0)))

    @kc.func
    def cell_of(arg: SideArg, side_index: int, axis: int, alt: int, origin: kc.vec3i):
        cell = to_world(axis, kc.vec3i(alt, origin[1], origin[2]))
        res = arg.cell_arg.res
        first = side_index // env_sides(arg) * arg.cell_count
        return first + (cell[0] * res[1] + cell[1]) * res[2] + cell[2]

    @kc.func
    def side_inner_cell_index(arg: SideArg, side_index: int):
        axis, origin = get_side(arg, side_index)
        return cell_of(arg, side_index, axis, kc.where(origin[0] == 0, 0, origin[0] - 1),
                       origin)

    @kc.func
    def side_outer_cell_index(arg: SideArg, side_index: int):
        axis, origin = get_side(arg, side_index)
        top = arg.cell_arg.res[axis]
        return cell_of(arg, side_index, axis, kc.where(origin[0] == top, top - 1, origin[0]),
                       origin)

    @kc.func
    def side_cell_coords(axis: int, origin: kc.vec3i, side_coords: Any, alt: Any):
        c0 = kc.where(origin[0] == 0, scalar(1.0) - side_coords[0], side_coords[0])
        return to_world(axis, Coords(alt, c0, side_coords[1]))

    @kc.func
    def side_inner_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        axis, origin = get_side(arg, side_index)
        alt = kc.where(origin[0] == 0, scalar(0.0), scalar(1.0))
        return side_cell_coords(axis, origin, side_coords, alt)

    @kc.func
    def side_outer_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        axis, origin = get_side(arg, side_index)
        alt = kc.where(origin[0] == arg.cell_arg.res[axis], scalar(1.0), scalar(0.0))
        return side_cell_coords(axis, origin, side_coords, alt)

    @kc.func
    def side_from_cell_coords(arg: SideArg, side_index: int, cell_index: int, cell_coords: Any):
        axis, origin = get_side(arg, side_index)
        cell = get_cell(arg.cell_arg.res, cell_index)
        same_env = side_index // env_sides(arg) == cell_index // arg.cell_count
        if same_env and scalar(origin[0] - cell[axis]) == cell_coords[axis]:
            along = cell_coords[(axis + 1) % 3]
            along = kc.where(origin[0] == 0, scalar(1.0) - along, along)
            return Coords(along, cell_coords[(axis + 2) % 3], scalar(0.0))
        return Coords(scalar(OUTSIDE))

    @kc.func
    def cell_environment_index(arg: CellArg, s: Any):
        return s.element_index // (arg.res[0] * arg.res[1] * arg.res[2])

    @kc.func
    def side_environment_index(arg: SideArg, s: Any):
        return s.element_index // env_sides(arg)

    names = ("cell_environment_index", "side_environment_index",
             "CellArg", "SideArg", "boundary_side_index", "cell_position",
             "cell_deformation_gradient", "cell_inverse_deformation_gradient", "cell_measure",
             "cell_normal", "side_to_cell_arg", "side_position", "side_deformation_gradient",
             "side_inner_inverse_deformation_gradient", "side_outer_inverse_deformation_gradient",
             "side_measure", "side_measure_ratio", "side_normal", "side_inner_cell_index",
             "side_outer_cell_index", "side_inner_cell_coords", "side_outer_cell_coords",
             "side_from_cell_coords", "get_side")
    scope = locals()
    return SimpleNamespace(**{n: scope[n] for n in names})

