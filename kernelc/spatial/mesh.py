"""`kc.Mesh`: a triangle mesh with a BVH over its faces, for point, ray and box queries.

The mesh keeps the arrays it was given (`points`, `indices`, `velocities`): kernels read
them through the mesh's descriptor, so a change to `points` in place shows in the queries
once `refit()` has updated the face boxes and node bounds. The hierarchy is built once, on
the host (`kernelc.spatial.bvh.build_topology`); a refit runs kernels only: one pass over
the leaves (face boxes, leaf boxes, edge lengths), then one launch per tree level.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.runtime.array import array, zeros
from kernelc.runtime.launch import launch
from kernelc.spatial import bvh_lang, mesh_lang, mesh_sign_lang
from kernelc.spatial.bvh import (
    Tree,
    build_topology,
    check_constructor,
    check_groups,
    check_vec3_array,
)
from kernelc.spatial.mesh_lang import MeshQueryAABB, MeshQueryPoint, MeshQueryRay

__all__ = ["Mesh", "MeshQuery", "MeshQueryAABB", "MeshQueryPoint", "MeshQueryRay"]

# Warp's erased parent of the mesh query kinds: one struct serves both here.
MeshQuery = MeshQueryAABB


class Mesh:
    """A triangle mesh that kernels query through `mesh.id`.

    Args:
        points: Vertex positions: a contiguous 1-d array of `kc.vec3`.
        indices: Vertex indices of the faces, three per face: a contiguous 1-d array of
            `kc.int32` on the same device.
        velocities: Optional vertex velocities (array of `kc.vec3`), for
            `mesh_eval_velocity` and `mesh_get_velocity`.
        support_winding_number: Also compute the moments that
            `mesh_query_point_sign_winding_number` needs (refits update them).
        bvh_constructor: Warp's builder name ("sah", "median", "lbvh", "cubql" or None);
            kernelc has one builder, "median" splits at the median instead.
        bvh_leaf_size: Most faces per leaf (default 4, Warp's default).
        groups: The group of each face (a contiguous `int32` array), or None. Each group
            gets a subtree of its own, whose root `mesh_get_group_root(id, group)` returns;
            a query started there (`root=`) sees that group's faces only.

    Attributes:
        id: The `uint64` to pass to kernels.
        device: The device of the mesh (that of `points`).
    """

    def __init__(self, points: array, indices: array, velocities: array | None = None,
                 support_winding_number: bool = False, bvh_constructor: Any = None,
                 bvh_leaf_size: int | None = None, groups: Any = None) -> None:
        check_vec3_array(points, "Mesh points")
        self.device = points.device
        if not isinstance(indices, array) or indices.dtype != T.int32:
            got = indices.dtype if isinstance(indices, array) else type(indices).__name__
            raise TypeError(f"Mesh indices must be an array of kc.int32, got {got!r}")
        if indices.ndim != 1 or not indices.is_contiguous:
            raise ValueError("Mesh indices must be a contiguous, flattened 1-d array of int32 "
                             "(three per face)")
        if indices.device != self.device:
            raise ValueError(f"Mesh indices are on {indices.device}, points on {self.device}")
        if indices.size % 3:
            raise ValueError(f"Mesh indices must hold three per face, got {indices.size}")
        if velocities is not None:
            self._check_velocities(velocities, len(points))
        host_groups = check_groups(groups, indices.size // 3, "face", self.device)
        self._median = check_constructor(bvh_constructor)
        leaf_size = 4 if bvh_leaf_size is None else operator.index(bvh_leaf_size)
        if leaf_size < 1:
            raise ValueError(f"bvh_leaf_size must be >= 1, got {bvh_leaf_size}")
        self._points, self._velocities, self.indices = points, velocities, indices
        self.groups = groups
        self.support_winding_number = bool(support_winding_number)
        self.num_tris = indices.size // 3
        host_indices = indices.numpy().reshape(-1, 3)
        if host_indices.size and (host_indices.min() < 0 or host_indices.max() >= len(points)):
            raise ValueError(f"Mesh indices must lie in [0, {len(points)}), got values in "
                             f"[{host_indices.min()}, {host_indices.max()}]")
        host_points = points.numpy().reshape(-1, 3)
        a, b, c = (host_points[host_indices[:, k]] for k in range(3))
        self._face_lowers = zeros(max(self.num_tris, 1), dtype=points.dtype, device=self.device)
        self._face_uppers = zeros(max(self.num_tris, 1), dtype=points.dtype, device=self.device)
        topology = build_topology(np.minimum(np.minimum(a, b), c),
                                  np.maximum(np.maximum(a, b), c), leaf_size, self._median,
                                  host_groups)
        self._tree = Tree(topology, self.device, self._face_lowers, self._face_uppers)
        self._winding = None
        if self.support_winding_number:
            self._winding = zeros(self._tree.num_nodes * mesh_sign_lang.WINDING_FLOATS,
                                  dtype=T.float32, device=self.device)
        self._descriptor = zeros(mesh_lang.DESCRIPTOR_SIZE, dtype=T.uint8, device=self.device)
        self.id = self._descriptor.ptr
        self.refit()

    @staticmethod
    def _check_velocities(velocities: Any, count: int) -> None:
        check_vec3_array(velocities, "Mesh velocities")
        if len(velocities) != count:
            raise ValueError(f"Mesh velocities must have one per point ({count}), got "
                             f"{len(velocities)}")

    @property
    def points(self) -> array:
        """The vertex positions. Change them in place and call `refit()`, or assign a new
        array of the same shape (which refits)."""
        return self._points

    @points.setter
    def points(self, new: array) -> None:
        check_vec3_array(new, "Mesh points", self.device)
        if new.shape != self._points.shape:
            raise ValueError(f"new Mesh points must have shape {self._points.shape}, got "
                             f"{new.shape}")
        self._points = new
        self.refit()

    @property
    def velocities(self) -> array | None:
        """The vertex velocities (None if not given); assigning a new array needs no refit."""
        return self._velocities

    @velocities.setter
    def velocities(self, new: array) -> None:
        self._check_velocities(new, len(self._points))
        if new.device != self.device:
            raise ValueError(f"new Mesh velocities are on {new.device}, the mesh on "
                             f"{self.device}")
        self._velocities = new
        self._write_descriptor()

    def refit(self) -> None:
        """Recomputes the face boxes and node bounds (and the winding-number moments) from
        the current points; the tree's structure stays as built."""
        if self.num_tris:
            tree = self._tree
            launch(mesh_lang.refit_face_leaves, len(tree.topology.leaves),
                   [tree.leaves, tree.info, tree.prims, self._points, self.indices,
                    self._face_lowers, self._face_uppers, tree.bounds], device=self.device)
            tree.refit_levels(bvh_lang.refit_inner, [tree.bounds])
            if self._winding is not None:
                launch(mesh_sign_lang.winding_leaves, len(tree.topology.leaves),
                       [tree.leaves, tree.info, tree.prims, self._points, self.indices,
                        self._winding], device=self.device)
                tree.refit_levels(mesh_sign_lang.winding_inner, [self._winding])
        self._write_descriptor()

    def _write_descriptor(self) -> None:
        raw = np.zeros(mesh_lang.DESCRIPTOR_SIZE, np.uint8)
        self._tree.write_descriptor(raw)
        u64 = raw.view(np.uint64)
        u64[mesh_lang.DESCRIPTOR_POINTS // 8] = self._points.ptr or 0
        velocities = self._velocities.ptr if self._velocities is not None else 0
        u64[mesh_lang.DESCRIPTOR_VELOCITIES // 8] = velocities or 0
        u64[mesh_lang.DESCRIPTOR_INDICES // 8] = self.indices.ptr or 0
        u64[mesh_lang.DESCRIPTOR_WINDING // 8] = self._winding.ptr if self._winding is not None else 0
        # where `mesh_get(id).points` reads accumulate their gradients, as Warp's arrays do
        for field, values in ((mesh_lang.DESCRIPTOR_POINTS_GRAD, self._points),
                              (mesh_lang.DESCRIPTOR_VELOCITIES_GRAD, self._velocities)):
            grad = getattr(values, "grad", None)
            u64[field // 8] = (grad.ptr or 0) if grad is not None else 0
        i32 = raw.view(np.int32)
        i32[mesh_lang.DESCRIPTOR_NUM_POINTS // 4] = len(self._points)
        i32[mesh_lang.DESCRIPTOR_NUM_TRIS // 4] = self.num_tris
        self._descriptor.assign(raw)

    def __repr__(self) -> str:
        return (f"Mesh({len(self._points)} points, {self.num_tris} faces, "
                f"device={self.device})")
