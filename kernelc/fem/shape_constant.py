"""Piecewise-constant shape functions (degree 0; Warp's `ConstantShapeFunction`).

One node per element, at the element's centre, whose basis function is 1 everywhere in
the element: its gradient is zero and its weight in nodal quadrature is 1 (on cells and
on sides), as in Warp.
"""

from functools import cache
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.polynomial import Polynomial
from kernelc.fem.shape import ShapeFunction
from kernelc.fem.types import vec_type


class ConstantShapeFunction(ShapeFunction):
    """The single basis function 1 on any element."""

    _kind = "Const"

    def __init__(self, element: Element, scalar_type: Any = kc.float32) -> None:
        super().__init__(0, Polynomial.GAUSS_LEGENDRE, scalar_type)
        self.element = element
        self.NODES_PER_ELEMENT = 1
        self.VERTEX_NODE_COUNT = self.EDGE_NODE_COUNT = 0
        self.INTERIOR_NODE_COUNT = 1
        self.weight, self.weight_gradient = _constant_funcs(element.dimension, scalar_type)

    @property
    def name(self) -> str:
        suffix = "" if self.scalar_type == kc.float32 else "_f64"
        return f"{self.element.name}_{self._kind}{suffix}"

    def node_coords(self) -> np.ndarray:
        out = np.zeros((1, 3), dtype=self.np_scalar)
        out[0] = self.element.center
        return out

    def node_quadrature_weights(self) -> np.ndarray:
        return np.ones(1, dtype=self.np_scalar)

    def trace_node_quadrature_weights(self) -> np.ndarray:
        return np.ones(1, dtype=self.np_scalar)


@cache
def _constant_funcs(dimension: int, scalar: Any) -> tuple[Any, Any]:
    grad_type = vec_type(dimension, scalar)

    @kc.func
    def weight(coords: Any, node: int):
        return scalar(1.0)

    @kc.func
    def weight_gradient(coords: Any, node: int):
        return grad_type(scalar(0.0))

    return weight, weight_gradient
