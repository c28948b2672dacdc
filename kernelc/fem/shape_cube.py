"""Shape functions on the reference cube: tensor-product Lagrange (Q_k; Warp's
`CubeTripolynomialShapeFunctions`) and serendipity (S_2, S_3; Warp's
`CubeSerendipityShapeFunctions`).

Node orders are Warp's, since global node numbers are built from them:
- Q_k: node n is (i, j, k) on the 1-D node grid with n = (i * (k + 1) + j) * (k + 1) + k,
  the last axis fastest;
- S_k: the 8 vertices ((n // 4) k, (n // 2 % 2) k, (n % 2) k), then edge nodes: node
  8 + 3 e + a lies on an edge along axis a, the (e % 4)-th such edge, at position e // 4
  along it.

Node kinds (`node_types`) are Warp's too: a vertex is numbered 4 x + 2 y + z; an edge along
x is numbered 2 y + z, along y 4 + 2 z + x, along z 8 + 2 x + y (x, y, z being 0 or 1 at
the low or high end); a face normal to axis a is 2 a at the low end, 2 a + 1 at the high
end, its nodes numbered along the two other axes in cyclic order (y z, z x, x y).
"""

from functools import cache
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.polynomial import Polynomial, is_closed
from kernelc.fem.shape import ElementBasis, ShapeFunction
from kernelc.fem.types import vec_type

VERTEX, EDGE, FACE, INTERIOR = 0, 1, 2, 3  # node kinds (Warp's `CubeShapeFunction`)


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

    def node_types(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per node: kind (VERTEX, EDGE, FACE, INTERIOR), which vertex, edge or face of the
        cube (see the module's docstring), and index among that one's nodes."""
        n = self.NODES_PER_ELEMENT
        if not is_closed(self.family):  # every node is interior to its cell
            return np.full(n, INTERIOR), np.zeros(n, dtype=np.int64), np.arange(n)
        return cube_node_types(self.node_lobatto_indices(), self.ORDER)

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


def cube_node_types(ijk: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kind, instance, index) of nodes at positions `ijk` (N, 3) on the 1-D node grid of
    `order`, in Warp's classification (the module's docstring)."""
    i, j, k = ijk.T
    hi = (ijk == order).astype(np.int64)
    ends = (ijk == 0) | (ijk == order)
    m = order - 1
    count = ends.sum(axis=1)
    kind = np.array([INTERIOR, FACE, EDGE, VERTEX])[count]
    ei, ej, _ = ends.T
    hi_i, hi_j, hi_k = hi.T
    edge_instance = np.where(~ei, 2 * hi_j + hi_k, np.where(~ej, 4 + 2 * hi_k + hi_i,
                                                              8 + 2 * hi_i + hi_j))
    edge_index = np.where(~ei, i, np.where(~ej, j, k)) - 1
    face_instance = np.where(ei, hi_i, np.where(ej, 2 + hi_j, 4 + hi_k))
    face_index = np.where(ei, (j - 1) * m + k - 1,
                          np.where(ej, (k - 1) * m + i - 1, (i - 1) * m + j - 1))
    instance = np.select([kind == VERTEX, kind == EDGE, kind == FACE],
                         [4 * hi_i + 2 * hi_j + hi_k, edge_instance, face_instance], 0)
    index = np.select([kind == VERTEX, kind == EDGE, kind == FACE],
                      [0, edge_index, face_index], ((i - 1) * m + j - 1) * m + k - 1)
    return kind, instance, index


def make_cube_shape(degree: int, element_basis: ElementBasis, family: Polynomial,
                    scalar_type: Any) -> ShapeFunction:
    """The Lagrange or serendipity shape functions of `degree` on cubes."""
    if element_basis == ElementBasis.LAGRANGE:
        return CubeTripolynomialShapeFunctions(degree, family, scalar_type)
    if element_basis == ElementBasis.SERENDIPITY:
        from kernelc.fem.shape_cube_serendipity import CubeSerendipityShapeFunctions

        return CubeSerendipityShapeFunctions(degree, family, scalar_type)
    raise NotImplementedError(f"{element_basis.name} shape functions on cubes are not "
                              "supported yet")
