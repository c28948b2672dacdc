"""Warp behaviours ported code relies on: host products, vector constants, func defaults,
NumPy arrays as kernel arguments, builtins on the host, math constants and Warp's smaller
names (see docs/porting.md). References: NumPy in float64, or the same
builtin run in a kernel (host calls must agree with kernels bit for bit)."""

from __future__ import annotations

import math
import typing

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import poisoned

# ---- 1. host products and operators -------------------------------------------------------


def _hamilton(q, r):
    x1, y1, z1, w1 = np.asarray(q, np.float64)
    x2, y2, z2, w2 = np.asarray(r, np.float64)
    return np.array([w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
                     w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2])


def _rotate(q, v):
    p = _hamilton(_hamilton(q, [*v, 0.0]), [-q[0], -q[1], -q[2], q[3]])
    return p[:3]


def test_matrix_and_vector_products_are_warps():
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-2, 2, (3, 3)), rng.uniform(-2, 2, (3, 3))
    x = rng.uniform(-2, 2, 3)
    m, n, v = kc.mat33(*a.ravel()), kc.mat33(*b.ravel()), kc.vec3(*x)
    a32, b32, x32 = (np.asarray(t, np.float64) for t in (m, n, v))
    for got, want, t in ((m * n, a32 @ b32, kc.mat33), (m @ n, a32 @ b32, kc.mat33),
                         (m * v, a32 @ x32, kc.vec3), (m @ v, a32 @ x32, kc.vec3),
                         (v * m, x32 @ a32, kc.vec3), (v @ m, x32 @ a32, kc.vec3),
                         (2.0 @ m, 2.0 * a32, kc.mat33), (m @ 2.0, 2.0 * a32, kc.mat33)):
        assert got._kc_type == t
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_quaternion_and_transform_products():
    q = kc.normalize(kc.quat(0.1, 0.2, 0.3, 0.9))
    r = kc.normalize(kc.quat(-0.3, 0.5, 0.1, 0.8))
    np.testing.assert_allclose(np.asarray(q * r), _hamilton(q, r), rtol=1e-6, atol=1e-7)
    t = kc.transform(kc.vec3(1.0, 2.0, 3.0), q)
    u = kc.transform(kc.vec3(-1.0, 0.5, 2.0), r)
    tu = t * u
    assert tu._kc_type == kc.transform
    np.testing.assert_allclose(np.asarray(tu.p), _rotate(q, u.p) + np.asarray(t.p), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tu.q), _hamilton(q, r), rtol=1e-6, atol=1e-7)


def test_host_products_match_the_same_kernel_bit_for_bit():
    m, v = kc.mat22(1.1, 2.3, 3.7, 4.9), kc.vec2(0.3, -1.7)
    out = poisoned((3, 2), np.float32)
    kc.launch(products_in_a_kernel, 1, inputs=[m, v, out])
    assert np.asarray(m * v).tobytes() == out.numpy()[0].tobytes()
    assert np.asarray(v * m).tobytes() == out.numpy()[1].tobytes()
    assert np.asarray((m * m)[1]).tobytes() == out.numpy()[2].tobytes()


@kc.kernel
def products_in_a_kernel(m: kc.mat22, v: kc.vec2, out: kc.array2d(dtype=float)):
    a = m * v
    b = v * m
    c = m * m
    for k in range(2):
        out[0, k] = a[k]
        out[1, k] = b[k]
        out[2, k] = c[1, k]


def test_equality_is_one_bool():
    v = kc.vec3(1.0, 2.0, 3.0)
    assert (v == kc.vec3(1.0, 2.0, 3.0)) is True
    assert (v != kc.vec3(1.0, 2.0, 4.0)) is True
    assert v == (1.0, 2.0, 3.0) and v == [1, 2, 3] and v == kc.vec3d(1.0, 2.0, 3.0)
    assert v != kc.vec2(1.0, 2.0) and v != 1.0 and v != None  # noqa: E711
    assert kc.mat22(1, 2, 3, 4) == [[1, 2], [3, 4]] and kc.mat22(1, 2, 3, 4) != kc.vec4(1, 2, 3, 4)
    assert kc.vec2(math.nan, 1.0) != kc.vec2(math.nan, 1.0)
    if v == kc.vec3(1.0, 2.0, 3.0):  # usable as a condition, as in Warp
        hit = True
    assert hit and v in [kc.vec3(0.0), v]
    assert bool(kc.vec3(0.0)) is True  # Warp's values are non-empty sequences


def test_scalar_operations_and_integer_semantics():
    v = kc.vec2(1.0, -3.0)
    np.testing.assert_array_equal(2.0 * v, [2.0, -6.0])
    np.testing.assert_array_equal(v / 2.0, [0.5, -1.5])
    np.testing.assert_array_equal(2.0 / v, np.float32(2.0) / np.float32([1.0, -3.0]))
    np.testing.assert_array_equal(-v, [-1.0, 3.0])
    np.testing.assert_array_equal(v + 1.0, [2.0, -2.0])  # Warp broadcasts + - % for vectors
    np.testing.assert_array_equal(1.0 - v, [0.0, 4.0])
    np.testing.assert_array_equal(v % 2.0, [1.0, -1.0])
    np.testing.assert_array_equal(kc.vec2i(-7, 7) / 2, [-3, 3])  # truncating, as in C
    np.testing.assert_array_equal(kc.vec2i(-7, 7) % kc.vec2i(2, 2), [-1, 1])
    assert np.asarray(-kc.vec2ui(1, 2)).tolist() == [2**32 - 1, 2**32 - 2]  # wraps
    assert (kc.vec2d(1.0, 2.0) * 0.1)._kc_type == kc.vec2d  # a literal takes the vector's type


def test_in_place_operators_make_a_new_value():
    v = kc.vec3(1.0, 2.0, 3.0)
    alias = v
    v += kc.vec3(1.0, 1.0, 1.0)
    v *= 2.0
    np.testing.assert_array_equal(v, [4.0, 6.0, 8.0])
    np.testing.assert_array_equal(alias, [1.0, 2.0, 3.0])


def test_numpy_keeps_its_own_meaning():
    v, w = kc.vec3(1.0, 2.0, 3.0), kc.vec3(2.0, 2.0, 2.0)
    assert type(np.multiply(v, w)) is np.ndarray
    np.testing.assert_array_equal(np.asarray(v) * w, [2.0, 4.0, 6.0])
    points = np.ones((4, 3))
    shifted = points - v  # ndarray op value: NumPy's element-wise broadcast, as with Warp
    assert type(shifted) is np.ndarray and shifted.shape == (4, 3)


@pytest.mark.parametrize("expr, message", [
    (lambda v, m: v * v, r"unsupported operand types for \*: vec3 and vec3.*dot, cw_mul"),
    (lambda v, m: v / v, "unsupported operand types for /"),
    (lambda v, m: v + kc.vec2(1.0, 2.0), "vec3 and vec2"),
    (lambda v, m: v + kc.vec3d(1.0), "vec3 and vec3d"),
    (lambda v, m: v * np.float64(2.0), "vec3 and float64"),
    (lambda v, m: m * v, "shapes do not match"),
    (lambda v, m: m + 1.0, "unsupported operand types for +"),
    (lambda v, m: m % m, "unsupported operand types for %"),
    (lambda v, m: v @ v, "unsupported operand type"),
    (lambda v, m: v + (1.0, 2.0, 3.0), "lists or tuples"),
    (lambda v, m: v * np.ones(3), "NumPy array"),
    (lambda v, m: v // 2.0, "'//' is not defined"),
    (lambda v, m: v ** 2.0, r"'\*\*' is not defined"),
    (lambda v, m: v < v, "'<' is not defined"),
    (lambda v, m: abs(v), "'abs' is not defined"),
    (lambda v, m: {v}, "unhashable"),
])
def test_operator_errors_are_type_errors(expr, message):
    with pytest.raises(TypeError, match=message):
        expr(kc.vec3(1.0, 2.0, 3.0), kc.mat22(1.0, 2.0, 3.0, 4.0))


@kc.kernel
def vector_mod(a: kc.array(dtype=kc.vec3), b: kc.array(dtype=kc.vec3),
               out: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    out[i] = a[i] % b[i]


def test_vector_mod_in_kernels(rng):
    a, b = rng.uniform(-9, 9, (16, 3)).astype(np.float32), rng.uniform(1, 3, (16, 3))
    b = (b * np.sign(rng.uniform(-1, 1, (16, 3)))).astype(np.float32)
    out = kc.empty(16, dtype=kc.vec3)
    kc.launch(vector_mod, 16, inputs=[kc.array(a, dtype=kc.vec3), kc.array(b, dtype=kc.vec3), out])
    np.testing.assert_array_equal(out.numpy(), np.fmod(a, b))


# ---- 2. vector, matrix and quaternion constants --------------------------------------------

GRAVITY = kc.constant(kc.vec3(0.0, -9.8, 0.0))
ROTATION = kc.mat22(0.0, -1.0, 1.0, 0.0)  # a plain module-level global
SPIN = kc.quat(0.0, 0.0, 0.38268343, 0.9238795)
WIDE = kc.constant(kc.vec2d(0.1, 1e300))


@kc.kernel
def use_vector_constants(v: kc.array(dtype=kc.vec3), out: kc.array(dtype=kc.vec3),
                         wide: kc.array(dtype=kc.vec2d)):
    i = kc.tid()
    r = ROTATION * kc.vec2(v[i].x, v[i].y)
    out[i] = kc.quat_rotate(SPIN, v[i] + GRAVITY * 0.5) + kc.vec3(r[0], r[1], ROTATION[1, 0])
    wide[i] = WIDE


def test_vector_constants_are_folded_in(rng):
    x = rng.uniform(-2, 2, (8, 3)).astype(np.float32)
    out, wide = kc.empty(8, dtype=kc.vec3), kc.empty(8, dtype=kc.vec2d)
    kc.launch(use_vector_constants, 8, inputs=[kc.array(x, dtype=kc.vec3), out, wide])
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])
    q = np.asarray(SPIN, np.float64)
    moved = x + np.array([0.0, -4.9, 0.0])
    want = np.array([_rotate(q, p) for p in moved])
    want[:, :2] += x[:, :2] @ rot.T
    want[:, 2] += 1.0
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(wide.numpy(), np.tile([0.1, 1e300], (8, 1)))


def make_offset_kernel(offset):
    @kc.kernel
    def shift(a: kc.array(dtype=kc.vec3)):
        i = kc.tid()
        a[i] = a[i] + offset  # a closure over a host vector

    return shift


def test_closure_over_a_vector_is_captured_by_value():
    a = kc.zeros(4, dtype=kc.vec3)
    kc.launch(make_offset_kernel(kc.vec3(1.0, 2.0, 3.0)), 4, inputs=[a])
    kc.launch(make_offset_kernel(kc.vec3(0.5, 0.5, 0.5)), 4, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), np.tile([1.5, 2.5, 3.5], (4, 1)))


def test_vector_constants_compile_for_cuda():
    compiled = kc.compile(use_vector_constants, target="cuda", arch=90)
    assert compiled.format == "cubin" and compiled.binary


# ---- 3. func default parameter values and keyword arguments --------------------------------


@kc.func
def scaled(x: float, factor: float = 2.0, offset: kc.vec2 = kc.vec2(1.0, 10.0)):  # noqa: B008
    return x * factor + offset[1]


@kc.func
def pick(x: int, shift: int = 3):
    return x + shift


@kc.func
def pick(x: float, shift: float = 0.5):  # noqa: F811  (an overload with its own default)
    return x + shift


@kc.kernel
def call_with_defaults(out: kc.array(dtype=float), io: kc.array(dtype=int)):
    out[0] = scaled(1.0)
    out[1] = scaled(1.0, 3.0)
    out[2] = scaled(1.0, factor=5.0)
    out[3] = scaled(factor=5.0, x=2.0)
    out[4] = scaled(1.0, offset=kc.vec2(0.0, 100.0))
    out[5] = pick(1.0)
    out[6] = kc.sin(x=1.0)
    io[0] = pick(4)
    io[1] = pick(4, shift=-1)


def test_func_defaults_and_keywords():
    out, io = poisoned(7, np.float32), poisoned(2, np.int32)
    kc.launch(call_with_defaults, 1, inputs=[out, io])
    want = [12.0, 13.0, 15.0, 20.0, 102.0, 1.5, np.float32(np.sin(np.float32(1.0)))]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(io.numpy(), [7, 3])
    assert scaled(1.0, factor=4.0) == 14.0  # on the host a func is a Python function


@kc.func
def needs_two(x: float, y: float):
    return x + y


@kc.func
def bad_default(x: float, y: float = None):  # noqa: RUF013
    return x


@kc.kernel
def e_missing(a: kc.array(dtype=float)):
    a[0] = needs_two(1.0)


@kc.kernel
def e_unknown_keyword(a: kc.array(dtype=float)):
    a[0] = needs_two(1.0, z=2.0)


@kc.kernel
def e_twice(a: kc.array(dtype=float)):
    a[0] = needs_two(1.0, 2.0, x=3.0)


@kc.kernel
def e_bad_default(a: kc.array(dtype=float)):
    a[0] = bad_default(1.0)


@kc.kernel
def e_kernel_default(a: kc.array(dtype=float), s: float = 1.0):
    a[0] = s


@pytest.mark.parametrize("kernel, message", [
    (e_missing, r"takes 2 arguments \(1 given; missing 'y'\)"),
    (e_unknown_keyword, "has no parameter 'z'"),
    (e_twice, "got two values for 'x'"),
    (e_bad_default, r"default value of parameter 'y' of func 'bad_default' \(None\)"),
    (e_kernel_default, "no default values"),
])
def test_func_call_errors(kernel, message):
    with pytest.raises(kc.KernelError, match=message) as info:
        kc.launch(kernel, 1, inputs=[kc.zeros(1)] + ([1.0] if kernel is e_kernel_default else []))
    assert "test_warp_compat.py" in str(info.value)


# ---- 4. NumPy arrays as kernel arguments -----------------------------------------------------


@kc.kernel
def add_one(a: kc.array(dtype=float)):
    i = kc.tid()
    a[i] = a[i] + 1.0


@kc.kernel
def scale_rows(m: kc.array2d(dtype=kc.float64), v: kc.array(dtype=kc.vec3), s: float):
    i, j = kc.tid()
    m[i, j] = m[i, j] * 2.0
    if j == 0:
        v[i] = v[i] * s


@kc.kernel
def generic_double(a: kc.array(dtype=typing.Any)):
    i = kc.tid()
    a[i] = a[i] + a[i]


def test_numpy_arrays_are_used_in_place():
    x = np.arange(8, dtype=np.float32)
    kc.launch(add_one, 8, inputs=[x])
    kc.launch(add_one, 8, inputs=[x])  # the launcher's reuse path too
    np.testing.assert_array_equal(x, np.arange(8) + 2)
    m = np.ones((3, 4))
    v = np.ones((3, 3), np.float32)
    kc.launch(scale_rows, (3, 4), inputs=[m, v, 3.0])
    np.testing.assert_array_equal(m, 2.0)
    np.testing.assert_array_equal(v, 3.0)
    strided = np.zeros(16, np.float32)[::2]  # a non-contiguous view: still in place
    kc.launch(add_one, 8, inputs=[strided])
    assert strided.base[::2].tolist() == [1.0] * 8 and strided.base[1::2].tolist() == [0.0] * 8
    ints = np.arange(4, dtype=np.int64)
    kc.launch(generic_double, 4, inputs=[ints])
    np.testing.assert_array_equal(ints, [0, 2, 4, 6])


def test_recorded_launch_takes_numpy_arrays():
    x, y = np.zeros(4, np.float32), np.zeros(4, np.float32)
    cmd = kc.launch(add_one, 4, inputs=[x], record_cmd=True)
    cmd.launch()
    cmd.set_param_by_name("a", y)
    cmd.launch()
    cmd.launch()
    np.testing.assert_array_equal(x, 1.0)
    np.testing.assert_array_equal(y, 2.0)


@pytest.mark.parametrize("value, message", [
    (np.zeros(4, np.float64), "expected an array of float32, got a NumPy array of float64"),
    (np.zeros((4, 1), np.float32), "expected a 1-d array, got a 2-d NumPy array"),
    (np.zeros(8, np.float32)[::-2], "cannot be used in place"),
])
def test_numpy_argument_errors(value, message):
    with pytest.raises(kc.KernelError, match=message) as info:
        kc.launch(add_one, 4, inputs=[value])
    assert "argument 'a'" in str(info.value)


def test_numpy_vector_array_needs_the_element_shape():
    with pytest.raises(kc.KernelError, match=r"array of shape \(\.\.\., 3\), got shape"):
        kc.launch(scale_rows, (2, 2), inputs=[np.ones((2, 2)), np.ones((2, 4), np.float32), 1.0])
    frozen = np.ones(4, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(kc.KernelError, match="read-only"):
        kc.launch(add_one, 4, inputs=[frozen])


@pytest.mark.cuda
def test_numpy_array_on_a_cuda_launch_is_an_error():
    if not kc.is_cuda_available():
        pytest.skip("needs a CUDA device")
    with pytest.raises(kc.KernelError, match="only be used in place by a CPU launch"):
        kc.launch(add_one, 4, inputs=[np.zeros(4, np.float32)], device="cuda:0")


# ---- 5. builtins on the host ----------------------------------------------------------------


@kc.kernel
def builtins_in_a_kernel(f: kc.array(dtype=float), d: kc.array(dtype=kc.float64),
                         i: kc.array(dtype=int), v: kc.array(dtype=kc.vec3),
                         q: kc.array(dtype=kc.quat), m: kc.array(dtype=kc.mat33)):
    a = kc.vec3(1.0, 2.0, 3.0)
    b = kc.vec3(0.5, -1.0, 2.0)
    r = kc.quat_from_axis_angle(kc.vec3(0.0, 0.6, 0.8), 0.7)
    state = kc.uint32(42)
    f[0] = kc.sin(0.5)
    f[1] = kc.dot(a, b)
    f[2] = kc.length(a)
    f[3] = kc.atan2(1.0, 3.0)
    f[4] = kc.clamp(5.0, 0.0, 1.5)
    f[5] = kc.randf(state)
    f[6] = kc.smoothstep(0.0, 1.0, 0.3)
    d[0] = kc.exp(kc.float64(1.3))
    i[0] = kc.min(3, -4)
    i[1] = kc.div(-7, 2)
    i[2] = kc.mod(-7, 2)
    i[3] = kc.floordiv(-7, 2)
    v[0] = kc.cross(a, b)
    v[1] = kc.normalize(a)
    v[2] = kc.quat_rotate(r, a)
    v[3] = kc.transform_point(kc.transform(b, r), a)
    q[0] = r
    q[1] = kc.quat_identity()
    m[0] = kc.outer(a, b)
    m[1] = kc.inverse(kc.mat33(2.0, 0.5, 0.0, 0.1, 3.0, 0.2, 0.0, 0.4, 1.5))


def test_host_builtins_match_kernels_bit_for_bit():
    f, d, i = kc.empty(7), kc.empty(1, dtype=kc.float64), kc.empty(4, dtype=int)
    v, q, m = kc.empty(4, dtype=kc.vec3), kc.empty(2, dtype=kc.quat), kc.empty(2, dtype=kc.mat33)
    kc.launch(builtins_in_a_kernel, 1, inputs=[f, d, i, v, q, m])
    a, b = kc.vec3(1.0, 2.0, 3.0), kc.vec3(0.5, -1.0, 2.0)
    r = kc.quat_from_axis_angle(kc.vec3(0.0, 0.6, 0.8), 0.7)
    host_f = [kc.sin(0.5), kc.dot(a, b), kc.length(a), kc.atan2(1.0, 3.0),
              kc.clamp(5.0, 0.0, 1.5), kc.randf(kc.uint32(42)), kc.smoothstep(0.0, 1.0, 0.3)]
    assert all(type(x) is float for x in host_f)
    assert np.array(host_f, np.float32).tobytes() == f.numpy().tobytes()
    assert kc.exp(kc.float64(1.3)) == d.numpy()[0]
    assert isinstance(kc.exp(kc.float64(1.3)), np.float64)
    host_i = [kc.min(3, -4), kc.div(-7, 2), kc.mod(-7, 2), kc.floordiv(-7, 2)]
    assert host_i == i.numpy().tolist() == [-4, -3, -1, -4]
    assert all(type(x) is int for x in host_i)
    host_v = [kc.cross(a, b), kc.normalize(a), kc.quat_rotate(r, a),
              kc.transform_point(kc.transform(b, r), a)]
    assert all(x._kc_type == kc.vec3 for x in host_v)
    assert np.array(host_v).tobytes() == v.numpy().tobytes()
    assert np.array([r, kc.quat_identity()]).tobytes() == q.numpy().tobytes()
    inv = kc.inverse(kc.mat33(2.0, 0.5, 0.0, 0.1, 3.0, 0.2, 0.0, 0.4, 1.5))
    assert np.array([kc.outer(a, b), inv]).tobytes() == m.numpy().tobytes()


def test_host_builtin_result_types_follow_warp():
    assert kc.sin(0.5) == pytest.approx(math.sin(0.5), rel=1e-6)
    assert isinstance(kc.sin(kc.float16(0.5)), np.float16)
    assert kc.add(kc.int8(100), kc.int8(100)) == -56 and isinstance(kc.add(kc.int8(1), kc.int8(1)),
                                                                     np.int8)
    assert kc.rand_init(42) == 1223963391 and isinstance(kc.rand_init(42), np.uint32)
    assert kc.isnan(math.nan) is True and kc.min(1.5, 2.5) == 1.5
    assert kc.max(kc.vec3(1.0, 5.0, 2.0)) == 5.0
    assert kc.quat_identity()._kc_type == kc.quat
    np.testing.assert_array_equal(kc.transform_identity(), [0, 0, 0, 0, 0, 0, 1])
    assert kc.transform_identity()._kc_type == kc.transform
    state = kc.uint32(7)
    assert kc.randf(state) == kc.randf(state)  # the state is passed by value on the host


def test_host_builtins_compile_once_per_argument_types():
    from kernelc.runtime.context import get_runtime

    kc.cos(0.25)
    table = get_runtime().extras["host_calls"]
    size = len(table)
    for x in (0.5, 1.5, np.float32(2.5)):
        kc.cos(x)
    assert len(table) == size + 1  # np.float32 is typed, a literal is not: two entries
    kc.cos(kc.float64(0.5))
    assert len(table) == size + 2


@pytest.mark.parametrize("call, error, message", [
    (lambda: kc.sin(1.0, 2.0), TypeError, r"sin\(\) takes 1 arguments \(2 given\)"),
    (lambda: kc.sin(kc.int32(1)), TypeError, r"sin\(\): expected a float, got int32"),
    (lambda: kc.sin("a"), TypeError, "cannot take a str"),
    (lambda: kc.dot((1.0, 2.0), kc.vec2(1.0, 2.0)), TypeError, "cannot take a tuple"),
    (lambda: kc.dot(np.ones(2), kc.vec2(1.0, 2.0)), TypeError, "cannot take a ndarray"),
    (lambda: kc.dot(kc.vec3(1.0), 1.0), TypeError, r"dot\(\)"),
    (lambda: kc.atomic_add(kc.zeros(2), 0, 1.0), TypeError, "only be called inside"),
    (lambda: kc.sin(y=1.0), TypeError, "unexpected keyword argument 'y'"),
    (lambda: kc.atan2(1.0, y=2.0), TypeError, "got two values for argument 'y'"),
])
def test_host_builtin_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- 6. math constants -------------------------------------------------------------------


@kc.kernel
def math_constants(out: kc.array(dtype=float), d: kc.array(dtype=kc.float64)):
    out[0] = kc.pi
    out[1] = kc.tau + kc.e
    out[2] = kc.inf
    out[3] = kc.nan
    out[4] = kc.half_pi * kc.LN2
    d[0] = kc.float64(kc.pi) * kc.float64(2.0)


def test_math_constants():
    assert (kc.pi, kc.tau, kc.e, kc.half_pi) == (math.pi, math.tau, math.e, math.pi / 2)
    assert kc.inf == math.inf and math.isnan(kc.nan) and kc.PI is kc.pi
    assert kc.phi == pytest.approx(1.618033988749895) and kc.log2e == pytest.approx(1.4426950)
    out, d = poisoned(5, np.float32), poisoned(1, np.float64)
    kc.launch(math_constants, 1, inputs=[out, d])
    got = out.numpy()
    assert got[0] == np.float32(math.pi) and got[1] == np.float32(math.tau + math.e)
    assert np.isposinf(got[2]) and np.isnan(got[3])
    assert got[4] == np.float32(np.float32(math.pi / 2) * np.float32(math.log(2)))
    assert d.numpy()[0] == math.pi * 2.0  # a literal cast to float64 keeps its precision


# ---- 7. Warp's smaller names --------------------------------------------------------------


def test_module_options():
    assert kc.get_module_options()["enable_backward"] is True
    kc.set_module_options({"enable_backward": False, "fast_math": True})
    options = kc.get_module_options(__name__)
    assert options["enable_backward"] is False and options["fast_math"] is True
    import sys

    assert kc.get_module_options(sys.modules[__name__]) is options
    kc.set_module_options({"enable_backward": True, "fast_math": False})
    with pytest.raises(ValueError, match="block_dim"):
        kc.set_module_options({"block_dim": 4096})
    with pytest.raises(TypeError, match="dict"):
        kc.set_module_options([("mode", "debug")])


def test_small_names():
    annotation = kc.array1d(dtype=kc.vec3)
    assert annotation._kc_type == kc.array(dtype=kc.vec3)._kc_type
    assert kc.array1d(np.arange(3.0)).shape == (3,)
    with pytest.raises(ValueError, match="ndim=1"):
        kc.array1d(np.ones((2, 2)))
    assert kc.is_cpu_available() is True
    assert kc.get_preferred_device() == (kc.get_cuda_devices()[0] if kc.is_cuda_available()
                                         else kc.get_device("cpu"))
    assert kc.dtype_from_numpy(np.float32) is kc.float32
    assert kc.dtype_from_numpy(np.dtype("uint16")) is kc.uint16
    assert kc.dtype_to_numpy(kc.float64) is np.float64 and kc.dtype_to_numpy(float) is np.float32
    with pytest.raises(TypeError):
        kc.dtype_from_numpy(np.complex64)
    with pytest.raises(TypeError):
        kc.dtype_to_numpy(kc.vec3)
    assert kc.config.enable_backward is True and kc.config.verify_fp is False
    assert kc.config.verbose_warnings is False and kc.config.optimization_level is None
    assert kc.config.enable_cpu_blocks is False  # Warp's default (see test_cpu_blocks.py)
    capsule = kc.to_dlpack(kc.zeros(4))
    assert type(capsule).__name__ == "PyCapsule"
    with pytest.raises(TypeError):
        kc.to_dlpack(np.zeros(4))


@kc.kernel
def fill_scaled(a: kc.array(dtype=float), s: float):
    i = kc.tid()
    a[i] = s * float(i)


def test_recorded_launch_setters():
    a, b = kc.zeros(8), kc.zeros(8)
    cmd = kc.launch(fill_scaled, 4, inputs=[a, 1.0], record_cmd=True)
    cmd.set_param_by_name("s", 2.0)
    cmd.set_dim(6)
    cmd.launch()
    np.testing.assert_array_equal(a.numpy(), [0, 2, 4, 6, 8, 10, 0, 0])
    cmd.set_params([b, 3.0])
    cmd.set_dim((8,))
    cmd.launch()
    np.testing.assert_array_equal(b.numpy(), 3.0 * np.arange(8))
    with pytest.raises(ValueError, match="argument 'x' not found"):
        cmd.set_param_by_name("x", 1.0)
    with pytest.raises(kc.KernelError, match="argument 'a': expected an array of float32"):
        cmd.set_param_at_index(0, kc.zeros(8, dtype=int))
    with pytest.raises(kc.KernelError, match="argument 's'"):
        cmd.set_param_by_name("s", "fast")
    with pytest.raises(IndexError):
        cmd.set_param_at_index(2, 1.0)
    with pytest.raises(kc.KernelError, match="must not be negative"):
        cmd.set_dim(-1)
