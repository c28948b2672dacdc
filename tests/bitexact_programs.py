"""Inputs and programs of the Warp bit-exactness suite (`tests/test_warp_bitexact.py`).

`make_inputs` draws random, non-zero inputs with awkward cases mixed in: signed zeros, NaN,
infinities, huge and tiny magnitudes, near-cancelling pairs, halfway cases for rounding,
singular and nearly singular matrices. PROGRAMS pairs each kernel of
`tests/bitexact_kernels.py` with its precisions, inputs and output columns; `run_program`
runs one of them (or the host expressions of HOST) and returns its columns. The same code
runs here with `wp` = kernelc and in the Warp subprocess of the test, which loads this file
with KERNELC_BITEXACT_MODULE=warp.
"""

import os
import typing

import numpy as np

from tests.bitexact_kernels import (
    ATOMIC,
    F32_6,
    F32_Q,
    F32_S,
    F32_V3,
    INT,
    MAT22,
    MAT33,
    MAT44,
    MAT_S,
    MAT_V2,
    MAT_V3,
    MAT_V4,
    QUAT_M,
    QUAT_Q,
    QUAT_S,
    QUAT_V,
    SCALAR,
    SCALAR_FLAGS,
    VEC2,
    VEC3,
    VEC4,
    VEC_S,
    VEC_U,
    XFORM_6,
    XFORM_66,
    XFORM_M,
    XFORM_Q,
    XFORM_S,
    XFORM_T,
    XFORM_V,
    k_atomic,
    k_f32,
    k_int,
    k_mat,
    k_quat,
    k_scalar,
    k_vec,
    k_xform,
    wp,
)

Any = typing.Any
N = int(os.environ.get("KERNELC_BITEXACT_N", "96"))  # more rows: a slower, wider sweep
PRECISIONS = ["float16", "float32", "float64"]
INT_TYPES = ["int8", "int32", "int64", "uint8", "uint32"]

# ---- inputs ------------------------------------------------------------------------------

SEQUENCES = [(i, j, k) for i in range(3) for j in range(3) for k in range(3)
             if i != j and j != k]
_SPECIAL = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e30, -1e30, 1e-30, -1e-40, 1e300, 1e-310,
            0.5, 1.5, 2.5, -0.5, -2.5, 3.0, -3.0, 1.0, -1.0, 65504.0, 100.0, -88.5, 710.0,
            1e-8, 2.0**24 + 1, 0.1, np.pi, -np.pi / 2, 1e5]


def _scalars(rng, n: int, low: float = -4.0, high: float = 4.0) -> np.ndarray:
    """Uniform in [low, high), with a quarter of the rows of any magnitude (1e-30 to 1e30,
    either sign) and a tenth halfway cases of rounding (k / 2)."""
    x = rng.uniform(low, high, n)
    x[np.abs(x) < 0.05] = 0.75
    wide = rng.random(n) < 0.25
    x[wide] = np.sign(x[wide]) * 10.0 ** rng.uniform(-30, 30, wide.sum())
    halves = rng.random(n) < 0.1
    x[halves] = np.round(x[halves] * 2) / 2
    return x


def _unit_quats(rng, n: int) -> np.ndarray:
    q = rng.standard_normal((n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _rotations(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], 1)


def _awkward_vectors(rng, a: np.ndarray) -> np.ndarray:
    """Random vectors with zero, signed-zero, NaN, huge and tiny rows mixed in; b nearly
    parallel to a in some rows (cancellation in cross products)."""
    n, k = a.shape
    a *= np.where(rng.random((n, 1)) < 0.2, 10.0 ** rng.uniform(-8, 8, (n, 1)), 1.0)
    a[0] = 0.0
    a[1] = -0.0
    a[2, 0] = np.nan
    a[3] *= 1e20
    a[4] *= 1e-20
    a[5, 1:] = 0.0
    a[6] = np.inf
    return a


def _awkward_matrices(rng, m: np.ndarray) -> np.ndarray:
    n, r, _ = m.shape
    m *= np.where(rng.random((n, 1, 1)) < 0.2, 10.0 ** rng.uniform(-8, 8, (n, 1, 1)), 1.0)
    m[0] = 0.0
    m[1, 1] = m[1, 0]  # two equal rows: singular
    m[2] = np.eye(r)
    m[3, 0, 0] = np.nan
    m[4] *= 1e15
    m[5] *= 1e-15
    m[6, -1] = m[6, 0] + 1e-7 * m[6, 1]  # nearly singular
    m[7] = np.diag(rng.uniform(-2, 2, r))
    m[8, :, 1] = -0.0
    return m


def make_inputs(n: int = N, seed: int = int(os.environ.get("KERNELC_BITEXACT_SEED", "5"))
                ) -> dict[str, np.ndarray]:
    """Inputs in float64 (each precision casts them); integer inputs by type."""
    rng = np.random.default_rng(seed)
    x, y, z = _scalars(rng, n), _scalars(rng, n), _scalars(rng, n)
    k = len(_SPECIAL)
    x[:k] = _SPECIAL
    y[k:2 * k] = _SPECIAL
    z[2 * k:2 * k + 6] = [0.0, -0.0, np.nan, np.inf, 1e-30, 1e30]
    near = slice(2 * k, 2 * k + 10)  # near-cancelling pairs: x - y, x + (-y), lerp ...
    y[near] = x[near] * (1 + rng.uniform(-1e-6, 1e-6, 10))
    y[2 * k + 10:2 * k + 14] = [0.0, -0.0, np.nan, np.inf]
    u = rng.uniform(-1, 1, n)
    u[:12] = [1.0, -1.0, 0.0, -0.0, np.nan, 1 + 1e-7, -1 - 1e-7, 1e-9, 0.999999, -0.9999999,
              0.5, 1e-30]
    s = _scalars(rng, n, 0.2, 3.0)
    s[:6] = [np.nan, 1e30, 1e-30, -1.5, 0.0, 1.0]
    vec = {f"a{d}": _awkward_vectors(rng, rng.uniform(-2, 2, (n, d))) for d in (2, 3, 4, 6)}
    for d in (2, 3, 4, 6):
        b = rng.uniform(-2, 2, (n, d))
        b[10:20] = vec[f"a{d}"][10:20] * (1 + rng.uniform(-1e-6, 1e-6, (10, d)))
        vec[f"b{d}"] = b
    mats = {}
    for d in (2, 3, 4):
        mats[f"m{d}"] = _awkward_matrices(rng, rng.uniform(-2, 2, (n, d, d)))
        mats[f"n{d}"] = rng.uniform(-2, 2, (n, d, d))
    qa, qb = _unit_quats(rng, n), _unit_quats(rng, n)
    qa[0] = [0.0, 0.0, 0.0, 0.0]
    qa[1] = [0.0, 0.0, 0.0, 1.0]
    qa[2] = [1.0, 0.0, 0.0, 0.0]  # a half turn: w == 0
    qa[3] *= 3.0  # not unit
    qa[4, 3] = -abs(qa[4, 3])
    qa[5, :3] *= 1e-4
    qa[5] /= np.linalg.norm(qa[5])
    qb[6], qb[7], qb[8] = qa[6], -qa[7], qa[8] + 1e-4
    rot_q = _unit_quats(rng, n)
    rot_q[:4] = [[0, 0, 0, 1], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]
    rot_q[4:8, 3] = 1e-3  # traces near -1: the other branches of quat_from_matrix
    rot_q /= np.linalg.norm(rot_q, axis=1, keepdims=True)
    rot3 = _rotations(rot_q)
    rot3[8:12] = rng.uniform(-1, 1, (4, 3, 3))  # not rotations at all
    scale3 = rng.uniform(0.5, 2.0, (n, 3))
    scale3[0] = [0.0, 1.0, 2.0]
    rot4 = np.zeros((n, 4, 4))
    rot4[:, :3, :3] = _rotations(_unit_quats(rng, n)) * scale3[:, None, :]
    rot4[:, :3, 3] = rng.uniform(-5, 5, (n, 3))
    rot4[:, 3, 3] = 1.0
    ta = np.concatenate([rng.uniform(-5, 5, (n, 3)), _unit_quats(rng, n)], 1)
    tb = np.concatenate([rng.uniform(-5, 5, (n, 3)), _unit_quats(rng, n)], 1)
    ang = np.stack([rng.uniform(-3, 3, n), rng.uniform(-1.5, 1.5, n), rng.uniform(-3, 3, n)], 1)
    ang[0] = [0.0, np.pi / 2, 0.0]
    axis = rng.standard_normal((n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    out = dict(x=x, y=y, z=z, u=u, s=s, qa=qa, qb=qb, rot3=rot3, rot4=rot4, ta=ta, tb=tb,
               ang=ang, axis=axis, scale3=scale3, **vec, **mats)
    out["seq"] = np.array([SEQUENCES[i % 12] for i in range(n)], np.int32)
    out["consts"] = np.zeros(n)
    out["consts"][1] = 1.0  # the kernels' typed 0 and 1
    for name in INT_TYPES:
        info = np.iinfo(name)
        a = rng.integers(info.min, info.max, n, endpoint=True)
        b = rng.integers(info.min, info.max, n, endpoint=True)
        c = rng.integers(info.min, info.max, n, endpoint=True)
        a[:16] = rng.integers(max(info.min, -20), 20, 16)
        b[:16] = rng.integers(max(info.min, -5), 5, 16)
        a[16:20] = [info.min, info.max, 0, 1]
        b[b == 0] = 3  # Warp (C) traps on x / 0 and on MIN / -1
        b[(a == info.min) & (b == -1)] = 7
        for key, value in (("x", a), ("y", b), ("z", c)):
            out[f"{name}_{key}"] = value.astype(name)
    return out


# ---- programs: run under kernelc here and under Warp in a subprocess ---------------------

_SUFFIX = {"float16": "h", "float32": "", "float64": "d"}


def _dtype(kind: str, p: str) -> Any:
    """The Warp type of an argument kind for precision `p` ("scalar": `p` itself)."""
    if kind in ("scalar", "int32"):
        return getattr(wp, p if kind == "scalar" else kind)
    return getattr(wp, kind + _SUFFIX[p])


# Each program: kernel, precisions, inputs (input name, kind) and outputs, by column label:
# (column names, kind). Columns are reported as "label.name" ("name" for the label "").
_SCALAR_IN = [(k, "scalar") for k in ("x", "y", "z", "u", "consts")]
_MAT_IN = [(f"{mn}{d}", f"mat{d}{d}") for d in (2, 3, 4) for mn in "mn"]
_XFORM_IN = ["ta:transform", "tb:transform", "a3:vec3", "scale3:vec3", "qa:quat",
             "rot4:mat44", "m3:mat33", "n3:mat33", "a6:spatial_vector", "b6:spatial_vector",
             "s:scalar"]
PROGRAMS = {
    "scalar": (k_scalar, PRECISIONS, _SCALAR_IN,
               {"": (SCALAR, "scalar"), "flag": (SCALAR_FLAGS, "scalar")}),
    "int": (k_int, INT_TYPES, _SCALAR_IN[:3], {"": (INT[:-1], "scalar"), "count": (INT[-1:],
                                                                                  "int32")}),
    "atomic": (k_atomic, ["float32", "float64"], _SCALAR_IN[:3], {"": (ATOMIC, "scalar")}),
    "vec": (k_vec, PRECISIONS,
            [(f"{ab}{d}", kind) for d, kind in ((2, "vec2"), (3, "vec3"), (4, "vec4"),
                                                 (6, "spatial_vector")) for ab in "ab"]
            + [("s", "scalar")],
            {"s": (VEC_S, "scalar"), "u": (VEC_U, "int32"), "v2": (VEC2, "vec2"),
             "v3": (VEC3, "vec3"), "v4": (VEC4, "vec4")}),
    "mat": (k_mat, PRECISIONS,
            _MAT_IN + [("a2", "vec2"), ("a3", "vec3"), ("b3", "vec3"), ("a4", "vec4"),
                       ("s", "scalar")],
            {"s": (MAT_S, "scalar"), "m22": (MAT22, "mat22"), "m33": (MAT33, "mat33"),
             "m44": (MAT44, "mat44"), "v2": (MAT_V2, "vec2"), "v3": (MAT_V3, "vec3"),
             "v4": (MAT_V4, "vec4")}),
    "quat": (k_quat, PRECISIONS,
             [("qa", "quat"), ("qb", "quat"), ("axis", "vec3"), ("ang", "vec3"),
              ("rot3", "mat33"), ("rot4", "mat44"), ("s", "scalar")],
             {"s": (QUAT_S, "scalar"), "q": (QUAT_Q, "quat"), "v": (QUAT_V, "vec3"),
              "m": (QUAT_M, "mat33")}),
    "xform": (k_xform, PRECISIONS, [tuple(a.split(":")) for a in _XFORM_IN],
              {"t": (XFORM_T, "transform"), "v": (XFORM_V, "vec3"), "q": (XFORM_Q, "quat"),
               "m": (XFORM_M, "mat44"), "s": (XFORM_S, "scalar"),
               "s6": (XFORM_6, "spatial_vector"), "s66": (XFORM_66, "spatial_matrix")}),
    "f32": (k_f32, ["float32"],
            [("axis", "vec3"), ("qa", "quat"), ("ang", "vec3"), ("seq", "int32"),
             ("ta", "transform"), ("a6", "spatial_vector"), ("x", "scalar")],
            {"s": (F32_S, "scalar"), "v": (F32_V3, "vec3"), "q": (F32_Q, "quat"),
             "s6": (F32_6, "spatial_vector")}),
}


def program_args(name: str, p: str) -> list:
    """Input arrays, then outputs filled with a value that differs between kernelc and Warp
    (so a column that one side leaves unwritten cannot pass)."""
    _, _, inputs, outputs = PROGRAMS[name]
    x = make_inputs()
    args = []
    for key, kind in inputs:
        data = x[f"{p}_{key}"] if p in INT_TYPES else x[key]
        if kind != "int32":
            with np.errstate(over="ignore"):  # huge inputs become infinities in float16
                data = data.astype(p)
        args.append(wp.array(data, dtype=_dtype(kind, p), device="cpu"))
    for names, kind in outputs.values():
        out = wp.empty((N, len(names)), dtype=_dtype(kind, p), device="cpu")
        out.numpy()[...] = 77 if wp.__name__ == "kernelc" else 55
        args.append(out)
    return args


def run_program(name: str, precision: str) -> dict[str, np.ndarray]:
    """The outputs of one kernel (or of the host program) for one precision, by column."""
    if name == "host":
        return run_host(precision)
    kernel, _, _, outputs = PROGRAMS[name]
    args = program_args(name, precision)
    wp.launch(kernel, dim=N, inputs=args, device="cpu")
    results = {}
    for (label, (names, _)), arr in zip(outputs.items(), args[-len(outputs):]):
        data = arr.numpy()
        for k, col in enumerate(names):
            results[f"{label}.{col}" if label else col] = data[:, k]
    return results


HOST_N = 8  # elements of the host program (each a few Python calls)


def _host_values(p: str, k: int) -> dict[str, Any]:
    x = make_inputs()

    def value(kind: str, key: str) -> Any:
        return _dtype(kind, p)(*x[key][k].astype(p).ravel().tolist())

    named = {"s": "s:scalar", "x": "x:scalar", "y": "y:scalar", "unit": "u:scalar",
             "v2": "a2:vec2", "v3": "a3:vec3", "w3": "b3:vec3", "v4": "a4:vec4",
             "m2": "m2:mat22", "m3": "m3:mat33", "n3": "n3:mat33", "m4": "m4:mat44",
             "n4": "n4:mat44", "q": "qa:quat", "r": "qb:quat", "t": "ta:transform",
             "u": "tb:transform", "rot": "rot3:mat33"}
    with np.errstate(over="ignore"):
        return {name: value(*reversed(spec.split(":"))) for name, spec in named.items()}


# Host expressions: Python operators and builtin calls on host values (Warp's values on
# the host run Warp's native builtins; kernelc's run the same code as its kernels).
HOST = {
    "mul_vs": lambda h: h["v3"] * h["s"], "mul_sv": lambda h: h["s"] * h["v3"],
    "div_vs": lambda h: h["v3"] / h["s"], "add_vv": lambda h: h["v3"] + h["w3"],
    "mul_v_literal": lambda h: h["v3"] * 2.5, "mul_literal_m": lambda h: 0.1 * h["m3"],
    "div_literal_v": lambda h: 3.0 / h["v3"], "mul_q_literal": lambda h: h["q"] * 0.3,
    "sub_vv": lambda h: h["v3"] - h["w3"], "neg_v": lambda h: -h["v3"],
    "mul_mv": lambda h: h["m3"] @ h["v3"], "mul_vm": lambda h: h["v3"] @ h["m3"],
    "mul_mm": lambda h: h["m3"] @ h["n3"], "mul_mm4": lambda h: h["m4"] @ h["n4"],
    "mul_mv4": lambda h: h["m4"] @ h["v4"], "mul_ms": lambda h: h["m3"] * h["s"],
    "mul_qq": lambda h: h["q"] * h["r"], "mul_tt": lambda h: h["t"] * h["u"],
    "normalize": lambda h: wp.normalize(h["v3"]), "normalize_q": lambda h: wp.normalize(h["q"]),
    "length": lambda h: wp.length(h["v3"]), "dot4": lambda h: wp.dot(h["v4"], h["v4"]),
    "cross": lambda h: wp.cross(h["v3"], h["w3"]), "inverse2": lambda h: wp.inverse(h["m2"]),
    "inverse3": lambda h: wp.inverse(h["m3"]), "inverse4": lambda h: wp.inverse(h["m4"]),
    "determinant4": lambda h: wp.determinant(h["m4"]),
    "quat_rotate": lambda h: wp.quat_rotate(h["q"], h["v3"]),
    "quat_from_matrix": lambda h: wp.quat_from_matrix(h["rot"]),
    "quat_slerp": lambda h: wp.quat_slerp(h["q"], h["r"], h["s"]),
    "transform_point": lambda h: wp.transform_point(h["t"], h["v3"]),
    "transform_inverse": lambda h: wp.transform_inverse(h["t"]),
    "sin": lambda h: wp.sin(h["x"]), "pow": lambda h: wp.pow(h["x"], h["y"]),
    "acos": lambda h: wp.acos(h["unit"]), "degrees": lambda h: wp.degrees(h["x"]),
    "min": lambda h: wp.min(h["x"], h["y"]), "atan2": lambda h: wp.atan2(h["x"], h["y"]),
}


def run_host(precision: str) -> dict[str, np.ndarray]:
    """Every host expression on HOST_N elements; one that fails gives no column."""
    values = [_host_values(precision, k) for k in range(HOST_N)]
    out = {}
    for name, expr in HOST.items():
        try:
            rows = [np.asarray(expr(h), dtype=precision).reshape(-1) for h in values]
        except Exception:  # noqa: BLE001 - Warp has no host form of some (type, builtin)
            continue
        out[name] = np.stack(rows)
    return out


def warp_cases() -> list[tuple[str, str]]:
    kernels = [(name, p) for name, (_, precisions, _, _) in PROGRAMS.items() for p in precisions]
    return kernels + [("host", p) for p in ("float32", "float64")]
