"""`kc.ReduceMode`: contended atomics give the same results in every mode (NumPy reference),
and `Expand` uses private copies only for arrays it may (see docs/language.md#builtins)."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc


@kc.kernel(reduce_mode=kc.ReduceMode.Expand)
def histogram_expand(x: kc.array(dtype=int), h: kc.array(dtype=float),
                     n: kc.array2d(dtype=int), lo: kc.array(dtype=float),
                     hi: kc.array(dtype=kc.vec2)):
    i = kc.tid()
    k = x[i] % 16
    kc.atomic_add(h, k, 0.25)
    n[k % 4, 1] -= 1
    kc.atomic_min(lo, k % 3, float(x[i]))
    kc.atomic_max(hi, 0, kc.vec2(float(x[i]), -float(x[i])))


@kc.kernel(reduce_mode=kc.ReduceMode.Expand)
def uses_old_value(x: kc.array(dtype=int), h: kc.array(dtype=int), ticket: kc.array(dtype=int)):
    i = kc.tid()
    ticket[i] = kc.atomic_add(h, x[i] % 4, 1)  # needs the true old value: never expanded


def _histogram_inputs(n):
    x = np.random.default_rng(3).integers(0, 10_000, n).astype(np.int32)
    return x, [kc.array(x), kc.zeros(16), kc.zeros((4, 2), dtype=int), kc.full(3, 1e9),
               kc.full(1, kc.vec2(-1e9, -1e9), dtype=kc.vec2)]


@pytest.mark.parametrize("mode", list(kc.ReduceMode))
def test_reduce_modes_agree_with_numpy(mode, monkeypatch):
    monkeypatch.setattr(kc.config, "num_threads", 4)
    monkeypatch.setattr(kc.config, "reduce_mode", mode)
    for kernel in (histogram_expand, histogram_direct):
        x, args = _histogram_inputs(100_000)
        kc.launch(kernel, len(x), inputs=args)
        k = x % 16
        np.testing.assert_array_equal(args[1].numpy(), np.bincount(k, minlength=16) * 0.25)
        np.testing.assert_array_equal(args[2].numpy()[:, 1], -np.bincount(k % 4, minlength=4))
        np.testing.assert_array_equal(args[3].numpy(), [x[k % 3 == r].min() for r in range(3)])
        np.testing.assert_array_equal(args[4].numpy(), [[x.max(), -x.min()]])


@kc.kernel
def histogram_direct(x: kc.array(dtype=int), h: kc.array(dtype=float),
                     n: kc.array2d(dtype=int), lo: kc.array(dtype=float),
                     hi: kc.array(dtype=kc.vec2)):
    i = kc.tid()
    k = x[i] % 16
    kc.atomic_add(h, k, 0.25)
    n[k % 4, 1] -= 1
    kc.atomic_min(lo, k % 3, float(x[i]))
    kc.atomic_max(hi, 0, kc.vec2(float(x[i]), -float(x[i])))


@kc.kernel(reduce_mode=kc.ReduceMode.Direct)
def histogram_atomics(x: kc.array(dtype=int), h: kc.array(dtype=float),
                      n: kc.array2d(dtype=int), lo: kc.array(dtype=float),
                      hi: kc.array(dtype=kc.vec2)):
    i = kc.tid()
    kc.atomic_add(h, x[i] % 16, 0.25)


def test_expand_uses_private_copies_only_where_it_may(monkeypatch):
    monkeypatch.setattr(kc.config, "num_threads", 4)
    _, args = _histogram_inputs(20_000)  # enough threads to run on the workers
    cmd = kc.launch(histogram_expand, 20_000, inputs=args, record_cmd=True)
    assert [(i, kind) for i, kind, _ in cmd.expand.targets] == [
        (1, "add"), (2, "add"), (3, "min"), (4, "max")]
    # The default mode copies only small accumulators, over fixed thread ranges; a kernel
    # that chose Direct itself gets atomics.
    default = kc.launch(histogram_direct, 20_000, inputs=args, record_cmd=True).expand
    assert default.fixed_ranges and [(i, kind) for i, kind, _ in default.targets] == [
        (1, "add"), (2, "add"), (3, "min"), (4, "max")]
    big = [args[0], kc.zeros(20_000), *args[2:]]  # 4 copies of h would outweigh the threads
    assert [i for i, _, _ in kc.launch(histogram_direct, 20_000, inputs=big,
                                       record_cmd=True).expand.targets] == [2, 3, 4]
    assert kc.launch(histogram_atomics, 20_000, inputs=args, record_cmd=True).expand is None
    small = kc.launch(histogram_expand, 1000, inputs=args, record_cmd=True)
    assert small.expand is None  # a launch the calling thread runs alone needs no copies
    x = kc.array(np.arange(100_000, dtype=np.int32))
    h, ticket = kc.zeros(4, dtype=int), kc.zeros(100_000, dtype=int)
    cmd = kc.launch(uses_old_value, 100_000, inputs=[x, h, ticket], record_cmd=True)
    assert cmd.expand is None
    cmd.launch()
    assert sorted(ticket.numpy()[::4].tolist()) == list(range(25_000))


@kc.kernel(reduce_mode=kc.ReduceMode.Expand)
def pair_sums(x: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    for j in range(x.shape[0]):
        out[j] += x[i] * x[j]  # every thread adds into every element


@pytest.mark.parametrize("threads, n", [(1, 3000), (4, 40)])
def test_a_launch_one_thread_runs_updates_in_place(threads, n, monkeypatch):
    # Run by one thread (one worker, or a small launch with a loop), an Expand kernel uses
    # its plain-update variant on the arrays themselves: no copies, the same sums.
    monkeypatch.setattr(kc.config, "num_threads", threads)
    xn = np.random.default_rng(5).uniform(0.5, 1.5, n).astype(np.float32)
    x, out = kc.array(xn), kc.full(n, np.nan)
    out.zero_()
    cmd = kc.launch(pair_sums, n, inputs=[x, out], record_cmd=True)
    assert cmd.expand is None
    assert cmd.variant is not cmd.compiled and cmd.variant.params == cmd.compiled.params
    cmd.launch()
    np.testing.assert_allclose(out.numpy(), xn * xn.sum(dtype=np.float64), rtol=1e-5)
    alias = kc.launch(pair_sums, n, inputs=[x, x], record_cmd=True)
    assert alias.variant is alias.compiled  # arrays that share memory: atomics stay


def test_reduce_mode_must_be_a_reduce_mode():
    with pytest.raises(TypeError, match="kc.ReduceMode"):
        kc.kernel(reduce_mode="expand")
