"""Names bound at compile time (array views, funcs, tuples) and rebound in branches and loops:
views take the branch or iteration that ran; funcs and tuples are refused, never miscompiled."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import nonzero, poisoned


@kc.kernel
def view_in_branch(a: kc.array2d(dtype=float), flags: kc.array(dtype=int),
                   out: kc.array(dtype=float)):
    i = kc.tid()
    row = a[0]
    if flags[i] > 0:
        row = a[i + 1]
    out[i] = row[1] + row[2]


@kc.kernel
def view_in_for(a: kc.array2d(dtype=float), n: int, out: kc.array(dtype=float)):
    row = a[n]
    for i in range(n):
        out[i] = row[0]  # the previous iteration's row: a[n], then a[0], a[1], ...
        row = a[i]


@kc.kernel
def view_in_while(a: kc.array2d(dtype=float), limit: float, out: kc.array(dtype=int)):
    row = a[0]
    i = int(0)
    while row[0] < limit and i < a.shape[0] - 1:
        i += 1
        row = a[i]
    out[0] = i


@kc.kernel
def slice_in_branch(a: kc.array2d(dtype=float), flag: int, out: kc.array(dtype=float)):
    part = a[0, 1:]
    if flag > 0:
        part = a[1]  # rebound twice in the branch
        part = a[2, :2]
    out[0] = part[0] + part[part.shape[0] - 1]
    out[1] = float(part.shape[0])


def test_views_rebound_in_a_branch_follow_the_branch_taken(rng):
    a_np = nonzero(rng, 9 * 4, np.float32).reshape(9, 4)
    flags = rng.integers(0, 2, 8).astype(np.int32)
    out = poisoned(8, np.float32)
    kc.launch(view_in_branch, 8, inputs=[kc.array(a_np), kc.array(flags), out])
    rows = np.where(flags[:, None] > 0, a_np[1:], a_np[0])
    np.testing.assert_allclose(out.numpy(), rows[:, 1] + rows[:, 2], rtol=1e-6)

    for flag in (0, 1):
        out = poisoned(2, np.float32)
        kc.launch(slice_in_branch, 1, inputs=[kc.array(a_np), flag, out])
        part = a_np[2, :2] if flag else a_np[0, 1:]
        np.testing.assert_allclose(out.numpy(), [part[0] + part[-1], len(part)], rtol=1e-6)


def test_views_rebound_in_loops_carry_to_the_next_iteration(rng):
    a_np = nonzero(rng, 6 * 3, np.float32).reshape(6, 3)
    out = poisoned(5, np.float32)
    kc.launch(view_in_for, 1, inputs=[kc.array(a_np), 5, out])
    np.testing.assert_array_equal(out.numpy(), [a_np[5, 0], *a_np[:4, 0]])

    a_np[:, 0] = np.arange(6)
    for limit, want in ((3.0, 3), (0.5, 1), (-1.0, 0), (99.0, 5)):
        count = poisoned(1, np.int32)
        kc.launch(view_in_while, 1, inputs=[kc.array(a_np), limit, count])
        assert count.numpy()[0] == want


@kc.func
def doubled(x: float):
    return 2.0 * x


@kc.func
def halved(x: float):
    return 0.5 * x


@kc.kernel
def straight_line_rebinding(a: kc.array(dtype=float)):
    f = doubled
    a[0] = f(a[0])
    f = halved  # the same block: the code after sees this binding, as Python does
    a[1] = f(a[1])
    t = (a[2], 1.0)
    t = (t[1], a[2])
    a[2] = t[0] - t[1]
    f = doubled
    if a[3] > 0.0:
        f = doubled  # the same function again is no rebinding
    a[3] = f(a[3])


def test_straight_line_rebinding_of_funcs_and_tuples(rng):
    x = nonzero(rng, 4, np.float32)
    a = kc.array(x)
    kc.launch(straight_line_rebinding, 1, inputs=[a])
    np.testing.assert_allclose(a.numpy(), [2 * x[0], 0.5 * x[1], 1.0 - x[2], 2 * x[3]],
                               rtol=1e-6)


def test_funcs_and_tuples_rebound_in_branches_or_loops_are_refused():
    @kc.kernel
    def func_in_loop(a: kc.array(dtype=float), n: int):
        f = doubled
        for _ in range(n):
            a[0] = f(a[0])
            f = halved

    @kc.kernel
    def tuple_in_while(a: kc.array(dtype=float)):
        t = (a[0], a[1])
        while t[0] < 10.0:
            t = (t[0] + 1.0, t[1])
        a[0] = t[0]

    @kc.kernel
    def type_in_branch(a: kc.array(dtype=float)):
        vec = kc.vec2
        if a[0] > 0.0:
            vec = kc.vec3
        a[1] = kc.length(vec(1.0))

    cases = [(func_in_loop, "'f' names the function 'doubled'"),
             (tuple_in_while, "'t' is a tuple bound outside"),
             (type_in_branch, "'vec' names the type vec2")]
    for kernel, message in cases:
        with pytest.raises(kc.KernelError, match=message):
            kc.compile(kernel)


@pytest.mark.parametrize("kernel", [view_in_branch, view_in_for, view_in_while,
                                    slice_in_branch], ids=lambda k: k.key)
def test_nvrtc_compiles_rebound_views(kernel):
    pytest.importorskip("cuda.bindings.nvrtc")
    assert kc.compile(kernel, target="cuda", arch=80).binary


@kc.kernel
def sibling_loops(a: kc.array2d(dtype=float), out: kc.array(dtype=float)):
    for i in range(2):
        row = a[i]
        t = (row[0], 1.0)
        out[i] = t[0] + t[1]
    for j in range(2):
        row = a[j + 2]  # bound again in another loop's body: not a rebinding of the first
        t = (row[1], 2.0)
        out[j + 2] = t[0] + t[1]


def test_names_bound_again_in_a_later_loop(rng):
    a_np = nonzero(rng, 4 * 2, np.float32).reshape(4, 2)
    out = poisoned(4, np.float32)
    kc.launch(sibling_loops, 1, inputs=[kc.array(a_np), out])
    want = [a_np[0, 0] + 1, a_np[1, 0] + 1, a_np[2, 1] + 2, a_np[3, 1] + 2]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
