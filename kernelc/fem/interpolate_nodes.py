"""Where the nodes of a space lie in their elements, and their dual weights, for the
kernels that interpolate at nodes (`interpolate.py`, `interpolate_jacobian.py`).

A node's value is stored as `value * dual`, the dual weight being 1 / (the node's basis
function at the node), as Warp stores it. Shape-function bases read their nodes'
coordinates from one table shared by all cells; a point basis (`space_point.py`) has nodes
of its own in each cell: its table is the basis' field struct (point coordinates and
indices per (cell, node), kernel values), and its dual weight is 1 / the radial kernel at
distance zero.
"""

from dataclasses import dataclass
from typing import Any

import kernelc as kc
from kernelc.fem.integrate_kernels import node_coords_func


@dataclass
class NodeTable:
    """`coords(elt_arg, element, local, table)`: the coordinates of an element's local
    node (OUTSIDE off a side); `dual(table, element, local, coords)`: its dual weight;
    `Table`: the type of `table` (an array, or the point basis' struct); `value(device)`:
    the table to launch with."""

    coords: Any
    dual: Any
    Table: Any
    value: Any


def node_table(space: Any, domain: Any) -> NodeTable:
    """The node coordinates and dual weights of `space`'s nodes seen from `domain`."""
    if hasattr(space, "nodal_tables"):
        return _point_table(space, domain)
    shape = space.shape
    scalar = domain.geometry.scalar_type
    nodes_per_cell = shape.NODES_PER_ELEMENT
    weight = getattr(shape, "weight", None)  # vector bases have dofs of their own
    # shapes whose node values are their dofs (non-conforming ones) say so, as in Warp
    unit_dual = getattr(shape, "UNIT_DUAL_WEIGHT", False)

    @kc.func
    def shape_dual(table: Any, element: int, local: int, coords: Any):
        if kc.static(unit_dual):
            return scalar(1.0)
        else:
            # on a side, entries past the inner cell's nodes are the outer cell's
            local_in_cell = local % nodes_per_cell
            return scalar(1.0) / weight(table[local_in_cell], local_in_cell)

    def value(device: Any) -> Any:
        return kc.array(shape.node_coords(), dtype=domain.geometry.coords_type, device=device)

    return NodeTable(node_coords_func(domain, nodes_per_cell), shape_dual,
                     kc.array(dtype=domain.geometry.coords_type), value)


def _point_table(space: Any, domain: Any) -> NodeTable:
    from kernelc.fem.field_nodes import device_element_nodes
    from kernelc.fem.space_point_eval import _weight_funcs, point_field_eval

    Arg = point_field_eval("test", space, domain).Arg
    node_weight = _weight_funcs(space.basis)[0]
    scalar = domain.geometry.scalar_type

    @kc.func
    def point_coords(elt_arg: Any, element: int, local: int, table: Any):
        return table.point_coords[element, local]

    @kc.func
    def point_dual(table: Any, element: int, local: int, coords: Any):
        return scalar(1.0) / node_weight(table, element, coords, local)

    def value(device: Any) -> Any:
        arg = Arg()
        arg.elt = domain.element_arg_value(device)
        arg.element_nodes = device_element_nodes(space.topology, device)
        space.fill_field_arg(arg, device)
        return arg

    return NodeTable(point_coords, point_dual, Arg, value)


__all__ = ["NodeTable", "node_table"]
