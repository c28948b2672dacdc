"""Atomic updates of one element by every thread: summed in a register by each CPU worker
and applied once per worker (kernelc.ir.uniform), with the results of plain atomics."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from kernelc.ir.passes import run_pipeline
from kernelc.ir.uniform import uniform_updates
from tests.uniform_update_kernels import (
    Params,
    loop_index,
    old_value_used,
    per_thread_index,
    read_back,
    struct_fields,
    totals,
    totals_2d,
)


def _chosen(kernel) -> int:
    """How many updates the CPU backend sums per worker (it sees the optimised IR)."""
    return len(uniform_updates(run_pipeline(kernel.get_ir()).kernel))


def test_which_updates_qualify():
    assert _chosen(totals) == 4  # add, sub, an int add, a vec3 add (at a parameter's index)
    assert _chosen(totals_2d) == 1
    for kernel in (read_back, old_value_used, per_thread_index, loop_index):
        assert _chosen(kernel) == 0, kernel.key


@pytest.mark.parametrize("n", [1, 7, 100_003])
def test_sums_match_numpy(rng, n):
    x = rng.uniform(-1.0, 1.0, n).astype(np.float32)
    slot = 2
    acc = kc.array(np.full(4, 0.25, np.float32))
    counts = kc.array(np.full(4, 5, np.int32), dtype=int)
    vsum = kc.array(np.full((4, 3), 0.5, np.float32), dtype=kc.vec3)
    kc.launch(totals, n, [kc.array(x), acc, counts, vsum, slot])
    x64 = x.astype(np.float64)
    expected = np.full(4, 0.25)
    expected[0] += x64.sum()
    expected[slot + 1] -= 2.0 * x64.sum()
    np.testing.assert_allclose(acc.numpy(), expected, rtol=1e-4, atol=1e-3)
    want_counts = np.full(4, 5)
    want_counts[slot] += int((x > 0).sum())
    np.testing.assert_array_equal(counts.numpy(), want_counts)
    pos = x64[x > 0]
    want_v = np.full((4, 3), 0.5)
    want_v[slot] += [pos.sum(), len(pos), -pos.sum()]
    np.testing.assert_allclose(vsum.numpy(), want_v, rtol=1e-4, atol=1e-3)


def test_two_dimensional_launch(rng):
    x = rng.uniform(-2.0, 2.0, (37, 53))
    acc = kc.array(np.array([1.5, -0.5]), dtype=kc.float64)
    kc.launch(totals_2d, x.shape, [kc.array(x, dtype=kc.float64), acc])
    np.testing.assert_allclose(acc.numpy(), [1.5, -0.5 + (x * x).sum()], rtol=1e-12)


def test_lookalikes_keep_their_meaning(rng):
    n = 1000
    x = rng.uniform(0.5, 1.0, n).astype(np.float32)
    old = kc.full(n, np.nan, dtype=float)
    acc = kc.zeros(1, dtype=float)
    kc.launch(old_value_used, n, [kc.array(x), acc, old])
    got = np.sort(old.numpy().astype(np.float64))  # each thread saw a distinct partial sum
    assert len(np.unique(got)) == n and got[0] == 0.0
    np.testing.assert_allclose(acc.numpy()[0], x.sum(dtype=np.float64), rtol=1e-4)
    acc3 = kc.zeros(3, dtype=float)
    kc.launch(per_thread_index, n, [kc.array(x), acc3])
    np.testing.assert_allclose(acc3.numpy(), [x[k::3].sum(dtype=np.float64) for k in range(3)],
                               rtol=1e-4)


def test_gradients_of_struct_field_parameters(rng):
    """The backward kernel's updates of `p.offset.grad[0]` and `p.scale.grad[0]` are
    uniform: the gradients still match the analytic ones."""
    n = 200_000  # several workers' ranges
    x = rng.uniform(-1.0, 1.0, (n, 3)).astype(np.float32)
    offset = np.array([[0.3, -0.2, 0.1]], np.float32)
    scale = np.array([1.7], np.float32)
    p = Params()
    p.offset = kc.array(offset, dtype=kc.vec3, requires_grad=True)
    p.scale = kc.array(scale, requires_grad=True)
    p.weight = 0.5
    out = kc.zeros(n, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(struct_fields, n, [p, kc.array(x, dtype=kc.vec3), out])
    tape.backward(grads={out: kc.ones(n, dtype=float)})
    assert _chosen_backward() >= 2
    d = x.astype(np.float64) - offset
    c = (scale[0] * 0.5) ** 2
    np.testing.assert_allclose(p.offset.grad.numpy()[0], -2.0 * c * d.sum(0), rtol=1e-4)
    np.testing.assert_allclose(p.scale.grad.numpy()[0],
                               2.0 * c / scale[0] * (d * d).sum(), rtol=1e-4)


def _chosen_backward() -> int:
    from kernelc.autodiff.adjoint import adjoint_module

    return len(uniform_updates(run_pipeline(adjoint_module(struct_fields.get_ir())).kernel))
