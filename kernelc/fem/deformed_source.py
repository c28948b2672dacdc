"""What a deformed geometry needs from the field that deforms it: device funcs giving the
field's value and reference-space gradient in a cell of the base geometry, its value and
world gradient on a side (seen from the side's inner cell), and the map from the field's
side argument to its cell argument.

Discrete fields sum their node values times the basis functions' reference gradients
(as Warp does, so the deformation gradient is not a world gradient mapped back);
implicit fields map their world gradient func back through the base cell's deformation
gradient; uniform fields have none.
"""

from dataclasses import dataclass
from typing import Any

import kernelc as kc
from kernelc.fem.domain import Cells, Sides
from kernelc.fem.field_eval import discrete_cells_arg, discrete_eval
from kernelc.fem.types import mat_type


@dataclass(frozen=True)
class DeformationSource:
    """Device funcs of a deforming field on the cells and sides of its geometry.

    Attributes:
        CellArg: The field's argument struct on cells (its `elt` is the base cell arg).
        SideArg: The field's argument struct on sides (its `elt` is the base side arg).
        cell_value: (cell field arg, s) -> vector.
        cell_reference_gradient: (cell field arg, s) -> (dimension x cell dimension).
        side_value: (side field arg, s) -> vector, from the inner cell.
        side_gradient: (side field arg, s) -> (dimension x dimension) world gradient, from
            the inner cell.
        side_to_cell: (side field arg) -> cell field arg.
    """

    CellArg: type
    SideArg: type
    cell_value: Any
    cell_reference_gradient: Any
    side_value: Any
    side_gradient: Any
    side_to_cell: Any


def field_kind(field: Any) -> str:
    """'discrete', 'implicit' or 'uniform' (raises TypeError for other fields)."""
    from kernelc.fem.field import DiscreteField
    from kernelc.fem.field_implicit import ImplicitField, UniformField

    if isinstance(field, DiscreteField):
        return "discrete"
    if isinstance(field, ImplicitField):
        return "implicit"
    if isinstance(field, UniformField):
        return "uniform"
    raise TypeError(f"cannot deform a geometry with a {type(field).__name__}: give a discrete "
                    "field (on cells), an implicit field or a uniform field")


def deformation_source(field: Any, base: Any) -> DeformationSource:
    """The funcs of `field` (on the cells of `base`) that a deformed geometry calls."""
    kind = field_kind(field)
    cells, sides = Cells(base), Sides(base)
    if kind == "discrete":
        return _discrete_source(field, base, cells, sides)
    return _analytic_source(field, base, cells, sides, kind == "uniform")


def _discrete_source(field: Any, base: Any, cells: Any, sides: Any) -> DeformationSource:
    space = field.space
    on_cells, on_sides = discrete_eval(space, cells), discrete_eval(space, sides)
    weight_gradient = space.shape.weight_gradient
    N = space.shape.NODES_PER_ELEMENT
    Gradient = mat_type(base.dimension, base.cell_dimension, base.scalar_type)
    Arg = on_cells.Arg

    @kc.func
    def cell_reference_gradient(arg: Arg, s: Any):
        total = Gradient()
        for k in range(N):
            total += kc.outer(arg.dof_values[arg.element_nodes[s.element_index, k]],
                              weight_gradient(s.element_coords, k))
        return total

    return DeformationSource(Arg, on_sides.Arg, on_cells.op("inner"), cell_reference_gradient,
                             on_sides.op("inner"), on_sides.op("grad"),
                             discrete_cells_arg(space, sides, cells))


def _analytic_source(field: Any, base: Any, cells: Any, sides: Any,
                     uniform: bool) -> DeformationSource:
    on_cells, on_sides = field.evaluator(cells), field.evaluator(sides)
    # A side argument carries the field's arguments on both element kinds (filled on the
    # host): an implicit field makes a struct of its values per domain, and those of
    # cells and sides cannot be assigned to one another in a kernel.
    SideArg = _struct(f"DeformingSideArg_{_ident(field.kind_name)}_{_ident(sides.name)}",
                      {"elt": sides.ElementArg, "on_sides": on_sides.Arg,
                       "on_cells": on_cells.Arg})
    CellArg = on_cells.Arg
    scalar, dim = base.scalar_type, base.dimension
    RefGradient = mat_type(dim, base.cell_dimension, scalar)
    WorldGradient = mat_type(dim, dim, scalar)
    base_gradient = base.cell_deformation_gradient
    cell_value, side_value = on_cells.op("inner"), on_sides.op("inner")
    cell_grad, side_grad = on_cells.op("grad"), on_sides.op("grad")

    @kc.func
    def reference_gradient(arg: CellArg, s: Any):
        if kc.static(uniform):  # a translation
            return RefGradient()
        else:
            return cell_grad(arg, s) * base_gradient(arg.elt, s)

    @kc.func
    def value_on_side(arg: SideArg, s: Any):
        return side_value(arg.on_sides, s)

    @kc.func
    def gradient_on_side(arg: SideArg, s: Any):
        if kc.static(uniform):
            return WorldGradient()
        else:
            return side_grad(arg.on_sides, s)

    @kc.func
    def field_on_cells(arg: SideArg):
        return arg.on_cells

    return DeformationSource(CellArg, SideArg, cell_value, reference_gradient, value_on_side,
                             gradient_on_side, field_on_cells)


def fill_source_args(field: Any, base: Any, cell_arg: Any, side_arg: Any | None,
                     device: Any) -> None:
    """Sets the deforming field's argument on cells (`cell_arg`, of the source's `CellArg`)
    and, unless None, on sides (`side_arg`, of its `SideArg`)."""
    cells, sides = Cells(base), Sides(base)
    if field_kind(field) == "discrete":
        field.fill_arg(cell_arg, cells, device)
        if side_arg is not None:
            field.fill_arg(side_arg, sides, device)
        return
    _fill_analytic(field, cell_arg, cells, device)
    if side_arg is not None:
        side_arg.elt = sides.element_arg_value(device)
        on_sides = type(side_arg.on_sides)()
        _fill_analytic(field, on_sides, sides, device)
        side_arg.on_sides = on_sides
        side_arg.on_cells = cell_arg


def _fill_analytic(field: Any, arg: Any, domain: Any, device: Any) -> None:
    # Into the struct types the geometry was compiled with (another field of the same
    # kind has struct types of its own), hence not `field.fill_arg`.
    arg.elt = domain.element_arg_value(device)
    if hasattr(field, "value"):  # uniform
        arg.value = field.value
        return
    values = arg.values
    for name in field._arg_names:
        if name not in field.values:
            raise ValueError(f"Missing value '{name}' for implicit field function "
                             f"'{field._func.__name__}'")
        value = field.values[name]
        t = kc.types.as_type(field._arg_types[name])
        if isinstance(t, kc.types.ScalarType) and not isinstance(value, kc.array):
            value = field._arg_types[name](value)
        setattr(values, name, value)
    arg.values = values


def _struct(name: str, fields: dict[str, Any]) -> type:
    return kc.struct(type(name, (), {"__annotations__": dict(fields)}))


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)
