"""`array.view` between element types: reinterpreting, splitting and joining elements."""

import numpy as np
import pytest

import kernelc as kc


def _random(shape, dtype=np.float32):
    return np.random.default_rng(3).normal(size=shape).astype(dtype)


def test_same_size_view_reinterprets_bits():
    data = np.arange(1, 11, dtype=np.int32) * -7
    signed = kc.array(data, dtype=kc.int32)
    unsigned = signed.view(kc.uint32)
    assert unsigned.shape == (10,) and unsigned.ptr == signed.ptr
    np.testing.assert_array_equal(unsigned.numpy(), data.view(np.uint32))
    rgba = kc.array(np.arange(40, dtype=np.uint8).reshape(10, 4), dtype=kc.vec4ub)
    np.testing.assert_array_equal(rgba.view(kc.uint32).numpy(),
                                  rgba.numpy().reshape(-1).view(np.uint32))
    quats = kc.array(_random((10, 4)), dtype=kc.vec4).view(kc.quat)
    assert quats.dtype == kc.quat and quats.shape == (10,)


def test_vector_and_matrix_elements_viewed_as_scalars():
    vecs = kc.array(_random((10, 4)), dtype=kc.vec4)
    flat = vecs.view(float)
    assert flat.shape == (10, 4) and flat.strides == (16, 4) and flat.ptr == vecs.ptr
    np.testing.assert_array_equal(flat.numpy(), vecs.numpy())
    mats = kc.array(_random((5, 6, 3, 3)), dtype=kc.mat33)
    entries = mats.view(kc.float32)
    assert entries.shape == (5, 6, 3, 3) and entries.strides == (216, 36, 12, 4)
    np.testing.assert_array_equal(entries.numpy(), mats.numpy())
    # a strided source keeps its outer strides
    every_other = vecs[::2].view(kc.float32)
    assert every_other.strides == (32, 4)
    np.testing.assert_array_equal(every_other.numpy(), vecs.numpy()[::2])


def test_scalars_viewed_as_vectors_and_matrices():
    data = _random((10, 3, 3))
    scalars = kc.array(data, dtype=kc.float32)
    mats = scalars.view(kc.mat33)
    assert mats.shape == (10,) and mats.dtype == kc.mat33
    np.testing.assert_array_equal(mats.numpy(), data)
    rows = scalars.view(kc.vec3)
    assert rows.shape == (10, 3)
    np.testing.assert_array_equal(rows.numpy(), data)
    single = kc.array(data[0, 0], dtype=kc.float32).view(kc.vec3)
    assert single.shape == (1,)
    np.testing.assert_array_equal(single.numpy(), data[:1, 0])


def test_views_write_through_and_launch():
    vecs = kc.array(_random((8, 2)), dtype=kc.vec2)
    flat = vecs.view(kc.float32)
    flat.numpy()[:, 1] = 5.0
    np.testing.assert_array_equal(vecs.numpy()[:, 1], 5.0)
    doubled = kc.full((8, 2), value=np.nan, dtype=kc.float32)

    kc.launch(_double_2d, dim=(8, 2), inputs=[flat, doubled])
    np.testing.assert_array_equal(doubled.numpy(), 2.0 * vecs.numpy())


@kc.kernel
def _double_2d(src: kc.array2d(dtype=kc.float32), dest: kc.array2d(dtype=kc.float32)):
    i, j = kc.tid()
    dest[i, j] = 2.0 * src[i, j]


def test_grad_is_viewed_too():
    vecs = kc.zeros(4, dtype=kc.vec3, requires_grad=True)
    flat = vecs.view(kc.float32)
    assert flat.grad is not None and flat.grad.shape == (4, 3)
    assert flat.grad.ptr == vecs.grad.ptr


@pytest.mark.parametrize("source, dtype, error, match", [
    (lambda: kc.zeros(4, dtype=kc.vec2d), kc.float32, TypeError,
     "source scalar dtype float64 has size 8 bytes"),
    (lambda: kc.zeros((4, 3), dtype=kc.float64), kc.vec3, TypeError,
     "target scalar dtype float32 has size 4 bytes"),
    (lambda: kc.zeros((4, 2), dtype=kc.float32), kc.vec3, ValueError, "trailing dimensions"),
    (lambda: kc.zeros((4, 4), dtype=kc.float32)[:, ::2], kc.vec2, ValueError, "contiguous"),
    (lambda: kc.zeros(4, dtype=kc.vec3), kc.float64, TypeError,
     "source scalar dtype float32 has size 4 bytes"),
    (lambda: kc.zeros(4, dtype=kc.int8), kc.int16, TypeError,
     "source dtype has size 1 bytes, but target dtype has size 2 bytes"),
])
def test_incompatible_views_raise(source, dtype, error, match):
    with pytest.raises(error, match=match):
        source().view(dtype)
