"""Warp's differentiable examples (warp/examples/optim) run under Warp and under kernelc.

The same driver runs each example's own source under Warp (in a subprocess) and here with
`import kernelc as wp` (and `warp.optim` spelt `kernelc.optim`), for a few optimisation
iterations: forward on a tape, backward, then a step of the example's own optimiser
(Warp's `warp.optim.Adam` / `SGD` on the Warp side, kernelc's on the other). The losses,
gradients, optimiser states and updated parameters of every iteration are returned for
comparison.

Both sides get identical text edits, each listed with its reason in `EDITS`: smaller grids,
and for example_diffray a procedural sphere instead of the USD bunny (`pxr` is not a
dependency) and optionally a static light loop (Warp's backward pass of the example's
dynamic light loop is wrong; see tests/test_autodiff_examples.py).
"""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from pathlib import Path

import numpy as np

_SPHERE = '''def _sphere_mesh(n=10, m=14):
    """A UV sphere in front of the camera (replaces the USD bunny)."""
    th = np.linspace(0.15, np.pi - 0.15, n)
    ph = np.linspace(0.0, 2.0 * np.pi, m, endpoint=False)
    pts = [[0.9 * np.sin(t) * np.cos(p), 0.75 + 0.8 * np.cos(t), 0.9 * np.sin(t) * np.sin(p)]
           for t in th for p in ph]
    idx = []
    for a in range(n - 1):
        for b in range(m):
            i0, i1 = a * m + b, a * m + (b + 1) % m
            idx += [i0, i0 + m, i1, i1, i0 + m, i1 + m]
    return np.array(pts), np.array(idx)


class RenderMode:'''

# name -> [(pattern, replacement, why)], applied to both sides
EDITS: dict[str, list[tuple[str, str, str]]] = {
    "example_fluid_checkpoint": [
        (r"N_GRID = wp\.constant\(512\)", "N_GRID = wp.constant(64)", "a smaller grid"),
    ],
    "example_fluid_checkpoint_custom_backward": [
        (r"N_GRID = wp\.constant\(512\)", "N_GRID = wp.constant(64)", "a smaller grid"),
    ],
    "example_navier_stokes_perturbation": [
        (r"N_GRID = 512", "N_GRID = 32", "a smaller grid"),
    ],
    "example_diffray": [
        (r"from pxr import Usd, UsdGeom\n", "", "pxr (usd-core) is not installed"),
        (r"class RenderMode:", _SPHERE, "a procedural mesh"),
        (r"asset_stage = Usd\.Stage\.Open\(.*\)\n\s*mesh_geom = .*\n(\s*)points = .*\n\s*"
         r"indices = .*\n", r"\1points, indices = _sphere_mesh()\n", "no USD stage"),
    ],
}
STATIC_LIGHTS = (r"for i in range\(lights\.num_lights\):", "for i in range(2):")
HEIGHT = 24  # example_diffray's image height (42 x 24 pixels, 4 rays each)
ITERATIONS = 3


def examples_dir() -> Path | None:
    """Warp's examples/optim folder, found without importing Warp."""
    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "examples" / "optim"
    return folder if folder.is_dir() else None


def source_for(name: str, module: str, static_lights: bool = False) -> str:
    """The example's edited source, importing `module` as `wp`."""
    text = (examples_dir() / f"{name}.py").read_text()
    edits = list(EDITS.get(name, []))
    if static_lights:
        edits.append((*STATIC_LIGHTS, "a static light loop"))
    for pattern, replacement, _ in edits:
        text, count = re.subn(pattern, replacement, text)
        if count != 1:
            raise LookupError(f"{name}: the example changed; {pattern!r} matches {count} times")
    if module != "warp":
        assets = examples_dir().parent / "assets"
        text = text.replace("import warp as wp\n", f"import {module} as wp\n")
        text = text.replace("warp.optim", f"{module}.optim")  # import, from-import and uses
        text = re.sub(r"^import warp\.(examples|render)\n", "", text, flags=re.M)
        text = text.replace("warp.examples.get_asset_directory()", repr(str(assets)))
    return text


def load(name: str, module: str, folder: Path, static_lights: bool = False):
    """Imports the edited example from a file in `folder` (kernels are read from files)."""
    tag = f"{module}_{name}{'_static' if static_lights else ''}"
    path = folder / f"{tag}.py"
    path.write_text(source_for(name, module, static_lights))
    loader = importlib.util.spec_from_file_location(tag, path)
    mod = importlib.util.module_from_spec(loader)
    sys.modules[loader.name] = mod
    loader.loader.exec_module(mod)
    return mod


def run_fluid_checkpoint(mod) -> dict[str, np.ndarray]:
    """Three segments of checkpointed backward passes per iteration, then a step of the
    example's Adam optimiser, as its training loop takes it."""
    example = mod.Example(sim_steps=5, pressure_iterations=4, segment_size=2)
    out = {}
    for it in range(ITERATIONS):
        example.forward()
        example.backward()
        vx, vy = example.vx_arrays[0], example.vy_arrays[0]
        out.update({f"{it}:loss": example.loss.numpy().copy(),
                    f"{it}:vx.grad": vx.grad.numpy().copy(),
                    f"{it}:vy.grad": vy.grad.numpy().copy()})
        example.optimizer.step([vx.grad.flatten(), vy.grad.flatten()])
        out.update({f"{it}:vx": vx.numpy().copy(), f"{it}:vy": vy.numpy().copy(),
                    f"{it}:adam.m": example.optimizer.m[0].numpy().copy(),
                    f"{it}:adam.v": example.optimizer.v[1].numpy().copy()})
        example.tape.zero()
    return out


def run_diffray(mod) -> dict[str, np.ndarray]:
    """The example's loss and gradients for rotations on the way back to the target's.

    The driver moves the rotation a quarter of the way towards the target's each iteration
    instead of following the gradient: the image is a step function of the rotation at
    silhouettes and texel boundaries, so a gradient step would let the two sides' rounding
    differences grow from one iteration to the next. The example's SGD optimiser (momentum
    and dampening, on a quaternion array) still takes its step each iteration, and its
    result and momentum buffer are compared, before the driver sets the rotation.
    """
    wp = mod.wp
    reference = mod.Example(height=HEIGHT)
    reference.ray_cast()
    rot = [0.0, (math.sqrt(3) - 1) / (2.0 * math.sqrt(2.0)), 0.0,
           (math.sqrt(3) + 1) / (2.0 * math.sqrt(2.0))]
    target = np.array([[0.0, 0.0, 0.0, 1.0]], dtype=np.float32)
    example = mod.Example(height=HEIGHT, rot_array=rot)
    wp.copy(example.target_pixels, reference.pixels)
    mesh = example.render_mesh
    out = {"target": reference.pixels.numpy().copy()}
    for it in range(ITERATIONS):
        example.tape = wp.Tape()
        with example.tape:
            example.forward()
        example.tape.backward(example.loss)
        rot_grad = example.tape.gradients[mesh.rot]
        grads = {"rot": rot_grad, "pos": mesh.pos.grad, "texture": example.texture.grad,
                 "tex_coords": mesh.tex_coords.grad, "vertex_normals": mesh.vertex_normals.grad,
                 "intensities": example.lights.intensities.grad,
                 "dirs": example.lights.dirs.grad}
        out[f"{it}:loss"] = example.loss.numpy().copy()
        out[f"{it}:pixels"] = example.pixels.numpy().copy()
        out.update({f"{it}:{k}.grad": v.numpy().copy() for k, v in grads.items()})
        before = mesh.rot.numpy().copy()
        example.optimizer.step([rot_grad])
        out[f"{it}:rot.sgd"] = mesh.rot.numpy().copy()
        out[f"{it}:sgd.b"] = example.optimizer.b[0].numpy().copy()
        mesh.rot.assign(before + 0.25 * (target - before))
        wp.launch(mod.normalize, dim=1, inputs=[mesh.rot])
        example.tape.zero()
        example.loss.zero_()
    return out


def run_navier_stokes_perturbation(mod) -> dict[str, np.ndarray]:
    """Two of the example's own optimisation steps (tape forward and backward through its
    tile FFT Poisson solver, Adam, the norm clamp). `step()` clears the gradient at its
    end, so Adam's moments stand for it: after the first step m = (1 - beta1) g."""
    example = mod.Example(spin_up_steps=3, lead_steps=2)
    out = {"omega_0": example.omega_timesteps[0].numpy().copy()}
    for it in range(ITERATIONS - 1):
        example.step()
        out.update({f"{it}:loss": example.loss.numpy().copy(),
                    f"{it}:delta_omega": example.delta_omega.numpy().copy(),
                    f"{it}:adam.m": example.optimizer.m[0].numpy().copy(),
                    f"{it}:adam.v": example.optimizer.v[0].numpy().copy()})
    return out


DRIVERS = {"example_fluid_checkpoint": run_fluid_checkpoint, "example_diffray": run_diffray,
           "example_navier_stokes_perturbation": run_navier_stokes_perturbation,
           # the same training loop; its pressure solve has a hand-written backward pass
           "example_fluid_checkpoint_custom_backward": run_fluid_checkpoint}
# (name, static light loop) for each run compared with Warp
RUNS = [("example_fluid_checkpoint", False), ("example_diffray", True),
        ("example_navier_stokes_perturbation", False),
        ("example_fluid_checkpoint_custom_backward", False)]


def run(name: str, module: str, folder: Path, static_lights: bool = False):
    return DRIVERS[name](load(name, module, folder, static_lights))
