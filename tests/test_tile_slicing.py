"""Tile subscripts and views against NumPy: slices, negative and run-time indices, chains,
assignment through views, tile_view() with run-time offsets, funcs taking tiles, and the
errors for what cannot work. Outputs are poisoned; inputs random and non-zero."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import nonzero, poisoned

F32 = np.float32
M, N = 8, 12


def _arr(x, dtype=float, grad=False):
    return kc.array(np.ascontiguousarray(x), dtype=dtype, requires_grad=grad)


def _data(rng, shape):
    return nonzero(rng, int(np.prod(shape)), F32).reshape(shape)


def _run(kernel, *arrays):
    kc.launch_tiled(kernel, dim=[1], inputs=list(arrays), block_dim=32)


@kc.kernel
def slice_forms(a: kc.array2d(dtype=float), rows: kc.array2d(dtype=float),
                strided: kc.array2d(dtype=float), rev: kc.array2d(dtype=float),
                last: kc.array(dtype=float), chain: kc.array(dtype=float)):
    t = kc.tile_load(a, shape=(M, N))
    kc.tile_store(rows, t[2:6, 1:-1])
    kc.tile_store(strided, t[::2, ::3] * 2.0)
    kc.tile_store(rev, t[100::-1, :])
    kc.tile_store(last, t[-1, :])
    kc.tile_store(chain, t[::-1][1:][::2][0])


def test_slices_match_numpy(rng):
    a = _data(rng, (M, N))
    outs = [poisoned((4, N - 2), F32), poisoned((M // 2, N // 3), F32), poisoned((M, N), F32),
            poisoned(N, F32), poisoned(N, F32)]
    _run(slice_forms, _arr(a), *outs)
    want = [a[2:6, 1:-1], a[::2, ::3] * 2, a[100::-1, :], a[-1, :], a[::-1][1:][::2][0]]
    for got, w in zip(outs, want):
        np.testing.assert_array_equal(got.numpy(), w)


@kc.kernel
def runtime_rows(a: kc.array2d(dtype=float), i: int, idx: kc.array(dtype=int),
                 row: kc.array(dtype=float), picked: kc.array(dtype=float),
                 block: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(M, N))
    kc.tile_store(row, t[i])
    kc.tile_store(picked, t[idx[0], 2:5])
    kc.tile_store(block, kc.tile_view(t, offset=(idx[1], idx[2]), shape=(2, 3)))


@pytest.mark.parametrize("i", [3, -1, -M])
def test_runtime_and_negative_indices(rng, i):
    a = _data(rng, (M, N))
    row, picked, block = poisoned(N, F32), poisoned(3, F32), poisoned((2, 3), F32)
    _run(runtime_rows, _arr(a), i, _arr(np.array([i, 5, 4], np.int32), int), row, picked, block)
    np.testing.assert_array_equal(row.numpy(), a[i])
    np.testing.assert_array_equal(picked.numpy(), a[i, 2:5])
    np.testing.assert_array_equal(block.numpy(), a[5:7, 4:7])


@kc.kernel
def assign_through_views(a: kc.array2d(dtype=float), v: kc.array2d(dtype=float),
                         out: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(M, N))
    t[0:2, :] = kc.tile_load(v, shape=(2, N))
    t[3] = t[4]
    t[5, -1] = 7.0
    t[:, 1:] = t[:, :-1]  # overlapping: numpy's result
    for r in range(6, M):
        dst = t[r]  # a view: writing through it writes t
        kc.tile_assign(dst, t[1] * 0.5)
    out_view = kc.tile_view(t, offset=(slice(0, M, 1),))
    kc.tile_store(out, out_view)


def _assigned(a, v):
    """assign_through_views in NumPy (float64)."""
    t = a.astype(np.float64).copy()
    t[0:2, :] = v
    t[3] = t[4]
    t[5, -1] = 7.0
    t[:, 1:] = t[:, :-1].copy()
    t[6:] = t[1] * 0.5
    return t


def test_assignment_through_views_and_its_gradient(rng):
    a, v = _data(rng, (M, N)), _data(rng, (2, N))
    a_wp, v_wp = _arr(a, grad=True), _arr(v, grad=True)
    out = kc.array(np.full((M, N), np.nan, F32), dtype=float, requires_grad=True)
    with kc.Tape() as tape:
        _run(assign_through_views, a_wp, v_wp, out)
    base = _assigned(a, v)
    np.testing.assert_allclose(out.numpy(), base, rtol=1e-6)
    adj = _data(rng, (M, N))
    tape.backward(grads={out: _arr(adj)})
    # the map is affine: each input's gradient is adj . (out(x + e) - out(x))
    for x, grad in ((a, a_wp.grad.numpy()), (v, v_wp.grad.numpy())):
        want = np.zeros(x.shape)
        for idx in np.ndindex(*x.shape):
            bumped = x.astype(np.float64).copy()
            bumped[idx] += 1.0
            moved = _assigned(bumped, v) if x is a else _assigned(a, bumped)
            want[idx] = np.sum(adj * (moved - base))
        np.testing.assert_allclose(grad, want, rtol=1e-5, atol=1e-5)


@kc.kernel
def rebind_view_in_loop(a: kc.array2d(dtype=float), out: kc.array2d(dtype=float),
                        last: kc.array(dtype=float)):
    t = kc.tile_load(a, shape=(M, N))
    row = t[0]
    for i in range(1, M):
        row = t[i]  # re-aims the view; t keeps its rows
    kc.tile_store(out, t)
    kc.tile_store(last, row)


def test_rebinding_a_view_in_a_loop_does_not_write(rng):
    a = _data(rng, (M, N))
    out, last = poisoned((M, N), F32), poisoned(N, F32)
    _run(rebind_view_in_loop, _arr(a), out, last)
    np.testing.assert_array_equal(out.numpy(), a)
    np.testing.assert_array_equal(last.numpy(), a[-1])


@kc.func
def scaled_sum(t: kc.tile[float, M, N], s: float):
    return kc.tile_sum(t) * s


@kc.func
def zero_first_row(t: kc.tile[float, M, N]):
    t[0] = kc.tile_zeros(shape=N, dtype=float)


@kc.func
def push_twice(s: kc.tile_stack(capacity=4, dtype=int), v: int):
    kc.tile_stack_push(s, v, True)
    kc.tile_stack_push(s, v + 1, True)


@kc.kernel
def tile_func_args(a: kc.array2d(dtype=float), total: kc.array(dtype=float),
                   out: kc.array2d(dtype=float), count: kc.array(dtype=int)):
    t = kc.tile_load(a, shape=(M, N))
    kc.tile_store(total, scaled_sum(t, 0.5))
    zero_first_row(t)
    kc.tile_store(out, t)
    s = kc.tile_stack(capacity=4, dtype=int)
    push_twice(s, 5)
    count[0] = kc.tile_stack_count(s)


def test_funcs_take_tiles_and_stacks(rng):
    a = _data(rng, (M, N))
    total, out, count = poisoned(1, F32), poisoned((M, N), F32), poisoned(1, np.int32)
    _run(tile_func_args, _arr(a), total, out, count)
    np.testing.assert_allclose(total.numpy(), [a.astype(np.float64).sum() * 0.5], rtol=1e-5)
    want = a.copy()
    want[0] = 0.0
    np.testing.assert_array_equal(out.numpy(), want)
    assert count.numpy()[0] == 2
    assert repr(kc.tile[float, 2, 3]) == "tile[float, 2, 3]"


@kc.kernel
def element_parts(out: kc.array(dtype=kc.vec3), m: kc.array(dtype=kc.mat22)):
    v = kc.tile_zeros(shape=4, dtype=kc.vec3)
    w = kc.tile_zeros(shape=2, dtype=kc.mat22)
    v[2][1] = 5.0
    v[-1].z = 2.0
    w[1][0, 1] = 3.0
    kc.tile_store(out, v)
    kc.tile_store(m, w)


def test_component_writes_into_tile_elements():
    out = kc.zeros(4, dtype=kc.vec3)
    m = kc.zeros(2, dtype=kc.mat22)
    _run(element_parts, out, m)
    want = np.zeros((4, 3), F32)
    want[2, 1], want[3, 2] = 5.0, 2.0
    np.testing.assert_array_equal(out.numpy(), want)
    wm = np.zeros((2, 2, 2), F32)
    wm[1, 0, 1] = 3.0
    np.testing.assert_array_equal(m.numpy(), wm)


def test_tile_assign_converts_and_checks_its_offset(rng):
    @kc.kernel
    def convert(a: kc.array(dtype=kc.float64), out: kc.array2d(dtype=float)):
        d = kc.tile_zeros(shape=(3, 3), dtype=float)
        row = kc.tile_reshape(kc.tile_load(a, shape=3), shape=(1, 3))
        kc.tile_assign(d, kc.tile_broadcast(row, shape=(2, 3)), offset=(1, 0))
        kc.tile_store(out, d)

    a = nonzero(rng, 3, np.float64)
    out = poisoned((3, 3), F32)
    kc.launch_tiled(convert, dim=[1], inputs=[_arr(a, kc.float64), out], block_dim=32)
    want = np.zeros((3, 3), F32)
    want[1:] = a.astype(F32)
    np.testing.assert_array_equal(out.numpy(), want)

    @kc.kernel
    def too_far(out: kc.array2d(dtype=float)):
        d = kc.tile_zeros(shape=(3, 3), dtype=float)
        kc.tile_assign(d, kc.tile_ones(shape=(2, 3), dtype=float), offset=(2, 0))

    with pytest.raises(kc.KernelError, match="exceeds"):
        kc.compile(too_far)


ERRORS = [
    ("t = kc.tile_ones(shape=(4, 4), dtype=float)\n    x = t[4, :]", "out of bounds"),
    ("t = kc.tile_ones(shape=(4, 4), dtype=float)\n    x = t[2:2]", "empty tile"),
    ("t = kc.tile_ones(shape=(4, 4), dtype=float)\n    x = t[1.5, :]",
     "must be integers or slices"),
    ("t = kc.tile_ones(shape=(4, 4), dtype=float)\n    t[0:2, :] = 1.0",
     "requires a tile of matching shape"),
    ("t = kc.tile_ones(shape=(4, 4), dtype=float)\n    t[0:2, :] = kc.tile_ones(shape=(3, 4), "
     "dtype=float)", "shape mismatch"),
    ("t = kc.tile_ones(shape=(4, 4), dtype=float)\n    t[0] += t[1]",
     "Compound assignment to a tile view"),
    ("t = kc.tile_ones(shape=(4, 4), dtype=float)\n    i = kc.tile_arange(2, dtype=int)\n"
     "    x = t[i, 1:3]", "requires ':' on all other axes"),
    ("t = kc.tile_ones(shape=(4, 4), dtype=float)\n    x = kc.tile_reshape(t[::2], shape=8)",
     "requires a contiguous tile"),
    ("t = kc.tile_ones(shape=(4, 4), dtype=float)\n    x = kc.tile_view(t, offset=(4,))",
     "out of bounds"),
    ("t = kc.tile_ones(shape=(4, 4), dtype=float)\n    x = kc.tile_view(t, offset=(slice(0, 2, "
     "1),), shape=(2, 4))", "'shape' together with a slice"),
    ("t = kc.tile_ones(shape=(4, 4), dtype=float)\n    x = kc.tile_view(t, offset=(slice(0, n, "
     "1),))", "compile-time constant"),
    ("t = kc.tile_ones(shape=4, dtype=kc.vec3)\n    x = t * kc.vec3(1.0, 2.0, 3.0)",
     "at least one operand must be a scalar"),
]


@pytest.mark.parametrize("body, message", ERRORS, ids=[m for _, m in ERRORS])
def test_subscript_mistakes_are_clear_errors(tmp_path, body, message):
    from tests.conftest import kernel_in_file

    k = kernel_in_file(tmp_path, "bad_subscript", "n: int", body)
    with pytest.raises(kc.KernelError, match=message) as info:
        kc.compile(k)
    assert "bad_subscript.py" in str(info.value)
    assert isinstance(info.value, RuntimeError)
