"""Tensor-product Lagrange shape functions on the reference cube (Q_k; Warp's
`CubeTripolynomialShapeFunctions`). Node n is (i, j, k) on the 1-D node grid with
n = (i * (k + 1) + j) * (k + 1) + k, the last axis fastest."""

from functools import cache
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.polynomial import Polynomial, is_closed
from kernelc.fem.shape import ElementBasis, ShapeFunction
from kernelc.fem.types import vec_type


class CubeTripolynomialShapeFunctions(ShapeFunction):
    """Q_k on hexahedra: products of three 1-D Lagrange polynomials."""

    element = Element.CUBE
    _kind = "Cube_Q"
    TENSOR_LAGRANGE = True

    def __init__(self, degree: int, family: Polynomial, scalar_type: Any = kc.float32) -> None:
        super().__init__(degree, family, scalar_type)
        self.NODES_PER_ELEMENT = (degree + 1) ** 3
        closed = is_closed(family)
        self.VERTEX_NODE_COUNT = 1 if closed else 0
        self.EDGE_NODE_COUNT = max(0, degree - 1) if closed else 0
        self.FACE_NODE_COUNT = max(0, degree - 1) ** 2 if closed else 0
        self.INTERIOR_NODE_COUNT = max(0, degree - 1) ** 3 if closed else self.NODES_PER_ELEMENT
        self.weight, self.weight_gradient = _tripolynomial_funcs(
            degree, tuple(self.lobatto_coords), tuple(self.lagrange_scales), scalar_type)

    def node_lobatto_indices(self) -> np.ndarray:
        n = np.arange(self.NODES_PER_ELEMENT)
        m = self.ORDER + 1
        return np.stack([n // (m * m), (n // m) % m, n % m], axis=1)

    def node_coords(self) -> np.ndarray:
        ijk = self.node_lobatto_indices()
        x = self.lobatto_coords.astype(self.np_scalar)
        return x[ijk].astype(self.np_scalar)

    def node_quadrature_weights(self) -> np.ndarray:
        ijk = self.node_lobatto_indices()
        w = self.lobatto_weights.astype(self.np_scalar)
        return w[ijk[:, 0]] * w[ijk[:, 1]] * w[ijk[:, 2]]

    def trace_node_quadrature_weights(self) -> np.ndarray:
        # Warp's rule: the product of the weights along the two axes other than the first
        # one (in x, y, z order) at which the node is on the cube's boundary.
        ijk = self.node_lobatto_indices()
        w = self.lobatto_weights.astype(self.np_scalar)
        ends = (ijk == 0) | (ijk == self.ORDER)
        wi, wj, wk = w[ijk[:, 0]], w[ijk[:, 1]], w[ijk[:, 2]]
        return np.where(ends[:, 0], wj * wk, np.where(ends[:, 1], wi * wk, wi * wj))


@cache
def _tripolynomial_funcs(order: int, coords: tuple, scales: tuple, scalar: Any):
    n = order + 1
    NodeVec = vec_type(n, scalar)
    X = NodeVec(*[float(c) for c in coords])
    S = NodeVec(*[float(c) for c in scales])
    vec3 = vec_type(3, scalar)

    @kc.func
    def lagrange_1d(x: scalar, node: int):
        value = scalar(1.0)
        slope = scalar(0.0)
        for k in range(n):
            if k != node:
                slope = slope * (x - X[k]) + value
                value = value * (x - X[k])
        return value, slope

    @kc.func
    def weight(coords: Any, node: int):
        i = node // (n * n)
        j = (node - n * n * i) // n
        k = node - n * n * i - n * j
        vx, dx = lagrange_1d(coords[0], i)
        vy, dy = lagrange_1d(coords[1], j)
        vz, dz = lagrange_1d(coords[2], k)
        return (S[i] * S[j] * S[k]) * (vx * vy * vz)

    @kc.func
    def weight_gradient(coords: Any, node: int):
        i = node // (n * n)
        j = (node - n * n * i) // n
        k = node - n * n * i - n * j
        vx, dx = lagrange_1d(coords[0], i)
        vy, dy = lagrange_1d(coords[1], j)
        vz, dz = lagrange_1d(coords[2], k)
        return (S[i] * S[j] * S[k]) * vec3(dx * vy * vz, vx * dy * vz, vx * vy * dz)

    return weight, weight_gradient


def make_cube_shape(degree: int, element_basis: ElementBasis, family: Polynomial,
                    scalar_type: Any) -> ShapeFunction:
    """The Lagrange shape functions of `degree` on cubes (others are not supported yet)."""
    if element_basis != ElementBasis.LAGRANGE:
        raise NotImplementedError(f"{element_basis.name} shape functions on cubes are not "
                                  "supported yet")
    return CubeTripolynomialShapeFunctions(degree, family, scalar_type)
