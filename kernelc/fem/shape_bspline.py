"""Uniform B-spline shape functions on squares and cubes (`ElementBasis.BSPLINE`, Warp's
`SquareBSplineShapeFunctions` / `CubeBSplineShapeFunctions`).

A B-spline space of degree k puts one node on every grid vertex, plus a layer of
`PADDING = k // 2` vertices around the cells, so that each cell sees the
`NODES_PER_DIM = 2 * PADDING + 2` nodes per axis whose splines do not vanish on it. A
node's basis function is the product of 1-D cardinal B-splines centred on the node (at
integer cell coordinates, possibly outside [0, 1]):

- degree 1: the hat 1 - |x| (support [-1, 1], kinks at the nodes);
- degree 2: 3/4 - x^2 on |x| < 1/2, (3/2 - |x|)^2 / 2 on 1/2 < |x| < 3/2 (kinks at half
  integers, so inside the cell);
- degree 3: 2/3 - x^2 + |x|^3 / 2 on |x| < 1, (2 - |x|)^3 / 6 on 1 < |x| < 2.

Node n of a cell is (i, j[, k]) on its NODES_PER_DIM^d node block, the last axis fastest,
at cell coordinates (i, j[, k]) - PADDING, as Warp numbers them. B-splines do not
interpolate: a node's dof is its spline coefficient, and interpolation stores the value at
the node (unit dual weights, as Warp), which reproduces affine fields exactly. The nodal
quadrature weights are Warp's: 1 / NODES_PER_DIM^d per node (^(d - 1) on sides).

Degree 1 differs from Warp in one place: the slope of a hat at its own node (a kink) is
taken from inside the cell (so that a node at the cell's upper end rises there), where
Warp's `-sign(0)` makes every hat fall; values and every other gradient are Warp's.
"""

from functools import cache
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.shape import ShapeFunction
from kernelc.fem.types import vec_type

SUPPORTED_DEGREES = (1, 2, 3)


class BSplineShapeFunctions(ShapeFunction):
    """Tensor products of uniform 1-D B-splines of degree 1 to 3 on a square or a cube.

    Args:
        element: `Element.SQUARE` or `Element.CUBE`.
        degree: 1, 2 or 3.
        scalar_type: `kc.float32` or `kc.float64`.
    """

    TENSOR_LAGRANGE = False
    UNIT_DUAL_WEIGHT = True  # node values are the dofs (interpolate stores them as is)
    BSPLINE = True  # make_topology hands these to topology_bspline.py
    family = None

    def __init__(self, element: Element, degree: int, scalar_type: Any = kc.float32) -> None:
        if degree not in SUPPORTED_DEGREES:
            raise ValueError("Only degrees 1, 2, and 3 are supported")  # Warp's words
        self.element = element
        self.ORDER = degree
        self.scalar_type = scalar_type
        self.PADDING = degree // 2
        self.NODES_PER_DIM = 2 * self.PADDING + 2
        self.dimension = element.dimension
        self.NODES_PER_ELEMENT = self.NODES_PER_DIM ** self.dimension
        self.weight, self.weight_gradient = _bspline_funcs(
            self.dimension, degree, self.NODES_PER_DIM, self.PADDING, scalar_type)

    @property
    def name(self) -> str:
        suffix = "" if self.scalar_type == kc.float32 else "_f64"
        kind = "Square" if self.element == Element.SQUARE else "Cube"
        return f"{kind}BSpline{self.ORDER}{suffix}"

    def node_offsets(self) -> np.ndarray:
        """(N, d) integer cell coordinates of the nodes (from -PADDING to PADDING + 1),
        in node order."""
        block = np.indices([self.NODES_PER_DIM] * self.dimension)
        return block.reshape(self.dimension, -1).T - self.PADDING

    def node_coords(self) -> np.ndarray:
        out = np.zeros((self.NODES_PER_ELEMENT, 3), dtype=self.np_scalar)
        out[:, :self.dimension] = self.node_offsets()
        return out

    def node_quadrature_weights(self) -> np.ndarray:
        return np.full(self.NODES_PER_ELEMENT, 1.0 / self.NODES_PER_ELEMENT,
                       dtype=self.np_scalar)

    def trace_node_quadrature_weights(self) -> np.ndarray:
        side_nodes = self.NODES_PER_DIM ** (self.dimension - 1)
        return np.full(self.NODES_PER_ELEMENT, 1.0 / side_nodes, dtype=self.np_scalar)


@cache
def _bspline_funcs(dimension: int, order: int, per_dim: int, padding: int,
                   scalar: Any) -> tuple[Any, Any]:
    grad_type = vec_type(dimension, scalar)
    # constants made on the host, in the scalar type (2/3 must not go through float32)
    zero, half, one, two = scalar(0.0), scalar(0.5), scalar(1.0), scalar(2.0)
    three_halves, three_quarters = scalar(1.5), scalar(0.75)
    two_thirds, six = scalar(2.0 / 3.0), scalar(6.0)

    @kc.func
    def spline_1d(x: scalar, offset: int):
        # (value, slope) of the cardinal B-spline centred on a node at `offset`, at
        # distance x = coordinate - offset from it
        a = kc.abs(x)
        direction = -kc.sign(x)
        if kc.static(order == 1):
            if x == zero:  # at the node's kink: the slope seen from inside the cell
                direction = kc.where(offset > 0, one, -one)
            return one - a, direction
        elif kc.static(order == 2):
            inner = a < half
            outer = three_halves - a
            value = kc.where(inner, three_quarters - a * a,
                             kc.where(a < three_halves, half * outer * outer, zero))
            slope = kc.where(inner, two * a, kc.where(a < three_halves, outer, zero))
            return value, direction * slope
        else:
            inner = a < one
            outer = two - a
            value = kc.where(inner, (half * a - one) * a * a + two_thirds,
                             kc.where(a < two, outer * outer * outer / six, zero))
            slope = kc.where(inner, (two - three_halves * a) * a,
                             kc.where(a < two, half * outer * outer, zero))
            return value, direction * slope

    if dimension == 2:
        @kc.func
        def node_offset(node: int):
            i = node // per_dim
            return kc.vec2i(i - padding, node - per_dim * i - padding)

        @kc.func
        def weight(coords: Any, node: int):
            o = node_offset(node)
            wx, dx = spline_1d(coords[0] - scalar(o[0]), o[0])
            wy, dy = spline_1d(coords[1] - scalar(o[1]), o[1])
            return wx * wy

        @kc.func
        def weight_gradient(coords: Any, node: int):
            o = node_offset(node)
            wx, dx = spline_1d(coords[0] - scalar(o[0]), o[0])
            wy, dy = spline_1d(coords[1] - scalar(o[1]), o[1])
            return grad_type(dx * wy, wx * dy)

        return weight, weight_gradient

    @kc.func
    def node_offset_3d(node: int):
        i = node // (per_dim * per_dim)
        jk = node - per_dim * per_dim * i
        j = jk // per_dim
        return kc.vec3i(i - padding, j - padding, jk - per_dim * j - padding)

    @kc.func
    def weight_3d(coords: Any, node: int):
        o = node_offset_3d(node)
        wx, dx = spline_1d(coords[0] - scalar(o[0]), o[0])
        wy, dy = spline_1d(coords[1] - scalar(o[1]), o[1])
        wz, dz = spline_1d(coords[2] - scalar(o[2]), o[2])
        return wx * wy * wz

    @kc.func
    def weight_gradient_3d(coords: Any, node: int):
        o = node_offset_3d(node)
        wx, dx = spline_1d(coords[0] - scalar(o[0]), o[0])
        wy, dy = spline_1d(coords[1] - scalar(o[1]), o[1])
        wz, dz = spline_1d(coords[2] - scalar(o[2]), o[2])
        return grad_type(dx * wy * wz, wx * dy * wz, wx * wy * dz)

    return weight_3d, weight_gradient_3d


def make_bspline_shape(element: Element, degree: int, scalar_type: Any) -> BSplineShapeFunctions:
    """The B-spline shape functions of `degree` on `element` (squares and cubes only)."""
    if element not in (Element.SQUARE, Element.CUBE):
        raise ValueError(f"B-spline bases (ElementBasis.BSPLINE) need square or cube cells "
                         f"(Grid2D, Grid3D, Nanogrid), not {element.name} cells")
    return BSplineShapeFunctions(element, degree, scalar_type)
