"""Warp's type forms: bool vectors, generic vector/matrix annotations, slice assignment,
quaternion and transform constructors, and tuples as values (checked against NumPy)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import kernelc as kc

POISON = -12345.0

vec3b = kc.types.vector(3, kc.bool)
mat22b = kc.types.matrix((2, 2), bool)
vec5 = kc.types.vector(5, float)
vec0 = kc.types.vector(0, float)
BOOL_SELECTOR = kc.constant(vec3b(True, False, True))


# ---- bool vectors and matrices ---------------------------------------------------------


@kc.kernel
def bool_vectors(flags: kc.array(dtype=vec3b), values: kc.array(dtype=float),
                 out: kc.array(dtype=vec3b), counts: kc.array(dtype=int)):
    i = kc.tid()
    f = flags[i]
    f[1] = values[i] > 0.5
    out[i] = f
    m = mat22b()
    m[0, 1] = f[0]
    m[1] = kc.types.vector(True, f[2])
    n = 0
    for k in range(3):
        if f[k]:
            n += 1
    if BOOL_SELECTOR[0] and m[0, 1]:
        n += 10
    if m[1, 0] and m[1, 1]:
        n += 100
    counts[i] = n


def test_bool_vectors_against_numpy(rng):
    n = 64
    flags = rng.random((n, 3)) < 0.5
    values = rng.random(n).astype(np.float32) + 0.01
    out = kc.array(np.ones((n, 3), bool), dtype=vec3b)
    counts = kc.full(n, -7, dtype=int)
    kc.launch(bool_vectors, n, inputs=[kc.array(flags, dtype=vec3b), kc.array(values), out,
                                        counts])
    want = flags.copy()
    want[:, 1] = values > 0.5
    np.testing.assert_array_equal(out.numpy(), want)
    expected = want.sum(axis=1) + 10 * want[:, 0] + 100 * want[:, 2]
    np.testing.assert_array_equal(counts.numpy(), expected)


def test_bool_vector_host_values():
    assert tuple(vec3b()) == (False, False, False)
    assert tuple(vec3b(True)) == (True, True, True)
    assert tuple(vec3b(True, False, True)) == (True, False, True)
    assert np.asarray(mat22b(True, False, False, True)).tolist() == [[True, False],
                                                                     [False, True]]
    assert vec3b.size == 3


def test_host_integer_vectors_wrap_out_of_range_components():
    # as Warp's: the components are taken modulo 2^bits
    assert list(kc.types.vector(3, kc.uint8)(1, -2, 3)) == [1, 254, 3]
    assert list(kc.types.vector(3, kc.int8)(1, 300, -129)) == [1, 44, 127]
    assert list(kc.types.vector(2, kc.int64)(-2 ** 63, 2 ** 64 - 1)) == [-2 ** 63, -1]
    assert np.asarray(kc.types.matrix((2, 2), kc.uint16)(1, -2, 3, 70000)).tolist() == [
        [1, 65534], [3, 4464]]


# ---- generic vector and matrix annotations ---------------------------------------------


@kc.func
def total(v: kc.types.vector(Any, float)):
    s = float(0.0)
    for k in range(v.length):
        s += v[k]
    return s


@kc.func
def int_total(v: kc.types.vector(3, kc.Int)) -> kc.Int:
    return v[0] + v[1] + v[2]


@kc.func
def mat_trace(m: kc.types.matrix((Any, Any), kc.Float)) -> kc.Float:
    return kc.trace(m)


@kc.kernel
def generic_aggregates(x: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    a = kc.vec2(x[i], 2.0)
    b = vec5(x[i], 1.0, 2.0, 3.0, 4.0)
    out[i * 4 + 0] = total(a)
    out[i * 4 + 1] = total(b)
    out[i * 4 + 2] = float(int_total(kc.vec3s(kc.int16(i), kc.int16(2), kc.int16(3))))
    md = kc.mat33d(kc.float64(x[i]), 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 3.0)
    out[i * 4 + 3] = float(mat_trace(md))


def test_generic_vector_and_matrix_annotations(rng):
    n = 16
    x = rng.random(n).astype(np.float32) + 0.5
    out = kc.full(4 * n, POISON, dtype=float)
    kc.launch(generic_aggregates, n, inputs=[kc.array(x), out])
    got = out.numpy().reshape(n, 4)
    np.testing.assert_allclose(got[:, 0], x + 2.0, rtol=1e-6)
    np.testing.assert_allclose(got[:, 1], x + 10.0, rtol=1e-6)
    np.testing.assert_array_equal(got[:, 2], np.arange(n) + 5)
    np.testing.assert_allclose(got[:, 3], x.astype(np.float64) + 5.0, rtol=1e-6)


@kc.kernel
def generic_vector_param(v: kc.types.vector(Any, float), out: kc.array(dtype=float)):
    out[0] = float(kc.static(len(v)))
    out[1] = kc.length_sq(v)


def test_generic_vector_kernel_parameter(rng):
    for n in (2, 5):
        comps = rng.random(n).astype(np.float32) + 0.1
        value = kc.types.vector(n, float)(*comps)
        out = kc.full(2, POISON, dtype=float)
        kc.launch(generic_vector_param, 1, inputs=[value, out])
        np.testing.assert_allclose(out.numpy(), [n, float(np.dot(comps, comps))], rtol=1e-6)


@kc.kernel
def wrong_vector_dtype(out: kc.array(dtype=float)):
    out[0] = total(kc.vec3i(1, 2, 3))


def test_generic_vector_annotation_rejects_other_dtypes():
    out = kc.zeros(1, dtype=float)
    with pytest.raises(kc.KernelError, match="vector.length=Any, dtype=float32"):
        kc.launch(wrong_vector_dtype, 1, inputs=[out])


def test_generic_annotation_reprs():
    assert repr(kc.types.vector(Any, float)) == "vector(length=Any, dtype=float32)"
    assert repr(kc.types.matrix((2, Any), Any)) == "matrix(shape=(2, Any), dtype=Any)"
    assert kc.types.vector(3, kc.Float) == kc.vec3d
    assert kc.types.vector(3, kc.Float) != kc.vec3i
    with pytest.raises(TypeError, match="non-negative"):
        kc.types.vector(-1, float)


# ---- slices of vectors, matrices and transforms ----------------------------------------


@kc.kernel
def slice_assign(xs: kc.array(dtype=kc.vec2), ys: kc.array(dtype=kc.vec4),
                 ms: kc.array(dtype=kc.mat33), flags: kc.array(dtype=int)):
    i = kc.tid()
    y = ys[i]
    y[:2] = xs[i]
    y[1:-1] += xs[i][:2]
    y[3:1:-1] -= xs[i][0:]
    ys[i] = y
    m = ms[i]
    m[0, 1:] = xs[i]
    m[1:, 2] *= 2.0
    ms[i] = m
    t = kc.transform(kc.vec3(1.0, 2.0, 3.0), kc.quat(4.0, 5.0, 6.0, 7.0))
    empty = vec0()
    t[5:2] = empty
    flags[i] = int(t[9:] == empty) + 2 * int(t[::3] == kc.vec3(1.0, 4.0, 7.0))


def test_slice_assignment_against_numpy(rng):
    n = 8
    x = rng.random((n, 2)).astype(np.float32) + 0.1
    y0 = rng.random((n, 4)).astype(np.float32) + 0.1
    m0 = rng.random((n, 3, 3)).astype(np.float32) + 0.1
    ys = kc.array(y0, dtype=kc.vec4)
    ms = kc.array(m0, dtype=kc.mat33)
    flags = kc.full(n, -1, dtype=int)
    kc.launch(slice_assign, n, inputs=[kc.array(x, dtype=kc.vec2), ys, ms, flags])
    want = y0.copy()
    want[:, :2] = x
    want[:, 1:-1] += x[:, :2]
    want[:, 3:1:-1] -= x
    np.testing.assert_allclose(ys.numpy(), want, rtol=1e-6)
    want_m = m0.copy()
    want_m[:, 0, 1:] = x
    want_m[:, 1:, 2] *= 2.0
    np.testing.assert_allclose(ms.numpy(), want_m, rtol=1e-6)
    np.testing.assert_array_equal(flags.numpy(), 3)


@kc.kernel
def bad_slice_assign(out: kc.array(dtype=kc.vec4)):
    v = kc.vec4(1.0, 2.0, 3.0, 4.0)
    v[1:] = kc.vec2(5.0, 6.0)
    out[0] = v


def test_slice_assignment_size_mismatch_is_a_kernel_error():
    with pytest.raises(kc.KernelError, match="expected a vector.3, float32.|expected a vec3") \
            as info:
        kc.launch(bad_slice_assign, 1, inputs=[kc.zeros(1, dtype=kc.vec4)])
    assert "test_warp_compat_types.py" in str(info.value)


# ---- quaternions and transforms --------------------------------------------------------


@kc.kernel
def quat_forms(v: kc.array(dtype=kc.vec3), w: kc.array(dtype=float),
               q_out: kc.array(dtype=kc.quat), qd_out: kc.array(dtype=kc.quatd),
               t_out: kc.array(dtype=kc.transformd)):
    i = kc.tid()
    q = kc.quat(v[i], w[i])
    q_out[i * 2] = q
    q_out[i * 2 + 1] = kc.quat_identity(dtype=float)
    qd_out[i * 2] = kc.types.quaternion(q, dtype=kc.float64)
    qd_out[i * 2 + 1] = kc.types.quaternion(dtype=kc.float64)
    t_out[i * 3] = kc.transform_identity(kc.float64)
    t_out[i * 3 + 1] = kc.transformd(p=kc.vec3d(kc.float64(w[i]), 2.0, 3.0))
    t_out[i * 3 + 2] = kc.transformd(q=kc.quatd(0.0, 1.0, 0.0, 0.0))


def test_quaternion_and_transform_constructors(rng):
    n = 5
    v = rng.random((n, 3)).astype(np.float32) + 0.1
    w = rng.random(n).astype(np.float32) + 0.1
    q_out = kc.full(2 * n, POISON, dtype=kc.quat)
    qd_out = kc.full(2 * n, POISON, dtype=kc.quatd)
    t_out = kc.full(3 * n, POISON, dtype=kc.transformd)
    kc.launch(quat_forms, n, inputs=[kc.array(v, dtype=kc.vec3), kc.array(w), q_out, qd_out,
                                     t_out])
    q = np.concatenate([v, w[:, None]], axis=1)
    identity = np.array([0, 0, 0, 1], np.float32)
    np.testing.assert_array_equal(q_out.numpy()[0::2], q)
    np.testing.assert_array_equal(q_out.numpy()[1::2], np.tile(identity, (n, 1)))
    np.testing.assert_array_equal(qd_out.numpy()[0::2], q.astype(np.float64))
    np.testing.assert_array_equal(qd_out.numpy()[1::2], 0.0)
    t = t_out.numpy()
    np.testing.assert_array_equal(t[0::3], np.tile([0, 0, 0, 0, 0, 0, 1.0], (n, 1)))
    want_p = np.zeros((n, 7))
    want_p[:, 0], want_p[:, 1], want_p[:, 2], want_p[:, 6] = w, 2.0, 3.0, 1.0
    np.testing.assert_array_equal(t[1::3], want_p)
    np.testing.assert_array_equal(t[2::3], np.tile([0, 0, 0, 0, 1.0, 0, 0], (n, 1)))


def test_host_transform_and_identities():
    np.testing.assert_array_equal(kc.transform(), [0, 0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(kc.transform(p=(1, 2, 3)), [1, 2, 3, 0, 0, 0, 1])
    np.testing.assert_array_equal(kc.transform((1, 2, 3), q=(0, 0, 1, 0)),
                                  [1, 2, 3, 0, 0, 1, 0])
    np.testing.assert_array_equal(kc.transform(2.0), [2.0] * 7)
    np.testing.assert_array_equal(kc.transform(*range(7)), list(range(7)))
    assert kc.quat_identity(kc.float64).dtype == np.float64
    np.testing.assert_array_equal(kc.quat_identity(), [0, 0, 0, 1])
    np.testing.assert_array_equal(kc.transform_identity(dtype=kc.float16),
                                  [0, 0, 0, 0, 0, 0, 1])
    with pytest.raises(TypeError, match="expected a sequence, got float"):
        kc.transform(p=1.0)
    with pytest.raises(TypeError, match="multiple values for argument 'q'"):
        kc.transform((1, 2, 3), (0, 0, 0, 1), q=(0, 0, 0, 1))
    with pytest.raises(TypeError, match="unexpected keyword argument 'pos'"):
        kc.transform(pos=(1, 2, 3))


def test_host_transform_parts_can_be_set():
    t = kc.transform()
    t.p = kc.vec3(1.0, 2.0, 3.0)
    t.q = kc.quat(0.0, 0.0, 0.6, 0.8)
    np.testing.assert_array_equal(t, np.float32([1, 2, 3, 0, 0, 0.6, 0.8]))
    np.testing.assert_array_equal(t.p, [1, 2, 3])
    np.testing.assert_array_equal(t.q, np.float32([0, 0, 0.6, 0.8]))
    with pytest.raises(AttributeError, match="'vec3f' object has no attribute 'p'"):
        kc.vec3().p = kc.vec3(1.0, 2.0, 3.0)
    with pytest.raises(AttributeError, match="'vec3f' object has no attribute 'q'"):
        print(kc.vec3().q)


# ---- tuples as values ------------------------------------------------------------------


@kc.func
def weighted(values: tuple[kc.vec3, float]) -> float:
    return kc.length(values[0]) * values[1]


@kc.func
def tuple_sum(values: tuple[int, ...]):
    out = int(0)
    for k in range(kc.static(len(values))):
        out += values[k] * (k + 1)
    for k in range(len(values)):  # a run-time index: a select over the items
        out += values[k]
    return out


@kc.func
def any_tuple(values: Any):
    return values[0] + values[len(values) - 1]


@kc.kernel
def tuple_values(x: kc.array(dtype=kc.vec3), s: kc.array(dtype=float),
                 ints: kc.array(dtype=int), out: kc.array(dtype=float),
                 out_i: kc.array(dtype=int)):
    i = kc.tid()
    t = (x[i], s[i])
    out[i * 2] = weighted(t)
    out[i * 2 + 1] = float(len(t) + kc.static(len(t)))
    k = (ints[i], ints[i] + 1, 7)
    out_i[i * 3] = tuple_sum(k)
    out_i[i * 3 + 1] = any_tuple(k)
    out_i[i * 3 + 2] = k[i % 3]


def test_tuples_against_numpy(rng):
    n = 9
    x = rng.random((n, 3)).astype(np.float32) + 0.1
    s = rng.random(n).astype(np.float32) + 0.1
    ints = rng.integers(1, 50, n).astype(np.int32)
    out = kc.full(2 * n, POISON, dtype=float)
    out_i = kc.full(3 * n, -99, dtype=int)
    kc.launch(tuple_values, n, inputs=[kc.array(x, dtype=kc.vec3), kc.array(s),
                                       kc.array(ints), out, out_i])
    np.testing.assert_allclose(out.numpy()[0::2], np.linalg.norm(x, axis=1) * s, rtol=1e-5)
    np.testing.assert_array_equal(out.numpy()[1::2], 4.0)
    items = np.stack([ints, ints + 1, np.full(n, 7)], axis=1)
    np.testing.assert_array_equal(out_i.numpy()[0::3], items @ [2, 3, 4])
    np.testing.assert_array_equal(out_i.numpy()[1::3], ints + 7)
    np.testing.assert_array_equal(out_i.numpy()[2::3], items[np.arange(n), np.arange(n) % 3])


@kc.kernel
def mixed_tuple_dynamic_index(out: kc.array(dtype=float)):
    i = kc.tid()
    t = (1.5, kc.vec3(1.0, 2.0, 3.0))
    out[0] = t[i]


def test_dynamic_index_of_a_mixed_tuple_is_a_kernel_error():
    with pytest.raises(kc.KernelError, match="items of one type"):
        kc.launch(mixed_tuple_dynamic_index, 1, inputs=[kc.zeros(1, dtype=float)])


@pytest.mark.parametrize("kernel", [tuple_values, slice_assign, quat_forms, bool_vectors])
def test_nvrtc_compiles_the_new_forms(kernel):
    pytest.importorskip("cuda.bindings.nvrtc")
    compiled = kc.compile(kernel, target="cuda", arch=90)
    assert compiled.binary


@kc.kernel
def vector_sign(x: kc.array(dtype=kc.vec3), y: kc.array(dtype=kc.vec3),
                z: kc.array(dtype=kc.vec2i)):
    i = kc.tid()
    y[i] = kc.sign(x[i])
    z[i] = kc.sign(kc.vec2i(-i, i))


def test_sign_of_vectors_is_component_wise(rng):
    n = 16
    x = rng.standard_normal((n, 3)).astype(np.float32)
    x[0, 0] = 0.0  # Warp's sign(0) is 1
    y = kc.full(n, POISON, dtype=kc.vec3)
    z = kc.full(n, -7, dtype=kc.vec2i)
    kc.launch(vector_sign, n, inputs=[kc.array(x, dtype=kc.vec3), y, z])
    np.testing.assert_array_equal(y.numpy(), np.where(x < 0, -1.0, 1.0))
    i = np.arange(n)
    np.testing.assert_array_equal(z.numpy(), np.stack([np.where(-i < 0, -1, 1),
                                                       np.ones(n)], axis=1))
    np.testing.assert_array_equal(kc.sign(kc.vec3(-2.0, 0.0, 3.0)), [-1.0, 1.0, 1.0])


# ---- the ctypes-style attributes of Warp's type classes ---------------------------------


@pytest.mark.parametrize("t, length, shape, scalar", [
    (kc.vec3, 3, (3,), kc.float32), (kc.vec4h, 4, (4,), kc.float16),
    (kc.types.matrix((2, 3), kc.float64), 6, (2, 3), kc.float64),
    (kc.quatd, 4, (4,), kc.float64), (kc.transform, 7, (7,), kc.float32),
    (kc.spatial_vector, 6, (6,), kc.float32)], ids=repr)
def test_type_classes_have_warps_shape_attributes(t, length, shape, scalar):
    assert (t._length_, t._shape_, t._wp_scalar_type_) == (length, shape, scalar)
    # generic code sizes buffers from these: they agree with the arrays kernelc makes
    a = kc.zeros(2, dtype=t)
    assert a.numpy().shape == (2, *shape)
    assert np.dtype(t._type_).itemsize * t._length_ == a.numpy().itemsize * np.prod(shape)


def test_scalar_and_matrix_row_column_types():
    assert kc.float32._length_ == 1 and kc.uint8._type_.__name__ == "c_ubyte"
    assert kc.float16._type_.__name__ == "c_ushort" and kc.bool._type_.__name__ == "c_bool"
    m = kc.types.matrix((2, 3), kc.float32)
    assert m._wp_row_type_ == kc.vec3 and m._wp_col_type_ == kc.vec2


@pytest.mark.parametrize("t", [kc.int8, kc.int32, kc.uint8, kc.uint64], ids=repr)
def test_host_integer_powers_are_refused_as_in_kernels(t):
    for power in (lambda: t(2) ** t(3), lambda: t(2) ** 3, lambda: 2 ** t(3),
                  lambda: pow(t(2), 3), lambda: t(2) ** 2.0):
        with pytest.raises(TypeError, match=r"'\*\*' needs float operands"):
            power()
    assert t(2) * t(3) == 6  # the other operators are NumPy's


def test_host_float_powers():
    assert kc.float32(2) ** kc.float32(3) == 8.0 and 3.0 ** kc.float64(2) == 9.0
    assert kc.float16(2) ** 2 == 4.0
