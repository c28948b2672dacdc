"""kernelc.fem's discontinuous spaces and side integrals against Warp's warp.fem.

The programs of `tests/fem_dg_programs.py` (discontinuous Q1 / Q2 / degree-0 spaces with
Gauss-Lobatto and Gauss-Legendre nodes, interior-penalty and upwind side matrices,
traces of discrete fields, `fem.node_count` / `fem.at_node`, `fem.cells` with lookups
across a periodic boundary, on 2-d and 3-d grids) and Warp's DG examples
(`example_burgers`, `example_convection_diffusion_dg`, `example_shallow_water`,
`example_kelvin_helmholtz`, `example_mixed_elasticity`) and `example_convection_diffusion`
run here with kernelc and in a Warp subprocess started when the module's first comparison
needs it. Matrices must have Warp's sparsity exactly and its values to float rounding;
example states agree to rounding, or for the examples with an iterative solver, to its
stopping tolerance.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests import fem_dg_programs as P
from tests.conftest import warp_available
from tests.test_fem import _as_warp, _warp_examples_dir

PROGRAMS = Path(P.__file__)
# name: (module, Example(...) arguments, steps, state attributes, tolerance relative to the
# state's maximum). Explicit time steppers agree to float rounding; the others stop their
# CG / BiCGSTAB iterations at relative residuals of 1e-4, and matrix rounding moves that
# iterate (measured: 9e-7 for convection_diffusion, 3e-4 and 7e-4 for the other two).
EXAMPLES = {
    "burgers": ("example_burgers", {"resolution": 8, "quiet": True}, 2,
                ("velocity_field", "velocity_norm_field"), 1e-5),
    "burgers_p0": ("example_burgers", {"resolution": 8, "degree": 0, "quiet": True}, 2,
                   ("velocity_field",), 1e-5),
    "shallow_water": ("example_shallow_water", {"resolution": 6, "quiet": True}, 1,
                      ("state_field", "height_field"), 1e-5),
    "kelvin_helmholtz": ("example_kelvin_helmholtz", {"resolution": 6, "num_frames": 100}, 1,
                         ("state_field", "rho_field"), 1e-5),
    "kelvin_helmholtz_limited": ("example_kelvin_helmholtz", {
        "resolution": 6, "num_frames": 100, "slope_limiter_enabled": True, "aspect": 2.0}, 1,
        ("state_field",), 1e-5),
    "convection_diffusion": ("example_convection_diffusion", {"resolution": 8, "quiet": True},
                             2, ("_phi_field",), 2e-5),
    "convection_diffusion_dg": ("example_convection_diffusion_dg",
                                {"resolution": 6, "quiet": True}, 2,
                                ("_phi_field", "_phi_curvature_field"), 3e-3),
    "mixed_elasticity": ("example_mixed_elasticity", {"resolution": 5, "quiet": True}, 1,
                         ("_u_field", "_stress_field"), 2e-3),
}

_WARP_SCRIPT = """
import importlib, sys
import numpy as np
import warp as wp
wp.config.quiet = True
wp.config.enable_backward = False
wp.init()
sys.path.insert(0, {folder!r})
import fem_dg_programs_warp as P
results = P.run_all()
for name, (module, kwargs, steps, attributes, _) in {examples!r}.items():
    example = importlib.import_module("warp.examples.fem." + module).Example(**kwargs)
    for _ in range(steps):
        example.step()
    for attribute in attributes:
        results[name + "." + attribute] = getattr(example, attribute).dof_values.numpy()
np.savez({out!r}, **results)
"""


class _WarpRun:
    """The Warp subprocess, started at once and waited for when a result is first needed."""

    def __init__(self, folder: Path) -> None:
        (folder / "fem_dg_programs_warp.py").write_text(_as_warp(PROGRAMS.read_text()))
        self.out = folder / "warp_dg.npz"
        script = folder / "warp_dg.py"
        script.write_text(textwrap.dedent(_WARP_SCRIPT).format(
            folder=str(folder), examples=EXAMPLES, out=str(self.out)))
        self.proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self._results = None

    def results(self) -> dict:
        if self._results is None:
            _, err = self.proc.communicate(timeout=900)
            assert self.proc.returncode == 0, err[-3000:]
            self._results = dict(np.load(self.out))
        return self._results

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    if not warp_available() or _warp_examples_dir() is None:
        pytest.skip("warp-lang (with its examples) is not installed")
    run = _WarpRun(tmp_path_factory.mktemp("warp_fem_dg"))
    yield run
    run.kill()


@pytest.fixture(scope="module")
def kc_programs(warp_run):
    return P.run_all()


def _kernelc_example(text: str) -> str:
    """An example's source with kernelc for warp (examples import each other)."""
    text = text.replace("import warp.examples.fem.utils as fem_example_utils",
                        "import kcd_fem_utils as fem_example_utils")
    text = re.sub(r"from warp\.examples\.fem\.(\w+) import", r"from kcd_fem_\1 import", text)
    return re.sub(r"^(\s*)(import|from) warp\b", r"\1\2 kernelc", text, flags=re.M)


@pytest.fixture(scope="module")
def kc_examples(tmp_path_factory):
    """Warp's example modules (and their utils) with kernelc for warp."""
    folder = _warp_examples_dir()
    if folder is None:
        pytest.skip("warp-lang's examples are not installed")
    out = tmp_path_factory.mktemp("kc_fem_dg_examples")
    modules = {}
    files = ["utils"] + sorted({module for module, *_ in EXAMPLES.values()})
    for file in files:
        name = f"kcd_fem_{file}"
        path = out / f"{name}.py"  # kernels and integrands are read back from their file
        path.write_text(_kernelc_example((folder / f"{file}.py").read_text()))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        modules[file] = module
    yield modules
    for file in modules:
        sys.modules.pop(f"kcd_fem_{file}", None)


def test_dg_programs_match_warp(kc_programs, warp_run):
    want = {k: v for k, v in warp_run.results().items() if k.startswith(("2d.", "3d."))}
    assert want and set(want) == set(kc_programs)
    for key, expected in want.items():
        got = np.asarray(kc_programs[key])
        assert got.shape == expected.shape, key
        assert got.dtype == expected.dtype, key
        if expected.dtype.kind in "iu":  # counts, offsets and columns: exactly Warp's
            np.testing.assert_array_equal(got, expected, err_msg=key)
            continue
        assert np.abs(expected).max() > 0.0, key
        scale = float(np.abs(expected).max())
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5 * scale, err_msg=key)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_examples_match_warp(name, kc_examples, warp_run):
    module, kwargs, steps, attributes, tolerance = EXAMPLES[name]
    example = kc_examples[module].Example(**kwargs)
    for _ in range(steps):
        example.step()
    results = warp_run.results()
    for attribute in attributes:
        got = getattr(example, attribute).dof_values.numpy()
        want = results[f"{name}.{attribute}"]
        assert got.shape == want.shape and got.dtype == want.dtype, attribute
        assert np.abs(want).max() > 0.0
        np.testing.assert_allclose(got, want, rtol=0, atol=tolerance * np.abs(want).max(),
                                   err_msg=f"{name}.{attribute}")
