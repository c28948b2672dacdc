"""Warp's own bundled examples (warp/examples/core), run unchanged but for the import line.

The same driver runs under Warp (in a subprocess) and under kernelc (here), on sources that
differ only in `import warp as wp` versus `import kernelc as wp`. A few examples are shrunk
by identical text substitutions on both sides (fewer substeps, smaller images) so that the
comparison stays quick; the kernels themselves are untouched.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class ExampleSpec:
    """How to run one example: constructor arguments, what to call, what to compare."""

    kwargs: dict = field(default_factory=dict)
    action: str = "step"
    calls: int = 1
    fields: tuple[str, ...] = ()
    # Identical (pattern, replacement) edits for both sides, to keep the run short.
    shrink: tuple[tuple[str, str], ...] = ()
    folder: str = "core"  # the examples' subfolder
    args: tuple = ()  # passed to each call of `action`
    then: tuple[tuple[str, tuple], ...] = ()  # (method, args) called once afterwards


SPECS: dict[str, ExampleSpec] = {
    "example_wave": ExampleSpec({"stage_path": None}, calls=2,
                                fields=("sim_grid0", "sim_grid1", "sim_verts")),
    "example_fluid": ExampleSpec(calls=2, fields=("u0", "rho0", "p0", "div"),
                                 shrink=((r"self\.iterations = 100", "self.iterations = 20"),)),
    "example_dem": ExampleSpec({"stage_path": None}, fields=("x", "v"),
                               shrink=((r"self\.sim_substeps = 64", "self.sim_substeps = 4"),
                                       (r"particle_grid\(32, 64, 32", "particle_grid(16, 32, 16"))),
    "example_sph": ExampleSpec({"stage_path": None}, fields=("x", "v", "rho"),
                               shrink=((r"int\(32 / self\.smoothing_length\)", "2"),)),
    "example_raymarch": ExampleSpec({"height": 48, "width": 96}, action="render",
                                    fields=("pixels",)),
    "example_graph_capture": ExampleSpec(calls=2, fields=("pixel_values", "x")),
    # Tile kernels:
    "example_fdtd_3d": ExampleSpec(calls=25, fields=("e_x", "h_y", "electric_energy_sum"),
                                   shrink=((r"N_GRID = 128", "N_GRID = 24"),),
                                   then=(("_check_em_energy", (25,)),)),
    "example_fft_poisson_navier_stokes_2d": ExampleSpec(
        calls=3, fields=("omega_curr", "psi"), shrink=((r"N_GRID = 512", "N_GRID = 32"),)),
    # Differentiable rendering through mesh ray queries. Warp's own gradient differs from
    # kernelc's (and from finite differences) in its lighting loop, so the comparison uses
    # the normal-map mode, whose gradients agree; the benchmark times the example as it is.
    "example_diffray": ExampleSpec(
        {"height": 24, "rot_array": [0.0, 0.25881905, 0.0, 0.96592583]}, calls=2,
        fields=("pixels", "rays"), folder="optim",
        shrink=((r"self\.render_mode = RenderMode\.texture",
                 "self.render_mode = RenderMode.normal_map"),)),
    "example_tile_mcgp": ExampleSpec({"seed": 42, "height": 24, "slices": 3,
                                      "sphere_resolution": 12}, action="render", args=(1,),
                                     fields=("pixels",), folder="tile"),
}


def examples_dir(folder: str = "core") -> Path | None:
    """A folder of Warp's examples (core, tile, ...), found without importing Warp."""
    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "examples" / folder
    return path if path.is_dir() else None


def source_for(name: str, module: str, shrink: bool = True) -> str:
    """The example's source (shrunk, unless `shrink` is False), importing `module` as `wp`."""
    text = (examples_dir(SPECS[name].folder) / f"{name}.py").read_text()
    for pattern, replacement in SPECS[name].shrink if shrink else ():
        text, count = re.subn(pattern, replacement, text)
        if count == 0:
            raise LookupError(f"{name}: the example changed; {pattern!r} no longer matches")
    if module != "warp":
        text = text.replace("import warp as wp\n", f"import {module} as wp\n")
        text = text.replace("from warp.optim import", f"from {module}.optim import")
        text = re.sub(r"^import warp\.render\n", "", text, flags=re.M)
    return text


def run(name: str, module: str, folder: Path) -> dict[str, np.ndarray]:
    """Runs example `name` with `module` as `wp`; returns the compared fields as arrays."""
    spec = SPECS[name]
    path = folder / f"{module}_{name}.py"  # kernels are read back from their source file
    path.write_text(source_for(name, module))
    loader = importlib.util.spec_from_file_location(f"{module}_{name}", path)
    mod = importlib.util.module_from_spec(loader)
    sys.modules[loader.name] = mod
    config = importlib.import_module(module).config
    backward = config.enable_backward  # some examples switch it off for the process
    try:
        loader.loader.exec_module(mod)
        example = mod.Example(**spec.kwargs)
        for _ in range(spec.calls):
            getattr(example, spec.action)(*spec.args)
        for method, args in spec.then:
            getattr(example, method)(*args)
    finally:
        config.enable_backward = backward
    return {f: getattr(example, f).numpy() for f in spec.fields}
