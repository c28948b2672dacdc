"""Device funcs of `Nanogrid` geometries, one set per scalar type.

A cell is an active voxel (i, j, k) of the cell grid; its element coordinates u in [0, 1]^3
map to the index-space point (i, j, k) + u - 1/2 (voxel centres sit at integer indices),
which the grid's own transform takes to the world. A side is a voxel face, stored as the
cell-grid index of the voxel on its upper side (`face_ijk`) and a byte of flags: the
face's axis (bits 0-1), whether the cell below it is missing (bit 2) and whether the cell
above it is missing (bit 3). A face with a missing cell below is seen from its upper cell:
its tangent frame is flipped (`flip` = 1), so that its normal points out of the grid.
"""

from functools import cache
from types import SimpleNamespace
from typing import Any

import kernelc as kc
from kernelc.fem.lookup import voxel_cell_lookup
from kernelc.fem.types import OUTSIDE, coords_type, mat_type, vec_type

AXIS_MASK = 3
INNER_MISSING_BIT = 2
OUTER_MISSING_BIT = 3


@cache
def nanogrid_funcs(scalar: Any) -> SimpleNamespace:
    """Argument structs and device funcs of nanogrids with `scalar` positions (and the
    helpers adaptive nanogrids share: `real`, `face_axis`, `side_to_cell`, ...)."""
    vec3 = vec_type(3, scalar)
    mat33 = mat_type(3, 3, scalar)
    Coords = coords_type(scalar)
    suffix = "" if scalar == kc.float32 else "_f64"

    CellArg = kc.struct(type(f"NanogridCellArg{suffix}", (), {"__annotations__": {
        "cell_grid": kc.uint64, "cell_ijk": kc.array(dtype=kc.vec3i),
        "inverse_transform": mat33, "cell_volume": scalar,
        "cell_env": kc.array(dtype=int), "env_offsets": kc.array(dtype=kc.vec3i)}}))
    SideArg = kc.struct(type(f"NanogridSideArg{suffix}", (), {"__annotations__": {
        "cell_arg": CellArg, "face_ijk": kc.array(dtype=kc.vec3i),
        "face_flags": kc.array(dtype=kc.uint8), "face_areas": vec3,
        "face_env": kc.array(dtype=int)}}))

    @kc.func
    def real(ijk: kc.vec3i):
        return vec3(scalar(ijk[0]), scalar(ijk[1]), scalar(ijk[2]))

    @kc.func
    def face_axis(flags: kc.uint8):
        return int(flags) & AXIS_MASK

    @kc.func
    def inner_missing(flags: kc.uint8):
        return (int(flags) >> INNER_MISSING_BIT) & 1

    @kc.func
    def outer_missing(flags: kc.uint8):
        return (int(flags) >> OUTER_MISSING_BIT) & 1

    @kc.func
    def side_to_cell(axis: int, flip: int, altitude: Any, side_coords: Any):
        uvw = Coords()
        uvw[axis] = altitude
        uvw[(axis + 1 + flip) % 3] = side_coords[0]
        uvw[(axis + 2 - flip) % 3] = side_coords[1]
        return uvw

    @kc.func
    def cell_to_side(axis: int, flip: int, cell_coords: Any):
        return Coords(cell_coords[(axis + 1 + flip) % 3], cell_coords[(axis + 2 - flip) % 3],
                      scalar(0.0))

    @kc.func
    def face_tangents(grid: kc.uint64, axis: int, flip: int):
        u = vec3(scalar(0.0))
        v = vec3(scalar(0.0))
        u[(axis + 1 + flip) % 3] = scalar(1.0)
        v[(axis + 2 - flip) % 3] = scalar(1.0)
        return kc.volume_index_to_world_dir(grid, u), kc.volume_index_to_world_dir(grid, v)

    # ---- cells -----------------------------------------------------------------------------

    @kc.func
    def cell_position(arg: CellArg, s: Any):
        uvw = real(arg.cell_ijk[s.element_index]) + s.element_coords - vec3(scalar(0.5))
        return kc.volume_index_to_world(arg.cell_grid, uvw)

    @kc.func
    def cell_deformation_gradient(arg: CellArg, s: Any):
        return kc.inverse(arg.inverse_transform)

    @kc.func
    def cell_inverse_deformation_gradient(arg: CellArg, s: Any):
        return arg.inverse_transform

    @kc.func
    def cell_measure(arg: CellArg, s: Any):
        return arg.cell_volume

    @kc.func
    def cell_normal(arg: CellArg, s: Any):
        return vec3(scalar(0.0))

    @kc.func
    def cell_coordinates_local(arg: CellArg, cell_index: int, uvw: Any):
        return uvw - real(arg.cell_ijk[cell_index])

    @kc.func
    def cell_closest_point_local(arg: CellArg, cell_index: int, uvw: Any):
        rel = uvw - real(arg.cell_ijk[cell_index])
        coords = kc.min(kc.max(rel, vec3(scalar(0.0))), vec3(scalar(1.0)))
        return kc.length_sq(kc.volume_index_to_world_dir(arg.cell_grid, coords - rel)), coords

    @kc.func
    def index_point(grid: kc.uint64, pos: Any):
        return kc.volume_world_to_index(grid, pos) + vec3(scalar(0.5))

    @kc.func
    def cell_coordinates(arg: CellArg, cell_index: int, pos: Any):
        return cell_coordinates_local(arg, cell_index, index_point(arg.cell_grid, pos))

    @kc.func
    def cell_closest_point(arg: CellArg, cell_index: int, pos: Any):
        dist, coords = cell_closest_point_local(arg, cell_index, index_point(arg.cell_grid, pos))
        return coords, dist

    @kc.func
    def lookup_cell(arg: CellArg, i: int, j: int, k: int):
        return kc.volume_lookup_index(arg.cell_grid, i, j, k)

    # The voxel holding the point; else the closest voxel within max_dist (at least half
    # the smallest voxel size; no cell, index -1, beyond that), as `lookup.py` says.
    cell_lookup = voxel_cell_lookup(CellArg, scalar, lookup_cell, cell_coordinates_local,
                                    cell_closest_point_local, cell_position)

    # ---- sides -----------------------------------------------------------------------------

    @kc.func
    def side_to_cell_arg(arg: SideArg):
        return arg.cell_arg

    @kc.func
    def side_position(arg: SideArg, s: Any):
        flags = arg.face_flags[s.element_index]
        uvw = real(arg.face_ijk[s.element_index]) + side_to_cell(
            face_axis(flags), inner_missing(flags), scalar(0.0), s.element_coords)
        return kc.volume_index_to_world(arg.cell_arg.cell_grid, uvw - vec3(scalar(0.5)))

    @kc.func
    def side_deformation_gradient(arg: SideArg, s: Any):
        flags = arg.face_flags[s.element_index]
        u, v = face_tangents(arg.cell_arg.cell_grid, face_axis(flags), inner_missing(flags))
        return kc.matrix_from_cols(u, v)

    @kc.func
    def side_inner_inverse_deformation_gradient(arg: SideArg, s: Any):
        return arg.cell_arg.inverse_transform

    @kc.func
    def side_outer_inverse_deformation_gradient(arg: SideArg, s: Any):
        return arg.cell_arg.inverse_transform

    @kc.func
    def side_measure(arg: SideArg, s: Any):
        return arg.face_areas[face_axis(arg.face_flags[s.element_index])]

    @kc.func
    def side_measure_ratio(arg: SideArg, s: Any):
        axis = face_axis(arg.face_flags[s.element_index])
        return arg.face_areas[axis] / arg.cell_arg.cell_volume

    @kc.func
    def side_normal(arg: SideArg, s: Any):
        flags = arg.face_flags[s.element_index]
        axis = face_axis(flags)
        u, v = face_tangents(arg.cell_arg.cell_grid, axis, inner_missing(flags))
        return kc.cross(u, v) / arg.face_areas[axis]

    @kc.func
    def packed_face_ijk(arg: SideArg, side_index: int):
        # the face's voxel in the cell grid, where environments sit side by side
        return arg.face_ijk[side_index] + arg.cell_arg.env_offsets[arg.face_env[side_index]]

    @kc.func
    def side_inner_cell_index(arg: SideArg, side_index: int):
        ijk = packed_face_ijk(arg, side_index)
        flags = arg.face_flags[side_index]
        axis = face_axis(flags)
        ijk[axis] = ijk[axis] + inner_missing(flags) - 1
        return kc.volume_lookup_index(arg.cell_arg.cell_grid, ijk[0], ijk[1], ijk[2])

    @kc.func
    def side_outer_cell_index(arg: SideArg, side_index: int):
        ijk = packed_face_ijk(arg, side_index)
        flags = arg.face_flags[side_index]
        axis = face_axis(flags)
        ijk[axis] = ijk[axis] - outer_missing(flags)
        return kc.volume_lookup_index(arg.cell_arg.cell_grid, ijk[0], ijk[1], ijk[2])

    @kc.func
    def side_inner_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        flags = arg.face_flags[side_index]
        flip = inner_missing(flags)
        return side_to_cell(face_axis(flags), flip, scalar(1.0) - scalar(flip), side_coords)

    @kc.func
    def side_outer_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        flags = arg.face_flags[side_index]
        return side_to_cell(face_axis(flags), inner_missing(flags),
                            scalar(outer_missing(flags)), side_coords)

    @kc.func
    def side_from_cell_coords(arg: SideArg, side_index: int, cell_index: int, cell_coords: Any):
        flags = arg.face_flags[side_index]
        axis = face_axis(flags)
        altitude = arg.face_ijk[side_index][axis] - arg.cell_arg.cell_ijk[cell_index][axis]
        same_env = arg.face_env[side_index] == arg.cell_arg.cell_env[cell_index]
        if same_env and scalar(altitude) == cell_coords[axis]:
            return cell_to_side(axis, inner_missing(flags), cell_coords)
        return Coords(scalar(OUTSIDE))

    @kc.func
    def side_coordinates(arg: SideArg, side_index: int, pos: Any):
        flags = arg.face_flags[side_index]
        uvw = index_point(arg.cell_arg.cell_grid, pos) - real(arg.face_ijk[side_index])
        return cell_to_side(face_axis(flags), inner_missing(flags), uvw)

    @kc.func
    def side_closest_point(arg: SideArg, side_index: int, pos: Any):
        coords = side_coordinates(arg, side_index, pos)
        zero = scalar(0.0)
        one = scalar(1.0)
        projected = Coords(kc.clamp(coords[0], zero, one), kc.clamp(coords[1], zero, one), zero)
        flags = arg.face_flags[side_index]
        offset = side_to_cell(face_axis(flags), inner_missing(flags), zero, coords - projected)
        return projected, kc.length_sq(kc.volume_index_to_world_dir(arg.cell_arg.cell_grid,
                                                                    offset))

    # (shared with adaptive nanogrids, whose arguments have the same fields)
    @kc.func
    def cell_environment_index(arg: Any, s: Any):
        return arg.cell_env[s.element_index]

    @kc.func
    def side_environment_index(arg: Any, s: Any):
        return arg.face_env[s.element_index]

    scope = locals()
    names = ("real", "face_axis", "inner_missing", "outer_missing", "side_to_cell",
             "cell_to_side", "face_tangents", "index_point",
             "CellArg", "SideArg", "cell_position", "cell_deformation_gradient",
             "cell_inverse_deformation_gradient", "cell_measure", "cell_normal",
             "cell_coordinates", "cell_closest_point", "cell_lookup", "side_to_cell_arg",
             "side_position", "side_deformation_gradient",
             "side_inner_inverse_deformation_gradient", "side_outer_inverse_deformation_gradient",
             "side_measure", "side_measure_ratio", "side_normal", "side_inner_cell_index",
             "side_outer_cell_index", "side_inner_cell_coords", "side_outer_cell_coords",
             "side_from_cell_coords", "side_coordinates", "side_closest_point",
             "cell_environment_index", "side_environment_index")
    return SimpleNamespace(**{n: scope[n] for n in names})
