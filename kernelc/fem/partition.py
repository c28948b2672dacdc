"""Geometry partitions: a subset of the cells of a geometry, and the sides it owns (Warp's
`warp.fem.GeometryPartition`, `LinearGeometryPartition`, `ExplicitGeometryPartition`), and
`FrontierSides`, the sides between a partition and the rest of the geometry.

A partition is made of cells; as in Warp, it owns the sides whose inner cell it holds
(its boundary sides are those of them on the geometry's boundary) and its frontier sides
are those with exactly one of their two cells in it. All of them are listed by increasing
index in the geometry, computed on the host with NumPy; domains over a partition
(`Cells(partition)`, `Sides(partition)`, `BoundarySides(partition)`) take their elements
from these lists and everything else from the geometry, so they share the geometry's
compiled kernels.
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.geometry import Geometry
from kernelc.fem.types import NULL_ELEMENT_INDEX


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.int32)
    a.setflags(write=False)
    return a


class GeometryPartition:
    """Base of geometry partitions: some cells of `geometry`, and the sides they own."""

    def __init__(self, geometry: Geometry) -> None:
        if not isinstance(geometry, Geometry):
            raise TypeError(f"a geometry partition needs a geometry, got {type(geometry).__name__}")
        self.geometry = geometry

    @property
    def name(self) -> str:
        """The geometry's name, then the partition kind (as Warp names it)."""
        return f"{self.geometry.name}_{type(self).__name__}"

    def __str__(self) -> str:
        return self.name

    def cell_count(self) -> int:
        """Number of cells in the partition."""
        return len(self.host_element_indices("cells"))

    def side_count(self) -> int:
        """Number of sides the partition owns (those whose inner cell it holds)."""
        return len(self.host_element_indices("sides"))

    def boundary_side_count(self) -> int:
        """Number of the partition's sides on the geometry's boundary."""
        return len(self.host_element_indices("boundary_sides"))

    def frontier_side_count(self) -> int:
        """Number of sides with one cell in the partition and the other outside."""
        return len(self.host_element_indices("frontier_sides"))

    def host_element_indices(self, kind: str) -> np.ndarray:
        """Geometry indices (int32, increasing, read-only) of the partition's "cells",
        "sides", "boundary_sides" or "frontier_sides"."""
        raise NotImplementedError

    def cell_indices(self) -> Any:
        """The partition's cells as geometry cell indices, a `kc.array` of int."""
        return kc.array(self.host_element_indices("cells"), dtype=kc.int32)

    def partition_cell_indices(self) -> Any:
        """Each geometry cell's index in the partition, or `NULL_ELEMENT_INDEX` (-1)."""
        out = np.full(self.geometry.cell_count(), NULL_ELEMENT_INDEX, dtype=np.int32)
        cells = self.host_element_indices("cells")
        out[cells] = np.arange(len(cells), dtype=np.int32)
        return kc.array(out, dtype=kc.int32)


class CellBasedGeometryPartition(GeometryPartition):
    """A partition given by a set of cells; its sides follow from the cells (Warp's
    `CellBasedGeometryPartition`)."""

    def _set_cells(self, cell_mask: np.ndarray) -> None:
        """Takes the cells where `cell_mask` (one bool per geometry cell) is set."""
        geo = self.geometry
        sides = np.arange(geo.side_count())
        inner, outer = geo.side_cells(sides)
        inner_in, outer_in = cell_mask[inner], cell_mask[outer]
        self._elements = {
            "cells": _readonly(np.flatnonzero(cell_mask)),
            "sides": _readonly(sides[inner_in]),
            "boundary_sides": _readonly(sides[inner_in & (inner == outer)]),
            "frontier_sides": _readonly(sides[inner_in != outer_in]),
        }

    def host_element_indices(self, kind: str) -> np.ndarray:
        return self._elements[kind]


class LinearGeometryPartition(CellBasedGeometryPartition):
    """Rank `partition_rank` of `partition_count` partitions of the cells in index order,
    each of ceil(cells / count) consecutive cells (the last one fewer), as Warp cuts them.

    Args:
        geometry: The geometry to partition.
        partition_rank: Which partition, from 0 to `partition_count - 1`.
        partition_count: Number of partitions.
        device: Accepted for Warp's sake.
        temporary_store: Accepted for Warp's sake.

    Raises:
        ValueError: A rank outside [0, partition_count), or no partitions.
    """

    def __init__(self, geometry: Geometry, partition_rank: int, partition_count: int,
                 device: Any = None, temporary_store: Any = None) -> None:
        super().__init__(geometry)
        if partition_count < 1 or not 0 <= partition_rank < partition_count:
            raise ValueError(f"partition rank {partition_rank} is not in [0, {partition_count})")
        total = geometry.cell_count()
        per_partition = (total + partition_count - 1) // partition_count
        self.cell_begin = min(per_partition * partition_rank, total)
        self.cell_end = min(self.cell_begin + per_partition, total)
        mask = np.zeros(total, dtype=bool)
        mask[self.cell_begin:self.cell_end] = True
        self._set_cells(mask)


class ExplicitGeometryPartition(CellBasedGeometryPartition):
    """The cells selected by a mask (Warp's `ExplicitGeometryPartition`).

    Args:
        geometry: The geometry to partition.
        cell_mask: One int per geometry cell, 1 to take the cell, 0 to leave it (a
            `kc.array`, read back to the host).
        max_cell_count: Accepted for Warp's sake (counts are exact here).
        max_side_count: Accepted for Warp's sake.
        temporary_store: Accepted for Warp's sake.

    Raises:
        ValueError: A mask without one entry per cell.
    """

    def __init__(self, geometry: Geometry, cell_mask: Any, max_cell_count: int = -1,
                 max_side_count: int = -1, temporary_store: Any = None) -> None:
        super().__init__(geometry)
        self.rebuild(cell_mask)

    def rebuild(self, cell_mask: Any, temporary_store: Any = None) -> None:
        """Takes the cells of a new mask. Domains over the partition see the new cells;
        space partitions made before keep the old ones (make new ones)."""
        mask = cell_mask.numpy() if isinstance(cell_mask, kc.array) else np.asarray(cell_mask)
        if mask.shape != (self.geometry.cell_count(),):
            raise ValueError(f"cell_mask must have one entry per cell "
                             f"({self.geometry.cell_count()}), got shape {mask.shape}")
        self._set_cells(mask != 0)


def partition_elements(geometry_partition: Any, kind: str) -> np.ndarray | None:
    """The elements of `kind` of a partition, or None for a whole geometry (a domain's
    `geometry_partition` is its geometry when it has no partition)."""
    if isinstance(geometry_partition, GeometryPartition):
        return geometry_partition.host_element_indices(kind)
    return None


__all__ = ["CellBasedGeometryPartition", "ExplicitGeometryPartition", "GeometryPartition",
           "LinearGeometryPartition", "partition_elements"]
