"""Degree-1 vector-valued shape functions: Nedelec of the first kind (H(curl), one node per
edge, "covariant") and Raviart-Thomas (H(div), one node per side, "contravariant"), on
squares, cubes, triangles and tetrahedra (Warp's `*NedelecFirstKindShapeFunctions` and
`*RaviartThomasShapeFunctions`).

A node's basis function is a reference-space vector field `weight(coords, node)` whose
tangential (Nedelec) or normal (Raviart-Thomas) component is constant along the node's edge
or side; `weight_gradient` is its (vector x reference coordinate) Jacobian. The sign that
makes neighbouring cells agree on a shared edge or side comes from the topology
(`topology_vector.py`), the mapping to the world from the space (`space_vector.py`).

Node orders are Warp's:
- square: node n lies on an edge along axis n // 2 (x then y), at the low (n even) or high
  end of the other axis;
- cube, Nedelec: node n is the cube edge n of `shape_cube.py` (along axis n // 4); Raviart-
  Thomas: node n is the face n (normal to axis n // 2, low end for n even);
- triangle: node n is the edge from vertex n to vertex n + 1 (mod 3);
- tetrahedron, Nedelec: node n is edge n of `shape_simplex.TET_EDGES`; Raviart-Thomas: node
  n is the face opposite vertex (n + 3) % 4.
"""

from functools import cache
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.shape import EDGE_X, ElementBasis, ShapeFunction
from kernelc.fem.shape_cube import EDGE, FACE
from kernelc.fem.shape_simplex import TET_EDGES
from kernelc.fem.types import mat_type, vec_type

COVARIANT, CONTRAVARIANT = "covariant", "contravariant"


class VectorShapeFunction(ShapeFunction):
    """Degree-1 vector-valued shape functions of one reference element.

    `VALUE` is "covariant" (Nedelec: mapped by the inverse transposed deformation
    gradient) or "contravariant" (Raviart-Thomas: mapped by the deformation gradient over
    its determinant).
    """

    VALUE: str
    NODES_PER_SIDE: int
    VERTEX_NODE_COUNT = 0
    EDGE_NODE_COUNT = 0
    FACE_NODE_COUNT = 0
    INTERIOR_NODE_COUNT = 0

    def __init__(self, scalar_type: Any = kc.float32) -> None:
        # no 1-D node family: the nodes are edge or side midpoints
        self.ORDER = 1
        self.family = None
        self.scalar_type = scalar_type
        self.weight, self.weight_gradient = self._funcs(scalar_type)

    @property
    def name(self) -> str:
        suffix = "" if self.scalar_type == kc.float32 else "_f64"
        return f"{self._kind}1{suffix}"

    @property
    def reference_dimension(self) -> int:
        """Length of the reference-space vectors."""
        return self.element.dimension

    def _funcs(self, scalar: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def node_coords(self) -> np.ndarray:
        return self._node_coords().astype(self.np_scalar)

    def _node_coords(self) -> np.ndarray:
        raise NotImplementedError

    def node_quadrature_weights(self) -> np.ndarray:
        return np.full(self.NODES_PER_ELEMENT, 1.0 / self.NODES_PER_ELEMENT, self.np_scalar)

    def trace_node_quadrature_weights(self) -> np.ndarray:
        return np.full(self.NODES_PER_ELEMENT, 1.0 / self.NODES_PER_SIDE, self.np_scalar)

    def node_dual_weights(self) -> np.ndarray:
        """(nodes, reference dimension): the vector whose dot product with a reference-space
        value at the node is the node's degree of freedom (before the topology's sign)."""
        raise NotImplementedError


def _unit_rows(axes: np.ndarray, dim: int) -> np.ndarray:
    return np.eye(dim)[axes]


class CubeNedelecFirstKindShapeFunctions(VectorShapeFunction):
    """Nedelec (first kind, degree 1) on cubes: node n on cube edge n, along axis a = n // 4,
    at the ends ((n // 2) % 2, n % 2) of the next two axes (a + 1, a + 2 mod 3)."""

    element = Element.CUBE
    VALUE = COVARIANT
    NODES_PER_ELEMENT = 12
    NODES_PER_SIDE = 4
    EDGE_NODE_COUNT = 1
    _kind = "Cube_N"

    def _funcs(self, scalar: Any) -> tuple[Any, Any]:
        return _cube_nedelec_funcs(scalar)

    def _node_coords(self) -> np.ndarray:
        n = np.arange(12)
        axis = n // 4
        out = np.zeros((12, 3))
        out[n, axis] = 0.5
        out[n, (axis + 1) % 3] = (n // 2) % 2
        out[n, (axis + 2) % 3] = n % 2
        return out

    def node_types(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = np.arange(12)
        return np.full(12, EDGE), n, np.zeros(12, dtype=np.int64)

    def node_dual_weights(self) -> np.ndarray:
        # the weight at the node is the unit tangent
        return _unit_rows(np.arange(12) // 4, 3).astype(self.np_scalar)


class CubeRaviartThomasShapeFunctions(VectorShapeFunction):
    """Raviart-Thomas (degree 1) on cubes: node n on face n, normal to axis n // 2, at its
    low (n even) or high end; the weight points along the axis."""

    element = Element.CUBE
    VALUE = CONTRAVARIANT
    NODES_PER_ELEMENT = 6
    NODES_PER_SIDE = 1
    FACE_NODE_COUNT = 1
    _kind = "Cube_RT"

    def _funcs(self, scalar: Any) -> tuple[Any, Any]:
        return _cube_rt_funcs(scalar)

    def _node_coords(self) -> np.ndarray:
        n = np.arange(6)
        out = np.full((6, 3), 0.5)
        out[n, n // 2] = n % 2
        return out

    def node_types(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = np.arange(6)
        return np.full(6, FACE), n, np.zeros(6, dtype=np.int64)

    def node_dual_weights(self) -> np.ndarray:
        return _unit_rows(np.arange(6) // 2, 3).astype(self.np_scalar)


class _SquareEdgeShape(VectorShapeFunction):
    """Square bases with one node per edge: node n on an edge along axis n // 2, at the low
    (n even) or high end of the other axis."""

    element = Element.SQUARE
    NODES_PER_ELEMENT = 4
    NODES_PER_SIDE = 1
    EDGE_NODE_COUNT = 1

    def _node_coords(self) -> np.ndarray:
        n = np.arange(4)
        out = np.zeros((4, 3))
        out[n, n // 2] = 0.5
        out[n, 1 - n // 2] = n % 2
        return out

    def node_types(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = np.arange(4)
        return EDGE_X + n // 2, n % 2, np.zeros(4, dtype=np.int64)


class SquareNedelecFirstKindShapeFunctions(_SquareEdgeShape):
    """Nedelec (first kind, degree 1) on squares: the weight runs along the node's edge."""

    VALUE = COVARIANT
    _kind = "Square_N"

    def _funcs(self, scalar: Any) -> tuple[Any, Any]:
        return _square_funcs(scalar, tangent=True)

    def node_dual_weights(self) -> np.ndarray:
        return _unit_rows(np.arange(4) // 2, 2).astype(self.np_scalar)


class SquareRaviartThomasShapeFunctions(_SquareEdgeShape):
    """Raviart-Thomas (degree 1) on squares: the weight runs across the node's edge."""

    VALUE = CONTRAVARIANT
    _kind = "Square_RT"

    def _funcs(self, scalar: Any) -> tuple[Any, Any]:
        return _square_funcs(scalar, tangent=False)

    def node_dual_weights(self) -> np.ndarray:
        return _unit_rows(1 - np.arange(4) // 2, 2).astype(self.np_scalar)


_TRI_VERTICES = np.array([(0.0, 0.0), (1.0, 0.0), (0.0, 1.0)])
_TET_VERTICES = np.array([(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)])


def _normalized_duals(axes: np.ndarray, weights: np.ndarray, scalar: type) -> np.ndarray:
    # scaled so that the dof of the node's own basis function is 1
    axes, weights = axes.astype(scalar), weights.astype(scalar)
    return axes / np.einsum("nd,nd->n", axes, weights)[:, None]


class _TriangleEdgeShape(VectorShapeFunction):
    """Triangle bases with one node per edge (node n: edge from vertex n to n + 1); cell
    coordinates are barycentric, the reference point (l1, l2)."""

    element = Element.TRIANGLE
    NODES_PER_ELEMENT = 3
    NODES_PER_SIDE = 1
    EDGE_NODE_COUNT = 1

    def _node_coords(self) -> np.ndarray:
        n = np.arange(3)
        out = np.full((3, 3), 0.5)
        out[n, (n + 2) % 3] = 0.0
        return out

    def node_kinds(self) -> np.ndarray:
        return np.full(3, EDGE)

    def _host_weights(self) -> np.ndarray:
        # the weight at each node: rotated (Nedelec) or plain offsets from the vertex
        # opposite the node's edge
        d = self._node_coords()[:, 1:3] - _TRI_VERTICES[(np.arange(3) + 2) % 3]
        return np.stack([-d[:, 1], d[:, 0]], axis=1) if self.VALUE == COVARIANT else d

    def node_dual_weights(self) -> np.ndarray:
        n = np.arange(3)
        t = _TRI_VERTICES[(n + 1) % 3] - _TRI_VERTICES[n]
        axes = t if self.VALUE == COVARIANT else np.stack([-t[:, 1], t[:, 0]], axis=1)
        return _normalized_duals(axes, self._host_weights(), self.np_scalar)


class TriangleNedelecFirstKindShapeFunctions(_TriangleEdgeShape):
    """Nedelec (first kind, degree 1) on triangles."""

    VALUE = COVARIANT
    _kind = "Tri_N"

    def _funcs(self, scalar: Any) -> tuple[Any, Any]:
        return _triangle_funcs(scalar, rotate=True)


class TriangleRaviartThomasShapeFunctions(_TriangleEdgeShape):
    """Raviart-Thomas (degree 1) on triangles."""

    VALUE = CONTRAVARIANT
    _kind = "Tri_RT"

    def _funcs(self, scalar: Any) -> tuple[Any, Any]:
        return _triangle_funcs(scalar, rotate=False)


def _tet_opposite_edge(n: int) -> tuple[int, int]:
    return ((n + 2) % 3, 3) if n < 3 else ((n - 2) % 3, (n - 1) % 3)


class TetrahedronNedelecFirstKindShapeFunctions(VectorShapeFunction):
    """Nedelec (first kind, degree 1) on tetrahedra: node n on edge n; its weight is the
    cross product of the opposite edge's direction with the offset from that edge."""

    element = Element.TETRAHEDRON
    VALUE = COVARIANT
    NODES_PER_ELEMENT = 6
    NODES_PER_SIDE = 3
    EDGE_NODE_COUNT = 1
    _kind = "Tet_N"

    def _funcs(self, scalar: Any) -> tuple[Any, Any]:
        return _tet_nedelec_funcs(scalar)

    def _node_coords(self) -> np.ndarray:
        return np.array([(_TET_VERTICES[a] + _TET_VERTICES[b]) * 0.5 for a, b in TET_EDGES])

    def node_kinds(self) -> np.ndarray:
        return np.full(6, EDGE)

    def node_dual_weights(self) -> np.ndarray:
        x = self._node_coords()
        axes, weights = [], []
        for n, (a, b) in enumerate(TET_EDGES):
            e1, e2 = _tet_opposite_edge(n)
            v1 = _TET_VERTICES[e1]
            weights.append(np.cross(_TET_VERTICES[e2] - v1, x[n] - v1))
            axes.append(_TET_VERTICES[b] - _TET_VERTICES[a])
        return _normalized_duals(np.array(axes), np.array(weights), self.np_scalar)


class TetrahedronRaviartThomasShapeFunctions(VectorShapeFunction):
    """Raviart-Thomas (degree 1) on tetrahedra: node n on the face opposite vertex
    (n + 3) % 4; its weight is twice the offset from that vertex."""

    element = Element.TETRAHEDRON
    VALUE = CONTRAVARIANT
    NODES_PER_ELEMENT = 4
    NODES_PER_SIDE = 1
    FACE_NODE_COUNT = 1
    _kind = "Tet_RT"

    def _funcs(self, scalar: Any) -> tuple[Any, Any]:
        return _tet_rt_funcs(scalar)

    def _node_coords(self) -> np.ndarray:
        n = np.arange(4)
        bary = np.full((4, 4), 1.0 / 3.0)
        bary[n, (n + 3) % 4] = 0.0
        return bary[:, 1:]

    def node_kinds(self) -> np.ndarray:
        return np.full(4, FACE)

    def node_dual_weights(self) -> np.ndarray:
        axes, weights = [], []
        x = self._node_coords()
        for n in range(4):
            v = (n + 3) % 4
            p0, p1, p2 = (_TET_VERTICES[(v + k) % 4] for k in (1, 2, 3))
            axes.append(np.cross(p1 - p0, p2 - p0))
            weights.append(2.0 * (x[n] - _TET_VERTICES[v]))
        return _normalized_duals(np.array(axes), np.array(weights), self.np_scalar)


# ---- device funcs ---------------------------------------------------------------------------


@cache
def _cube_nedelec_funcs(scalar: Any) -> tuple[Any, Any]:
    vec3, mat33 = vec_type(3, scalar), mat_type(3, 3, scalar)

    @kc.func
    def edge_factors(coords: Any, node: int):
        # the bilinear factor across the edge, per transverse axis, as (value, slope) pairs
        axis = node // 4
        e1 = (node // 2) % 2
        e2 = node % 2
        a1, b1 = scalar(2 * e1 - 1), scalar(1 - e1)
        a2, b2 = scalar(2 * e2 - 1), scalar(1 - e2)
        return axis, b1 + a1 * coords[(axis + 1) % 3], a1, b2 + a2 * coords[(axis + 2) % 3], a2

    @kc.func
    def weight(coords: Any, node: int):
        axis, f1, a1, f2, a2 = edge_factors(coords, node)
        w = vec3(scalar(0.0))
        w[axis] = f1 * f2
        return w

    @kc.func
    def weight_gradient(coords: Any, node: int):
        axis, f1, a1, f2, a2 = edge_factors(coords, node)
        g = mat33(scalar(0.0))
        g[axis, (axis + 1) % 3] = a1 * f2
        g[axis, (axis + 2) % 3] = f1 * a2
        return g

    return weight, weight_gradient


@cache
def _cube_rt_funcs(scalar: Any) -> tuple[Any, Any]:
    vec3, mat33 = vec_type(3, scalar), mat_type(3, 3, scalar)

    @kc.func
    def weight(coords: Any, node: int):
        axis = node // 2
        offset = node - 2 * axis
        w = vec3(scalar(0.0))
        w[axis] = scalar(1 - offset) + scalar(2 * offset - 1) * coords[axis]
        return w

    @kc.func
    def weight_gradient(coords: Any, node: int):
        axis = node // 2
        g = mat33(scalar(0.0))
        g[axis, axis] = scalar(2 * (node - 2 * axis) - 1)
        return g

    return weight, weight_gradient


@cache
def _square_funcs(scalar: Any, tangent: bool) -> tuple[Any, Any]:
    vec2, mat22 = vec_type(2, scalar), mat_type(2, 2, scalar)

    @kc.func
    def weight(coords: Any, node: int):
        axis = node // 2
        side = node - 2 * axis
        w = vec2(scalar(0.0))
        value = scalar(1 - side) + scalar(2 * side - 1) * coords[1 - axis]
        if kc.static(tangent):
            w[axis] = value
        else:
            w[1 - axis] = value
        return w

    @kc.func
    def weight_gradient(coords: Any, node: int):
        axis = node // 2
        g = mat22(scalar(0.0))
        slope = scalar(2 * (node - 2 * axis) - 1)
        if kc.static(tangent):
            g[axis, 1 - axis] = slope
        else:
            g[1 - axis, 1 - axis] = slope
        return g

    return weight, weight_gradient


@cache
def _triangle_funcs(scalar: Any, rotate: bool) -> tuple[Any, Any]:
    vec2, mat22 = vec_type(2, scalar), mat_type(2, 2, scalar)
    zero, one = scalar(0.0), scalar(1.0)

    @kc.func
    def weight(coords: Any, node: int):
        v = (node + 2) % 3
        d = vec2(coords[1], coords[2]) - vec2(scalar(v == 1), scalar(v == 2))
        if kc.static(rotate):
            return vec2(-d[1], d[0])
        return d

    @kc.func
    def weight_gradient(coords: Any, node: int):
        if kc.static(rotate):
            return mat22(zero, -one, one, zero)
        return mat22(one, zero, zero, one)

    return weight, weight_gradient


@cache
def _tet_nedelec_funcs(scalar: Any) -> tuple[Any, Any]:
    vec3 = vec_type(3, scalar)

    @kc.func
    def vertex(v: int):
        return vec3(scalar(v == 1), scalar(v == 2), scalar(v == 3))

    @kc.func
    def opposite_edge(node: int):
        if node < 3:
            return vertex((node + 2) % 3), vertex(3)
        return vertex((node - 2) % 3), vertex((node - 1) % 3)

    @kc.func
    def weight(coords: Any, node: int):
        v1, v2 = opposite_edge(node)
        return kc.cross(v2 - v1, coords - v1)

    @kc.func
    def weight_gradient(coords: Any, node: int):
        v1, v2 = opposite_edge(node)
        return kc.skew(v2 - v1)

    return weight, weight_gradient


@cache
def _tet_rt_funcs(scalar: Any) -> tuple[Any, Any]:
    vec3 = vec_type(3, scalar)

    @kc.func
    def weight(coords: Any, node: int):
        v = (node + 3) % 4
        return scalar(2.0) * (coords - vec3(scalar(v == 1), scalar(v == 2), scalar(v == 3)))

    @kc.func
    def weight_gradient(coords: Any, node: int):
        return scalar(2.0) * kc.identity(n=3, dtype=scalar)

    return weight, weight_gradient


_SHAPES = {
    (Element.SQUARE, ElementBasis.NEDELEC_FIRST_KIND): SquareNedelecFirstKindShapeFunctions,
    (Element.SQUARE, ElementBasis.RAVIART_THOMAS): SquareRaviartThomasShapeFunctions,
    (Element.CUBE, ElementBasis.NEDELEC_FIRST_KIND): CubeNedelecFirstKindShapeFunctions,
    (Element.CUBE, ElementBasis.RAVIART_THOMAS): CubeRaviartThomasShapeFunctions,
    (Element.TRIANGLE, ElementBasis.NEDELEC_FIRST_KIND): TriangleNedelecFirstKindShapeFunctions,
    (Element.TRIANGLE, ElementBasis.RAVIART_THOMAS): TriangleRaviartThomasShapeFunctions,
    (Element.TETRAHEDRON, ElementBasis.NEDELEC_FIRST_KIND):
        TetrahedronNedelecFirstKindShapeFunctions,
    (Element.TETRAHEDRON, ElementBasis.RAVIART_THOMAS): TetrahedronRaviartThomasShapeFunctions,
}


def make_vector_shape(element: Element, degree: int, element_basis: ElementBasis,
                      scalar_type: Any) -> VectorShapeFunction:
    """The Nedelec or Raviart-Thomas shape functions of `degree` (1) on `element`."""
    if degree != 1:
        raise NotImplementedError(f"only degree-1 {element_basis.name} shape functions are "
                                  "supported (as in Warp)")
    return _SHAPES[(element, element_basis)](scalar_type)


__all__ = ["COVARIANT", "CONTRAVARIANT", "VectorShapeFunction", "make_vector_shape"]
