"""Cell lookups: the sample of the cell containing a world position (Warp's
`Geometry.cell_lookup`, behind `fem.lookup`).

Each geometry's `cell_lookup` is a set of overloads (`lookup_overloads`), chosen by the
call form (`lookup_call.py` tells them apart):

    cell_lookup(arg, pos)                       max_dist 0
    cell_lookup(arg, pos, max_dist)             max_dist a float32
    cell_lookup(arg, pos, guess)                max_dist from the guess sample (nanogrids)
    cell_lookup(arg, pos, max_dist, filter_array, filter_target)

all made from one search `(arg, pos, max_dist, filter data, filter target) -> Sample` per
geometry and cell filter (`accept(data, target, cell)`: every cell, or the cells c with
filter_array[c] == filter_target). What max_dist and the filter do depends on the geometry,
as in Warp:

- Grids: positions outside the grid are clamped to it; a point on a cell boundary belongs to
  the upper cell, except on the grid's upper boundary. Without a filter that cell is the
  answer (max_dist plays no part). With one, a rejected cell makes the search go through
  the cells within half a cell of the clamped position, then a window 3 times wider, up to
  ceil(max_dist / smallest cell size) cells, keeping the closest accepted cell (the last
  met of equally close ones); no cell (NULL_ELEMENT_INDEX) if none is found.
- Nanogrids (`voxel_cell_lookup`): the voxel holding the point if it is active (and
  accepted); else the same windowed search around the point in index space, filter or not,
  so max_dist widens unfiltered lookups too. A guess sample gives max_dist = the distance
  from the guess's position to the point.
- Meshes and deformed geometries (`closest_search`): the closest accepted cell, every cell
  searched (Warp searches its BVH; kernelc meshes keep none), the first of equally close
  cells; max_dist plays no part. On quadrilateral and hexahedral meshes a cell's closest
  point is found by Newton steps on the cell's coordinates, then projected gradient steps,
  as Warp's `cell_closest_point`.
"""

from functools import cache, partial
from typing import Any

import kernelc as kc
from kernelc.fem.types import (
    NULL_ELEMENT_INDEX,
    OUTSIDE,
    coords_type,
    make_free_sample,
    sample_type,
    vec_type,
)

# ---- cell filters: (filter data, filter target, cell) -> whether the cell may be returned --


@kc.func
def accept_every_cell(data: Any, target: Any, cell: int):
    return True


@kc.func
def accept_filtered_cell(data: Any, target: Any, cell: int):
    return data[cell] == target


@kc.func
def _no_reach(arg: Any, pos: Any, guess: Any):
    return kc.float32(0.0)


def lookup_overloads(CellArg: Any, scalar: Any, search: Any, guess_reach: Any = None) -> Any:
    """The `cell_lookup` overloads of a geometry (module docstring) from `search(accept)`, a
    factory of (arg, pos, max_dist, filter data, filter target) -> Sample funcs;
    `guess_reach(arg, pos, guess)` gives the max_dist of a guess (none: 0). Geometries that
    may have several environments use `environment_overloads` instead."""
    plain, filtered = search(accept_every_cell), search(accept_filtered_cell)
    reach = _no_reach if guess_reach is None else guess_reach
    SampleType = sample_type(scalar)

    @kc.func
    def cell_lookup(arg: CellArg, pos: Any):
        return plain(arg, pos, 0.0, 0, 0)

    @kc.func
    def cell_lookup(arg: CellArg, pos: Any, max_dist: float):  # noqa: F811
        return plain(arg, pos, max_dist, 0, 0)

    @kc.func
    def cell_lookup(arg: CellArg, pos: Any, guess: SampleType):  # noqa: F811
        return plain(arg, pos, reach(arg, pos, guess), 0, 0)

    @kc.func
    def cell_lookup(arg: CellArg, pos: Any, max_dist: float,  # noqa: F811
                    filter_array: kc.array(dtype=Any), filter_target: Any):
        return filtered(arg, pos, max_dist, filter_array, filter_target)

    return cell_lookup


@kc.func
def _cell_env_entry(arg: Any, cell: int):
    return arg.cell_env[cell]


@kc.func
def _cell_env_of_guess(arg: Any, guess: Any):
    # the environment of a guess sample's cell (`arg.cell_env`), -1 for no cell
    if guess.element_index < 0 or guess.element_index >= arg.cell_env.shape[0]:
        return -1
    return arg.cell_env[guess.element_index]


def environment_overloads(CellArg: Any, SampleType: Any, env_search: Any,
                          reach: Any = _no_reach, guess_env: Any = _cell_env_of_guess) -> Any:
    """`lookup_overloads` of geometries that may have several environments, with the forms
    taking an environment index last: `env_search(accept)` makes the searches, which take an
    environment last (-1: all); `guess_env(arg, guess)` is the environment a guess sample
    searches (by default its cell's, `arg.cell_env`)."""
    plain, filtered = env_search(accept_every_cell), env_search(accept_filtered_cell)

    @kc.func
    def cell_lookup(arg: CellArg, pos: Any):
        return plain(arg, pos, 0.0, 0, 0, -1)

    @kc.func
    def cell_lookup(arg: CellArg, pos: Any, max_dist: float):  # noqa: F811
        return plain(arg, pos, max_dist, 0, 0, -1)

    @kc.func
    def cell_lookup(arg: CellArg, pos: Any, guess: SampleType):  # noqa: F811
        return plain(arg, pos, reach(arg, pos, guess), 0, 0, guess_env(arg, guess))

    @kc.func
    def cell_lookup(arg: CellArg, pos: Any, max_dist: float,  # noqa: F811
                    filter_array: kc.array(dtype=Any), filter_target: Any):
        return filtered(arg, pos, max_dist, filter_array, filter_target, -1)

    @kc.func
    def cell_lookup(arg: CellArg, pos: Any, env_index: int):  # noqa: F811
        return plain(arg, pos, 0.0, 0, 0, env_index)

    @kc.func
    def cell_lookup(arg: CellArg, pos: Any, max_dist: float, env_index: int):  # noqa: F811
        return plain(arg, pos, max_dist, 0, 0, env_index)

    @kc.func
    def cell_lookup(arg: CellArg, pos: Any, max_dist: float,  # noqa: F811
                    filter_array: kc.array(dtype=Any), filter_target: Any, env_index: int):
        return filtered(arg, pos, max_dist, filter_array, filter_target, env_index)

    return cell_lookup


# ---- grids -----------------------------------------------------------------------------------


@cache
def grid_cell_lookup(dimension: int, scalar: Any, CellArg: Any,
                     environments: bool = False) -> Any:
    """The `cell_lookup` overloads of grids of `dimension` 2 or 3 (of several environments,
    copies of the grid numbered one after the other: `environments`)."""
    search = partial(grid_search, dimension, scalar, CellArg)
    if not environments:
        return lookup_overloads(CellArg, scalar, search)
    three = dimension == 3

    @kc.func
    def guess_env(arg: CellArg, guess: Any):
        cells = arg.res[0] * arg.res[1]
        if kc.static(three):
            cells = cells * arg.res[2]
        if guess.element_index < 0 or guess.element_index >= cells * arg.env_count:
            return -1
        return guess.element_index // cells

    return environment_overloads(CellArg, sample_type(scalar),
                                 partial(search, environments=True), guess_env=guess_env)


@cache
def grid_search(dimension: int, scalar: Any, CellArg: Any, accept: Any,
                environments: bool = False) -> Any:
    """(arg, pos, max_dist, data, target) -> Sample on grids (module docstring); `arg` has
    the grid's `origin`, `cell_size` and `res`. With `environments`, the func takes an
    environment last (-1: the first) and searches that copy of the grid (`arg.env_count`
    copies, numbered one after the other)."""
    Coords = coords_type(scalar)
    vec = vec_type(dimension, scalar)
    zero, half = scalar(0.0), scalar(0.5)
    three = dimension == 3

    @kc.func
    def cell_of(res: Any, ijk: Any):
        if kc.static(three):
            return (ijk[0] * res[1] + ijk[1]) * res[2] + ijk[2]
        else:
            return ijk[0] * res[1] + ijk[1]

    @kc.func
    def unit_coords(c: Any):
        if kc.static(three):
            return Coords(c[0], c[1], c[2])
        else:
            return Coords(c[0], c[1], zero)

    @kc.func
    def window(x: Any, reach: Any, top: int):
        return (kc.max(0, int(kc.floor(x - reach))),
                kc.min(top, int(kc.floor(x + reach)) + 1))

    @kc.func
    def closest_in_window(arg: CellArg, local: Any, clamped: Any, offset: Any, scales: Any,
                          min_size: Any, data: Any, target: Any, first_cell: int):
        # the closest accepted cell within min_size * offset of the point, or none
        size = arg.cell_size
        lo = kc.vec3i(0)
        hi = kc.vec3i(1)
        for a in range(dimension):
            low, high = window(clamped[a], offset * scales[a], arg.res[a])
            lo[a] = low
            hi[a] = high
        best = int(NULL_ELEMENT_INDEX)
        best_coords = Coords(zero)
        best_dist = min_size * min_size * (offset * offset)
        for i in range(lo[0], hi[0]):
            for j in range(lo[1], hi[1]):
                for k in range(lo[2], hi[2]):
                    ijk = kc.vec3i(i, j, k)
                    candidate = first_cell + cell_of(arg.res, ijk)
                    if accept(data, target, candidate):
                        corner = vec(zero)
                        for a in range(dimension):
                            corner[a] = scalar(ijk[a])
                        rel = kc.cw_mul(local - corner, size)
                        inside = kc.min(kc.max(rel, vec(zero)), size)
                        dist = kc.length_sq(rel - inside)
                        if dist <= best_dist:
                            best_dist = dist
                            best = candidate
                            best_coords = unit_coords(kc.cw_div(inside, size))
        return best, best_coords

    @kc.func
    def grid_env_lookup(arg: CellArg, pos: Any, max_dist: float, data: Any, target: Any,
                        first_cell: int):
        size = arg.cell_size
        local = kc.cw_div(pos - arg.origin, size)
        clamped = vec(zero)
        cell = kc.vec3i(0)
        offsets = vec(zero)
        for a in range(dimension):
            clamped[a] = kc.clamp(local[a], zero, scalar(arg.res[a]))
            cell[a] = int(kc.min(kc.floor(clamped[a]), scalar(arg.res[a] - 1)))
            offsets[a] = clamped[a] - scalar(cell[a])
        first = first_cell + cell_of(arg.res, cell)
        if accept(data, target, first):
            return make_free_sample(first, unit_coords(offsets))
        min_size = size[0]
        for a in range(1, dimension):
            min_size = kc.min(min_size, size[a])
        max_offset = kc.ceil(scalar(max_dist) / min_size)
        scales = kc.cw_div(vec(min_size), size)
        offset = half
        best = int(NULL_ELEMENT_INDEX)
        best_coords = Coords(zero)
        while best == NULL_ELEMENT_INDEX:
            best, best_coords = closest_in_window(arg, local, clamped, offset, scales, min_size,
                                                  data, target, first_cell)
            if offset >= max_offset:
                break
            offset = kc.min(scalar(3.0) * offset, max_offset)
        return make_free_sample(best, best_coords)

    if environments:
        @kc.func
        def grid_lookup_in(arg: CellArg, pos: Any, max_dist: float, data: Any, target: Any,
                           env: int):
            if env >= arg.env_count:
                return make_free_sample(int(NULL_ELEMENT_INDEX), Coords(scalar(OUTSIDE)))
            cells = arg.res[0] * arg.res[1]  # of one environment
            if kc.static(three):
                cells = cells * arg.res[2]
            return grid_env_lookup(arg, pos, max_dist, data, target, kc.max(env, 0) * cells)

        return grid_lookup_in

    @kc.func
    def grid_lookup(arg: CellArg, pos: Any, max_dist: float, data: Any, target: Any):
        return grid_env_lookup(arg, pos, max_dist, data, target, 0)

    return grid_lookup


# ---- meshes and deformed geometries: every cell searched ------------------------------------


@cache
def closest_search(scalar: Any, CellArg: Any, cell_count: Any, closest: Any, accept: Any,
                   environments: bool = False, env_of: Any = None) -> Any:
    """(arg, pos, max_dist, data, target) -> Sample of the closest accepted cell (the first
    of equally close ones), from `cell_count(arg)` and `closest(arg, cell, pos)` ->
    (coords, squared distance); no cell (NULL_ELEMENT_INDEX, OUTSIDE coordinates) if none
    is accepted. With `environments`, the func takes an environment last and skips the
    cells of others (`env_of(arg, cell)`, by default `arg.cell_env[cell]`; -1: every
    environment)."""
    Coords = coords_type(scalar)
    env_of = _cell_env_entry if env_of is None else env_of

    @kc.func
    def closest_in(arg: CellArg, pos: Any, max_dist: float, data: Any, target: Any, env: int):
        best = int(NULL_ELEMENT_INDEX)
        best_coords = Coords(scalar(OUTSIDE))
        best_dist = scalar(3.0e38)
        for cell in range(cell_count(arg)):
            if accept(data, target, cell):
                if env < 0 or env_of(arg, cell) == env:
                    coords, dist = closest(arg, cell, pos)
                    if dist < best_dist:
                        best_dist = dist
                        best = cell
                        best_coords = coords
        return make_free_sample(best, best_coords)

    if environments:
        return closest_in

    @kc.func
    def closest_lookup(arg: CellArg, pos: Any, max_dist: float, data: Any, target: Any):
        best = int(NULL_ELEMENT_INDEX)
        best_coords = Coords(scalar(OUTSIDE))
        best_dist = scalar(3.0e38)
        for cell in range(cell_count(arg)):
            if accept(data, target, cell):
                coords, dist = closest(arg, cell, pos)
                if dist < best_dist:
                    best_dist = dist
                    best = cell
                    best_coords = coords
        return make_free_sample(best, best_coords)

    return closest_lookup


@kc.func
def vertex_cell_count(arg: Any):
    """The cell count of a mesh cell argument (rows of `cell_vertices`)."""
    return arg.cell_vertices.shape[0]


# Warp's iteration counts and tolerances (on squared coordinate steps) for finding a
# point's coordinates in a cell whose map is not affine.
_LOOKUP_ITERATIONS = {4: 24, 8: 48}
_LOOKUP_EPS = {4: 2.0 ** -20, 8: 2.0 ** -44}


def tensor_cell_lookup(CellArg: Any, cell_position: Any, deformation_gradient: Any,
                       inverse_gradient: Any, cell_dimension: int, scalar: Any) -> Any:
    """The `cell_lookup` overloads of meshes of quadrilaterals (`cell_dimension` 2) or
    hexahedra (3) whose cell arguments have `cell_vertices`; the funcs are the mesh's cell
    funcs."""
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

    return environment_overloads(CellArg, sample_type(scalar), partial(
        closest_search, scalar, CellArg, vertex_cell_count, closest_point, environments=True))


# ---- nanogrids ------------------------------------------------------------------------------


def voxel_cell_lookup(CellArg: Any, scalar: Any, lookup_cell: Any, coordinates_local: Any,
                      closest_point_local: Any, cell_position: Any) -> Any:
    """The `cell_lookup` overloads of (adaptive) nanogrids: `lookup_cell(arg, i, j, k)` is
    the cell holding fine voxel (i, j, k) of the cell grid or -1, `coordinates_local(arg,
    cell, uvw)` and `closest_point_local(arg, cell, uvw)` -> (squared world distance,
    coords) take the index-space point uvw (voxel corners at integers) in the cell's
    environment's coordinates; `arg` has `cell_grid`, `cell_ijk`, `cell_env` and
    `env_offsets`. Besides the forms of `lookup_overloads`, these take an environment
    index last (the cells of other environments are skipped; a guess sample searches its
    own cell's environment)."""
    @kc.func
    def guess_reach(arg: CellArg, pos: Any, guess: Any):
        # a guess that is no cell (a side's sample, say) widens nothing
        if guess.element_index < 0 or guess.element_index >= arg.cell_ijk.shape[0]:
            return kc.float32(0.0)
        return kc.float32(kc.length(cell_position(arg, guess) - pos))

    search = partial(voxel_search, CellArg, scalar, lookup_cell, coordinates_local,
                     closest_point_local)
    return environment_overloads(CellArg, sample_type(scalar), search, guess_reach)


@cache
def voxel_search(CellArg: Any, scalar: Any, lookup_cell: Any, coordinates_local: Any,
                 closest_point_local: Any, accept: Any) -> Any:
    """(arg, pos, max_dist, data, target, env) -> Sample on nanogrids (module docstring);
    env -1 searches every environment, else only that one's cells, at its offset in the
    cell grid."""
    vec3 = vec_type(3, scalar)
    Coords = coords_type(scalar)
    zero, one = scalar(0.0), scalar(1.0)

    @kc.func
    def accept_in_env(arg: CellArg, data: Any, target: Any, cell: int, env: int):
        if env >= 0:
            if arg.cell_env[cell] != env:
                return False
        return accept(data, target, cell)

    @kc.func
    def closest_in_window(arg: CellArg, uvw: Any, offset: Any, scales: Any, min_size: Any,
                          data: Any, target: Any, env: int, shift: kc.vec3i):
        # the closest accepted cell within min_size * offset of the point, or none
        lo = uvw - offset * scales
        hi = uvw + offset * scales
        best = int(NULL_ELEMENT_INDEX)
        best_coords = Coords()
        best_dist = min_size * min_size * (offset * offset)
        for i in range(int(kc.floor(lo[0])), int(kc.floor(hi[0])) + 1):
            for j in range(int(kc.floor(lo[1])), int(kc.floor(hi[1])) + 1):
                for k in range(int(kc.floor(lo[2])), int(kc.floor(hi[2])) + 1):
                    c = lookup_cell(arg, i + shift[0], j + shift[1], k + shift[2])
                    if c != -1:
                        if accept_in_env(arg, data, target, c, env):
                            dist, coords = closest_point_local(arg, c, uvw)
                            if dist <= best_dist:
                                best_dist = dist
                                best_coords = coords
                                best = c
        return best, best_coords

    @kc.func
    def voxel_lookup(arg: CellArg, pos: Any, max_dist: float, data: Any, target: Any,
                     env: int):
        grid = arg.cell_grid
        shift = kc.vec3i(0)
        if env >= 0:
            if env >= arg.env_offsets.shape[0]:
                return make_free_sample(int(NULL_ELEMENT_INDEX), Coords(scalar(OUTSIDE)))
            shift = arg.env_offsets[env]
        uvw = kc.volume_world_to_index(grid, pos) + vec3(scalar(0.5))
        cell = lookup_cell(arg, int(kc.floor(uvw[0])) + shift[0],
                           int(kc.floor(uvw[1])) + shift[1], int(kc.floor(uvw[2])) + shift[2])
        if cell != -1:
            if accept_in_env(arg, data, target, cell, env):
                return make_free_sample(cell, coordinates_local(arg, cell, uvw))
        size = vec3(kc.length(kc.volume_index_to_world_dir(grid, vec3(one, zero, zero))),
                    kc.length(kc.volume_index_to_world_dir(grid, vec3(zero, one, zero))),
                    kc.length(kc.volume_index_to_world_dir(grid, vec3(zero, zero, one))))
        min_size = kc.min(size)
        max_offset = kc.ceil(scalar(max_dist) / min_size)
        scales = kc.cw_div(vec3(min_size), size)
        offset = scalar(0.5)
        best = int(NULL_ELEMENT_INDEX)
        best_coords = Coords()
        while best == NULL_ELEMENT_INDEX:
            best, best_coords = closest_in_window(arg, uvw, offset, scales, min_size, data,
                                                  target, env, shift)
            if offset >= max_offset:
                break
            offset = kc.min(scalar(3.0) * offset, max_offset)
        return make_free_sample(best, best_coords)

    return voxel_lookup
