"""Warp's remaining atomic builtins: atomic_and / or / xor / cas / exch on scalar, vector
and multi-dimensional arrays. Contended atomics from several threads checked exactly
(compare-and-swap counters, a spin lock from cas and exch), thread-private atomics lowered
to plain updates, and ReduceMode.Expand combining the bitwise ones. The kernels shared
with the CUDA-C tests are in `tests/builtins_extra_kernels.py`; the error paths are in
`tests/test_builtins_extra.py`.
"""

from __future__ import annotations

import typing

import numpy as np
import pytest

import kernelc as kc
from kernelc.ir.passes import run_pipeline
from tests.builtins_extra_kernels import (
    _slots,
    bitwise_and_exchange,
    cas_counter,
    index_forms,
    own_element,
    spin_lock,
    vector_atomics,
)
from tests.conftest import poisoned

# ---- atomics under contention, private atomics ----------------------------------------------


@pytest.fixture
def threads(monkeypatch):
    monkeypatch.setattr(kc.config, "num_threads", 4)


@pytest.mark.parametrize("itype, ftype", [(kc.int32, kc.float32), (kc.uint64, kc.float64),
                                          (kc.int64, kc.float32), (kc.uint32, kc.float64)])
def test_cas_counter_under_contention(threads, itype, ftype):
    n, k = 60_000, 3
    slots = _slots(n, k)
    counts, sums = kc.zeros(k, dtype=itype), kc.zeros(k, dtype=ftype)
    kc.launch(cas_counter, n, inputs=[kc.array(slots), counts, sums])
    want = np.bincount(slots, minlength=k)
    np.testing.assert_array_equal(counts.numpy(), want)
    np.testing.assert_array_equal(sums.numpy(), want)


def test_spin_lock_from_cas_and_exch(threads):
    n, k = 40_000, 2
    slots = _slots(n, k, 1)
    locks, data = kc.zeros(k, dtype=int), kc.zeros(k, dtype=int)
    kc.launch(spin_lock, n, inputs=[kc.array(slots), locks, data])
    np.testing.assert_array_equal(data.numpy(), np.bincount(slots, minlength=k))
    np.testing.assert_array_equal(locks.numpy(), [0, 0])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64],
                         ids=lambda d: np.dtype(d).name)
def test_and_or_xor_exch_under_contention(threads, dtype):
    n = 50_000
    info = np.iinfo(dtype)
    v = np.random.default_rng(2).integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    v |= np.array(1 << 5, dtype)  # one bit every value has: the and keeps it
    a = kc.array(np.full(3, -1).astype(dtype))
    o, x = kc.zeros(3, dtype=kc.types.from_numpy_dtype(dtype)), kc.array(np.zeros(3, dtype))
    ex = kc.array(np.full(5, 7, dtype))
    olds = poisoned(n, dtype)
    kc.launch(bitwise_and_exchange, n, inputs=[kc.array(v), a, o, x, ex, olds])
    for r in range(3):
        part = v[np.arange(n) % 3 == r]
        assert a.numpy()[r] == np.bitwise_and.reduce(part)
        assert o.numpy()[r] == np.bitwise_or.reduce(part)
        assert x.numpy()[r] == np.bitwise_xor.reduce(part)
    assert a.numpy()[0] & (1 << 5)
    # Every value written by exch comes back exactly once: as an old value or as the last.
    for r in range(5):
        mine = np.arange(n) % 5 == r
        seen = sorted(olds.numpy()[mine].tolist() + [ex.numpy()[r]])
        assert seen == sorted(v[mine].tolist() + [7])


def test_atomics_index_forms_in_one_launch():
    n = 16
    v = np.arange(1, n + 1, dtype=np.uint32) * 0x01010101
    a2, a3 = kc.zeros((2, 3), dtype=kc.uint32), kc.array(np.full((2, 2, 2), -1, np.int64))
    a4, c4 = kc.array(np.full((1, 2, 2, 1), 0.5)), kc.zeros((1, 1, 1, 4), dtype=kc.int32)
    olds = poisoned((n, 2), np.float64)
    kc.launch(index_forms, n, inputs=[kc.array(v), a2, a3, a4, c4, olds])
    i = np.arange(n)
    want2 = np.zeros((2, 3), np.uint32)
    want_and = np.full(2, -1, np.int64)
    want_xor = np.full(2, -1, np.int64)
    for k in range(n):
        want2[k % 2, k % 3] |= v[k]
        want_and[k % 2] &= np.int64(v[k])
        want_xor[k % 2] ^= np.int64(v[k])
    np.testing.assert_array_equal(a2.numpy(), want2)
    np.testing.assert_array_equal(a3.numpy()[0, :, 1], want_and)
    np.testing.assert_array_equal(a3.numpy()[1, :, 0], want_xor)
    np.testing.assert_array_equal(a3.numpy()[0, :, 0], [-1, -1])  # untouched
    for parity in (0, 1):
        mine = i % 2 == parity
        seen = sorted(olds.numpy()[mine, 0].tolist() + [a4.numpy()[0, 1, parity, 0]])
        assert seen == sorted(i[mine].astype(float).tolist() + [0.5])
    np.testing.assert_array_equal(c4.numpy()[0, 0, 0], [1, 2, 3, 4])  # the first cas per slot wins
    np.testing.assert_array_equal(olds.numpy()[:4, 1], [0, 0, 0, 0])
    np.testing.assert_array_equal(olds.numpy()[4:, 1], (i[4:] % 4) + 1)


def test_component_wise_atomics_on_vector_arrays():
    n = 40
    v = np.random.default_rng(4).integers(-1000, 1000, (n, 3)).astype(np.int32)
    acc = kc.array(np.array([[0, 0, 0], [-1, -1, -1], [0, 0, 0]], np.int32), dtype=kc.vec3i)
    swap = kc.array(np.array([[0.0, 1.0]]), dtype=kc.vec2d)
    olds = kc.array(np.full((n, 2), np.nan), dtype=kc.vec2d)
    kc.launch(vector_atomics, n, inputs=[kc.array(v, dtype=kc.vec3i), acc, swap, olds])
    got = acc.numpy()
    np.testing.assert_array_equal(got[0], np.bitwise_or.reduce(v, axis=0))
    np.testing.assert_array_equal(got[1], np.bitwise_and.reduce(v, axis=0))
    np.testing.assert_array_equal(got[2], np.bitwise_xor.reduce(v, axis=0))
    # Each component is swapped on its own: exactly one thread saw the initial (0, 1).
    final = swap.numpy()[0]
    assert final[1] == 7.0 and 1.0 <= final[0] <= n
    first = olds.numpy()
    assert ((first[:, 0] == 0.0).sum(), (first[:, 1] == 1.0).sum()) == (1, 1)


def test_thread_private_atomics_are_plain_updates():
    from kernelc.ir.analysis import thread_private_params

    fn = run_pipeline(own_element.get_ir(own_element.param_types)).kernel  # as compiled
    assert {p.id for p in fn.params[:2]} == set(thread_private_params(fn))
    n = 100
    a = kc.array(np.arange(n, dtype=np.int32) % 7)
    b = kc.array(np.full(n, 3.0, np.float32))
    olds = poisoned((n, 4), np.int32)
    kc.launch(own_element, n, inputs=[a, b, olds])
    i = np.arange(n, dtype=np.int32)
    start = i % 7
    after_cas = np.where(start == i, -i, start)
    after_xor = after_cas ^ 3
    after_or = after_xor | 64
    np.testing.assert_array_equal(olds.numpy(), np.stack([start, after_cas, after_xor, after_or],
                                                         axis=1))
    np.testing.assert_array_equal(a.numpy(), after_or & -2)
    want_b = i * np.float32(0.5)
    want_b[0] = 9.0
    np.testing.assert_array_equal(b.numpy(), want_b)


# ---- ReduceMode.Expand -----------------------------------------------------------------------


@kc.kernel(reduce_mode=kc.ReduceMode.Expand)
def expand_bitwise(x: kc.array(dtype=kc.uint32), a: kc.array(dtype=kc.uint32),
                   o: kc.array(dtype=kc.uint32), xo: kc.array(dtype=kc.uint32),
                   mixed: kc.array(dtype=kc.uint32), c: kc.array(dtype=int),
                   e: kc.array(dtype=int)):
    i = kc.tid()
    kc.atomic_and(a, i % 4, x[i])
    kc.atomic_or(o, i % 4, x[i])
    kc.atomic_xor(xo, i % 4, x[i])
    kc.atomic_or(mixed, 0, x[i])
    kc.atomic_and(mixed, 1, x[i])  # two kinds on one array: never expanded
    kc.atomic_cas(c, i % 2, 0, i)  # order-dependent: never expanded
    kc.atomic_exch(e, 0, i)


def test_expand_combines_bitwise_atomics_and_never_expands_cas_exch(threads):
    n = 100_000
    x = np.random.default_rng(5).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    x |= np.uint32(1)
    args = [kc.array(x), kc.full(4, 0xFFFFFFFF, dtype=kc.uint32), kc.zeros(4, dtype=kc.uint32),
            kc.zeros(4, dtype=kc.uint32), kc.array(np.array([0, 0xFFFFFFFF], np.uint32)),
            kc.zeros(2, dtype=int), kc.array(np.array([-1], np.int32))]
    cmd = kc.launch(expand_bitwise, n, inputs=args, record_cmd=True)
    assert [(i, kind) for i, kind, _ in cmd.expand.targets] == [(1, "and"), (2, "or"),
                                                                 (3, "xor")]
    cmd.launch()
    for r in range(4):
        part = x[np.arange(n) % 4 == r]
        assert args[1].numpy()[r] == np.bitwise_and.reduce(part)
        assert args[2].numpy()[r] == np.bitwise_or.reduce(part)
        assert args[3].numpy()[r] == np.bitwise_xor.reduce(part)
    assert args[4].numpy().tolist() == [np.bitwise_or.reduce(x), np.bitwise_and.reduce(x)]
    assert args[5].numpy()[0] in range(0, n, 2) and args[5].numpy()[1] in range(1, n, 2)
    assert 0 <= args[6].numpy()[0] < n


# ---- 8- and 16-bit elements ------------------------------------------------------------------


@kc.kernel
def small_element_atomics(v: kc.array(dtype=typing.Any), slots: kc.array(dtype=int),
                          sums: kc.array(dtype=typing.Any), lo: kc.array(dtype=typing.Any),
                          hi: kc.array(dtype=typing.Any)):
    i = kc.tid()
    s = slots[i]
    kc.atomic_add(sums, s, v[i])
    kc.atomic_min(lo, s, v[i])
    kc.atomic_max(hi, s, v[i])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16],
                         ids=lambda d: np.dtype(d).name)
def test_small_int_atomics_under_contention(threads, dtype):
    """kernelc keeps atomics on 8- and 16-bit elements (Warp refuses them): each is a
    compare-and-swap on the aligned word holding it, so neighbouring elements updated by
    other threads at the same time are left intact and sums wrap as in C."""
    n, k = 40_000, 4  # neighbouring slots share one 32-bit word
    info = np.iinfo(dtype)
    rng = np.random.default_rng(5)
    v = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    slots = rng.integers(0, k, n).astype(np.int32)
    sums = kc.zeros(k, dtype=kc.types.from_numpy_dtype(dtype))
    lo, hi = kc.array(np.full(k, info.max, dtype)), kc.array(np.full(k, info.min, dtype))
    kc.launch(small_element_atomics, n, inputs=[kc.array(v), kc.array(slots), sums, lo, hi])
    for s in range(k):
        part = v[slots == s]
        assert sums.numpy()[s] == np.array(part.astype(np.int64).sum()).astype(dtype)
        assert lo.numpy()[s] == part.min() and hi.numpy()[s] == part.max()


def test_float16_atomics_under_contention(threads):
    n, k = 8_000, 4
    rng = np.random.default_rng(6)
    # Small ints with mean zero: every partial sum stays an exactly representable integer.
    v = rng.integers(-7, 8, n).astype(np.float16)
    slots = rng.integers(0, k, n).astype(np.int32)
    sums = kc.zeros(k, dtype=kc.float16)
    lo, hi = kc.array(np.full(k, 100, np.float16)), kc.array(np.full(k, -100, np.float16))
    kc.launch(small_element_atomics, n, inputs=[kc.array(v), kc.array(slots), sums, lo, hi])
    for s in range(k):
        part = v[slots == s].astype(np.float64)
        assert sums.numpy()[s] == part.sum()
        assert lo.numpy()[s] == part.min() and hi.numpy()[s] == part.max()
