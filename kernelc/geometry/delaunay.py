"""Triangle adjacency and Delaunay edge flips (Warp's `tri_tri_adjacency`,
`delaunay_edge_flip`; the kernel API `find_triangle_neighbor_edge_index`).

Both work on the indices' device. `tri_tri_adjacency` pairs the half-edges of each edge
in a fixed order, so non-manifold and degenerate input get Warp's (single-threaded CPU)
answer on every device. `delaunay_edge_flip` flips an independent set of edges per pass
until no edge wants to flip; its convergence loop is a `kc.capture_while`, so it can be
recorded in a CPU graph capture. The kernels are in `delaunay_lang.py`.
"""

from __future__ import annotations

import math
import numbers
import threading
from typing import Any

import kernelc as kc
from kernelc import types as T
from kernelc.geometry import delaunay_lang as L
from kernelc.runtime.array import array
from kernelc.runtime.context import get_runtime


class GeometryTypeError(RuntimeError, TypeError):
    """An argument of the wrong type or dtype. Warp reports these from its launch as a
    `RuntimeError`; kernelc raises one before any kernel runs, and it is a `TypeError`
    too."""


def _check_array(value: Any, name: str, dtype: Any, ndim: int) -> None:
    if not isinstance(value, array):
        raise GeometryTypeError(f"'{name}' must be a kc.array of {dtype!r}, got "
                                f"{type(value).__name__}")
    if value.dtype != dtype:
        raise GeometryTypeError(f"'{name}' must have dtype {dtype!r}, got {value.dtype!r}")
    if value.ndim != ndim:
        raise ValueError(f"'{name}' must be a {ndim}-d array, got ndim {value.ndim} "
                         f"(shape {value.shape})")


def _check_indices(indices: Any) -> None:
    if isinstance(indices, array) and (indices.ndim != 2 or indices.shape[1] != 3):
        raise ValueError("indices must be a (num_tris, 3) array of triangle vertex indices, "
                         f"got shape {indices.shape}")
    _check_array(indices, "indices", T.int32, 2)


def _capturing(device: Any) -> bool:
    """Whether launches on `device` from this thread are being recorded into a graph."""
    if device.is_cuda:
        from kernelc.runtime.device import cuda_runtime

        return bool(cuda_runtime().device_info(device).capturing)
    capture = get_runtime().extras.get("capture")
    return capture is not None and capture.thread == threading.get_ident()


def _launch(kernel: Any, dim: int, args: list[Any], device: Any) -> None:
    kc.launch(kernel, dim=dim, inputs=args, device=device, record_tape=False)


def _check_vertex_count(vertex_count: Any) -> int | None:
    if vertex_count is None:
        return None
    if not isinstance(vertex_count, numbers.Integral) or isinstance(vertex_count, bool):
        raise GeometryTypeError(f"vertex_count must be an int or None, got "
                                f"{type(vertex_count).__name__}")
    if vertex_count < 0 or vertex_count >= 2 ** 31 - 1:
        raise ValueError(f"vertex_count must be in [0, 2**31 - 1), got {vertex_count}")
    return int(vertex_count)


def _infer_vertex_count(indices: array) -> int:
    if _capturing(indices.device):
        raise RuntimeError("tri_tri_adjacency needs vertex_count inside a graph capture "
                           "(inferring it reads the indices back to the host)")
    largest = kc.zeros(1, dtype=T.int32, device=indices.device)
    _launch(L.max_vertex_index, indices.shape[0], [indices, largest], indices.device)
    return int(largest.numpy()[0]) + 1


def tri_tri_adjacency(indices: array, vertex_count: int | None = None,
                      return_neighbor_edge_indices: bool = True) -> array | tuple[array, array]:
    """The triangle across each edge of a triangle mesh.

    Meant for edge-manifold meshes, possibly with boundary (one or two triangles on each
    edge); the triangles need not be wound consistently. Edge `j` of a triangle joins its
    local vertices `(j + 1) % 3` and `(j + 2) % 3`. The half-edges of one edge are paired
    in order of `3 * triangle + j`: on an edge shared by more than two triangles, the
    first two are neighbours, then the next two, and an odd one out is a boundary edge.
    A triangle with a repeated vertex has an edge from that vertex to itself and may be
    its own neighbour. Edges with an endpoint outside `[0, vertex_count)` are boundary
    edges (Warp's behaviour is undefined there).

    Args:
        indices (array): `(num_tris, 3)` `int32` vertex indices (a `kc.array2d`).
        vertex_count (int | None): The number of vertices; None infers one plus the largest index (a read back to the host, so it cannot be None inside a graph capture).
        return_neighbor_edge_indices (bool): Also return, per edge, the local index of the same edge in the neighbouring triangle.

    Returns:
        `(triangle_neighbors, neighbor_edge_indices)`, or `triangle_neighbors` alone when
        `return_neighbor_edge_indices` is False: `(num_tris, 3)` `int32` arrays on the
        indices' device. `triangle_neighbors[t, j]` is the triangle across edge `j` of `t`,
        or -1 on a boundary edge; `neighbor_edge_indices[t, j]` is that edge's local index
        in the neighbour (-1 on a boundary edge).

    Raises:
        ValueError: `indices` is not `(num_tris, 3)`, or `vertex_count` is negative.
        TypeError: `indices` is not an `int32` `kc.array` (as `GeometryTypeError`, also a RuntimeError as in Warp).
        RuntimeError: `vertex_count` is None inside a graph capture.
    """
    _check_indices(indices)
    count = _check_vertex_count(vertex_count)
    device = indices.device
    num_tris = indices.shape[0]
    with_edges = bool(return_neighbor_edge_indices)
    neighbors = kc.full((num_tris, 3), -1, dtype=T.int32, device=device)
    edge_indices = kc.full((num_tris if with_edges else 0, 3), -1, dtype=T.int32,
                           device=device)
    if num_tris > 0:
        if count is None:
            count = _infer_vertex_count(indices)
        _pair(indices, count, with_edges, neighbors, edge_indices)
    return (neighbors, edge_indices) if with_edges else neighbors


def _pair(indices: array, vertex_count: int, with_edges: bool, neighbors: array,
          edge_indices: array) -> None:
    device = indices.device
    half_edges = 3 * indices.shape[0]
    # radix_sort_pairs sorts in two halves of each array (the second is its scratch).
    keys = kc.empty(2 * half_edges, dtype=T.int32, device=device)
    order = kc.empty(2 * half_edges, dtype=T.int32, device=device)
    _launch(L.half_edge_keys, indices.shape[0], [indices, vertex_count, keys, order], device)
    kc.utils.radix_sort_pairs(keys, order, half_edges, 0, max(vertex_count.bit_length(), 1))
    _launch(L.pair_half_edges, half_edges,
            [indices, keys, order, half_edges, vertex_count, int(with_edges), neighbors,
             edge_indices], device)


def _check_epsilon(value: Any, name: str) -> float:
    if not isinstance(value, numbers.Real):
        raise GeometryTypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0.0:
        raise ValueError(f"{name} must be a finite, non-negative number, got {value}")
    return float(value)


def _check_flip_arguments(positions: Any, indices: Any, ref_positions: Any, max_passes: Any,
                          area_epsilon: Any, ref_area_epsilon: Any) -> tuple[int, float, float]:
    """Warp's checks, in Warp's order, then the types that Warp's launch would reject."""
    _check_indices(indices)
    device = indices.device
    for name, value in (("positions", positions), ("ref_positions", ref_positions)):
        if value is not None:
            _check_array(value, name, T.vec2, 1)
            if value.device != device:
                raise ValueError(f"{name} and indices must be on the same device "
                                 f"({value.device} vs {device})")
    if not isinstance(max_passes, numbers.Integral) or isinstance(max_passes, bool):
        if isinstance(max_passes, numbers.Real) and max_passes < 1:
            raise ValueError(f"max_passes must be at least 1, got {max_passes}")
        raise GeometryTypeError(f"max_passes must be an int, got {type(max_passes).__name__}")
    if not 1 <= max_passes < 2 ** 31:
        raise ValueError(f"max_passes must be at least 1 (and below 2**31), got {max_passes}")
    return (int(max_passes), _check_epsilon(area_epsilon, "area_epsilon"),
            _check_epsilon(ref_area_epsilon, "ref_area_epsilon"))


def delaunay_edge_flip(positions: array, indices: array, ref_positions: array | None = None,
                       max_passes: int = 1000, area_epsilon: float = 0.0,
                       ref_area_epsilon: float = 1.0e-10) -> array:
    """Flips non-Delaunay interior edges of a 2-d triangulation, in place, in passes.

    Each pass flips, in parallel, an independent set of the interior edges whose opposite
    vertex lies inside the circumcircle and whose flip leaves both new triangles
    counter-clockwise with a signed area above `area_epsilon`; passes go on until one
    flips nothing or `max_passes` have run. Boundary edges never flip, so the outline of
    the mesh stays. Assumes a manifold mesh wound counter-clockwise (positive areas).
    The result is independent of the thread count and matches Warp's on the CPU.

    Args:
        positions (array): `(vertex_count,)` `kc.vec2` vertex positions (not modified).
        indices (array): `(num_tris, 3)` `int32` counter-clockwise triangles; rewritten in place.
        ref_positions (array | None): `(vertex_count,)` `kc.vec2` reference positions: a flip that would make a triangle with `|signed area| <= ref_area_epsilon` there is rejected.
        max_passes (int): The most flip passes to run (at least 1).
        area_epsilon (float): The smallest signed area a flip may create (finite, non-negative).
        ref_area_epsilon (float): The degeneracy threshold in the reference positions (finite, non-negative).

    Returns:
        A `(1,)` `int32` array on the indices' device holding the number of flips made
        (inside a graph capture, read it after launching the graph).

    Raises:
        ValueError: `indices` is not `(num_tris, 3)`, an array is on another device, `max_passes` is below 1 or an epsilon is negative or not finite.
        TypeError: An array is not a `kc.array` of the right dtype, or `max_passes` is not an int (as `GeometryTypeError`, also a RuntimeError as in Warp).
        RuntimeError: Called inside a CUDA graph capture (kernelc's CUDA graphs have no loops).
    """
    passes, area_eps, ref_eps = _check_flip_arguments(positions, indices, ref_positions,
                                                      max_passes, area_epsilon,
                                                      ref_area_epsilon)
    device = indices.device
    num_tris = indices.shape[0]
    total_flips = kc.zeros(1, dtype=T.int32, device=device)
    if num_tris == 0:
        return total_flips
    if device.is_cuda and _capturing(device):
        raise RuntimeError("delaunay_edge_flip cannot be recorded in a CUDA graph capture: "
                           "kernelc's CUDA graphs hold no loops (capture it on the CPU, or "
                           "call it outside the capture)")
    neighbors = tri_tri_adjacency(indices, positions.shape[0],
                                  return_neighbor_edge_indices=False)
    has_ref = int(ref_positions is not None)
    ref = ref_positions if ref_positions is not None else positions
    claim = kc.empty(num_tris, dtype=T.uint32, device=device)
    num_flips = kc.empty(1, dtype=T.int32, device=device)
    pass_count = kc.zeros(1, dtype=T.int32, device=device)
    condition = kc.ones(1, dtype=T.int32, device=device)  # the first pass always runs

    def flip_pass() -> None:
        claim.fill_(0)
        num_flips.zero_()
        _launch(L.stake_flip_claims, num_tris,
                [indices, neighbors, positions, ref, has_ref, area_eps, ref_eps, claim], device)
        _launch(L.apply_won_flips, num_tris, [indices, neighbors, claim, num_flips], device)
        _launch(L.record_pass, 1, [num_flips, passes, total_flips, pass_count, condition],
                device)

    kc.capture_while(condition, flip_pass)
    return total_flips
