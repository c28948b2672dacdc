"""Cell lookups: the sample of the cell containing a world position (Warp's
`Geometry.cell_lookup`, behind `fem.lookup(domain, x)`).

On grids, positions outside the grid are clamped to it, so the closest cell's closest point
is returned; a point on a cell boundary belongs to the upper cell, except on the grid's
upper boundary. On quadrilateral and hexahedral meshes every cell is searched for its
point closest to the position (Newton steps on the cell's coordinates, then projected
gradient steps, as Warp's `cell_closest_point`); the first closest cell wins.
"""

from functools import cache
from typing import Any

import kernelc as kc
from kernelc.fem.types import coords_type, make_free_sample


@cache
def grid_cell_lookup(dimension: int, scalar: Any, CellArg: Any) -> Any:
    """(cell arg, position) -> Sample, for grids of `dimension` 2 or 3."""
    Coords = coords_type(scalar)

    @kc.func
    def locate(arg: CellArg, pos: Any, axis: int):
        # (cell along the axis, coordinate in the cell), both as reals
        x = (pos[axis] - arg.origin[axis]) / arg.cell_size[axis]
        x = kc.clamp(x, scalar(0.0), scalar(arg.res[axis]))
        cell = kc.min(kc.floor(x), scalar(arg.res[axis] - 1))
        return cell, x - cell

    if dimension == 2:
        @kc.func
        def cell_lookup_2d(arg: CellArg, pos: Any):
            cx, u = locate(arg, pos, 0)
            cy, v = locate(arg, pos, 1)
            cell = int(cx) * arg.res[1] + int(cy)
            return make_free_sample(cell, Coords(u, v, scalar(0.0)))

        return cell_lookup_2d

    @kc.func
    def cell_lookup_3d(arg: CellArg, pos: Any):
        cx, u = locate(arg, pos, 0)
        cy, v = locate(arg, pos, 1)
        cz, w = locate(arg, pos, 2)
        cell = (int(cx) * arg.res[1] + int(cy)) * arg.res[2] + int(cz)
        return make_free_sample(cell, Coords(u, v, w))

    return cell_lookup_3d


# Warp's iteration counts and tolerances (on squared coordinate steps) for finding a
# point's coordinates in a cell whose map is not affine.
_LOOKUP_ITERATIONS = {4: 24, 8: 48}
_LOOKUP_EPS = {4: 2.0 ** -20, 8: 2.0 ** -44}


def tensor_cell_lookup(CellArg: Any, cell_position: Any, deformation_gradient: Any,
                       inverse_gradient: Any, cell_dimension: int, scalar: Any) -> Any:
    """(cell arg, position) -> Sample of the cell closest to the position, for meshes of
    quadrilaterals (`cell_dimension` 2) or hexahedra (3) whose cell arguments have
    `cell_vertices`; the funcs are the mesh's cell funcs."""
    Coords = coords_type(scalar)
    size = 8 if scalar == kc.float64 else 4
    iterations, eps = _LOOKUP_ITERATIONS[size], scalar(_LOOKUP_EPS[size])
    zero, one = scalar(0.0), scalar(1.0)
    square = cell_dimension == 2
    center = Coords(0.5, 0.5, 0.0 if square else 0.5)

    if square:
        @kc.func
        def as_coords(delta: Any):
            return Coords(delta[0], delta[1], zero)
    else:
        @kc.func
        def as_coords(delta: Any):
            return Coords(delta[0], delta[1], delta[2])

    @kc.func
    def unclamped_coords(arg: CellArg, cell: int, pos: Any):
        # Newton steps from the centre
        coords = center
        for _k in range(iterations):
            s = make_free_sample(cell, coords)
            delta = inverse_gradient(arg, s) * (pos - cell_position(arg, s))
            if kc.length_sq(delta) < eps:
                break
            coords = coords + as_coords(delta)
        return coords

    @kc.func
    def closest_point(arg: CellArg, cell: int, pos: Any):
        # projected gradient steps from the unclamped coordinates
        coords = unclamped_coords(arg, cell, pos)
        current = coords
        x = cell_position(arg, make_free_sample(cell, coords))
        for _k in range(iterations):
            current = coords
            s = make_free_sample(cell, current)
            x = cell_position(arg, s)
            F = deformation_gradient(arg, s)
            step = kc.transpose(F) * (pos - x) / kc.ddot(F, F)
            coords = kc.min(kc.max(current + as_coords(step), Coords(zero)), Coords(one))
            if kc.static(square):
                coords[2] = scalar(0.0)
            if kc.length_sq(coords - current) < eps:
                break
        return current, kc.length_sq(pos - x)

    @kc.func
    def cell_lookup(arg: CellArg, pos: Any):
        best = -1
        best_coords = Coords(scalar(-1.0e8))
        best_dist = scalar(3.0e38)
        for cell in range(arg.cell_vertices.shape[0]):
            coords, dist = closest_point(arg, cell, pos)
            if dist < best_dist:
                best_dist = dist
                best = cell
                best_coords = coords
        return make_free_sample(best, best_coords)

    return cell_lookup
