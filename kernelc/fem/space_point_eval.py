"""Device funcs of fields of a `PointBasisSpace` (`space_point.py`) in integrands.

A field's struct holds, besides the domain's element argument and the node table, the
basis' point tables (nodes per cell, point coordinates and point indices per (cell, node))
and the kernel's extra values (a struct of fields `v0`, `v1`, ... passed to the kernel in
parameter order). Node `k` of the sample's cell weighs
`kernel(d2(sample, point k), point index of k, values...)`; its reference gradient is
`kernel_grad(...)` times the gradient of `d2` (zero without a gradient func), mapped to the
world by the cell's inverse deformation gradient, as other bases' are. Test and trial
fields see the node of their dof (nothing past the cell's count), discrete fields sum
over the cell's nodes.
"""

from typing import Any

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.field_eval import FieldEval
from kernelc.fem.types import ElementKind, coords_type, make_free_sample, sample_builder, vec_type

_EVALS: dict[tuple, FieldEval] = {}


def point_field_eval(kind: str, space: Any, domain: Any) -> FieldEval:
    """The struct and operator funcs of a "test", "trial" or "discrete" field of a point
    space on a domain of cells."""
    if domain.element_kind != ElementKind.CELL:
        raise NotImplementedError("fields of point basis spaces on sides are not supported yet")
    key = (kind, space.name, domain.name)
    if key not in _EVALS:
        _EVALS[key] = _make_eval(kind, space, domain)
    return _EVALS[key]


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _struct(name: str, fields: dict) -> type:
    return kc.struct(type(name, (), {"__annotations__": dict(fields)}))


# ---- kernel weights -------------------------------------------------------------------------


def _ref_delta(element: Element, scalar: Any) -> Any:
    """Coordinates difference -> reference-space vector (Warp's `ref_delta`)."""
    vec1, vec2, vec3 = (vec_type(n, scalar) for n in (1, 2, 3))
    if element == Element.SQUARE:
        @kc.func
        def square_delta(c: Any):
            return vec2(c[0], c[1])

        return square_delta
    if element == Element.TRIANGLE:  # barycentric coordinates: (l1, l2) are the reference's
        @kc.func
        def triangle_delta(c: Any):
            return vec2(c[1], c[2])

        return triangle_delta
    if element == Element.LINE_SEGMENT:
        @kc.func
        def segment_delta(c: Any):
            return vec1(c[0])

        return segment_delta

    @kc.func
    def volume_delta(c: Any):
        return vec3(c[0], c[1], c[2])

    return volume_delta


def _kernel_caller(func: Any, count: int, dist_type: Any, scalar: Any) -> Any:
    """(squared distance, point index, values struct) -> the kernel's value in `scalar`."""

    @kc.func
    def call_kernel(d2: Any, index: int, v: Any):
        d = dist_type(d2)
        if kc.static(count == 0):
            return scalar(func(d, index))
        elif kc.static(count == 1):
            return scalar(func(d, index, v.v0))
        elif kc.static(count == 2):
            return scalar(func(d, index, v.v0, v.v1))
        elif kc.static(count == 3):
            return scalar(func(d, index, v.v0, v.v1, v.v2))
        elif kc.static(count == 4):
            return scalar(func(d, index, v.v0, v.v1, v.v2, v.v3))
        elif kc.static(count == 5):
            return scalar(func(d, index, v.v0, v.v1, v.v2, v.v3, v.v4))
        elif kc.static(count == 6):
            return scalar(func(d, index, v.v0, v.v1, v.v2, v.v3, v.v4, v.v5))
        elif kc.static(count == 7):
            return scalar(func(d, index, v.v0, v.v1, v.v2, v.v3, v.v4, v.v5, v.v6))
        else:
            return scalar(func(d, index, v.v0, v.v1, v.v2, v.v3, v.v4, v.v5, v.v6, v.v7))

    return call_kernel


def _weight_funcs(basis: Any) -> tuple[Any, Any]:
    """(arg, cell, coords, k) -> the weight of the cell's node `k` at `coords`, and its
    reference gradient."""
    geo = basis.geometry
    scalar = geo.scalar_type
    RefGrad = vec_type(geo.cell_dimension, scalar)
    world = basis.distance_space == "world"
    ref_delta = _ref_delta(geo.reference_cell(), scalar)
    position, deformation = geo.cell_position, geo.cell_deformation_gradient
    count = len(basis.value_names)
    kernel = _kernel_caller(basis.kernel_func, count, basis.distance_type, scalar)
    has_grad = basis.kernel_grad_func is not None
    kernel_grad = _kernel_caller(basis.kernel_grad_func, count, basis.distance_type,
                                 scalar) if has_grad else None

    @kc.func
    def squared_distance(elt: Any, cell: int, coords: Any, point: Any):
        if kc.static(world):
            x = position(elt, make_free_sample(cell, coords))
            return kc.length_sq(x - position(elt, make_free_sample(cell, point)))
        else:
            return kc.length_sq(ref_delta(coords - point))

    @kc.func
    def squared_distance_gradient(elt: Any, cell: int, coords: Any, point: Any):
        # with respect to the sample's reference coordinates
        if kc.static(world):
            s = make_free_sample(cell, coords)
            delta = position(elt, s) - position(elt, make_free_sample(cell, point))
            return scalar(2.0) * (delta * deformation(elt, s))
        else:
            return scalar(2.0) * ref_delta(coords - point)

    @kc.func
    def node_weight(arg: Any, cell: int, coords: Any, k: int):
        point = arg.point_coords[cell, k]
        d2 = squared_distance(arg.elt, cell, coords, point)
        return kernel(d2, arg.point_indices[cell, k], arg.kernel)

    @kc.func
    def node_weight_gradient(arg: Any, cell: int, coords: Any, k: int):
        if kc.static(not has_grad):
            return RefGrad(scalar(0.0))
        else:
            point = arg.point_coords[cell, k]
            d2 = squared_distance(arg.elt, cell, coords, point)
            slope = kernel_grad(d2, arg.point_indices[cell, k], arg.kernel)
            return squared_distance_gradient(arg.elt, cell, coords, point) * slope

    return node_weight, node_weight_gradient


# ---- fields ---------------------------------------------------------------------------------


def _make_eval(kind: str, space: Any, domain: Any) -> FieldEval:
    basis = space.basis
    geo = space.geometry
    scalar = geo.scalar_type
    fields = {"elt": domain.ElementArg, "element_nodes": kc.array2d(dtype=int),
              "node_counts": kc.array(dtype=int),
              "point_coords": kc.array2d(dtype=coords_type(scalar)),
              "point_indices": kc.array2d(dtype=int), "kernel": basis.KernelValues}
    if kind == "discrete":
        fields["dof_values"] = kc.array(dtype=space.dof_dtype)
    Arg = _struct(f"PointFieldArg_{kind}_{_ident(space.name)}_{_ident(domain.name)}", fields)
    weight, weight_gradient = _weight_funcs(basis)
    inv_F = geo.cell_inverse_deformation_gradient

    @kc.func
    def node_count(arg: Any, s: Any):
        if s.element_index < 0:
            return 0
        return arg.node_counts[s.element_index]

    @kc.func
    def world_weight_gradient(arg: Any, s: Any, k: int):
        cell = s.element_index
        return weight_gradient(arg, cell, s.element_coords, k) * inv_F(arg.elt, s)

    make = _discrete_ops if kind == "discrete" else _basis_ops
    ops = make(kind, space, weight, world_weight_gradient, node_count)
    ops.update(_node_ops(kind, space, weight, world_weight_gradient, node_count))
    ops["node_count"] = node_count
    return FieldEval(Arg, ops, scalar, space.algebra.grad_type, space.dtype)


def _basis_ops(kind: str, space: Any, weight: Any, world_weight_gradient: Any,
               node_count: Any) -> dict:
    """value / grad / div of the test or trial basis function of the sample's dof."""
    algebra = space.algebra
    zero, grad_zero, div_zero = algebra.zero, algebra.grad_zero, algebra.div_zero
    unit, basis_grad, basis_div = algebra.unit, algebra.basis_grad, algebra.basis_div
    use_test = kind == "test"

    @kc.func
    def local(arg: Any, s: Any):
        dof = s.trial_dof
        if kc.static(use_test):
            dof = s.test_dof
        k = dof[0]
        if k < 0 or k >= node_count(arg, s):
            k = -1
        return kc.vec2i(k, dof[1])

    @kc.func
    def value(arg: Any, s: Any):
        dof = local(arg, s)
        if dof[0] < 0:
            return zero()
        return weight(arg, s.element_index, s.element_coords, dof[0]) * unit(dof[1])

    @kc.func
    def gradient(arg: Any, s: Any):
        dof = local(arg, s)
        if dof[0] < 0:
            return grad_zero()
        return basis_grad(world_weight_gradient(arg, s, dof[0]), dof[1])

    @kc.func
    def divergence(arg: Any, s: Any):
        dof = local(arg, s)
        if dof[0] < 0:
            return div_zero()
        return basis_div(world_weight_gradient(arg, s, dof[0]), dof[1])

    return _value_ops(value, gradient if algebra.grad_type is not None else None,
                      divergence if algebra.div_type is not None else None)


def _discrete_ops(kind: str, space: Any, weight: Any, world_weight_gradient: Any,
                  node_count: Any) -> dict:
    """value / grad / div of a discrete field: sums over the sample's cell's nodes."""
    algebra = space.algebra
    zero, grad_zero, div_zero = algebra.zero, algebra.grad_zero, algebra.div_zero
    node_grad, node_div, to_value = algebra.node_grad, algebra.node_div, algebra.to_value

    @kc.func
    def value(arg: Any, s: Any):
        total = zero()
        cell = s.element_index
        for k in range(node_count(arg, s)):
            node = arg.element_nodes[cell, k]
            if node >= 0:
                w = weight(arg, cell, s.element_coords, k)
                if kc.static(to_value is None):
                    total += arg.dof_values[node] * w
                else:
                    total += w * to_value(arg.dof_values[node])
        return total

    @kc.func
    def gradient(arg: Any, s: Any):
        total = grad_zero()
        for k in range(node_count(arg, s)):
            node = arg.element_nodes[s.element_index, k]
            if node >= 0:
                total += node_grad(arg.dof_values[node], world_weight_gradient(arg, s, k))
        return total

    @kc.func
    def divergence(arg: Any, s: Any):
        total = div_zero()
        for k in range(node_count(arg, s)):
            node = arg.element_nodes[s.element_index, k]
            if node >= 0:
                total += node_div(arg.dof_values[node], world_weight_gradient(arg, s, k))
        return total

    return _value_ops(value, gradient if node_grad is not None else None,
                      divergence if node_div is not None else None)


def _value_ops(value: Any, gradient: Any, divergence: Any) -> dict:
    # on cells, "outer" operators are the "inner" ones
    return {"inner": value, "outer": value, "grad": gradient, "grad_outer": gradient,
            "div": divergence, "div_outer": divergence}


def _node_ops(kind: str, space: Any, weight: Any, world_weight_gradient: Any,
              node_count: Any) -> dict:
    """`fem.node_index`, `fem.at_node` and the node weights: (f, s) forms for test and
    trial fields (the node of the sample's dof), (f, s, k) forms for discrete fields; a
    node past the cell's count gives `NULL_NODE_INDEX` and zero weights."""
    from kernelc.fem.types import NULL_NODE_INDEX

    scalar = space.geometry.scalar_type
    Grad = vec_type(space.geometry.dimension, scalar)
    make_sample = sample_builder(scalar)

    @kc.func
    def node_index(arg: Any, s: Any, k: int):
        if k < 0 or k >= node_count(arg, s):
            return NULL_NODE_INDEX
        return arg.element_nodes[s.element_index, k]

    @kc.func
    def node_weight(arg: Any, s: Any, k: int):
        if k < 0 or k >= node_count(arg, s):
            return scalar(0.0)
        return weight(arg, s.element_index, s.element_coords, k)

    @kc.func
    def node_weight_gradient(arg: Any, s: Any, k: int):
        if k < 0 or k >= node_count(arg, s):
            return Grad(scalar(0.0))
        return world_weight_gradient(arg, s, k)

    @kc.func
    def node_coords(arg: Any, s: Any, k: int):
        if k < 0 or k >= node_count(arg, s):
            return s.element_coords
        return arg.point_coords[s.element_index, k]

    weights = {"node_inner_weight": node_weight, "node_outer_weight": node_weight,
               "node_inner_weight_gradient": node_weight_gradient,
               "node_outer_weight_gradient": node_weight_gradient}
    if kind == "discrete":
        @kc.func
        def at_node(arg: Any, s: Any, k: int):
            return make_sample(s.element_index, node_coords(arg, s, k), s.qp_index, s.qp_weight,
                               kc.vec2i(-1, -1), kc.vec2i(-1, -1))

        @kc.func
        def node_partition_index(arg: Any, node: int):
            return node

        ops = {f"{name}@node": func for name, func in weights.items()}
        ops.update({"node_index@node": node_index, "at_node@node": at_node,
                    "node_partition_index": node_partition_index})
        return ops
    use_test = kind == "test"

    @kc.func
    def dof_node(s: Any):
        if kc.static(use_test):
            return s.test_dof[0]
        return s.trial_dof[0]

    @kc.func
    def at_dof_node(arg: Any, s: Any):
        return make_sample(s.element_index, node_coords(arg, s, dof_node(s)), s.qp_index,
                           s.qp_weight, s.test_dof, s.trial_dof)

    def with_dof_node(func: Any) -> Any:
        @kc.func
        def at_dof(arg: Any, s: Any):
            return func(arg, s, dof_node(s))

        return at_dof

    ops = {name: with_dof_node(func) for name, func in weights.items()}
    ops.update({"node_index": with_dof_node(node_index), "at_node": at_dof_node})
    return ops


__all__ = ["point_field_eval"]
