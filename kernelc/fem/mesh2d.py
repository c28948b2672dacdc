"""The device funcs that meshes of 2-d cells (`Trimesh2D` / `Trimesh3D`, `Quadmesh2D` /
`Quadmesh3D`) define alike, in the plane (dimension 2) or on a surface in space (3).

Cells: from their (dimension x 2) deformation gradient F, the inverse (a pseudo-inverse
(F^T F)^-1 F^T on a surface), the measure (|det F|, or the length of the columns' cross
product on a surface, times the reference cell's measure) and the normal (zero in the
plane). Sides are straight edges running from side vertex 0 to side vertex 1: position,
deformation gradient (the edge vector), length, inner and outer cells, the maps to the
cells' coordinates and the normal (the edge turned clockwise in the plane; on a surface,
the edge crossed with the inner cell's normal, Warp having none there).
"""

from typing import Any

import kernelc as kc
from kernelc.fem.types import make_free_sample, vec_type


def cell_gradient_funcs(CellArg: type, deformation_gradient: Any, scalar: Any, dim: int,
                        reference_measure: float) -> dict[str, Any]:
    """`cell_inverse_deformation_gradient`, `cell_measure` and `cell_normal` from the cells'
    `deformation_gradient` func."""
    vec = vec_type(dim, scalar)
    scale = scalar(reference_measure)

    @kc.func
    def planar_inverse_gradient(arg: CellArg, s: Any):
        return kc.inverse(deformation_gradient(arg, s))

    @kc.func
    def surface_inverse_gradient(arg: CellArg, s: Any):
        F = deformation_gradient(arg, s)
        Ft = kc.transpose(F)
        return kc.inverse(Ft * F) * Ft

    @kc.func
    def planar_measure(arg: CellArg, s: Any):
        return kc.abs(kc.determinant(deformation_gradient(arg, s))) * scale

    @kc.func
    def surface_cross(arg: CellArg, s: Any):
        Ft = kc.transpose(deformation_gradient(arg, s))
        return kc.cross(Ft[0], Ft[1])

    @kc.func
    def surface_measure(arg: CellArg, s: Any):
        return kc.length(surface_cross(arg, s)) * scale

    @kc.func
    def planar_normal(arg: CellArg, s: Any):
        return vec(scalar(0.0))

    @kc.func
    def surface_normal(arg: CellArg, s: Any):
        return kc.normalize(surface_cross(arg, s))

    planar = dim == 2
    return {"cell_inverse_deformation_gradient": planar_inverse_gradient if planar
            else surface_inverse_gradient,
            "cell_measure": planar_measure if planar else surface_measure,
            "cell_normal": planar_normal if planar else surface_normal}


def edge_side_funcs(SideArg: type, cell_normal: Any, edge_to_cell_coords: Any, scalar: Any,
                    dim: int) -> dict[str, Any]:
    """The side funcs (`Geometry.SIDE_FUNCS` but the measure ratio and the inverse
    gradients) of sides that are straight edges.

    Args:
        SideArg: The side argument struct (`cell_arg`, `side_vertices`, `side_cells`).
        cell_normal: The cells' normal func.
        edge_to_cell_coords: (side arg, side, cell, side coordinates) -> the cell's
            coordinates of the side's point.
        scalar: Scalar type of positions.
        dim: Dimension of positions.
    """
    vec2 = vec_type(2, scalar)

    @kc.func
    def side_to_cell_arg(arg: SideArg):
        return arg.cell_arg

    @kc.func
    def edge_ends(arg: SideArg, side: int):
        v = arg.side_vertices[side]
        return arg.cell_arg.positions[v[0]], arg.cell_arg.positions[v[1]]

    @kc.func
    def side_position(arg: SideArg, s: Any):
        v0, v1 = edge_ends(arg, s.element_index)
        t = s.element_coords[0]
        return (scalar(1.0) - t) * v0 + t * v1

    @kc.func
    def side_deformation_gradient(arg: SideArg, s: Any):
        v0, v1 = edge_ends(arg, s.element_index)
        return v1 - v0

    @kc.func
    def side_measure(arg: SideArg, s: Any):
        return kc.length(side_deformation_gradient(arg, s))

    @kc.func
    def side_inner_cell_index(arg: SideArg, side_index: int):
        return arg.side_cells[side_index][0]

    @kc.func
    def side_outer_cell_index(arg: SideArg, side_index: int):
        return arg.side_cells[side_index][1]

    @kc.func
    def side_inner_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        return edge_to_cell_coords(arg, side_index, side_inner_cell_index(arg, side_index),
                                   side_coords)

    @kc.func
    def side_outer_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        return edge_to_cell_coords(arg, side_index, side_outer_cell_index(arg, side_index),
                                   side_coords)

    @kc.func
    def planar_side_normal(arg: SideArg, s: Any):
        e = side_deformation_gradient(arg, s)
        return kc.normalize(vec2(e[1], -e[0]))

    @kc.func
    def surface_side_normal(arg: SideArg, s: Any):
        side = s.element_index
        cell = make_free_sample(side_inner_cell_index(arg, side),
                                side_inner_cell_coords(arg, side, s.element_coords))
        return kc.normalize(kc.cross(side_deformation_gradient(arg, s),
                                     cell_normal(arg.cell_arg, cell)))

    funcs = {f.__name__: f for f in (
        side_to_cell_arg, side_position, side_deformation_gradient, side_measure,
        side_inner_cell_index, side_outer_cell_index, side_inner_cell_coords,
        side_outer_cell_coords)}
    funcs["side_normal"] = planar_side_normal if dim == 2 else surface_side_normal
    return funcs
