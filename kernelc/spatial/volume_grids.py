"""Host-side helpers of `kc.Volume`'s builders: transforms, value types, points to voxels.

They turn the arguments Warp's `Volume.allocate*` and `load_from_numpy` take into what
`kernelc.spatial.nanovdb_build.build_grid` needs: leaf origins, per-leaf values and active
masks, a grid type and the background's bytes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.runtime.array import array
from kernelc.spatial.nanovdb_build import inverse

# Value types a volume can be allocated with, and their NanoVDB grid type codes.
_ALLOCATION_TYPES = {
    T.int32: 4, T.uint32: 10, T.int64: 5, T.float32: 1, T.float64: 2,
    T.VectorType(3, T.float32): 6, T.VectorType(3, T.float64): 7,
    T.VectorType(4, T.float32): 17, T.VectorType(4, T.float64): 18,
}
_UNSUPPORTED = ("Supported volume types are int32, uint32, int64, float, double, Vec3f, "
                "Vec3d, Vec4f, Vec4d.")


def normalize_voxel_size(voxel_size: Any) -> tuple[float, float, float]:
    """A voxel size (a number, or three) as three finite positive floats."""
    if isinstance(voxel_size, (int, float, np.integer, np.floating)) \
            and not isinstance(voxel_size, bool):
        sizes = (float(voxel_size),) * 3
    elif isinstance(voxel_size, (list, tuple, np.ndarray)):
        sizes = tuple(float(v) for v in np.asarray(voxel_size).reshape(-1))
        if len(sizes) != 3:
            raise ValueError(f"voxel_size must be a scalar or a 3-element sequence, got "
                             f"length {len(sizes)}")
    else:
        raise TypeError(f"voxel_size must be a numeric scalar or a sequence of 3 floats, got "
                        f"{type(voxel_size).__name__}")
    if not all(math.isfinite(v) and v > 0.0 for v in sizes):
        raise ValueError(f"All voxel_size components must be finite and positive, got {sizes}")
    return sizes


def transform_of(voxel_size: Any, transform: Any) -> np.ndarray:
    """The 3x3 index-to-world matrix (float32) from a voxel size or a given transform."""
    if transform is None:
        if voxel_size is None:
            raise ValueError("Either 'voxel_size' or 'transform' must be provided")
        return np.diag(np.asarray(normalize_voxel_size(voxel_size), np.float32))
    if voxel_size is not None:
        raise ValueError("Only one of 'voxel_size' or 'transform' must be provided")
    matrix = np.asarray(transform, np.float32).reshape(3, 3)
    if not np.isfinite(matrix).all() or abs(np.linalg.det(matrix.astype(np.float64))) == 0.0:
        raise ValueError("the volume transform must be finite and invertible")
    return matrix


def allocation_type(bg_value: Any) -> tuple[int, bytes]:
    """The grid type a background value makes, and the value's bytes in that type: None
    makes an index grid; Python ints int32, floats float32; plain sequences of 3 or 4
    numbers vec3f or vec4f; typed values (kc scalars and vectors) their own type."""
    if bg_value is None:
        return 19, b""
    kc_type = getattr(bg_value, "_kc_type", None)
    if kc_type is None and isinstance(bg_value, np.generic) and not isinstance(bg_value, np.bool_):
        kc_type = T.from_numpy_dtype(bg_value.dtype)
    elif kc_type is None and isinstance(bg_value, int) and not isinstance(bg_value, bool):
        kc_type = T.int32
    elif kc_type is None and isinstance(bg_value, float):
        kc_type = T.float32
    elif kc_type is None and isinstance(bg_value, (list, tuple, np.ndarray)) \
            and np.size(bg_value) in (3, 4):
        kc_type = T.VectorType(int(np.size(bg_value)), T.float32)
    if kc_type not in _ALLOCATION_TYPES:
        raise TypeError(f"Unsupported bg_value type for volume allocation "
                        f"{type(bg_value).__name__}. {_UNSUPPORTED}")
    scalar = kc_type.dtype if isinstance(kc_type, T.VectorType) else kc_type
    value = np.asarray(bg_value, T.dtype_to_numpy(scalar)).reshape(-1)
    return _ALLOCATION_TYPES[kc_type], value.tobytes()


def _as_numpy(points: Any, what: str) -> np.ndarray:
    if isinstance(points, array):
        vec = isinstance(points.dtype, T.VectorType) and points.dtype.length == 3 \
            and points.ndim == 1
        rows = points.ndim == 2 and isinstance(points.dtype, T.ScalarType) \
            and points.shape[1] == 3
        scalar = points.dtype.dtype if vec else points.dtype
        if not (vec or rows) or scalar not in (T.int32, T.float32) or not points.is_contiguous:
            raise RuntimeError(f"{what} must be contiguous and either a 1D array of vec3f or "
                               f"vec3i or a 2D n-by-3 array of int32 or float32.")
        return points.numpy().reshape(-1, 3)
    data = np.asarray(points)
    if data.ndim != 2 or data.shape[1] != 3 or data.dtype.kind not in "iuf":
        raise RuntimeError(f"{what} must be an (n, 3) array of integer (index space) or "
                           f"float (world space) coordinates")
    return data


def points_to_coords(points: Any, point_mask: Any, matrix: np.ndarray, translation: Any,
                     what: str, allow_empty: bool = False) -> np.ndarray:
    """(n, 3) int32 voxel coordinates of the points: integers as they are, floats (world
    positions) through the inverse transform, in float32, rounded to the nearest voxel.
    No points at all is a RuntimeError unless `allow_empty`; points that the mask drops
    all leave an empty grid, as in Warp."""
    data = _as_numpy(points, what)
    if len(data) == 0 and not allow_empty:
        raise RuntimeError(f"Failed to create volume: no {what} to allocate")
    if point_mask is not None:
        mask = point_mask.numpy() if isinstance(point_mask, array) else np.asarray(point_mask)
        if mask.shape != (len(data),):
            raise RuntimeError(f"point_mask must hold one int32 per point ({len(data)}), got "
                               f"shape {mask.shape}")
        data = data[mask != 0]
    if data.dtype.kind == "f":
        inverse_f = inverse(matrix.astype(np.float64)).astype(np.float32)
        local = data.astype(np.float32) - np.asarray(translation, np.float32)
        # NanoVDB's float map: fused multiply-adds, z term first (float64 holds them exactly)
        wide = local.astype(np.float64)
        index = (wide[:, 2:3] * inverse_f[:, 2]).astype(np.float32).astype(np.float64)
        index = (wide[:, 1:2] * inverse_f[:, 1] + index).astype(np.float32).astype(np.float64)
        index = (wide[:, 0:1] * inverse_f[:, 0] + index).astype(np.float32)
        data = np.floor(index.astype(np.float64) + 0.5)
    return data.astype(np.int32)


def dense_leaves(data: np.ndarray, origins: np.ndarray, background: np.ndarray,
                 dtype: Any) -> np.ndarray:
    """(leaves, 512 * value size) bytes: the values of the tiles at `origins` (a box of
    tiles, x slowest, as `np.meshgrid(..., indexing="ij")` orders them) from a dense array
    indexed [i, j, k(, component)] from voxel (0, 0, 0), the background outside it."""
    comps = background.size
    lo = origins.min(axis=0)
    tiles = (origins.max(axis=0) - lo) // 8 + 1
    box = np.empty((*(tiles * 8), comps), dtype)
    box[...] = background
    src_lo = np.maximum(lo, 0)  # the part of the array inside the box
    src_hi = np.minimum(lo + tiles * 8, data.shape[:3])
    if (src_hi > src_lo).all():
        inside = tuple(slice(a, b) for a, b in zip(src_lo, src_hi))
        at = tuple(slice(a - o, b - o) for a, b, o in zip(src_lo, src_hi, lo))
        box[at] = data[inside].reshape(*(src_hi - src_lo), comps).astype(dtype)
    blocks = box.reshape(tiles[0], 8, tiles[1], 8, tiles[2], 8, comps)
    leaves = blocks.transpose(0, 2, 4, 1, 3, 5, 6).reshape(len(origins), -1)
    return np.ascontiguousarray(leaves).view(np.uint8)
