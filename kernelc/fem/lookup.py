"""Cell lookups on grids: the sample of the cell containing a world position (Warp's
`Grid2D.cell_lookup` / `Grid3D.cell_lookup`, behind `fem.lookup(domain, x)`).

Positions outside the grid are clamped to it, so the closest cell's closest point is
returned; a point on a cell boundary belongs to the upper cell, except on the grid's
upper boundary.
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
