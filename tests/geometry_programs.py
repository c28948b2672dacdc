"""Iso-surface programs run once under Warp (in a subprocess) and once under kernelc.

`run_cases(wp)` extracts surfaces from the fields below with every extractor, threshold
and bounds in `CASES` through `wp.geometry` (Warp's or kernelc's, passed in as `wp`), and
also drives the stateful API (`surface`, `resize`, the deprecated `MarchingCubes` names).
`run_isosurface_example` runs Warp's example_isosurface.py, shrunk to a small grid, with
either library. Both return plain NumPy arrays keyed by case, so the two runs compare
key by key.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np


def _grid(shape: tuple[int, int, int], lo: float = -1.0, hi: float = 1.0) -> list[np.ndarray]:
    axes = [np.linspace(lo, hi, n) for n in shape]
    return np.meshgrid(*axes, indexing="ij")


def sphere(shape: tuple[int, int, int], radius: float = 0.6,
           center: tuple[float, float, float] = (0.03, -0.02, 0.05)) -> np.ndarray:
    """Signed distance to a sphere inside the grid (negative inside)."""
    x, y, z = _grid(shape)
    d = np.sqrt((x - center[0]) ** 2 + (y - center[1]) ** 2 + (z - center[2]) ** 2) - radius
    return d.astype(np.float32)


def torus(shape: tuple[int, int, int], major: float = 0.55, minor: float = 0.22) -> np.ndarray:
    x, y, z = _grid(shape)
    return (np.sqrt((np.sqrt(x * x + z * z) - major) ** 2 + y * y) - minor).astype(np.float32)


def noise(shape: tuple[int, int, int], seed: int = 7) -> np.ndarray:
    """Random values: every marching-cubes case and many ambiguous faces occur."""
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def open_sphere(shape: tuple[int, int, int]) -> np.ndarray:
    """A sphere that leaves the grid through every face (an open surface)."""
    return sphere(shape, radius=1.2, center=(0.0, 0.0, 0.0))


def with_nans(shape: tuple[int, int, int]) -> np.ndarray:
    field = noise(shape, seed=3)
    field[2, 3, 1] = np.nan
    field[-2, 1, -3] = np.nan
    return field


FIELDS = {
    "sphere16": lambda: sphere((16, 16, 16)),
    "sphere_flat": lambda: sphere((21, 13, 9), radius=0.7),
    "torus": lambda: torus((24, 18, 24)),
    "noise": lambda: noise((9, 10, 11)),
    "noise_thin": lambda: noise((2, 5, 3), seed=11),
    "open": lambda: open_sphere((12, 11, 10)),
    "nans": lambda: with_nans((7, 8, 6)),
    "flat": lambda: np.ones((4, 5, 6), np.float32),
}

MC, NETS = "IsoSurfaceMarchingCubes", "IsoSurfaceNets"
BOUNDS = {"lower": (-1.0, -2.0, 0.5), "upper": (1.0, 3.0, 2.0)}

# (case name, field, extractor, threshold, extract keyword arguments)
CASES: list[tuple[str, str, str, float, dict[str, Any]]] = []
for _cls, _tag in ((MC, "mc"), (NETS, "sn")):
    CASES += [
        (f"{_tag}_sphere16", "sphere16", _cls, 0.0, {}),
        (f"{_tag}_sphere16_t", "sphere16", _cls, 0.17, {}),
        (f"{_tag}_sphere_flat_bounds", "sphere_flat", _cls, 0.0, BOUNDS),
        (f"{_tag}_sphere_flat_lower", "sphere_flat", _cls, -0.1, {"lower": (0.5, 0.5, 0.5)}),
        (f"{_tag}_torus", "torus", _cls, 0.0, {"upper": (2.0, 1.5, 2.0)}),
        (f"{_tag}_noise", "noise", _cls, 0.0, {}),
        (f"{_tag}_noise_t", "noise", _cls, 0.4, BOUNDS),
        (f"{_tag}_noise_thin", "noise_thin", _cls, 0.0, {}),
        (f"{_tag}_open", "open", _cls, 0.0, {}),
        (f"{_tag}_nans", "nans", _cls, 0.1, {}),
        (f"{_tag}_flat", "flat", _cls, 0.0, {}),
    ]
CASES += [
    ("sn_sphere16_quad", "sphere16", NETS, 0.0, {"topology": "quad"}),
    ("sn_noise_quad", "noise", NETS, -0.2, {"topology": "quad", **BOUNDS}),
]


def field_array(wp: Any, name: str) -> Any:
    return wp.array(FIELDS[name](), dtype=wp.float32, device="cpu")


def run_cases(wp: Any) -> dict[str, np.ndarray]:
    """Every case of `CASES`, then the stateful API, with `wp` as the library."""
    out: dict[str, np.ndarray] = {}
    for name, field, cls, threshold, kwargs in CASES:
        verts, indices = getattr(wp.geometry, cls).extract(field_array(wp, field), threshold,
                                                           **kwargs)
        out[f"{name}.verts"], out[f"{name}.indices"] = verts.numpy(), indices.numpy()
    # A transposed (strided) view of a field.
    view = field_array(wp, "torus").transpose((2, 0, 1))
    for cls, tag in ((MC, "mc"), (NETS, "sn")):
        verts, indices = getattr(wp.geometry, cls).extract(view, 0.05)
        out[f"{tag}_view.verts"], out[f"{tag}_view.indices"] = verts.numpy(), indices.numpy()
    out.update(_stateful(wp))
    return out


def _stateful(wp: Any) -> dict[str, np.ndarray]:
    out = {}
    nets = wp.geometry.IsoSurfaceNets(16, 16, 16, lower=(0.0, 0.0, 0.0), upper=(1.0, 1.0, 1.0),
                                      topology="quad")
    nets.surface(field_array(wp, "sphere16"), 0.05)
    out["state_sn.verts"], out["state_sn.indices"] = nets.verts.numpy(), nets.indices.numpy()
    nets.resize(24, 18, 24)
    nets.surface(field_array(wp, "torus"), 0.0)
    out["state_sn2.verts"], out["state_sn2.indices"] = nets.verts.numpy(), nets.indices.numpy()
    mc = wp.geometry.IsoSurfaceMarchingCubes(9, 10, 11, (-1.0, -1.0, -1.0), (1.0, 1.0, 1.0))
    mc.surface(field_array(wp, "noise"), 0.25)
    out["state_mc.verts"], out["state_mc.indices"] = mc.verts.numpy(), mc.indices.numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = wp.MarchingCubes(16, 16, 16, domain_bounds_lower_corner=wp.vec3(-1.0, -1.0, -1.0),
                               domain_bounds_upper_corner=wp.vec3(1.0, 1.0, 1.0))
        old.surface(field_array(wp, "sphere16"), 0.0)
        out["alias.verts"], out["alias.indices"] = old.verts.numpy(), old.indices.numpy()
        verts, indices = wp.geometry.IsoSurfaceMarchingCubes.extract_surface_marching_cubes(
            field_array(wp, "sphere_flat"), 0.1, (0.0, 0.0, 0.0), (2.0, 1.0, 1.0))
        out["old_extract.verts"], out["old_extract.indices"] = verts.numpy(), indices.numpy()
    return out


def run_gradients(wp: Any) -> dict[str, np.ndarray]:
    """d(sum(w * verts)) / d(field) through a tape, for both extractors."""
    out = {}
    weights = np.random.default_rng(5).standard_normal((4000, 3)).astype(np.float32)
    for cls, tag in ((MC, "mc"), (NETS, "sn")):
        field = wp.array(noise((6, 7, 5), seed=9), dtype=wp.float32, device="cpu",
                         requires_grad=True)
        tape = wp.Tape()
        with tape:
            verts, _ = getattr(wp.geometry, cls).extract(field, 0.2)
        verts.grad = wp.array(weights[:verts.shape[0]], dtype=wp.vec3, device="cpu")
        tape.backward()
        out[f"grad_{tag}.field"] = field.grad.numpy()
    return out


# ---- Warp's example_isosurface -------------------------------------------------------------

EXAMPLE_DIM = 20
EXAMPLE_RUNS = (("marching_cubes", "triangle"), ("surface_nets", "triangle"),
                ("surface_nets", "quad"))


def example_source(module: str) -> str:
    """example_isosurface.py on a small grid, importing `module` (warp or kernelc) as wp."""
    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:  # under Warp this runs in a plain subprocess
        sys.path.insert(0, root)
    from tests.warp_examples import examples_dir

    text = (examples_dir("geometry") / "example_isosurface.py").read_text()
    text, count = re.subn(r"self\.dim = 64", f"self.dim = {EXAMPLE_DIM}", text)
    if count != 1:
        raise LookupError("example_isosurface.py changed: its grid size no longer matches")
    if module != "warp":
        text = text.replace("import warp as wp\n", f"import {module} as wp\n")
        text = text.replace("import warp.geometry\n", f"import {module}.geometry\n")
        text = re.sub(r"^import warp\.render\n", "", text, flags=re.M)
    return text


def run_isosurface_example(module: str, folder: Path, frames: int = 2) -> dict[str, np.ndarray]:
    """Runs the example (no renderer: stage_path None) for `frames` frames per method and
    topology; returns the last frame's field, vertices and faces of each run."""
    path = folder / f"{module}_example_isosurface.py"  # kernels are read from the file
    path.write_text(example_source(module))
    spec = importlib.util.spec_from_file_location(f"{module}_example_isosurface", path)
    example_module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example_module
    spec.loader.exec_module(example_module)
    out = {}
    for method, topology in EXAMPLE_RUNS:
        example = example_module.Example(stage_path=None, method=method, topology=topology)
        for _ in range(frames):
            example.step()
            example.render()
            example.frame += 1
        key = f"example_{method}_{topology}"
        out[f"{key}.field"] = example.field.numpy()
        out[f"{key}.verts"] = example.iso.verts.numpy()
        out[f"{key}.indices"] = example.iso.indices.numpy()
    return out
