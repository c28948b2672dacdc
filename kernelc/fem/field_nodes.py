"""The node operators of fields: `fem.node_index`, `fem.node_inner_weight`,
`fem.node_outer_weight` (and their `_gradient`s), `fem.at_node`, `fem.node_partition_index`,
and `inner` / `outer` / `grad` / `grad_outer` / `div` / `div_outer` of a single node.

The node is an index in the sample's element: in [0, N) on cells (N nodes per cell) and in
[0, 2N) on sides, where the trace sees the inner cell's nodes, then the outer cell's. Test
and trial fields take the node of the sample's test or trial dof (`fem.node_index(v, s)`),
discrete fields an explicit one (`fem.node_index(u, s, k)`), as Warp has them. An "inner"
weight is that of the inner cell's node (zero for the outer cell's nodes on a side), an
"outer" one that of the outer cell's; on cells both are the node's basis function. A node
index outside the element gives weight 0 and node `NULL_NODE_INDEX` (Warp reads outside
its tables there).

The funcs are registered in `FieldEval.ops` under the operator's name for the (f, s)
form and under `"<name>@node"` for the (f, s, k) form (`field_op_key`).
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.types import (
    NULL_NODE_INDEX,
    ElementKind,
    make_free_sample,
    sample_builder,
    vec_type,
)

# Operators whose discrete-field form takes a node index after the sample.
NODE_ARG_OPS = frozenset({"inner", "outer", "grad", "grad_outer", "div", "div_outer",
                          "at_node", "node_index", "node_inner_weight", "node_outer_weight",
                          "node_inner_weight_gradient", "node_outer_weight_gradient"})
# Those whose test / trial form takes none (the dof's node is used).
_DOF_NODE_OPS = ("at_node", "node_index", "node_inner_weight", "node_outer_weight",
                 "node_inner_weight_gradient", "node_outer_weight_gradient")


def field_op_key(name: str, arg_count: int) -> str:
    """The key in `FieldEval.ops` of operator `name` called with `arg_count` arguments."""
    if name in NODE_ARG_OPS and arg_count == 3:
        return f"{name}@node"
    return name


def why_not(evaluator: Any, name: str, arg_count: int) -> str:
    """Why `fem.<name>` with `arg_count` arguments has no func for this field."""
    if name in NODE_ARG_OPS:
        other = f"{name}@node" if arg_count == 2 else name
        if evaluator.op(other) is not None:
            if arg_count == 2:
                return (f"fem.{name}(f, s, node_index_in_elt) takes 3 arguments, got 2 (a "
                        "discrete field needs the node)")
            return (f"test and trial fields take no node index (the node of the sample's dof "
                    f"is used): fem.{name}(f, s)")
        if name in _DOF_NODE_OPS or arg_count == 3:
            return (f"fem.{name} is only available for test, trial and discrete fields of "
                    "function spaces" + (" (with a node index: discrete fields)"
                                         if arg_count == 3 else ""))
    return evaluator.why_not(name)


def field_node_ops(kind: str, space: Any, domain: Any) -> dict:
    """The node operator funcs of a field of `kind` ("test", "trial" or "discrete") of
    `space` on `domain`; the field's argument struct has `elt` and `element_nodes`."""
    nodes = _NodeFuncs(space, domain)
    if kind == "discrete":
        return {**nodes.discrete_ops(), "node_partition_index": _node_partition_index}
    return nodes.dof_ops(kind == "test")


def device_element_nodes(topology: Any, device: Any) -> Any:
    """The (cells, nodes per cell) node table of `topology` as a `kc.array` on `device`,
    uploaded once per topology and device (test and trial fields read it for
    `fem.node_index`)."""
    arrays = topology.__dict__.setdefault("_device_element_nodes", {})
    key = str(kc.get_device(device))
    if key not in arrays:
        arrays[key] = kc.array(topology.host_element_nodes(), dtype=kc.int32, device=device)
    return arrays[key]


@kc.func
def _node_partition_index(arg: Any, node_index: int):
    # Discrete fields are defined on all the nodes of their space (kernelc has no discrete
    # fields on partial space partitions yet): a node is its own partition index.
    return node_index


class _NodeFuncs:
    """The per-node funcs of one space on one domain kind, (arg, s, node) -> value."""

    def __init__(self, space: Any, domain: Any) -> None:
        shape = space.shape
        geo = space.geometry
        self.space, self.geo, self.shape = space, geo, shape
        self.scalar = geo.scalar_type
        self.N = shape.NODES_PER_ELEMENT
        self.side = domain.element_kind == ElementKind.SIDE
        self.algebra = space.algebra
        self.make_sample = sample_builder(self.scalar)
        self._build()

    def _build(self) -> None:
        scalar, N, side, geo = self.scalar, self.N, self.side, self.geo
        weight, weight_gradient = self.shape.weight, self.shape.weight_gradient
        world_grad = vec_type(geo.dimension, scalar)
        coords = self.shape.node_coords().astype(np.float64)
        table = kc.types.matrix(shape=coords.shape, dtype=scalar)(*coords.reshape(-1))
        count = 2 * N if side else N
        # Degree 0: its single node is seen at the centre of every side (Warp's
        # piecewise-constant trace), not at the cell's centre, which is on no side.
        constant = self.shape.ORDER == 0
        center = geo.coords_type(*(geo.reference_side().center if side else (0.0, 0.0, 0.0)))
        inner_cell = outer_cell = from_cell = None
        if side:
            inner_cell, outer_cell = geo.side_inner_cell_index, geo.side_outer_cell_index
            from_cell = geo.side_from_cell_coords
        self.moved = {False: _moved(geo, side, False), True: _moved(geo, side, True)}
        self.inverse_gradient = {False: _inverse_gradient(geo, side, False),
                                 True: _inverse_gradient(geo, side, True)}

        @kc.func
        def node_index(arg: Any, s: Any, node: int):
            if node < 0 or node >= count:
                return NULL_NODE_INDEX
            if kc.static(side):
                if node < N:
                    return arg.element_nodes[inner_cell(arg.elt, s.element_index), node]
                return arg.element_nodes[outer_cell(arg.elt, s.element_index), node - N]
            return arg.element_nodes[s.element_index, node]

        def weights(outer: bool) -> tuple:
            low, high = (N, 2 * N) if (side and outer) else (0, N)
            moved, inv_F = self.moved[outer], self.inverse_gradient[outer]

            @kc.func
            def node_weight(arg: Any, s: Any, node: int):
                if node < low or node >= high:
                    return scalar(0.0)
                return weight(moved(arg.elt, s).element_coords, node - low)

            @kc.func
            def node_weight_gradient(arg: Any, s: Any, node: int):
                if node < low or node >= high:
                    return world_grad(scalar(0.0))
                cs = moved(arg.elt, s)
                return weight_gradient(cs.element_coords, node - low) * inv_F(arg.elt, cs)

            return node_weight, node_weight_gradient

        @kc.func
        def node_coords(arg: Any, s: Any, node: int):
            if kc.static(constant and side):
                return center
            if kc.static(side):
                if node < N:
                    return from_cell(arg.elt, s.element_index,
                                     inner_cell(arg.elt, s.element_index), table[node])
                return from_cell(arg.elt, s.element_index, outer_cell(arg.elt, s.element_index),
                                 table[node - N])
            return table[node]

        self.node_index, self.node_coords = node_index, node_coords
        self.inner_weight, self.inner_weight_gradient = weights(False)
        self.outer_weight, self.outer_weight_gradient = weights(True)

    def dof_ops(self, test: bool) -> dict:
        """(f, s) forms for test and trial fields: the node of the sample's dof."""
        make_sample = self.make_sample
        node_index, node_coords = self.node_index, self.node_coords

        @kc.func
        def dof_node(s: Any):
            if kc.static(test):
                return s.test_dof[0]
            return s.trial_dof[0]

        @kc.func
        def at_node(arg: Any, s: Any):
            # the sample moved to its dof's node, keeping its dofs (Warp's rule)
            return make_sample(s.element_index, node_coords(arg, s, dof_node(s)), s.qp_index,
                               s.qp_weight, s.test_dof, s.trial_dof)

        ops = {"at_node": at_node, "node_index": _with_dof_node(node_index, dof_node)}
        for name, func in self._weight_funcs().items():
            ops[name] = _with_dof_node(func, dof_node)
        return ops

    def _weight_funcs(self) -> dict:
        return {"node_inner_weight": self.inner_weight,
                "node_outer_weight": self.outer_weight,
                "node_inner_weight_gradient": self.inner_weight_gradient,
                "node_outer_weight_gradient": self.outer_weight_gradient}

    def discrete_ops(self) -> dict:
        """(f, s, node) forms for discrete fields."""
        make_sample = self.make_sample
        node_coords = self.node_coords

        @kc.func
        def at_node(arg: Any, s: Any, node: int):
            # test and trial functions are not defined at another field's nodes
            return make_sample(s.element_index, node_coords(arg, s, node), s.qp_index,
                               s.qp_weight, kc.vec2i(-1, -1), kc.vec2i(-1, -1))

        ops = {"at_node@node": at_node, "node_index@node": self.node_index}
        ops.update({f"{name}@node": func for name, func in self._weight_funcs().items()})
        ops.update(self._single_node_values())
        return ops

    def _single_node_values(self) -> dict:
        """inner / outer values, gradients and divergences of one node's term."""
        algebra, N, side = self.algebra, self.N, self.side
        weight, weight_gradient = self.shape.weight, self.shape.weight_gradient
        zero, grad_zero, div_zero = algebra.zero, algebra.grad_zero, algebra.div_zero
        node_grad, node_div = algebra.node_grad, algebra.node_div
        to_value = getattr(algebra, "to_value", None)  # None: nodes store values

        def forms(outer: bool) -> dict:
            low, high = (N, 2 * N) if (side and outer) else (0, N)
            moved, inv_F = self.moved[outer], self.inverse_gradient[outer]

            @kc.func
            def node_value(arg: Any, cs: Any, local: int):
                return arg.dof_values[arg.element_nodes[cs.element_index, local]]

            @kc.func
            def value(arg: Any, s: Any, node: int):
                if node < low or node >= high:
                    return zero()
                cs = moved(arg.elt, s)
                w = weight(cs.element_coords, node - low)
                if kc.static(to_value is None):
                    return node_value(arg, cs, node - low) * w
                else:  # a dof mapper's dofs, turned into a value as the field's sum does
                    return w * to_value(node_value(arg, cs, node - low))

            @kc.func
            def world_weight_gradient(arg: Any, cs: Any, local: int):
                return weight_gradient(cs.element_coords, local) * inv_F(arg.elt, cs)

            @kc.func
            def gradient(arg: Any, s: Any, node: int):
                if node < low or node >= high:
                    return grad_zero()
                cs = moved(arg.elt, s)
                return node_grad(node_value(arg, cs, node - low),
                                 world_weight_gradient(arg, cs, node - low))

            @kc.func
            def divergence(arg: Any, s: Any, node: int):
                if node < low or node >= high:
                    return div_zero()
                cs = moved(arg.elt, s)
                return node_div(node_value(arg, cs, node - low),
                                world_weight_gradient(arg, cs, node - low))

            return {"value": value, "grad": gradient if node_grad is not None else None,
                    "div": divergence if node_div is not None else None}

        inner, outer = forms(False), forms(True)
        return {"inner@node": inner["value"], "outer@node": outer["value"],
                "grad@node": inner["grad"], "grad_outer@node": outer["grad"],
                "div@node": inner["div"], "div_outer@node": outer["div"]}


def _moved(geo: Any, side: bool, outer: bool) -> Any:
    """(element arg, s) -> the sample in the cell whose nodes are evaluated: itself on
    cells, moved to the side's inner (outer) cell on sides."""
    if not side:
        @kc.func
        def on_cell(arg: Any, s: Any):
            return s

        return on_cell
    cell_of = geo.side_outer_cell_index if outer else geo.side_inner_cell_index
    coords_of = geo.side_outer_cell_coords if outer else geo.side_inner_cell_coords

    @kc.func
    def to_cell(arg: Any, s: Any):
        return make_free_sample(cell_of(arg, s.element_index),
                                coords_of(arg, s.element_index, s.element_coords))

    return to_cell


def _inverse_gradient(geo: Any, side: bool, outer: bool) -> Any:
    """(element arg, cell sample) -> the cell's inverse deformation gradient."""
    if not side:
        return geo.cell_inverse_deformation_gradient
    if outer:
        return geo.side_outer_inverse_deformation_gradient
    return geo.side_inner_inverse_deformation_gradient


def _with_dof_node(func: Any, dof_node: Any) -> Any:
    @kc.func
    def at_dof_node(arg: Any, s: Any):
        return func(arg, s, dof_node(s))

    return at_dof_node


__all__ = ["NODE_ARG_OPS", "device_element_nodes", "field_node_ops", "field_op_key", "why_not"]
