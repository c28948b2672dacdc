"""Programs of the spatial-builtin suite (`tests/test_spatial_builtins.py` and
`tests/test_spatial_builtins_cuda.py`): quaternion conversions, transform helpers and
spatial algebra, written as Warp programs (`wp.*`).

The kernels and `program_*` functions run twice from the same source: under kernelc with
`wp` = kernelc, and in a Warp subprocess that loads this file with
KERNELC_SPATIAL_MODULE=warp. Inputs are random and non-zero (`make_inputs`), outputs are
poisoned with NaN before every launch, and the NumPy references (`hamilton`, `rotation`,
...) live here too. PRECISIONS and TOL are the precisions the tests run and their
tolerances.
"""

# No `from __future__ import annotations`: Warp reads kernel annotations as objects.

import importlib
import os
import typing

import numpy as np

wp = importlib.import_module(os.environ.get("KERNELC_SPATIAL_MODULE", "kernelc"))
Any = typing.Any
N = 48
PRECISIONS = ["float32", "float64"]
TOL = {"float16": 1e-2, "float32": 2e-5, "float64": 1e-11}

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
