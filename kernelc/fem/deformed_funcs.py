"""Argument structs and device funcs of deformed geometries (`deformed.py`).

A deformed cell argument holds the deforming field's argument on the base geometry's
cells (which holds the base cell argument, `arg.field.elt`); a side argument likewise on
the base's sides. Positions and deformation gradients add the field's value and
reference gradient to the base's (relative deformations) or are the field's alone
(absolute positions); on a side the deformation gradient is the base side's, moved by the
field's world gradient seen from the inner cell (F + grad u F), as in Warp. Everything
else (inverse deformation gradients, measures, normals, measure ratios) is derived from
the deformation gradients; the topology (side cells, side coordinates) is the base's.
"""

from functools import partial
from types import SimpleNamespace
from typing import Any

import kernelc as kc
from kernelc.fem.deformed_source import DeformationSource
from kernelc.fem.lookup import closest_search, environment_overloads, lookup_overloads
from kernelc.fem.types import coords_type, make_free_sample, sample_type, vec_type


def _struct(name: str, fields: dict[str, Any]) -> type:
    return kc.struct(type(name, (), {"__annotations__": dict(fields)}))


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def deformed_funcs(name: str, base: Any, source: DeformationSource,
                   relative: bool) -> SimpleNamespace:
    """The structs and funcs of the deformed geometry called `name` (over `base`, moved by
    the field whose funcs are `source`)."""
    # The cell count is for lookups, which go through every cell.
    CellArg = _struct(f"DeformedCellArg_{_ident(name)}", {"field": source.CellArg,
                                                            "cell_count": int})
    SideArg = _struct(f"DeformedSideArg_{_ident(name)}", {"field": source.SideArg,
                                                            "cell_count": int})
    funcs = {"CellArg": CellArg, "SideArg": SideArg, "FieldCellArg": source.CellArg,
             "FieldSideArg": source.SideArg}
    funcs.update(_placement_funcs(CellArg, SideArg, base, source, relative))
    funcs.update(_topology_funcs(CellArg, SideArg, base, source))
    funcs.update(_cell_metric_funcs(CellArg, base, funcs["cell_deformation_gradient"]))
    funcs.update(_side_metric_funcs(SideArg, base, funcs))
    return SimpleNamespace(**funcs)


def _placement_funcs(CellArg: type, SideArg: type, base: Any, source: DeformationSource,
                     relative: bool) -> dict[str, Any]:
    """Positions and deformation gradients of cells and sides."""
    cell_value, cell_gradient = source.cell_value, source.cell_reference_gradient
    side_value, side_gradient = source.side_value, source.side_gradient
    base_cell_position, base_side_position = base.cell_position, base.side_position
    base_cell_gradient = base.cell_deformation_gradient
    base_side_gradient = base.side_deformation_gradient

    @kc.func
    def cell_position(arg: CellArg, s: Any):
        if kc.static(relative):
            return cell_value(arg.field, s) + base_cell_position(arg.field.elt, s)
        else:
            return cell_value(arg.field, s)

    @kc.func
    def cell_deformation_gradient(arg: CellArg, s: Any):
        if kc.static(relative):
            return cell_gradient(arg.field, s) + base_cell_gradient(arg.field.elt, s)
        else:
            return cell_gradient(arg.field, s)

    @kc.func
    def side_position(arg: SideArg, s: Any):
        if kc.static(relative):
            return side_value(arg.field, s) + base_side_position(arg.field.elt, s)
        else:
            return side_value(arg.field, s)

    @kc.func
    def side_deformation_gradient(arg: SideArg, s: Any):
        F = base_side_gradient(arg.field.elt, s)
        moved = side_gradient(arg.field, s) * F
        if kc.static(relative):
            return F + moved
        else:
            return moved

    return {"cell_position": cell_position, "cell_deformation_gradient": cell_deformation_gradient,
            "side_position": side_position, "side_deformation_gradient": side_deformation_gradient}


def _topology_funcs(CellArg: type, SideArg: type, base: Any,
                    source: DeformationSource) -> dict[str, Any]:
    """Side-to-cell maps: the base geometry's, and the side argument's cell argument."""
    inner, outer = base.side_inner_cell_index, base.side_outer_cell_index
    inner_coords, outer_coords = base.side_inner_cell_coords, base.side_outer_cell_coords
    from_cell = base.side_from_cell_coords
    field_to_cells = source.side_to_cell

    @kc.func
    def side_inner_cell_index(arg: SideArg, side_index: int):
        return inner(arg.field.elt, side_index)

    @kc.func
    def side_outer_cell_index(arg: SideArg, side_index: int):
        return outer(arg.field.elt, side_index)

    @kc.func
    def side_inner_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        return inner_coords(arg.field.elt, side_index, side_coords)

    @kc.func
    def side_outer_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        return outer_coords(arg.field.elt, side_index, side_coords)

    @kc.func
    def side_from_cell_coords(arg: SideArg, side_index: int, cell_index: int, cell_coords: Any):
        return from_cell(arg.field.elt, side_index, cell_index, cell_coords)

    @kc.func
    def side_to_cell_arg(arg: SideArg):
        out = CellArg()
        out.field = field_to_cells(arg.field)
        out.cell_count = arg.cell_count
        return out

    return {"side_inner_cell_index": side_inner_cell_index,
            "side_outer_cell_index": side_outer_cell_index,
            "side_inner_cell_coords": side_inner_cell_coords,
            "side_outer_cell_coords": side_outer_cell_coords,
            "side_from_cell_coords": side_from_cell_coords, "side_to_cell_arg": side_to_cell_arg}


def _cell_metric_funcs(CellArg: type, base: Any, gradient: Any) -> dict[str, Any]:
    """Inverse deformation gradient, measure and normal of cells, from their deformation
    gradient (dimension x cell dimension): inverse or pseudo-inverse, |det F| or the
    length of the columns' cross product (surfaces), times the reference cell's measure."""
    scalar, dim = base.scalar_type, base.dimension
    flat = base.cell_dimension == dim
    reference = scalar(base.reference_cell().measure)
    vec = vec_type(dim, scalar)

    @kc.func
    def cell_inverse_deformation_gradient(arg: CellArg, s: Any):
        F = gradient(arg, s)
        if kc.static(flat):
            return kc.inverse(F)
        else:
            Ft = kc.transpose(F)
            return kc.inverse(Ft * F) * Ft

    @kc.func
    def cell_measure(arg: CellArg, s: Any):
        F = gradient(arg, s)
        if kc.static(flat):
            return kc.abs(kc.determinant(F)) * reference
        else:
            Ft = kc.transpose(F)
            return kc.length(kc.cross(Ft[0], Ft[1])) * reference

    @kc.func
    def cell_normal(arg: CellArg, s: Any):
        if kc.static(flat):
            return vec(scalar(0.0))
        else:
            Ft = kc.transpose(gradient(arg, s))
            return kc.normalize(kc.cross(Ft[0], Ft[1]))

    return {"cell_inverse_deformation_gradient": cell_inverse_deformation_gradient,
            "cell_measure": cell_measure, "cell_normal": cell_normal}


def _side_metric_funcs(SideArg: type, base: Any, funcs: dict[str, Any]) -> dict[str, Any]:
    """Measures, normals and measure ratios of sides, and the inverse deformation gradients
    of their cells (called with the sample moved into that cell)."""
    scalar, dim = base.scalar_type, base.dimension
    edge = base.reference_side().dimension == 1  # the gradient is a vector
    planar_edge = edge and dim == 2
    reference = scalar(base.reference_side().measure)
    gradient, to_cells = funcs["side_deformation_gradient"], funcs["side_to_cell_arg"]
    inverse_gradient = funcs["cell_inverse_deformation_gradient"]
    cell_measure, cell_normal = funcs["cell_measure"], funcs["cell_normal"]
    inner, outer = funcs["side_inner_cell_index"], funcs["side_outer_cell_index"]
    inner_coords, outer_coords = funcs["side_inner_cell_coords"], funcs["side_outer_cell_coords"]
    vec2 = vec_type(2, scalar)

    @kc.func
    def side_measure(arg: SideArg, s: Any):
        F = gradient(arg, s)
        if kc.static(edge):
            return kc.length(F) * reference
        else:
            Ft = kc.transpose(F)
            return kc.length(kc.cross(Ft[0], Ft[1])) * reference

    @kc.func
    def side_normal(arg: SideArg, s: Any):
        F = gradient(arg, s)
        if kc.static(planar_edge):
            return kc.normalize(vec2(F[1], -F[0]))
        elif kc.static(edge):  # an edge of a surface: in the surface, out of the inner cell
            cell = make_free_sample(inner(arg, s.element_index),
                                    inner_coords(arg, s.element_index, s.element_coords))
            return kc.normalize(kc.cross(F, cell_normal(to_cells(arg), cell)))
        else:
            Ft = kc.transpose(F)
            return kc.normalize(kc.cross(Ft[0], Ft[1]))

    @kc.func
    def side_measure_ratio(arg: SideArg, s: Any):
        cells = to_cells(arg)
        inner_s = make_free_sample(inner(arg, s.element_index),
                                   inner_coords(arg, s.element_index, s.element_coords))
        outer_s = make_free_sample(outer(arg, s.element_index),
                                   outer_coords(arg, s.element_index, s.element_coords))
        return side_measure(arg, s) / kc.min(cell_measure(cells, inner_s),
                                             cell_measure(cells, outer_s))

    @kc.func
    def side_inner_inverse_deformation_gradient(arg: SideArg, cell_s: Any):
        return inverse_gradient(to_cells(arg), cell_s)

    @kc.func
    def side_outer_inverse_deformation_gradient(arg: SideArg, cell_s: Any):
        return inverse_gradient(to_cells(arg), cell_s)

    return {"side_measure": side_measure, "side_normal": side_normal,
            "side_measure_ratio": side_measure_ratio,
            "side_inner_inverse_deformation_gradient": side_inner_inverse_deformation_gradient,
            "side_outer_inverse_deformation_gradient": side_outer_inverse_deformation_gradient}


def closest_cell_lookup(geo: Any) -> Any:
    """The `cell_lookup` overloads (`lookup.py`) of the deformed geometry `geo`: the closest
    point of the closest cell, every cell searched (Warp searches a BVH), each cell's
    closest point found as Warp's `cell_closest_point` finds it (`element_coords.py`:
    Newton steps from the centre, then projected gradient steps)."""
    from kernelc.fem.element_coords import closest_point_func

    scalar, CellArg = geo.scalar_type, geo.CellArg
    search = partial(closest_search, scalar, CellArg, _cell_count,
                     closest_point_func(geo, False))
    base_env = getattr(geo.host, "cell_environment_index", None)
    if base_env is None or geo.environment_count() <= 1:
        return lookup_overloads(CellArg, scalar, search)
    # several environments: a cell's is the undeformed geometry's
    Coords = coords_type(scalar)

    @kc.func
    def env_of(arg: CellArg, cell: int):
        return base_env(arg.field.elt, make_free_sample(cell, Coords()))

    @kc.func
    def guess_env(arg: CellArg, guess: Any):
        if guess.element_index < 0 or guess.element_index >= arg.cell_count:
            return -1
        return env_of(arg, guess.element_index)

    return environment_overloads(CellArg, sample_type(scalar),
                                 partial(search, environments=True, env_of=env_of),
                                 guess_env=guess_env)


@kc.func
def _cell_count(arg: Any):
    return arg.cell_count
