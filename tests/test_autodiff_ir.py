"""Backward kernels built from the IR, checked against float64 finite differences.

These launch a backward kernel directly (`adjoint_kernel`), below the Tape: inputs are
the primal arguments, their adjoints, and the store mask.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from kernelc.autodiff.adjoint import adjoint_module
from kernelc.autodiff.kernel import adjoint_kernel, launch_facts
from kernelc.builtins.registry import primitive_keys
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode, walk
from kernelc.ir.passes import run_pipeline
from kernelc.ir.verify import verify

f64 = kc.float64
vec3d = kc.vec3d


@kc.func
def _branchy(x: f64, y: f64):
    if x > f64(0.0):
        return x * y
    return kc.exp(x) + y


@kc.kernel
def loops_kernel(x: kc.array(dtype=f64), w: kc.array(dtype=f64), out: kc.array(dtype=f64),
                 n: int):
    i = kc.tid()
    acc = f64(0.0)
    p = f64(1.0)
    for j in range(n):
        acc += x[i] * w[j]
        p = p * x[i] + w[j]  # carried state used non-linearly: needs the replay
        if j == 2:
            continue
        acc = acc + _branchy(p, w[j]) * f64(0.1)
    v = vec3d(x[i], acc, p)
    kc.atomic_add(out, 0, kc.length(v) + kc.dot(v, v))


def _loops_reference(x, w, n):
    total = 0.0
    for xi in x:
        acc, p = 0.0, 1.0
        for j in range(n):
            acc += xi * w[j]
            p = p * xi + w[j]
            if j == 2:
                continue
            acc += (p * w[j] if p > 0 else np.exp(p) + w[j]) * 0.1
        v = np.array([xi, acc, p])
        total += np.linalg.norm(v) + v @ v
    return total


@kc.struct
class Particles:
    x: kc.array(dtype=vec3d)
    k: f64


@kc.kernel
def mixed_kernel(s: Particles, out: kc.array(dtype=f64), n: int):
    i = kc.tid()
    if i >= n:
        return
    v = s.x[i]
    squares = kc.zeros(shape=3, dtype=f64)
    for j in range(3):
        squares[j] = v[j] * v[j]
    m = kc.mat33d(v[0], f64(1.0), f64(0.0), f64(0.0), v[1], f64(2.0), v[2], f64(0.0),
                  f64(1.0))
    d = kc.determinant(m) + kc.length(kc.normalize(v)) * s.k
    t = f64(0.0)
    j = int(0)
    while j < 3:
        t = t * f64(0.5) + squares[j]
        j += 1
        if t > f64(100.0):
            break
    out[i] = d + t + kc.inverse(m)[0, 1]


def _mixed_reference(x, k):
    out = []
    for v in x:
        m = np.array([[v[0], 1, 0], [0, v[1], 2], [v[2], 0, 1]])
        t = 0.0
        for sq in v * v:
            t = t * 0.5 + sq
        out.append(np.linalg.det(m) + k + t + np.linalg.inv(m)[0, 1])
    return np.array(out)


@kc.kernel
def scalar_kernel(x: kc.array(dtype=f64), y: kc.array(dtype=f64)):
    i = kc.tid()
    a = x[i]
    y[i] = (kc.sin(a) * kc.cos(a) + kc.tan(a) + kc.asin(a * f64(0.5)) + kc.acos(a * f64(0.4))
            + kc.atan(a) + kc.atan2(a, f64(0.7)) + kc.sinh(a) + kc.cosh(a) + kc.tanh(a)
            + kc.exp(a) + kc.log(a + f64(2.0)) + kc.log2(a + f64(2.0))
            + kc.log10(a + f64(2.0)) + kc.sqrt(a + f64(2.0)) + kc.cbrt(a + f64(2.0))
            + kc.pow(a + f64(2.0), f64(1.7)) + kc.abs(a) + kc.erf(a) + kc.erfc(a)
            + kc.min(a, f64(0.1)) + kc.max(a, f64(-0.1)) + kc.clamp(a, f64(-0.5), f64(0.5))
            + kc.floor(a) + a / (a + f64(3.0)))


def _scalar_reference(a):
    return (np.sin(a) * np.cos(a) + np.tan(a) + np.arcsin(a * 0.5) + np.arccos(a * 0.4)
            + np.arctan(a) + np.arctan2(a, 0.7) + np.sinh(a) + np.cosh(a) + np.tanh(a)
            + np.exp(a) + np.log(a + 2) + np.log2(a + 2) + np.log10(a + 2) + np.sqrt(a + 2)
            + np.cbrt(a + 2) + (a + 2) ** 1.7 + np.abs(a)
            + np.vectorize(__import__("math").erf)(a) + np.vectorize(__import__("math").erfc)(a)
            + np.minimum(a, 0.1) + np.maximum(a, -0.1) + np.clip(a, -0.5, 0.5) + np.floor(a)
            + a / (a + 3))


@kc.kernel
def overwrite_kernel(x: kc.array(dtype=f64), y: kc.array(dtype=f64)):
    i = kc.tid()
    y[i] = x[i] * f64(2.0)
    y[i] = x[i] * x[i]  # the second store wins: only its gradient flows


def _fd(fn, x, eps=1e-6):
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        g[idx] = (fn(x + e) - fn(x - e)) / (2 * eps)
    return g


def test_every_primitive_has_a_derivative_rule():
    from kernelc.autodiff import rules

    handled = set(rules._UNARY) | rules._FLAT | {"fabs", "tan", "asin", "acos", "atan2",
                                                 "copysign", "fma"}
    assert primitive_keys() <= handled


def test_backward_ir_verifies():
    for k in (loops_kernel, mixed_kernel, scalar_kernel):
        module = adjoint_module(k.get_ir())
        verify(module)
        assert module.kernel.param_names[-1] == "adj_store_mask"


def test_loops_funcs_and_carried_state(rng):
    n, m = 23, 5
    x = rng.uniform(-0.9, 0.9, n)
    w = rng.uniform(-1, 1, m)
    xa, wa = kc.array(x, dtype=f64), kc.array(w, dtype=f64)
    out = kc.zeros(1, dtype=f64)
    kc.launch(loops_kernel, n, [xa, wa, out, m])
    assert out.numpy()[0] == pytest.approx(_loops_reference(x, w, m), rel=1e-12)
    gx, gw = kc.full(n, np.nan, dtype=f64), kc.full(m, np.nan, dtype=f64)
    gx.zero_()
    gw.zero_()
    seed = kc.array(np.ones(1), dtype=f64)
    kc.launch(adjoint_kernel(loops_kernel), n, [xa, wa, out, m, gx, gw, seed, 0, 0])
    np.testing.assert_allclose(gx.numpy(), _fd(lambda v: _loops_reference(v, w, m), x),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gw.numpy(), _fd(lambda v: _loops_reference(x, v, m), w),
                               rtol=1e-6, atol=1e-7)


def test_struct_arrays_early_return_local_arrays_while_break(rng):
    n, live = 20, 17
    x = rng.uniform(0.3, 1.2, (n, 3))
    s = Particles()
    s.x = kc.array(x, dtype=vec3d)
    s.k = 0.7
    out = kc.full(n, 7.0, dtype=f64)
    kc.launch(mixed_kernel, n, [s, out, live])
    np.testing.assert_allclose(out.numpy()[:live], _mixed_reference(x[:live], 0.7), rtol=1e-12)
    adj = Particles()
    adj.x = kc.zeros(n, dtype=vec3d)
    adj.k = 0.0
    seed = kc.array(rng.uniform(0.5, 1.5, n), dtype=f64)
    kc.launch(adjoint_kernel(mixed_kernel), n, [s, out, live, adj, seed, 0, 0])
    weights = seed.numpy()[:live]
    expected = _fd(lambda v: weights @ _mixed_reference(v, 0.7), x[:live])
    got = adj.x.numpy()
    np.testing.assert_allclose(got[:live], expected, rtol=1e-6, atol=1e-8)
    assert not got[live:].any()  # threads that returned early add nothing


def test_scalar_builtins(rng):
    n = 64
    x = rng.uniform(-0.9, 0.9, n)
    x[np.abs(x) < 0.05] = 0.3  # away from the kinks of abs/min/max/clamp
    xa = kc.array(x, dtype=f64)
    y = kc.full(n, np.nan, dtype=f64)
    kc.launch(scalar_kernel, n, [xa, y])
    np.testing.assert_allclose(y.numpy(), _scalar_reference(x), rtol=1e-12)
    gx = kc.zeros(n, dtype=f64)
    seed = kc.array(rng.uniform(0.5, 1.5, n), dtype=f64)
    kc.launch(adjoint_kernel(scalar_kernel), n, [xa, y, gx, seed, 0])
    slope = (_scalar_reference(x + 1e-6) - _scalar_reference(x - 1e-6)) / 2e-6
    expected = seed.numpy() * slope
    np.testing.assert_allclose(gx.numpy(), expected, rtol=1e-6, atol=1e-7)


def test_store_consumes_its_own_gradient(rng):
    n = 16
    x = rng.uniform(0.5, 1.5, n)
    xa, y = kc.array(x, dtype=f64), kc.zeros(n, dtype=f64)
    kc.launch(overwrite_kernel, n, [xa, y])
    for mask, left in ((0, 1.0), (0b10, 0.0)):  # bit 1: y's adjoint is y's own gradient
        gx, gy = kc.zeros(n, dtype=f64), kc.full(n, 1.0, dtype=f64)
        kc.launch(adjoint_kernel(overwrite_kernel), n, [xa, y, gx, gy, mask])
        # Only the last store's x*x gets the gradient; the first store's 2x is
        # overwritten, so only without consuming does the gradient reach it too.
        np.testing.assert_allclose(gx.numpy(), 2 * x + (2.0 if mask == 0 else 0.0))
        assert np.all(gy.numpy() == left)


def test_missing_gradient_array_is_skipped(rng):
    n = 8
    xa = kc.array(rng.uniform(0.5, 1.5, n), dtype=f64)
    y = kc.zeros(n, dtype=f64)
    kc.launch(scalar_kernel, n, [xa, y])
    seed = kc.full(n, 1.0, dtype=f64)
    kc.launch(adjoint_kernel(scalar_kernel), n, [xa, y, None, seed, 0])  # no crash


@kc.kernel
def later_writes_kernel(x: kc.array(dtype=f64), out: kc.array(dtype=f64), n: int):
    i = kc.tid()
    buf = kc.zeros(shape=2, dtype=f64)
    acc = kc.zeros(shape=2, dtype=f64)
    buf[0] = x[2 * i]
    buf[1] = x[2 * i + 1]
    for _ in range(n):
        for j in range(2):  # reads buf, which the lines after it change
            acc[j] = acc[j] + buf[j] * buf[j] * x[2 * i + j]
        buf[0] = buf[0] * f64(0.5)
        buf[1] = kc.sin(buf[1])
    s = f64(0.0)
    for j in range(2):  # reads acc and buf, changed again after it
        s += acc[j] * buf[j]
    buf[0] = f64(3.0)
    acc[1] = f64(0.0)
    out[i] = s + buf[0] + acc[1]


def _later_writes_reference(x: np.ndarray, n: int) -> np.ndarray:
    x = x.reshape(-1, 2)
    buf, acc = x.copy(), np.zeros_like(x)
    for _ in range(n):
        acc += buf * buf * x
        buf = np.stack([buf[:, 0] * 0.5, np.sin(buf[:, 1])], axis=1)
    return (acc * buf).sum(axis=1) + 3.0


def test_loops_reversed_after_later_code_changed_what_they_read(rng):
    """A loop is reversed after the code that follows it has run (in the same iteration
    of an enclosing loop, or after it): what it reads is restored first."""
    n, trips = 6, 4
    x = rng.uniform(0.5, 1.5, 2 * n)
    xa, out = kc.array(x, dtype=f64), kc.full(n, np.nan, dtype=f64)
    kc.launch(later_writes_kernel, n, [xa, out, trips])
    np.testing.assert_allclose(out.numpy(), _later_writes_reference(x, trips), rtol=1e-12)
    gx = kc.zeros(2 * n, dtype=f64)
    seed = kc.array(rng.uniform(0.5, 1.5, n), dtype=f64)
    kc.launch(adjoint_kernel(later_writes_kernel), n, [xa, out, trips, gx, seed, 0, 0])
    weights = seed.numpy()
    expected = _fd(lambda v: weights @ _later_writes_reference(v, trips), x)
    np.testing.assert_allclose(gx.numpy(), expected, rtol=1e-6, atol=1e-8)


def test_backward_compiles_with_nvrtc():
    pytest.importorskip("cuda.bindings.nvrtc")
    compiled = kc.compile(adjoint_kernel(loops_kernel), target="cuda", arch=90)
    assert compiled.format == "cubin" and compiled.binary


def test_backward_launches_specialise_on_gradient_arrays_and_mask(rng):
    # `launch(adjoint=True)` runs a backward kernel specialised on which gradient arrays
    # its launch passes and on its store mask: it tests neither per thread, and computes
    # what the generic backward kernel (which tests both as it runs) computes.
    n = 300
    x = rng.uniform(0.5, 1.5, n)
    xa = kc.array(x, dtype=f64, requires_grad=True)
    y = kc.zeros(n, dtype=f64, requires_grad=True)
    kc.launch(overwrite_kernel, n, [xa, y])
    seed = rng.uniform(0.5, 1.5, n)
    cases = (  # (adjoint of x, adjoint of y, which of them the launch passes)
        ("own", "own"), ("given", "given"), (None, "own"), ("given", None))
    for adj_x, adj_y in cases:
        xa.grad.fill_(np.nan)
        xa.grad.zero_()
        y.grad.assign(seed)
        gx, gy = kc.zeros(n, dtype=f64), kc.array(seed, dtype=f64)
        adjoints = [gx if adj_x == "given" else None, gy if adj_y == "given" else None]
        if adj_x is None:
            xa.grad = None
        if adj_y is None:
            y.grad = None
        kc.launch(overwrite_kernel, n, inputs=[xa, y], adj_inputs=adjoints, adjoint=True)
        out_x = gx if adj_x == "given" else xa.grad
        out_y = gy if adj_y == "given" else y.grad
        if out_x is not None:  # unconsumed, the first store's gradient flows on too
            expected = 0 * x if adj_y is None else (2 * x + (adj_y == "given") * 2) * seed
            np.testing.assert_allclose(out_x.numpy(), expected)
        if out_y is not None:  # only its own gradient is consumed by the store
            np.testing.assert_array_equal(out_y.numpy(), 0.0 if adj_y == "own" else seed)
        xa.grad = kc.zeros(n, dtype=f64)
        y.grad = kc.zeros(n, dtype=f64)

    types = overwrite_kernel.specialize((kc.array(dtype=f64), kc.array(dtype=f64)))
    gx, gy = kc.zeros(n, dtype=f64), kc.zeros(n, dtype=f64)
    for adjoints, mask in (([gx, gy], 0b10), ([None, gy], 0), ([gx, kc.zeros(0, dtype=f64)], 0)):
        facts = launch_facts(types, adjoints, mask)
        # (after the passes, which drop the negative-index tests of `x[i]`: i is tid())
        fn = run_pipeline(adjoint_kernel(overwrite_kernel, facts).get_ir(
            (*types, *types, kc.uint64))).kernel
        ops = [s.opcode for s in walk(fn.body) if isinstance(s, ir.Op)]
        assert OpCode.ARRAY_SHAPE not in ops and OpCode.SHR not in ops
        stores = [s for s in walk(fn.body) if isinstance(s, ir.ArrayStore)]
        assert len(stores) == (2 if mask else 0)  # y's gradient zeroed only when it is own
        atomics = [s for s in walk(fn.body) if isinstance(s, ir.Op) and s.opcode == OpCode.ATOMIC]
        assert bool(atomics) == (adjoints[0] is not None and adjoints[1].size > 0)
    assert adjoint_kernel(overwrite_kernel, facts) is adjoint_kernel(overwrite_kernel, facts)
