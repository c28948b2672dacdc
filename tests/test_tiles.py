"""Tiles: every core form against NumPy, with random non-zero inputs and poisoned outputs.

The kernels live in `tests/tile_kernels.py`. kernelc runs tile operations with one lane per
block, so `launch_tiled(k, dim=[M, N], block_dim=64)` runs M * N blocks of one lane.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from kernelc.frontend.decorators import Kernel
from tests import tile_kernels as K
from tests.conftest import nonzero, poisoned

F32 = np.float32


def _arr(x, dtype=float):
    return kc.array(np.ascontiguousarray(x), dtype=dtype)


def _data(rng, shape, low=-4.0, high=4.0):
    return nonzero(rng, int(np.prod(shape)), F32, low, high).reshape(shape)


def close(got, want, rtol=2e-6, atol=1e-6):
    np.testing.assert_allclose(got, np.asarray(want, np.float64), rtol=rtol, atol=atol)


# ---- loads and stores ------------------------------------------------------------------


def test_load_store_1d_with_a_partial_last_tile(rng):
    a = _data(rng, 29)  # 4 tiles of 8: the last one has 5 elements in the array
    out = poisoned(29, F32)
    kc.launch_tiled(K.load_store_1d, dim=4, inputs=[_arr(a), out], block_dim=64)
    close(out.numpy(), a.astype(np.float64) * 2)


def test_load_store_2d_with_partial_edge_tiles(rng):
    a = _data(rng, (10, 13))  # tiles of 4 x 8: edge tiles stick out in both dimensions
    out = poisoned((10, 13), F32)
    kc.launch_tiled(K.load_store_2d, dim=(3, 2), inputs=[_arr(a), out], block_dim=64)
    close(out.numpy(), a.astype(np.float64) + 1)


def test_load_store_3d(rng):
    a = _data(rng, (4, 5, 8))
    out = poisoned((4, 5, 8), F32)
    kc.launch_tiled(K.load_store_3d, dim=(2, 2, 2), inputs=[_arr(a), out])
    close(out.numpy(), -a.astype(np.float64))


def test_load_store_4d_with_offsets(rng):
    a = _data(rng, (4, 3, 6, 4))
    out = poisoned((4, 3, 6, 4), F32)
    kc.launch_tiled(K.load_store_4d, dim=(2, 2, 2), inputs=[_arr(a), out])
    want = np.full(a.shape, np.nan)
    want[..., 1:3] = a[..., 1:3].astype(np.float64) ** 2  # offset 1 in the last dimension
    got = out.numpy()
    assert np.isnan(got[..., [0, 3]]).all()
    close(got[..., 1:3], want[..., 1:3])


def test_load_store_without_bounds_checks(rng):
    a = _data(rng, (8, 16))
    out = poisoned((8, 16), F32)
    kc.launch_tiled(K.load_unchecked, dim=(2, 2), inputs=[_arr(a), out])
    np.testing.assert_array_equal(out.numpy(), a)


@pytest.mark.parametrize("offset", [(0, 0), (2, 3), (-3, 1), (6, -5)])
def test_load_reads_zero_outside_the_array(rng, offset):
    a = _data(rng, (5, 6))
    out = poisoned((8, 8), F32)
    kc.launch_tiled(K.load_padded, dim=1, inputs=[_arr(a), out, *offset])
    padded = np.zeros((24, 24), F32)
    padded[8:13, 8:14] = a
    i, j = offset[0] + 8, offset[1] + 8
    np.testing.assert_array_equal(out.numpy(), padded[i:i + 8, j:j + 8])


@pytest.mark.parametrize("offset", [(0, 0), (1, 2), (-2, -3)])
def test_store_skips_elements_outside_the_array(rng, offset):
    a = _data(rng, (8, 8))
    out = poisoned((5, 6), F32)
    kc.launch_tiled(K.store_clipped, dim=1, inputs=[_arr(a), out, *offset])
    want = np.full((24, 24), np.nan, F32)
    i, j = offset[0] + 8, offset[1] + 8
    want[i:i + 8, j:j + 8] = a
    np.testing.assert_array_equal(out.numpy(), want[8:13, 8:14])


def test_debug_mode_checks_only_unchecked_tiles(rng, debug_mode):
    a = _data(rng, 29)
    out = poisoned(29, F32)
    kc.launch_tiled(K.load_store_1d, dim=4, inputs=[_arr(a), out])  # partial: no report
    close(out.numpy(), a.astype(np.float64) * 2)
    with pytest.raises(kc.KernelRuntimeError, match=r"out of bounds for shape \(10, 13\)"):
        kc.launch_tiled(K.load_unchecked, dim=(3, 2), inputs=[_arr(_data(rng, (10, 13))),
                                                              poisoned((10, 13), F32)])


@kc.kernel
def read_element(a: kc.array2d(dtype=float), r: int, c: int, out: kc.array(dtype=float)):
    t = kc.tile_load(a, shape=(4, 8))
    out[0] = t[r, c]


def test_debug_mode_checks_each_tile_index(rng, debug_mode):
    a = _data(rng, (4, 8))
    out = poisoned(1, F32)
    kc.launch(read_element, 1, [_arr(a), 3, 7, out])
    assert out.numpy()[0] == a[3, 7]
    kc.launch(read_element, 1, [_arr(a), -1, -8, out])  # negative indices count from the end
    assert out.numpy()[0] == a[-1, -8]
    # (0, 8) is inside the storage (t[1, 0]); a negative index is wrapped once, as numpy does
    for r, c in ((0, 8), (4, 0), (-5, 2)):
        with pytest.raises(kc.KernelRuntimeError, match="test_tiles.py"):
            kc.launch(read_element, 1, [_arr(a), r, c, out])


def test_tile_atomic_add_returns_the_old_values(rng):
    a = _data(rng, (8, 8))
    start = _data(rng, (6, 10))
    acc = _arr(start)
    old = poisoned((4, 4, 8), F32)
    # block (i, j) adds rows 4i..4i+3 of `a` at (4j, 1): blocks (0, j) and (1, j) collide,
    # and the tiles of j = 1 stick out of `acc` by two rows
    kc.launch_tiled(K.atomic_add_tiles, dim=(2, 2), inputs=[_arr(a), acc, old])
    want = start.astype(np.float64)
    for i in range(2):
        want[0:4, 1:9] += a[4 * i:4 * i + 4]
        want[4:6, 1:9] += a[4 * i:4 * i + 2]
    close(acc.numpy(), want, rtol=1e-5, atol=1e-5)
    got = old.numpy()
    for j in range(2):
        rows = 4 if j == 0 else 2
        first, second = got[j, :rows], got[2 + j, :rows]
        base = start[4 * j:4 * j + rows, 1:9]
        after0, after1 = base + a[:rows], base + a[4:4 + rows]  # float32 sums
        # per element, one of the two blocks came first and saw the start value
        assert np.all(((first == base) & (second == after0))
                      | ((second == base) & (first == after1)))
        np.testing.assert_array_equal(got[[j, 2 + j], rows:], 0.0)  # outside: zero


def test_tile_atomic_add_of_a_reduction(rng):
    a = _data(rng, 64)
    total = _arr(np.array([1.5], F32))
    kc.launch_tiled(K.atomic_sum, dim=8, inputs=[_arr(a), total])
    close(total.numpy(), [1.5 + a.astype(np.float64).sum()], rtol=1e-5)


# ---- vector tiles ----------------------------------------------------------------------


def test_vec3_tiles_load_store_map_sum(rng):
    a = _data(rng, (20, 3))  # tiles of 8: the third holds 4 vectors, then zero padding
    out = kc.array(np.full((20, 3), np.nan, F32), dtype=kc.vec3)
    sums = kc.array(np.full((3, 3), np.nan, F32), dtype=kc.vec3)
    lengths = poisoned(20, F32)
    kc.launch_tiled(K.vec3_tiles, dim=3, inputs=[kc.array(a, dtype=kc.vec3), out, sums,
                                                 lengths])
    a64 = a.astype(np.float64)
    m = a64 * 0.5 - [1.0, 0.0, 2.0]
    close(out.numpy(), m)
    close(sums.numpy(), [a64[0:8].sum(0), a64[8:16].sum(0), a64[16:].sum(0)], rtol=1e-5)
    close(lengths.numpy(), np.linalg.norm(m, axis=1), rtol=1e-5)


# ---- maps, reductions, arithmetic ------------------------------------------------------


def test_maps_with_builtins_and_funcs(rng):
    a, b = _data(rng, (4, 8), -2, 2), _data(rng, (4, 8))
    out = poisoned((4, 4, 8), F32)
    kc.launch_tiled(K.maps, dim=1, inputs=[_arr(a), _arr(b), out])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    close(out.numpy(), [np.exp(a64), np.maximum(a64, b64), a64**3, a64 * 0.25 + np.sin(b64)],
          rtol=1e-5)


def test_reductions_whole_and_along_an_axis(rng):
    a = _data(rng, (4, 8))
    whole, where = poisoned(5, F32), poisoned(3, np.int32)
    rows, cols = poisoned((3, 4), F32), poisoned((2, 8), F32)
    kc.launch_tiled(K.reductions, dim=1, inputs=[_arr(a), whole, where, rows,
                                                 cols])
    a64 = a.astype(np.float64)
    close(whole.numpy(), [a64.sum(), a64.min(), a64.max(), a64.max(), np.prod(a64 * 0.5)],
          rtol=2e-5)
    assert where.numpy().tolist() == [np.argmin(a), np.argmax(a), np.argmax(a.T)]
    close(rows.numpy(), [a64.sum(1), a64.max(1), a64.min(1)], rtol=1e-5)
    close(cols.numpy(), [a64.sum(0), a64.min(0)], rtol=1e-5)


def test_reductions_of_a_3d_tile(rng):
    a = _data(rng, (2, 3, 4))
    outs = [poisoned((3, 4), F32), poisoned((2, 4), F32), poisoned((2, 3), F32)]
    kc.launch_tiled(K.reduce_3d, dim=1, inputs=[_arr(a), *outs])
    a64 = a.astype(np.float64)
    for got, want in zip(outs, [a64.sum(0), a64.sum(1), a64.max(2)]):
        close(got.numpy(), want, rtol=1e-5)


def test_arithmetic_between_tiles_and_scalars(rng):
    a, b = _data(rng, (4, 8)), _data(rng, (4, 8))
    out = poisoned((9, 4, 8), F32)
    kc.launch_tiled(K.arithmetic, dim=1, inputs=[_arr(a), _arr(b), out])
    t, u = a.astype(np.float64), b.astype(np.float64)
    close(out.numpy(), [t + u, t - u, t * u, t / u, t * 2, 3 * t - u, 1 / u, u - t, t / 4],
          rtol=1e-6)


def test_int_tiles(rng):
    a = nonzero(rng, 8, np.int32, -50, 50)
    out, total = poisoned(8, np.int32), poisoned(1, np.int32)
    kc.launch_tiled(K.int_tiles, dim=1, inputs=[_arr(a, int), out, total])
    u = a.astype(np.int64) * 3 - np.arange(8)
    assert out.numpy().tolist() == u.tolist() and total.numpy().tolist() == [u.sum()]


# ---- construction, element access, copies ----------------------------------------------


def test_construction_forms():
    out, ints = poisoned((5, 8), F32), poisoned((3, 8), np.int32)
    kc.launch_tiled(K.construct, dim=1, inputs=[out, ints, 1.75])
    close(out.numpy(), [np.zeros(8), np.ones(8), np.full(8, 1.75), np.arange(8) * 1.75,
                        np.arange(0.5, 4.5, 0.5)])
    assert ints.numpy().tolist() == [list(range(8)), list(range(2, 26, 3)), [5] * 8]


def test_element_reads_and_writes(rng):
    a = _data(rng, (4, 8))
    out, info = poisoned((4, 8), F32), poisoned(3, F32)
    kc.launch_tiled(K.element_access, dim=1, inputs=[_arr(a), out, info])
    want = a.copy()
    want[1, 2] = 7.0
    want[2, 3] += F32(10.0)
    want[3, 4] = want[0, 0] + want[0, 1]
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(info.numpy(), [408.0, want[2, 5], F32(7.0) + want[1, 7]])


def test_tile_assign_and_in_place_updates(rng):
    a, b = _data(rng, (4, 8)), _data(rng, (2, 3))
    out = poisoned((4, 8), F32)
    kc.launch_tiled(K.assign_and_inplace, dim=1, inputs=[_arr(a), _arr(b), out])
    t = a.astype(np.float64)
    t[1:3, 4:7] = b
    t[0, 0] = 9.0
    close(out.numpy(), 1.0 + t - 0.25)


# ---- views -----------------------------------------------------------------------------


def test_views_read(rng):
    a, row = _data(rng, (4, 8)), _data(rng, 8)
    outs = [poisoned((8, 4), F32), poisoned((4, 8), F32), poisoned((2, 3), F32),
            poisoned((8, 4), F32), poisoned(16, F32)]
    kc.launch_tiled(K.views_read, dim=1, inputs=[_arr(a), _arr(row), *outs])
    t, r = a.astype(np.float64), row.astype(np.float64)
    wants = [t.T, t + r, t[1:3, 2:5], t.reshape(8, 4) * 2, np.concatenate([t[2], r * 3])]
    for got, want in zip(outs, wants):
        close(got.numpy(), want)


def test_views_written_through(rng):
    a = _data(rng, (4, 8))
    out = poisoned((4, 8), F32)
    kc.launch_tiled(K.views_written, dim=1, inputs=[_arr(a), out])
    want = a.copy()
    want[1, 5], want[3, 2], want[2, 1:3], want[0, 7], want[3, 0] = 100, 200, 300, 400, 500
    np.testing.assert_array_equal(out.numpy(), want)


# ---- reassignment ----------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 3])
def test_reassignment_in_loops_accumulates(rng, n):
    a = _data(rng, (4, 8))
    out = poisoned((8, 8), F32)
    kc.launch_tiled(K.accumulate, dim=1, inputs=[_arr(a), out, n])
    t = a.astype(np.float64)
    close(out.numpy(), np.concatenate([t * sum(0.5**k for k in range(n)), t * n]),
          rtol=1e-6)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 11, 12])
def test_reassigned_view_in_loop_and_branch(rng, n):
    a = _data(rng, (8, 8))
    out = poisoned((8, 8), F32)
    kc.launch_tiled(K.transpose_in_loop, dim=1, inputs=[_arr(a), out, n])
    flips = n + (n > 10)
    np.testing.assert_array_equal(out.numpy(), a.T if flips % 2 else a)


def test_rebinding_in_straight_line_code_keeps_values(rng):
    a = _data(rng, (4, 8))
    out, out2 = poisoned((8, 4), F32), poisoned((8, 4), F32)
    kc.launch_tiled(K.rebind_straight_line, dim=1, inputs=[_arr(a), out, out2])
    close(out.numpy(), np.ones((8, 4)))
    close(out2.numpy(), 2 * a.T.astype(np.float64) + 1)


# ---- tile(x), untile, launch shapes ----------------------------------------------------


def test_tile_and_untile(rng):
    a, v = _data(rng, 6), _data(rng, (6, 3))
    out, shapes = poisoned(6, F32), poisoned(3, np.int32)
    vout = kc.array(np.full((6, 3), np.nan, F32), dtype=kc.vec3)
    kc.launch_tiled(K.tile_untile, dim=6, inputs=[_arr(a), kc.array(v, dtype=kc.vec3), out,
                                                  vout, shapes], block_dim=64)
    close(out.numpy(), 3 * a.astype(np.float64))
    close(vout.numpy(), 3 * v.astype(np.float64))
    assert shapes.numpy().tolist() == [1, 31, 1]


def test_launch_tiled_grids_and_tid():
    out1 = poisoned(5, np.int32)
    kc.launch_tiled(K.grid_1d, dim=np.int64(5), inputs=[out1], block_dim=64)
    assert out1.numpy().tolist() == [0, 10, 20, 30, 40]
    out2, lanes = poisoned((3, 4), np.int32), poisoned((3, 4), np.int32)
    kc.launch_tiled(K.grid_2d, dim=np.array([3, 4]), inputs=[out2, lanes], block_dim=128)
    idx = np.indices((3, 4))
    np.testing.assert_array_equal(out2.numpy(), idx[0] * 100 + idx[1])
    np.testing.assert_array_equal(lanes.numpy(), 1)
    out3 = poisoned((2, 3, 4), np.int32)
    kc.launch_tiled(K.grid_3d, dim=(2, 3, 4), inputs=[out3])
    idx = np.indices((2, 3, 4))
    np.testing.assert_array_equal(out3.numpy(), idx[0] * 10000 + idx[1] * 100 + idx[2])


def test_launch_tiled_rejects_four_grid_dimensions():
    with pytest.raises(kc.KernelError, match="1 to 3 dimensions"):
        kc.launch_tiled(K.grid_3d, dim=(1, 1, 1, 1), inputs=[poisoned((1, 1, 1), np.int32)])


def test_tile_forms_raise_outside_kernels():
    with pytest.raises(RuntimeError, match="inside a kernel"):
        kc.tile_zeros(shape=4)


# ---- autodiff --------------------------------------------------------------------------


def test_tape_over_a_tile_kernel(rng):
    x0 = _data(rng, (3, 8), -2, 2)
    x = kc.array(x0, dtype=float, requires_grad=True)
    y = kc.array(np.full((3, 8), np.nan, F32), dtype=float, requires_grad=True)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch_tiled(K.tile_loss, dim=3, inputs=[x, y, loss])
        kc.launch(K.square_sum, dim=(3, 8), inputs=[y, loss])
    tape.backward(loss=loss)
    t = x0.astype(np.float64)
    s, ds = t * np.sin(t), np.sin(t) + t * np.cos(t)
    close(y.numpy(), 3 * s, rtol=1e-5)
    close(loss.numpy(), [10 * (s * s).sum()], rtol=1e-5)
    close(x.grad.numpy(), 20 * s * ds, rtol=1e-4, atol=1e-5)  # sum s^2 + sum (3 s)^2


def _gradient(kernel, x0, n):
    x = kc.array(x0, dtype=float, requires_grad=True)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch_tiled(kernel, dim=1, inputs=[x, loss, n])
    tape.backward(loss=loss)
    return loss.numpy()[0], x.grad.numpy()


def test_tape_through_loops_views_and_reductions(rng):
    x0 = _data(rng, (2, 4), 0.5, 2)
    value, grad = _gradient(K.tile_grad_mix, x0, 3)
    t = x0.astype(np.float64)
    close(value, 3 * (t * t).sum() + 2 * t.max(), rtol=1e-5)
    want = 6 * t
    want.flat[np.argmax(t)] += 2
    close(grad, want, rtol=1e-5)


def test_tape_through_a_tile_reassigned_in_a_loop(rng):
    x0 = _data(rng, (2, 4), 0.5, 2)
    value, grad = _gradient(K.decaying_loss, x0, 3)
    t, c = x0.astype(np.float64), 1 + 0.25 + 0.0625
    close(value, c * (t * t).sum(), rtol=1e-5)
    close(grad, 2 * c * t, rtol=1e-5)


# ---- matrices and components -----------------------------------------------------------


def test_matrix_tiles_and_components(rng):
    m, v = _data(rng, (8, 2, 2)), _data(rng, (3, 3))
    out = kc.array(np.full((8, 2, 2), np.nan, F32), dtype=kc.mat22)
    total = kc.zeros(1, dtype=kc.mat22)
    parts = poisoned((2, 4), F32)
    kc.launch_tiled(K.matrix_tiles, dim=2, inputs=[kc.array(m, dtype=kc.mat22),
                                                   kc.array(v, dtype=kc.vec3), out, total,
                                                   parts])
    np.testing.assert_array_equal(out.numpy(), m * 2)
    close(total.numpy()[0], m.astype(np.float64).sum(0), rtol=1e-5)
    for i in range(2):
        np.testing.assert_array_equal(parts.numpy()[i], [m[4 * i + 1, 0, 1], m[4 * i + 2, 1, 0],
                                                         m[i, 1, 0], v[i + 1, 2]])


# ---- compile errors: kc.KernelError pinned to file:line:col --------------------------------

ERROR_CASES = [
    (K.e_ndim, "kc.tile_load", "a 1-d tile shape for a 2-d array"),
    (K.e_shapes, "t + u", r"tile shapes differ: \(4, 8\) and \(8, 4\)"),
    (K.e_runtime_shape, "kc.tile_zeros", "must be a constant"),
    (K.e_untile_wide, "kc.untile", "last dimension is the block size"),
    (K.e_func_argument, "scale(t)", "cannot be used as a single value"),
    (K.e_as_scalar, "a[0] = t", "cannot be used as a single value"),
    (K.e_if_tile, "if kc", "cannot be used as a single value"),
    (K.e_func_returns_tile, "return", "cannot be used as a single value", K.make_tile),
    (K.e_too_large, "kc.tile_zeros", "at most 65536"),
    (K.e_store_dtype, "kc.tile_store", "a tile of int32 and an array of float32"),
    (K.e_loop_reshape, "t = kc", "same shape and type"),
    (K.e_transpose_1d, "kc.tile_transpose", "needs a 2-d tile"),
    (K.e_view_offset, "kc.tile_view", "out of bounds"),
    (K.e_offset_count, "kc.tile_load", "offset needs 2"),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c[0].__name__ for c in ERROR_CASES])
def test_compile_error_position(case):
    from tests.test_errors import expected_position

    kernel, at, message = case[:3]
    where = case[3] if len(case) > 3 else kernel
    with pytest.raises(kc.KernelError, match=message) as info:
        kc.compile(kernel)
    text = str(info.value)
    file, line, col = expected_position(where, at)
    assert f"{file}:{line}:{col}:" in text, text
    assert f"in kernel '{kernel.__name__}'" in text
    assert "^" in text.splitlines()[-1]


# ---- CUDA without a GPU: NVRTC, and the CUDA-C run on the host -----------------------------

KERNELS = [k for k in vars(K).values() if isinstance(k, Kernel) and
           not k.__name__.startswith("e_")]


@pytest.mark.parametrize("kernel", KERNELS, ids=[k.__name__ for k in KERNELS])
def test_cuda_c_compiles_with_nvrtc(kernel):
    pytest.importorskip("cuda.bindings.nvrtc")
    compiled = kc.compile(kernel, target="cuda", arch=80)
    assert compiled.format == "cubin" and len(compiled.binary) > 0


def _harness_cases(rng):
    nan = np.nan
    return [
        (K.load_store_2d, (3, 2), [_data(rng, (10, 13)), np.full((10, 13), nan, F32)]),
        (K.reductions, 1, [_data(rng, (4, 8)), np.full(5, nan, F32),
                           np.full(3, -99, np.int32), np.full((3, 4), nan, F32),
                           np.full((2, 8), nan, F32)]),
        (K.maps, 1, [_data(rng, (4, 8), -2, 2), _data(rng, (4, 8)),
                     np.full((4, 4, 8), nan, F32)]),
        (K.views_written, 1, [_data(rng, (4, 8)), np.full((4, 8), nan, F32)]),
        (K.accumulate, 1, [_data(rng, (4, 8)), np.full((8, 8), nan, F32), 3]),
        (K.transpose_in_loop, 1, [_data(rng, (8, 8)), np.full((8, 8), nan, F32), 3]),
        (K.vec3_tiles, 3, [_data(rng, (20, 3)), np.full((20, 3), nan, F32),
                           np.full((3, 3), nan, F32), np.full(20, nan, F32)]),
        (K.matrix_tiles, 2, [_data(rng, (8, 2, 2)), _data(rng, (3, 3)),
                             np.full((8, 2, 2), nan, F32), np.zeros((1, 2, 2), F32),
                             np.full((2, 4), nan, F32)]),
        (K.load_padded, 1, [_data(rng, (5, 6)), np.full((8, 8), nan, F32), -3, 2]),
        (K.store_clipped, 1, [_data(rng, (8, 8)), np.full((5, 6), nan, F32), 2, -1]),
    ]


def test_cuda_c_on_the_host_matches_the_cpu_backend(rng):
    import shutil

    cuda_harness = pytest.importorskip("tests.cuda_harness")
    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    from kernelc.codegen.cuda import CudaOptions, emit_cuda
    from kernelc.codegen.cuda_layout import ArrayArg

    cases = _harness_cases(rng)
    hosts = cuda_harness.build_all([emit_cuda(k.get_ir(), CudaOptions()) for k, _, _ in cases])
    for (kernel, dim, args), host in zip(cases, hosts):
        types = kernel.param_types
        on_host = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
        on_cpu = [kc.array(x.copy(), dtype=t.dtype) if isinstance(x, np.ndarray) else x
                  for x, t in zip(args, types)]
        kc.launch_tiled(kernel, dim=dim, inputs=on_cpu)
        dims = (*((dim,) if isinstance(dim, int) else dim), 1)  # one lane per block
        packed = [ArrayArg(x.ctypes.data, x.shape[:t.ndim], x.strides[:t.ndim])
                  if isinstance(x, np.ndarray) else x for x, t in zip(on_host, types)]
        assert host.launch(dims, packed, block_dim=4, max_blocks=2) is None
        for x, y in zip(on_host, on_cpu):
            if isinstance(x, np.ndarray):
                np.testing.assert_allclose(x, y.numpy().reshape(x.shape), rtol=1e-6,
                                           atol=1e-6, err_msg=kernel.__name__)


# ---- the same program under Warp 1.19 ----------------------------------------------------------


def test_tile_program_agrees_with_warp(tmp_path):
    import importlib.util

    from tests.conftest import run_warp, warp_available

    if not warp_available():
        pytest.skip("warp-lang is not installed")
    rng = np.random.default_rng(3)
    inputs = {"a": _data(rng, (10, 13), -2, 2), "b": _data(rng, (10, 13), -2, 2),
              "s": _data(rng, (4, 8), -2, 2), "row": _data(rng, 8, -2, 2),
              "v": _data(rng, (16, 3), -2, 2)}
    path = tmp_path / "tile_program_kernelc.py"
    path.write_text("import numpy as np\nimport kernelc as wp\n" + K.WARP_PROGRAM)
    spec = importlib.util.spec_from_file_location("tile_program_kernelc", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ours = module.run_all(inputs)
    theirs = run_warp(K.WARP_PROGRAM + "\nresults.update(run_all(inputs))\n", tmp_path,
                      **inputs)
    assert set(ours) == set(theirs)
    for key, want in theirs.items():
        if key == "total":  # float atomics: the order of the blocks may differ
            np.testing.assert_allclose(ours[key], want, rtol=1e-5)
        else:
            np.testing.assert_array_equal(ours[key], want, err_msg=key)


def test_every_tile_form_is_in_the_docs():
    import importlib
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "tiles.md").read_text()
    for module in ("tile_forms", "tile_views", "tile_indexed", "tile_linalg", "tile_fft_scan",
                   "tile_queries", "tile_arange"):
        forms = importlib.import_module(f"kernelc.frontend.{module}").SPECIAL_FORMS
        missing = [name for name in forms if f"`{name}" not in text]
        assert not missing, f"docs/tiles.md does not mention {missing}"
