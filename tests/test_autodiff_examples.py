"""Warp's differentiable examples (warp/examples/optim) under kernelc, compared with Warp.

`tests/autodiff_examples.py` runs each example from Warp's own source for a few
optimisation iterations, in a Warp subprocess and here with `import kernelc as wp`; the
losses and gradients of every iteration must agree to rounding, and so must the steps of
the examples' optimisers (`warp.optim` under Warp, `kernelc.optim` under kernelc). Adam
divides each gradient by its own running size, so the parameters it updates may differ by
more than the gradients' rounding (`RTOL`); today they agree bit for bit.

example_diffray's light loop (`for i in range(lights.num_lights)`) is a dynamic loop whose
sum is used after it; Warp 1.19's backward pass reads that sum as it was before the loop
(0), so most of its gradients come out wrong (the texture's are all zero). The comparison
with Warp therefore runs a copy with a static loop (`range(2)`), and kernelc must give the
same gradients with the original dynamic loop. example_navier_stokes_perturbation
differentiates through tile FFTs (`tile_fft`, `tile_ifft`, `launch_tiled`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tests import autodiff_examples as E
from tests.conftest import run_warp

ROOT = Path(__file__).resolve().parents[1]

_WARP_DRIVER = f"""
import sys
import traceback
from pathlib import Path

sys.path.insert(0, {str(ROOT)!r})
from tests import autodiff_examples

folder = Path(sys.argv[0]).parent
for name, static in autodiff_examples.RUNS:
    try:
        outputs = autodiff_examples.run(name, "warp", folder, static)
    except Exception as err:
        traceback.print_exc()
        results[name + "/error"] = np.array(type(err).__name__ + ": " + str(err))
    else:
        for key, value in outputs.items():
            results[name + "/" + key] = value
"""


def _needs(*modules: str) -> None:
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the example needs {module}")


@pytest.fixture(scope="module")
def warp_results(tmp_path_factory) -> dict[str, dict[str, np.ndarray]]:
    if E.examples_dir() is None:
        pytest.skip("warp-lang (with its examples) is not installed")
    flat = run_warp(_WARP_DRIVER, tmp_path_factory.mktemp("warp_optim_examples"))
    by_example: dict[str, dict[str, np.ndarray]] = {}
    for key, value in flat.items():
        name, _, field = key.partition("/")
        by_example.setdefault(name, {})[field] = value
    return by_example


# The parameters Adam updated (example_fluid_checkpoint): a gradient 1e-6 off moves them by
# up to ~3e-4 of their largest value.
RTOL = {"vx": 1e-3, "vy": 1e-3}


def assert_close(have: np.ndarray, want: np.ndarray, what: str, rtol: float = 1e-5) -> None:
    """Equal to float32 rounding, elementwise and relative to the field's largest value."""
    assert have.shape == want.shape, what
    scale = float(np.max(np.abs(want), initial=0.0))
    np.testing.assert_allclose(have, want, rtol=rtol, atol=rtol * scale, err_msg=what)


@pytest.mark.slow  # a Warp subprocess builds both examples' modules
@pytest.mark.parametrize("name,static", E.RUNS, ids=[n for n, _ in E.RUNS])
def test_optim_example_matches_warp(name, static, warp_results, tmp_path):
    if name.startswith("example_fluid_checkpoint"):
        _needs("PIL")
    want = warp_results.get(name, {})
    assert "error" not in want, f"the example fails under Warp: {want.get('error')}"
    have = E.run(name, "kernelc", tmp_path, static)
    assert set(have) == set(want)
    for field, expected in want.items():
        if field.endswith(".grad"):
            assert np.any(expected != 0), f"{name}: {field} is all zero under Warp"
        rtol = RTOL.get(field.partition(":")[2], 1e-5)
        assert_close(have[field], expected, f"{name}: {field}", rtol=rtol)


@pytest.mark.slow
def test_diffray_dynamic_light_loop_gives_the_static_loops_gradients(tmp_path):
    """kernelc differentiates the example's dynamic loop as the unrolled one."""
    if E.examples_dir() is None:
        pytest.skip("warp-lang (with its examples) is not installed")
    dynamic = E.run("example_diffray", "kernelc", tmp_path, static_lights=False)
    static = E.run("example_diffray", "kernelc", tmp_path, static_lights=True)
    assert set(dynamic) == set(static)
    for field, want in static.items():
        assert_close(dynamic[field], want, f"example_diffray: {field}", rtol=1e-6)
    assert np.any(dynamic["0:texture.grad"] != 0)


# ---- examples kernelc cannot run yet ----------------------------------------------------


def test_particle_repulsion_runs(tmp_path):
    if E.examples_dir() is None:
        pytest.skip("warp-lang (with its examples) is not installed")
    _needs("PIL")
    path = tmp_path / "kernelc_example_particle_repulsion.py"
    text = (E.examples_dir() / "example_particle_repulsion.py").read_text()
    text = text.replace("import warp as wp\n", "import kernelc as wp\n").replace(
        "import warp.examples\n", "").replace(
        "warp.examples.get_asset_directory()", repr(str(E.examples_dir().parent / "assets")))
    path.write_text(text.replace("self.sim_substeps = 32", "self.sim_substeps = 1"))
    loader = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(mod)
    mod.Example().step()
