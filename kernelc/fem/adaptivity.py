"""Building `AdaptiveNanogrid`s (Warp's `warp.fem.adaptive_nanogrid_from_field`,
`adaptive_nanogrid_from_hierarchy` and `enforce_nanogrid_grading`).

The refinement oracle is sampled on the device (an integrand run by `interpolate`, with
Warp's random sequence per cell, so the same field gives Warp's cells); the cell lists are
assembled on the host, and every new set of cells becomes an index grid whose voxel order
numbers them.
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.domain import Cells
from kernelc.fem.integrand import integrand
from kernelc.fem.interpolate import interpolate
from kernelc.fem.nanogrid import _CUBE_CORNERS, grid_voxels, lookup_voxels
from kernelc.fem.nanogrid_adaptive import AdaptiveNanogrid, find_cells
from kernelc.fem.operators import lookup
from kernelc.fem.types import NULL_ELEMENT_INDEX, Domain, Field, Sample

_GRADINGS = (None, "none", "face", "vertex")


def adaptive_nanogrid_from_hierarchy(grids: list[kc.Volume], grading: str | None = None,
                                     temporary_store: Any = None) -> AdaptiveNanogrid:
    """An adaptive grid from sparse volumes, finest first, the voxels of `grids[l]` being
    the cells of level l. Levels must not partly overlap (a cell of level l is either
    covered by finer cells or not at all); where they do, the result is undefined.

    Args:
        grids: The levels' volumes, from finest to coarsest.
        grading: None (or "none"), "face" (cells sharing a face differ by at most one
            level) or "vertex" (likewise for cells sharing a vertex).
        temporary_store: Accepted for Warp compatibility.
    """
    if not grids:
        raise ValueError("No grids to build from!")
    _check_grading(grading)
    level_count = len(grids)
    voxels = [grid_voxels(g) for g in grids]
    merged = np.concatenate([v << level for level, v in enumerate(voxels)])
    info = grids[0].get_grid_info()
    cell_grid = _volume(merged, info.transform_matrix, info.translation, grids[0].device)
    cells = grid_voxels(cell_grid)
    level = np.full(len(cells), -1, dtype=np.int64)
    for k in range(level_count):
        todo = np.flatnonzero(level == -1)
        hit = lookup_voxels(grids[k], cells[todo] >> k) != -1
        level[todo[hit]] = k
    cell_grid, level = enforce_nanogrid_grading(cell_grid, level.astype(np.uint8), level_count,
                                                grading)
    return AdaptiveNanogrid(cell_grid, cell_level=level, level_count=level_count)


def adaptive_nanogrid_from_field(coarse_grid: kc.Volume, level_count: int,
                                 refinement_field: Any, samples_per_voxel: int = 64,
                                 grading: str | None = None,
                                 temporary_store: Any = None) -> AdaptiveNanogrid:
    """An adaptive grid refining a coarse grid where a field asks for it.

    Each cell, starting from the voxels of `coarse_grid` at the coarsest of `level_count`
    levels, samples `refinement_field` at `samples_per_voxel` random points: a value v
    asks for level floor(v * level_count) (0 the finest); a cell is split in eight while
    its finest sample asks for a finer level, and dropped where every sample is negative
    or outside the field's geometry. No cell is added outside the coarse grid.

    Args:
        coarse_grid: The volume whose voxels are the coarsest cells.
        level_count: The number of levels (at most 8).
        refinement_field: A scalar field (e.g. `fem.ImplicitField`) on some geometry.
        samples_per_voxel: Samples of the field per cell and pass.
        grading: None (or "none"), "face" or "vertex", as in
            `adaptive_nanogrid_from_hierarchy`.
        temporary_store: Accepted for Warp compatibility.
    """
    _check_grading(grading)
    if not 1 <= level_count <= 8:
        raise ValueError("Adaptive Nanogrid level count must be between 1 and 8")
    device = coarse_grid.device
    ijk = grid_voxels(coarse_grid)
    level = np.full(len(ijk), level_count - 1, dtype=np.int32)
    domain = Cells(refinement_field.geometry)
    for _ in range(level_count):
        if not len(ijk):
            break
        wanted = np.zeros(len(ijk), dtype=np.int8)
        out = kc.array(wanted, dtype=kc.int8, device=device)
        with kc.ScopedDevice(device):
            interpolate(_refinement_wanted, at=domain, dim=len(ijk),
                        fields={"field": refinement_field},
                        values={"sample_count": samples_per_voxel, "level_count": level_count,
                                "coarse_grid": coarse_grid.id,
                                "cell_ijk": kc.array(ijk, dtype=kc.vec3i, device=device),
                                "cell_level": kc.array(level.astype(np.uint8), dtype=kc.uint8,
                                                       device=device),
                                "refinement": out})
        wanted = out.numpy().astype(np.int32)
        keep, split = wanted == 0, wanted > 0
        children = ((2 * ijk[split])[:, None, :] + _CUBE_CORNERS[None, :, :]).reshape(-1, 3)
        ijk = np.concatenate([ijk[keep], children]).astype(np.int32)
        level = np.concatenate([level[keep], np.repeat(level[split] - 1, 8)]).astype(np.int32)
    fine = ijk << level[:, None]
    info = coarse_grid.get_grid_info()
    fine_scale = 1.0 / (1 << (level_count - 1))
    transform = np.array(info.transform_matrix, dtype=np.float64).reshape(3, 3) * fine_scale
    translation = (np.asarray(info.translation, dtype=np.float64)
                   + (fine_scale - 1.0) * 0.5 * np.asarray(coarse_grid.get_voxel_size()))
    fine_grid = _volume(fine, transform, translation, device)
    cell_level = _levels_in_grid_order(fine_grid, fine, level)
    fine_grid, cell_level = enforce_nanogrid_grading(fine_grid, cell_level, level_count, grading)
    return AdaptiveNanogrid(fine_grid, cell_level=cell_level, level_count=level_count)


def enforce_nanogrid_grading(cell_grid: kc.Volume, cell_level: Any, level_count: int,
                             grading: str | None = None,
                             temporary_store: Any = None) -> tuple[kc.Volume, Any]:
    """Splits cells until neighbours differ by at most one level: across faces
    (`grading="face"`) or across vertices too (`"vertex"`); None or "none" does nothing.
    Returns the new (cell grid, cell levels)."""
    _check_grading(grading)
    if not grading or grading == "none" or level_count <= 2:
        return cell_grid, cell_level
    levels_array = cell_level
    level = np.asarray(cell_level.numpy() if hasattr(cell_level, "numpy") else cell_level)
    level = level.astype(np.int32)
    if grading == "face":
        steps = np.concatenate([np.eye(3, dtype=np.int32), -np.eye(3, dtype=np.int32)])
    else:
        steps = np.stack(np.meshgrid(*[np.arange(-1, 2)] * 3, indexing="ij"), -1).reshape(-1, 3)
    info = cell_grid.get_grid_info()
    changed = False
    for _ in range(level_count - 2):
        ijk = grid_voxels(cell_grid)
        split = np.zeros(len(ijk), dtype=bool)
        for step in steps.astype(np.int32):
            neighbour = find_cells(cell_grid, level, level_count,
                                   (ijk + (step[None, :] << level[:, None])).astype(np.int32))
            found = neighbour != -1
            too_coarse = level[neighbour[found]] > level[found] + 1
            split[neighbour[found][too_coarse]] = True
        if not split.any():
            break
        changed = True
        child = level[split] - 1
        children = (ijk[split][:, None, :]
                    + (_CUBE_CORNERS[None, :, :] << child[:, None, None])).reshape(-1, 3)
        ijk = np.concatenate([ijk[~split], children]).astype(np.int32)
        new_level = np.concatenate([level[~split], np.repeat(child, 8)])
        cell_grid = _volume(ijk, info.transform_matrix, info.translation, cell_grid.device)
        level = _levels_in_grid_order(cell_grid, ijk, new_level).astype(np.int32)
    if not changed:
        return cell_grid, levels_array
    return cell_grid, kc.array(level.astype(np.uint8), dtype=kc.uint8, device=cell_grid.device)


def _check_grading(grading: Any) -> None:
    if grading not in _GRADINGS:
        raise ValueError(f"grading must be one of None, 'none', 'face' or 'vertex', "
                         f"got {grading!r}")


def _volume(voxels: np.ndarray, transform: Any, translation: Any, device: Any) -> kc.Volume:
    points = kc.array(np.ascontiguousarray(voxels, dtype=np.int32), dtype=kc.vec3i,
                      device=device)
    transform = kc.mat33(*np.asarray(transform, dtype=np.float64).reshape(-1).tolist())
    translation = tuple(float(x) for x in np.asarray(translation, dtype=np.float64))
    return kc.Volume.allocate_by_voxels(points, translation=translation, transform=transform,
                                        device=device)


def _levels_in_grid_order(grid: kc.Volume, voxels: np.ndarray, level: np.ndarray) -> np.ndarray:
    """The levels of `voxels` (one each), reordered as the grid numbers its voxels."""
    out = np.zeros(grid.get_voxel_count(), dtype=np.uint8)
    out[lookup_voxels(grid, voxels)] = level
    return out


@integrand
def _refinement_wanted(s: Sample, domain: Domain, field: Field, sample_count: int,
                       level_count: int, coarse_grid: kc.uint64,
                       cell_ijk: kc.array(dtype=kc.vec3i), cell_level: kc.array(dtype=kc.uint8),
                       refinement: kc.array(dtype=kc.int8)):
    # How many levels finer than its own cell s.qp_index wants to be (-1: drop it), from
    # the finest level its samples ask for. Seeds and sample order are Warp's.
    cell = s.qp_index
    ijk = cell_ijk[cell]
    level = int(cell_level[cell])
    rng = kc.rand_init((level << 24) ^ (ijk[0] << 12) ^ (ijk[1] << 6) ^ ijk[2])
    scale = 1.0 / float(1 << (level_count - 1 - level))
    centre = kc.vec3(float(ijk[0]), float(ijk[1]), float(ijk[2])) * scale + kc.vec3(
        0.5 * (scale - 1.0))
    finest = level_count
    for _ in range(sample_count):
        pos = kc.volume_index_to_world(coarse_grid, centre + kc.sample_unit_cube(rng) * scale)
        sample = lookup(domain, pos)
        if sample.element_index != NULL_ELEMENT_INDEX:
            asked = kc.min(level_count - 1, int(kc.floor(field(sample) * float(level_count))))
            if asked >= 0:
                finest = kc.min(asked, finest)
    refinement[cell] = kc.int8(kc.where(finest < level_count,
                                        level - kc.clamp(finest, 0, level), -1))
