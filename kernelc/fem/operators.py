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
                   "its cell, with no test or trial dof (discrete fields on cells).")
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
                  "`fem.lookup(domain, x)` or `fem.lookup(domain, x, guess)`.")

# ---- either ---------------------------------------------------------------------------------
scalar_type = Operator("scalar_type", "any", "The geometry's scalar type (kc.float32 or "
                       "kc.float64), resolved when the integrand is compiled.")

FIELD_OPERATORS = {op.name: op for op in (inner, outer, grad, grad_outer, jump, average,
                                          grad_jump, grad_average, degree, div, div_outer,
                                          D, curl, node_count, at_node)}
DOMAIN_OPERATORS = {op.name: op for op in (position, normal, measure, measure_ratio,
                                           deformation_gradient, lookup)}
ALL_OPERATORS = {**FIELD_OPERATORS, **DOMAIN_OPERATORS, "scalar_type": scalar_type,
                 "cells": cells}

# Warp operators that kernelc.fem does not provide yet; naming one in an integrand raises a
# KernelError that says so.
NOT_SUPPORTED = ("node_index", "node_inner_weight", "node_outer_weight",
                 "node_inner_weight_gradient", "node_outer_weight_gradient",
                 "node_partition_index", "partition_lookup", "element_closest_point",
                 "element_coordinates", "element_index", "element_partition_index",
                 "environment_index", "to_inner_cell", "to_outer_cell", "to_cell_side")
