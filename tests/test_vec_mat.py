"""Vectors and matrices: every operator and builtin against NumPy, float32 and float64,
through generic kernels (one specialisation per dtype); host values; component writes."""

from __future__ import annotations

import typing

import numpy as np
import pytest

import kernelc as kc

Any = typing.Any
DTYPES = [(kc.float32, np.float32, 2e-5), (kc.float64, np.float64, 1e-12)]


def vec_array(data: np.ndarray, scalar) -> kc.array:
    t = kc.types.vector(data.shape[-1], scalar) if data.ndim == 2 else \
        kc.types.matrix(data.shape[1:], scalar)
    return kc.array(data, dtype=t)


def poisoned_like(shape, np_dtype, scalar) -> kc.array:
    data = np.full(shape, np.nan, dtype=np_dtype)
    return vec_array(data, scalar) if len(shape) > 1 else kc.array(data, dtype=scalar)


def random(rng, shape, np_dtype):
    x = rng.uniform(-2.0, 2.0, shape)
    x[np.abs(x) < 0.1] = 0.5
    return x.astype(np_dtype)


# ---- generic kernels, one per operation --------------------------------------------------


@kc.kernel
def k_add(a: kc.array(dtype=Any), b: kc.array(dtype=Any), out: kc.array(dtype=Any)):
    i = kc.tid()
    out[i] = a[i] + b[i]


@kc.kernel
def k_sub_neg(a: kc.array(dtype=Any), b: kc.array(dtype=Any), out: kc.array(dtype=Any)):
    i = kc.tid()
    out[i] = -(a[i] - b[i])


@kc.kernel
def k_scale(a: kc.array(dtype=Any), s: kc.array(dtype=Any), out: kc.array(dtype=Any)):
    i = kc.tid()
    out[i] = 2.0 * (a[i] * s[i]) / s[i] + a[i] / s[i]


@kc.kernel
def k_matmul(a: kc.array(dtype=Any), b: kc.array(dtype=Any), out: kc.array(dtype=Any)):
    i = kc.tid()
    out[i] = a[i] @ b[i]


@kc.kernel
def k_mul(a: kc.array(dtype=Any), b: kc.array(dtype=Any), out: kc.array(dtype=Any)):
    i = kc.tid()
    out[i] = kc.mul(a[i], b[i]) * 1.0


@kc.kernel
def k_binary(a: kc.array(dtype=Any), b: kc.array(dtype=Any), dots: kc.array(dtype=Any),
             crosses: kc.array(dtype=Any), cw: kc.array(dtype=Any), outer: kc.array(dtype=Any)):
    i = kc.tid()
    dots[i] = kc.dot(a[i], b[i])
    crosses[i] = kc.cross(a[i], b[i])
    cw[i] = kc.cw_mul(a[i], b[i]) + kc.cw_div(a[i], b[i])
    outer[i] = kc.outer(a[i], b[i])


@kc.kernel
def k_unary_vec(a: kc.array(dtype=Any), lengths: kc.array(dtype=Any),
                normals: kc.array(dtype=Any), skews: kc.array(dtype=Any),
                diags: kc.array(dtype=Any)):
    i = kc.tid()
    lengths[i] = kc.length(a[i]) + kc.length_sq(a[i])
    normals[i] = kc.normalize(a[i])
    skews[i] = kc.skew(a[i])
    diags[i] = kc.diag(a[i])


@kc.kernel
def k_unary_mat(m: kc.array(dtype=Any), t: kc.array(dtype=Any), inv: kc.array(dtype=Any),
                det: kc.array(dtype=Any)):
    i = kc.tid()
    t[i] = kc.transpose(m[i])
    inv[i] = kc.inverse(m[i])
    det[i] = kc.determinant(m[i]) + kc.trace(m[i])


def launch(kernel, n, *arrays):
    kc.launch(kernel, n, inputs=list(arrays))


@pytest.mark.parametrize("scalar,np_dtype,tol", DTYPES)
def test_componentwise_operators(rng, scalar, np_dtype, tol):
    n = 16
    for shape in ((n, 2), (n, 3), (n, 4), (n, 3, 3)):
        a, b = random(rng, shape, np_dtype), random(rng, shape, np_dtype)
        out = poisoned_like(shape, np_dtype, scalar)
        launch(k_add, n, vec_array(a, scalar), vec_array(b, scalar), out)
        np.testing.assert_allclose(out.numpy(), a + b, rtol=tol)
        launch(k_sub_neg, n, vec_array(a, scalar), vec_array(b, scalar), out)
        np.testing.assert_allclose(out.numpy(), -(a - b), rtol=tol)
        s = random(rng, n, np_dtype)
        launch(k_scale, n, vec_array(a, scalar), kc.array(s, dtype=scalar), out)
        s_ = s.reshape((n,) + (1,) * (len(shape) - 1))
        np.testing.assert_allclose(out.numpy(), 2 * (a * s_) / s_ + a / s_, rtol=tol * 10)


@pytest.mark.parametrize("scalar,np_dtype,tol", DTYPES)
def test_products(rng, scalar, np_dtype, tol):
    n = 12
    cases = [((n, 3, 3), (n, 3), "nij,nj->ni"), ((n, 3), (n, 3, 3), "ni,nij->nj"),
             ((n, 2, 3), (n, 3, 4), "nij,njk->nik"), ((n, 4, 4), (n, 4), "nij,nj->ni")]
    for sa, sb, spec in cases:
        a, b = random(rng, sa, np_dtype), random(rng, sb, np_dtype)
        expected = np.einsum(spec, a, b)
        for kernel in (k_matmul, k_mul):
            out = poisoned_like(expected.shape, np_dtype, scalar)
            launch(kernel, n, vec_array(a, scalar), vec_array(b, scalar), out)
            np.testing.assert_allclose(out.numpy(), expected, rtol=tol * 10, atol=tol)


@pytest.mark.parametrize("scalar,np_dtype,tol", DTYPES)
def test_vector_builtins(rng, scalar, np_dtype, tol):
    n = 16
    a, b = random(rng, (n, 3), np_dtype), random(rng, (n, 3), np_dtype)
    dots = poisoned_like((n,), np_dtype, scalar)
    crosses, cw = (poisoned_like((n, 3), np_dtype, scalar) for _ in range(2))
    outer = poisoned_like((n, 3, 3), np_dtype, scalar)
    launch(k_binary, n, vec_array(a, scalar), vec_array(b, scalar), dots, crosses, cw, outer)
    np.testing.assert_allclose(dots.numpy(), (a * b).sum(1), rtol=tol * 10)
    np.testing.assert_allclose(crosses.numpy(), np.cross(a, b), rtol=tol * 10, atol=tol)
    np.testing.assert_allclose(cw.numpy(), a * b + a / b, rtol=tol * 10)
    np.testing.assert_allclose(outer.numpy(), np.einsum("ni,nj->nij", a, b), rtol=tol)

    lengths = poisoned_like((n,), np_dtype, scalar)
    normals = poisoned_like((n, 3), np_dtype, scalar)
    skews, diags = (poisoned_like((n, 3, 3), np_dtype, scalar) for _ in range(2))
    launch(k_unary_vec, n, vec_array(a, scalar), lengths, normals, skews, diags)
    norm = np.linalg.norm(a, axis=1)
    np.testing.assert_allclose(lengths.numpy(), norm + norm**2, rtol=tol * 10)
    np.testing.assert_allclose(normals.numpy(), a / norm[:, None], rtol=tol * 10)
    skew_b = np.einsum("nij,nj->ni", skews.numpy(), b)
    np.testing.assert_allclose(skew_b, np.cross(a, b), rtol=tol * 10, atol=tol * 10)
    np.testing.assert_allclose(diags.numpy(), np.einsum("ni,ij->nij", a, np.eye(3)))


@pytest.mark.parametrize("size", [2, 3, 4])
@pytest.mark.parametrize("scalar,np_dtype,tol", DTYPES)
def test_matrix_builtins(rng, scalar, np_dtype, tol, size):
    n = 16
    m = random(rng, (n, size, size), np_dtype) + 3 * np.eye(size, dtype=np_dtype)
    t, inv = (poisoned_like((n, size, size), np_dtype, scalar) for _ in range(2))
    det = poisoned_like((n,), np_dtype, scalar)
    launch(k_unary_mat, n, vec_array(m, scalar), t, inv, det)
    m64 = m.astype(np.float64)
    np.testing.assert_allclose(t.numpy(), np.swapaxes(m, 1, 2))
    np.testing.assert_allclose(inv.numpy(), np.linalg.inv(m64), rtol=tol * 100, atol=tol * 10)
    expected = np.linalg.det(m64) + np.trace(m64, axis1=1, axis2=2)
    np.testing.assert_allclose(det.numpy(), expected, rtol=tol * 100)


def test_singular_inverse_and_zero_normalize_give_zero():
    @kc.kernel
    def k(out: kc.array(dtype=kc.mat33), v: kc.array(dtype=kc.vec3)):
        out[0] = kc.inverse(kc.mat33(1.0, 2.0, 3.0, 2.0, 4.0, 6.0, 1.0, 1.0, 1.0))
        v[0] = kc.normalize(kc.vec3(0.0))

    out, v = poisoned_like((1, 3, 3), np.float32, kc.float32), poisoned_like((1, 3), np.float32,
                                                                           kc.float32)
    kc.launch(k, 1, inputs=[out, v])
    assert not out.numpy().any() and not v.numpy().any()


# ---- construction, components, writes ----------------------------------------------------


def test_construction_components_and_writes():
    @kc.kernel
    def k(out: kc.array(dtype=float), j: int):
        v = kc.vec3(1.0, 2.0, 3.0)
        v.x = 10.0
        v[2] = v[2] + 5.0
        f = kc.vec4(2.5)
        z = kc.vec2()
        m = kc.mat22(1.0, 2.0, 3.0, 4.0)
        m[0, 1] = 7.0
        m[1] = kc.vec2(8.0, 9.0)
        d = kc.vec3d(v)
        w = kc.vector(1.0, 2.0, length=2, dtype=float)
        e = kc.identity(n=3, dtype=float)
        r = kc.matrix_from_rows(kc.vec2(1.0, 2.0), kc.vec2(3.0, 4.0))
        c = kc.matrix_from_cols(kc.vec2(1.0, 2.0), kc.vec2(3.0, 4.0))
        v[j] = 100.0
        out[0] = v.x
        out[1] = v[2]
        out[2] = f.w + z.y
        out[3] = m[0, 1] + m[1, 0] * 10.0
        out[4] = float(d.y) + w[1]
        out[5] = e[1, 1] + e[0, 1] + r[0, 1] * 10.0 + c[0, 1] * 100.0
        out[6] = v[1] + m[j, j]
        out[7] = float(len(v)) + float(v == kc.vec3(10.0, 100.0, 8.0)) * 10.0
        out[8] = float(v != v)

    out = poisoned_like((9,), np.float32, kc.float32)
    kc.launch(k, 1, inputs=[out, 1])
    np.testing.assert_allclose(out.numpy(), [10, 8, 2.5, 87, 4, 321, 109, 13, 0])


def test_vector_scalar_arguments_and_host_values():
    @kc.kernel
    def k(v: kc.vec3, m: kc.mat22, out: kc.array(dtype=kc.vec3)):
        out[0] = v * m[1, 1]

    v = kc.vec3(1, 2, 3)
    assert isinstance(v, np.ndarray) and v.dtype == np.float32 and (v.x, v.y, v.z) == (1, 2, 3)
    assert v._kc_type == kc.vec3 and kc.mat33()._kc_type == kc.mat33
    assert np.asarray(v * 2).tolist() == [2, 4, 6]
    out = poisoned_like((1, 3), np.float32, kc.float32)
    kc.launch(k, 1, inputs=[v, kc.mat22(1, 2, 3, 4), out])
    assert out.numpy().tolist() == [[4, 8, 12]]
    kc.launch(k, 1, inputs=[(1.0, 1.0, 1.0), np.eye(2), out])  # plain sequences work too
    assert out.numpy().tolist() == [[1, 1, 1]]


def test_host_values_print_as_in_warp():
    assert str(kc.vec3(1, 2, 3.5)) == "[1.0, 2.0, 3.5]"
    assert str(kc.vec3(0.1, 0, 0)) == "[0.10000000149011612, 0.0, 0.0]"  # the float32 value
    assert str(kc.vec3i(1, 2, 3)) == "[1, 2, 3]"
    assert str(kc.mat22(1, 2, 3, 4)) == "[[1.0, 2.0],\n [3.0, 4.0]]"
    assert str(kc.types.vector(2, bool)(True, False)) == "[True, False]"
    assert repr(kc.vec3(1, 2, 3.5)) == "vec3f([1.0, 2.0, 3.5])"
    assert repr(kc.quat_identity()) == "quatf([0.0, 0.0, 0.0, 1.0])"
    assert repr(kc.mat22(1, 2, 3, 4)) == "mat22f([[1.0, 2.0], [3.0, 4.0]])"
    assert repr(kc.vec2ub(1, 2)).startswith("vec2ub([")
    assert f"{kc.vec2(1, 2)}" == "[1.0, 2.0]" and str([kc.vec2(1, 2)]) == "[vec2f([1.0, 2.0])]"
    assert str(np.asarray(kc.vec2(1, 2))) == "[1. 2.]"  # NumPy's own printing is unchanged


def test_host_value_attribute_errors_name_the_type():
    v2 = kc.vec2(1, 2)
    with pytest.raises(AttributeError, match="'vec2f' object has no attribute 'z'$"):
        _ = v2.z
    with pytest.raises(AttributeError, match="'mat22f' object has no attribute 'foo'$"):
        _ = kc.mat22().foo
    with pytest.raises(AttributeError, match="no attribute 'xy'$"):
        v2.xy = 9  # swizzles are not attributes of host values
    v2.note = "kept"  # other attributes may be set, as on Warp's values
    assert v2.note == "kept" and list(v2) == [1.0, 2.0] and not hasattr(v2, "w")


def test_arrays_of_vectors_are_zero_copy_numpy_views():
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    arr = kc.array(data, dtype=kc.vec3, copy=False)
    assert arr.shape == (4,) and arr.dtype == kc.vec3
    data[0, 0] = 42.0
    assert arr.numpy()[0, 0] == 42.0
    assert kc.zeros(5, dtype=kc.mat44).numpy().shape == (5, 4, 4)


@pytest.mark.parametrize("vec,np_dtype", [(kc.vec3, np.float32), (kc.vec3d, np.float64),
                                          (kc.vec3i, np.int32)])
def test_atomic_add_on_vector_arrays(vec, np_dtype):
    @kc.kernel
    def k(a: kc.array(dtype=Any), b: kc.array(dtype=Any)):
        i = kc.tid()
        a[i % 2] += b[i]
        kc.atomic_add(a, 2, b[i])

    b = (np.arange(300, dtype=np.int64).reshape(100, 3) % 7).astype(np_dtype)
    a = kc.zeros(3, dtype=vec)
    kc.launch(k, 100, inputs=[a, kc.array(b, dtype=vec)])
    expected = np.stack([b[0::2].sum(0), b[1::2].sum(0), b.sum(0)])
    np.testing.assert_array_equal(a.numpy(), expected)


def test_integer_and_half_vectors():
    @kc.kernel
    def k(a: kc.array(dtype=kc.vec3i), h: kc.array(dtype=kc.vec2h)):
        a[0] = a[0] / 2 + kc.vec3i(1, 1, 1) * 3
        h[0] = h[0] * kc.float16(2.0)

    a = kc.array(np.array([[7, -9, 10]], np.int32), dtype=kc.vec3i)
    h = kc.array(np.array([[1.5, -2.0]], np.float16), dtype=kc.vec2h)
    kc.launch(k, 1, inputs=[a, h])
    assert a.numpy().tolist() == [[6, -1, 8]]  # integer division truncates, as in C
    assert h.numpy().tolist() == [[3.0, -4.0]]
