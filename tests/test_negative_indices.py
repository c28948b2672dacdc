"""Negative array indices count from the end of their axis, as in Warp: loads, stores,
atomics and views, on every array rank; indices that cannot be negative cost nothing."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from kernelc.ir import nodes as ir
from kernelc.ir.passes import run_pipeline
from tests.conftest import nonzero, poisoned


@kc.kernel
def wrap_1d(a: kc.array(dtype=float), out: kc.array(dtype=float), hits: kc.array(dtype=float)):
    i = kc.tid()
    out[-i - 1] = a[i - 1] * 2.0  # reversed store, periodic read (a[-1] at i == 0)
    kc.atomic_add(hits, -1, a[i])  # the last element collects every value


@kc.kernel
def wrap_nd(a2: kc.array2d(dtype=float), a3: kc.array3d(dtype=float),
            a4: kc.array4d(dtype=float), out: kc.array2d(dtype=float)):
    i = kc.tid()
    out[i, 0] = a2[-1, -i - 1]
    out[i, 1] = a3[-2, i, -1]
    out[i, 2] = a4[-1, -1, -1, -i - 1]
    out[-1 - i, 3] = a2[i, -3]


@kc.kernel
def wrap_views(a: kc.array2d(dtype=float), out: kc.array2d(dtype=float)):
    i = kc.tid()
    row = a[-1]  # a partly indexed view
    out[i, 0] = row[-i - 1]
    head = a[-4, :3]  # a sliced view with a negative index
    out[i, 1] = head[i % 3]
    col = a[:, -1]
    out[i, 2] = col[-1]
    tail = a[-2:]
    out[i, 3] = tail[0, i]


def test_loads_stores_and_atomics_wrap(rng):
    n = 64
    a = nonzero(rng, n, np.float32)
    out, hits = poisoned(n, np.float32), kc.zeros(n, dtype=float)
    kc.launch(wrap_1d, n, inputs=[kc.array(a, dtype=float), out, hits])
    np.testing.assert_array_equal(out.numpy(), (np.roll(a, 1) * 2)[::-1])
    np.testing.assert_allclose(hits.numpy()[-1], a.astype(np.float64).sum(), rtol=1e-5)
    assert not hits.numpy()[:-1].any()


def test_every_rank_wraps(rng):
    n = 5
    a2 = rng.uniform(-1, 1, (n, 6)).astype(np.float32)
    a3 = rng.uniform(-1, 1, (3, n, 4)).astype(np.float32)
    a4 = rng.uniform(-1, 1, (2, 2, 3, n)).astype(np.float32)
    out = poisoned((n, 4), np.float32)
    kc.launch(wrap_nd, n, inputs=[kc.array(a2, dtype=float), kc.array(a3, dtype=float),
                                  kc.array(a4, dtype=float), out])
    i = np.arange(n)
    o = out.numpy()
    np.testing.assert_array_equal(o[:, 0], a2[-1, -i - 1])
    np.testing.assert_array_equal(o[:, 1], a3[-2, i, -1])
    np.testing.assert_array_equal(o[:, 2], a4[-1, -1, -1, -i - 1])
    np.testing.assert_array_equal(o[::-1, 3], a2[i, -3])


def test_views_wrap(rng):
    a = rng.uniform(-1, 1, (8, 4)).astype(np.float32)
    out = poisoned((4, 4), np.float32)
    kc.launch(wrap_views, 4, inputs=[kc.array(a, dtype=float), out])
    i = np.arange(4)
    o = out.numpy()
    np.testing.assert_array_equal(o[:, 0], a[-1, -i - 1])
    np.testing.assert_array_equal(o[:, 1], a[-4, :3][i % 3])
    np.testing.assert_array_equal(o[:, 2], np.full(4, a[-1, -1]))
    np.testing.assert_array_equal(o[:, 3], a[-2:][0, i])


def test_an_index_past_the_start_still_fails_in_debug_mode(tmp_path, monkeypatch):
    monkeypatch.setattr(kc.config, "mode", "debug")

    @kc.kernel
    def too_far(a: kc.array(dtype=float)):
        a[-4] = 1.0

    with pytest.raises(kc.KernelRuntimeError, match="out of bounds") as info:
        kc.launch(too_far, 1, inputs=[kc.zeros(3, dtype=float)])
    assert "test_negative_indices.py" in str(info.value) and "^" in str(info.value)


def _selects(kernel) -> int:
    module = run_pipeline(kernel.get_ir())
    return sum(isinstance(s, ir.Op) and s.opcode == ir.OpCode.SELECT
               for s in ir.walk(module.kernel.body))


@kc.kernel
def never_negative(a: kc.array2d(dtype=float), out: kc.array(dtype=float), m: int):
    i = kc.tid()
    s = float(0.0)
    for j in range(m):
        s += a[i, j] + a[i + 1, j * 2 % m]
    out[i] = s


@kc.kernel
def maybe_negative(a: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = a[i - 1]


def test_indices_that_cannot_be_negative_are_not_tested():
    assert _selects(never_negative) == 0  # tid, loop counters, sums and products of them
    assert _selects(maybe_negative) == 1


@kc.kernel
def compare_loop_counters(out: kc.array(dtype=int), n: int):
    for i in range(n):
        for j in range(n):
            if j < i:  # compared with a loop counter, not with a constant 0
                out[0] += 1


def test_comparing_with_a_loop_counter_is_not_a_sign_test():
    out = kc.zeros(1, dtype=int)
    kc.launch(compare_loop_counters, 1, inputs=[out, 7])
    assert out.numpy()[0] == 7 * 6 // 2
