"""Device funcs that evaluate fields in integrands, generated per (field kind, space, domain).

Each field argument of an integrand becomes a struct (`Arg`) in the generated kernel, and
each operator applied to it (`u(s)`, `fem.grad(u, s)`, `fem.outer(u, s)`, ...) becomes a
call of one of these funcs with that struct and the sample. Test and trial fields
evaluate the basis function of the node named by the sample's `test_dof` / `trial_dof`;
discrete fields sum their node values times the basis functions.

On sides, a space is seen through its trace: side node n < N is node n of the inner cell,
node n >= N node n - N of the outer cell (N nodes per cell); "inner" operators see only
the former, "outer" ones only the latter, as in Warp.
"""

from dataclasses import dataclass
from typing import Any

import kernelc as kc
from kernelc.fem.types import ElementKind, make_free_sample, vec_type


@dataclass(frozen=True)
class FieldEval:
    """The generated struct type and operator funcs of one field on one domain kind."""

    Arg: type
    ops: dict  # operator name -> kc.func (arg, s) -> value
    scalar: Any = None

    def op(self, name: str) -> Any:
        """The func of operator `name` (None if the field has none), composite operators
        (jump, average, grad_jump, grad_average) made on first use."""
        if name not in self.ops and name in _COMPOSITES:
            first, second, average = _COMPOSITES[name]
            self.ops[name] = _combine(self.ops[first], self.ops[second], average, self.scalar)
        return self.ops.get(name)


_COMPOSITES = {"jump": ("inner", "outer", False), "average": ("inner", "outer", True),
               "grad_jump": ("grad", "grad_outer", False),
               "grad_average": ("grad", "grad_outer", True)}


def _combine(first: Any, second: Any, average: bool, scalar: Any) -> Any:
    if average:
        @kc.func
        def mean(arg: Any, s: Any):
            return scalar(0.5) * (first(arg, s) + second(arg, s))

        return mean

    @kc.func
    def difference(arg: Any, s: Any):
        return first(arg, s) - second(arg, s)

    return difference


def _struct(name: str, fields: dict) -> type:
    return kc.struct(type(name, (), {"__annotations__": dict(fields)}))


# Generated funcs, keyed by names: everything they capture is determined by the space's and
# the domain's names (shape functions, geometry kind and precision), never by a resolution.
_CACHE: dict[tuple, FieldEval] = {}


def basis_eval(kind: str, space: Any, domain: Any) -> FieldEval:
    """Funcs for a test (`kind="test"`) or trial (`"trial"`) field: the basis function of
    the sample's test or trial node."""
    key = (kind, space.name, domain.name)
    if key not in _CACHE:
        _CACHE[key] = _basis_eval(kind, space, domain)
    return _CACHE[key]


def discrete_eval(space: Any, domain: Any) -> FieldEval:
    """Funcs for a discrete field: sum over the element's nodes of value x basis function."""
    key = ("discrete", space.name, domain.name)
    if key not in _CACHE:
        _CACHE[key] = _discrete_eval(space, domain)
    return _CACHE[key]


def _basis_eval(kind: str, space: Any, domain: Any) -> FieldEval:
    space_name, domain_name = _ident(space.name), _ident(domain.name)
    geo = space.geometry
    shape = space.shape
    scalar = geo.scalar_type
    grad_type = vec_type(geo.cell_dimension, scalar)
    weight, weight_gradient = shape.weight, shape.weight_gradient
    N = shape.NODES_PER_ELEMENT
    Arg = _struct(f"{kind.capitalize()}FieldArg_{space_name}_{domain_name}",
                  {"elt": domain.ElementArg})
    use_test = kind == "test"

    @kc.func
    def dof_node(s: Any):
        if kc.static(use_test):
            return s.test_dof[0]
        return s.trial_dof[0]

    if domain.element_kind == ElementKind.CELL:
        inv_F = geo.cell_inverse_deformation_gradient

        @kc.func
        def value(arg: Arg, s: Any):
            node = dof_node(s)
            if node < 0:
                return scalar(0.0)
            return weight(s.element_coords, node)

        @kc.func
        def gradient(arg: Arg, s: Any):
            node = dof_node(s)
            if node < 0:
                return grad_type(scalar(0.0))
            return weight_gradient(s.element_coords, node) * inv_F(arg.elt, s)

        ops = {"inner": value, "outer": value, "grad": gradient, "grad_outer": gradient}
        return FieldEval(Arg, ops, scalar)

    inner_cell, outer_cell = geo.side_inner_cell_index, geo.side_outer_cell_index
    inner_coords, outer_coords = geo.side_inner_cell_coords, geo.side_outer_cell_coords
    inner_inv_F = geo.side_inner_inverse_deformation_gradient
    outer_inv_F = geo.side_outer_inverse_deformation_gradient
    free_sample = make_free_sample

    @kc.func
    def inner_value(arg: Arg, s: Any):
        node = dof_node(s)
        if node < 0 or node >= N:
            return scalar(0.0)
        return weight(inner_coords(arg.elt, s.element_index, s.element_coords), node)

    @kc.func
    def outer_value(arg: Arg, s: Any):
        node = dof_node(s)
        if node < N:
            return scalar(0.0)
        return weight(outer_coords(arg.elt, s.element_index, s.element_coords), node - N)

    @kc.func
    def inner_gradient(arg: Arg, s: Any):
        node = dof_node(s)
        if node < 0 or node >= N:
            return grad_type(scalar(0.0))
        cell = inner_cell(arg.elt, s.element_index)
        coords = inner_coords(arg.elt, s.element_index, s.element_coords)
        cell_s = free_sample(cell, coords)
        return weight_gradient(coords, node) * inner_inv_F(arg.elt, cell_s)

    @kc.func
    def outer_gradient(arg: Arg, s: Any):
        node = dof_node(s)
        if node < N:
            return grad_type(scalar(0.0))
        cell = outer_cell(arg.elt, s.element_index)
        coords = outer_coords(arg.elt, s.element_index, s.element_coords)
        cell_s = free_sample(cell, coords)
        return weight_gradient(coords, node - N) * outer_inv_F(arg.elt, cell_s)

    ops = {"inner": inner_value, "outer": outer_value, "grad": inner_gradient,
           "grad_outer": outer_gradient}
    return FieldEval(Arg, ops, scalar)


def _discrete_eval(space: Any, domain: Any) -> FieldEval:
    space_name, domain_name = _ident(space.name), _ident(domain.name)
    geo = space.geometry
    shape = space.shape
    scalar = geo.scalar_type
    grad_type = vec_type(geo.cell_dimension, scalar)
    weight, weight_gradient = shape.weight, shape.weight_gradient
    N = shape.NODES_PER_ELEMENT
    Arg = _struct(f"DiscreteFieldArg_{space_name}_{domain_name}", {
        "elt": domain.ElementArg, "dof_values": kc.array(dtype=space.dtype),
        "element_nodes": kc.array2d(dtype=int)})

    @kc.func
    def cell_value(arg: Arg, cell: int, coords: Any):
        total = scalar(0.0)
        for k in range(N):
            total += arg.dof_values[arg.element_nodes[cell, k]] * weight(coords, k)
        return total

    @kc.func
    def cell_gradient(arg: Arg, cell: int, coords: Any):
        total = grad_type(scalar(0.0))
        for k in range(N):
            total += arg.dof_values[arg.element_nodes[cell, k]] * weight_gradient(coords, k)
        return total

    if domain.element_kind == ElementKind.CELL:
        inv_F = geo.cell_inverse_deformation_gradient

        @kc.func
        def value(arg: Arg, s: Any):
            return cell_value(arg, s.element_index, s.element_coords)

        @kc.func
        def gradient(arg: Arg, s: Any):
            return cell_gradient(arg, s.element_index, s.element_coords) * inv_F(arg.elt, s)

        ops = {"inner": value, "outer": value, "grad": gradient, "grad_outer": gradient}
        return FieldEval(Arg, ops, scalar)

    free_sample = make_free_sample

    def side_funcs(cell_of: Any, coords_of: Any, inv_F: Any) -> tuple[Any, Any]:
        @kc.func
        def side_value(arg: Arg, s: Any):
            cell = cell_of(arg.elt, s.element_index)
            return cell_value(arg, cell, coords_of(arg.elt, s.element_index, s.element_coords))

        @kc.func
        def side_gradient(arg: Arg, s: Any):
            cell = cell_of(arg.elt, s.element_index)
            coords = coords_of(arg.elt, s.element_index, s.element_coords)
            return cell_gradient(arg, cell, coords) * inv_F(arg.elt, free_sample(cell, coords))

        return side_value, side_gradient

    inner_v, inner_g = side_funcs(geo.side_inner_cell_index, geo.side_inner_cell_coords,
                                  geo.side_inner_inverse_deformation_gradient)
    outer_v, outer_g = side_funcs(geo.side_outer_cell_index, geo.side_outer_cell_coords,
                                  geo.side_outer_inverse_deformation_gradient)
    ops = {"inner": inner_v, "outer": outer_v, "grad": inner_g, "grad_outer": outer_g}
    return FieldEval(Arg, ops, scalar)


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)
