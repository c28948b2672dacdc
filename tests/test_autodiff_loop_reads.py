"""Gradients of array reads inside loops whose array and indices the loop does not change.

The backward pass sums such a read's gradient while the loop runs backwards and adds it
into the gradient array once after the loop. Each case is checked against a NumPy
reference of the gradient, including a read the loop never reaches (at an index that is
out of bounds: it must touch nothing), nested and `while` loops, and loops that write the
array they read (whose gradients must not wait).
"""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc


@kc.kernel
def pair_energy(x: kc.array(dtype=kc.vec3d), loss: kc.array(dtype=kc.float64)):
    i = kc.tid()
    e = kc.float64(0.0)
    for j in range(x.shape[0]):
        d = x[i] - x[j]
        e += 1.0 / (kc.dot(d, d) + 0.5)
    kc.atomic_add(loss, 0, e)


@kc.kernel
def guarded_gather(x: kc.array(dtype=float), idx: kc.array(dtype=int),
                   out: kc.array(dtype=float)):
    i = kc.tid()
    s = float(0.0)
    k = idx[i]
    for j in range(4):
        if k >= 0:  # idx[i] = -1: the read never happens
            s += x[k] * float(j + 1)
    out[i] = s


@kc.kernel
def nested_rows(a: kc.array2d(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    s = float(0.0)
    for r in range(a.shape[0]):
        for c in range(3):  # a[r, i] is the same in every iteration of this loop
            s += a[r, i] * a[r, i] * float(c + 1)
    out[i] = s


@kc.kernel
def while_scaled(x: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    s = float(0.0)
    n = int(0)
    while n < i % 5 + 1:
        s += kc.sin(x[i * 2]) * float(n)
        n += 1
    out[i] = s


@kc.kernel
def loops_that_write(x: kc.array(dtype=float), out: kc.array(dtype=float),
                     total: kc.array(dtype=float)):
    i = kc.tid()
    for j in range(3):
        out[i * 3 + j] = x[i] * float(j + 1)  # a store in the loop
    for _j in range(4):
        kc.atomic_add(total, 0, x[i] * x[i])  # an atomic in the loop


def _backward(kernel, dim, inputs, seed_array):
    tape = kc.Tape()
    with tape:
        kc.launch(kernel, dim, inputs)
    tape.backward(grads={seed_array: kc.array(np.ones(seed_array.shape, np.float32)
                                              if seed_array.dtype is not kc.float64
                                              else np.ones(seed_array.shape))})
    return tape


def test_pair_energy_gradient(rng):
    n = 37
    xn = rng.uniform(-1, 1, (n, 3))
    x = kc.array(xn, dtype=kc.vec3d, requires_grad=True)
    loss = kc.zeros(1, dtype=kc.float64, requires_grad=True)
    x.grad.fill_(np.nan)  # poisoned, then zeroed as a Tape user would
    x.grad.zero_()
    _backward(pair_energy, n, [x, loss], loss)
    d = xn[:, None, :] - xn[None, :, :]
    w = -1.0 / (np.sum(d * d, axis=-1) + 0.5) ** 2  # dE/d(|d|^2) per pair
    want = 4 * np.sum(w[:, :, None] * d, axis=1)  # x_k appears as x[i] and as x[j]
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["release", "debug"])
def test_read_the_loop_never_reaches_touches_nothing(rng, mode, monkeypatch):
    monkeypatch.setattr(kc.config, "mode", mode)
    n = 40
    x = kc.array(rng.uniform(0.5, 1.5, 16).astype(np.float32), requires_grad=True)
    idx_n = rng.integers(-1, 16, n).astype(np.int32)
    idx_n[::3] = -1
    idx = kc.array(idx_n)
    out = kc.full(n, np.nan, dtype=float, requires_grad=True)
    _backward(guarded_gather, n, [x, idx, out], out)
    want = np.zeros(16, np.float32)
    np.add.at(want, idx_n[idx_n >= 0], 10.0)  # 1 + 2 + 3 + 4 per read
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), np.where(idx_n >= 0, 10 * x.numpy()[idx_n], 0),
                               rtol=1e-6)


def test_nested_loops(rng):
    rows, n = 5, 23
    an = rng.uniform(-1, 1, (rows, n)).astype(np.float32)
    a = kc.array(an, requires_grad=True)
    out = kc.full(n, np.nan, dtype=float, requires_grad=True)
    _backward(nested_rows, n, [a, out], out)
    np.testing.assert_allclose(a.grad.numpy(), 2 * an * 6.0, rtol=1e-5)


def test_while_loop(rng):
    n = 31
    xn = rng.uniform(-1, 1, 2 * n).astype(np.float32)
    x = kc.array(xn, requires_grad=True)
    out = kc.full(n, np.nan, dtype=float, requires_grad=True)
    _backward(while_scaled, n, [x, out], out)
    i = np.arange(n)
    trips = i % 5 + 1
    want = np.zeros(2 * n, np.float32)
    want[2 * i] = np.cos(xn[2 * i]) * trips * (trips - 1) / 2
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5, atol=1e-7)


def test_loops_that_write_arrays(rng):
    n = 19
    xn = rng.uniform(0.5, 1.5, n).astype(np.float32)
    x = kc.array(xn, requires_grad=True)
    out = kc.full(3 * n, np.nan, dtype=float, requires_grad=True)
    total = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(loops_that_write, n, [x, out, total])
    tape.backward(grads={out: kc.array(np.ones(3 * n, np.float32)),
                         total: kc.array(np.ones(1, np.float32))})
    np.testing.assert_allclose(x.grad.numpy(), 6.0 + 8.0 * xn, rtol=1e-5)


@pytest.mark.parametrize("kernel, arg_types, in_loop", [
    (pair_energy, ("vec3d", "float64"), 1),  # x[j] only: x[i] is added after the loop
    (guarded_gather, ("float32", "int32", "float32"), 0),
    (nested_rows, ("float32", "float32"), 0),
    (loops_that_write, ("float32", "float32", "float32"), 3),  # nothing deferred
])
def test_which_gradients_wait_for_the_loop_end(kernel, arg_types, in_loop):
    """Atomics left in the innermost reversed loops of each backward kernel."""
    from kernelc import types as T
    from kernelc.autodiff.kernel import adjoint_kernel
    from kernelc.ir import nodes as ir

    dtypes = {"vec3d": T.VectorType(3, T.float64), "float64": T.float64,
              "float32": T.float32, "int32": T.int32}
    params = tuple(T.ArrayType(dtypes[name], 2 if kernel is nested_rows and k == 0 else 1)
                   for k, name in enumerate(arg_types))
    fn = adjoint_kernel(kernel).get_ir((*params, *params, T.uint64)).kernel
    loops = [s for s in ir.walk(fn.body) if isinstance(s, (ir.For, ir.While))]
    innermost = [loop for loop in loops if not any(isinstance(s, (ir.For, ir.While))
                                                   for s in ir.walk(loop.body))]
    atomics = [s for loop in innermost for s in ir.walk(loop.body)
               if isinstance(s, ir.Op) and s.opcode is ir.OpCode.ATOMIC]
    assert len(atomics) == in_loop
