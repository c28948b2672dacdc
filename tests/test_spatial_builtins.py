"""Quaternion conversions, transform helpers and spatial algebra, compared with Warp 1.19
and with NumPy references.

The kernels and `program_*` functions of `tests/spatial_programs.py` are written as Warp
programs (`wp.*`) and run twice from the same source: here with `wp` = kernelc, and in a
Warp subprocess (`run_warp`, which loads that file with KERNELC_SPATIAL_MODULE=warp). Warp
implements the Euler, twist and spatial-transform helpers as float32-only funcs, so those
run under Warp in float32 only; kernelc has them for every float type and is checked in
float64 against NumPy references. Also here: host calls, the constructor forms in kernels
and the error paths. The CUDA backend is in `tests/test_spatial_builtins_cuda.py`.
"""

# No `from __future__ import annotations`: Warp reads kernel annotations as objects.

from pathlib import Path

import numpy as np
import pytest

from tests.spatial_programs import (
    PRECISIONS,
    TOL,
    N,
    _poisoned,
    _tuple_results_in_kernels,
    axis_quat,
    hamilton,
    homogeneous,
    make_inputs,
    program_funcs,
    program_host,
    program_host_funcs,
    program_host_results,
    program_native,
    program_tuples,
    rotation,
    wp,
)

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS_FILE = Path(__file__).resolve().with_name("spatial_programs.py")

# ---- against Warp and NumPy ------------------------------------------------------------------

_WARP_DRIVER = f"""
import importlib.util
import os
import sys
import traceback

sys.path.insert(0, {str(ROOT)!r})
os.environ["KERNELC_SPATIAL_MODULE"] = "warp"
spec = importlib.util.spec_from_file_location("spatial_programs", {str(PROGRAMS_FILE)!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
# Every overload declared before the first launch: Warp then builds the module once.
for name, precision in module.warp_cases():
    if name in module.KERNELS:
        kernel, make_args = module.KERNELS[name]
        wp.overload(kernel, [wp.array(dtype=a.dtype, ndim=a.ndim) for a in make_args(precision)])
for name, precision in module.warp_cases():
    try:
        outputs = module.PROGRAMS[name](precision)
    except Exception as err:
        traceback.print_exc()
        results[name + ":" + precision + ":error"] = np.array(repr(err))
    else:
        for key, value in outputs.items():
            results[name + ":" + precision + ":" + key] = np.asarray(value)
"""


def _results_on_the_host() -> bool:
    """Whether host calls return several results and update vector arguments in place."""
    try:
        wp.transform_set_rotation(wp.transform_identity(), wp.quat_identity())
    except TypeError:
        return False
    return True


needs_tuple_frontend = pytest.mark.xfail(
    not _tuple_results_in_kernels(), strict=True,
    reason="needs the front end to unpack builtins with several results (see docs/spatial-math.md)")
needs_host_results = pytest.mark.xfail(
    not _results_on_the_host(), strict=True,
    reason="needs host calls with several results and in-place updates (docs/spatial-math.md)")


@pytest.fixture(scope="module")
def warp_results(tmp_path_factory) -> dict[str, dict[str, np.ndarray]]:
    """Every program's results under Warp, by "program:precision" (one Warp process)."""
    from tests.conftest import run_warp

    flat = run_warp(_WARP_DRIVER, tmp_path_factory.mktemp("warp_spatial"))
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, value in flat.items():
        name, precision, field = key.split(":")
        out.setdefault(f"{name}:{precision}", {})[field] = value
    return out


def assert_matches_warp(ours: dict[str, np.ndarray], warp: dict[str, np.ndarray],
                        precision: str, tol: float | None = None) -> None:
    assert "error" not in warp, f"Warp failed: {warp['error']}"
    assert sorted(ours) == sorted(warp)
    tol = tol or TOL[precision]
    for key, expected in warp.items():
        got = ours[key]
        assert got.shape == expected.shape, key
        assert not np.isnan(got).any(), f"{key}: an output was never written"
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, err_msg=key)


def same_rotation(got: np.ndarray, want: np.ndarray, tol: float) -> None:
    """Quaternions equal up to sign (q and -q are one rotation)."""
    sign = np.sign((got * want).sum(-1, keepdims=True))
    np.testing.assert_allclose(got * sign, want, atol=tol)


@pytest.mark.parametrize("precision", ["float16", *PRECISIONS])
def test_native_builtins_match_warp(precision, warp_results):
    ours = program_native(precision)
    assert_matches_warp(ours, warp_results[f"native:{precision}"], precision)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_native_builtins_match_numpy(precision):
    o, x = program_native(precision), make_inputs()
    tol = 50 * TOL[precision]
    ang, q, r, v, tf = x["ang"], x["q"], x["r"], x["v"], x["tf"]
    qx, qy, qz = (axis_quat(np.full(N, k), ang[:, k]) for k in range(3))
    np.testing.assert_allclose(o["rpy"], hamilton(qz, hamilton(qy, qx)), atol=tol)
    # axis-angle: an angle in [0, pi] about a unit axis that rebuilds the rotation of r
    unit = r / np.linalg.norm(r, axis=1, keepdims=True)
    assert np.all((o["angle"] >= 0) & (o["angle"] <= np.pi))
    rebuilt = np.concatenate([o["axis"] * np.sin(o["angle"] / 2)[:, None],
                              np.cos(o["angle"] / 2)[:, None]], 1)
    same_rotation(rebuilt, unit, tol)
    rot = rotation(tf[:, 3:])
    np.testing.assert_allclose(o["tom"], homogeneous(rot, tf[:, :3]), atol=tol)
    np.testing.assert_allclose(o["fromm"][:, :3], tf[:, :3], atol=tol)
    same_rotation(o["fromm"][:, 3:], tf[:, 3:], tol)
    same_rotation(o["qm"][:, 0], tf[:, 3:], tol)
    m44 = x["m44"]
    np.testing.assert_allclose(o["tp"], np.einsum("nij,nj->ni", m44[:, :3, :3], v)
                               + m44[:, :3, 3], atol=tol)
    np.testing.assert_allclose(o["tv"], np.einsum("nij,nj->ni", m44[:, :3, :3], v), atol=tol)
    np.testing.assert_allclose(o["comp"], homogeneous(rotation(q) * x["s3"][:, None, :], v),
                               atol=tol)
    np.testing.assert_allclose(o["set"], np.concatenate([v, r], 1), atol=tol)
    a6, b6 = x["a6"], x["b6"]
    np.testing.assert_allclose(o["top"], a6[:, :3], atol=tol)
    np.testing.assert_allclose(o["bot"], a6[:, 3:], atol=tol)
    np.testing.assert_allclose(o["dot"], (a6 * b6).sum(1), rtol=tol, atol=tol)
    (wa, va), (wb, vb) = (a6[:, :3], a6[:, 3:]), (b6[:, :3], b6[:, 3:])
    np.testing.assert_allclose(o["cross"], np.concatenate(
        [np.cross(wa, wb), np.cross(va, wb) + np.cross(wa, vb)], 1), rtol=tol, atol=tol)
    np.testing.assert_allclose(o["dual"], np.concatenate(
        [np.cross(wa, wb) + np.cross(va, vb), np.cross(wa, vb)], 1), rtol=tol, atol=tol)
    adj = np.zeros((N, 6, 6))
    adj[:, :3, :3] = adj[:, 3:, 3:] = x["r33"]
    adj[:, 3:, :3] = x["s33"]
    np.testing.assert_allclose(o["adj"], adj, rtol=tol)
    sc = x["sc"][:, None]
    np.testing.assert_allclose(o["quat"][:, 0], np.concatenate([v, sc], 1), rtol=tol)
    np.testing.assert_allclose(o["quat"][:, 1], np.concatenate([v[:, [2, 0, 1]], sc], 1),
                               rtol=tol)
    identity = np.tile([0.0, 0.0, 0.0, 1.0], (N, 1))
    np.testing.assert_allclose(o["tf"][:, 0], np.concatenate([v, identity], 1), rtol=tol)
    np.testing.assert_allclose(o["tf"][:, 1], np.concatenate([v, q], 1), rtol=tol)
    np.testing.assert_allclose(o["tf"][:, 2], np.concatenate([v[:, [1, 2, 0]], q], 1), rtol=tol)


def test_helper_funcs_match_warp_in_float32(warp_results):
    ours = program_funcs("float32")
    assert_matches_warp(ours, warp_results["funcs:float32"], "float32", tol=5e-5)


def test_helper_funcs_in_float64_agree_with_warps_float32(warp_results):
    """Warp has no float64 versions: kernelc's agree with Warp's float32 to its rounding."""
    ours = program_funcs("float64")
    assert_matches_warp(ours, warp_results["funcs:float32"], "float32", tol=2e-4)


def _euler_quat(e: np.ndarray, seq: np.ndarray, third_slot: bool) -> np.ndarray:
    """The rotation about fixed axes i, j, k in that order; for proper sequences the third
    angle comes from e[3 - i - j] when `third_slot` (quat_to_euler's layout) else e[i]."""
    i, j, k = seq.T
    rows = np.arange(len(e))
    k_slot = np.where((i == k) & third_slot, 3 - i - j, k)
    qi, qj = axis_quat(i, e[rows, i]), axis_quat(j, e[rows, j])
    qk = axis_quat(k, e[rows, k_slot])
    return hamilton(qk, hamilton(qj, qi))


@pytest.mark.parametrize("precision", PRECISIONS)
def test_helper_funcs_match_numpy(precision):
    o, x = program_funcs(precision), make_inputs()
    tol = 50 * TOL[precision]
    q, seq, axis = x["q"], x["seq"], x["axis"]
    np.testing.assert_allclose(o["from_euler"], _euler_quat(x["ang"], seq, False), atol=tol)
    # quat_to_euler inverts the rotation for all twelve sequences (proper ones store the
    # third angle in the free slot), with the middle angle in Warp's range
    same_rotation(_euler_quat(o["to_euler"], seq, True), q, tol)
    middle = o["to_euler"][np.arange(N), seq[:, 1]]
    tait = seq[:, 0] != seq[:, 2]
    assert np.all(np.abs(middle[tait]) <= np.pi / 2 + 1e-6)
    assert np.all((middle[~tait] >= -1e-6) & (middle[~tait] <= np.pi + 1e-6))
    literal = np.tile([2, 0, 1], (N, 1))
    np.testing.assert_allclose(o["literal_q"], _euler_quat(x["ang"], literal, False), atol=tol)
    same_rotation(_euler_quat(o["literal_e"], np.tile([1, 0, 1], (N, 1)), True), q, tol)
    rpy = o["to_rpy"]
    qx, qy, qz = (axis_quat(np.full(N, k), rpy[:, k]) for k in range(3))
    same_rotation(hamilton(qz, hamilton(qy, qx)), q, tol)
    d = (q[:, :3] * axis).sum(1)
    twist = np.concatenate([d[:, None] * axis, q[:, 3:]], 1)
    np.testing.assert_allclose(o["twist"], twist / np.linalg.norm(twist, axis=1)[:, None],
                               atol=tol)
    np.testing.assert_allclose(o["twist_angle"][:, 0], 2 * np.arctan2(np.abs(d), q[:, 3]),
                               atol=tol)
    np.testing.assert_allclose(o["twist_angle"][:, 1], 2 * np.arctan2(d, q[:, 3]), atol=tol)
    a6, v, tf = x["a6"], x["v"], x["tf"]
    w, lin = a6[:, :3], a6[:, 3:]
    np.testing.assert_allclose(o["velocity"], lin + np.cross(w, v), rtol=tol, atol=tol)
    rot, p = rotation(tf[:, 3:]), tf[:, :3]
    rw, rv = np.einsum("nij,nj->ni", rot, w), np.einsum("nij,nj->ni", rot, lin)
    np.testing.assert_allclose(o["xtwist"], np.concatenate([rw, rv + np.cross(p, rw)], 1),
                               atol=tol)
    np.testing.assert_allclose(o["xwrench"], np.concatenate([rw + np.cross(p, rv), rv], 1),
                               atol=tol)


@needs_tuple_frontend
@pytest.mark.parametrize("precision", PRECISIONS)
def test_tuple_results_match_warp_and_numpy(precision, warp_results):
    ours = program_tuples(precision)
    assert_matches_warp(ours, warp_results[f"tuples:{precision}"], precision)
    x, tol = make_inputs(), 50 * TOL[precision]
    np.testing.assert_allclose(ours["p"], x["tf"][:, :3], atol=tol)
    np.testing.assert_allclose(ours["s"], x["s3"], atol=tol)
    same_rotation(ours["q"], x["tf"][:, 3:], tol)
    native = program_native(precision)  # the output-argument form gives the same values
    np.testing.assert_array_equal(ours["axis"], native["axis"])
    np.testing.assert_array_equal(ours["angle"], native["angle"])


@pytest.mark.parametrize("precision", PRECISIONS)
def test_host_calls_match_warp_and_kernels(precision, warp_results):
    ours = program_host(precision)
    assert_matches_warp(ours, warp_results[f"host:{precision}"], precision)
    kernel = program_native(precision)
    for key in ("rpy", "tp", "tv", "comp", "top", "bot", "dot", "cross", "dual"):
        np.testing.assert_array_equal(ours[key], kernel[key][:4], err_msg=key)


def test_host_helper_funcs_match_warp(warp_results):
    ours = program_host_funcs("float32")
    assert_matches_warp(ours, warp_results["host_funcs:float32"], "float32", tol=5e-5)
    kernel = program_funcs("float32")
    for key in ("from_euler", "to_euler", "to_rpy", "twist", "velocity"):
        np.testing.assert_array_equal(ours[key], kernel[key][:4], err_msg=key)
    program_host_funcs("float64")  # kernelc also has them in float64


@needs_host_results
@pytest.mark.parametrize("precision", PRECISIONS)
def test_host_tuple_results_and_in_place_updates_match_warp(precision, warp_results):
    ours = program_host_results(precision)
    assert_matches_warp(ours, warp_results[f"host_results:{precision}"], precision)


def test_host_calls_beyond_warps_host_api():
    """Warp exports these to Python only partly (spatial_adjoint, the constructors) or
    not at all (transform_twist fails there); kernelc's host calls equal its kernels."""
    x = make_inputs()
    kernel, funcs = program_native("float32"), program_funcs("float32")
    r33, s33 = wp.mat33(*x["r33"][0].ravel()), wp.mat33(*x["s33"][0].ravel())
    np.testing.assert_array_equal(wp.spatial_adjoint(r33, s33), kernel["adj"][0])
    tf, a6 = wp.transform(*x["tf"][0]), wp.spatial_vector(*x["a6"][0])
    np.testing.assert_array_equal(wp.transform_twist(tf, a6), funcs["xtwist"][0])
    np.testing.assert_array_equal(wp.transform_wrench(tf, a6), funcs["xwrench"][0])
    v = wp.vec3(*x["v"][0])
    assert wp.quaternion(v, 2.0).tolist() == [*v.tolist(), 2.0]
    assert wp.transformation(v).tolist() == [*v.tolist(), 0.0, 0.0, 0.0, 1.0]
    assert wp.quaternion()._kc_type == wp.quat and wp.transformation(1.5).tolist() == [1.5] * 7


def test_constructor_forms_in_kernels():
    @wp.kernel
    def construct(q: wp.quatd, t: wp.transformd, oq: wp.array(dtype=wp.quatd),
                  ot: wp.array(dtype=wp.transformd), zq: wp.array(dtype=wp.quat),
                  zt: wp.array(dtype=wp.transform)):
        oq[0] = wp.quaternion(q)
        oq[1] = wp.quaternion(wp.float64(1.0), 2.0, 3.0, 4.0)
        ot[0] = wp.transformation(t)
        ot[1] = wp.transformation(wp.float64(2.5))
        zq[0] = wp.quaternion()
        zq[1] = wp.quaternion(0, 0, 0, 1)
        zt[0] = wp.transformation()

    q, t = wp.quatd(0.1, 0.2, 0.3, 0.9), wp.transformd(1, 2, 3, 0.1, 0.2, 0.3, 0.9)
    outs = [_poisoned(2, wp.quatd), _poisoned(2, wp.transformd), _poisoned(2, wp.quat),
            _poisoned(1, wp.transform)]
    wp.launch(construct, 1, inputs=[q, t, *outs])
    oq, ot, zq, zt = (a.numpy() for a in outs)
    np.testing.assert_array_equal(oq, [q, [1, 2, 3, 4]])
    np.testing.assert_array_equal(ot, [t, [2.5] * 7])
    np.testing.assert_array_equal(zq, [[0, 0, 0, 0], [0, 0, 0, 1]])
    np.testing.assert_array_equal(zt, [[0] * 7])


# ---- errors ------------------------------------------------------------------------------------


def _compile_error(kernel, *args) -> str:
    with pytest.raises(wp.KernelError) as err:
        wp.launch(kernel, 1, inputs=list(args))
    return str(err.value)


def test_wrong_argument_types_are_kernel_errors():
    @wp.kernel
    def bad_rpy(out: wp.array(dtype=wp.quat)):
        out[0] = wp.quat_rpy(wp.vec3(1.0, 2.0, 3.0), 0.5, 0.5)

    @wp.kernel
    def bad_spatial(out: wp.array(dtype=float)):
        out[0] = wp.spatial_dot(wp.vec3(1.0, 2.0, 3.0), wp.vec3(1.0, 2.0, 3.0))

    @wp.kernel
    def bad_point(out: wp.array(dtype=wp.vec3)):
        out[0] = wp.transform_point(wp.mat33(), wp.vec3())

    @wp.kernel
    def bad_index(out: wp.array(dtype=wp.quat)):
        out[0] = wp.quat_from_euler(wp.vec3(), 0.5, 1, 2)

    @wp.kernel
    def mixed(out: wp.array(dtype=wp.vec3)):
        out[0] = wp.velocity_at_point(wp.spatial_vectord(), wp.vec3())

    @wp.kernel
    def bad_decompose(out: wp.array(dtype=wp.vec3)):
        out[0] = wp.spatial_top(wp.transform_decompose(wp.mat33()))

    cases = [
        (bad_rpy, wp.quat, "quat_rpy(): expected a float, got vec3"),
        (bad_spatial, float, "spatial_dot(): expected a float spatial_vector (6 components), "
                             "got vec3"),
        (bad_point, wp.vec3, "transform_point(): expected a float transform or 4x4 matrix, "
                             "got mat33"),
        (bad_index, wp.quat, "quat_from_euler(): expected an int32, got float32"),
        (mixed, wp.vec3, "velocity_at_point(): mixed component types"),
        (bad_decompose, wp.vec3, "transform_decompose(): expected a float 4x4 matrix, got mat33"),
    ]
    for kernel, dtype, message in cases:
        text = _compile_error(kernel, wp.zeros(1, dtype=dtype))
        assert message in text, text
        assert kernel.__name__ in text and "test_spatial_builtins.py" in text


def test_output_arguments_must_be_variables():
    """Warp writes into a discarded copy when given an array element; kernelc refuses."""

    @wp.kernel
    def set_element(xs: wp.array(dtype=wp.transform)):
        wp.transform_set_translation(xs[0], wp.vec3(1.0, 2.0, 3.0))

    @wp.kernel
    def axis_expression(out: wp.array(dtype=float)):
        axis = wp.vec3()
        angle = float(0.0)
        wp.quat_to_axis_angle(wp.quat_identity(), axis * 2.0, angle)
        out[0] = angle

    text = _compile_error(set_element, wp.zeros(1, dtype=wp.transform))
    assert "transform_set_translation()" in text and "variable" in text
    text = _compile_error(axis_expression, wp.zeros(1, dtype=float))
    assert "quat_to_axis_angle()" in text and "variable" in text


def test_wrong_host_arguments_raise_type_errors():
    with pytest.raises(TypeError, match=r"spatial_top\(\): expected a float spatial_vector"):
        wp.spatial_top(wp.vec3(1.0, 2.0, 3.0))
    with pytest.raises(TypeError, match=r"quat_to_euler\(\): expected an int32, got float32"):
        wp.quat_to_euler(wp.quat_identity(), 0, 1.5, 2)
    with pytest.raises(TypeError, match=r"quat_to_axis_angle\(\) takes 1 or 3 arguments"):
        wp.quat_to_axis_angle(wp.quat_identity(), wp.vec3())
