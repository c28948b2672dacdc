"""kernelc.fem against Warp's warp.fem, and on its own.

The programs of `tests/fem_programs.py` (operators of the diffusion example, mass matrices,
boundary projectors, Dirichlet projection, discrete fields, interpolation) and Warp's own
`example_diffusion.py` / `example_diffusion_3d.py` run twice: here with kernelc, and in two
Warp subprocesses started in the background when the module's first test needs them
(Warp's cold compiles take most of this module's time: ~55 s with an empty Warp kernel
cache on a 2-core machine, ~15 s with a warm one). Matrices must have
Warp's sparsity pattern exactly and its values to float rounding; solutions agree to
rounding amplified by the CG solver's stopping test.

Warp's example sources are loaded with their `import warp...` lines rewritten to kernelc,
and nothing else changed.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from tests import fem_harness as H
from tests import fem_programs as P

CASES = ("q1", "q2", "s2", "q3", "s3")
EXAMPLE_RUNS = {  # Example(...) arguments, besides quiet and resolution
    "d1_c0": {"degree": 1}, "d1_c01": {"degree": 1, "boundary_compliance": 0.1},
    "d2_c0": {"degree": 2}, "d2_c01": {"degree": 2, "boundary_compliance": 0.1},
    "d2_fp64": {"degree": 2, "fp64": True}}
EXAMPLE_3D_RUNS = {"d1": {"degree": 1}, "d2_c01": {"degree": 2, "boundary_compliance": 0.1}}
RES_2D, RES_3D = 10, 4
PROGRAMS = Path(P.__file__)

_WARP_CASES = """
import fem_programs_warp as P
results = P.run_cases({cases!r})
"""

_WARP_EXAMPLES = """
import warp.examples.fem.example_diffusion as ex2
import warp.examples.fem.example_diffusion_3d as ex3
for name, kwargs in {runs2!r}.items():
    e = ex2.Example(quiet=True, resolution={res2}, **kwargs)
    e.step()
    results["ex2." + name] = e._scalar_field.dof_values.numpy()
for name, kwargs in {runs3!r}.items():
    e = ex3.Example(quiet=True, resolution={res3}, **kwargs)
    e.step()
    results["ex3." + name] = e._scalar_field.dof_values.numpy()
"""

# Warp's example files loaded with kernelc, and the names their copies are loaded under.
EXAMPLE_MODULES = {"utils": "kc_fem_example_utils",
                   "example_diffusion": "kc_fem_example_diffusion",
                   "example_diffusion_3d": "kc_fem_example_diffusion_3d"}


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    """Two Warp subprocesses (the programs' cases, the examples)."""
    scripts = {"cases": _WARP_CASES.format(cases=list(CASES)),
               "examples": _WARP_EXAMPLES.format(runs2=EXAMPLE_RUNS, runs3=EXAMPLE_3D_RUNS,
                                                 res2=RES_2D, res3=RES_3D)}
    with H.started_warp_run(tmp_path_factory, "warp_fem", PROGRAMS, scripts,
                            timeout=600) as run:
        yield run


@pytest.fixture(scope="module")
def kc_cases(warp_run):
    return P.run_cases(CASES)


@pytest.fixture(scope="module")
def kc_examples(tmp_path_factory):
    """Warp's example modules (and their utils) with kernelc for warp."""
    with H.kernelc_examples(tmp_path_factory, "kc_fem_examples", EXAMPLE_MODULES) as modules:
        yield modules


# ---- agreement with Warp --------------------------------------------------------------------

# Forms whose values cancel (a field's value and gradient terms) keep more rounding.
_LOOSE = ("field_rhs",)


@pytest.mark.parametrize("case", CASES)
def test_operators_match_warp(case, kc_cases, warp_run):
    want = {k: v for k, v in warp_run.results().items() if k.startswith(case + ".")}
    assert want and set(want) == {k for k in kc_cases if k.startswith(case + ".")}
    for key, expected in want.items():
        got = np.asarray(kc_cases[key])
        assert got.shape == expected.shape, key
        if expected.dtype.kind in "iu":  # node counts, offsets and columns: exactly Warp's
            np.testing.assert_array_equal(got, expected, err_msg=key)
            continue
        scale = float(np.abs(expected).max()) if expected.size else 0.0
        rtol = 1e-4 if key.split(".")[1] in _LOOSE else 1e-5
        np.testing.assert_allclose(got, expected, rtol=0, atol=rtol * scale + 1e-12,
                                   err_msg=key)


@pytest.mark.parametrize("run", list(EXAMPLE_RUNS))
def test_example_diffusion_matches_warp(run, kc_examples, warp_run):
    kwargs = EXAMPLE_RUNS[run]
    example = kc_examples["kc_fem_example_diffusion"].Example(quiet=True, resolution=RES_2D,
                                                               **kwargs)
    example.step()
    example.render()  # Plot.add_field keeps a copy of the field's values
    got = example._scalar_field.dof_values.numpy()
    want = warp_run.results()["ex2." + run]
    assert got.shape == want.shape == ((kwargs["degree"] * RES_2D + 1) ** 2,)
    assert got.dtype == want.dtype
    # CG stops at a relative residual of 1e-4: rounding differences in the matrices move
    # the iterate by far less than that.
    np.testing.assert_allclose(got, want, rtol=0, atol=5e-5 * np.abs(want).max())
    if "boundary_compliance" not in kwargs:  # Dirichlet nodes (x = 0 and 1) hold the value
        positions = example._scalar_space.node_positions().numpy()
        wall = (positions[:, 0] == 0.0) | (positions[:, 0] == 1.0)
        np.testing.assert_allclose(got[wall], 5.0, rtol=1e-6)


@pytest.mark.parametrize("run", list(EXAMPLE_3D_RUNS))
def test_example_diffusion_3d_matches_warp(run, kc_examples, warp_run):
    example = kc_examples["kc_fem_example_diffusion_3d"].Example(
        quiet=True, resolution=RES_3D, **EXAMPLE_3D_RUNS[run])
    example.step()
    got = example._scalar_field.dof_values.numpy()
    want = warp_run.results()["ex3." + run]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=5e-5 * np.abs(want).max())


# ---- checks that need no Warp ---------------------------------------------------------------


@pytest.fixture(scope="module")
def q2_alone():
    return P.assemble(2, False)


def _dense(parts: dict, n: int) -> np.ndarray:
    a = np.zeros((n, n))
    rows = np.repeat(np.arange(n), np.diff(parts["offsets"]))
    np.add.at(a, (rows, parts["columns"]), parts["values"])
    return a


def _parts(out: dict, name: str) -> dict:
    return {k: out[f"{name}.{k}"] for k in ("offsets", "columns", "values")}


def test_independent_checks(q2_alone):
    out = q2_alone
    n = int(out["node_count"])
    area, perimeter = 2.0 * 1.5, 2.0 * (2.0 + 1.5)  # [-1, 1] x [0.5, 2]
    assert out["area"] == pytest.approx(area, rel=1e-6)
    assert out["perimeter"] == pytest.approx(perimeter, rel=1e-6)
    assert out["rhs"].sum() == pytest.approx(area, rel=1e-6)  # the test functions sum to 1
    mass = _dense(_parts(out, "mass"), n)
    assert mass.sum() == pytest.approx(area, rel=1e-6)
    np.testing.assert_allclose(mass, mass.T, atol=1e-7)
    stiffness = _dense(_parts(out, "stiffness"), n)
    np.testing.assert_allclose(stiffness @ np.ones(n), 0.0, atol=1e-5)  # kills constants
    np.testing.assert_allclose(stiffness, stiffness.T, atol=1e-6)
    assert np.linalg.eigvalsh(mass).min() > 0.0
    # the boundary projector lives on the nodes of the walls x = -1 and x = 1
    positions = out["positions"]
    wall = np.isclose(np.abs(positions[:, 0]), 1.0)
    projector = _dense(_parts(out, "projector"), n)
    np.testing.assert_array_equal(np.flatnonzero(np.diag(projector)), np.flatnonzero(wall))
    assert np.count_nonzero(projector - np.diag(np.diag(projector))) == 0
    assert np.diag(projector)[wall].sum() == pytest.approx(2 * 1.5, rel=1e-6)  # wall length
    # after projection: identity rows on the walls, the fixed value 3 as their right side
    projected = _dense(_parts(out, "projected"), n)
    np.testing.assert_allclose(projected[wall], np.eye(n)[wall], atol=1e-7)
    np.testing.assert_allclose(out["projected_rhs"][wall], 3.0, rtol=1e-6)
    np.testing.assert_allclose(projected[:, wall][~wall], 0.0, atol=1e-7)
    # interpolation reproduces the function at the nodes
    x, y = positions[:, 0], positions[:, 1]
    np.testing.assert_allclose(out["interpolated"], np.sin(x) + x * y, atol=2e-6)


@pytest.mark.parametrize("degree", [1, 2, 3])
def test_linear_field_gradient_is_exact(degree):
    geo = fem.Grid2D(res=kc.vec2i(3, 5), bounds_hi=kc.vec2(2.0, 1.0))
    space = fem.make_polynomial_space(geo, degree=degree)
    field = space.make_field()
    p = space.node_positions().numpy()
    field.dof_values = kc.array(p[:, 0] + 2.0 * p[:, 1], dtype=kc.float32)
    quadrature = fem.RegularQuadrature(fem.Cells(geo), order=2)  # exact for f^2
    energy = fem.integrate(P.field_energy, fields={"f": field}, quadrature=quadrature)
    # integral of (x + 2y)^2 + |(1, 2)|^2 over [0, 2] x [0, 1]
    assert energy == pytest.approx(28.0 / 3.0 + 10.0, rel=1e-5)


def test_grid3d_mass_and_boundary():
    geo = fem.Grid3D(res=kc.vec3i(2, 3, 2), bounds_hi=kc.vec3(1.0, 1.5, 0.5))
    space = fem.make_polynomial_space(geo, degree=2)
    cells, boundary = fem.Cells(geo), fem.BoundarySides(geo)
    test, trial = fem.make_test(space, domain=cells), fem.make_trial(space, domain=cells)
    mass = fem.integrate(P.mass_form, fields={"u": trial, "v": test})
    assert mass.values.numpy()[: mass.nnz].sum() == pytest.approx(0.75, rel=1e-6)
    area = fem.integrate(P.one_form, domain=boundary)
    assert area == pytest.approx(2 * (1.5 * 0.5 + 0.5 * 1.0 + 1.0 * 1.5), rel=1e-6)


def test_kc_fem_attribute():
    assert kc.fem is fem
    assert fem.linalg.array_axpy is not None


# ---- errors ---------------------------------------------------------------------------------


def _line_of(marker: str) -> int:
    for number, line in enumerate(PROGRAMS.read_text().splitlines(), start=1):
        if line.rstrip().endswith(marker):
            return number
    raise LookupError(marker)


def _space_and_fields():
    geo = fem.Grid2D(res=kc.vec2i(2))
    space = fem.make_polynomial_space(geo, degree=1)
    cells = fem.Cells(geo)
    return space, fem.make_test(space, domain=cells), fem.make_trial(space, domain=cells)


@pytest.mark.parametrize("name, marker, column, words", [
    ("bad_operator", "# BAD_OPERATOR", 19, "is not an operator of kernelc.fem"),
    ("bad_field_use", "# BAD_FIELD_USE", 12, "can only be passed to fem operators"),
    ("bad_operator_argument", "# BAD_OPERATOR_ARGUMENT", 21, "must be a field argument"),
    ("bad_types", "# BAD_TYPES", 12, "dot"),
])
def test_integrand_errors_point_at_the_source(name, marker, column, words):
    _, test, trial = _space_and_fields()
    fields = {"v": test} if name == "bad_operator_argument" else {"u": trial, "v": test}
    values = {"nu": 1.0} if name == "bad_operator_argument" else {}
    with pytest.raises(kc.KernelError) as info:
        fem.integrate(getattr(P, name), fields=fields, values=values)
    message = str(info.value)
    assert f"fem_programs.py:{_line_of(marker)}:{column}" in message, message
    assert words in message
    assert "^" in message  # the caret under the offending code


def test_bad_calls_raise():
    space, test, trial = _space_and_fields()
    with pytest.raises(ValueError, match="Missing arguments"):
        fem.integrate(P.stiffness_form, fields={"u": trial, "v": test})
    # as in Warp, a field no parameter takes is left out; one given to a value is an error
    np.testing.assert_array_equal(
        fem.integrate(P.value_form, fields={"v": test, "w": test}).numpy(),
        fem.integrate(P.value_form, fields={"v": test}).numpy())
    with pytest.raises(ValueError, match="does not match"):
        fem.integrate(P.stiffness_form, fields={"u": trial, "v": test, "nu": test},
                      values={"nu": 1.0})
    with pytest.raises(ValueError, match="nodal"):
        quadrature = fem.RegularQuadrature(fem.Cells(space.geometry), order=2)
        fem.integrate(P.value_form, fields={"v": test}, quadrature=quadrature,
                      assembly="nodal")
    boundary = fem.BoundarySides(space.geometry)
    with pytest.raises(ValueError, match="trace"):
        fem.integrate(P.field_energy, fields={"f": space.make_field()}, domain=boundary)
    with pytest.raises(RuntimeError, match="fem.integrate"):
        P.value_form(None, None)


def test_docs_example_runs(tmp_path):
    """The example at the top of docs/fem.md runs and solves its problem."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "fem.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    path = tmp_path / "fem_docs_example.py"  # integrands are read back from their file
    path.write_text(code)
    spec = importlib.util.spec_from_file_location("fem_docs_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = module.field.dof_values.numpy()
    positions = module.space.node_positions().numpy()
    wall = (positions[:, 0] == 0.0) | (positions[:, 0] == 1.0)
    np.testing.assert_allclose(x[wall], 0.0, atol=1e-7)
    # -2 u'' = 1 between the walls: u = x (1 - x) / 4, exact in degree 2
    np.testing.assert_allclose(x, positions[:, 0] * (1 - positions[:, 0]) / 4, atol=1e-5)


@pytest.mark.parametrize("reduction", ["weighted_average", "mean", "max", "min", "first"])
def test_interpolation_reductions_agree_on_continuous_fields(reduction):
    geo = fem.Grid2D(res=kc.vec2i(3, 2), bounds_lo=kc.vec2(-1.0, 0.5),
                     bounds_hi=kc.vec2(1.0, 2.0))
    fine = fem.make_polynomial_space(geo, degree=2).make_field()
    fem.interpolate(P.position_value, dest=fine, values={"shift": 1.0}, reduction=reduction)
    p = fine.space.node_positions().numpy()
    want = np.sin(p[:, 0]) + p[:, 0] * p[:, 1] + 1.0
    np.testing.assert_allclose(fine.dof_values.numpy(), want, atol=2e-6)
    coarse = fem.make_polynomial_space(geo, degree=1).make_field()
    fem.interpolate(fine, dest=coarse, reduction=reduction)  # a field instead of an integrand
    q = coarse.space.node_positions().numpy()
    np.testing.assert_allclose(coarse.dof_values.numpy(),
                               np.sin(q[:, 0]) + q[:, 0] * q[:, 1] + 1.0, atol=2e-6)


def test_diagonal_projection_fast_path_is_the_general_one():
    """Projecting with a diagonal P takes a one-kernel path; it must give the general
    path's topology and bits, for any P values (not only normalised 0 / 1)."""
    from kernelc.fem import dirichlet

    _, test, trial = _space_and_fields()
    stiffness = fem.integrate(P.stiffness_form, fields={"u": trial, "v": test},
                              values={"nu": kc.float64(1.5)})
    n = stiffness.nrow
    rows = np.array([0, 2, 3, 7], dtype=np.int32)
    p_values = kc.array(np.array([1.0, 0.37, 0.0, 2.5], dtype=np.float32))
    projector = kc.sparse.bsr_from_triplets(n, n, kc.array(rows), kc.array(rows), p_values,
                                            prune_numerical_zeros=False)
    fast, general = kc.sparse.bsr_copy(stiffness), kc.sparse.bsr_copy(stiffness)
    assert dirichlet._project_diagonal(fast, projector)
    dirichlet._project_general(general, projector)
    for part in ("offsets", "columns", "values"):
        np.testing.assert_array_equal(P._csr(fast)[part], P._csr(general)[part])
