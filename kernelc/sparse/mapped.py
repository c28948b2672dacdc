"""Triplet maps (Warp's `BsrTripletMap`): the triplet-to-block mapping of one
`bsr_set_from_triplets` call, kept so that later value updates skip the topology work
(`bsr_set_from_mapped_values`); and masked triplet assembly (`topology="masked"`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.runtime.array import array
from kernelc.runtime.device import Device
from kernelc.sparse import kernels as K
from kernelc.sparse.matrix import BsrMatrix, host_active_blocks, scalar_view, zero_values
from kernelc.sparse.padded import int_array


class BsrTripletMap:
    """Reusable mapping from COO triplets to the blocks of a matrix (Warp's
    `warp.sparse.BsrTripletMap`).

    Build it with `bsr_set_from_triplets(..., build_mapping=True)` (or pass an existing map
    to rebuild it in place), then update the matrix's values with
    `bsr_set_from_mapped_values`. The matrix's topology must not change in between; its
    values may.

    Args:
        capacity: Number of triplets to preallocate storage for.
        device: Device of the storage.
    """

    def __init__(self, capacity: int = 0, device: Any = None) -> None:
        self.triplet_count = 0
        self._device = kc.get_device(device)
        self._capacity = int(capacity)
        self._block_ends = self._triplet_indices = self._triplet_blocks = self._slots = None
        self._storage: dict[str, array] = {}  # capacity-sized arrays the maps are views of
        self._dest_key: tuple | None = None

    @property
    def device(self) -> Device:
        """Device of the map's storage."""
        return self._device

    @property
    def capacity(self) -> int:
        """Number of triplets the map holds without growing."""
        return self._capacity

    def bind(self, dest: BsrMatrix, triplet_count: int, order: np.ndarray,
             block_ends: np.ndarray) -> None:
        """Records the mapping of `triplet_count` triplets onto dest's blocks: block b sums
        triplets `order[block_ends[b - 1]:block_ends[b]]`."""
        self.triplet_count = int(triplet_count)
        self._capacity = max(self._capacity, self.triplet_count)
        blocks = np.full(self.triplet_count, -1, np.int64)
        blocks[order] = np.repeat(np.arange(len(block_ends)),
                                  np.diff(np.concatenate([[0], block_ends])))
        self._block_ends = self._stored("block_ends", block_ends)
        self._triplet_indices = self._stored("triplet_indices", order)
        self._triplet_blocks = self._stored("triplet_blocks", blocks)
        self._slots = self._stored("slots", np.arange(len(block_ends)))
        self._dest_key = _topology_key(dest)

    def _stored(self, name: str, values: np.ndarray) -> array:
        """`values` in the map's storage for `name` (reused while the capacity suffices,
        so that a preallocated map keeps its memory), as a view of their length."""
        storage = self._storage.get(name)
        if storage is None or storage.shape[0] < len(values):
            storage = kc.empty(max(self._capacity, len(values)), dtype=kc.int32,
                               device=self._device)
            self._storage[name] = storage
        if len(values):
            kc.copy(storage, int_array(values, self._device), count=len(values))
        return storage[: len(values)]

    def validate(self, dest: BsrMatrix) -> None:
        """Raises ValueError if dest's size or topology arrays are not those the map was
        built for (the arrays' contents are not compared)."""
        if self._dest_key is None:
            raise ValueError("The triplet map has not been built; pass it to "
                             "bsr_set_from_triplets() first")
        if _topology_key(dest) != self._dest_key:
            raise ValueError("Destination BSR topology storage differs from that used to "
                             "build the triplet map")


def _topology_key(dest: BsrMatrix) -> tuple:
    row_counts = 0 if dest.row_counts is None else dest.row_counts.ptr
    return (dest.nrow, dest.ncol, dest.offsets.ptr, dest.columns.ptr, row_counts)


def resolve_mapping(build_mapping: Any, dest: BsrMatrix, topology: str,
                    prune_numerical_zeros: bool) -> BsrTripletMap | None:
    """The map `bsr_set_from_triplets(..., build_mapping=...)` fills, or None."""
    if build_mapping is None or build_mapping is False:
        return None
    if build_mapping is True:
        mapping = BsrTripletMap(device=dest.device)
    elif isinstance(build_mapping, BsrTripletMap):
        mapping = build_mapping
        if mapping.device != dest.device:
            raise ValueError(f"Mapping and destination must reside on the same device, got "
                             f"{mapping.device} and {dest.device}")
    else:
        raise TypeError(f"build_mapping must be None, a bool or a BsrTripletMap, got "
                        f"{type(build_mapping)}")
    if topology != "compact":
        raise ValueError('build_mapping requires topology="compact"')
    if prune_numerical_zeros:
        raise ValueError("build_mapping requires prune_numerical_zeros=False")
    return mapping


def triplet_values_3d(values: array, dest: BsrMatrix) -> array:
    """Triplet values as a (n, block rows, block columns) scalar array."""
    return scalar_view(values, dest.scalar_type, (values.shape[0], *dest.block_shape))


def set_masked_from_triplets(dest: BsrMatrix, rows: np.ndarray, cols: np.ndarray,
                             values: array | None) -> None:
    """dest's values become the sums of the triplets at its own blocks; other triplets are
    dropped and dest's topology is kept. Triplets are added in input order, to zero."""
    zero_values(dest.values)
    if values is None or len(rows) == 0:
        return
    active_rows, active_cols, slots = host_active_blocks(dest)
    ncol = max(dest.ncol, 1)
    keys = active_rows.astype(np.int64) * ncol + active_cols
    sort = np.argsort(keys, kind="stable")
    valid = (rows >= 0) & (rows < dest.nrow) & (cols >= 0) & (cols < dest.ncol)
    triplet_keys = np.where(valid, rows.astype(np.int64) * ncol + cols, -1)
    found = np.searchsorted(keys[sort], triplet_keys)
    found = np.minimum(found, max(len(keys) - 1, 0))
    hit = valid & (len(keys) > 0)
    if len(keys):
        hit &= keys[sort][found] == triplet_keys
    blocks = np.where(hit, slots[sort][found] if len(keys) else -1, -1)
    kc.launch(K.atomic_add_blocks_kernel, dim=(len(rows), *dest.block_shape),
              device=dest.device,
              inputs=[int_array(blocks, dest.device), triplet_values_3d(values, dest),
                      dest.scalar_values])


def bsr_set_from_mapped_values(dest: BsrMatrix, mapping: BsrTripletMap, values: array,
                               reduction: str = "gather") -> None:
    """Sets dest's values from new triplet values through a map built by
    `bsr_set_from_triplets(..., build_mapping=...)` (Warp's
    `warp.sparse.bsr_set_from_mapped_values`); no topology work.

    Args:
        dest: The matrix the map was built for.
        mapping: The map.
        values: One value per mapped triplet: a contiguous 1-d array of dest's block type
            or (n, block rows, block columns) array of its scalar type.
        reduction: `"gather"` sums each block's triplets in `bsr_set_from_triplets`'s
            order (same results, bit for bit); `"atomic"` adds triplets to zeroed blocks
            (in triplet order on the CPU, in any order on CUDA).

    Raises:
        TypeError: `mapping` is not a `BsrTripletMap`.
        ValueError: A map built for another topology, values of the wrong count, type,
            shape or device, or an unknown `reduction`.
    """
    if not isinstance(mapping, BsrTripletMap):
        raise TypeError("Mapping must be a BsrTripletMap")
    mapping.validate(dest)
    if values.device != dest.device:
        raise ValueError(f"Values and destination must reside on the same device, got "
                         f"{values.device} and {dest.device}")
    if values.shape[0] != mapping.triplet_count:
        raise ValueError(f"Values must contain {mapping.triplet_count} triplets, got first "
                         f"dimension {values.shape[0]}")
    if not values.is_contiguous:
        raise ValueError("Values array must be contiguous")
    if values.ndim == 1:
        if values.dtype != dest.values.dtype:
            raise ValueError(f"Values array type must correspond to the destination block "
                             f"type, got {values.dtype!r} and {dest.values.dtype!r}")
    elif values.ndim == 3:
        if tuple(values.shape[1:]) != dest.block_shape or values.dtype != dest.scalar_type:
            raise ValueError(f"Values trailing shape and scalar type must match destination "
                             f"blocks {dest.block_shape} of {dest.scalar_type!r}")
    else:
        raise ValueError(f"Number of dimensions for values must be one or three, got "
                         f"{values.ndim}")
    if reduction not in ("gather", "atomic"):
        raise ValueError(f"Unsupported mapped reduction '{reduction}', expected 'gather' or "
                         f"'atomic'")
    values_3d = triplet_values_3d(values, dest)
    if reduction == "gather":
        block_count = mapping._block_ends.shape[0]
        if block_count:
            kc.launch(K.sum_blocks_kernel, dim=(block_count, *dest.block_shape),
                      device=dest.device,
                      inputs=[mapping._block_ends, mapping._triplet_indices, values_3d, mapping._slots,
                              dest.scalar_values, dest.scalar_type(0), 0])
        return
    # Only the mapped blocks are cleared: slots past them (spare capacity) keep their values.
    block_count = mapping._block_ends.shape[0]
    if block_count:
        zero_values(dest.values[:block_count])
    if mapping.triplet_count:
        kc.launch(K.atomic_add_blocks_kernel, dim=(mapping.triplet_count, *dest.block_shape),
                  device=dest.device,
                  inputs=[mapping._triplet_blocks, values_3d, dest.scalar_values])
