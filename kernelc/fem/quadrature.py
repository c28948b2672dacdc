"""Quadrature formulas over domains (Warp's `warp.fem.RegularQuadrature`): the same points
and weights in every element of the domain."""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.domain import GeometryDomain
from kernelc.fem.element import element_quadrature
from kernelc.fem.polynomial import Polynomial


class Quadrature:
    """Base class of quadrature formulas."""

    def __init__(self, domain: GeometryDomain) -> None:
        self._domain = domain

    @property
    def domain(self) -> GeometryDomain:
        """The domain integrated over."""
        return self._domain

    def index_table(self, device: Any = None) -> Any:
        """A (geometry elements, points per element) int array of the points' indices
        (`s.qp_index`), or None when they are `domain element * points per element + k`."""
        return None


class RegularQuadrature(Quadrature):
    """A tensor-product rule of `order` in every element of `domain`.

    Args:
        domain: The integration domain.
        order: Polynomial degree integrated exactly.
        family: 1-D rule (default Gauss-Legendre).
    """

    def __init__(self, domain: GeometryDomain, order: int, family: Polynomial | None = None
                 ) -> None:
        super().__init__(domain)
        self.order = order
        self.family = family
        points, weights = element_quadrature(domain.reference_element(), order, family)
        np_scalar = np.float64 if domain.geometry.scalar_type == kc.float64 else np.float32
        self.points = np.array(points, dtype=np_scalar)
        self.weights = np.array(weights, dtype=np_scalar)
        self._device_arrays: dict[str, tuple[Any, Any]] = {}

    @property
    def name(self) -> str:
        return f"RegularQuadrature_{self._domain.reference_element().name}_{self.order}_" \
               f"{self.family}"

    def points_per_element(self) -> int:
        """Number of points in each element."""
        return len(self.weights)

    def total_point_count(self) -> int:
        """Number of points in the domain."""
        return self.points_per_element() * self._domain.element_count()

    def evaluation_point_count(self) -> int:
        """Number of points evaluated (the total count)."""
        return self.total_point_count()

    def arrays(self, device: Any = None) -> tuple[Any, Any]:
        """(points, weights) as `kc.array`s on `device`."""
        key = str(kc.get_device(device))
        if key not in self._device_arrays:
            scalar = self._domain.geometry.scalar_type
            coords = self._domain.geometry.coords_type
            self._device_arrays[key] = (kc.array(self.points, dtype=coords, device=device),
                                        kc.array(self.weights, dtype=scalar, device=device))
        return self._device_arrays[key]
