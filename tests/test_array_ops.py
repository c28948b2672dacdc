"""Arithmetic operators on whole arrays (`a + b`, `a -= b`, `-a`, ...), elementwise through
`kc.map` as Warp's `wp.array` operators are, against NumPy."""

import numpy as np
import pytest

import kernelc as kc


def test_binary_operators_match_numpy():
    a_np = np.array([1.0, -2.0, 3.5, 4.0], dtype=np.float32)
    b_np = np.array([0.5, 4.0, -1.0, 2.0], dtype=np.float32)
    a, b = kc.array(a_np), kc.array(b_np)
    for got, want in ((a + b, a_np + b_np), (a - b, a_np - b_np), (a * b, a_np * b_np),
                      (a / b, a_np / b_np), (2.0 * a, 2.0 * a_np), (a - 1.0, a_np - 1.0),
                      (1.0 - a, 1.0 - a_np), (3.0 / b, 3.0 / b_np), (-a, -a_np), (+a, a_np),
                      (b**2, b_np**2)):
        assert got.dtype == kc.float32
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    i = kc.array(np.array([7, -3, 4], dtype=np.int32))
    np.testing.assert_array_equal((i // 2).numpy(), [3, -2, 2])  # Warp floors, as Python
    np.testing.assert_array_equal((i % 3).numpy(), [1, 0, 1])


def test_in_place_operators_write_the_left_array():
    a = kc.array(np.arange(4, dtype=np.float32))
    ptr = a.ptr
    a += kc.ones(4)
    a *= 3.0
    a -= 1.0
    a /= 2.0
    assert a.ptr == ptr
    np.testing.assert_allclose(a.numpy(), ((np.arange(4) + 1) * 3 - 1) / 2)


def test_vector_arrays_and_broadcasting():
    v = kc.array(np.ones((3, 2), dtype=np.float32), dtype=kc.vec2)
    np.testing.assert_allclose((v * 2.0).numpy(), 2.0 * np.ones((3, 2)))
    np.testing.assert_allclose((v + kc.vec2(1.0, 2.0)).numpy(), [[2.0, 3.0]] * 3)
    m = kc.array(np.ones((2, 3), dtype=np.float32))
    row = kc.array(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    np.testing.assert_allclose((m + row).numpy(), [[2.0, 3.0, 4.0]] * 2)


def test_operators_are_recorded_by_the_tape():
    x = kc.array(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    tape = kc.Tape()
    with tape:
        y = x * x
    y.requires_grad = True
    tape.backward(grads={y: kc.ones(2)})
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_mismatched_shapes_raise():
    with pytest.raises(ValueError):
        kc.ones(3) + kc.ones(4)
