"""Sparse marching-cubes programs, run once under Warp (in a subprocess) and once under
kernelc, through `wp.geometry` (Warp's or kernelc's, passed in as `wp`).

The implicit functions are evaluated in NumPy (float32) on the host: a batched evaluator
that round-trips through the host is valid under both libraries' contract, and it gives
both the same values, so that any difference is the extractor's. `run_sparse_example`
runs Warp's example_sparse_marching_cubes.py itself (a bunny SDF from mesh queries), on a
coarser octree. All results are NumPy arrays keyed by case.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np


def sphere_sdf(p: np.ndarray, center=(0.11, -0.07, 0.05), radius: float = 0.61) -> np.ndarray:
    return (np.linalg.norm(p - np.asarray(center, np.float32), axis=1)
            - np.float32(radius)).astype(np.float32)


def torus_sdf(p: np.ndarray) -> np.ndarray:
    q = np.sqrt(p[:, 0] ** 2 + p[:, 2] ** 2) - np.float32(0.5)
    return (np.sqrt(q * q + p[:, 1] ** 2) - np.float32(0.2)).astype(np.float32)


def bumpy_sdf(p: np.ndarray) -> np.ndarray:
    """Not a distance (Lipschitz bound about 2): a sphere with ripples."""
    bumps = np.float32(0.08) * np.sin(7.0 * p[:, 0]) * np.sin(5.0 * p[:, 1] + 1.0)
    return (sphere_sdf(p) + bumps).astype(np.float32)


FIELDS = {"sphere": sphere_sdf, "torus": torus_sdf, "bumpy": bumpy_sdf}


def evaluator(wp: Any, name: str, calls: list | None = None):
    """A batched evaluator of FIELDS[name]: vec3 points in, float32 values out."""
    def evaluate(points):
        if calls is not None:
            calls.append(points.shape[0])
        values = FIELDS[name](points.numpy())
        return wp.array(values, dtype=wp.float32, device=points.device)
    return evaluate


# (case, field, (nx, ny, nz), keyword arguments of sparse_marching_cubes)
CASES: list[tuple[str, str, tuple[int, int, int], dict[str, Any]]] = [
    ("sphere17", "sphere", (17, 17, 17), {"lower": (-1.0, -1.0, -1.0), "upper": (1.0, 1.0, 1.0)}),
    ("sphere_aniso", "sphere", (13, 21, 10),
     {"lower": (-0.9, -1.1, -0.8), "upper": (1.0, 0.95, 0.85), "threshold": 0.05}),
    ("torus", "torus", (24, 18, 26), {"lower": (-1.0, -0.5, -1.0), "upper": (1.0, 0.5, 1.0)}),
    ("torus_cut", "torus", (20, 20, 20), {"lower": (-1.0, -1.0, -1.0), "upper": (0.3, 1.0, 1.0)}),
    ("bumpy_l2", "bumpy", (20, 22, 19),
     {"lower": (-1.0, -1.0, -1.0), "upper": (1.0, 1.0, 1.0), "lipschitz_bound": 2.0}),
    ("default_bounds", "sphere", (3, 3, 3), {"threshold": 1.2}),
    ("empty", "sphere", (9, 9, 9), {"lower": (5.0, 5.0, 5.0), "upper": (6.0, 6.0, 6.0)}),
]


def _cells_case(seed: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """A random band of distinct cells (negative subscripts too) and their corner values
    from one node field, so shared corners agree."""
    rng = np.random.default_rng(seed)
    nodes = rng.standard_normal((12, 11, 13)).astype(np.float32)
    cells = np.argwhere(rng.random((11, 10, 12)) < 0.35).astype(np.int32)
    rng.shuffle(cells)
    offsets = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                        [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]])
    corner = cells[:, None, :] + offsets[None]
    values = nodes[corner[..., 0], corner[..., 1], corner[..., 2]]
    return cells - np.array([4, 2, 7], np.int32), values


def run_cases(wp: Any) -> dict[str, np.ndarray]:
    """Every case of CASES, lipschitz_octree, and sparse_marching_cubes_from_cells."""
    out: dict[str, np.ndarray] = {}
    for name, field, (nx, ny, nz), kwargs in CASES:
        calls: list[int] = []
        verts, indices, stats = wp.geometry.sparse_marching_cubes(
            evaluator(wp, field, calls), nx, ny, nz, return_stats=True, device="cpu", **kwargs)
        out[f"{name}.verts"], out[f"{name}.indices"] = verts.numpy(), indices.numpy()
        out[f"{name}.calls"] = np.array(calls, np.int64)
        out[f"{name}.stats"] = np.array([stats[k] for k in ("leaf_cells", "unique_corners",
                                                            "field_evaluations", "resolution",
                                                            "culled_cells")], np.int64)
        out[f"{name}.ncells"] = np.array(stats["requested_ncells"], np.int64)
    for name, kwargs in (("octree", {}), ("octree_t", {"threshold": 0.1, "lipschitz_bound": 1.5})):
        cells, width = wp.geometry.lipschitz_octree(evaluator(wp, "torus"), (-1.0, -1.0, -1.0),
                                                    2.0, 4, device="cpu", **kwargs)
        out[f"{name}.cells"], out[f"{name}.width"] = cells.numpy(), np.array(width)
    cells, values = _cells_case()
    for name, given in (("cells_np", cells), ("cells_vec3i", wp.array(cells, dtype=wp.vec3i, device="cpu")),
                        ("cells_int", wp.array(cells, dtype=wp.int32, device="cpu"))):
        verts, indices = wp.geometry.sparse_marching_cubes_from_cells(
            given, values, origin=(0.5, -1.0, 2.0), cell_width=0.25, threshold=0.1,
            device="cpu")
        out[f"{name}.verts"], out[f"{name}.indices"] = verts.numpy(), indices.numpy()
    return out


def run_gradients(wp: Any) -> dict[str, np.ndarray]:
    """d(sum(w * verts)) / d(corner_values) of sparse_marching_cubes_from_cells."""
    cells, values = _cells_case(seed=8)
    arr = wp.array(values.reshape(-1), dtype=wp.float32, device="cpu", requires_grad=True)
    tape = wp.Tape()
    with tape:
        verts, _ = wp.geometry.sparse_marching_cubes_from_cells(cells, arr, cell_width=0.5,
                                                                device="cpu")
    weights = np.random.default_rng(2).standard_normal((verts.shape[0], 3)).astype(np.float32)
    verts.grad = wp.array(weights, dtype=wp.vec3, device="cpu")
    tape.backward()
    return {"grad.values": arr.grad.numpy()}


# ---- Warp's example_sparse_marching_cubes -------------------------------------------------

EXAMPLE_DEPTH = 5


def example_source(module: str) -> str:
    """The example on a depth-5 octree, with `module` (warp or kernelc) as wp. Its bunny
    is read from Warp's asset folder on both sides (kernelc bundles no assets)."""
    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from tests.warp_examples import examples_dir

    folder = examples_dir("geometry")
    text = (folder / "example_sparse_marching_cubes.py").read_text()
    text, count = re.subn(r"self\.max_depth = 8", f"self.max_depth = {EXAMPLE_DEPTH}", text)
    if count != 1:
        raise LookupError("example_sparse_marching_cubes.py changed: its depth no longer matches")
    assets = str(folder.parent / "assets")
    text = text.replace("warp.examples.get_asset_directory()", repr(assets))
    if module != "warp":
        text = text.replace("import warp as wp\n", f"import {module} as wp\n")
        text = text.replace("import warp.geometry\n", f"import {module}.geometry\n")
        text = re.sub(r"^import warp\.(examples|render)\n", "", text, flags=re.M)
    return text


def run_sparse_example(module: str, folder: Path, frames: int = 2) -> dict[str, np.ndarray]:
    """Runs the example (no renderer) in both modes, the sparse one with its octree cage;
    returns the last frame's meshes."""
    path = folder / f"{module}_example_sparse_marching_cubes.py"
    path.write_text(example_source(module))
    spec = importlib.util.spec_from_file_location(f"{module}_example_sparse_mc", path)
    example_module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example_module
    spec.loader.exec_module(example_module)
    out = {}
    for mode in ("sparse", "dense"):
        example = example_module.Example(stage_path=None, mode=mode, show_cells=mode == "sparse",
                                          cell_depth=3)
        for _ in range(frames):
            example.step()
            example.render()
            example.frame += 1
        out[f"example_{mode}.verts"] = example.verts.numpy()
        out[f"example_{mode}.indices"] = example.indices.numpy()
        if mode == "sparse":
            out["example_cells.verts"] = example.cell_verts
            out["example_cells.indices"] = example.cell_indices
    return out
