"""Control flow: branches, loops, break/continue, early return; the plain Python function
(run on the host with the same inputs) is the reference."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import nonzero, poisoned


def branches(x):
    if x > 2:
        y = x * 2
    elif x > 0:
        y = x + 100
    elif x == 0:
        y = 7
    else:
        y = -x
    z = 1 if y % 2 == 0 else 3
    return y + z


def loops(n, step):
    total = 0
    for i in range(n):
        total += i
    for i in range(2, n):
        total += 2 * i
    for i in range(n, -3, -2):
        total += i
    for i in range(-n, n, step):
        total += 3 * i
    for i in range(n, -n, -step):
        total -= i
    k = 0
    while k < n:
        k += 1
        if k == 3:
            continue
        total += k
    for i in range(10):
        if i > n:
            break
        for j in range(10):
            if j == i:
                break
            if (i + j) % 3 == 0:
                continue
            total += i * j
    return total


@kc.kernel
def branches_k(a: kc.array(dtype=int), o: kc.array(dtype=int)):
    i = kc.tid()
    x = a[i]
    if x > 2:
        y = x * 2
    elif x > 0:
        y = x + 100
    elif x == 0:
        y = 7
    else:
        y = -x
    z = 1 if y % 2 == 0 else 3
    o[i] = y + z


@kc.kernel
def loops_k(a: kc.array(dtype=int), steps: kc.array(dtype=int), o: kc.array(dtype=int)):
    t = kc.tid()
    n = a[t]
    step = steps[t]
    total = 0
    for i in range(n):
        total += i
    for i in range(2, n):
        total += 2 * i
    for i in range(n, -3, -2):
        total += i
    for i in range(-n, n, step):
        total += 3 * i
    for i in range(n, -n, -step):
        total -= i
    k = 0
    while k < n:
        k += 1
        if k == 3:
            continue
        total += k
    for i in range(10):
        if i > n:
            break
        for j in range(10):
            if j == i:
                break
            if (i + j) % 3 == 0:
                continue
            total += i * j
    o[t] = total


def test_if_elif_else_and_ternary(rng):
    x = rng.integers(-5, 6, 64).astype(np.int32)
    out = poisoned(64, np.int32)
    kc.launch(branches_k, 64, inputs=[kc.array(x, dtype=int), out])
    assert out.numpy().tolist() == [branches(int(v)) for v in x]


def test_range_forms_while_break_continue(rng):
    n = rng.integers(-2, 12, 40).astype(np.int32)
    steps = rng.integers(1, 4, 40).astype(np.int32)
    out = poisoned(40, np.int32)
    kc.launch(loops_k, 40, inputs=[kc.array(n, dtype=int), kc.array(steps, dtype=int), out])
    assert out.numpy().tolist() == [loops(int(a), int(s)) for a, s in zip(n, steps)]


@kc.kernel
def runtime_step(start: int, stop: int, step: int, o: kc.array(dtype=int)):
    count = 0
    for i in range(start, stop, step):
        o[count] = i
        count += 1
    o[63] = count


@pytest.mark.parametrize("start,stop,step", [(0, 10, 3), (10, 0, -3), (5, -7, -1), (0, 5, -1),
                                             (5, 0, 1), (-4, 4, 2)])
def test_range_with_a_runtime_step_of_either_sign(start, stop, step):
    out = kc.full(64, -99, dtype=int)
    kc.launch(runtime_step, 1, inputs=[start, stop, step, out])
    want = list(range(start, stop, step))
    got = out.numpy()
    assert got[63] == len(want) and got[: len(want)].tolist() == want


@kc.kernel
def reversed_ranges(starts: kc.array(dtype=kc.int32), stops: kc.array(dtype=kc.int32),
                    steps: kc.array(dtype=kc.int32), counts: kc.array(dtype=kc.int32),
                    values: kc.array2d(dtype=kc.int32)):
    t = kc.tid()
    count = kc.int32(0)
    for i in reversed(range(starts[t], stops[t], steps[t])):
        if count < values.shape[1]:
            values[t, count] = i
        count += 1
    counts[t] = count


@kc.kernel
def reversed_literal_ranges(out: kc.array(dtype=int)):
    c = int(0)
    for i in reversed(range(4)):
        out[c] = i
        c += 1
    for j in reversed(range(2, 11, 3)):
        out[c] = j
        c += 1


def test_reversed_ranges_of_every_sign_and_size():
    cases = [(s, e, k) for s in range(-8, 9) for e in range(-8, 9) for k in range(-4, 5) if k]
    starts, stops, steps = (kc.array([c[j] for c in cases], dtype=kc.int32) for j in range(3))
    counts = kc.full(len(cases), -1, dtype=kc.int32)
    values = kc.full((len(cases), 20), -99, dtype=kc.int32)
    kc.launch(reversed_ranges, len(cases), [starts, stops, steps, counts, values])
    got_counts, got_values = counts.numpy(), values.numpy()
    for n, (s, e, k) in enumerate(cases):
        want = list(reversed(range(s, e, k)))
        assert got_counts[n] == len(want) and got_values[n, :len(want)].tolist() == want
    out = kc.full(8, -1, dtype=int)
    kc.launch(reversed_literal_ranges, 1, [out])
    assert out.numpy().tolist() == [3, 2, 1, 0, 8, 5, 2, -1]


@kc.kernel
def early_return(a: kc.array(dtype=float), o: kc.array(dtype=float)):
    i = kc.tid()
    o[i] = -1.0
    if a[i] < 0.0:
        return
    for _k in range(3):
        if a[i] > 2.0:
            o[i] = 2.0
            return
    o[i] = a[i] * 10.0


def test_early_return_ends_only_its_own_thread(rng):
    a = nonzero(rng, 200, np.float32)
    out = poisoned(200, np.float32)
    kc.launch(early_return, 200, inputs=[kc.array(a, dtype=float), out])
    want = np.where(a < 0, -1.0, np.where(a > 2, 2.0, a * 10.0)).astype(np.float32)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


@kc.kernel
def branch_locals(a: kc.array(dtype=float), o: kc.array(dtype=float)):
    i = kc.tid()
    v = a[i]
    acc = 0.0
    if v > 0.0:
        acc = v * 2.0
        w = 1.0
    else:
        w = -1.0
    for k in range(3):
        acc = acc + w
        last = float(k)
    o[i] = acc + last


def test_variables_assigned_in_branches_and_loops(rng):
    a = nonzero(rng, 50, np.float32)
    out = poisoned(50, np.float32)
    kc.launch(branch_locals, 50, inputs=[kc.array(a, dtype=float), out])
    want = np.where(a > 0, a * 2 + 3, -3.0) + 2.0
    np.testing.assert_allclose(out.numpy(), want.astype(np.float32), rtol=1e-6)


@kc.kernel
def nested(n: int, o: kc.array2d(dtype=int)):
    i, j = kc.tid()
    s = 0
    for a in range(i + 1):
        for b in range(j + 1):
            t = 0
            while t < n:
                t += 1
                if t > a + b:
                    break
                s += t
    o[i, j] = s


def test_nested_loops_in_a_2d_launch():
    out = poisoned((5, 4), np.int32)
    kc.launch(nested, (5, 4), inputs=[3, out])

    def ref(i, j, n):
        s = 0
        for a in range(i + 1):
            for b in range(j + 1):
                t = 0
                while t < n:
                    t += 1
                    if t > a + b:
                        break
                    s += t
        return s

    want = [[ref(i, j, 3) for j in range(4)] for i in range(5)]
    assert out.numpy().tolist() == want


def test_static_condition_lowers_one_side_only():
    flag = False

    @kc.kernel
    def one_side(o: kc.array(dtype=int)):
        if kc.static(flag):
            o[0] = undefined_name  # noqa: F821  (never lowered)
        else:
            o[0] = 5

    out = poisoned(1, np.int32)
    kc.launch(one_side, 1, inputs=[out])
    assert out.numpy()[0] == 5
