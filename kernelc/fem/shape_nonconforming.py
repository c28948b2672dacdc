"""Non-conforming polynomial shape functions (Warp's `ElementBasis.NONCONFORMING_POLYNOMIAL`):
the Lagrange P_k functions of a simplex placed inside the element, so that every node is
interior to its cell and the space is discontinuous.

Warp's embeddings, which fix node positions and values:
- square: the largest equilateral triangle centred at (0.5, 0.5), of height 0.75, one side
  parallel to the x axis, below;
- cube: the regular tetrahedron of height 2/3 centred at (0.5, 0.5, 0.5), one face at the
  bottom;
- triangle and tetrahedron: the element shrunk about its centroid, by a factor chosen per
  degree (Warp's, tuned so that the node weights integrate low-degree polynomials well).

The maps' constants are rounded to the scalar type before use, as Warp's constants are;
node coordinates are computed on the host in the scalar type, in the order Warp's device
code computes them. A node's basis function is 1 at the node, so its dual weight is 1.
"""

import math
from functools import cache
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.shape import ShapeFunction
from kernelc.fem.shape_simplex import EDGE, VERTEX, SimplexPolynomialShapeFunctions
from kernelc.fem.types import coords_type, mat_type, vec_type

# Square: triangle (l1, l2) -> square (x, y) is TRI_TO_SQUARE (l1, l2) + TRI_OFFSET.
_TRI_HEIGHT = 0.75
_TRI_SIDE = 2.0 / math.sqrt(3.0) * _TRI_HEIGHT
TRI_TO_SQUARE = np.array([[_TRI_SIDE, _TRI_SIDE / 2.0], [0.0, _TRI_HEIGHT]])
TRI_OFFSET = np.array([0.5 - 0.5 * _TRI_SIDE, 0.5 - _TRI_HEIGHT / 3.0])

# Cube: tetrahedron (l1, l2, l3) -> cube (x, y, z) is TET_TO_CUBE (l1, l2, l3) + TET_OFFSET.
_TET_HEIGHT = 2.0 / 3.0
_TET_SIDE = math.sqrt(1.5) * _TET_HEIGHT
_TET_FACE_HEIGHT = math.sqrt(3.0) / 2.0 * _TET_SIDE
TET_TO_CUBE = np.array([[_TET_SIDE, _TET_SIDE / 2.0, _TET_SIDE / 2.0],
                        [0.0, _TET_FACE_HEIGHT, _TET_FACE_HEIGHT / 3.0],
                        [0.0, 0.0, _TET_HEIGHT]])
TET_OFFSET = np.array([0.5 - 0.5 * _TET_SIDE, 0.5 - _TET_FACE_HEIGHT / 3.0,
                       0.5 - 0.25 * _TET_HEIGHT])

# Triangle: the barycentric coordinate of the inner triangle's vertex k is a at vertex k
# of the element (the others (1 - a) / 2); tetrahedron: inner = centroid + s (x - centroid).
TRIANGLE_SHRINK = {1: 2.0 / 3.0, 2: 0.7790771484375001, 3: 0.8429443359375002}
TET_SHRINK = {1: 0.4472135955, 2: 0.6123779296874996, 3: 0.7153564453124999}

# Node quadrature weights by node kind (vertex, edge, interior) where Warp has a table;
# otherwise 1 / nodes per element.
_NODE_WEIGHTS = {(Element.SQUARE, 2): (0.18518521, 0.14814811, 0.14814811),
                 (Element.TRIANGLE, 2): (0.13743348, 0.19589985, 0.0),
                 (Element.TRIANGLE, 3): (0.07462578, 0.1019807, 0.16423881),
                 (Element.TETRAHEDRON, 2): (0.07499641, 0.11666908, 0.0)}

_NAMES = {Element.SQUARE: "Square_P{}d", Element.CUBE: "Cube_P{}d",
          Element.TRIANGLE: "Tri_dP{}", Element.TETRAHEDRON: "Tet_P{}d"}


class NonconformingShapeFunctions(ShapeFunction):
    """P_k on a simplex embedded in a square, cube, triangle or tetrahedron."""

    TENSOR_LAGRANGE = False
    UNIT_DUAL_WEIGHT = True

    def __init__(self, element: Element, degree: int, scalar_type: Any = kc.float32) -> None:
        self.element = element
        self.ORDER = degree
        self.family = None
        self.scalar_type = scalar_type
        planar = element in (Element.SQUARE, Element.TRIANGLE)
        self._simplex = SimplexPolynomialShapeFunctions(
            Element.TRIANGLE if planar else Element.TETRAHEDRON, degree, scalar_type)
        self.NODES_PER_ELEMENT = self._simplex.NODES_PER_ELEMENT
        # every node is interior: element-based numberings then give per-cell nodes
        self.VERTEX_NODE_COUNT = self.EDGE_NODE_COUNT = 0
        self.INTERIOR_NODE_COUNT = self.NODES_PER_ELEMENT
        self.weight, self.weight_gradient = _embedded_funcs(element, degree, scalar_type)

    @property
    def name(self) -> str:
        suffix = "" if self.scalar_type == kc.float32 else "_f64"
        return _NAMES[self.element].format(self.ORDER) + suffix

    def _simplex_node_coords(self) -> np.ndarray:
        """(N, 3) coordinates of the nodes in the inner simplex: barycentric for a triangle,
        (l1, l2, l3) for a tetrahedron, each l = index / degree in the scalar type."""
        f = self.np_scalar
        nodes = self._simplex._nodes
        c = nodes[:, 1:].astype(f) / f(self.ORDER)
        if nodes.shape[1] == 3:  # l0 last, from the others
            return np.stack([f(1.0) - c[:, 0] - c[:, 1], c[:, 0], c[:, 1]], axis=1)
        return c

    def node_coords(self) -> np.ndarray:
        f = self.np_scalar
        inner = self._simplex_node_coords()
        out = np.zeros((self.NODES_PER_ELEMENT, 3), dtype=f)
        if self.element == Element.SQUARE:
            out[:, :2] = _mat_vec(TRI_TO_SQUARE.astype(f), inner[:, 1:]) + TRI_OFFSET.astype(f)
        elif self.element == Element.CUBE:
            out[:] = _mat_vec(TET_TO_CUBE.astype(f), inner) + TET_OFFSET.astype(f)
        elif self.element == Element.TRIANGLE:
            out[:] = _mat_vec(_triangle_small_to_big(self.ORDER).astype(f), inner)
        else:
            scale, offset = _tet_shrink(self.ORDER)
            out[:] = f(scale) * inner + f(offset)
        return out

    def node_quadrature_weights(self) -> np.ndarray:
        n = self.NODES_PER_ELEMENT
        table = _NODE_WEIGHTS.get((self.element, self.ORDER))
        if table is None:
            return np.full(n, 1.0 / n, dtype=self.np_scalar)
        kinds = self._simplex.node_kinds()
        weights = np.where(kinds == VERTEX, table[0],
                           np.where(kinds == EDGE, table[1], table[2]))
        return weights.astype(self.np_scalar)

    def trace_node_quadrature_weights(self) -> np.ndarray:
        # no node is on a side: nodal integrals over sides vanish, as in Warp
        return np.zeros(self.NODES_PER_ELEMENT, dtype=self.np_scalar)


def _mat_vec(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    """matrix * each row of `points`, column by column (Warp's order of sums), in the
    arrays' precision."""
    out = matrix[:, 0][None, :] * points[:, :1]
    for j in range(1, matrix.shape[1]):
        out = out + matrix[:, j][None, :] * points[:, j:j + 1]
    return out


def _triangle_small_to_big(degree: int) -> np.ndarray:
    a = TRIANGLE_SHRINK.get(degree, 1.0)
    b = 0.5 * (1.0 - a)
    return np.full((3, 3), b) + (a - b) * np.eye(3)


def _tet_shrink(degree: int) -> tuple[float, float]:
    scale = TET_SHRINK.get(degree, 1.0)
    return scale, (1.0 - scale) * 0.25


@cache
def _embedded_funcs(element: Element, degree: int, scalar: Any) -> tuple[Any, Any]:
    """(weight, reference gradient) funcs: the inner simplex's at the point's simplex
    coordinates, the gradient mapped back to the element's coordinates."""
    planar = element in (Element.SQUARE, Element.TRIANGLE)
    inner = SimplexPolynomialShapeFunctions(Element.TRIANGLE if planar else Element.TETRAHEDRON,
                                            degree, scalar)
    inner_weight, inner_gradient = inner.weight, inner.weight_gradient
    Coords = coords_type(scalar)
    if element == Element.SQUARE:
        to_tri = np.linalg.inv(TRI_TO_SQUARE)
        ToTri, ToTriT = (mat_type(2, 2, scalar)(*m.reshape(-1)) for m in (to_tri, to_tri.T))
        Offset = vec_type(2, scalar)(*TRI_OFFSET)
        vec2 = vec_type(2, scalar)
        one = scalar(1.0)

        @kc.func
        def simplex_coords(coords: Any):
            p = ToTri * (vec2(coords[0], coords[1]) - Offset)
            return Coords(one - p[0] - p[1], p[0], p[1])

        @kc.func
        def element_gradient(g: Any):
            return ToTriT * g
    elif element == Element.CUBE:
        to_tet = np.linalg.inv(TET_TO_CUBE)
        ToTet, ToTetT = (mat_type(3, 3, scalar)(*m.reshape(-1)) for m in (to_tet, to_tet.T))
        Offset = vec_type(3, scalar)(*TET_OFFSET)

        @kc.func
        def simplex_coords(coords: Any):
            return ToTet * (coords - Offset)

        @kc.func
        def element_gradient(g: Any):
            return ToTetT * g
    elif element == Element.TRIANGLE:
        a = TRIANGLE_SHRINK.get(degree, 1.0)
        BigToSmall = mat_type(3, 3, scalar)(*np.linalg.inv(_triangle_small_to_big(degree))
                                            .reshape(-1))
        inv_scale = scalar(1.0 / (a - 0.5 * (1.0 - a)))

        @kc.func
        def simplex_coords(coords: Any):
            return BigToSmall * coords

        @kc.func
        def element_gradient(g: Any):
            return inv_scale * g
    else:
        scale_value, offset_value = _tet_shrink(degree)
        scale = scalar(scale_value)
        Offset = vec_type(3, scalar)(offset_value, offset_value, offset_value)

        @kc.func
        def simplex_coords(coords: Any):
            return (coords - Offset) / scale

        @kc.func
        def element_gradient(g: Any):
            return g / scale

    @kc.func
    def weight(coords: Any, node: int):
        return inner_weight(simplex_coords(coords), node)

    @kc.func
    def weight_gradient(coords: Any, node: int):
        return element_gradient(inner_gradient(simplex_coords(coords), node))

    return weight, weight_gradient


def make_nonconforming_shape(element: Element, degree: int, scalar_type: Any) -> ShapeFunction:
    """The non-conforming P_`degree` shape functions of `element`."""
    if element not in _NAMES:
        raise NotImplementedError(f"non-conforming shape functions on {element.name} elements "
                                  "are not supported")
    return NonconformingShapeFunctions(element, degree, scalar_type)
