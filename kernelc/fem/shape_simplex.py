"""Lagrange shape functions on triangles and tetrahedra (P_k; Warp's
`TrianglePolynomialShapeFunctions` / `TetrahedronPolynomialShapeFunctions`).

A node of P_k is a barycentric multi-index (i_0, ..., i_n) summing to k, at barycentric
coordinates i / k, and its basis function the usual product of linear factors in the
barycentric coordinates that is 1 at the node and 0 at the others. Gradients are taken with respect to the reference coordinates (l1, l2[, l3]), l0 being
1 minus the others. Node orders are Warp's (vertices, then edge nodes edge by edge, then
face and interior nodes):
- triangles: edge e joins vertices e and e + 1 (mod 3), its nodes listed from vertex e;
- tetrahedra: edges (0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3).
"""

from functools import cache
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.polynomial import Polynomial
from kernelc.fem.shape import ShapeFunction
from kernelc.fem.types import vec_type

VERTEX, EDGE, FACE, INTERIOR = 0, 1, 2, 3  # node kinds

TRIANGLE_EDGES = [(0, 1), (1, 2), (2, 0)]
TET_EDGES = [(0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3)]


def _triangle_nodes(k: int) -> list[tuple[int, int, int]]:
    """Barycentric multi-indices of the P_k triangle nodes, in Warp's order."""
    nodes = [(k, 0, 0), (0, k, 0), (0, 0, k)]
    for a, b in TRIANGLE_EDGES:
        for j in range(1, k):
            index = [0, 0, 0]
            index[a], index[b] = k - j, j
            nodes.append(tuple(index))
    if k == 3:
        nodes.append((1, 1, 1))
    elif k > 3:
        raise NotImplementedError("triangle shape functions of degree above 3 are not "
                                  "supported yet")
    return nodes


def _tet_nodes(k: int) -> list[tuple[int, int, int, int]]:
    """Barycentric multi-indices of the P_k tetrahedron nodes, in Warp's order."""
    if k > 2:
        raise NotImplementedError("tetrahedron shape functions of degree above 2 are not "
                                  "supported yet")
    nodes = [tuple(k if v == w else 0 for v in range(4)) for w in range(4)]
    if k == 2:
        for a, b in TET_EDGES:
            nodes.append(tuple(1 if v in (a, b) else 0 for v in range(4)))
    return nodes


# Nodal quadrature weights (Warp's): per node kind, of the cell's nodes and of a side's.
_TRIANGLE_NODE_WEIGHTS = {2: (0.022335964126, 0.310997369207, 0.0),
                          3: (1.0 / 30.0, 0.075, 0.45)}
_SEGMENT_NODE_WEIGHTS = {2: (1.0 / 6.0, 2.0 / 3.0), 3: (1.0 / 8.0, 3.0 / 8.0)}


class SimplexPolynomialShapeFunctions(ShapeFunction):
    """P_k on triangles (degree 1 to 3) or tetrahedra (degree 1 and 2)."""

    def __init__(self, element: Element, degree: int, scalar_type: Any = kc.float32) -> None:
        self.element = element
        self.ORDER = degree
        self.family = Polynomial.EQUISPACED_CLOSED
        self.scalar_type = scalar_type
        triangle = element == Element.TRIANGLE
        self._nodes = np.array(_triangle_nodes(degree) if triangle else _tet_nodes(degree))
        self._kind = "Tri_P" if triangle else "Tet_P"
        self.NODES_PER_ELEMENT = len(self._nodes)
        self.NODES_PER_SIDE = (degree + 1) * (degree + 2) // 2 if not triangle else degree + 1
        self.VERTEX_NODE_COUNT = 1
        self.EDGE_NODE_COUNT = degree - 1
        self.FACE_NODE_COUNT = 0 if triangle else max(0, (degree - 1) * (degree - 2) // 2)
        self.INTERIOR_NODE_COUNT = max(0, (degree - 1) * (degree - 2) // 2) if triangle else 0
        self.weight, self.weight_gradient = _simplex_funcs(self._nodes.shape[1], degree,
                                                           scalar_type)

    def node_kinds(self) -> np.ndarray:
        """Per node: VERTEX, EDGE, FACE or INTERIOR (from how many barycentric indices are
        not 0: a triangle's face is its interior)."""
        nonzero = (self._nodes > 0).sum(axis=1)
        kinds = [VERTEX, EDGE, INTERIOR] if self.element == Element.TRIANGLE else [
            VERTEX, EDGE, FACE, INTERIOR]
        return np.array(kinds)[nonzero - 1]

    def node_coords(self) -> np.ndarray:
        bary = self._nodes.astype(np.float64) / self.ORDER
        coords = bary if self.element == Element.TRIANGLE else bary[:, 1:]
        return coords.astype(self.np_scalar)

    def node_quadrature_weights(self) -> np.ndarray:
        n = self.NODES_PER_ELEMENT
        if self.element == Element.TRIANGLE and self.ORDER in _TRIANGLE_NODE_WEIGHTS:
            table = np.array(_TRIANGLE_NODE_WEIGHTS[self.ORDER])
            return table[np.minimum(self.node_kinds(), 2)].astype(self.np_scalar)
        return np.full(n, 1.0 / n, dtype=self.np_scalar)

    def trace_node_quadrature_weights(self) -> np.ndarray:
        kinds = self.node_kinds()
        if self.element == Element.TRIANGLE:
            if self.ORDER in _SEGMENT_NODE_WEIGHTS:
                vertex, edge = _SEGMENT_NODE_WEIGHTS[self.ORDER]
                return np.where(kinds == VERTEX, vertex, edge).astype(self.np_scalar)
        elif self.ORDER in _TRIANGLE_NODE_WEIGHTS:  # a tetrahedron's faces are triangles
            table = np.array(_TRIANGLE_NODE_WEIGHTS[self.ORDER])
            return table[np.minimum(kinds, 2)].astype(self.np_scalar)
        return np.full(len(kinds), 1.0 / self.NODES_PER_SIDE, dtype=self.np_scalar)


@cache
def _simplex_funcs(vertices: int, order: int, scalar: Any) -> tuple[Any, Any]:
    """(weight, reference gradient) funcs of P_`order` on a simplex of `vertices` vertices.

    Each kind of node has its closed form, written with Warp's operation order so that
    sums which cancel exactly in Warp (entries of stiffness matrices on symmetric cells)
    cancel here too, and matrices keep Warp's sparsity.
    """
    Bary = vec_type(vertices, scalar)
    Grad = vec_type(vertices - 1, scalar)
    triangle = vertices == 3
    edges = TRIANGLE_EDGES if triangle else TET_EDGES
    Edges = kc.types.matrix(shape=(len(edges), 2), dtype=kc.int32)
    edge_table = Edges(*[v for edge in edges for v in edge])
    first_edge, first_interior = vertices, vertices + len(edges) * (order - 1)
    one, two, three = scalar(1.0), scalar(2.0), scalar(3.0)

    @kc.func
    def barycentric(coords: Any):
        if kc.static(triangle):  # (with an else, the other branch is not compiled)
            return Bary(coords[0], coords[1], coords[2])
        else:
            return Bary(one - coords[0] - coords[1] - coords[2], coords[0], coords[1],
                        coords[2])

    @kc.func
    def edge_ends(node: int):
        # the barycentric indices of a P2 or P3 edge node's edge, nearest vertex first
        along = (node - first_edge) % (order - 1)
        edge = (node - first_edge) // (order - 1)
        a = edge_table[edge, 0]
        b = edge_table[edge, 1]
        if along == 1:
            return b, a
        return a, b

    @kc.func
    def value_and_slopes(lam: Any, node: int):
        # the node's basis function and its derivatives in each barycentric coordinate
        d = Bary()
        if kc.static(order == 1):
            d[node] = one
            return lam[node], d
        else:
            if node < first_edge:
                c = lam[node]
                if kc.static(order == 2):
                    d[node] = scalar(4.0) * c - one
                    return c * (two * c - one), d
                else:
                    d[node] = scalar(0.5) * scalar(27.0) * c * c - scalar(9.0) * c + one
                    return scalar(0.5) * c * (three * c - one) * (three * c - two), d
            if node < first_interior:
                a, b = edge_ends(node)
                if kc.static(order == 2):
                    d[a] = scalar(4.0) * lam[b]
                    d[b] = scalar(4.0) * lam[a]
                    return scalar(4.0) * lam[a] * lam[b], d
                else:
                    d[a] = scalar(4.5) * lam[b] * (scalar(6.0) * lam[a] - one)
                    d[b] = scalar(4.5) * lam[a] * (three * lam[a] - one)
                    return scalar(4.5) * lam[a] * lam[b] * (three * lam[a] - one), d
            d[0] = scalar(27.0) * lam[1] * lam[2]
            d[1] = scalar(27.0) * lam[2] * lam[0]
            d[2] = scalar(27.0) * lam[0] * lam[1]
            return scalar(27.0) * lam[0] * lam[1] * lam[2], d

    @kc.func
    def weight(coords: Any, node: int):
        value, slopes = value_and_slopes(barycentric(coords), node)
        return value

    @kc.func
    def weight_gradient(coords: Any, node: int):
        value, d = value_and_slopes(barycentric(coords), node)
        if kc.static(triangle):
            return Grad(d[1] - d[0], d[2] - d[0])
        else:
            return Grad(d[1] - d[0], d[2] - d[0], d[3] - d[0])

    return weight, weight_gradient


def make_simplex_shape(element: Element, degree: int, scalar_type: Any) -> ShapeFunction:
    """The Lagrange shape functions of `degree` on triangles or tetrahedra."""
    return SimplexPolynomialShapeFunctions(element, degree, scalar_type)
