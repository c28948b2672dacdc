"""`fem.ExplicitQuadrature`: the same number of points in every element, each element's
points and weights given by the caller (Warp's `warp.fem.ExplicitQuadrature`).

`points` and `weights` are (rows, points per element) arrays, one row per element of the
geometry (rows indexed by geometry element) or of the domain (by domain element), the
geometry's reading winning when both counts are equal, as in Warp. Point k of row r has
index `r * points per element + k` (`s.qp_index`). The quadrature is read as a
`PicQuadrature` whose bins all hold the same number of points, so `integrate` runs the
particle kernels (`pic_kernels.py`) and `interpolate` the particle interpolation
(`interpolate_points.py`); the arrays are read at each use, so changes to them are seen.
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.domain import GeometryDomain
from kernelc.fem.quadrature import Quadrature
from kernelc.fem.types import coords_type


class ExplicitQuadrature(Quadrature):
    """Quadrature at given points of each element.

    Args:
        domain: The domain integrated over (cells or sides).
        points: (rows, points per element) element coordinates, a `kc.array` of the
            geometry's coordinate type (`vec3` / `vec3d`).
        weights: (rows, points per element) weights, a `kc.array` of the geometry's scalar.

    Raises:
        ValueError: `points` and `weights` of different shapes.
        NotImplementedError: Rows neither the geometry's nor the domain's element count.
    """

    def __init__(self, domain: GeometryDomain, points: Any, weights: Any) -> None:
        super().__init__(domain)
        if tuple(points.shape) != tuple(weights.shape):
            raise ValueError("Points and weights arrays must have the same shape")
        rows = points.shape[0]
        if rows == domain.geometry_element_count():
            self._whole_geo = True
        elif rows == domain.element_count():
            self._whole_geo = False
        else:
            raise NotImplementedError("The number of rows of points and weights must match the "
                                      "element count of either the domain or the geometry")
        self._points, self._weights = points, weights
        self._per_element = int(points.shape[1]) if len(points.shape) > 1 else 1
        self._scalar = domain.geometry.scalar_type

    @property
    def name(self) -> str:
        return (f"ExplicitQuadrature_{self._domain.name}_{self._whole_geo}_"
                f"{self._per_element}")

    @property
    def uses_domain_element_indices(self) -> bool:
        """Whether rows are domain elements (else geometry elements)."""
        return not self._whole_geo

    def points_per_element(self) -> int:
        """Number of points in each element."""
        return self._per_element

    def max_points_per_element(self) -> int:
        """Number of points in each element."""
        return self._per_element

    def total_point_count(self) -> int:
        """Number of points (of the indexed rows)."""
        return int(np.prod(self._weights.shape))

    def evaluation_point_count(self) -> int:
        """Number of points in the domain's elements."""
        return self._domain.element_count() * self._per_element

    def cell_points(self) -> Any:
        """The (cells of the geometry, points per cell) coordinates array given, when its
        rows are the geometry's cells (else None)."""
        if not self._whole_geo or len(self._points.shape) != 2 or \
                self._domain.geometry_element_count() != self._domain.geometry.cell_count():
            return None
        return self._points

    def pic_arrays(self, device: Any = None) -> tuple:
        """(row offsets, point index, coordinates and weight of each point), as the
        particle kernels read a `PicQuadrature`'s bins."""
        n = self._per_element
        rows = int(self._points.shape[0])
        Coords = coords_type(self._scalar)
        coords = np.asarray(self._points.numpy(), dtype=kc.types.as_type(
            self._scalar).np_dtype).reshape(-1, 3)
        weights = np.asarray(self._weights.numpy()).reshape(-1)
        return (kc.array(np.arange(rows + 1, dtype=np.int32) * n, dtype=kc.int32, device=device),
                kc.array(np.arange(rows * n, dtype=np.int32), dtype=kc.int32, device=device),
                kc.array(coords, dtype=Coords, device=device),
                kc.array(weights, dtype=self._scalar, device=device))

    def run_type(self) -> type:
        """The `integrate` launches for this quadrature (`pic_kernels.PicRun`)."""
        from kernelc.fem.pic_kernels import PicRun

        return PicRun


__all__ = ["ExplicitQuadrature"]
