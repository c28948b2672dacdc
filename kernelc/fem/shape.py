"""Shape functions on the reference square: tensor-product Lagrange (Q_k) and serendipity
(S_2, S_3) bases (Warp's `SquareBipolynomialShapeFunctions` / `SquareSerendipityShapeFunctions`).

A shape function set gives, per node of the element: its coordinates, its weight in nodal
quadrature, and device funcs for the value and the reference-space gradient of its basis
function at any point. Node orders are Warp's, since global node numbers are built from them:
- Q_k: node n is (i, j) = (n // (k + 1), n % (k + 1)) on the 1-D node grid;
- S_k: the 4 vertices ((n // 2) * k, (n % 2) * k), then edge nodes alternating between
  x-edges (y = 0 or 1) and y-edges, low side before high side, for each position along
  the edge.
"""

from enum import Enum
from functools import cache
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.polynomial import Polynomial, is_closed, lagrange_scales, quadrature_1d
from kernelc.fem.types import vec_type

VERTEX, EDGE_X, EDGE_Y, INTERIOR = 0, 1, 2, 3  # node kinds (EDGE_X: on a side y = const)


class ElementBasis(Enum):
    """Kind of basis on each element (Warp's `warp.fem.ElementBasis`)."""

    LAGRANGE = "P"
    SERENDIPITY = "S"
    NONCONFORMING_POLYNOMIAL = "dP"
    NEDELEC_FIRST_KIND = "N1"
    RAVIART_THOMAS = "RT"
    BSPLINE = "B"


class ShapeFunction:
    """Basis functions of one reference element (scalar-valued)."""

    element: Element
    ORDER: int
    NODES_PER_ELEMENT: int
    VERTEX_NODE_COUNT: int
    EDGE_NODE_COUNT: int
    INTERIOR_NODE_COUNT: int
    weight: Any  # kc.func (coords, node_index_in_element) -> scalar
    weight_gradient: Any  # kc.func (coords, node_index_in_element) -> reference gradient
    TENSOR_LAGRANGE = False  # products of 1-D Lagrange polynomials (nodes on a tensor grid)

    def __init__(self, degree: int, family: Polynomial, scalar_type: Any) -> None:
        self.ORDER = degree
        self.family = family
        self.scalar_type = scalar_type
        coords, weights = quadrature_1d(degree + 1, family)
        self.lobatto_coords = coords
        self.lobatto_weights = weights
        self.lagrange_scales = lagrange_scales(coords)

    @property
    def name(self) -> str:
        """Identifies the basis; equal names share compiled kernels."""
        suffix = "" if self.scalar_type == kc.float32 else "_f64"
        return f"{self._kind}{self.ORDER}_{self.family}{suffix}"

    _kind = ""

    @property
    def np_scalar(self) -> type:
        return np.float64 if self.scalar_type == kc.float64 else np.float32

    def node_lobatto_indices(self) -> np.ndarray:
        """(N, 2) positions of the nodes on the 1-D node grid."""
        raise NotImplementedError

    def node_coords(self) -> np.ndarray:
        """(N, 3) element coordinates of the nodes, in the scalar type."""
        ij = self.node_lobatto_indices()
        x = self.lobatto_coords.astype(self.np_scalar)
        out = np.zeros((len(ij), 3), dtype=self.np_scalar)
        out[:, 0], out[:, 1] = x[ij[:, 0]], x[ij[:, 1]]
        return out

    def node_types(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per node: kind (VERTEX, EDGE_X, EDGE_Y, INTERIOR), which vertex or side of that
        kind (vertex (x, y) as 2 x + y; side 0 low, 1 high), and index among the nodes of
        that vertex, side or interior."""
        ij = self.node_lobatto_indices()
        k = self.ORDER
        i, j = ij[:, 0], ij[:, 1]
        ends_i, ends_j = (i == 0) | (i == k), (j == 0) | (j == k)
        kind = np.where(ends_i & ends_j, VERTEX,
                        np.where(ends_i, EDGE_Y, np.where(ends_j, EDGE_X, INTERIOR)))
        instance = np.where(kind == VERTEX, (i // k) * 2 + j // k,
                            np.where(kind == EDGE_Y, i // k, np.where(kind == EDGE_X, j // k, 0)))
        index = np.where(kind == EDGE_Y, j - 1, np.where(kind == EDGE_X, i - 1,
                                                          (i - 1) * (k - 1) + (j - 1)))
        index = np.where(kind == VERTEX, 0, index)
        return kind, instance, index


class SquareBipolynomialShapeFunctions(ShapeFunction):
    """Q_k: products of 1-D Lagrange polynomials on k + 1 nodes of `family`."""

    element = Element.SQUARE
    _kind = "Square_Q"
    TENSOR_LAGRANGE = True

    def __init__(self, degree: int, family: Polynomial, scalar_type: Any = kc.float32) -> None:
        super().__init__(degree, family, scalar_type)
        self.NODES_PER_ELEMENT = (degree + 1) ** 2
        closed = is_closed(family)
        self.VERTEX_NODE_COUNT = 1 if closed else 0
        self.EDGE_NODE_COUNT = max(0, degree - 1) if closed else 0
        self.INTERIOR_NODE_COUNT = max(0, degree - 1) ** 2 if closed else self.NODES_PER_ELEMENT
        funcs = _bipolynomial_funcs(degree, tuple(self.lobatto_coords),
                                    tuple(self.lagrange_scales), scalar_type)
        self.weight, self.weight_gradient = funcs

    def node_lobatto_indices(self) -> np.ndarray:
        n = np.arange(self.NODES_PER_ELEMENT)
        return np.stack([n // (self.ORDER + 1), n % (self.ORDER + 1)], axis=1)

    def node_quadrature_weights(self) -> np.ndarray:
        ij = self.node_lobatto_indices()
        w = self.lobatto_weights.astype(self.np_scalar)
        return w[ij[:, 0]] * w[ij[:, 1]]

    def trace_node_quadrature_weights(self) -> np.ndarray:
        # A node on a side is interior to the side along one axis; its weight is the 1-D
        # weight along that axis (for vertices either one).
        ij = self.node_lobatto_indices()
        w = self.lobatto_weights.astype(self.np_scalar)
        inside_i = (ij[:, 0] > 0) & (ij[:, 0] < self.ORDER)
        return np.where(inside_i, w[ij[:, 0]], w[ij[:, 1]])


class SquareSerendipityShapeFunctions(ShapeFunction):
    """S_2 and S_3: the Q_k nodes without interior ones; vertex functions are bilinear
    functions times a quadratic correction, edge functions 1-D Lagrange polynomials times
    a linear function across the edge."""

    element = Element.SQUARE
    _kind = "Square_S"

    def __init__(self, degree: int, family: Polynomial, scalar_type: Any = kc.float32) -> None:
        if not is_closed(family):
            raise ValueError("serendipity elements need a closed polynomial family")
        if degree not in (2, 3):
            raise NotImplementedError("serendipity elements have degree 2 or 3")
        super().__init__(degree, family, scalar_type)
        self.NODES_PER_ELEMENT = 4 * degree
        self.VERTEX_NODE_COUNT = 1
        self.EDGE_NODE_COUNT = degree - 1
        self.INTERIOR_NODE_COUNT = 0
        # The degree-3 vertex functions vanish on a circle through the edge nodes; its
        # constants are rounded to the scalar type before use, as in Warp.
        x1 = float(self.np_scalar(self.lobatto_coords[1]))
        radius = float(self.np_scalar(0.25 + (0.5 - x1) ** 2))
        self.weight, self.weight_gradient = _serendipity_funcs(
            degree, tuple(self.lobatto_coords), tuple(self.lagrange_scales), radius,
            1.0 / (0.5 - radius), scalar_type)

    def node_lobatto_indices(self) -> np.ndarray:
        k = self.ORDER
        rows = [((n // 2) * k, (n % 2) * k) for n in range(4)]
        for n in range(4, self.NODES_PER_ELEMENT):
            edge, y_edge = divmod(n - 4, 2)
            along, side = divmod(edge, 2)
            rows.append((side * k, 1 + along) if y_edge else (1 + along, side * k))
        return np.array(rows, dtype=np.int64)

    def node_quadrature_weights(self) -> np.ndarray:
        k = self.ORDER
        vertex = self.np_scalar(0.25 / (k * k))
        edge = self.np_scalar((0.25 - 0.25 / (k * k)) / (k - 1))
        return np.where(np.arange(self.NODES_PER_ELEMENT) < 4, vertex, edge).astype(
            self.np_scalar)

    def trace_node_quadrature_weights(self) -> np.ndarray:
        w = self.lobatto_weights.astype(self.np_scalar)
        kind, _, index = self.node_types()
        return np.where(kind == VERTEX, w[0], w[np.minimum(1 + index, len(w) - 1)]).astype(
            self.np_scalar)


@cache
def _bipolynomial_funcs(order: int, coords: tuple, scales: tuple, scalar: Any):
    n = order + 1
    NodeVec = vec_type(n, scalar)
    X = NodeVec(*[float(c) for c in coords])
    S = NodeVec(*[float(c) for c in scales])
    vec2 = vec_type(2, scalar)

    @kc.func
    def lagrange_1d(x: scalar, node: int):
        # (value, derivative) of the 1-D Lagrange polynomial of `node`, without its scale
        value = scalar(1.0)
        slope = scalar(0.0)
        for k in range(n):
            if k != node:
                slope = slope * (x - X[k]) + value
                value = value * (x - X[k])
        return value, slope

    @kc.func
    def weight(coords: Any, node: int):
        i = node // n
        j = node - n * i
        vx, dx = lagrange_1d(coords[0], i)
        vy, dy = lagrange_1d(coords[1], j)
        return (S[i] * S[j]) * (vx * vy)

    @kc.func
    def weight_gradient(coords: Any, node: int):
        i = node // n
        j = node - n * i
        vx, dx = lagrange_1d(coords[0], i)
        vy, dy = lagrange_1d(coords[1], j)
        return (S[i] * S[j]) * vec2(dx * vy, vx * dy)

    return weight, weight_gradient


@cache
def _serendipity_funcs(order: int, coords: tuple, scales: tuple, radius: float, rscale: float,
                       scalar: Any):
    n = order + 1
    NodeVec = vec_type(n, scalar)
    X = NodeVec(*[float(c) for c in coords])
    S = NodeVec(*[float(c) for c in scales])
    vec2 = vec_type(2, scalar)

    @kc.func
    def node_ij(node: int):
        if node < 4:
            return (node // 2) * order, (node - 2 * (node // 2)) * order, 0
        edge = (node - 4) // 2
        y_edge = node - 4 - 2 * edge
        along = edge // 2
        side = edge - 2 * along
        if y_edge == 1:
            return side * order, 1 + along, 2
        return 1 + along, side * order, 1

    @kc.func
    def lagrange_1d(x: scalar, node: int):
        value = scalar(1.0)
        slope = scalar(0.0)
        for k in range(n):
            if k != node:
                slope = slope * (x - X[k]) + value
                value = value * (x - X[k])
        return S[node] * value, S[node] * slope

    @kc.func
    def linear_1d(x: scalar, node: int):
        # the linear function that is 1 at the node's end of [0, 1] and 0 at the other
        return kc.where(node == 0, scalar(1.0) - x, x), kc.where(node == 0, scalar(-1.0),
                                                                  scalar(1.0))

    @kc.func
    def vertex_weight(coords: Any, i: int, j: int):
        cx, gx = linear_1d(coords[0], i)
        cy, gy = linear_1d(coords[1], j)
        if kc.static(order == 2):
            w = cx + cy - scalar(2.0) + X[1]
            return S[0] * cx * cy * w, S[0] * vec2(gx * cy * (w + cx), gy * cx * (w + cy))
        w = (cx - scalar(0.5)) * (cx - scalar(0.5)) + (cy - scalar(0.5)) * (cy - scalar(0.5)) \
            - scalar(radius)
        return scalar(rscale) * cx * cy * w, scalar(rscale) * vec2(
            gx * cy * (w + cx * (scalar(2.0) * cx - scalar(1.0))),
            gy * cx * (w + cy * (scalar(2.0) * cy - scalar(1.0))))

    @kc.func
    def weight(coords: Any, node: int):
        i, j, kind = node_ij(node)
        if kind == 0:
            w, g = vertex_weight(coords, i, j)
            return w
        if kind == 1:
            vx, dx = lagrange_1d(coords[0], i)
            vy, dy = linear_1d(coords[1], j)
            return vx * vy
        vx, dx = linear_1d(coords[0], i)
        vy, dy = lagrange_1d(coords[1], j)
        return vx * vy

    @kc.func
    def weight_gradient(coords: Any, node: int):
        i, j, kind = node_ij(node)
        if kind == 0:
            w, g = vertex_weight(coords, i, j)
            return g
        if kind == 1:
            vx, dx = lagrange_1d(coords[0], i)
            vy, dy = linear_1d(coords[1], j)
            return vec2(dx * vy, vx * dy)
        vx, dx = linear_1d(coords[0], i)
        vy, dy = lagrange_1d(coords[1], j)
        return vec2(dx * vy, vx * dy)

    return weight, weight_gradient


def make_element_shape_function(element: Element, degree: int,
                                element_basis: ElementBasis | None = None,
                                family: Polynomial | None = None,
                                scalar_type: Any = None) -> ShapeFunction:
    """The shape functions of `degree` and `element_basis` on a reference element.

    Args:
        element: The reference element.
        degree: Polynomial degree (0 for constants, 1 to 4 for Lagrange, 2 or 3 for
            serendipity).
        element_basis: Lagrange (default), serendipity or non-conforming polynomial
            (`shape_nonconforming.py`).
        family: 1-D node family (default Gauss-Lobatto-Legendre).
        scalar_type: `kc.float32` (default) or `kc.float64`.

    Returns:
        The shape function set.
    """
    scalar_type = kc.float32 if scalar_type is None else scalar_type
    return _shape(element, degree, element_basis, family, scalar_type)


@cache
def _shape(element: Element, degree: int, element_basis: Any, family: Any,
           scalar_type: Any) -> ShapeFunction:
    if element_basis is None or (element_basis == ElementBasis.SERENDIPITY and degree == 1):
        element_basis = ElementBasis.LAGRANGE
    if family is None:
        family = Polynomial.LOBATTO_GAUSS_LEGENDRE
    if degree == 0:
        from kernelc.fem.shape_constant import ConstantShapeFunction

        return ConstantShapeFunction(element, scalar_type)
    if degree < 0:
        raise ValueError(f"polynomial degree must be 0 or more, got {degree}")
    if element_basis == ElementBasis.NONCONFORMING_POLYNOMIAL:
        from kernelc.fem.shape_nonconforming import make_nonconforming_shape

        return make_nonconforming_shape(element, degree, scalar_type)
    if element_basis in (ElementBasis.NEDELEC_FIRST_KIND, ElementBasis.RAVIART_THOMAS):
        from kernelc.fem.shape_vector import make_vector_shape

        return make_vector_shape(element, degree, element_basis, scalar_type)
    if element_basis == ElementBasis.BSPLINE:
        from kernelc.fem.shape_bspline import make_bspline_shape

        return make_bspline_shape(element, degree, scalar_type)
    if element == Element.SQUARE:
        if element_basis == ElementBasis.LAGRANGE:
            return SquareBipolynomialShapeFunctions(degree, family, scalar_type)
        if element_basis == ElementBasis.SERENDIPITY:
            return SquareSerendipityShapeFunctions(degree, family, scalar_type)
    if element == Element.CUBE:
        from kernelc.fem.shape_cube import make_cube_shape

        return make_cube_shape(degree, element_basis, family, scalar_type)
    if element in (Element.TRIANGLE, Element.TETRAHEDRON) and element_basis in (
            ElementBasis.LAGRANGE, ElementBasis.SERENDIPITY):
        if element_basis == ElementBasis.SERENDIPITY and degree > 2:
            raise NotImplementedError(f"serendipity shape functions on {element.name} elements "
                                      "are not supported (Warp has none either)")
        from kernelc.fem.shape_simplex import make_simplex_shape

        return make_simplex_shape(element, degree, scalar_type)
    raise NotImplementedError(f"{element_basis.name} shape functions on {element.name} elements "
                              "are not supported yet")


__all__ = ["ElementBasis", "ShapeFunction", "SquareBipolynomialShapeFunctions",
           "SquareSerendipityShapeFunctions", "make_element_shape_function"]
