"""Index helpers of Warp's `warp.fem.utils`: checking indices against a bound
(`validate_indices_in_range`, `check_first_invalid_index`), reading one element back
(`host_read_at_index`), and grouping array entries by node (`compress_node_indices`).

Grouping sorts on the host with NumPy (a stable sort, so the entries of a node keep their
array order, as Warp's radix sort keeps them) and writes into the caller's arrays when they
have the right shapes, as Warp does.
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.cache import borrow_temporary
from kernelc.fem.types import NULL_NODE_INDEX


@kc.kernel(enable_backward=False)
def _first_invalid_index(upper_bound: int, indices: kc.array(dtype=int),
                         first_invalid: kc.array(dtype=int)):
    i = kc.tid()
    index = indices[i]
    if index < 0 or index >= upper_bound:
        kc.atomic_min(first_invalid, 0, i)


def validate_indices_in_range(upper_bound: int, indices: Any, index_name: str,
                              temporary_store: Any = None) -> None:
    """Raises ValueError if an entry of `indices` lies outside [0, upper_bound), naming the
    first such entry (its value and flattened position) with `index_name`."""
    count = indices.size
    if count == 0:
        return
    first_invalid = kc.full(1, count, dtype=int, device=indices.device)
    kc.launch(_first_invalid_index, count, [int(upper_bound), indices.flatten(), first_invalid],
              device=indices.device)
    check_first_invalid_index(first_invalid, upper_bound, indices, index_name)


def check_first_invalid_index(first_invalid: Any, upper_bound: int, indices: Any,
                              index_name: str) -> None:
    """Raises ValueError if `first_invalid` (one entry: the smallest flattened position of
    an index outside [0, upper_bound), `indices.size` if none) names an entry of
    `indices`."""
    position = int(host_read_at_index(first_invalid, 0))
    if position < indices.size:
        value = int(host_read_at_index(indices.flatten(), position))
        raise ValueError(f"{index_name} index {value} at flattened array index {position} is "
                         f"out of bounds; expected a value in [0, {upper_bound})")


def host_read_at_index(array: Any, index: int = -1, temporary_store: Any = None) -> Any:
    """The element `index` of a 1-d array (negative: from the end), read back to the host."""
    if index < 0:
        index += array.shape[0]
    return array[index:index + 1].numpy()[0]


def compress_node_indices(node_count: int, node_indices: Any, return_unique_nodes: bool = False,
                          node_offsets: Any = None, sorted_array_indices: Any = None,
                          unique_node_count: Any = None, unique_node_indices: Any = None,
                          temporary_store: Any = None) -> tuple:
    """Groups the entries of `node_indices` (1-d, or one row of nodes per element) by node.

    Returns `(node_offsets, sorted_array_indices)`: node n's entries are
    `sorted_array_indices[node_offsets[n]:node_offsets[n + 1]]`, each the entry's array (or
    element) index. With `return_unique_nodes`, also `unique_node_count` (one entry) and
    `unique_node_indices` (the nodes that have entries, ascending, then NULL_NODE_INDEX).
    Indices outside [0, node_count) are left out. Arrays passed in with the right shapes
    ((node_count + 1,), (2 * entries,), (1,), (entries,)) receive the results.
    """
    device = node_indices.device
    flat = node_indices.numpy().reshape(-1).astype(np.int64)
    per_element = 1 if node_indices.ndim == 1 else node_indices.shape[-1]
    count = flat.size
    valid = (flat >= 0) & (flat < node_count)
    keys = np.where(valid, flat, NULL_NODE_INDEX)
    order = np.argsort(keys, kind="stable")
    sorted_entries = np.zeros(2 * count, dtype=np.int32)  # Warp's sort needs twice the room
    sorted_entries[:count] = order // per_element
    counts = np.bincount(flat[valid], minlength=node_count)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    node_offsets = _into(node_offsets, offsets, temporary_store, device)
    sorted_array_indices = _into(sorted_array_indices, sorted_entries, temporary_store, device)
    if not return_unique_nodes:
        return node_offsets, sorted_array_indices
    unique = np.flatnonzero(counts).astype(np.int32)
    padded = np.full(count, NULL_NODE_INDEX, dtype=np.int32)
    padded[:len(unique)] = unique
    unique_node_count = _into(unique_node_count, np.array([len(unique)], dtype=np.int32),
                              temporary_store, device)
    unique_node_indices = _into(unique_node_indices, padded, temporary_store, device)
    return node_offsets, sorted_array_indices, unique_node_count, unique_node_indices


def _into(out: Any, values: np.ndarray, temporary_store: Any, device: Any) -> Any:
    """`values` copied into `out` if it has their shape, else into a new temporary."""
    if out is None or tuple(out.shape) != values.shape:
        out = borrow_temporary(temporary_store, shape=values.shape, dtype=int, device=device)
    if values.size:
        kc.copy(out, kc.array(values, dtype=int, device=device))
    return out
