"""Small helpers Warp's renderers offer: color maps for scalar fields and categories, and a
solid shell around a surface mesh."""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelc.render.usd_support import host_array

# matplotlib's "tab10" palette, as 8-bit RGB.
_TAB10 = ((31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
          (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207))

# The 8 triangles of the wedge over one face (i, j, k): corners are (vertex, side), where
# side 0 is the copy moved along the face normal and side 1 the copy moved against it.
_WEDGE = (((0, 0), (1, 0), (2, 0)), ((1, 0), (2, 1), (2, 0)), ((1, 0), (1, 1), (2, 1)),
          ((1, 0), (0, 1), (1, 1)), ((1, 0), (0, 0), (0, 1)), ((1, 1), (0, 1), (2, 1)),
          ((0, 1), (0, 0), (2, 0)), ((0, 1), (2, 0), (2, 1)))


def bourke_color_map(low: float, high: float, v: float) -> list[float]:
    """Paul Bourke's blue-cyan-green-yellow-red color ramp.

    Args:
        low: The value mapped to blue.
        high: The value mapped to red.
        v: The value to color (clamped to [low, high]).

    Returns:
        The RGB color, three floats in [0, 1].
    """
    v = min(max(v, low), high)
    span = high - low
    if span == 0:
        return [0.0, 0.0, 1.0]
    # Four linear pieces, a quarter of the range each; written in terms of v (not of a
    # normalised t) so the results round exactly as Warp's do.
    if v < low + 0.25 * span:
        return [0.0, 4.0 * (v - low) / span, 1.0]
    if v < low + 0.5 * span:
        return [0.0, 1.0, 1.0 + 4.0 * (low + 0.25 * span - v) / span]
    if v < low + 0.75 * span:
        return [4.0 * (v - low - 0.5 * span) / span, 1.0, 0.0]
    return [1.0, 1.0 + 4.0 * (low + 0.75 * span - v) / span, 0.0]


def tab10_color_map(i: int) -> list[float]:
    """The `i`-th color of matplotlib's "tab10" palette (repeating after 10).

    Args:
        i: The category index.

    Returns:
        The RGB color, three floats in [0, 1].
    """
    return [c / 255.0 for c in _TAB10[i % len(_TAB10)]]


def solidify_mesh(faces: Any, vertices: Any, thickness: Any) -> tuple[np.ndarray, np.ndarray]:
    """Turns a triangle surface into a closed shell `thickness` thick on either side.

    Each vertex gets two copies, moved along and against the normal of a face that uses
    it; each face becomes a wedge of 8 triangles between the copies.

    Args:
        faces: Triangle vertex indices, (m, 3) or flat.
        vertices: Vertex positions, (n, 3).
        thickness: One thickness, or one per vertex.

    Returns:
        The shell's faces, (8 m, 3) int32, and vertices, (2 n, 3) float32.
    """
    tris = host_array(faces, np.int32).reshape(-1, 3)
    points = host_array(vertices, np.float32).reshape(-1, 3)
    offsets = np.broadcast_to(host_array(thickness, np.float32), (len(points),))
    edge1 = points[tris[:, 1]] - points[tris[:, 0]]
    edge2 = points[tris[:, 2]] - points[tris[:, 0]]
    normal = np.cross(edge1, edge2)
    length = np.linalg.norm(normal, axis=1, keepdims=True)
    normal = np.divide(normal, length, out=np.zeros_like(normal), where=length > 0.0)
    # A vertex shared by several faces keeps the copies of the last face using it (the
    # order a sequential loop over the faces leaves behind).
    flat = tris.reshape(-1)
    used, last_reversed = np.unique(flat[::-1], return_index=True)
    owner = (len(flat) - 1 - last_reversed) // 3  # the last face using each used vertex
    shift = normal[owner] * offsets[used, None]
    out_vertices = np.zeros((2 * len(points), 3), dtype=np.float32)
    out_vertices[2 * used] = points[used] + shift
    out_vertices[2 * used + 1] = points[used] - shift
    wedge = np.array(_WEDGE, dtype=np.int32)  # (8, 3, 2): corner, side
    out_faces = 2 * tris[:, wedge[:, :, 0]] + wedge[None, :, :, 1]
    return out_faces.reshape(-1, 3).astype(np.int32), out_vertices
