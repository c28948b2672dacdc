"""Reference elements and their tensor-product quadrature rules (Warp's `warp.fem.Element`).

Coordinates of a point in an element are 3-vectors whose unused components are zero:
(x, 0, 0) on a segment, (x, y, 0) on a square, (x, y, z) on a cube, each in [0, 1];
barycentric (l0, l1, l2) on a triangle; (l1, l2, l3) on a tetrahedron (l0 = 1 - l1 - l2 - l3),
as in Warp.
"""

from enum import IntEnum

from kernelc.fem.polynomial import Polynomial, quadrature_1d


class Element(IntEnum):
    """Kinds of reference element."""

    LINE_SEGMENT = 1
    SQUARE = 2
    CUBE = 3
    TRIANGLE = 4
    TETRAHEDRON = 5

    @property
    def dimension(self) -> int:
        """Intrinsic dimension of the element."""
        return {1: 1, 2: 2, 3: 3, 4: 2, 5: 3}[int(self)]

    @property
    def measure(self) -> float:
        """Measure of the reference element (1 for segments, squares and cubes)."""
        return {4: 0.5, 5: 1.0 / 6.0}.get(int(self), 1.0)

    @property
    def center(self) -> tuple[float, float, float]:
        """Coordinates of the reference element's centre."""
        return {1: (0.5, 0.0, 0.0), 2: (0.5, 0.5, 0.0), 3: (0.5, 0.5, 0.5),
                4: (1.0 / 3.0,) * 3, 5: (0.25,) * 3}[int(self)]


class ElementPrototype:
    """Warp's `Element.X.prototype`: the reference element's properties as methods."""

    def __init__(self, element: Element) -> None:
        self._element = element

    def measure(self) -> float:
        return self._element.measure

    def center(self) -> tuple[float, float, float]:
        return self._element.center

    @property
    def dimension(self) -> int:
        return self._element.dimension

    def __repr__(self) -> str:
        return f"ElementPrototype({self._element.name})"


def _prototype(self: Element) -> ElementPrototype:
    return ElementPrototype(self)


Element.prototype = property(_prototype, doc="The reference element as Warp's prototype "
                             "object (`measure()`, `center()`, `dimension`).")


def points_per_axis(order: int, family: Polynomial) -> int:
    """Fewest points of a 1-D rule of `family` that integrates polynomials of `order` exactly."""
    if family == Polynomial.GAUSS_LEGENDRE:
        return max(1, order // 2 + 1)
    if family == Polynomial.LOBATTO_GAUSS_LEGENDRE:
        return max(2, order // 2 + 2)
    if family == Polynomial.EQUISPACED_CLOSED:
        return max(2, 2 * (order // 2) + 1)
    return max(1, 2 * (order // 2) + 1)


def element_quadrature(element: Element, order: int, family: Polynomial | None = None
                       ) -> tuple[list[tuple[float, float, float]], list[float]]:
    """Points (as coordinate triples) and weights of the rule of `order` on `element`.

    Args:
        element: A segment, square, cube, triangle or tetrahedron.
        order: Polynomial degree integrated exactly.
        family: 1-D rule (default Gauss-Legendre; on simplices the default is the
            symmetric rule of the order, a family gives a Duffy-mapped tensor rule).

    Returns:
        (points, weights), in Warp's order (tensor rules: the last axis fastest); weights
        sum to 1.
    """
    if element in (Element.TRIANGLE, Element.TETRAHEDRON):
        from kernelc.fem.simplex_quadrature import tetrahedron_quadrature, triangle_quadrature

        rule = triangle_quadrature if element == Element.TRIANGLE else tetrahedron_quadrature
        return rule(order, family)
    if family is None:
        family = Polynomial.GAUSS_LEGENDRE
    if element not in (Element.LINE_SEGMENT, Element.SQUARE, Element.CUBE):
        raise NotImplementedError(f"quadrature on {element.name} elements is not supported yet")
    x, w = quadrature_1d(points_per_axis(order, family), family)
    x, w = [float(v) for v in x], [float(v) for v in w]
    if element == Element.LINE_SEGMENT:
        return [(a, 0.0, 0.0) for a in x], list(w)
    if element == Element.SQUARE:
        return ([(a, b, 0.0) for a in x for b in x], [wa * wb for wa in w for wb in w])
    return ([(a, b, c) for a in x for b in x for c in x],
            [wa * wb * wc for wa in w for wb in w for wc in w])
