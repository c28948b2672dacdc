"""kernelc.fem's vector- and tensor-valued spaces against Warp's warp.fem, and on their own.

The programs of `tests/fem_vector_programs.py` (symmetric gradients, divergences, curls,
tensor divergences, side jumps, nested integrands, uniform and implicit fields, lookups,
Dirichlet projection with 2x2 blocks) and Warp's `example_stokes.py`,
`example_navier_stokes.py` and `example_taylor_green.py` run here with kernelc and in a
Warp subprocess started when the module's first comparison needs it (Warp's cold compiles
take most of this module's time). Matrices must have Warp's sparsity and block shapes
exactly and its values to float rounding; example solutions agree to rounding amplified
by the iterative solvers' stopping tests.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests import fem_harness as H
from tests import fem_vector_programs as P

PROGRAMS = Path(P.__file__)
# Example(...) arguments and steps; small resolutions keep both runs to seconds.
EXAMPLES = {"stokes": ("example_stokes", {"resolution": 5}, 1),
            "navier_stokes": ("example_navier_stokes", {"resolution": 6}, 2),
            "taylor_green": ("example_taylor_green", {"resolution": 6}, 2)}

_WARP_SCRIPT = """
import fem_vector_programs_warp as P
results = P.run_all()
for name, (module, kwargs, steps) in {examples!r}.items():
    example = importlib.import_module("warp.examples.fem." + module).Example(quiet=True,
                                                                            **kwargs)
    for _ in range(steps):
        example.step()
    results[name + ".u"] = example._u_field.dof_values.numpy()
    results[name + ".p"] = example._p_field.dof_values.numpy()
"""

# Warp's example files loaded with kernelc, and the names their copies are loaded under.
EXAMPLE_MODULES = {"utils": "kcv_fem_example_utils"} | {
    module: f"kcv_fem_{module}" for module, _, _ in EXAMPLES.values()}


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    scripts = {"vector": _WARP_SCRIPT.format(examples=EXAMPLES)}
    with H.started_warp_run(tmp_path_factory, "warp_fem_vector", PROGRAMS, scripts,
                            timeout=900) as run:
        yield run


@pytest.fixture(scope="module")
def kc_programs(warp_run):
    return P.run_all()


@pytest.fixture(scope="module")
def kc_examples(tmp_path_factory):
    """Warp's example modules (and their utils) with kernelc for warp."""
    with H.kernelc_examples(tmp_path_factory, "kc_fem_vector_examples",
                            EXAMPLE_MODULES) as modules:
        yield modules


# ---- agreement with Warp --------------------------------------------------------------------


def test_vector_programs_match_warp(kc_programs, warp_run):
    want = {k: v for k, v in warp_run.results().items() if k.startswith(("2d.", "3d."))}
    assert want and set(want) == set(kc_programs)
    for key, expected in want.items():
        got = np.asarray(kc_programs[key])
        assert got.shape == expected.shape, key
        assert got.dtype == expected.dtype, key
        if expected.dtype.kind in "iu":  # offsets and columns: exactly Warp's
            np.testing.assert_array_equal(got, expected, err_msg=key)
            continue
        scale = float(np.abs(expected).max()) if expected.size else 0.0
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5 * scale + 1e-12,
                                   err_msg=key)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_examples_match_warp(name, kc_examples, warp_run):
    module, kwargs, steps = EXAMPLES[name]
    example = kc_examples[f"kcv_fem_{module}"].Example(quiet=True, **kwargs)
    for _ in range(steps):
        example.step()
    results = warp_run.results()
    for part, field in (("u", example._u_field), ("p", example._p_field)):
        got, want = field.dof_values.numpy(), results[f"{name}.{part}"]
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.abs(want).max() > 0.0
        # CG stops at relative residuals of 1e-4 to 1e-6: matrix rounding moves the iterate
        # by far less than that.
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * np.abs(want).max(),
                                   err_msg=f"{name}.{part}")
