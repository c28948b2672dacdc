"""Alias scopes on the CPU: a kernel's default variant promises LLVM that its array
arguments share no memory, and a launch whose arrays overlap must run the variant without
that promise. Also integer division by run-time divisors, which goes through doubles so
that it vectorises. Results are checked against NumPy, for disjoint and aliasing arrays."""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest

import kernelc as kc
from kernelc.runtime.compiler import get_cpu_kernel
from kernelc.runtime.cpu import ErrorRecord, cpu_state
from kernelc.runtime.launch import pack_args
from tests.conftest import nonzero, poisoned

# ---- kernels ------------------------------------------------------------------------------


@kc.func
def clamped(grid: kc.array(dtype=float), col: int, row: int, cols: int, rows: int):
    """grid[row, col] of a row-major grid; outside it, the nearest border cell."""
    return grid[kc.min(kc.max(row, 0), rows - 1) * cols + kc.min(kc.max(col, 0), cols - 1)]


@kc.kernel
def relax(older: kc.array(dtype=float), newer: kc.array(dtype=float), cols: int, rows: int,
          w: float, g: float):
    """A damped neighbour average written over `older`. The shape of example_wave's
    `relax`: a flat grid, `%` and `//` by a run-time width, and gathers through a func
    that takes the array, which LLVM vectorises only with the no-alias promise."""
    k = kc.tid()
    col = k % cols
    row = k // cols
    around = clamped(newer, col - 1, row, cols, rows) + clamped(newer, col + 1, row, cols, rows) \
        + clamped(newer, col, row - 1, cols, rows) + clamped(newer, col, row + 1, cols, rows)
    older[k] = (1.0 - w) * older[k] + w * (0.25 * around - g * newer[k])


@kc.kernel
def stencil_2d(u_prev: kc.array2d(dtype=float), u: kc.array2d(dtype=float),
               u_next: kc.array2d(dtype=float), c2: float):
    i, j = kc.tid()
    n, m = u.shape[0], u.shape[1]
    lap = u[kc.max(i - 1, 0), j] + u[kc.min(i + 1, n - 1), j] + u[i, kc.max(j - 1, 0)] \
        + u[i, kc.min(j + 1, m - 1)] - 4.0 * u[i, j]
    u_next[i, j] = 2.0 * u[i, j] - u_prev[i, j] + c2 * lap


@kc.kernel
def add_twice(src: kc.array(dtype=float), dst: kc.array(dtype=float)):
    """dst = 2 src + 1, or 2 src + 2 when dst is src: the second read of src must see the
    first store when they are the same memory (with the promise LLVM reuses the first)."""
    i = kc.tid()
    dst[i] = src[i] + 1.0
    dst[i] = dst[i] + src[i]


@kc.func
def mix(a: kc.array(dtype=float), b: kc.array(dtype=float), i: int) -> float:
    return a[i] + 2.0 * b[i]


@kc.func
def put(a: kc.array(dtype=float), i: int, v: float):
    a[i] = v


@kc.kernel
def mixes(x: kc.array(dtype=float), y: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    put(out, i, mix(x, y, i) - 3.0 * mix(y, x, i))  # a func bound to (x, y) and to (y, x)


@kc.kernel
def choose(x: kc.array(dtype=float), y: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    src = x
    if i % 3 == 0:
        src = y  # a local holding either array: its accesses get no scope
    out[i] = src[i] * 3.0 + x[i]


@kc.struct
class Holder:
    data: kc.array(dtype=float)


@kc.kernel
def through_struct(h: Holder, x: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    h.data[i] = x[i] + 1.0  # may be x itself: the read below must see this store
    out[i] = x[i] * 2.0


@kc.kernel
def divisions(x: kc.array(dtype=kc.int32), y: kc.array(dtype=kc.int32),
              q: kc.array(dtype=kc.int32), r: kc.array(dtype=kc.int32),
              f: kc.array(dtype=kc.int32), c: kc.array(dtype=kc.int32)):
    i = kc.tid()
    q[i] = x[i] / y[i]
    r[i] = x[i] % y[i]
    f[i] = x[i] // y[i]
    c[i] = x[i] // -7 + x[i] % 5  # constant divisors keep LLVM's multiply-and-shift


@kc.kernel
def divisions_in_loop(x: kc.array(dtype=kc.int32), y: kc.array(dtype=kc.int32),
                      q: kc.array(dtype=kc.int32), r: kc.array(dtype=kc.int32),
                      f: kc.array(dtype=kc.int32), c: kc.array(dtype=kc.int32), reps: int):
    i = kc.tid()
    for _ in range(reps):  # a loop inside the thread: `idiv`, not doubles
        q[i] = x[i] / y[i]
        r[i] = x[i] % y[i]
        f[i] = x[i] // y[i]
        c[i] = x[i] // -7 + x[i] % 5


@kc.kernel
def divisions_u32(x: kc.array(dtype=kc.uint32), y: kc.array(dtype=kc.uint32),
                  q: kc.array(dtype=kc.uint32), r: kc.array(dtype=kc.uint32),
                  f: kc.array(dtype=kc.uint32)):
    i = kc.tid()
    q[i] = x[i] / y[i]
    r[i] = x[i] % y[i]
    f[i] = x[i] // y[i]


@kc.kernel
def divisions_i16(x: kc.array(dtype=kc.int16), y: kc.array(dtype=kc.int16),
                  q: kc.array(dtype=kc.int16), r: kc.array(dtype=kc.int16)):
    i = kc.tid()
    q[i] = x[i] / y[i]
    r[i] = x[i] % y[i]


# ---- helpers ------------------------------------------------------------------------------


def _decision(kernel) -> bool | None:
    """Whether the last launch of `kernel` ran the variant that assumes disjoint arrays."""
    return kernel.last_launch.cmd.disjoint


def _relax_reference(older, newer, cols, rows, w, g):
    f = np.pad(newer.astype(np.float64).reshape(rows, cols), 1, mode="edge")
    around = (f[1:-1, :-2] + f[1:-1, 2:] + f[:-2, 1:-1] + f[2:, 1:-1]).ravel()
    return (1 - w) * older.astype(np.float64) + w * (0.25 * around - g * newer.astype(np.float64))


def _floats(rng, n):
    return kc.array(nonzero(rng, n, np.float32))


def _added_twice(x, aliased: bool):
    """add_twice's result in float32, as the kernel rounds it."""
    first = x + np.float32(1)
    return first + (first if aliased else x)


# ---- disjoint arrays: the promise holds ---------------------------------------------------


@pytest.mark.parametrize("width,height", [(128, 128), (37, 23), (1, 9)])
def test_relax_matches_numpy(rng, width, height):
    n = width * height
    params = (width, height, 0.7, 0.1)
    h0, h1 = nonzero(rng, n, np.float32), nonzero(rng, n, np.float32)
    prev, cur = kc.array(h0), kc.array(h1)
    kc.launch(relax, n, inputs=[prev, cur, *params])
    assert _decision(relax) is True
    ref = _relax_reference(h0, h1, *params)
    np.testing.assert_allclose(prev.numpy(), ref, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(cur.numpy(), h1)  # read only


def test_relax_swapped_buffers_stay_right(rng):
    width, height = 40, 30
    n = width * height
    params = (width, height, 0.7, 0.1)
    bufs = [nonzero(rng, n, np.float32) for _ in range(2)]
    arrays = [kc.array(b) for b in bufs]
    ref = [b.astype(np.float64) for b in bufs]
    for _ in range(6):  # as example_wave does: solve into the older buffer, then swap
        kc.launch(relax, n, inputs=[arrays[0], arrays[1], *params])
        assert _decision(relax) is True
        ref[0] = _relax_reference(ref[0], ref[1], *params)
        np.testing.assert_allclose(arrays[0].numpy(), ref[0], rtol=1e-4, atol=1e-3)
        ref[0] = arrays[0].numpy().astype(np.float64)  # no drift between float32 and 64
        arrays.reverse()
        ref.reverse()


def test_stencil_2d_matches_numpy(rng):
    shape = (19, 45)
    a, b = nonzero(rng, shape, np.float32), nonzero(rng, shape, np.float32)
    out = poisoned(shape, np.float32)
    kc.launch(stencil_2d, shape, inputs=[kc.array(a), kc.array(b), out, 0.2])
    assert _decision(stencil_2d) is True
    u = np.pad(b.astype(np.float64), 1, mode="edge")
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * b
    np.testing.assert_allclose(out.numpy(), 2 * b - a + 0.2 * lap, rtol=1e-5, atol=1e-5)


def test_funcs_bound_to_different_arrays(rng):
    n = 301
    x, y = _floats(rng, n), _floats(rng, n)
    out = poisoned(n, np.float32)
    kc.launch(mixes, n, inputs=[x, y, out])
    assert _decision(mixes) is True
    xs, ys = x.numpy().astype(np.float64), y.numpy().astype(np.float64)
    np.testing.assert_allclose(out.numpy(), xs + 2 * ys - 3 * (ys + 2 * xs), rtol=1e-5,
                               atol=1e-5)
    kc.launch(mixes, n, inputs=[x, y, x])  # out is x: each thread reads, then writes
    assert _decision(mixes) is False
    np.testing.assert_allclose(x.numpy(), xs + 2 * ys - 3 * (ys + 2 * xs), rtol=1e-5,
                               atol=1e-5)


def test_local_holding_either_array(rng):
    n = 200
    x, y = _floats(rng, n), _floats(rng, n)
    out = poisoned(n, np.float32)
    kc.launch(choose, n, inputs=[x, y, out])
    xs, ys = x.numpy(), y.numpy()
    src = np.where(np.arange(n) % 3 == 0, ys, xs)
    np.testing.assert_allclose(out.numpy(), src * 3 + xs, rtol=1e-6)


def test_struct_array_field_aliasing_an_argument(rng):
    n = 150
    xs = nonzero(rng, n, np.float32)
    x, out = kc.array(xs), poisoned(n, np.float32)
    h = Holder()
    h.data = x  # the struct's array is x: arguments x and out still share no memory
    kc.launch(through_struct, n, inputs=[h, x, out])
    assert _decision(through_struct) is True
    np.testing.assert_allclose(x.numpy(), xs + 1, rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), (xs + 1) * 2, rtol=1e-6)


# ---- aliasing arrays: the variant without the promise -------------------------------------


@pytest.mark.parametrize("n", [1, 7, 64, 1000, 20000])
def test_same_array_as_input_and_output(rng, n):
    xs = nonzero(rng, n, np.float32)
    a = kc.array(xs)
    kc.launch(add_twice, n, inputs=[a, a])
    assert _decision(add_twice) is False
    np.testing.assert_array_equal(a.numpy(), _added_twice(xs, aliased=True))
    b, out = kc.array(xs), poisoned(n, np.float32)
    kc.launch(add_twice, n, inputs=[b, out])
    assert _decision(add_twice) is True
    np.testing.assert_array_equal(out.numpy(), _added_twice(xs, aliased=False))


def test_the_promise_would_break_an_aliasing_launch(rng):
    """The default variant run directly on aliasing arrays gives the wrong answer: what the
    launch's check protects against (skipped if LLVM happens not to exploit the promise)."""
    n = 1000
    xs = nonzero(rng, n, np.float32)
    a = kc.array(xs)
    kc.launch(add_twice, n, inputs=[a, kc.array(xs)])
    compiled = get_cpu_kernel(add_twice, add_twice.last_launch.cmd.compiled.params)
    args = pack_args(compiled, [a, a], (n,))
    error = ErrorRecord()
    args.error = ctypes.addressof(error)
    compiled.cfunc(ctypes.addressof(args), 0, n)
    if np.array_equal(a.numpy(), _added_twice(xs, aliased=True)):
        pytest.skip("this LLVM did not reuse the first load: nothing to observe")
    np.testing.assert_array_equal(a.numpy(), _added_twice(xs, aliased=False))


def test_overlapping_numpy_views():
    n = 500
    buf = np.arange(1, 2 * n + 1, dtype=np.float32)
    kc.launch(add_twice, n, inputs=[buf[:n], buf[:n]])  # two view objects, one memory
    assert _decision(add_twice) is False
    np.testing.assert_allclose(buf[:n], 2 * np.arange(1, n + 1) + 2)
    buf = np.arange(1, 2 * n + 1, dtype=np.float32)
    # Interleaved views share no element, but their byte ranges overlap: the check is
    # by range, so the plain variant runs (and must be right too).
    kc.launch(add_twice, n, inputs=[buf[0::2], buf[1::2]])
    assert _decision(add_twice) is False
    np.testing.assert_allclose(buf[1::2], 2 * np.arange(1, 2 * n, 2) + 1)
    np.testing.assert_allclose(buf[0::2], np.arange(1, 2 * n, 2))


def test_reused_packing_switches_variant_with_swapped_arrays(rng):
    n = 333
    xs = nonzero(rng, n, np.float32)
    a, b = kc.array(xs), kc.array(np.zeros(n, np.float32))
    expected_a = xs
    for step, (src, dst) in enumerate([(a, b), (a, a), (a, b), (a, b), (a, a)]):
        kc.launch(add_twice, n, inputs=[src, dst])
        assert _decision(add_twice) is (dst is not a), step
        if dst is a:
            expected_a = _added_twice(expected_a, aliased=True)
        else:
            np.testing.assert_array_equal(b.numpy(), _added_twice(expected_a, aliased=False))
        np.testing.assert_array_equal(a.numpy(), expected_a)


def test_recorded_launch_set_param_rechecks(rng):
    n = 77
    xs = nonzero(rng, n, np.float32)
    a, out = kc.array(xs), poisoned(n, np.float32)
    cmd = kc.launch(add_twice, n, inputs=[a, out], record_cmd=True)
    assert cmd.disjoint is True
    cmd.set_param_at_index(1, a)
    assert cmd.disjoint is False
    cmd.launch()
    np.testing.assert_array_equal(a.numpy(), _added_twice(xs, aliased=True))
    assert np.isnan(out.numpy()).all()


def test_kernels_without_stores_make_no_promise(rng):
    a = _floats(rng, 10)
    kc.launch(sum_into_nothing, 10, inputs=[a, a])
    assert _decision(sum_into_nothing) is None


@kc.kernel
def sum_into_nothing(a: kc.array(dtype=float), b: kc.array(dtype=float)):
    i = kc.tid()
    if a[i] + b[i] == 12345.0:
        print(i)


# ---- the generated code -------------------------------------------------------------------


def _vectorised_ir(text: str) -> str:
    """`text` optimised as the CPU backend optimises it (loop and SLP vectorisers on)."""
    jit = cpu_state(kc.config.num_threads).jit
    llvm = jit.llvm
    mod = llvm.parse_assembly(text)
    mod.triple = jit.triple
    mod.data_layout = str(jit.tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    llvm.create_pass_builder(jit.tm, pto).getModulePassManager().run(
        mod, llvm.create_pass_builder(jit.tm, pto))
    return str(mod)


def test_only_the_default_variant_has_alias_scopes():
    types = relax.param_types
    default = get_cpu_kernel(relax, types).source
    plain = get_cpu_kernel(relax, types, disjoint_arrays=False).source
    assert "!alias.scope" in default and "!noalias" in default
    assert "alias.scope" not in plain and "noalias" not in plain


def test_relax_vectorises_with_the_promise():
    jit = cpu_state(kc.config.num_threads).jit
    if "+avx2" not in jit.features:
        pytest.skip("needs AVX2 gathers for LLVM to vectorise the stencil")
    # (The variant without the promise stays scalar: LLVM cannot bound the gathers.)
    default = _vectorised_ir(get_cpu_kernel(relax, relax.param_types).source)
    assert re.search(r"<(8|16) x float>", default)


# ---- integer division by run-time divisors ------------------------------------------------


def _edge_pairs(edges, dtype, rng, low, high, count):
    xs, ys = np.meshgrid(np.array(edges, np.int64), np.array(edges, np.int64))
    x = np.concatenate([xs.ravel(), rng.integers(low, high, count), rng.integers(-999, 999, count)])
    y = np.concatenate([ys.ravel(), rng.integers(low, high, count), rng.integers(-40, 40, count)])
    if np.dtype(dtype).kind == "u":
        x, y = np.abs(x), np.abs(y)
    return x.astype(dtype), y.astype(dtype)


def _truncated(x, y):
    """C's quotient and remainder (0 and 0 for a zero divisor, as kernelc defines them)."""
    x, y = x.astype(np.int64), y.astype(np.int64)
    safe = np.where(y == 0, 1, y)
    q = np.sign(x) * np.sign(safe) * (np.abs(x) // np.abs(safe))
    q = np.where(y == 0, 0, q)
    r = np.where(y == 0, 0, x - q * safe)
    floor = np.where(y == 0, 0, x // safe)
    return q, r, floor


@pytest.mark.parametrize("kernel", [divisions, divisions_in_loop])
def test_int32_division_matches_numpy(rng, kernel):
    edges = [0, 1, -1, 2, -2, 3, -7, 128, 2**31 - 1, -2**31, -2**31 + 1, 2**30, 65535]
    x, y = _edge_pairs(edges, np.int32, rng, -2**31, 2**31, 20000)
    n = len(x)
    outs = [poisoned(n, np.int32) for _ in range(4)]
    extra = [1] if kernel is divisions_in_loop else []
    kc.launch(kernel, n, inputs=[kc.array(x), kc.array(y), *outs, *extra])
    q, r, floor = _truncated(x, y)
    const = np.floor_divide(x.astype(np.int64), -7) + np.fmod(x.astype(np.int64), 5)
    for got, want in zip(outs, (q, r, floor, const)):
        np.testing.assert_array_equal(got.numpy(), want.astype(np.int32))  # MIN / -1 wraps


def test_uint32_division_matches_numpy(rng):
    edges = [0, 1, 2, 3, 7, 2**31 - 1, 2**31, 2**32 - 1, 2**32 - 2, 65536]
    x, y = _edge_pairs(edges, np.uint64, rng, 0, 2**32, 20000)
    x, y = x.astype(np.uint32), y.astype(np.uint32)
    n = len(x)
    outs = [poisoned(n, np.uint32) for _ in range(3)]
    kc.launch(divisions_u32, n, inputs=[kc.array(x), kc.array(y), *outs])
    xs, ys = x.astype(np.uint64), y.astype(np.uint64)
    safe = np.where(ys == 0, 1, ys)
    q = np.where(ys == 0, 0, xs // safe)
    r = np.where(ys == 0, 0, xs % safe)
    for got, want in zip(outs, (q, r, q)):
        np.testing.assert_array_equal(got.numpy(), want.astype(np.uint32))


def test_int16_division_matches_numpy(rng):
    edges = [0, 1, -1, 2, -3, 2**15 - 1, -2**15, 255]
    x, y = _edge_pairs(edges, np.int16, rng, -2**15, 2**15, 5000)
    n = len(x)
    q, r = poisoned(n, np.int16), poisoned(n, np.int16)
    kc.launch(divisions_i16, n, inputs=[kc.array(x), kc.array(y), q, r])
    want_q, want_r, _ = _truncated(x, y)
    np.testing.assert_array_equal(q.numpy(), want_q.astype(np.int16))
    np.testing.assert_array_equal(r.numpy(), want_r.astype(np.int16))


def test_division_in_double_only_where_the_thread_loop_is_innermost():
    loop_free = kc.compile(divisions).source
    looped = kc.compile(divisions_in_loop).source
    assert "fdiv double" in loop_free and "sdiv i32" in loop_free  # constants keep sdiv
    assert "fdiv double" not in looped
