"""Gradient arrays: requires_grad on every constructor, .grad, views, copies (Warp's rules)."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import nonzero, poisoned


def _has_zero_grad(a: kc.array) -> None:
    assert a.requires_grad and a.grad is not None
    assert a.grad.shape == a.shape and a.grad.dtype == a.dtype and a.grad.device == a.device
    assert a.grad.ptr != a.ptr
    np.testing.assert_array_equal(a.grad.numpy(), 0)


def test_no_grad_by_default():
    for a in (kc.zeros(4), kc.array([1.0, 2.0]), kc.empty(3), kc.full(2, 1.5)):
        assert not a.requires_grad and a.grad is None and not a.retain_grad


def test_every_constructor_allocates_a_zero_grad(rng):
    data = nonzero(rng, 6, np.float32)
    made = [
        kc.array(data, requires_grad=True),
        kc.array(shape=(2, 3), dtype=kc.float64, requires_grad=True),
        kc.zeros(5, requires_grad=True),
        kc.ones((2, 2), dtype=kc.vec3, requires_grad=True),
        kc.full(4, 2.5, requires_grad=True),
        kc.empty(3, dtype=kc.mat22, requires_grad=True),
        kc.from_numpy(data, requires_grad=True),
        kc.from_numpy(data.reshape(2, 3), dtype=kc.vec3, requires_grad=True),
    ]
    for a in made:
        _has_zero_grad(a)
    np.testing.assert_array_equal(made[0].numpy(), data)  # the data itself is untouched


def test_like_constructors_follow_the_source(rng):
    src = kc.array(nonzero(rng, 5, np.float32), requires_grad=True)
    for make in (kc.empty_like, kc.zeros_like, kc.ones_like, lambda s: kc.full_like(s, 3.0)):
        _has_zero_grad(make(src))
        assert make(kc.zeros(5)).grad is None
    assert kc.zeros_like(src, requires_grad=False).grad is None
    _has_zero_grad(kc.ones_like(kc.zeros(5), requires_grad=True))


def test_requires_grad_setter_allocates_and_drops():
    a = kc.array([1.0, 2.0, 3.0])
    a.requires_grad = True
    _has_zero_grad(a)
    grad = a.grad
    a.requires_grad = True  # an existing grad is kept
    assert a.grad is grad
    a.retain_grad = True
    a.requires_grad = False
    assert a.grad is None and not a.requires_grad and not a.retain_grad


def test_grad_is_assignable_and_checked():
    a = kc.zeros(4)
    g = kc.array([1.0, 2.0, 3.0, 4.0], dtype=float)
    a.grad = g
    assert a.grad is g and a.requires_grad
    a.grad = None
    assert a.grad is None and not a.requires_grad
    with pytest.raises(ValueError, match="dtype"):
        a.grad = kc.zeros(4, dtype=kc.float64)
    with pytest.raises(ValueError, match="shape"):
        a.grad = kc.zeros(5)
    b = kc.array(np.zeros(4, np.float32), grad=g)  # Warp's grad= keyword
    assert b.grad is g and b.requires_grad


def test_retain_grad_needs_requires_grad():
    with pytest.raises(ValueError, match="requires_grad"):
        kc.zeros(3, retain_grad=True)
    a = kc.zeros(3, requires_grad=True, retain_grad=True)
    assert a.retain_grad
    with pytest.raises(ValueError, match="requires_grad"):
        kc.zeros(3).retain_grad = True


def test_views_share_the_grad(rng):
    a = kc.array(nonzero(rng, (4, 6), np.float32), requires_grad=True)
    a.grad.assign(np.arange(24, dtype=np.float32).reshape(4, 6))
    expected = np.arange(24, dtype=np.float32).reshape(4, 6)
    views = {
        "row": (a[1], expected[1]),
        "slice": (a[1:3, ::2], expected[1:3, ::2]),
        "reshape": (a.reshape((6, 4)), expected.reshape(6, 4)),
        "flatten": (a.flatten(), expected.reshape(-1)),
        "transpose": (a.transpose(), expected.T),
    }
    for name, (view, want) in views.items():
        assert view.requires_grad, name
        np.testing.assert_array_equal(view.grad.numpy(), want, err_msg=name)
    # Writes through a view's grad land in the array's grad (shared memory).
    a[2].grad.fill_(-1.0)
    np.testing.assert_array_equal(a.grad.numpy()[2], -1.0)
    assert a[0:2].grad.ptr == a.grad.ptr
    assert kc.zeros(4)[1:3].grad is None


def test_clone_and_to_copy_the_grad(rng):
    data = nonzero(rng, 5, np.float32)
    a = kc.array(data, requires_grad=True)
    a.grad.assign(data * 2)
    b = kc.clone(a)
    assert b.grad is not None and b.grad.ptr != a.grad.ptr
    np.testing.assert_array_equal(b.numpy(), data)
    np.testing.assert_array_equal(b.grad.numpy(), data * 2)
    assert kc.clone(a, requires_grad=False).grad is None
    assert a.to("cpu") is a


def test_copy_and_assign_copy_grads_between_arrays_that_have_them(rng):
    data = nonzero(rng, 6, np.float32)
    src = kc.array(data, requires_grad=True)
    src.grad.assign(data + 1)
    dest = poisoned(6, np.float32)
    dest.requires_grad = True
    kc.copy(dest, src, dest_offset=1, src_offset=2, count=3)
    np.testing.assert_array_equal(dest.numpy()[1:4], data[2:5])
    np.testing.assert_array_equal(dest.grad.numpy(), [0, *(data[2:5] + 1), 0, 0])
    other = kc.zeros(6, requires_grad=True)
    other.assign(src)
    np.testing.assert_array_equal(other.grad.numpy(), data + 1)
    plain = kc.zeros(6)
    kc.copy(plain, src)  # no grad on one side: only the values
    assert plain.grad is None
    np.testing.assert_array_equal(plain.numpy(), data)


def test_copy_of_a_strided_source_leaves_no_tape_entries(rng):
    # The parts of the arrays a strided copy with offsets works on must not copy or
    # record grads themselves.
    a = kc.array(nonzero(rng, (4, 4), np.float32), requires_grad=True)
    dest = kc.full(8, np.nan, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.copy(dest, a[:, 1], dest_offset=2, src_offset=1, count=3)
    assert len(tape.launches) == 1  # the one recorded copy
    np.testing.assert_array_equal(dest.numpy()[2:5], a.numpy()[1:, 1])
    assert np.isnan(dest.numpy()[[0, 1, 5, 6, 7]]).all()
