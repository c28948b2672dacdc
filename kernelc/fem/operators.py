"""The operators integrands apply to fields and domains: `fem.grad(u, s)`, `fem.normal(domain,
s)`, `fem.scalar_type(u)`, ... (Warp's `warp.fem.operator`).

An operator is a marker object: integrands are rewritten before compilation so that each
operator call becomes a call of the func that implements it for the concrete field or
domain (see `integrand.py`). Calling one on the host raises.
"""

from typing import Any


class Operator:
    """An operator usable in `@fem.integrand` functions.

    Args:
        name: Warp's name of the operator.
        target: "field", "domain" or "any" (first argument's kind).
        doc: What it computes.
    """

    def __init__(self, name: str, target: str, doc: str) -> None:
        self.name = name
        self.target = target
        self.__name__ = name
        self.__doc__ = doc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"fem.{self.name} can only be used inside @fem.integrand functions")

    def __repr__(self) -> str:
        return f"<kernelc.fem operator {self.name}>"


# ---- field operators: implemented by the field's generated funcs (field_eval.py) ----------
inner = Operator("inner", "field", "Value of the field at the sample; on sides, in the inner cell.")
outer = Operator("outer", "field", "Value of the field at the sample; on sides, in the outer cell.")
grad = Operator("grad", "field", "Gradient of the field at the sample (inner cell on sides).")
grad_outer = Operator("grad_outer", "field", "Gradient of the field in the outer cell.")
jump = Operator("jump", "field", "inner(f, s) - outer(f, s); zero inside cells and on the "
                "boundary for discrete fields.")
average = Operator("average", "field", "(inner(f, s) + outer(f, s)) / 2.")
grad_jump = Operator("grad_jump", "field", "grad(f, s) - grad_outer(f, s).")
grad_average = Operator("grad_average", "field", "(grad(f, s) + grad_outer(f, s)) / 2.")
degree = Operator("degree", "field", "Polynomial degree of the field (a compile-time int).")
div = Operator("div", "field", "Divergence of a vector field (a scalar) or of a matrix field "
               "(a vector, summed over the first index), inner cell on sides.")
div_outer = Operator("div_outer", "field", "Divergence of the field in the outer cell.")
D = Operator("D", "field", "Symmetric part of the gradient of a vector field.")
curl = Operator("curl", "field", "Skew part of the gradient of a 2-d vector field (a scalar) "
                "or a 3-d one (a vector), as Warp defines it (half the usual curl).")

node_count = Operator("node_count", "field", "Number of nodes of the field in the sample's "
                      "element (on sides, of both neighbouring cells).")
at_node = Operator("at_node", "field", "`fem.at_node(f, s, k)`: the sample moved to node k of "
                   "its element, with no test or trial dof (discrete fields); "
                   "`fem.at_node(f, s)`: moved to the node of its test or trial dof, "
                   "keeping its dofs (test and trial fields).")
node_index = Operator("node_index", "field", "The space node of a node of the sample's element: "
                      "`fem.node_index(u, s, k)` (discrete fields), `fem.node_index(v, s)` "
                      "(the node of the test or trial dof).")
node_inner_weight = Operator("node_inner_weight", "field", "The basis function of a node of "
                             "the inner cell at the sample (zero for outer nodes on sides).")
node_outer_weight = Operator("node_outer_weight", "field", "The basis function of a node of "
                             "the outer cell at the sample (zero for inner nodes on sides).")
node_inner_weight_gradient = Operator("node_inner_weight_gradient", "field", "World gradient "
                                      "of `node_inner_weight`.")
node_outer_weight_gradient = Operator("node_outer_weight_gradient", "field", "World gradient "
                                      "of `node_outer_weight`.")
node_partition_index = Operator("node_partition_index", "field", "`fem.node_partition_index(u, "
                                "n)`: the index of space node n in a discrete field's space "
                                "partition.")
cells = Operator("cells", "any", "`cells = fem.cells(domain)`: the cells of a side domain; "
                 "`fc = fem.cells(f)`: the cell field of a traced discrete field.")

# ---- domain operators: implemented by the domain's element funcs (domain.py) ----------------
position = Operator("position", "domain", "World position of the sample.")
normal = Operator("normal", "domain", "Unit outward normal at the sample (zero in cells).")
measure = Operator("measure", "domain", "Measure (area, length, volume) scale of the element "
                   "at the sample.")
measure_ratio = Operator("measure_ratio", "domain", "Ratio of the side's measure to its "
                         "neighbouring cells' (1 in cells).")
deformation_gradient = Operator("deformation_gradient", "domain", "Gradient of the world "
                                "position with respect to element coordinates.")
lookup = Operator("lookup", "domain", "The sample of the cell containing a world position "
                  "(the closest cell's closest point outside the geometry); "
                  "`fem.lookup(domain, x[, max_dist | guess])`, with filters, and with an "
                  "env_index last on geometries of several environments.")

to_inner_cell = Operator("to_inner_cell", "domain", "The side sample moved to the side's "
                        "inner cell (a sample with no quadrature point or dof).")
to_outer_cell = Operator("to_outer_cell", "domain", "The side sample moved to the side's "
                        "outer cell.")
to_cell_side = Operator("to_cell_side", "domain", "`fem.to_cell_side(domain, cell_s, side)`: "
                        "a cell sample moved to one of the cell's sides (coordinates OUTSIDE "
                        "if the point is not on it).")
element_coordinates = Operator("element_coordinates", "domain", "`fem.element_coordinates("
                               "domain, element, x)`: the element coordinates of world "
                               "position x (possibly outside the element).")
element_closest_point = Operator("element_closest_point", "domain", "`coords, dist_sq = "
                                 "fem.element_closest_point(domain, element, x)`: the closest "
                                 "point of the element to x and its squared distance.")
environment_index = Operator("environment_index", "domain", "The environment of the sample's "
                             "element (0 on geometries of one environment).")
element_index = Operator("element_index", "domain", "`fem.element_index(domain, i)`: the "
                         "geometry index of the domain's i-th element.")
element_partition_index = Operator("element_partition_index", "domain", "`fem."
                                   "element_partition_index(domain, cell)`: the cell's index in "
                                   "the domain's geometry partition, or NULL_ELEMENT_INDEX "
                                   "(domains of cells).")
partition_lookup = Operator("partition_lookup", "domain", "`fem.partition_lookup(domain, x[, "
                            "max_dist])`: as `fem.lookup`, among the cells of the domain's "
                            "geometry partition.")

# ---- either ---------------------------------------------------------------------------------
scalar_type = Operator("scalar_type", "any", "The geometry's scalar type (kc.float32 or "
                       "kc.float64), resolved when the integrand is compiled.")

FIELD_OPERATORS = {op.name: op for op in (inner, outer, grad, grad_outer, jump, average,
                                          grad_jump, grad_average, degree, div, div_outer,
                                          D, curl, node_count, at_node, node_index,
                                          node_inner_weight, node_outer_weight,
                                          node_inner_weight_gradient,
                                          node_outer_weight_gradient, node_partition_index)}
DOMAIN_OPERATORS = {op.name: op for op in (position, normal, measure, measure_ratio,
                                           deformation_gradient, lookup, to_inner_cell,
                                           to_outer_cell, to_cell_side, element_coordinates,
                                           element_closest_point, environment_index,
                                           element_index, element_partition_index,
                                           partition_lookup)}
ALL_OPERATORS = {**FIELD_OPERATORS, **DOMAIN_OPERATORS, "scalar_type": scalar_type,
                 "cells": cells}

# Warp operators that kernelc.fem does not provide yet; naming one in an integrand raises a
# KernelError that says so.
NOT_SUPPORTED: tuple[str, ...] = ()

# The argument counts of operators called otherwise than (field or domain, sample), and
# the forms errors show.
NODE_FORM = ((2, 3), "(f, s[, node_index_in_elt])")
CALL_FORMS = {**{name: NODE_FORM for name in (
    "inner", "outer", "grad", "grad_outer", "div", "div_outer", "at_node", "node_index",
    "node_inner_weight", "node_outer_weight", "node_inner_weight_gradient",
    "node_outer_weight_gradient")},
    "node_partition_index": ((2,), "(f, node_index)"),
    "to_cell_side": ((3,), "(domain, cell_sample, side_index)"),
    "element_coordinates": ((3,), "(domain, element_index, x)"),
    "element_closest_point": ((3,), "(domain, element_index, x)"),
    "element_index": ((2,), "(domain, domain_element_index)"),
    "element_partition_index": ((2,), "(domain, cell_index)"),
    "partition_lookup": ((2, 3), "(domain, x[, max_dist])")}
