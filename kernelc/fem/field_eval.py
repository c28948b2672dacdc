"""Device funcs that evaluate fields in integrands, generated per (field kind, space, domain).

Each field argument of an integrand becomes a struct (`Arg`) in the generated kernel, and
each operator applied to it (`u(s)`, `fem.grad(u, s)`, `fem.div(u, s)`, ...) becomes a
call of one of these funcs with that struct and the sample. Test and trial fields
evaluate the basis function of the dof named by the sample's `test_dof` / `trial_dof`
(node in the element, component of the value); discrete fields sum their node values
times the basis functions. Values, gradients and divergences of vector and matrix spaces
come from the space's `ValueAlgebra` (`valuetypes.py`).

On sides, a space is seen through its trace: side node n < N is node n of the inner cell,
node n >= N node n - N of the outer cell (N nodes per cell); "inner" operators see only
the former, "outer" ones only the latter, as in Warp.
"""

from dataclasses import dataclass
from typing import Any

import kernelc as kc
from kernelc.fem.field_nodes import field_node_ops
from kernelc.fem.types import ElementKind, make_free_sample
from kernelc.fem.valuetypes import skew_part_func, symmetric_part_func, value_kind

_WHY = {"grad": "gradient (matrix-valued fields have none)",
        "div": "divergence (only vector and matrix fields whose leading size is the "
               "geometry's dimension have one)",
        "D": "symmetric gradient (only vector fields of the geometry's dimension have one)",
        "curl": "curl (only vector fields of dimension 2 or 3 have one)",
        "at_node": "fem.at_node (only test, trial and discrete fields of function spaces "
                   "have it)"}


@dataclass(frozen=True)
class FieldEval:
    """The generated struct type and operator funcs of one field on one domain kind."""

    Arg: type
    ops: dict  # operator name -> kc.func (arg, s) -> value
    scalar: Any = None
    grad_type: Any = None  # type of `grad`, for D and curl
    dtype: Any = None

    def op(self, name: str) -> Any:
        """The func of operator `name` (None if the field has none), composite operators
        (jump, average, grad_jump, grad_average, D, curl) made on first use."""
        if name not in self.ops and name in _COMPOSITES:
            first, second, average = _COMPOSITES[name]
            if self.ops.get(first) is not None and self.ops.get(second) is not None:
                self.ops[name] = _combine(self.ops[first], self.ops[second], average,
                                          self.scalar)
        if name not in self.ops and name in ("D", "curl") and self._square_gradient(name):
            part = symmetric_part_func if name == "D" else skew_part_func
            self.ops[name] = _compose(part(self.grad_type), self.ops["grad"])
        return self.ops.get(name)

    def _square_gradient(self, name: str) -> bool:
        t = self.grad_type
        if t is None or self.ops.get("grad") is None or value_kind(t) != "matrix":
            return False
        rows, cols = kc.types.as_type(t).shape
        return rows == cols and (name == "D" or rows in (2, 3))

    def why_not(self, name: str) -> str:
        """Why operator `name` is not available for this field (for error messages)."""
        base = name.replace("_outer", "").replace("_jump", "").replace("_average", "")
        what = _WHY.get(base, f"operator fem.{name}")
        if self.dtype is None:
            return f"this field has no {what}"
        return f"a field of {kc.types.as_type(self.dtype)!r} values has no {what}"


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


def _compose(outer_func: Any, inner_func: Any) -> Any:
    @kc.func
    def composed(arg: Any, s: Any):
        return outer_func(inner_func(arg, s))

    return composed


def _struct(name: str, fields: dict) -> type:
    return kc.struct(type(name, (), {"__annotations__": dict(fields)}))


# Generated funcs, keyed by names: everything they capture is determined by the space's and
# the domain's names (shape functions, geometry kind and precision, value type), never by a
# resolution.
_CACHE: dict[tuple, FieldEval] = {}


def basis_eval(kind: str, space: Any, domain: Any) -> FieldEval:
    """Funcs for a test (`kind="test"`) or trial (`"trial"`) field: the basis function of
    the sample's test or trial dof."""
    if hasattr(space, "field_eval"):  # vector-valued bases (space_vector.py)
        return space.field_eval(kind, domain)
    key = (kind, space.name, domain.name)
    if key not in _CACHE:
        _CACHE[key] = _basis_eval(kind, space, domain)
    return _CACHE[key]


def discrete_eval(space: Any, domain: Any, partial: bool = False) -> FieldEval:
    """Funcs for a discrete field: sum over the element's nodes of value x basis function.
    `partial`: the field lives on part of the space's nodes (a space partition), and its
    element nodes are -1 where a node is not in it (that node's value is zero)."""
    if hasattr(space, "field_eval"):  # vector-valued (space_vector.py) and point bases
        if partial:
            raise NotImplementedError("discrete fields of vector-valued (Nedelec, "
                                      "Raviart-Thomas) and point bases on space partitions "
                                      "are not supported")
        return space.field_eval("discrete", domain)
    key = ("discrete", space.name, domain.name, partial)
    if key not in _CACHE:
        _CACHE[key] = _discrete_eval(space, domain, partial)
    return _CACHE[key]


def _side_maps(geo: Any) -> dict[str, tuple]:
    """(cell index, cell coords, inverse deformation gradient) funcs of each side's inner
    and outer cells."""
    return {"inner": (geo.side_inner_cell_index, geo.side_inner_cell_coords,
                      geo.side_inner_inverse_deformation_gradient),
            "outer": (geo.side_outer_cell_index, geo.side_outer_cell_coords,
                      geo.side_outer_inverse_deformation_gradient)}


def _basis_eval(kind: str, space: Any, domain: Any) -> FieldEval:
    geo = space.geometry
    shape = space.shape
    algebra = space.algebra
    weight, weight_gradient = shape.weight, shape.weight_gradient
    N = shape.NODES_PER_ELEMENT
    Arg = _struct(f"{kind.capitalize()}FieldArg_{_ident(space.name)}_{_ident(domain.name)}",
                  {"elt": domain.ElementArg, "element_nodes": kc.array2d(dtype=int)})
    use_test = kind == "test"
    zero, grad_zero, div_zero = algebra.zero, algebra.grad_zero, algebra.div_zero
    unit, basis_grad, basis_div = algebra.unit, algebra.basis_grad, algebra.basis_div
    has_grad, has_div = algebra.grad_type is not None, algebra.div_type is not None

    @kc.func
    def dof_of(s: Any):
        if kc.static(use_test):
            return s.test_dof
        return s.trial_dof

    def funcs(offset: int, cell_of: Any, coords_of: Any, inv_F: Any) -> dict:
        """value / grad / div of the basis function whose element node is `offset` + a
        node of the cell reached by `cell_of` / `coords_of` (cells: the identity)."""
        side = cell_of is not None

        @kc.func
        def local(arg: Arg, s: Any):
            dof = dof_of(s)
            node = dof[0] - offset
            if node < 0 or node >= N:
                node = -1
            return kc.vec2i(node, dof[1])

        @kc.func
        def cell_coords(arg: Arg, s: Any):
            if kc.static(side):
                return coords_of(arg.elt, s.element_index, s.element_coords)
            return s.element_coords

        @kc.func
        def world_weight_gradient(arg: Arg, s: Any, node: int):
            coords = cell_coords(arg, s)
            if kc.static(side):
                cell_s = make_free_sample(cell_of(arg.elt, s.element_index), coords)
                return weight_gradient(coords, node) * inv_F(arg.elt, cell_s)
            return weight_gradient(coords, node) * inv_F(arg.elt, s)

        @kc.func
        def value(arg: Arg, s: Any):
            dof = local(arg, s)
            if dof[0] < 0:
                return zero()
            return weight(cell_coords(arg, s), dof[0]) * unit(dof[1])

        @kc.func
        def gradient(arg: Arg, s: Any):
            dof = local(arg, s)
            if dof[0] < 0:
                return grad_zero()
            return basis_grad(world_weight_gradient(arg, s, dof[0]), dof[1])

        @kc.func
        def divergence(arg: Arg, s: Any):
            dof = local(arg, s)
            if dof[0] < 0:
                return div_zero()
            return basis_div(world_weight_gradient(arg, s, dof[0]), dof[1])

        return {"value": value, "grad": gradient if has_grad else None,
                "div": divergence if has_div else None}

    if domain.element_kind == ElementKind.CELL:
        cell = funcs(0, None, None, geo.cell_inverse_deformation_gradient)
        inner = outer = cell
    else:
        maps = _side_maps(geo)
        inner, outer = funcs(0, *maps["inner"]), funcs(N, *maps["outer"])
    return _field_eval(Arg, inner, outer, space, domain, kind)


def _field_eval(Arg: type, inner: dict, outer: dict, space: Any, domain: Any,
                kind: str) -> FieldEval:
    ops = {"inner": inner["value"], "outer": outer["value"], "grad": inner["grad"],
           "grad_outer": outer["grad"], "div": inner["div"], "div_outer": outer["div"],
           **_node_count(space, domain), **field_node_ops(kind, space, domain)}
    return FieldEval(Arg, ops, space.geometry.scalar_type, space.algebra.grad_type,
                     space.dtype)


def _node_count(space: Any, domain: Any) -> dict:
    """`fem.node_count(f, s)`: on sides, the trace's (both cells' nodes). The other node
    operators are in `field_nodes.py`."""
    side = domain.element_kind == ElementKind.SIDE
    count = space.shape.NODES_PER_ELEMENT * (2 if side else 1)

    @kc.func
    def node_count(arg: Any, s: Any):
        return count

    return {"node_count": node_count}


def discrete_cells_arg(space: Any, domain: Any, cells: Any) -> Any:
    """A func mapping a traced discrete field's struct on the sides `domain` to its struct
    on `cells` (`fem.cells(u)`)."""
    key = ("cells_arg", space.name, domain.name)
    if key not in _CELL_ARG_FUNCS:
        SideFieldArg = discrete_eval(space, domain).Arg
        CellFieldArg = discrete_eval(space, cells).Arg
        to_cell_arg = domain.geometry.side_to_cell_arg
        signed = hasattr(space, "fill_field_arg")  # vector-valued bases' orientation signs

        @kc.func
        def field_on_cells(arg: SideFieldArg):
            out = CellFieldArg()
            out.elt = to_cell_arg(arg.elt)
            out.dof_values = arg.dof_values
            out.element_nodes = arg.element_nodes
            if kc.static(signed):
                out.element_signs = arg.element_signs
            return out

        _CELL_ARG_FUNCS[key] = field_on_cells
    return _CELL_ARG_FUNCS[key]


_CELL_ARG_FUNCS: dict[tuple, Any] = {}


def _discrete_eval(space: Any, domain: Any, partial: bool) -> FieldEval:
    geo = space.geometry
    shape = space.shape
    algebra = space.algebra
    weight, weight_gradient = shape.weight, shape.weight_gradient
    N = shape.NODES_PER_ELEMENT
    suffix = "_partial" if partial else ""
    members = {"elt": domain.ElementArg, "dof_values": kc.array(dtype=space.dof_dtype),
               "element_nodes": kc.array2d(dtype=int)}
    if partial:  # space node -> partition index (-1 outside), for fem.node_partition_index
        members["partition_indices"] = kc.array(dtype=int)
    Arg = _struct(f"DiscreteFieldArg_{_ident(space.name)}_{_ident(domain.name)}{suffix}",
                  members)
    Dof = space.dof_dtype
    zero, grad_zero, div_zero = algebra.zero, algebra.grad_zero, algebra.div_zero
    node_grad, node_div = algebra.node_grad, algebra.node_div
    to_value = algebra.to_value  # None: nodes store values (no dof mapper)
    scalar_values = algebra.kind == "scalar" and to_value is None
    has_grad, has_div = algebra.grad_type is not None, algebra.div_type is not None

    @kc.func
    def dofs(arg: Arg, cell: int, k: int):
        """The dofs of the cell's node `k` (zero for a node outside a partial field)."""
        node = arg.element_nodes[cell, k]
        if kc.static(partial):
            if node < 0:
                return kc.static(Dof)(0.0)
        return arg.dof_values[node]

    @kc.func
    def cell_value(arg: Arg, cell: int, coords: Any):
        total = zero()
        for k in range(N):
            if kc.static(to_value is None):
                total += dofs(arg, cell, k) * weight(coords, k)
            else:
                total += weight(coords, k) * to_value(dofs(arg, cell, k))
        return total

    @kc.func
    def cell_gradient(arg: Arg, cell: int, coords: Any, inv_F: Any):
        total = grad_zero()
        if kc.static(scalar_values):  # the reference gradient, mapped once
            for k in range(N):
                total += dofs(arg, cell, k) * weight_gradient(coords, k)
            return total * inv_F
        for k in range(N):
            total += node_grad(dofs(arg, cell, k), weight_gradient(coords, k) * inv_F)
        return total

    @kc.func
    def cell_divergence(arg: Arg, cell: int, coords: Any, inv_F: Any):
        total = div_zero()
        for k in range(N):
            total += node_div(dofs(arg, cell, k), weight_gradient(coords, k) * inv_F)
        return total

    def funcs(cell_of: Any, coords_of: Any, inv_F: Any) -> dict:
        side = cell_of is not None

        @kc.func
        def where(arg: Arg, s: Any):
            if kc.static(side):
                cell = cell_of(arg.elt, s.element_index)
                coords = coords_of(arg.elt, s.element_index, s.element_coords)
                return make_free_sample(cell, coords)
            return s

        @kc.func
        def value(arg: Arg, s: Any):
            cs = where(arg, s)
            return cell_value(arg, cs.element_index, cs.element_coords)

        @kc.func
        def gradient(arg: Arg, s: Any):
            cs = where(arg, s)
            return cell_gradient(arg, cs.element_index, cs.element_coords, inv_F(arg.elt, cs))

        @kc.func
        def divergence(arg: Arg, s: Any):
            cs = where(arg, s)
            return cell_divergence(arg, cs.element_index, cs.element_coords,
                                   inv_F(arg.elt, cs))

        return {"value": value, "grad": gradient if has_grad else None,
                "div": divergence if has_div else None}

    if domain.element_kind == ElementKind.CELL:
        inner = outer = funcs(None, None, geo.cell_inverse_deformation_gradient)
    else:
        maps = _side_maps(geo)
        inner, outer = funcs(*maps["inner"]), funcs(*maps["outer"])
    field_eval = _field_eval(Arg, inner, outer, space, domain, "discrete")
    if partial:
        field_eval.ops["node_partition_index"] = _partial_node_partition_index
    return field_eval


@kc.func
def _partial_node_partition_index(arg: Any, node_index: int):
    return arg.partition_indices[node_index]


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)
