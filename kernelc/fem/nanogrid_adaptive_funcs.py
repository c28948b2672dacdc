"""Device funcs of `AdaptiveNanogrid` geometries, one set per scalar type.

A cell of level l is a cube of 2^l fine voxels a side; the cell grid holds one voxel per
cell, its lowest fine voxel (i, j, k), and `cell_level` its level. Element coordinates u in
[0, 1]^3 map to the fine index-space point (i, j, k) + 2^l u - 1/2. A side is a face
between two cells (or on the boundary) at the level of the finer one: `face_ijk` is its
lowest fine voxel on the upper side, `face_flags` holds the axis and missing-cell bits of
a regular nanogrid's sides (nanogrid_funcs.py) and the level from bit 4 up, and
`face_cell_indices` its (inner, outer) cells, which may be coarser than the side.
"""

from functools import cache
from types import SimpleNamespace
from typing import Any

import kernelc as kc
from kernelc.fem.lookup import voxel_cell_lookup
from kernelc.fem.nanogrid_funcs import nanogrid_funcs
from kernelc.fem.types import (
    OUTSIDE,
    coords_type,
    mat_type,
    vec_type,
)

FACE_LEVEL_SHIFT = 4


@kc.func
def find_cell(cell_grid: kc.uint64, ijk: kc.vec3i, level_count: int,
              cell_level: kc.array(dtype=kc.uint8)):
    """The cell holding fine voxel `ijk`, -1 if none: the first level l at which the voxel's
    l-aligned corner is a cell of level l or more."""
    for level in range(level_count):
        mask = ~((1 << level) - 1)
        cell = kc.volume_lookup_index(cell_grid, ijk[0] & mask, ijk[1] & mask, ijk[2] & mask)
        if cell != -1:
            if int(cell_level[cell]) >= level:
                return cell
    return -1


@kc.func
def fine_ijk(ijk: kc.vec3i, level: int):
    """A level-`level` voxel's lowest fine voxel."""
    return kc.vec3i(ijk[0] << level, ijk[1] << level, ijk[2] << level)


@kc.func
def coarse_ijk(ijk: kc.vec3i, level: int):
    """The level-`level` voxel holding a fine voxel."""
    return kc.vec3i(ijk[0] >> level, ijk[1] >> level, ijk[2] >> level)


@cache
def adaptive_nanogrid_funcs(scalar: Any) -> SimpleNamespace:
    """Argument structs and device funcs of adaptive nanogrids with `scalar` positions."""
    base = nanogrid_funcs(scalar)
    real, face_axis, inner_missing, outer_missing = (
        base.real, base.face_axis, base.inner_missing, base.outer_missing)
    side_to_cell, cell_to_side, face_tangents, index_point = (
        base.side_to_cell, base.cell_to_side, base.face_tangents, base.index_point)
    vec3 = vec_type(3, scalar)
    Coords = coords_type(scalar)
    suffix = "" if scalar == kc.float32 else "_f64"

    CellArg = kc.struct(type(f"AdaptiveNanogridCellArg{suffix}", (), {"__annotations__": {
        "cell_grid": kc.uint64, "cell_ijk": kc.array(dtype=kc.vec3i),
        "cell_level": kc.array(dtype=kc.uint8), "inverse_transform": mat_type(3, 3, scalar),
        "cell_volume": scalar, "level_count": int,
        "cell_env": kc.array(dtype=int), "env_offsets": kc.array(dtype=kc.vec3i)}}))
    SideArg = kc.struct(type(f"AdaptiveNanogridSideArg{suffix}", (), {"__annotations__": {
        "cell_arg": CellArg, "face_ijk": kc.array(dtype=kc.vec3i),
        "face_cell_indices": kc.array(dtype=kc.vec2i), "face_flags": kc.array(dtype=kc.uint8),
        "face_areas": vec3, "face_env": kc.array(dtype=int)}}))

    @kc.func
    def cell_scale(arg: CellArg, cell: int):
        return scalar(1 << int(arg.cell_level[cell]))

    @kc.func
    def face_level(flags: kc.uint8):
        return int(flags) >> FACE_LEVEL_SHIFT

    @kc.func
    def coarse_coords(fine_ijk: kc.vec3i, fine_level: int, fine_coords: Any,
                      coarse_ijk: kc.vec3i, coarse_level: int):
        # coordinates in a coarser (or equal) cell of a point given in a finer one
        return (real(fine_ijk - coarse_ijk) + fine_coords * scalar(1 << fine_level)) / scalar(
            1 << coarse_level)

    # ---- cells -----------------------------------------------------------------------------

    @kc.func
    def cell_position(arg: CellArg, s: Any):
        scale = cell_scale(arg, s.element_index)
        uvw = real(arg.cell_ijk[s.element_index]) + s.element_coords * scale - vec3(scalar(0.5))
        return kc.volume_index_to_world(arg.cell_grid, uvw)

    @kc.func
    def cell_deformation_gradient(arg: CellArg, s: Any):
        return kc.inverse(arg.inverse_transform) * cell_scale(arg, s.element_index)

    @kc.func
    def cell_inverse_deformation_gradient(arg: CellArg, s: Any):
        return arg.inverse_transform / cell_scale(arg, s.element_index)

    @kc.func
    def cell_measure(arg: CellArg, s: Any):
        scale = cell_scale(arg, s.element_index)
        return arg.cell_volume * scale * scale * scale

    @kc.func
    def cell_normal(arg: CellArg, s: Any):
        return vec3(scalar(0.0))

    @kc.func
    def cell_coordinates_local(arg: CellArg, cell_index: int, uvw: Any):
        return (uvw - real(arg.cell_ijk[cell_index])) / cell_scale(arg, cell_index)

    @kc.func
    def cell_closest_point_local(arg: CellArg, cell_index: int, uvw: Any):
        rel = uvw - real(arg.cell_ijk[cell_index])
        scale = cell_scale(arg, cell_index)
        coords = kc.min(kc.max(rel / scale, vec3(scalar(0.0))), vec3(scalar(1.0)))
        return kc.length_sq(kc.volume_index_to_world_dir(arg.cell_grid,
                                                         coords * scale - rel)), coords

    @kc.func
    def cell_coordinates(arg: CellArg, cell_index: int, pos: Any):
        return cell_coordinates_local(arg, cell_index, index_point(arg.cell_grid, pos))

    @kc.func
    def cell_closest_point(arg: CellArg, cell_index: int, pos: Any):
        dist, coords = cell_closest_point_local(arg, cell_index, index_point(arg.cell_grid, pos))
        return coords, dist

    @kc.func
    def lookup_cell(arg: CellArg, i: int, j: int, k: int):
        return find_cell(arg.cell_grid, kc.vec3i(i, j, k), arg.level_count, arg.cell_level)

    # The cell holding the point; else the closest cell within max_dist (at least half the
    # smallest fine voxel size; no cell, index -1, beyond that), as `lookup.py` says.
    cell_lookup = voxel_cell_lookup(CellArg, scalar, lookup_cell, cell_coordinates_local,
                                    cell_closest_point_local, cell_position)

    # ---- sides -----------------------------------------------------------------------------

    @kc.func
    def side_to_cell_arg(arg: SideArg):
        return arg.cell_arg

    @kc.func
    def side_scale(arg: SideArg, side: int):
        return scalar(1 << face_level(arg.face_flags[side]))

    @kc.func
    def side_position(arg: SideArg, s: Any):
        flags = arg.face_flags[s.element_index]
        uvw = real(arg.face_ijk[s.element_index]) + side_scale(arg, s.element_index) * (
            side_to_cell(face_axis(flags), inner_missing(flags), scalar(0.0), s.element_coords))
        return kc.volume_index_to_world(arg.cell_arg.cell_grid, uvw - vec3(scalar(0.5)))

    @kc.func
    def side_deformation_gradient(arg: SideArg, s: Any):
        flags = arg.face_flags[s.element_index]
        u, v = face_tangents(arg.cell_arg.cell_grid, face_axis(flags), inner_missing(flags))
        return kc.matrix_from_cols(u, v) * side_scale(arg, s.element_index)

    @kc.func
    def side_inner_cell_index(arg: SideArg, side_index: int):
        return arg.face_cell_indices[side_index][0]

    @kc.func
    def side_outer_cell_index(arg: SideArg, side_index: int):
        return arg.face_cell_indices[side_index][1]

    @kc.func
    def side_inner_inverse_deformation_gradient(arg: SideArg, s: Any):
        cell = side_inner_cell_index(arg, s.element_index)
        return arg.cell_arg.inverse_transform / cell_scale(arg.cell_arg, cell)

    @kc.func
    def side_outer_inverse_deformation_gradient(arg: SideArg, s: Any):
        cell = side_outer_cell_index(arg, s.element_index)
        return arg.cell_arg.inverse_transform / cell_scale(arg.cell_arg, cell)

    @kc.func
    def side_measure(arg: SideArg, s: Any):
        scale = side_scale(arg, s.element_index)
        return arg.face_areas[face_axis(arg.face_flags[s.element_index])] * scale * scale

    @kc.func
    def side_measure_ratio(arg: SideArg, s: Any):
        # Warp's ratio: the side's area over the volume of a cell of the side's level
        axis = face_axis(arg.face_flags[s.element_index])
        return arg.face_areas[axis] / (arg.cell_arg.cell_volume * side_scale(arg, s.element_index))

    @kc.func
    def side_normal(arg: SideArg, s: Any):
        flags = arg.face_flags[s.element_index]
        axis = face_axis(flags)
        u, v = face_tangents(arg.cell_arg.cell_grid, axis, inner_missing(flags))
        return kc.cross(u, v) / arg.face_areas[axis]

    @kc.func
    def side_cell_coords(arg: SideArg, side_index: int, side_coords: Any, cell: int,
                         altitude: int, shift: int):
        # The side's point in the cell of the side's level below (shift -1) or above
        # (shift 0) it, then in `cell`, which holds that one.
        flags = arg.face_flags[side_index]
        axis = face_axis(flags)
        level = face_level(flags)
        coords = side_to_cell(axis, inner_missing(flags), scalar(altitude), side_coords)
        ijk = arg.face_ijk[side_index]
        ijk[axis] = ijk[axis] + (shift << level)
        return coarse_coords(ijk, level, coords, arg.cell_arg.cell_ijk[cell],
                             int(arg.cell_arg.cell_level[cell]))

    @kc.func
    def side_inner_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        offset = inner_missing(arg.face_flags[side_index])
        return side_cell_coords(arg, side_index, side_coords,
                                side_inner_cell_index(arg, side_index), 1 - offset, offset - 1)

    @kc.func
    def side_outer_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        offset = outer_missing(arg.face_flags[side_index])
        return side_cell_coords(arg, side_index, side_coords,
                                side_outer_cell_index(arg, side_index), offset, -offset)

    @kc.func
    def side_from_cell_coords(arg: SideArg, side_index: int, cell_index: int, cell_coords: Any):
        flags = arg.face_flags[side_index]
        axis = face_axis(flags)
        coords = coarse_coords(arg.cell_arg.cell_ijk[cell_index],
                               int(arg.cell_arg.cell_level[cell_index]), cell_coords,
                               arg.face_ijk[side_index], face_level(flags))
        same_env = arg.face_env[side_index] == arg.cell_arg.cell_env[cell_index]
        if (same_env and coords[axis] == scalar(0.0) and kc.min(coords) >= scalar(0.0)
                and kc.max(coords) <= scalar(1.0)):
            return cell_to_side(axis, inner_missing(flags), coords)
        return Coords(scalar(OUTSIDE))

    @kc.func
    def side_coordinates(arg: SideArg, side_index: int, pos: Any):
        flags = arg.face_flags[side_index]
        uvw = index_point(arg.cell_arg.cell_grid, pos) - real(arg.face_ijk[side_index])
        return cell_to_side(face_axis(flags), inner_missing(flags),
                            uvw / side_scale(arg, side_index))

    @kc.func
    def side_closest_point(arg: SideArg, side_index: int, pos: Any):
        coords = side_coordinates(arg, side_index, pos)
        zero = scalar(0.0)
        one = scalar(1.0)
        projected = Coords(kc.clamp(coords[0], zero, one), kc.clamp(coords[1], zero, one), zero)
        flags = arg.face_flags[side_index]
        offset = side_to_cell(face_axis(flags), inner_missing(flags), zero,
                              coords - projected) * side_scale(arg, side_index)
        return projected, kc.length_sq(kc.volume_index_to_world_dir(arg.cell_arg.cell_grid,
                                                                    offset))

    cell_environment_index = base.cell_environment_index
    side_environment_index = base.side_environment_index

    scope = locals()
    names = ("cell_environment_index", "side_environment_index",
             "CellArg", "SideArg", "cell_position", "cell_deformation_gradient",
             "cell_inverse_deformation_gradient", "cell_measure", "cell_normal",
             "cell_coordinates", "cell_closest_point", "cell_lookup", "side_to_cell_arg",
             "side_position", "side_deformation_gradient",
             "side_inner_inverse_deformation_gradient", "side_outer_inverse_deformation_gradient",
             "side_measure", "side_measure_ratio", "side_normal", "side_inner_cell_index",
             "side_outer_cell_index", "side_inner_cell_coords", "side_outer_cell_coords",
             "side_from_cell_coords", "side_coordinates", "side_closest_point")
    return SimpleNamespace(**{n: scope[n] for n in names})
