"""Views of arrays inside kernels: `a[i]` of a 2-d array, slices with Python's rules,
passed to funcs, written through, and differentiated."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc


@kc.func
def total(r: kc.array(dtype=float)):
    s = float(0.0)
    for j in range(r.shape[0]):
        s += r[j]
    return s


@kc.kernel
def read_views(a: kc.array2d(dtype=float), b: kc.array(dtype=float), out: kc.array2d(dtype=float)):
    i = kc.tid()
    row = a[i]
    out[i, 0] = total(row)
    out[i, 1] = float(row.shape[0])
    sub = b[1:7:2]
    out[i, 2] = sub[1] + float(sub.shape[0])
    rev = b[::-1]
    out[i, 3] = rev[0] + rev[2]
    tail = b[-3:]
    out[i, 4] = tail[0] + float(tail.shape[0])
    col = a[:, 1]
    out[i, 5] = col[i] + float(col.shape[0])
    block = a[1:3, 2:]
    out[i, 6] = block[1, 0] + float(block.shape[0] * 10 + block.shape[1])
    out[i, 7] = float(b[5:2].shape[0] + b[2:100].shape[0] * 10)
    back = a[i, ::-2]
    out[i, 8] = back[0] + float(back.shape[0])


def test_views_read_as_numpy_slices(rng):
    a_np = rng.uniform(-1.0, 1.0, (4, 5)).astype(np.float32)
    b_np = rng.uniform(-1.0, 1.0, 10).astype(np.float32)
    out = kc.array(np.full((4, 9), np.nan, np.float32), dtype=float)
    kc.launch(read_views, 4, [kc.array(a_np, dtype=float), kc.array(b_np, dtype=float), out])
    got = out.numpy()
    for i in range(4):
        want = [a_np[i].sum(), 5, b_np[1:7:2][1] + 3, b_np[::-1][0] + b_np[::-1][2],
                b_np[-3:][0] + 3, a_np[:, 1][i] + 4, a_np[1:3, 2:][1, 0] + 23,
                0 + 80, a_np[i, ::-2][0] + 3]
        np.testing.assert_allclose(got[i], want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("start", [None, -12, -3, 0, 2, 9, 12])
@pytest.mark.parametrize("stop", [None, -12, -2, 0, 4, 10, 15])
@pytest.mark.parametrize("step", [None, -3, -1, 1, 2])
def test_slice_bounds_follow_python(start, stop, step):
    @kc.kernel
    def first_and_count(src: kc.array(dtype=kc.int32), lo: int, hi: int, st: int,
                        out: kc.array(dtype=kc.int32)):
        view = src[lo:hi:st]
        out[0] = view.shape[0]
        for k in range(view.shape[0]):
            out[1 + k] = view[k]

    src_np = np.arange(10, dtype=np.int32) * 7 + 3
    want = src_np[start:stop:step]
    src = kc.array(src_np, dtype=kc.int32)
    out = kc.full(12, -1, dtype=kc.int32)
    # Run-time bounds standing for the left-out ones (-11 clips to "before the first").
    lo = start if start is not None else (0 if (step or 1) > 0 else 9)
    hi = stop if stop is not None else (10 if (step or 1) > 0 else -11)
    kc.launch(first_and_count, 1, [src, lo, hi, step or 1, out])
    got = out.numpy()
    assert got[0] == len(want) and got[1:1 + len(want)].tolist() == want.tolist()


@kc.kernel
def write_rows(a: kc.array2d(dtype=float), scale: float):
    i = kc.tid()
    row = a[i]
    for j in range(row.shape[0]):
        row[j] = row[j] * scale + float(i)
    a[i, ::2][0] = -1.0


def test_writes_through_views(rng):
    a_np = rng.uniform(-1.0, 1.0, (6, 4)).astype(np.float32)
    a = kc.array(a_np, dtype=float)
    kc.launch(write_rows, 6, [a, 3.0])
    want = a_np * np.float32(3.0) + np.arange(6, dtype=np.float32)[:, None]
    want[:, 0] = -1.0
    np.testing.assert_allclose(a.numpy(), want, rtol=1e-6)


@kc.kernel
def view_loss(a: kc.array2d(dtype=float), b: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    row = a[i]
    sub = b[1:7:2]
    out[i] = row[1] * row[2] * sub[i % 3] + b[::-1][i] * 2.0


def test_gradients_flow_through_views(rng):
    a_np = rng.uniform(0.5, 1.5, (4, 5)).astype(np.float32)
    b_np = rng.uniform(0.5, 1.5, 10).astype(np.float32)
    a = kc.array(a_np, dtype=float, requires_grad=True)
    b = kc.array(b_np, dtype=float, requires_grad=True)
    out = kc.zeros(4, dtype=float, requires_grad=True)
    seed = np.float32([1.0, 2.0, 3.0, 4.0])
    tape = kc.Tape()
    with tape:
        kc.launch(view_loss, 4, [a, b, out])
    tape.backward(grads={out: kc.array(seed, dtype=float)})
    ga, gb = np.zeros_like(a_np), np.zeros_like(b_np)
    for i in range(4):
        s = 1 + 2 * (i % 3)
        ga[i, 1] += seed[i] * a_np[i, 2] * b_np[s]
        ga[i, 2] += seed[i] * a_np[i, 1] * b_np[s]
        gb[s] += seed[i] * a_np[i, 1] * a_np[i, 2]
        gb[9 - i] += seed[i] * 2.0
    np.testing.assert_allclose(a.grad.numpy(), ga, rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), gb, rtol=1e-5)


def test_view_errors_point_at_the_code():
    @kc.kernel
    def zero_step(b: kc.array(dtype=float)):
        c = b[::0]
        c[0] = 1.0

    @kc.kernel
    def float_bound(b: kc.array(dtype=float)):
        c = b[0.5:]
        c[0] = 1.0

    @kc.kernel
    def too_many(b: kc.array(dtype=float)):
        c = b[0, 1:]
        c[0] = 1.0

    with pytest.raises(kc.WarpCodegenValueError, match="Slice step cannot be zero"):
        kc.compile(zero_step)  # Warp's class and wording
    for kernel, message in ((zero_step, "Slice step cannot be zero"),
                            (float_bound, "slice bounds must be integers"),
                            (too_many, "too many indices")):
        with pytest.raises(kc.KernelError, match=message) as info:
            kc.compile(kernel)
        assert "test_array_views_kernel.py" in str(info.value) and "^" in str(info.value)


@kc.kernel
def composite_slices(vs: kc.array(dtype=kc.vec3), ms: kc.array(dtype=kc.mat33),
                     out2: kc.array2d(dtype=kc.vec2), out3: kc.array2d(dtype=kc.vec3),
                     outm: kc.array(dtype=kc.mat22)):
    i = kc.tid()
    v = vs[i]
    m = ms[i]
    out2[i, 0] = v[1:3]
    out2[i, 1] = m[1, 1:]
    out2[i, 2] = m[:2, 2]
    out3[i, 0] = v[::-1]
    out3[i, 1] = m[-1]
    outm[i] = m[1:, ::2]


def test_vector_and_matrix_slices_are_new_values(rng):
    v_np = rng.uniform(-1.0, 1.0, (3, 3)).astype(np.float32)
    m_np = rng.uniform(-1.0, 1.0, (3, 3, 3)).astype(np.float32)
    out2 = kc.array(np.full((3, 3, 2), np.nan, np.float32), dtype=kc.vec2)
    out3 = kc.array(np.full((3, 2, 3), np.nan, np.float32), dtype=kc.vec3)
    outm = kc.array(np.full((3, 2, 2), np.nan, np.float32), dtype=kc.mat22)
    kc.launch(composite_slices, 3, [kc.array(v_np, dtype=kc.vec3), kc.array(m_np, dtype=kc.mat33),
                                    out2, out3, outm])
    np.testing.assert_array_equal(out2.numpy()[:, 0], v_np[:, 1:3])
    np.testing.assert_array_equal(out2.numpy()[:, 1], m_np[:, 1, 1:])
    np.testing.assert_array_equal(out2.numpy()[:, 2], m_np[:, :2, 2])
    np.testing.assert_array_equal(out3.numpy()[:, 0], v_np[:, ::-1])
    np.testing.assert_array_equal(out3.numpy()[:, 1], m_np[:, -1])
    np.testing.assert_array_equal(outm.numpy(), m_np[:, 1:, ::2])


@kc.kernel
def rank_and_rebinding(a: kc.array2d(dtype=float), out: kc.array(dtype=int)):
    sub = a[:2]
    out[0] = sub.ndim * 100 + sub.shape[0] * 10 + sub.shape[2]
    sub = a[1]  # another rank, in the block that made `sub` (Warp allows it)
    out[1] = sub.ndim * 100 + sub.shape[0] * 10 + sub.shape[1]
    row = a[0]
    out[2] = row.ndim + a.ndim * 10


def test_ndim_unused_shape_entries_and_rebinding_array_locals():
    out = kc.full(3, -7, dtype=int)
    kc.launch(rank_and_rebinding, 1, inputs=[kc.zeros((4, 5), dtype=float), out])
    assert out.numpy().tolist() == [220, 150, 21]


def test_rebinding_an_array_local_inside_a_branch_is_refused():
    @kc.kernel
    def branchy(a: kc.array2d(dtype=float), flag: int):
        sub = a[:2]
        if flag > 0:
            sub = a[1]
        sub[0] = 1.0

    with pytest.raises(kc.KernelError, match="changes the type of 'sub'"):
        kc.compile(branchy)
