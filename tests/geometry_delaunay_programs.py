"""Delaunay-tool programs, run once under Warp (in a subprocess) and once under kernelc,
through `wp.geometry` (Warp's or kernelc's, passed in as `wp`).

The meshes are built here in NumPy: jittered and sheared grids, a fan over an ellipse, a
star polygon, a sweep triangulation of random points, and small meshes with boundary,
non-manifold and degenerate triangles. `run_adjacency_cases` and `run_flip_cases` return
NumPy arrays keyed by case.
"""

from typing import Any

import numpy as np


def grid_mesh(nx: int, ny: int, jitter: float = 0.0, seed: int = 0,
              shear: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """An (nx x ny)-cell grid, each cell cut along its lower-left to upper-right diagonal;
    interior nodes moved by up to `jitter`, then x sheared by `shear * y`."""
    i, j = np.meshgrid(np.arange(nx + 1), np.arange(ny + 1), indexing="ij")
    points = np.stack([i.ravel(), j.ravel()], axis=1).astype(np.float32)
    inner = ((i > 0) & (i < nx) & (j > 0) & (j < ny)).ravel()
    rng = np.random.default_rng(seed)
    points[inner] += rng.uniform(-jitter, jitter, (int(inner.sum()), 2)).astype(np.float32)
    points[:, 0] += np.float32(shear) * points[:, 1]
    node = np.arange((nx + 1) * (ny + 1)).reshape(nx + 1, ny + 1)
    a, b = node[:-1, :-1].ravel(), node[1:, :-1].ravel()
    c, d = node[1:, 1:].ravel(), node[:-1, 1:].ravel()
    tris = np.stack([np.stack([a, b, c], 1), np.stack([a, c, d], 1)], 1).reshape(-1, 3)
    return points, tris.astype(np.int32)


def ellipse_fan(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Points on an ellipse (convex, no four on a circle) as a fan from the first one."""
    angles = np.sort(np.random.default_rng(seed).uniform(0.0, 2.0 * np.pi, n))
    points = np.stack([2.0 * np.cos(angles), np.sin(angles)], 1).astype(np.float32)
    tris = np.array([[0, k, k + 1] for k in range(1, n - 1)], np.int32)
    return points, tris


def star_mesh(tips: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """A non-convex star polygon, as a fan from its centre (vertex 0)."""
    k = np.arange(2 * tips)
    radius = np.where(k % 2 == 0, 1.0, 0.45)
    rim = np.stack([radius * np.cos(np.pi * k / tips), radius * np.sin(np.pi * k / tips)], 1)
    points = np.concatenate([[[0.0, 0.0]], rim]).astype(np.float32)
    tris = np.array([[0, 1 + m, 1 + (m + 1) % (2 * tips)] for m in range(2 * tips)], np.int32)
    return points, tris


def _orient(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> float:
    return float((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]))


def sweep_triangulation(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random points in the unit square, triangulated by a left-to-right sweep: each point
    in x order is joined to the hull edges it sees. A valid, counter-clockwise and far from
    Delaunay triangulation of the convex hull."""
    points = np.random.default_rng(seed).uniform(0.05, 1.0, (count, 2)).astype(np.float32)
    points = points[np.lexsort((points[:, 1], points[:, 0]))]
    p = points.astype(np.float64)
    hull = [0, 1, 2] if _orient(p[0], p[1], p[2]) > 0 else [0, 2, 1]
    tris = [list(hull)]
    for v in range(3, count):
        m = len(hull)
        seen = [_orient(p[hull[e]], p[hull[(e + 1) % m]], p[v]) < 0 for e in range(m)]
        first = next(e for e in range(m) if seen[e] and not seen[e - 1])
        hull = hull[first:] + hull[:first]
        run = 0
        while seen[(first + run) % m]:
            tris.append([hull[run + 1], hull[run], v])
            run += 1
        hull = [hull[0], v] + hull[run:]
    return points, np.array(tris, np.int32)


def t_junction() -> tuple[np.ndarray, np.ndarray]:
    """Four triangles, one of them flat: vertex 2 lies on the edge 0-1 of triangle
    (0, 2, 1), which has zero area, between (0, 1, 3) above and two triangles below."""
    points = np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 0.0], [1.1, 1.3], [0.9, -1.2],
                       [2.2, -0.8]], np.float32)
    tris = np.array([[0, 1, 3], [0, 2, 1], [0, 4, 2], [2, 4, 1], [1, 4, 5]], np.int32)
    return points, tris


FIN = np.array([[0, 1, 2], [1, 0, 3], [0, 1, 4], [1, 0, 5], [0, 1, 6], [2, 1, 7]], np.int32)
DEGENERATE = np.array([[0, 0, 1], [0, 1, 0], [2, 2, 2], [1, 0, 3], [3, 4, 3], [4, 3, 5]],
                      np.int32)


def adjacency_meshes() -> dict[str, tuple[np.ndarray, int | None]]:
    """(indices, vertex_count or None) per case."""
    rng = np.random.default_rng(17)
    grid = grid_mesh(5, 4, jitter=0.2, seed=11)[1]
    mixed = grid.copy()
    mixed[::3] = mixed[::3, ::-1]  # some triangles wound the other way
    shuffled = grid_mesh(12, 9)[1][rng.permutation(216)]
    shuffled = np.stack([np.roll(row, int(s)) for row, s in zip(shuffled, rng.integers(0, 3, 216))])
    return {
        "pair": (np.array([[0, 1, 2], [0, 2, 3]], np.int32), 4),
        "grid": (grid, 30), "grid_inferred": (grid, None), "grid_spare": (grid, 45),
        "mixed_winding": (mixed, None), "shuffled": (shuffled, 130),
        "fan": (ellipse_fan(12)[1], None), "star": (star_mesh()[1], 15),
        "sweep": (sweep_triangulation(60, seed=5)[1], 60),
        "fin": (FIN, None), "degenerate": (DEGENERATE, 6),
        "junction": (t_junction()[1], 6), "empty": (np.zeros((0, 3), np.int32), None),
    }


def run_adjacency_cases(wp: Any) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    geo = wp.geometry
    for name, (tris, count) in adjacency_meshes().items():
        indices = wp.array(tris, dtype=wp.int32, device="cpu")
        neighbors, edges = geo.tri_tri_adjacency(indices, vertex_count=count)
        alone = geo.tri_tri_adjacency(indices, count, return_neighbor_edge_indices=False)
        out[f"{name}.neighbors"], out[f"{name}.edges"] = neighbors.numpy(), edges.numpy()
        out[f"{name}.alone"] = alone.numpy()
    # A strided view: every other row of a larger array.
    padded = np.repeat(adjacency_meshes()["grid"][0], 2, axis=0)
    view = wp.array(padded, dtype=wp.int32, device="cpu")[::2]
    out["strided.neighbors"] = geo.tri_tri_adjacency(view, 30)[0].numpy()
    return out


def neighbor_edge_kernel(wp: Any) -> Any:
    """A user kernel that recovers `neighbor_edge_indices` with the kernel API."""
    find = wp.geometry.find_triangle_neighbor_edge_index

    @wp.kernel
    def recover_edges(neighbors: wp.array2d(dtype=wp.int32), out: wp.array2d(dtype=wp.int32)):
        t, j = wp.tid()
        n = neighbors[t, j]
        out[t, j] = -1
        if n >= 0:
            out[t, j] = find(neighbors, n, t)

    return recover_edges


def run_user_kernel(wp: Any) -> dict[str, np.ndarray]:
    tris = sweep_triangulation(80, seed=9)[1]
    neighbors, _ = wp.geometry.tri_tri_adjacency(wp.array(tris, dtype=wp.int32, device="cpu"))
    out = wp.full(neighbors.shape, 7, dtype=wp.int32, device="cpu")
    wp.launch(neighbor_edge_kernel(wp), dim=neighbors.shape, inputs=[neighbors, out],
              device="cpu")
    return {"user_kernel.edges": out.numpy()}


def flip_meshes() -> dict[str, tuple[np.ndarray, np.ndarray, dict[str, Any]]]:
    """(points, triangles, keyword arguments of delaunay_edge_flip) per case."""
    quad_points = np.array([[-3.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, -1.0]], np.float32)
    quad = np.array([[0, 1, 2], [1, 0, 3]], np.int32)
    flat_ref = np.array([[-3.0, 0.0], [3.0, 0.0], [0.0, 0.0], [0.0, 0.0]], np.float32)
    sweep = sweep_triangulation(300, seed=3)
    grid = grid_mesh(30, 30, jitter=0.3, seed=99)
    ref = grid[0] + np.random.default_rng(1).normal(0.0, 0.2, grid[0].shape).astype(np.float32)
    fin_points = np.array([[0, 0], [1, 0], [0.5, 0.9], [0.5, -0.2], [0.4, 2.0], [0.6, -2.0],
                           [0.5, 0.1], [1.5, 0.8]], np.float32)
    return {
        "quad": (quad_points, quad, {}),
        "quad_ref_flat": (quad_points, quad, {"ref_positions": flat_ref}),
        "grid": (*grid_mesh(6, 5, jitter=0.3, seed=1234), {}),
        "grid30": (*grid, {}),
        "grid30_ref": (*grid, {"ref_positions": ref, "ref_area_epsilon": 0.05}),
        "sheared": (*grid_mesh(40, 40, shear=0.1), {"max_passes": 5}),
        "regular": (*grid_mesh(4, 4), {}),
        "ellipse": (*ellipse_fan(40, seed=3), {}),
        "star": (*star_mesh(7), {}),
        "sweep": (*sweep, {}),
        "sweep_one_pass": (*sweep, {"max_passes": 1}),
        "sweep_area_eps": (*sweep, {"area_epsilon": 2e-4}),
        "junction": (*t_junction(), {}),
        "fin": (fin_points, FIN, {}),
        "empty": (np.zeros((0, 2), np.float32), np.zeros((0, 3), np.int32), {}),
    }


def run_flip_cases(wp: Any) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, (points, tris, kwargs) in flip_meshes().items():
        positions = wp.array(points, dtype=wp.vec2, device="cpu")
        indices = wp.array(tris, dtype=wp.int32, device="cpu")
        if "ref_positions" in kwargs:
            kwargs = dict(kwargs, ref_positions=wp.array(kwargs["ref_positions"],
                                                          dtype=wp.vec2, device="cpu"))
        flips = wp.geometry.delaunay_edge_flip(positions, indices, **kwargs)
        out[f"{name}.flips"] = flips.numpy()
        out[f"{name}.indices"] = indices.numpy().copy()  # a view on the CPU
        again = wp.geometry.delaunay_edge_flip(positions, indices, **kwargs)
        out[f"{name}.again"] = again.numpy()
    return out
