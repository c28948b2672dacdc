"""One-dimensional node families and quadrature rules on [0, 1] (Warp's `warp.fem.polynomial`).

The rules are the textbook ones: Gauss-Legendre (interior points, exact for degree
2n - 1), Gauss-Lobatto-Legendre (end points included, exact for degree 2n - 3) and
Newton-Cotes on equispaced points. Points are listed in Warp's order, because sums over
quadrature points are rounded in that order.
"""

from enum import Enum
from math import sqrt

import numpy as np


class Polynomial(Enum):
    """Family of 1-D interpolation nodes."""

    GAUSS_LEGENDRE = "GL"
    LOBATTO_GAUSS_LEGENDRE = "LGL"
    EQUISPACED_CLOSED = "closed"
    EQUISPACED_OPEN = "open"

    def __str__(self) -> str:
        return self.value


def is_closed(family: Polynomial) -> bool:
    """Whether the family's nodes include both ends of the interval."""
    return family in (Polynomial.LOBATTO_GAUSS_LEGENDRE, Polynomial.EQUISPACED_CLOSED)


def _to_unit_interval(points: list[float], weights: list[float]) -> tuple[np.ndarray, np.ndarray]:
    # Rules are tabulated on [-1, 1]; elements use [0, 1].
    return 0.5 * np.asarray(points) + 0.5, 0.5 * np.asarray(weights)


def _gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    if n == 1:
        return _to_unit_interval([0.0], [2.0])
    if n == 2:
        a = sqrt(1.0 / 3.0)
        return _to_unit_interval([-a, a], [1.0, 1.0])
    if n == 3:
        a = sqrt(0.6)
        return _to_unit_interval([0.0, -a, a], [8.0 / 9.0, 5.0 / 9.0, 5.0 / 9.0])
    if n == 4:
        r = 2.0 / 7.0 * sqrt(1.2)
        a, b = sqrt(3.0 / 7.0 - r), sqrt(3.0 / 7.0 + r)
        wa, wb = (18.0 + sqrt(30.0)) / 36.0, (18.0 - sqrt(30.0)) / 36.0
        return _to_unit_interval([a, -a, b, -b], [wa, wa, wb, wb])
    if n == 5:
        r = 2.0 * sqrt(10.0 / 7.0)
        a, b = sqrt(5.0 - r) / 3.0, sqrt(5.0 + r) / 3.0
        wa, wb = (322.0 + 13.0 * sqrt(70.0)) / 900.0, (322.0 - 13.0 * sqrt(70.0)) / 900.0
        return _to_unit_interval([0.0, a, -a, b, -b], [128.0 / 225.0, wa, wa, wb, wb])
    raise NotImplementedError(f"Gauss-Legendre rules have 1 to 5 points, not {n}")


def _gauss_lobatto(n: int) -> tuple[np.ndarray, np.ndarray]:
    if n == 2:
        return _to_unit_interval([-1.0, 1.0], [1.0, 1.0])
    if n == 3:
        return _to_unit_interval([-1.0, 0.0, 1.0], [1.0 / 3.0, 4.0 / 3.0, 1.0 / 3.0])
    if n == 4:
        a = 1.0 / sqrt(5.0)
        return _to_unit_interval([-1.0, -a, a, 1.0], [1.0 / 6.0, 5.0 / 6.0, 5.0 / 6.0, 1.0 / 6.0])
    if n == 5:
        a = sqrt(3.0 / 7.0)
        return _to_unit_interval([-1.0, -a, 0.0, a, 1.0],
                                 [0.1, 49.0 / 90.0, 32.0 / 45.0, 49.0 / 90.0, 0.1])
    raise NotImplementedError(f"Gauss-Lobatto-Legendre rules have 2 to 5 points, not {n}")


_OPEN_NEWTON_COTES = {
    1: [1.0], 2: [0.5, 0.5], 3: [2.0 / 3.0, -1.0 / 3.0, 2.0 / 3.0],
    4: [11.0 / 24.0, 1.0 / 24.0, 1.0 / 24.0, 11.0 / 24.0],
    5: [11.0 / 20.0, -14.0 / 20.0, 26.0 / 20.0, -14.0 / 20.0, 11.0 / 20.0],
}

_CLOSED_NEWTON_COTES = {  # weights on [0, n - 1]
    2: [0.5, 0.5], 3: [1.0 / 3.0, 4.0 / 3.0, 1.0 / 3.0],
    4: [3.0 / 8.0, 9.0 / 8.0, 9.0 / 8.0, 3.0 / 8.0],
    5: [14.0 / 45.0, 64.0 / 45.0, 24.0 / 45.0, 64.0 / 45.0, 14.0 / 45.0],
}


def _open_newton_cotes(n: int) -> tuple[np.ndarray, np.ndarray]:
    if n not in _OPEN_NEWTON_COTES:
        raise NotImplementedError(f"open Newton-Cotes rules have 1 to 5 points, not {n}")
    step = 1.0 / (n + 1)
    return np.linspace(step, 1.0 - step, n), np.array(_OPEN_NEWTON_COTES[n])


def _closed_newton_cotes(n: int) -> tuple[np.ndarray, np.ndarray]:
    if n not in _CLOSED_NEWTON_COTES:
        raise NotImplementedError(f"closed Newton-Cotes rules have 2 to 5 points, not {n}")
    return np.linspace(0.0, 1.0, n), np.array(_CLOSED_NEWTON_COTES[n]) / (n - 1)


def quadrature_1d(point_count: int, family: Polynomial) -> tuple[np.ndarray, np.ndarray]:
    """Points and weights of a quadrature rule on [0, 1].

    Args:
        point_count: Number of points.
        family: Which rule.

    Returns:
        (points, weights) as float64 NumPy arrays.
    """
    rules = {
        Polynomial.GAUSS_LEGENDRE: _gauss_legendre,
        Polynomial.LOBATTO_GAUSS_LEGENDRE: _gauss_lobatto,
        Polynomial.EQUISPACED_CLOSED: _closed_newton_cotes,
        Polynomial.EQUISPACED_OPEN: _open_newton_cotes,
    }
    if family not in rules:
        raise NotImplementedError(f"no quadrature rule for {family}")
    return rules[family](point_count)


def lagrange_scales(coords: np.ndarray) -> np.ndarray:
    """For each node x_i, 1 / prod_{j != i} (x_i - x_j): the Lagrange basis normalisation."""
    coords = np.asarray(coords, dtype=np.float64)
    scales = np.empty_like(coords)
    for i, x in enumerate(coords):
        scales[i] = 1.0 / np.prod(np.delete(x - coords, i))
    return scales
