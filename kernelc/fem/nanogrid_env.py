"""Sparse grids of several environments (Warp's `Nanogrid.from_environment_voxels` and
`AdaptiveNanogrid.from_environment_voxels`).

Each environment's voxels are given in its own coordinates; they are packed into one cell
grid by adding a per-environment offset along x, with empty guard voxels between
environments so that no two environments share a face, an edge or a vertex (their nodes
stay apart). Geometries then subtract the offsets again: positions are each environment's
own, so environments may overlap in space while their topologies stay separate.

Generated offsets follow Warp's rule, so packed voxels (and the numbering of cells, nodes
and sides that follows from them) match Warp's: environment e spans x from its lowest
voxel (rounded down to `alignment`) to its highest (plus a coarse cell's extent on
adaptive grids), plus `guard_cells`, rounded up to `alignment`; environments follow one
another in order, each shifted so that its lowest voxel lands at its span's start.
"""

import contextlib
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.host_capture import cpu_capture, record, suspended
from kernelc.fem.nanogrid import lookup_voxels


def _host(values: Any, dtype: Any) -> np.ndarray:
    return np.asarray(values.numpy() if hasattr(values, "numpy") else values, dtype=dtype)


def _floor_to(x: np.ndarray, alignment: int) -> np.ndarray:
    return (x // alignment) * alignment


def _ceil_to(x: np.ndarray, alignment: int) -> np.ndarray:
    return -_floor_to(-x, alignment)


def transform_args(voxel_size: Any, translation: Any, transform: Any
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(inverse transform, translation) in float32, as Warp rounds them."""
    if transform is None:
        if voxel_size is None:
            raise ValueError("voxel_size must be provided when transform is None")
        diag = np.broadcast_to(np.asarray(voxel_size, dtype=np.float32).reshape(-1), 3)
        matrix = np.diag(diag.astype(np.float64))
    else:
        matrix = np.asarray(transform, dtype=np.float32).reshape(3, 3)
    inverse = np.linalg.inv(matrix).astype(np.float32)
    return inverse, np.asarray(translation, dtype=np.float32).reshape(3)


def point_voxels(points: Any, inverse: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """The voxel (n, 3) of each point: vec3i points are voxels already; world points
    (vec3f) are moved to index space, where voxel centres sit at integers."""
    host = points.numpy() if hasattr(points, "numpy") else np.asarray(points)
    host = np.asarray(host).reshape(-1, 3)
    if np.issubdtype(host.dtype, np.integer):
        return host.astype(np.int32)
    local = host.astype(np.float32) - translation
    uvw = (local @ inverse.T).astype(np.float32) + np.float32(0.5)
    return np.floor(uvw).astype(np.int32)


def environment_inputs(points: Any, point_envs: Any, env_count: Any, point_mask: Any
                       ) -> tuple[np.ndarray, int, np.ndarray]:
    """(environment of each point, environment count, whether each point is used)."""
    count = int(points.shape[0]) if hasattr(points, "shape") else len(points)
    if point_envs is None:
        raise ValueError("point_envs is required when constructing an environment Nanogrid")
    if env_count is None:
        raise TypeError("env_count is required")
    env_count = int(env_count)
    if env_count <= 0:
        raise ValueError("env_count must be positive")
    envs = _host(point_envs, np.int64).reshape(-1)
    if len(envs) < count:
        raise RuntimeError(f"point_envs must have at least {count} entries")
    used = np.ones(count, bool)
    if point_mask is not None:
        mask = _host(point_mask, np.int64).reshape(-1)
        if len(mask) < count:
            raise RuntimeError(f"point_mask must have at least {count} entries")
        used = mask[:count] != 0
    return envs[:count], env_count, used


def check_environments(envs: np.ndarray, used: np.ndarray, env_count: int) -> None:
    """Raises for the first used point whose environment is out of range (Warp's
    message)."""
    bad = np.flatnonzero(used & ((envs < 0) | (envs >= env_count)))
    if len(bad):
        raise ValueError(f"Environment index {int(envs[bad[0]])} at flattened array index "
                         f"{int(bad[0])} is out of bounds; expected a value in [0, {env_count})")


def environment_offsets(voxels: np.ndarray, extents: np.ndarray, envs: np.ndarray,
                        valid: np.ndarray, env_count: int, guard_cells: int,
                        alignment: int) -> np.ndarray:
    """Generated offsets (env_count, 3) of the environments' packed voxels (module
    docstring); `extents` is how far each voxel reaches past its x (0 on regular grids)."""
    spans = np.zeros(env_count, np.int64)
    lowest = np.zeros(env_count, np.int64)
    counts = np.zeros(env_count, np.int64)
    x, reach = voxels[:, 0].astype(np.int64), voxels[:, 0].astype(np.int64) + extents
    for env in range(env_count):
        mine = valid & (envs == env)
        counts[env] = np.count_nonzero(mine)
        if counts[env]:
            lowest[env] = x[mine].min()
            packed_max = reach[mine].max() - _floor_to(lowest[env], alignment)
            spans[env] = packed_max + 1 + guard_cells
        else:
            spans[env] = guard_cells
    spans = _ceil_to(spans, alignment)
    starts = _ceil_to(np.concatenate([[0], np.cumsum(spans)[:-1]]), alignment)
    offsets = np.zeros((env_count, 3), np.int32)
    offsets[:, 0] = np.where(counts == 0, starts, _ceil_to(starts - lowest, alignment))
    return offsets


def given_offsets(env_offsets: Any, env_count: int, alignment: int) -> np.ndarray:
    """User offsets, checked: one per environment, aligned to the coarsest cells."""
    offsets = _host(env_offsets, np.int64).reshape(-1, 3)
    if len(offsets) != env_count:
        raise ValueError("Environment offsets must have one entry per environment")
    if alignment > 1 and np.any(offsets % alignment != 0):
        raise ValueError(f"Adaptive Nanogrid environment offsets must be aligned to "
                         f"{alignment} fine-grid voxels")
    return offsets.astype(np.int32)


def packed_cell_grid(packed: np.ndarray, valid: np.ndarray, envs: np.ndarray, *,
                     voxel_size: Any, translation: Any, transform: Any, device: Any,
                     **capacity: Any) -> tuple[kc.Volume, np.ndarray]:
    """(cell grid of the valid packed voxels, environment of each of its cells)."""
    points = kc.array(np.ascontiguousarray(packed, dtype=np.int32), dtype=kc.vec3i,
                      device=device)
    mask = kc.array(valid.astype(np.int32), dtype=kc.int32, device=device)
    grid = kc.Volume.allocate_by_voxels(points, voxel_size=voxel_size,
                                        translation=translation, transform=transform,
                                        device=device, point_mask=mask, **capacity)
    return grid, per_cell(grid, packed, valid, envs, np.int32)


def per_cell(grid: kc.Volume, packed: np.ndarray, valid: np.ndarray, values: np.ndarray,
             dtype: Any) -> np.ndarray:
    """Each cell of `grid`'s value among `values` (one per point): that of a valid point
    whose packed voxel the cell is."""
    out = np.zeros(grid.get_active_stats().voxel_count, dtype)
    cells = lookup_voxels(grid, packed[valid])
    out[cells[cells >= 0]] = values[valid][cells >= 0]
    return out


def given_points(points: Any, cell_ijks: Any) -> Any:
    """The points, given as `points` or by Warp's older keyword `cell_ijks`."""
    if cell_ijks is not None:
        if points is not None:
            raise TypeError("points and cell_ijks cannot both be provided")
        points = cell_ijks
    if points is None:
        raise TypeError("points is required")
    return points


def _legacy_sequence(points: Any, levels: Any) -> tuple[Any, Any, Any, int]:
    """Warp's older form: one voxel array (and one level array) per environment."""
    arrays = list(points)
    if not arrays:
        raise ValueError("At least one environment cell array is required")
    voxels = [_host(a, np.int32).reshape(-1, 3) for a in arrays]
    envs = np.concatenate([np.full(len(v), e, np.int32) for e, v in enumerate(voxels)])
    flat_levels = None if levels is None else np.concatenate(
        [_host(a, np.uint8).reshape(-1) for a in levels])
    return np.concatenate(voxels), flat_levels, envs, len(arrays)


def pack(points: Any, point_envs: Any, env_count: Any, env_offsets: Any, *,
         point_mask: Any, levels: Any, alignment: int, guard_cells: int, voxel_size: Any,
         translation: Any, transform: Any, strict: bool
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, bool]:
    """(packed voxels, which are valid, environment of each point, offsets, environment
    count, whether some used point had an environment out of range). `strict` raises for
    those instead (exact builds), as Warp."""
    envs, env_count, used = environment_inputs(points, point_envs, env_count, point_mask)
    if strict:
        check_environments(envs, used, env_count)
    inverse, shift = transform_args(voxel_size, translation, transform)
    voxels = point_voxels(points, inverse, shift)
    in_range = (envs >= 0) & (envs < env_count)
    valid = used & in_range
    if env_offsets is None:
        extents = np.zeros(len(voxels), np.int64) if levels is None else (
            (1 << levels.astype(np.int64)) - 1)
        offsets = environment_offsets(voxels, extents, envs, valid, env_count, guard_cells,
                                      alignment)
    else:
        offsets = given_offsets(env_offsets, env_count, alignment)
    packed = voxels + offsets[np.where(valid, envs, 0)]
    packed[~valid] = 0
    return packed, valid, envs.astype(np.int32), offsets, env_count, bool(
        np.any(used & ~in_range))


def _flag_invalid(status: Any) -> None:
    if status is not None:
        value = status.numpy()
        value[0] |= kc.Volume.REBUILD_INVALID_INPUT
        status.assign(value)


def build_nanogrid(cls: type, points: Any, point_envs: Any, env_count: Any, env_offsets: Any,
                   *, point_mask: Any, guard_cells: int, voxel_size: Any, translation: Any,
                   transform: Any, scalar_type: Any, device: Any, rebuildable: bool,
                   status: Any, capacity: dict, temporary_store: Any) -> Any:
    """`Nanogrid.from_environment_voxels`. Inside a CPU graph capture, the grid is built
    now (from the arrays' current contents) and, if rebuildable, each replay rebuilds it
    from their contents then (see `kernelc.fem.host_capture`)."""
    if not hasattr(points, "shape"):
        points, _, point_envs, env_count = _legacy_sequence(points, None)
    device = kc.get_device(device if device is not None else getattr(points, "device", None))
    capture = cpu_capture(device)
    with suspended(capture) if capture is not None else contextlib.nullcontext():
        geo = _build_nanogrid(cls, points, point_envs, env_count, env_offsets,
                              point_mask=point_mask, guard_cells=guard_cells,
                              voxel_size=voxel_size, translation=translation,
                              transform=transform, scalar_type=scalar_type, device=device,
                              rebuildable=rebuildable, status=status, capacity=capacity,
                              temporary_store=temporary_store)
    if capture is not None and rebuildable:
        record(capture, lambda: rebuild_nanogrid(geo, points, point_envs, status, point_mask))
    return geo


def _build_nanogrid(cls: type, points: Any, point_envs: Any, env_count: Any,
                    env_offsets: Any, *, point_mask: Any, guard_cells: int, voxel_size: Any,
                    translation: Any, transform: Any, scalar_type: Any, device: Any,
                    rebuildable: bool, status: Any, capacity: dict,
                    temporary_store: Any) -> Any:
    packed, valid, envs, offsets, env_count, dropped = pack(
        points, point_envs, env_count, env_offsets, point_mask=point_mask, levels=None,
        alignment=1, guard_cells=guard_cells, voxel_size=voxel_size, translation=translation,
        transform=transform, strict=not rebuildable)
    if rebuildable:
        capacity = {"rebuildable": True, "status": status, **capacity}
    grid, cell_env = packed_cell_grid(packed, valid, envs, voxel_size=voxel_size,
                                      translation=translation, transform=transform,
                                      device=device, **capacity)
    if dropped:
        _flag_invalid(status)
    geo = cls(grid, temporary_store=temporary_store, scalar_type=scalar_type,
              cell_env=cell_env, env_offsets=offsets, rebuildable=rebuildable)
    geo._env_build = {"generated": env_offsets is None, "guard_cells": guard_cells}
    return geo


def rebuild_nanogrid(geo: Any, points: Any, point_envs: Any, status: Any,
                     point_mask: Any) -> Any:
    """`Nanogrid.rebuild(points, point_envs, ...)`: points in their environments' own
    coordinates; out-of-range environments are dropped and flagged in `status`."""
    build = getattr(geo, "_env_build", {})
    info = geo.cell_grid.get_grid_info()
    transform = np.array(info.transform_matrix, dtype=np.float32).reshape(3, 3)
    generated = build.get("generated", False) and geo.environment_count() > 1
    packed, valid, envs, offsets, _, dropped = pack(
        points, point_envs, geo.environment_count(),
        None if generated else geo._env_offsets_host, point_mask=point_mask,
        levels=None, alignment=1, guard_cells=build.get("guard_cells", 3), voxel_size=None,
        translation=np.asarray(info.translation, np.float32), transform=transform,
        strict=False)
    device = geo.cell_grid.device
    mask = kc.array(valid.astype(np.int32), dtype=kc.int32, device=device)
    status = geo.cell_grid.rebuild(kc.array(packed, dtype=kc.vec3i, device=device),
                                   status=status, point_mask=mask)
    if dropped:
        _flag_invalid(status)
    geo._set_cells()
    geo._set_environments(per_cell(geo.cell_grid, packed, valid, envs, np.int32), offsets)
    return status


def build_adaptive_nanogrid(cls: type, points: Any, cell_levels: Any, point_envs: Any,
                            env_count: Any, level_count: Any, env_offsets: Any, *,
                            point_mask: Any, voxel_size: Any, translation: Any,
                            transform: Any, scalar_type: Any, device: Any,
                            temporary_store: Any) -> Any:
    """`AdaptiveNanogrid.from_environment_voxels`."""
    if not hasattr(points, "shape"):
        points, cell_levels, point_envs, env_count = _legacy_sequence(points, cell_levels)
    if cell_levels is None:
        raise TypeError("cell_levels is required")
    if level_count is None:
        raise TypeError("level_count is required")
    level_count = int(level_count)
    if level_count <= 0 or level_count > 8:
        raise ValueError("Adaptive Nanogrid level count must be between 1 and 8")
    device = kc.get_device(device if device is not None else getattr(points, "device", None))
    levels = _host(cell_levels, np.int64).reshape(-1)
    packed, valid, envs, offsets, env_count, _ = pack(
        points, point_envs, env_count, env_offsets, point_mask=point_mask, levels=levels,
        alignment=1 << (level_count - 1), guard_cells=1 << (level_count - 1),
        voxel_size=voxel_size, translation=translation, transform=transform, strict=True)
    grid, cell_env = packed_cell_grid(packed, valid, envs, voxel_size=voxel_size,
                                      translation=translation, transform=transform,
                                      device=device)
    cell_level = per_cell(grid, packed, valid, levels, np.uint8)
    return cls(grid, kc.array(cell_level, dtype=kc.uint8, device=device), level_count,
               temporary_store=temporary_store, scalar_type=scalar_type, cell_env=cell_env,
               env_offsets=offsets)
