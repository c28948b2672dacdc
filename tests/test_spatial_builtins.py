"""Quaternion conversions, transform helpers and spatial algebra, compared with Warp 1.19.

The kernels and `program_*` functions of this file are written as Warp programs (`wp.*`)
and run twice from the same source: here with `wp` = kernelc, and in a Warp subprocess
(`run_warp`, which imports this file with KERNELC_SPATIAL_MODULE=warp). Warp implements
the Euler, twist and spatial-transform helpers as float32-only funcs, so those run under
Warp in float32 only; kernelc has them for every float type and is checked in float64
against NumPy references. Outputs are poisoned with NaN before every launch.
"""

# No `from __future__ import annotations`: Warp reads kernel annotations as objects.

import importlib
import os
import shutil
import typing
from pathlib import Path

import numpy as np
import pytest

wp = importlib.import_module(os.environ.get("KERNELC_SPATIAL_MODULE", "kernelc"))
Any = typing.Any
N = 48
ROOT = Path(__file__).resolve().parents[1]

# All twelve axis sequences (i, j, k): six Tait-Bryan (i != k) and six proper (i == k).
SEQUENCES = [(i, j, k) for i in range(3) for j in range(3) for k in range(3)
             if i != j and j != k]


# ---- kernels ---------------------------------------------------------------------------------


@wp.kernel
def k_native(q: wp.array(dtype=Any), r: wp.array(dtype=Any), v: wp.array(dtype=Any),
             s3: wp.array(dtype=Any), ang: wp.array(dtype=Any), sc: wp.array(dtype=Any),
             tf: wp.array(dtype=Any), m44: wp.array(dtype=Any), a6: wp.array(dtype=Any),
             b6: wp.array(dtype=Any), r33: wp.array(dtype=Any), s33: wp.array(dtype=Any),
             o_rpy: wp.array(dtype=Any), o_axis: wp.array(dtype=Any),
             o_angle: wp.array(dtype=Any), o_qm: wp.array2d(dtype=Any),
             o_tp: wp.array(dtype=Any), o_tv: wp.array(dtype=Any), o_comp: wp.array(dtype=Any),
             o_tom: wp.array(dtype=Any), o_fromm: wp.array(dtype=Any),
             o_set: wp.array(dtype=Any), o_top: wp.array(dtype=Any), o_bot: wp.array(dtype=Any),
             o_dot: wp.array(dtype=Any), o_cross: wp.array(dtype=Any),
             o_dual: wp.array(dtype=Any), o_adj: wp.array(dtype=Any),
             o_quat: wp.array2d(dtype=Any), o_tf: wp.array2d(dtype=Any)):
    i = wp.tid()
    o_rpy[i] = wp.quat_rpy(ang[i][0], ang[i][1], ang[i][2])
    axis = v[i]
    angle = sc[i]
    wp.quat_to_axis_angle(r[i], axis, angle)
    o_axis[i] = axis
    o_angle[i] = angle
    m = wp.transform_to_matrix(tf[i])
    o_tom[i] = m
    o_fromm[i] = wp.transform_from_matrix(m)
    o_qm[i, 0] = wp.quat_from_matrix(m)
    o_qm[i, 1] = wp.quat_from_matrix(m44[i])
    o_tp[i] = wp.transform_point(m44[i], v[i])
    o_tv[i] = wp.transform_vector(m44[i], v[i])
    o_comp[i] = wp.transform_compose(v[i], q[i], s3[i])
    t = tf[i]
    wp.transform_set_translation(t, v[i])
    wp.transform_set_rotation(t, r[i])
    o_set[i] = t
    o_top[i] = wp.spatial_top(a6[i])
    o_bot[i] = wp.spatial_bottom(a6[i])
    o_dot[i] = wp.spatial_dot(a6[i], b6[i])
    o_cross[i] = wp.spatial_cross(a6[i], b6[i])
    o_dual[i] = wp.spatial_cross_dual(a6[i], b6[i])
    o_adj[i] = wp.spatial_adjoint(r33[i], s33[i])
    o_quat[i, 0] = wp.quaternion(v[i], sc[i])
    o_quat[i, 1] = wp.quaternion(v[i][2], v[i][0], v[i][1], sc[i])
    o_tf[i, 0] = wp.transformation(v[i])
    o_tf[i, 1] = wp.transformation(v[i], q[i])
    o_tf[i, 2] = wp.transformation(v[i][1], v[i][2], v[i][0], q[i][0], q[i][1], q[i][2], q[i][3])


@wp.kernel
def k_funcs(q: wp.array(dtype=Any), ang: wp.array(dtype=Any), seq: wp.array2d(dtype=wp.int32),
            axis: wp.array(dtype=Any), v: wp.array(dtype=Any), a6: wp.array(dtype=Any),
            tf: wp.array(dtype=Any), o_from_euler: wp.array(dtype=Any),
            o_to_euler: wp.array(dtype=Any), o_literal_q: wp.array(dtype=Any),
            o_literal_e: wp.array(dtype=Any), o_to_rpy: wp.array(dtype=Any),
            o_twist: wp.array(dtype=Any), o_twist_angle: wp.array2d(dtype=Any),
            o_velocity: wp.array(dtype=Any), o_xtwist: wp.array(dtype=Any),
            o_xwrench: wp.array(dtype=Any)):
    i = wp.tid()
    o_from_euler[i] = wp.quat_from_euler(ang[i], seq[i, 0], seq[i, 1], seq[i, 2])
    o_to_euler[i] = wp.quat_to_euler(q[i], seq[i, 0], seq[i, 1], seq[i, 2])
    o_literal_q[i] = wp.quat_from_euler(ang[i], 2, 0, 1)
    o_literal_e[i] = wp.quat_to_euler(q[i], 1, 0, 1)
    o_to_rpy[i] = wp.quat_to_rpy(q[i])
    o_twist[i] = wp.quat_twist(axis[i], q[i])
    o_twist_angle[i, 0] = wp.quat_twist_angle(axis[i], q[i])
    o_twist_angle[i, 1] = wp.quat_twist_angle_signed(axis[i], q[i])
    o_velocity[i] = wp.velocity_at_point(a6[i], v[i])
    o_xtwist[i] = wp.transform_twist(tf[i], a6[i])
    o_xwrench[i] = wp.transform_wrench(tf[i], a6[i])


@wp.kernel
def k_tuples(m44: wp.array(dtype=Any), r: wp.array(dtype=Any), o_p: wp.array(dtype=Any),
             o_q: wp.array(dtype=Any), o_s: wp.array(dtype=Any), o_axis: wp.array(dtype=Any),
             o_angle: wp.array(dtype=Any)):
    i = wp.tid()
    p, q, s = wp.transform_decompose(m44[i])
    o_p[i] = p
    o_q[i] = q
    o_s[i] = s
    axis, angle = wp.quat_to_axis_angle(r[i])
    o_axis[i] = axis
    o_angle[i] = angle


# ---- inputs and NumPy references ---------------------------------------------------------------


def unit_quats(rng, n: int) -> np.ndarray:
    q = rng.standard_normal((n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def nonzero(rng, shape, low: float = -3.0, high: float = 3.0) -> np.ndarray:
    x = rng.uniform(low, high, shape)
    x[np.abs(x) < 0.05] = 0.5
    return x


def hamilton(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    av, aw, bv, bw = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    v = aw * bv + bw * av + np.cross(av, bv)
    return np.concatenate([v, aw * bw - (av * bv).sum(-1, keepdims=True)], -1)


def rotation(q: np.ndarray) -> np.ndarray:
    """Rotation matrices of unit quaternions (x, y, z, w)."""
    x, y, z, w = (q[..., k] for k in range(4))
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def axis_quat(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rotations by `angle` about coordinate axes `axis` (0, 1, 2), element-wise."""
    q = np.zeros((len(angle), 4))
    q[np.arange(len(angle)), axis] = np.sin(angle / 2)
    q[:, 3] = np.cos(angle / 2)
    return q


def homogeneous(rot: np.ndarray, p: np.ndarray) -> np.ndarray:
    m = np.zeros((len(p), 4, 4))
    m[:, :3, :3], m[:, :3, 3], m[:, 3, 3] = rot, p, 1.0
    return m


def make_inputs(seed: int = 11) -> dict[str, np.ndarray]:
    """Random, non-zero inputs in float64 (cast per precision by the programs)."""
    rng = np.random.default_rng(seed)
    q, q2 = unit_quats(rng, N), unit_quats(rng, N)
    axis = rng.standard_normal((N, 3))
    ang = np.stack([rng.uniform(-3, 3, N), rng.uniform(-1.4, 1.4, N), rng.uniform(-3, 3, N)], 1)
    p = nonzero(rng, (N, 3))
    s3 = rng.uniform(0.5, 2.0, (N, 3))
    return {
        "q": q, "r": nonzero(rng, (N, 4), -2.0, 2.0), "v": nonzero(rng, (N, 3)), "s3": s3,
        "ang": ang, "sc": nonzero(rng, N), "tf": np.concatenate([p, q2], 1),
        "m44": homogeneous(rotation(q2) * s3[:, None, :], p), "a6": nonzero(rng, (N, 6)),
        "b6": nonzero(rng, (N, 6)), "r33": nonzero(rng, (N, 3, 3)),
        "s33": nonzero(rng, (N, 3, 3)),
        "seq": np.array([SEQUENCES[k % 12] for k in range(N)], np.int32),
        "axis": axis / np.linalg.norm(axis, axis=1, keepdims=True),
    }


# ---- programs: run under kernelc here and under Warp in a subprocess ---------------------------


def _types(precision: str) -> dict[str, Any]:
    suffix = {"float16": "h", "float32": "", "float64": "d"}[precision]
    names = ("vec3", "quat", "transform", "mat33", "mat44", "spatial_vector", "spatial_matrix")
    out = {name: getattr(wp, name + suffix) for name in names}
    out["scalar"] = getattr(wp, precision)
    return out


def _poisoned(shape, dtype) -> Any:
    a = wp.empty(shape, dtype=dtype, device="cpu")
    a.numpy()[...] = np.nan
    return a


def _arrays(precision: str, inputs: dict[str, str], outputs: dict[str, tuple]) -> list:
    """Input arrays (input name -> kind) then poisoned outputs (name -> (shape, kind))."""
    x, t = make_inputs(), _types(precision)
    arrays = [wp.array(x[name].astype(precision) if kind != "int32" else x[name],
                       dtype=wp.int32 if kind == "int32" else t[kind], device="cpu")
              for name, kind in inputs.items()]
    return arrays + [_poisoned(shape, t[kind]) for shape, kind in outputs.values()]


NATIVE_INPUTS = {"q": "quat", "r": "quat", "v": "vec3", "s3": "vec3", "ang": "vec3",
                 "sc": "scalar", "tf": "transform", "m44": "mat44", "a6": "spatial_vector",
                 "b6": "spatial_vector", "r33": "mat33", "s33": "mat33"}
NATIVE_OUTPUTS = {
    "rpy": (N, "quat"), "axis": (N, "vec3"), "angle": (N, "scalar"), "qm": ((N, 2), "quat"),
    "tp": (N, "vec3"), "tv": (N, "vec3"), "comp": (N, "mat44"), "tom": (N, "mat44"),
    "fromm": (N, "transform"), "set": (N, "transform"), "top": (N, "vec3"),
    "bot": (N, "vec3"), "dot": (N, "scalar"), "cross": (N, "spatial_vector"),
    "dual": (N, "spatial_vector"), "adj": (N, "spatial_matrix"), "quat": ((N, 2), "quat"),
    "tf": ((N, 3), "transform"),
}
FUNCS_INPUTS = {"q": "quat", "ang": "vec3", "seq": "int32", "axis": "vec3", "v": "vec3",
                "a6": "spatial_vector", "tf": "transform"}
FUNCS_OUTPUTS = {
    "from_euler": (N, "quat"), "to_euler": (N, "vec3"), "literal_q": (N, "quat"),
    "literal_e": (N, "vec3"), "to_rpy": (N, "vec3"), "twist": (N, "quat"),
    "twist_angle": ((N, 2), "scalar"), "velocity": (N, "vec3"),
    "xtwist": (N, "spatial_vector"), "xwrench": (N, "spatial_vector"),
}
TUPLES_INPUTS = {"m44": "mat44", "r": "quat"}
TUPLES_OUTPUTS = {"p": (N, "vec3"), "q": (N, "quat"), "s": (N, "vec3"), "axis": (N, "vec3"),
                  "angle": (N, "scalar")}


def native_args(precision: str) -> list:
    return _arrays(precision, NATIVE_INPUTS, NATIVE_OUTPUTS)


def funcs_args(precision: str) -> list:
    return _arrays(precision, FUNCS_INPUTS, FUNCS_OUTPUTS)


def tuples_args(precision: str) -> list:
    return _arrays(precision, TUPLES_INPUTS, TUPLES_OUTPUTS)


def _run(kernel, args: list, names: dict[str, tuple]) -> dict[str, np.ndarray]:
    wp.launch(kernel, dim=N, inputs=args, device="cpu")
    return {name: a.numpy() for name, a in zip(names, args[-len(names):])}


def program_native(precision: str) -> dict[str, np.ndarray]:
    return _run(k_native, native_args(precision), NATIVE_OUTPUTS)


def program_funcs(precision: str) -> dict[str, np.ndarray]:
    return _run(k_funcs, funcs_args(precision), FUNCS_OUTPUTS)


def program_tuples(precision: str) -> dict[str, np.ndarray]:
    return _run(k_tuples, tuples_args(precision), TUPLES_OUTPUTS)


def _host_array(value: Any, precision: str) -> np.ndarray:
    """A host result as an array (Warp returns float64 scalars as its own scalar type, and
    its matrices read as flat arrays)."""
    out = np.asarray(value if np.ndim(value) else float(value), dtype=precision)
    shape = getattr(type(value), "_shape_", None)
    return out.reshape(shape) if shape else out


def program_host(precision: str) -> dict[str, np.ndarray]:
    """Host calls of the builtins Warp exports for every float type, on 4 elements."""
    x, t = make_inputs(), _types(precision)
    s = t["scalar"]
    out: dict[str, list] = {}
    for k in range(4):
        q, v, m = t["quat"](*x["q"][k]), t["vec3"](*x["v"][k]), t["mat44"](*x["m44"][k].ravel())
        a6, b6 = t["spatial_vector"](*x["a6"][k]), t["spatial_vector"](*x["b6"][k])
        values = {
            "rpy": wp.quat_rpy(*(s(a) for a in x["ang"][k])),
            "qm": wp.quat_from_matrix(m), "tp": wp.transform_point(m, v),
            "tv": wp.transform_vector(m, v),
            "comp": wp.transform_compose(v, q, t["vec3"](*x["s3"][k])),
            "tom": wp.transform_to_matrix(t["transform"](*x["tf"][k])),
            "fromm": wp.transform_from_matrix(m), "top": wp.spatial_top(a6),
            "bot": wp.spatial_bottom(a6), "dot": wp.spatial_dot(a6, b6),
            "cross": wp.spatial_cross(a6, b6), "dual": wp.spatial_cross_dual(a6, b6),
        }
        for name, value in values.items():
            out.setdefault(name, []).append(_host_array(value, precision))
    return {name: np.stack(values) for name, values in out.items()}


def program_host_funcs(precision: str) -> dict[str, np.ndarray]:
    """Host calls of Warp's float32 helper funcs (Euler angles, twists, velocity_at_point)."""
    x, t = make_inputs(), _types(precision)
    out: dict[str, list] = {}
    for k in range(4):
        q, axis = t["quat"](*x["q"][k]), t["vec3"](*x["axis"][k])
        i, j, kk = (int(n) for n in x["seq"][k])
        values = {
            "from_euler": wp.quat_from_euler(t["vec3"](*x["ang"][k]), i, j, kk),
            "to_euler": wp.quat_to_euler(q, i, j, kk), "to_rpy": wp.quat_to_rpy(q),
            "twist": wp.quat_twist(axis, q), "twist_angle": wp.quat_twist_angle(axis, q),
            "twist_angle_signed": wp.quat_twist_angle_signed(axis, q),
            "velocity": wp.velocity_at_point(t["spatial_vector"](*x["a6"][k]),
                                             t["vec3"](*x["v"][k])),
        }
        for name, value in values.items():
            out.setdefault(name, []).append(_host_array(value, precision))
    return {name: np.stack(values) for name, values in out.items()}


def program_host_results(precision: str) -> dict[str, np.ndarray]:
    """Host calls with tuple results and in-place updates (as Warp does them)."""
    x, t = make_inputs(), _types(precision)
    axis, angle = wp.quat_to_axis_angle(t["quat"](*x["r"][0]))
    p, q, s = wp.transform_decompose(t["mat44"](*x["m44"][0].ravel()))
    xform = t["transform"](*x["tf"][0])
    none = [wp.transform_set_translation(xform, t["vec3"](*x["v"][0])),
            wp.transform_set_rotation(xform, t["quat"](*x["r"][0]))]
    values = {"axis": axis, "angle": angle, "p": p, "q": q, "s": s, "xform": xform}
    out = {name: _host_array(value, precision) for name, value in values.items()}
    out["none"] = np.array([v is None for v in none])
    return out


PROGRAMS = {"native": program_native, "funcs": program_funcs, "tuples": program_tuples,
            "host": program_host, "host_funcs": program_host_funcs,
            "host_results": program_host_results}
KERNELS = {"native": (k_native, native_args), "funcs": (k_funcs, funcs_args),
           "tuples": (k_tuples, tuples_args)}


def warp_cases() -> list[tuple[str, str]]:
    """The (program, precision) pairs run under Warp: all in float32; in float64 all but
    Warp's float32-only helper funcs; the native builtins in float16 too."""
    cases = [(name, "float32") for name in PROGRAMS]
    cases += [(name, "float64") for name in PROGRAMS if name not in ("funcs", "host_funcs")]
    return [*cases, ("native", "float16")]


# ---- the tests (kernelc) ---------------------------------------------------------------------

_WARP_DRIVER = f"""
import importlib.util
import os
import sys
import traceback

sys.path.insert(0, {str(ROOT)!r})
os.environ["KERNELC_SPATIAL_MODULE"] = "warp"
spec = importlib.util.spec_from_file_location("spatial_programs", {__file__!r})
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

PRECISIONS = ["float32", "float64"]
TOL = {"float16": 1e-2, "float32": 2e-5, "float64": 1e-11}


def _tuple_results_in_kernels() -> bool:
    """Whether the front end unpacks builtins with several results (`p, q, s = ...`)."""
    from kernelc import types as T

    try:
        k_tuples.get_ir((T.ArrayType(wp.mat44, 1), T.ArrayType(wp.quat, 1),
                         *(T.ArrayType(t, 1) for t in (wp.vec3, wp.quat, wp.vec3, wp.vec3,
                                                       wp.float32))))
    except wp.KernelError:
        return False
    return True


def _results_on_the_host() -> bool:
    """Whether host calls return several results and update vector arguments in place."""
    try:
        wp.transform_set_rotation(wp.transform_identity(), wp.quat_identity())
    except TypeError:
        return False
    return True


# The marks are evaluated only under kernelc (Warp imports this file for its programs).
_UNDER_KERNELC = wp.__name__ == "kernelc"
needs_tuple_frontend = pytest.mark.xfail(
    _UNDER_KERNELC and not _tuple_results_in_kernels(), strict=True,
    reason="needs the front end to unpack builtins with several results (see docs/spatial-math.md)")
needs_host_results = pytest.mark.xfail(
    _UNDER_KERNELC and not _results_on_the_host(), strict=True,
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


# ---- the CUDA backend ---------------------------------------------------------------------------

def _cuda_case(name: str, precision: str):
    from kernelc import types as T
    from kernelc.codegen.cuda import CudaOptions, emit_cuda

    kernel, make_args = KERNELS[name]
    if name == "tuples" and not _tuple_results_in_kernels():
        pytest.xfail("needs the front end to unpack builtins with several results")
    types = tuple(T.ArrayType(a.dtype, a.ndim) for a in make_args(precision))
    return kernel, make_args, emit_cuda(kernel.get_ir(types), CudaOptions())


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernels_compile_with_nvrtc(name, precision):
    pytest.importorskip("cuda.bindings.nvrtc")
    from kernelc.codegen import nvrtc

    _, _, source = _cuda_case(name, precision)
    image, fmt = nvrtc.compile_cuda(source.text, 80, name=source.kernel)
    assert fmt == "cubin" and source.entry.encode() in image


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_cuda_c_in_host_harness_matches_cpu(name, precision):
    import cuda_harness
    from test_cuda_aggregates import run_both

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    _, make_args, _ = _cuda_case(name, precision)
    kernel = KERNELS[name][0]
    run_both(kernel, N, lambda: [(a, None) for a in make_args(precision)])


@pytest.mark.cuda
def test_kernels_on_the_gpu_match_the_cpu():
    if not wp.is_cuda_available():
        pytest.skip("no CUDA device")
    for precision in PRECISIONS:
        for name, (kernel, make_args) in KERNELS.items():
            if name == "tuples" and not _tuple_results_in_kernels():
                continue
            cpu = make_args(precision)
            wp.launch(kernel, N, inputs=cpu)
            gpu = [a.to("cuda:0") for a in make_args(precision)]
            wp.launch(kernel, N, inputs=gpu, device="cuda:0")
            for a, b in zip(cpu, gpu):
                np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=TOL[precision] * 10,
                                           atol=TOL[precision] * 10)


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
