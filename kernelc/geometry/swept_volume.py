"""Swept volumes of rigidly moving meshes (Warp's `swept_volume_*`, `SweptVolumeSignMode`).

The swept volume of meshes sampled at poses `X[m, s]` is the zero level set of
`D(p) = min over m, s of sdf_m(X[m, s]^-1 p)`. `swept_volume_field` samples D on a grid
(by brute force over every mesh and pose, `swept_volume_lang.swept_volume_sdf`) and
`swept_volume_mesh` extracts its `threshold` iso-surface with marching cubes. Motion
between the samples is not bounded: sample finely enough for the tolerance needed.

The host arithmetic that sizes the grid is Warp's (float64, rounded to float32 where Warp
rounds), so the same nodes are sampled.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import kernelc as kc
from kernelc import types as T
from kernelc.geometry import swept_volume_lang as L
from kernelc.geometry.marching_cubes import IsoSurfaceMarchingCubes
from kernelc.runtime.array import array

Vec3 = tuple[float, float, float]


class SweptVolumeSignMode(enum.IntEnum):
    """How the per-mesh distance gets its sign (an `IntEnum`: kernels take its value)."""

    NORMAL = 0
    """The closest face's pseudo-normal (`mesh_query_point_sign_normal`)."""
    WINDING_NUMBER = 1
    """The generalised winding number; every mesh needs `support_winding_number=True`."""
    PARITY = 2
    """Ray-crossing parity (`mesh_query_point_sign_parity`)."""
    NO_SIGN = 3
    """Unsigned distance: positive everywhere, so only a `threshold > 0` level exists."""


def _transforms(transforms: Any, device: Any) -> array:
    """Poses as a 2-d `transform` array `(meshes, samples)` on `device`."""
    if isinstance(transforms, array):
        if transforms.ndim != 2:
            raise ValueError("'transforms' must be a 2D array of shape (num_meshes, "
                             f"num_samples), got ndim {transforms.ndim}.")
        if transforms.dtype != T.transform:
            raise TypeError(f"'transforms' must have dtype kc.transform, got "
                            f"{transforms.dtype!r}.")
        return transforms.to(device)
    data = np.asarray(transforms, dtype=np.float32)
    if data.ndim != 3 or data.shape[2] != 7:
        raise ValueError("'transforms' must be a kc.array2d of kc.transform or an array of "
                         f"shape (num_meshes, num_samples, 7), got shape {data.shape}.")
    return kc.array(data, dtype=T.transform, device=device)


def _check(meshes: Sequence[Any], transforms: array) -> None:
    if transforms.shape[0] != len(meshes):
        raise ValueError(f"'transforms' has {transforms.shape[0]} rows but there are "
                         f"{len(meshes)} meshes.")
    if transforms.shape[1] == 0:
        raise ValueError("'transforms' must contain at least one pose sample.")


def _setup(meshes: Sequence[Any], transforms: Any, device: Any) -> tuple[Any, array]:
    if len(meshes) == 0:
        raise ValueError("'meshes' must contain at least one mesh.")
    device = kc.get_device(device) if device is not None else meshes[0].device
    poses = _transforms(transforms, device)
    _check(meshes, poses)
    return device, poses


def _bounds(meshes: Sequence[Any], poses: array, margin: float, device: Any
            ) -> tuple[Vec3, Vec3]:
    """The posed meshes' bounds (float32 values as floats), widened by `margin`."""
    inf = kc.vec3(math.inf, math.inf, math.inf)
    mesh_lower = kc.full(len(meshes), inf, dtype=T.vec3, device=device)
    mesh_upper = kc.full(len(meshes), -inf, dtype=T.vec3, device=device)
    for m, mesh in enumerate(meshes):
        if mesh.points.shape[0] > 0:
            kc.launch(L.mesh_box, mesh.points.shape[0],
                      inputs=[mesh.points, m, mesh_lower, mesh_upper], device=device)
    lower = kc.full(1, inf, dtype=T.vec3, device=device)
    upper = kc.full(1, -inf, dtype=T.vec3, device=device)
    kc.launch(L.posed_boxes, poses.shape,
              inputs=[mesh_lower, mesh_upper, poses, lower, upper], device=device)
    lo, hi = lower.numpy()[0], upper.numpy()[0]
    if not math.isfinite(float(lo[0])):
        raise ValueError("Could not compute swept-volume bounds: all input meshes are empty.")
    # Rounded through float32, as Warp returns vec3s.
    return (tuple(float(np.float32(float(v) - margin)) for v in lo),
            tuple(float(np.float32(float(v) + margin)) for v in hi))


def swept_volume_bounds(meshes: Sequence[Any], transforms: Any, padding: float = 0.0,
                        device: Any = None) -> tuple[Any, Any]:
    """The world-space box of every mesh over every pose.

    Each mesh's rest-pose box is mapped by every pose (its eight corners) and the results
    are joined. Use it to size a domain that several swept-volume fields share.

    Args:
        meshes (Sequence[Mesh]): The rest-pose meshes.
        transforms (array2d): Per mesh and sample, the rigid pose (rest to world): a `transform` array of shape (meshes, samples), or an array of shape (meshes, samples, 7) (translation xyz, quaternion xyzw).
        padding (float): Widening on every side, in world units.
        device (Device): Device to run on; the first mesh's if None.

    Returns:
        `(lower, upper)` as `kc.vec3`.

    Raises:
        ValueError: No meshes, no samples, a row count unlike the mesh count, or only
            empty meshes.
    """
    device, poses = _setup(meshes, transforms, device)
    lower, upper = _bounds(meshes, poses, padding, device)
    return kc.vec3(*lower), kc.vec3(*upper)


def _grid(meshes: Sequence[Any], poses: array, voxel_size: float | None,
          resolution: Any, lower: Any, upper: Any, extra: float, device: Any) -> tuple:
    """`(lower, upper, dims, tight_lower, tight_upper)` of the sampling grid (bounds as
    float tuples of float32 values)."""
    if (lower is None) != (upper is None):
        raise ValueError("Pass both 'lower' and 'upper', or neither.")
    if voxel_size is not None and resolution is not None:
        raise ValueError("Pass either 'voxel_size' or 'resolution', not both.")
    if voxel_size is None and resolution is None:
        raise ValueError("Provide either 'voxel_size' or 'resolution'.")
    if voxel_size is not None and voxel_size <= 0.0:
        raise ValueError(f"'voxel_size' must be positive, got {voxel_size}.")
    dims = None
    if resolution is not None:
        dims = tuple(int(n) for n in resolution)
        if len(dims) != 3:
            raise ValueError(f"'resolution' must have exactly 3 entries, got {dims}.")
        if any(n < 2 for n in dims):
            raise ValueError(f"'resolution' must be at least 2 along each axis, got {dims}.")
    tight_lower, tight_upper = _bounds(meshes, poses, 0.0, device)
    tight = [tight_upper[a] - tight_lower[a] for a in range(3)]
    if lower is not None:
        if voxel_size is not None:
            raise ValueError("'voxel_size' cannot be combined with explicit domain bounds, "
                             "since the extent would have to grow to fit whole cells. Pass "
                             "'resolution' instead.")
        lower = _float3(lower)
        upper = _float3(upper)
        if any(upper[a] <= lower[a] for a in range(3)):
            raise ValueError(f"'upper' {upper} must exceed 'lower' {lower}.")
        return lower, upper, dims, tight_lower, tight_upper
    if voxel_size is not None:
        # Two cells of slack, then the extent grows to whole cells: spacing = voxel_size.
        padded = [tight[a] + 2.0 * (extra + 2.0 * voxel_size) for a in range(3)]
        dims = tuple(max(2, int(math.ceil(padded[a] / voxel_size)) + 1) for a in range(3))
        grow = [0.5 * ((dims[a] - 1) * voxel_size - tight[a]) for a in range(3)]
    else:
        grow = [extra + 2.0 * tight[a] / (dims[a] - 1) for a in range(3)]
    lower = _float3([tight_lower[a] - grow[a] for a in range(3)])
    upper = _float3([tight_upper[a] + grow[a] for a in range(3)])
    return lower, upper, dims, tight_lower, tight_upper


def _float3(value: Any) -> Vec3:
    """Three floats, rounded through float32 (as a `vec3` holds them)."""
    return tuple(float(np.float32(float(v))) for v in value)


def swept_volume_field(meshes: Sequence[Any], transforms: Any, voxel_size: float | None = None,
                       *, resolution: tuple[int, int, int] | None = None, lower: Any = None,
                       upper: Any = None,
                       sign_mode: SweptVolumeSignMode = SweptVolumeSignMode.WINDING_NUMBER,
                       device: Any = None) -> tuple[array, Any, Any]:
    """The swept-volume pseudo signed distance sampled on a regular grid.

    Each node gets `swept_volume_sdf`: negative inside the swept volume, positive outside
    (everywhere positive with `NO_SIGN`). Without bounds, the domain is the swept box
    padded by about two cells; with `voxel_size` it grows to whole cells so that the
    spacing is exactly `voxel_size`. Not differentiable.

    Args:
        meshes (Sequence[Mesh]): The rest-pose meshes.
        transforms (array2d): Per mesh and sample, the rigid pose (rest to world), as for `swept_volume_bounds`; quaternions of unit length.
        voxel_size (float): Cell size in world units; or give `resolution`.
        resolution (tuple): Node counts `(nx, ny, nz)`; or give `voxel_size`.
        lower (vec3): Position of node (0, 0, 0) (give both bounds or neither).
        upper (vec3): Position of node (nx - 1, ny - 1, nz - 1).
        sign_mode (SweptVolumeSignMode): How inside is told from outside.
        device (Device): Device to run on; the first mesh's if None.

    Returns:
        `(field, lower, upper)`: a 3-d `float32` array and the bounds as `kc.vec3`.

    Raises:
        ValueError: Bad meshes, poses or grid arguments (see the message), a mesh on
            another device, or a mesh without winding-number support in
            `WINDING_NUMBER` mode.
    """
    if len(meshes) == 0:
        raise ValueError("'meshes' must contain at least one mesh.")
    device = kc.get_device(device) if device is not None else meshes[0].device
    for i, mesh in enumerate(meshes):
        if mesh.device != device:
            raise ValueError(f"'meshes[{i}]' is on device '{mesh.device}' but the launch "
                             f"device is '{device}'.")
        # Winding numbers of a mesh built without their moments fall back silently.
        if sign_mode == SweptVolumeSignMode.WINDING_NUMBER and not mesh.support_winding_number:
            raise ValueError(
                f"'meshes[{i}]' was not built with support_winding_number=True, which "
                "SweptVolumeSignMode.WINDING_NUMBER (the default) requires. Rebuild it with "
                "kc.Mesh(..., support_winding_number=True), or pass "
                "sign_mode=SweptVolumeSignMode.NORMAL.")
    ids = kc.array(np.array([mesh.id for mesh in meshes], np.uint64), dtype=T.uint64,
                   device=device)
    _, poses = _setup(meshes, transforms, device)
    lower, upper, dims, tight_lower, tight_upper = _grid(meshes, poses, voxel_size, resolution,
                                                         lower, upper, 0.0, device)
    spacing = [(upper[a] - lower[a]) / (dims[a] - 1) for a in range(3)]
    # A search that finds nothing gives no sign: the bound spans domain and geometry.
    span = [max(upper[a], tight_upper[a]) - min(lower[a], tight_lower[a]) for a in range(3)]
    max_dist = math.sqrt(span[0] * span[0] + span[1] * span[1] + span[2] * span[2])
    field = kc.empty(dims, dtype=T.float32, device=device)
    kc.launch(L.swept_field, dims, inputs=[ids, poses, kc.vec3(*lower), kc.vec3(*spacing),
                                           np.float32(max_dist), int(sign_mode), field],
              device=device)
    return field, kc.vec3(*lower), kc.vec3(*upper)


def swept_volume_mesh(meshes: Sequence[Any], transforms: Any, voxel_size: float | None = None,
                      *, resolution: tuple[int, int, int] | None = None, lower: Any = None,
                      upper: Any = None, threshold: float = 0.0,
                      sign_mode: SweptVolumeSignMode = SweptVolumeSignMode.WINDING_NUMBER,
                      device: Any = None) -> tuple[array, array]:
    """The swept volume (motion envelope) of rigidly moving meshes, as one triangle mesh.

    `swept_volume_field` on a domain padded by `max(threshold, 0)` plus about two cells,
    then `IsoSurfaceMarchingCubes.extract` of its `threshold` level. The envelope encloses
    every sampled pose once `threshold > 0.5 * |(hx, hy, hz)|` (half a cell's diagonal).

    Args:
        meshes (Sequence[Mesh]): The rest-pose meshes.
        transforms (array2d): Per mesh and sample, the rigid pose, as for `swept_volume_field`.
        voxel_size (float): Cell size in world units; or give `resolution`.
        resolution (tuple): Node counts `(nx, ny, nz)`; or give `voxel_size`.
        lower (vec3): Position of node (0, 0, 0) (give both bounds or neither).
        upper (vec3): Position of node (nx - 1, ny - 1, nz - 1).
        threshold (float): Level to extract; a positive one dilates the envelope.
        sign_mode (SweptVolumeSignMode): How inside is told from outside; `NO_SIGN` needs `threshold > 0`.
        device (Device): Device to run on; the first mesh's if None.

    Returns:
        `(verts, indices)`: world-space `vec3` vertices, three `int32` indices a triangle.

    Raises:
        ValueError: `NO_SIGN` with `threshold <= 0`, or any error of `swept_volume_field`.
    """
    if sign_mode == SweptVolumeSignMode.NO_SIGN and threshold <= 0.0:
        raise ValueError(f"'threshold' must be positive when sign_mode is "
                         f"SweptVolumeSignMode.NO_SIGN, got {threshold}. An unsigned field "
                         "is positive everywhere, so its zero iso-surface is empty.")
    device, poses = _setup(meshes, transforms, device)
    lower, upper, dims, _, _ = _grid(meshes, poses, voxel_size, resolution, lower, upper,
                                     max(threshold, 0.0), device)
    field, lower, upper = swept_volume_field(meshes, poses, resolution=dims, lower=lower,
                                             upper=upper, sign_mode=sign_mode, device=device)
    return IsoSurfaceMarchingCubes.extract(field, threshold=threshold, lower=lower, upper=upper)
