"""Gradients of kernelc's tapes compared with Warp's, and with finite differences.

Every case of `tests/autodiff_cases.py` (kernels in `tests/autodiff_programs.py`) runs forward and backward on a `wp.Tape` twice
from the same source and inputs: in one Warp subprocess (Warp builds the module once), and
here under kernelc. Losses, arrays and every `.grad` must agree to rounding (float32:
rtol 1e-5, float64: rtol 1e-12, both also relative to the field's largest value).

Warp 1.19 itself is wrong for a few of them (`WARP_WRONG`: mostly the backward pass of
dynamic loops); there kernelc's gradients are checked against central finite differences
of float64 kernels instead, as are several other cases, independently of Warp.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
from tests import autodiff_cases as C
from tests import autodiff_programs as P
from tests.conftest import run_warp

ROOT = Path(__file__).resolve().parents[1]
FRAC = [name for name, _ in P.UNARY].index("frac")
MOD = [spec[0] for spec in P.BINARY].index("mod")

_WARP_DRIVER = f"""
import os
import sys

os.environ["KERNELC_AUTODIFF_MODULE"] = "warp"
# Differentiate writes to vector / matrix components (v[k] = ...) as kernelc always does;
# by default Warp updates them in place and gets the overwritten components' gradients wrong.
wp.config.enable_vector_component_overwrites = True
sys.path.insert(0, {str(ROOT)!r})
from tests import autodiff_cases

results.update(autodiff_cases.run_all())
"""

_DYNAMIC = ("Warp's backward pass of a dynamic loop replays the loop body once per iteration "
            "with the loop-carried values as they are after the loop, so nonlinear carried "
            "state gets wrong gradients")
# (case, field) -> (the part of the field Warp gets wrong, why)
WARP_WRONG: dict[tuple[str, str], tuple[object, str]] = {}
for _p in ("float32", "float64"):
    WARP_WRONG.update({
        (f"unary_{_p}", "x.grad"): (np.s_[:, FRAC], "Warp has no adjoint for frac (0); "
                                                    "its slope is 1"),
        (f"dyn_product_{_p}", "a.grad"): (np.s_[...], _DYNAMIC),
        (f"dyn_sin_{_p}", "a.grad"): (np.s_[...], _DYNAMIC),
        (f"dyn_sin_{_p}", "x.grad"): (np.s_[...], _DYNAMIC),
        (f"while_{_p}", "a.grad"): (np.s_[...], _DYNAMIC),
        (f"break_continue_{_p}", "a.grad"): (np.s_[...], _DYNAMIC + " (and after a break)"),
        (f"break_continue_{_p}", "x.grad"): (np.s_[...], _DYNAMIC + " (and after a break)"),
        (f"nested_{_p}", "a.grad"): (np.s_[...], _DYNAMIC),
        (f"nested_{_p}", "x.grad"): (np.s_[...], _DYNAMIC),
        (f"dyn_used_after_{_p}", "x.grad"): (
            np.s_[...], "Warp's backward pass reads a value summed in a dynamic loop as it "
                        "was before the loop (0), so s * x gets no gradient in x"),
    })
WARP_WRONG[("early_return_vec_loop", "x.grad")] = (np.s_[...], _DYNAMIC + " (a vec3 here)")
WARP_WRONG[("early_return_vec_loop", "b.grad")] = (np.s_[...], _DYNAMIC + " (a vec3 here)")
WARP_WRONG[("cast_reverse", "y.grad")] = (np.s_[...], _DYNAMIC + " (here in a func)")


@pytest.fixture(scope="module")
def warp_results(tmp_path_factory) -> dict[str, dict[str, np.ndarray]]:
    flat = run_warp(_WARP_DRIVER, tmp_path_factory.mktemp("warp_autodiff"))
    by_case: dict[str, dict[str, np.ndarray]] = {}
    for key, value in flat.items():
        name, _, field = key.partition("/")
        by_case.setdefault(name, {})[field] = value
    return by_case


def assert_close(have: np.ndarray, want: np.ndarray, what: str) -> None:
    """Equal to rounding: rtol 1e-5 (float32) or 1e-12 (float64), elementwise and relative
    to the largest magnitude of `want`."""
    assert have.shape == want.shape and have.dtype == want.dtype, what
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(have, want, err_msg=what)
        return
    rtol = 1e-12 if want.dtype == np.float64 else 1e-5
    scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=0.0))
    np.testing.assert_allclose(have, want, rtol=rtol, atol=rtol * scale, err_msg=what)


# Cases kernelc gets wrong (expected failures until fixed); none at present.
KERNELC_WRONG: dict[str, str] = {}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KERNELC_WRONG[n]))
    if n in KERNELC_WRONG else n for n in C.CASES])
def test_gradients_match_warp(name, warp_results):
    want = warp_results.get(name, {})
    assert "error" not in want, f"the case fails under Warp: {want.get('error')}"
    have = C.run_case(name)
    assert set(have) == set(want)
    for field, expected in want.items():
        got = np.array(have[field], copy=True)
        wrong = WARP_WRONG.get((name, field))
        if wrong is not None:  # checked against finite differences below
            where, _ = wrong
            expected = np.array(expected, copy=True)
            expected[where] = got[where] = 0
        assert_close(got, expected, f"{name}: {field}")


def test_warp_wrong_cases_do_differ(warp_results):
    """Each entry of WARP_WRONG is still needed (a fixed Warp would make it stale)."""
    for (name, field), (where, why) in WARP_WRONG.items():
        have = C.run_case(name)[field][where]
        want = warp_results[name][field][where]
        assert not np.allclose(have, want, rtol=1e-4), f"{name}: {field}: {why}"


# ---- finite differences (kernelc only) --------------------------------------------------

F64 = {kc.float32: kc.float64, kc.vec3: kc.vec3d, kc.mat33: kc.mat33d, kc.quat: kc.quatd}


def loss_of(kernel, dim, values: dict, dtypes: dict, extra) -> float:
    loss = kc.zeros(1, dtype=kc.float64)
    arrays = [kc.array(v, dtype=dtypes[n]) for n, v in values.items()]
    kc.launch(kernel, dim=dim, inputs=[*arrays, *extra, loss])
    return float(loss.numpy()[0])


def finite_differences(kernel, dim, values: dict, dtypes: dict, extra=(),
                       eps: float = 1e-6) -> dict[str, np.ndarray]:
    """Central differences of the float64 loss w.r.t. every element of every input."""
    values = {n: np.asarray(v, dtype=np.float64) for n, v in values.items()}
    grads = {}
    for name, v in values.items():
        g = np.zeros_like(v)
        for idx in np.ndindex(v.shape):
            sides = []
            for step in (eps, -eps):
                moved = dict(values)
                moved[name] = v.copy()
                moved[name][idx] += step
                sides.append(loss_of(kernel, dim, moved, dtypes, extra))
            g[idx] = (sides[0] - sides[1]) / (2 * eps)
        grads[name] = g
    return grads


# case -> (kernel, its array parameters with their float64 dtypes, extra arguments)
_LOOP_ARGS = {"x": kc.float64, "a": kc.float64}
FD_CASES = {
    "unary_float64": (P.k_unary, {"x": kc.float64, "w": kc.float64}, ()),
    "binary_float64": (P.k_binary, dict.fromkeys("xyzw", kc.float64), ()),
    "linalg_float64": (P.k_linalg, {"v": kc.vec3d, "m": kc.mat33d, "q": kc.quatd}, ()),
}
for _p in ("float32", "float64"):
    for _loop in ("dyn_product", "dyn_sin", "while", "dyn_used_after"):
        FD_CASES[f"{_loop}_{_p}"] = (getattr(P, f"k_{_loop}"), _LOOP_ARGS, (5,))
    FD_CASES[f"nested_{_p}"] = (P.k_nested, _LOOP_ARGS, (4,))
    FD_CASES[f"break_continue_{_p}"] = (P.k_break_continue, dict(_LOOP_ARGS, c=kc.float64),
                                        (8,))
# Where the gradient is Warp's, not the derivative: wp.mod gives its divisor no gradient
# (the derivative of fmod(x, y) in y is -trunc(x / y)).
FD_EXEMPT = {("binary_float64", "y"): np.s_[:, MOD]}


@pytest.mark.parametrize("name", list(FD_CASES))
def test_gradients_match_finite_differences(name):
    kernel, dtypes, extra = FD_CASES[name]
    have = C.run_case(name)
    values = {n: have[n] for n in dtypes}
    fd = finite_differences(kernel, P.N, values, dtypes, extra)
    single = have[next(iter(dtypes))].dtype == np.float32
    rtol = 1e-4 if single else 1e-6
    for n, want in fd.items():
        got = have[n + ".grad"].astype(np.float64)
        exempt = FD_EXEMPT.get((name, n))
        if exempt is not None:
            got[exempt] = want[exempt] = 0
        scale = float(np.max(np.abs(want)))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale,
                                   err_msg=f"{name}: {n}.grad")


def test_frac_slope_is_one():
    for p in ("float32", "float64"):
        have = C.run_case(f"unary_{p}")
        np.testing.assert_array_equal(have["x.grad"][:, FRAC], have["w"][:, FRAC])


def test_cast_reverse_matches_its_derivative():
    """y enters through a func's reversed dynamic loop (Horner's rule) and through int()."""
    have = C.run_case("cast_reverse")
    y, c = have["y"].astype(np.float64), have["c"].astype(np.float64)
    xf = have["x"].astype(np.float32).astype(np.float64)
    slope = sum(j * c[j] * y ** (j - 1) for j in range(1, 4))
    want = xf * slope + np.trunc(3 * have["y"])
    np.testing.assert_allclose(have["y.grad"], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def _early_return_vec_loop(x, v, b):
    """NumPy float64 model of k_early_vec (3 loop iterations)."""
    total = 0.0
    for xi, u in zip(x, v):
        if xi < 0:
            total += xi * xi
            continue
        for j in range(3):
            u = np.cross(u, b[j]) + u * xi
        total += u @ b[0]
    return total


def test_early_return_vec_loop_matches_finite_differences():
    have = C.run_case("early_return_vec_loop")
    values = {n: have[n].astype(np.float64) for n in ("x", "v", "b")}
    for name, v in values.items():
        want = np.zeros_like(v)
        for idx in np.ndindex(v.shape):
            sides = []
            for step in (1e-6, -1e-6):
                moved = {n: a.copy() for n, a in values.items()}
                moved[name][idx] += step
                sides.append(_early_return_vec_loop(**moved))
            want[idx] = (sides[0] - sides[1]) / 2e-6
        np.testing.assert_allclose(have[name + ".grad"], want, rtol=1e-4,
                                   atol=1e-4 * np.abs(want).max(), err_msg=name)
