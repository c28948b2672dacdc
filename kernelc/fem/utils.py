"""Mesh generators (Warp's `warp.fem.utils`): the cells of a regular grid cut into
triangles or tetrahedra, or kept as quadrilaterals or hexahedra, as vertex-index arrays.

Vertex (i, j) of an Nx x Ny grid is i * (Ny + 1) + j, vertex (i, j, k) of an Nx x Ny x Nz
grid (i * (Ny + 1) + j) * (Nz + 1) + k; cells are listed in the same order (last axis
fastest, except for `grid_to_tris`), as Warp's are, so meshes built from these have Warp's
cell numbering. The index helpers (`validate_indices_in_range`, `compress_node_indices`,
...) are in `utils_indices.py`.
"""

import numpy as np

from kernelc.fem.utils_indices import (
    check_first_invalid_index,
    compress_node_indices,
    host_read_at_index,
    validate_indices_in_range,
)

__all__ = ["check_first_invalid_index", "compress_node_indices", "grid_to_hexes",
           "grid_to_quads", "grid_to_tets", "grid_to_tris", "host_read_at_index",
           "validate_indices_in_range"]


def _grid_cells(*res: int) -> np.ndarray:
    """(cells, dim) integer coordinates of the cells of a grid, last axis fastest."""
    return np.indices(res).reshape(len(res), -1).T


def _vertex_index(corner: np.ndarray, res: tuple[int, ...]) -> np.ndarray:
    """Index of the vertex at integer coordinates `corner` (..., dim) of a grid of `res` cells."""
    index = np.zeros(corner.shape[:-1], dtype=np.int64)
    for axis, r in enumerate(res):
        index = index * (r + 1) + corner[..., axis]
    return index


def _cells_to_vertices(res: tuple[int, ...], corners: list[tuple[int, ...]]) -> np.ndarray:
    cells = _grid_cells(*res)
    corner = cells[:, None, :] + np.array(corners)[None, :, :]
    return _vertex_index(corner, res)


def grid_to_tris(Nx: int, Ny: int) -> np.ndarray:
    """Triangles of an Nx x Ny grid, two per cell, counter-clockwise; as in Warp, cells are
    listed with x the fast axis here (the vertices keep y fast).

    Args:
        Nx: Number of cells along x.
        Ny: Number of cells along y.

    Returns:
        (2 * Nx * Ny, 3) vertex indices.
    """
    quads = _cells_to_vertices((Nx, Ny), [(0, 0), (1, 0), (1, 1), (0, 1)])
    quads = quads.reshape(Nx, Ny, 4).transpose(1, 0, 2).reshape(-1, 4)
    return np.stack([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]], axis=1).reshape(-1, 3)


# A cube's corners numbered 4 x + 2 y + z, and its split into five positive tetrahedra.
_CUBE_TETS = np.array([[0, 1, 2, 4], [3, 2, 1, 7], [5, 1, 7, 4], [6, 7, 4, 2], [4, 1, 2, 7]])


def grid_to_tets(Nx: int, Ny: int, Nz: int) -> np.ndarray:
    """Tetrahedra of an Nx x Ny x Nz grid, five per cell (z the fast axis); the split is
    mirrored along each axis in every other cell, so that neighbouring cells share their
    face diagonals (mirrored cells' tetrahedra have the opposite orientation, as in Warp).

    Args:
        Nx: Number of cells along x.
        Ny: Number of cells along y.
        Nz: Number of cells along z.

    Returns:
        (5 * Nx * Ny * Nz, 4) vertex indices.
    """
    res = (Nx, Ny, Nz)
    cells = _grid_cells(*res)
    bits = np.stack([(_CUBE_TETS >> 2) & 1, (_CUBE_TETS >> 1) & 1, _CUBE_TETS & 1], axis=-1)
    mirrored = bits[None, :, :, :] ^ (cells % 2)[:, None, None, :]  # (cells, 5, 4, 3)
    corner = cells[:, None, None, :] + mirrored
    return _vertex_index(corner, res).reshape(-1, 4)


def grid_to_quads(Nx: int, Ny: int) -> np.ndarray:
    """Quadrilaterals of an Nx x Ny grid, vertices counter-clockwise.

    Args:
        Nx: Number of cells along x.
        Ny: Number of cells along y.

    Returns:
        (Nx * Ny, 4) vertex indices.
    """
    return _cells_to_vertices((Nx, Ny), [(0, 0), (1, 0), (1, 1), (0, 1)])


def grid_to_hexes(Nx: int, Ny: int, Nz: int) -> np.ndarray:
    """Hexahedra of an Nx x Ny x Nz grid: the bottom face's vertices counter-clockwise, then
    the top face's (z the fast axis).

    Args:
        Nx: Number of cells along x.
        Ny: Number of cells along y.
        Nz: Number of cells along z.

    Returns:
        (Nx * Ny * Nz, 8) vertex indices.
    """
    bottom = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)]
    top = [(x, y, 1) for x, y, _ in bottom]
    return _cells_to_vertices((Nx, Ny, Nz), bottom + top)


__all__ = ["grid_to_hexes", "grid_to_quads", "grid_to_tets", "grid_to_tris"]
