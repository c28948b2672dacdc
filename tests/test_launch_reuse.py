"""Repeated CPU launches reuse the last packing: same arguments, new Python numbers, or
arrays swapped for arrays of the same type (a simulation's ping-pong buffers). Each case
is checked against NumPy, and changes that need a new packing must still get one."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from kernelc.errors import KernelError


@kc.kernel
def blend(a: kc.array2d(dtype=float), b: kc.array2d(dtype=float), out: kc.array2d(dtype=float),
          wa: float, wb: float):
    i, j = kc.tid()
    out[i, j] = a[i, j] * wa + b[i, j] * wb


@kc.kernel
def accumulate(x: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(out, i, x[i])  # out is thread-private: plain adds unless it aliases x


def _arrays(rng, n, shape):
    return [kc.array(rng.uniform(-1, 1, shape).astype(np.float32)) for _ in range(n)]


def test_swapped_buffers_and_numbers(rng):
    bufs = _arrays(rng, 3, (33, 17))
    ref = [b.numpy().astype(np.float64) for b in bufs]
    for step in range(7):  # rotate the three buffers, as a wave simulation does
        a, b, out = (step % 3, (step + 1) % 3, (step + 2) % 3)
        wa, wb = 0.5 + 0.01 * step, -0.25
        kc.launch(blend, (33, 17), [bufs[a], bufs[b], bufs[out], wa, wb])
        ref[out] = ref[a] * np.float32(wa) + ref[b] * np.float32(wb)
        np.testing.assert_allclose(bufs[out].numpy(), ref[out], rtol=1e-5, atol=1e-6)


def test_swapped_in_strided_view(rng):
    a, b = _arrays(rng, 2, (8, 6))
    big = kc.array(rng.uniform(-1, 1, (8, 12)).astype(np.float32))
    out = kc.full((8, 6), np.nan, dtype=float)
    kc.launch(blend, (8, 6), [a, b, out, 1.0, 1.0])
    view = big[:, ::2]  # same type, other strides
    kc.launch(blend, (8, 6), [view, b, out, 1.0, 1.0])
    np.testing.assert_allclose(out.numpy(), big.numpy()[:, ::2] + b.numpy(), rtol=1e-6)


def test_swapped_in_array_of_another_type_is_rejected(rng):
    a, b, out = _arrays(rng, 3, (4, 4))
    kc.launch(blend, (4, 4), [a, b, out, 1.0, 1.0])
    wrong = kc.zeros((4, 4), dtype=kc.float64)
    with pytest.raises(KernelError, match="'a'"):
        kc.launch(blend, (4, 4), [wrong, b, out, 1.0, 1.0])
    flat = kc.zeros(16, dtype=float)
    with pytest.raises(KernelError, match="'b'"):
        kc.launch(blend, (4, 4), [a, flat, out, 1.0, 1.0])


def test_swapped_in_alias_gets_atomic_code(rng):
    n = 4096
    x = kc.array(rng.uniform(0.5, 1.5, n).astype(np.float32))
    out = kc.zeros(n, dtype=float)
    kc.launch(accumulate, n, [x, out])
    np.testing.assert_allclose(out.numpy(), x.numpy())
    # Now `out` is `x` itself: the packing must not keep the plain-add code silently.
    before = x.numpy().copy()
    kc.launch(accumulate, n, [x, x])
    np.testing.assert_allclose(x.numpy(), 2 * before)
    fresh = kc.zeros(n, dtype=float)
    kc.launch(accumulate, n, [x, fresh])
    np.testing.assert_allclose(fresh.numpy(), x.numpy())


@kc.struct
class Gains:
    g: float
    offset: kc.vec3


@kc.kernel
def apply_gains(p: Gains, v: kc.vec3, out: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    out[i] = p.offset * p.g + v


def test_structs_and_vectors_changed_in_place_are_repacked():
    p = Gains()
    p.g, p.offset = 1.0, kc.vec3(1.0, 2.0, 3.0)
    v = kc.vec3(0.5, 0.5, 0.5)
    out = kc.full(3, kc.vec3(np.nan, np.nan, np.nan), dtype=kc.vec3)
    kc.launch(apply_gains, 3, [p, v, out])
    np.testing.assert_allclose(out.numpy()[0], [1.5, 2.5, 3.5])
    p.g = 2.0  # the same objects, changed in place: the launch must see the new values
    v[0] = 10.0
    kc.launch(apply_gains, 3, [p, v, out])
    np.testing.assert_allclose(out.numpy(), np.tile([12.0, 4.5, 6.5], (3, 1)))


def _freed(make_and_launch) -> bool:
    """Whether the arrays a launch was given die with the caller's last reference."""
    import gc
    import weakref

    refs = [weakref.ref(a) for a in make_and_launch()]
    gc.collect()
    return all(r() is None for r in refs)


def test_a_launch_does_not_keep_its_arrays_alive(rng):
    def first():
        a, b, out = _arrays(rng, 3, (5, 4))
        kc.launch(blend, (5, 4), [a, b, out, 1.0, 2.0])
        return a, b, out

    assert _freed(first)

    def reused():  # the packing of the launch above, reused with swapped-in arrays
        a, b, out = _arrays(rng, 3, (5, 4))
        kc.launch(blend, (5, 4), [a, b, out, 1.0, 2.0])
        kc.launch(blend, (5, 4), [b, a, out, 0.5, 2.0])
        return a, b, out

    assert _freed(reused)

    def adjoint():
        x = kc.array(rng.uniform(-1, 1, 16).astype(np.float32), requires_grad=True)
        out = kc.zeros(16, dtype=float, requires_grad=True)
        kc.launch(accumulate, 16, [x, out])
        out.grad.fill_(1.0)
        kc.launch(accumulate, 16, [x, out], adj_inputs=[None, None], adjoint=True)
        kc.launch(accumulate, 16, [x, out], adj_inputs=[None, None], adjoint=True)
        return x, out, x.grad, out.grad

    assert _freed(adjoint)


def test_reuse_after_the_old_arrays_died(rng):
    # A new array may take a dead one's place in memory (and even its id): the launch
    # must still read the new one's data, shape and strides.
    for shape in [(6, 5), (6, 5), (3, 4)]:
        a, b = _arrays(rng, 2, shape)
        out = kc.full(shape, np.nan, dtype=float)
        kc.launch(blend, shape, [a, b, out, 2.0, -1.0])
        np.testing.assert_allclose(out.numpy(), 2 * a.numpy() - b.numpy(), rtol=1e-6)
        del a, b, out
