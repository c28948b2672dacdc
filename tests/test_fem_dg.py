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

from pathlib import Path

import numpy as np
import pytest

from tests import fem_dg_programs as P
from tests import fem_harness as H

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
import fem_dg_programs_warp as P
results = P.run_all()
for name, (module, kwargs, steps, attributes, _) in {examples!r}.items():
    example = importlib.import_module("warp.examples.fem." + module).Example(**kwargs)
    for _ in range(steps):
        example.step()
    for attribute in attributes:
        results[name + "." + attribute] = getattr(example, attribute).dof_values.numpy()
"""

# Warp's example files loaded with kernelc (examples import each other), and the names their
# copies are loaded under.
EXAMPLE_MODULES = {file: f"kcd_fem_{file}"
                   for file in ["utils"] + sorted({module for module, *_ in EXAMPLES.values()})}


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    scripts = {"dg": _WARP_SCRIPT.format(examples=EXAMPLES)}
    with H.started_warp_run(tmp_path_factory, "warp_fem_dg", PROGRAMS, scripts,
                            timeout=900) as run:
        yield run


@pytest.fixture(scope="module")
def kc_programs(warp_run):
    return P.run_all()


@pytest.fixture(scope="module")
def kc_examples(tmp_path_factory):
    """Warp's example modules (and their utils) with kernelc for warp, by file name."""
    with H.kernelc_examples(tmp_path_factory, "kc_fem_dg_examples",
                            EXAMPLE_MODULES) as modules:
        yield {file: modules[name] for file, name in EXAMPLE_MODULES.items()}


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
