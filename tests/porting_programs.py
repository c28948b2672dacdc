"""Warp-style programs that run unchanged under NVIDIA Warp and under kernelc, part 1.

`tests/test_porting.py` imports this module and its two companions (`porting_kernels.py`,
`porting_runtime.py`, listed in MODULES) twice: in its own process with `wp` = kernelc, and
in a subprocess with `wp` = warp (the environment variable KERNELC_PORTING_MODULE names the
module), then compares what each program returns. The code is written the way Warp's
documentation and examples write it; nothing in it knows which module it runs on.

Each `program_*` function builds its inputs from a seeded NumPy generator (non-zero random
values), poisons its outputs (NaN, or a sentinel for integers) and returns a dict of NumPy
arrays, numbers and strings. This part: arrays, vectors, matrices, quaternions and
transforms, structs, funcs, generics and atomics.
"""

# No `from __future__ import annotations`: Warp reads kernel annotations as objects.

import importlib
import os
import typing

import numpy as np

wp = importlib.import_module(os.environ.get("KERNELC_PORTING_MODULE", "kernelc"))

DEVICE = "cpu"
PROGRAMS = {}
MODULES = ("tests.porting_programs", "tests.porting_kernels", "tests.porting_runtime")


def program(fn):
    """Registers a program under its name without the `program_` prefix."""
    PROGRAMS[fn.__name__.removeprefix("program_")] = fn
    return fn


def nonzero(rng, shape, low=-4.0, high=4.0, dtype=np.float32):
    """Random values in [low, high) with none near zero."""
    x = rng.uniform(low, high, shape)
    x[np.abs(x) < 0.05] = 0.5
    return x.astype(dtype)


def poisoned(shape, dtype=float):
    """An output array whose every element is NaN (floats) or a sentinel (integers)."""
    a = wp.empty(shape, dtype=dtype, device=DEVICE)
    view = a.numpy()
    if view.dtype.kind == "f":
        view[...] = np.nan
    else:
        view[...] = np.iinfo(view.dtype).max - 3
    return a


# ---- 1. arrays and a first kernel -----------------------------------------------------------


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a * x[i] + y[i]


@program
def program_saxpy():
    rng = np.random.default_rng(1)
    n = 1000
    x = wp.array(nonzero(rng, n), dtype=float, device=DEVICE)
    y = wp.array(nonzero(rng, n), dtype=wp.float32, device=DEVICE)
    out = poisoned(n)
    wp.launch(saxpy, dim=n, inputs=[2.5, x, y, out], device=DEVICE)
    return {
        "out": out.numpy(),
        "shape": np.array(out.shape),
        "strides": np.array(out.strides),
        "size": out.size,
        "ndim": out.ndim,
        "dtype": str(out.dtype == wp.float32),
    }


# ---- 2. particles: vec3, funcs, constants ---------------------------------------------------

GRAVITY = wp.constant(-9.8)
RESTITUTION = wp.constant(0.5)
GROUND = 0.0


@wp.func
def apply_ground(p: wp.vec3, v: wp.vec3):
    if p[1] < GROUND:
        p = wp.vec3(p[0], GROUND, p[2])
        v = wp.vec3(v[0], -v[1] * RESTITUTION, v[2])
    return p, v


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float):
    tid = wp.tid()
    vel = v[tid] + wp.vec3(0.0, GRAVITY, 0.0) * dt
    pos = x[tid] + vel * dt
    pos, vel = apply_ground(pos, vel)
    x[tid] = pos
    v[tid] = vel


@wp.kernel
def measure(
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    out: wp.array2d(dtype=float),
    dirs: wp.array(dtype=wp.vec3),
):
    tid = wp.tid()
    p = x[tid]
    q = v[tid]
    out[tid, 0] = wp.length(p)
    out[tid, 1] = wp.length_sq(q)
    out[tid, 2] = wp.dot(p, q)
    c = wp.cross(p, q)
    out[tid, 3] = c.x + c.y * 2.0 + c.z * 3.0
    out[tid, 4] = wp.max(p)
    out[tid, 5] = wp.min(q)
    dirs[tid] = wp.normalize(p)


@program
def program_particles():
    rng = np.random.default_rng(2)
    n = 256
    x = wp.array(nonzero(rng, (n, 3), 0.5, 4.0), dtype=wp.vec3, device=DEVICE)
    v = wp.array(nonzero(rng, (n, 3)), dtype=wp.vec3, device=DEVICE)
    for _ in range(20):
        wp.launch(integrate, dim=n, inputs=[x, v, 0.05], device=DEVICE)
    out = poisoned((n, 6))
    dirs = poisoned(n, wp.vec3)
    wp.launch(measure, dim=n, inputs=[x, v], outputs=[out, dirs], device=DEVICE)
    return {
        "x": x.numpy(),
        "v": v.numpy(),
        "out": out.numpy(),
        "dirs": dirs.numpy(),
        "numpy_shape": np.array(x.numpy().shape),
    }


# ---- 3. matrices -----------------------------------------------------------------------------


@wp.kernel
def matrix_ops(
    m: wp.array(dtype=wp.mat33),
    v: wp.array(dtype=wp.vec3),
    out_m: wp.array(dtype=wp.mat33),
    out_v: wp.array(dtype=wp.vec3),
    out_s: wp.array2d(dtype=float),
):
    i = wp.tid()
    a = m[i]
    b = v[i]
    inv = wp.inverse(a)
    out_m[i] = inv @ a + wp.transpose(a) * 2.0 - wp.outer(b, b) + wp.skew(b) + wp.diag(b)
    out_v[i] = a @ b + wp.mul(wp.transpose(a), b) + wp.cw_mul(b, b) + wp.cw_div(b, b)
    out_s[i, 0] = wp.determinant(a)
    out_s[i, 1] = wp.trace(a)
    out_s[i, 2] = a[1, 2] + a[2][0]
    row = a[1]
    out_s[i, 3] = row[0] + row[1] + row[2]
    ident = wp.identity(n=3, dtype=float)
    out_s[i, 4] = wp.determinant(ident + a * 0.0)
    m22 = wp.mat22(a[0, 0], a[0, 1], a[1, 0], a[1, 1])
    out_s[i, 5] = wp.determinant(m22)
    m44 = wp.mat44(
        1.0, 0.0, 0.0, b[0], 0.0, 1.0, 0.0, b[1], 0.0, 0.0, 1.0, b[2], 0.0, 0.0, 0.0, 1.0
    )
    p = m44 @ wp.vec4(1.0, 2.0, 3.0, 1.0)
    out_s[i, 6] = p[0] + p[1] * 10.0 + p[2] * 100.0


@program
def program_matrices():
    rng = np.random.default_rng(3)
    n = 64
    mats = nonzero(rng, (n, 3, 3)) + 5.0 * np.eye(3, dtype=np.float32)
    m = wp.array(mats, dtype=wp.mat33, device=DEVICE)
    v = wp.array(nonzero(rng, (n, 3)), dtype=wp.vec3, device=DEVICE)
    out_m, out_v, out_s = poisoned(n, wp.mat33), poisoned(n, wp.vec3), poisoned((n, 7))
    wp.launch(matrix_ops, dim=n, inputs=[m, v, out_m, out_v, out_s], device=DEVICE)
    return {
        "m": out_m.numpy(),
        "v": out_v.numpy(),
        "s": out_s.numpy(),
        "numpy_shape": np.array(out_m.numpy().shape),
    }


# ---- 4. quaternions and transforms ----------------------------------------------------------


@wp.kernel
def rigid(
    axis: wp.array(dtype=wp.vec3),
    angle: wp.array(dtype=float),
    p: wp.array(dtype=wp.vec3),
    out_v: wp.array2d(dtype=wp.vec3),
    out_q: wp.array2d(dtype=wp.quat),
    out_t: wp.array(dtype=wp.transform),
    out_m: wp.array(dtype=wp.mat33),
):
    i = wp.tid()
    q = wp.quat_from_axis_angle(wp.normalize(axis[i]), angle[i])
    r = wp.quat_from_axis_angle(wp.vec3(0.0, 1.0, 0.0), 0.3)
    out_v[i, 0] = wp.quat_rotate(q, p[i])
    out_v[i, 1] = wp.quat_rotate_inv(q, p[i])
    t = wp.transform(p[i], q)
    u = wp.transform(wp.vec3(1.0, 2.0, 3.0), r)
    out_v[i, 2] = wp.transform_point(t, wp.vec3(1.0, 0.5, -2.0))
    out_v[i, 3] = wp.transform_vector(t, wp.vec3(1.0, 0.5, -2.0))
    out_v[i, 4] = wp.transform_get_translation(wp.transform_multiply(t, u))
    out_v[i, 5] = wp.transform_get_translation(wp.transform_inverse(t))
    out_q[i, 0] = q * r
    out_q[i, 1] = wp.quat_inverse(q)
    out_q[i, 2] = wp.quat_slerp(q, r, 0.25)
    out_q[i, 3] = wp.quat_from_matrix(wp.quat_to_matrix(q))
    out_q[i, 4] = wp.normalize(wp.quat(1.0, 2.0, 3.0, 4.0))
    out_q[i, 5] = wp.transform_get_rotation(t * u)
    out_t[i] = t * u
    out_m[i] = wp.quat_to_matrix(q)


@program
def program_quat_transform():
    rng = np.random.default_rng(4)
    n = 64
    axis = wp.array(nonzero(rng, (n, 3)), dtype=wp.vec3, device=DEVICE)
    angle = wp.array(nonzero(rng, n, -3.0, 3.0), dtype=float, device=DEVICE)
    p = wp.array(nonzero(rng, (n, 3)), dtype=wp.vec3, device=DEVICE)
    out_v, out_q = poisoned((n, 6), wp.vec3), poisoned((n, 6), wp.quat)
    out_t, out_m = poisoned(n, wp.transform), poisoned(n, wp.mat33)
    wp.launch(rigid, dim=n, inputs=[axis, angle, p, out_v, out_q, out_t, out_m], device=DEVICE)
    return {"v": out_v.numpy(), "q": out_q.numpy(), "t": out_t.numpy(), "m": out_m.numpy()}


# ---- 5. structs -------------------------------------------------------------------------------


@wp.struct
class Material:
    color: wp.vec3
    roughness: float


@wp.struct
class Body:
    pos: wp.vec3
    mass: float
    id: int
    material: Material
    forces: wp.array(dtype=wp.vec3)


@wp.func
def heavier(b: Body, factor: float):
    c = b
    c.mass = b.mass * factor
    return c


@wp.func
def make_material(r: float):
    m = Material()
    m.color = wp.vec3(r, 2.0 * r, 3.0 * r)
    m.roughness = r
    return m


@wp.kernel
def use_body(body: Body, out: wp.array(dtype=float), mats: wp.array(dtype=Material)):
    i = wp.tid()
    h = heavier(body, float(i + 1))
    f = body.forces[i]
    out[i] = h.mass + wp.length(f) + body.material.roughness + float(body.id) + body.pos.y
    m = make_material(float(i))
    m.color.z = body.material.color.x
    mats[i] = m
    body.forces[i] = f * 2.0


@program
def program_structs():
    rng = np.random.default_rng(5)
    n = 16
    body = Body()
    body.pos = wp.vec3(1.0, 2.0, 3.0)
    body.mass = 2.5
    body.id = 7
    body.material = Material()
    body.material.color = wp.vec3(0.25, 0.5, 0.75)
    body.material.roughness = 0.125
    body.forces = wp.array(nonzero(rng, (n, 3)), dtype=wp.vec3, device=DEVICE)
    out = poisoned(n)
    mats = wp.zeros(n, dtype=Material, device=DEVICE)
    wp.launch(use_body, dim=n, inputs=[body, out, mats], device=DEVICE)
    m = mats.numpy()
    return {
        "out": out.numpy(),
        "forces": body.forces.numpy(),
        "color": np.asarray(m["color"]),
        "roughness": np.asarray(m["roughness"]),
        "fields": ",".join(m.dtype.names),
        "host_mass": body.mass,
        "host_pos": np.array(body.pos),
    }


# ---- 6. funcs: several results, overloads, funcs calling funcs ----------------------------------


@wp.func
def sincos(x: float):
    return wp.sin(x), wp.cos(x)


@wp.func
def square(x: float):
    return x * x


@wp.func
def square(x: int):  # noqa: F811  (an overload, as in Warp)
    return x * x * 10


@wp.func
def poly(x: float) -> float:
    return square(x) + 2.0 * x + 1.0


@wp.func
def first_positive(a: wp.array(dtype=float), start: int) -> int:
    for j in range(start, a.shape[0]):
        if a[j] > 0.0:
            return j
    return -1


@wp.kernel
def use_funcs(x: wp.array(dtype=float), out: wp.array2d(dtype=float), idx: wp.array2d(dtype=int)):
    i = wp.tid()
    s, c = sincos(x[i])
    out[i, 0] = s * s + c * c
    out[i, 1] = poly(x[i])
    out[i, 2] = square(x[i])
    idx[i, 0] = square(i)
    idx[i, 1] = first_positive(x, i)


@program
def program_funcs():
    rng = np.random.default_rng(6)
    n = 64
    x = wp.array(nonzero(rng, n), dtype=float, device=DEVICE)
    out, idx = poisoned((n, 3)), poisoned((n, 2), int)
    wp.launch(use_funcs, dim=n, inputs=[x, out, idx], device=DEVICE)
    return {"out": out.numpy(), "idx": idx.numpy(), "host_call": square(3.0)}


@wp.func
def settle(x: wp.ref[float], v: wp.ref[wp.vec3], floor: float) -> int:
    """Moves x above the floor and damps v; by reference, as Warp's wp.ref."""
    if x < floor:
        x = floor
        v = v * 0.5
        v[1] = -v[1]
        return 1
    x += 0.125
    return 0


@wp.kernel(enable_backward=False)
def use_refs(x: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), hits: wp.array(dtype=int)):
    i = wp.tid()
    n = int(0)
    n += settle(x[i], v[i], 0.0)
    y = x[i] * 2.0
    n += settle(y, v[i], 3.0)
    x[i] = y
    hits[i] = n


@program
def program_func_refs():
    rng = np.random.default_rng(16)
    n = 64
    x = wp.array(nonzero(rng, n), dtype=float, device=DEVICE)
    v = wp.array(nonzero(rng, (n, 3)), dtype=wp.vec3, device=DEVICE)
    hits = poisoned(n, int)
    wp.launch(use_refs, dim=n, inputs=[x, v, hits], device=DEVICE)
    return {"x": x.numpy(), "v": v.numpy(), "hits": hits.numpy()}


# ---- 7. generics -------------------------------------------------------------------------------


@wp.func
def twice(x: typing.Any):
    return x + x


@wp.kernel
def scale_any(a: wp.array(dtype=typing.Any), s: typing.Any, out: wp.array(dtype=typing.Any)):
    i = wp.tid()
    out[i] = twice(a[i]) * s


@wp.kernel
def axpy_any(x: wp.array(dtype=typing.Any), y: wp.array(dtype=typing.Any), alpha: typing.Any):
    i = wp.tid()
    y[i] = alpha * x[i] + y[i]


# Declared specialisations compile with the module; the int32 one of scale_any is inferred
# at its launch (each new one rebuilds Warp's whole module, so the rest are declared).
for _t, _s in [(wp.float32, wp.float32), (wp.float64, wp.float64), (wp.vec3, wp.float32)]:
    wp.overload(scale_any, [wp.array(dtype=_t), _s, wp.array(dtype=_t)])
wp.overload(axpy_any, [wp.array(dtype=wp.float64), wp.array(dtype=wp.float64), wp.float64])
wp.overload(
    axpy_any, {"x": wp.array(dtype=wp.vec3), "y": wp.array(dtype=wp.vec3), "alpha": wp.float32}
)


@program
def program_generics():
    rng = np.random.default_rng(7)
    n = 32
    res = {}
    for name, dtype, scalar in [
        ("f32", wp.float32, 1.5),
        ("f64", wp.float64, wp.float64(1.5)),
        ("i32", wp.int32, 3),
        ("vec3", wp.vec3, 1.5),
    ]:
        shape = (n, 3) if dtype == wp.vec3 else n
        data = (
            nonzero(rng, shape) if dtype != wp.int32 else rng.integers(1, 100, n).astype(np.int32)
        )
        a = wp.array(data, dtype=dtype, device=DEVICE)
        out = poisoned(n, dtype)
        wp.launch(scale_any, dim=n, inputs=[a, scalar, out], device=DEVICE)
        res[name] = out.numpy()
    x = wp.array(nonzero(rng, n, dtype=np.float64), dtype=wp.float64, device=DEVICE)
    y = wp.array(nonzero(rng, n, dtype=np.float64), dtype=wp.float64, device=DEVICE)
    wp.launch(axpy_any, dim=n, inputs=[x, y, wp.float64(0.5)], device=DEVICE)
    xv = wp.array(nonzero(rng, (n, 3)), dtype=wp.vec3, device=DEVICE)
    yv = wp.array(nonzero(rng, (n, 3)), dtype=wp.vec3, device=DEVICE)
    wp.launch(axpy_any, dim=n, inputs=[xv, yv, 2.0], device=DEVICE)
    res["axpy64"], res["axpy_vec3"] = y.numpy(), yv.numpy()
    res["dtype64"] = str(res["axpy64"].dtype)
    return res


# ---- 8. atomics ----------------------------------------------------------------------------------


@wp.kernel
def histogram(
    values: wp.array(dtype=float),
    bins: wp.array(dtype=int),
    counter: wp.array(dtype=int),
    slots: wp.array(dtype=int),
    extremes: wp.array(dtype=float),
    total: wp.array(dtype=float),
    vsum: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    v = values[i]
    b = int(wp.floor((v + 4.0) * 2.0))
    wp.atomic_add(bins, b, 1)
    slots[i] = wp.atomic_add(counter, 0, 1)
    wp.atomic_min(extremes, 0, v)
    wp.atomic_max(extremes, 1, v)
    total[0] += v
    total[1] -= 1.0
    wp.atomic_sub(total, 2, 2.0)
    vsum[0] += wp.vec3(1.0, v, 2.0)


@program
def program_atomics():
    rng = np.random.default_rng(8)
    n = 4096
    # Non-zero multiples of 1/8: float32 sums are exact whatever order the threads add in.
    eighths = np.round(nonzero(rng, n) * 8.0) / 8.0
    eighths[eighths == 0.0] = 0.125
    values = wp.array(eighths, dtype=float, device=DEVICE)
    bins = wp.zeros(16, dtype=int, device=DEVICE)
    counter = wp.zeros(1, dtype=int, device=DEVICE)
    slots = poisoned(n, int)
    extremes = wp.array([1e9, -1e9], dtype=float, device=DEVICE)
    total = wp.zeros(3, dtype=float, device=DEVICE)
    vsum = wp.zeros(1, dtype=wp.vec3, device=DEVICE)
    wp.launch(
        histogram,
        dim=n,
        inputs=[values, bins, counter, slots, extremes, total, vsum],
        device=DEVICE,
    )
    t = total.numpy()
    return {
        "bins": bins.numpy(),
        "counter": counter.numpy(),
        "slots": np.sort(slots.numpy()),
        "extremes": extremes.numpy(),
        "total": t,
        "vsum": vsum.numpy(),
    }


def load_all() -> dict:
    """Imports every part and returns all programs by name, in definition order."""
    for name in MODULES:
        importlib.import_module(name)
    return PROGRAMS
