"""`fem.NodalQuadrature`: the nodes of a function space as quadrature points (Warp's
`warp.fem.NodalQuadrature`).

In each cell of the domain the points are the cell's nodes, in the space's node order, with
the basis' nodal quadrature weights; a point's index (`s.qp_index`) is its node's number in
the space, so a node shared by several cells is one point seen from each. Unlike
`integrate(..., assembly="nodal")` this assumes nothing of the integrand: it is an ordinary
quadrature, exact where the nodal rule is (Gauss-Lobatto nodes: degree 2k - 1 per axis).
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.domain import GeometryDomain
from kernelc.fem.quadrature import Quadrature
from kernelc.fem.types import ElementKind


class NodalQuadrature(Quadrature):
    """Quadrature at the nodes of `space` (or of `basis_space`) in the cells of `domain`.

    Args:
        domain: A domain of cells (all cells, or a subdomain of them).
        space: The function space whose nodes are the points.
        basis_space: Its basis, instead of `space`.
        space_partition: Only the whole space is supported (None).

    Raises:
        ValueError: Neither `space` nor `basis_space` given.
        NotImplementedError: A domain of sides, or a partial space partition.
    """

    def __init__(self, domain: GeometryDomain, space: Any = None, basis_space: Any = None,
                 space_partition: Any = None) -> None:
        super().__init__(domain)
        if basis_space is None:
            if space is None:
                raise ValueError("One of space, basis_space or space_partition must be "
                                 "provided")
            basis_space = space.basis
        if space_partition is not None and \
                space_partition.node_count() != basis_space.topology.node_count():
            raise NotImplementedError("NodalQuadrature over a partial space partition is not "
                                      "supported yet")
        if domain.element_kind != ElementKind.CELL:
            raise NotImplementedError("NodalQuadrature on sides is not supported yet")
        if basis_space.geometry is not domain.geometry:
            raise ValueError("The space and the domain must share their geometry")
        self._basis_space = basis_space
        shape = basis_space.shape
        np_scalar = np.float64 if domain.geometry.scalar_type == kc.float64 else np.float32
        self.points = np.asarray(shape.node_coords(), dtype=np_scalar)
        self.weights = np.asarray(shape.node_quadrature_weights(), dtype=np_scalar)
        self._device_arrays: dict[str, tuple[Any, Any]] = {}
        self._index_tables: dict[str, Any] = {}

    @property
    def name(self) -> str:
        return f"NodalQuadrature_{self._domain.name}_{self._basis_space.name}"

    def points_per_element(self) -> int:
        """Number of points in each cell: its nodes."""
        return len(self.weights)

    def max_points_per_element(self) -> int:
        """Number of points in each cell (Warp's name)."""
        return self.points_per_element()

    def total_point_count(self) -> int:
        """Number of distinct points: the space's nodes (`s.qp_index` is below it)."""
        return self._basis_space.topology.node_count()

    def evaluation_point_count(self) -> int:
        """Number of (cell, node) evaluations."""
        return self.points_per_element() * self._domain.element_count()

    def arrays(self, device: Any = None) -> tuple[Any, Any]:
        """(points, weights) as `kc.array`s on `device`."""
        key = str(kc.get_device(device))
        if key not in self._device_arrays:
            geometry = self._domain.geometry
            self._device_arrays[key] = (
                kc.array(self.points, dtype=geometry.coords_type, device=device),
                kc.array(self.weights, dtype=geometry.scalar_type, device=device))
        return self._device_arrays[key]

    def index_table(self, device: Any = None) -> Any:
        """(cells of the geometry, points per cell) ints: each point's index, its node."""
        key = str(kc.get_device(device))
        if key not in self._index_tables:
            nodes = self._basis_space.topology.host_element_nodes()
            self._index_tables[key] = kc.array(np.ascontiguousarray(nodes, dtype=np.int32),
                                               dtype=kc.int32, device=device)
        return self._index_tables[key]


__all__ = ["NodalQuadrature"]
