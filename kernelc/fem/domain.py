"""Integration domains: all cells, all sides, boundary sides (Warp's `warp.fem.Cells`,
`Sides`, `BoundarySides`).

A domain is a list of geometry elements (cells or sides). Kernels receive the geometry
argument of that element kind (`ElementArg`) and the domain's element funcs; which elements
belong to the domain is a host-side index array (`element_indices()`).
"""

from functools import cached_property
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.geometry import Geometry
from kernelc.fem.partition import GeometryPartition, partition_elements
from kernelc.fem.types import ElementKind, sample_type


class GeometryDomain:
    """A set of elements of a geometry (Warp's `warp.fem.GeometryDomain`)."""

    def __init__(self, geometry: Geometry) -> None:
        if isinstance(geometry, GeometryPartition):  # the partition's elements only
            self.geometry = geometry.geometry
            self.geometry_partition = geometry
            return
        if not isinstance(geometry, Geometry):
            raise TypeError(f"a domain needs a geometry or a geometry partition, got "
                            f"{type(geometry).__name__}")
        self.geometry = geometry
        self.geometry_partition = geometry

    @property
    def name(self) -> str:
        """Identifies the domain kind (equal names share compiled kernels)."""
        return f"{self.geometry.name}_{type(self).__name__}"

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return (type(self) is type(other) and self.geometry is other.geometry
                and self.geometry_partition is other.geometry_partition)

    def __hash__(self) -> int:
        return hash((type(self), id(self.geometry), id(self.geometry_partition)))

    element_kind: ElementKind

    @property
    def dimension(self) -> int:
        """Dimension of the domain's elements."""
        return self.reference_element().dimension

    @property
    def sample_type(self) -> Any:
        return sample_type(self.geometry.scalar_type)

    def reference_element(self) -> Element:
        """Kind of the domain's elements."""
        raise NotImplementedError

    def element_count(self) -> int:
        """Number of elements in the domain."""
        raise NotImplementedError

    def geometry_element_count(self) -> int:
        """Number of elements of this kind in the geometry."""
        raise NotImplementedError

    def element_indices(self) -> np.ndarray:
        """Geometry index of each domain element (int32, read-only)."""
        raise NotImplementedError

    def element_arg_value(self, device: Any = None) -> Any:
        """The `ElementArg` instance for kernels."""
        raise NotImplementedError

    # Device funcs (args, s) -> value, set by subclasses from the geometry's.
    element_position: Any
    element_deformation_gradient: Any
    element_measure: Any
    element_measure_ratio: Any
    element_normal: Any
    element_lookup: Any = None  # (args, position) -> Sample; cells only
    ElementArg: Any


class Cells(GeometryDomain):
    """Every cell of a geometry."""

    element_kind = ElementKind.CELL

    def __init__(self, geometry: Geometry) -> None:
        super().__init__(geometry)
        g = self.geometry
        self.ElementArg = g.CellArg
        self.element_position = g.cell_position
        self.element_deformation_gradient = g.cell_deformation_gradient
        self.element_inverse_deformation_gradient = g.cell_inverse_deformation_gradient
        self.element_measure = g.cell_measure
        self.element_measure_ratio = _unit_ratio(g.scalar_type)
        self.element_normal = g.cell_normal
        self.element_lookup = getattr(g, "cell_lookup", None)

    def reference_element(self) -> Element:
        return self.geometry.reference_cell()

    def element_count(self) -> int:
        return len(self.element_indices())

    def geometry_element_count(self) -> int:
        return self.geometry.cell_count()

    def element_indices(self) -> np.ndarray:
        part = partition_elements(self.geometry_partition, "cells")
        return _arange(self.geometry.cell_count()) if part is None else part

    def element_arg_value(self, device: Any = None) -> Any:
        return self.geometry.cell_arg_value(device)


class Sides(GeometryDomain):
    """Every side of a geometry, interior and boundary."""

    element_kind = ElementKind.SIDE

    def __init__(self, geometry: Geometry) -> None:
        super().__init__(geometry)
        g = self.geometry
        self.ElementArg = g.SideArg
        self.element_position = g.side_position
        self.element_deformation_gradient = g.side_deformation_gradient
        self.element_measure = g.side_measure
        self.element_measure_ratio = g.side_measure_ratio
        self.element_normal = g.side_normal

    def reference_element(self) -> Element:
        return self.geometry.reference_side()

    def element_count(self) -> int:
        return len(self.element_indices())

    def geometry_element_count(self) -> int:
        return self.geometry.side_count()

    def element_indices(self) -> np.ndarray:
        part = partition_elements(self.geometry_partition, "sides")
        return _arange(self.geometry.side_count()) if part is None else part

    def element_arg_value(self, device: Any = None) -> Any:
        return self.geometry.side_arg_value(device)


class BoundarySides(Sides):
    """The sides on the boundary of a geometry, in the geometry's boundary order (those of
    a partition by side index, as in Warp)."""

    def element_count(self) -> int:
        return len(self.element_indices())

    @cached_property
    def _indices(self) -> np.ndarray:
        indices = np.ascontiguousarray(self.geometry.boundary_side_indices(), dtype=np.int32)
        indices.setflags(write=False)
        return indices

    def element_indices(self) -> np.ndarray:
        part = partition_elements(self.geometry_partition, "boundary_sides")
        return self._indices if part is None else part


class FrontierSides(Sides):
    """The sides with one cell in a geometry partition and the other outside it, by side
    index (none on a whole geometry), as Warp's `FrontierSides`."""

    def element_indices(self) -> np.ndarray:
        part = partition_elements(self.geometry_partition, "frontier_sides")
        return _arange(0) if part is None else part


def cells_of_domain(domain: GeometryDomain) -> tuple[GeometryDomain, Any]:
    """`fem.cells(domain)`: the cells of the domain's geometry, and the func mapping the
    domain's element argument to theirs (None for a domain of cells)."""
    if domain.element_kind == ElementKind.CELL:
        return domain, None
    return Cells(domain.geometry), domain.geometry.side_to_cell_arg


def _arange(n: int) -> np.ndarray:
    a = np.arange(n, dtype=np.int32)
    a.setflags(write=False)
    return a


_RATIO_FUNCS: dict[Any, Any] = {}


def _unit_ratio(scalar: Any) -> Any:
    # The measure ratio of a cell to itself, one func per scalar type.
    if scalar not in _RATIO_FUNCS:
        @kc.func
        def cell_measure_ratio(arg: Any, s: Any):
            return scalar(1.0)

        _RATIO_FUNCS[scalar] = cell_measure_ratio
    return _RATIO_FUNCS[scalar]


__all__ = ["BoundarySides", "Cells", "FrontierSides", "GeometryDomain", "Sides"]
