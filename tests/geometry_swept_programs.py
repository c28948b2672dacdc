"""Swept-volume programs, run once under Warp (in a subprocess) and once under kernelc,
through `wp.geometry` (Warp's or kernelc's, passed in as `wp`).

`run_cases` drives the array-level API on a small moving tetrahedron and box;
`run_swept_example` runs Warp's example_swept_volume.py (its procedural arm) with the
import lines ported, capturing the mesh that `main()` hands to its USD writer. Results
are NumPy arrays keyed by case.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

TET_POINTS = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
                      np.float32)
TET_FACES = np.array([0, 2, 1, 0, 3, 2, 0, 1, 3, 1, 2, 3], np.int32)


def box(size=(0.6, 0.3, 0.4)) -> tuple[np.ndarray, np.ndarray]:
    """An outward-wound box centred at the origin."""
    corners = np.array([[x, y, z] for z in (-1, 1) for y in (-1, 1) for x in (-1, 1)],
                       np.float32) * (0.5 * np.asarray(size, np.float32))
    faces = np.array([[0, 2, 3], [0, 3, 1], [4, 5, 7], [4, 7, 6], [0, 1, 5], [0, 5, 4],
                      [2, 6, 7], [2, 7, 3], [1, 3, 7], [1, 7, 5], [0, 4, 6], [0, 6, 2]],
                     np.int32)
    return corners, faces.reshape(-1)


def poses(samples: int = 6, seed: int = 3) -> np.ndarray:
    """(2, samples, 7) poses: the tetrahedron slides along x, the box turns and rises."""
    rng = np.random.default_rng(seed)
    out = np.zeros((2, samples, 7), np.float32)
    t = np.linspace(0.0, 1.0, samples)
    out[0, :, 0] = t
    out[0, :, 6] = 1.0
    angle = 1.3 * t + 0.1 * rng.standard_normal(samples)
    axis = np.array([0.3, 0.8, 0.52]) / np.linalg.norm([0.3, 0.8, 0.52])
    out[1, :, :3] = np.stack([0.4 + 0.0 * t, 0.2 * t, 0.5 + 0.3 * t], axis=1)
    out[1, :, 3:6] = np.sin(0.5 * angle)[:, None] * axis
    out[1, :, 6] = np.cos(0.5 * angle)
    return out


def meshes(wp: Any, winding: bool = True) -> list:
    box_points, box_faces = box()
    return [wp.Mesh(wp.array(p, dtype=wp.vec3, device="cpu"),
                    wp.array(f, dtype=wp.int32, device="cpu"), support_winding_number=winding)
            for p, f in ((TET_POINTS, TET_FACES), (box_points, box_faces))]


def run_cases(wp: Any) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    geo = wp.geometry
    mode = geo.SweptVolumeSignMode
    shapes = meshes(wp)
    xforms = poses()
    lower, upper = geo.swept_volume_bounds(shapes, xforms, padding=0.05)
    out["bounds"] = np.array([list(lower), list(upper)], np.float32)
    for name, kwargs in (
            ("field_voxel", {"voxel_size": 0.1}),
            ("field_res", {"resolution": (14, 11, 12)}),
            ("field_box", {"resolution": (9, 8, 10), "lower": (-0.3, -0.4, -0.2),
                           "upper": (1.6, 0.9, 1.4), "sign_mode": mode.NORMAL}),
            ("field_parity", {"voxel_size": 0.15, "sign_mode": mode.PARITY}),
            ("field_nosign", {"voxel_size": 0.15, "sign_mode": mode.NO_SIGN})):
        field, lo, hi = geo.swept_volume_field(shapes, xforms, **kwargs)
        out[f"{name}.field"] = field.numpy()
        out[f"{name}.bounds"] = np.array([list(lo), list(hi)], np.float32)
    for name, kwargs in (("mesh", {"voxel_size": 0.08, "threshold": 0.5 * np.sqrt(3) * 0.08}),
                         ("mesh_zero", {"resolution": (16, 12, 15)}),
                         ("mesh_nosign", {"voxel_size": 0.1, "threshold": 0.12,
                                          "sign_mode": mode.NO_SIGN})):
        verts, indices = geo.swept_volume_mesh(shapes, xforms, **kwargs)
        out[f"{name}.verts"], out[f"{name}.indices"] = verts.numpy(), indices.numpy()
    # The transforms as a kc/wp array of transforms, and the normal-sign mode on meshes
    # without winding-number support.
    plain = meshes(wp, winding=False)
    as_array = wp.array(xforms, dtype=wp.transform, device="cpu")
    verts, indices = geo.swept_volume_mesh(plain, as_array, voxel_size=0.1, threshold=0.05,
                                           sign_mode=mode.NORMAL)
    out["mesh_normal.verts"], out["mesh_normal.indices"] = verts.numpy(), indices.numpy()
    return out


# ---- Warp's example_swept_volume -----------------------------------------------------------

EXAMPLE_VOXEL = 0.12


def example_source(module: str) -> str:
    """The example with `module` (warp or kernelc) as wp: the import lines and the
    qualified `warp.geometry.` names change, as when a user ports it."""
    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from tests.warp_examples import examples_dir

    text = (examples_dir("geometry") / "example_swept_volume.py").read_text()
    if module != "warp":
        text = text.replace("import warp as wp\n", f"import {module} as wp\n")
        text, count = re.subn(r"^import warp\.geometry$", f"import {module}.geometry", text,
                              flags=re.M)
        if count != 1:
            raise LookupError("example_swept_volume.py changed: its imports no longer match")
        text = re.sub(r"\bwarp\.geometry\.", f"{module}.geometry.", text)
    return text


def run_swept_example(module: str, folder: Path) -> dict[str, np.ndarray]:
    """Runs the example's `main()` for each sign mode on the procedural arm."""
    path = folder / f"{module}_example_swept_volume.py"
    path.write_text(example_source(module))
    spec = importlib.util.spec_from_file_location(f"{module}_example_swept_volume", path)
    example = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example
    spec.loader.exec_module(example)
    captured = {}

    def capture(stage_path: str, verts: Any, indices: Any, up_axis: Any) -> None:
        captured["verts"], captured["indices"] = verts.numpy(), indices.numpy()

    example.write_usd = capture  # main() passes its mesh here instead of writing a file
    out = {}
    modes = sys.modules[f"{module}.geometry"].SweptVolumeSignMode
    for sign, threshold, samples in ((modes.WINDING_NUMBER, None, 12),
                                     (modes.NORMAL, None, 8), (modes.NO_SIGN, 0.15, 8)):
        example.main(num_samples=samples, voxel_size=EXAMPLE_VOXEL, threshold=threshold,
                     sign_mode=sign, stage_path="unused.usd")
        out[f"example_{sign.name}.verts"] = captured["verts"]
        out[f"example_{sign.name}.indices"] = captured["indices"]
    return out
