"""Tile matrix products, Cholesky and triangular solves, FFTs, scans, sorts, dot and axpy.

The kernels of tests/tile_linalg_kernels.py run once per session (`TK.run_all`, outputs
poisoned first, random non-zero inputs) and each test checks a part of what they wrote
against NumPy in float64; gradients come from a kc.Tape and are checked against their
closed forms. The same kernels and inputs also run under Warp 1.19 (where installed) and
must agree; their CUDA-C must compile with NVRTC; and mistakes give positioned errors.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
from tests import tile_linalg_kernels as TK
from tests.conftest import poisoned, run_warp
from tests.tile_linalg_kernels import FFT_N, SORT_N, K, M, N, S

ROOT = Path(__file__).resolve().parents[1]
F32 = dict(rtol=2e-5, atol=2e-5)
F64 = dict(rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def data():
    inputs = TK.make_inputs(np.random.default_rng(20261101))
    return inputs, TK.run_all(inputs)


def as_complex(a: np.ndarray) -> np.ndarray:
    return a[..., 0].astype(np.float64) + 1j * a[..., 1]


def f64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64)


# ---- matrix products ----------------------------------------------------------------------

def test_matmul_accumulates_and_returns(data):
    i, r = data
    product = f64(i["a"]) @ i["b"]
    alpha, beta = float(i["alpha"]), float(i["beta"])
    np.testing.assert_allclose(r["mm_acc"], alpha * product + beta * i["c"], **F32)
    np.testing.assert_allclose(r["mm_new"], alpha * product, **F32)


def test_matmul_sums_k_in_ascending_order_with_fma(data):
    # Warp's scalar GEMM: acc = fma(a[i, k], b[k, j], acc) for k = 0, 1, ... from zero, then
    # alpha * acc. A float32 product is exact in float64, so this emulates the fma.
    i, r = data
    acc = np.zeros((M, N), np.float32)
    for k in range(K):
        acc = (f64(i["a"][:, k:k + 1]) * i["b"][k] + acc).astype(np.float32)
    assert r["mm_new"].tobytes() == (i["alpha"] * acc).tobytes()


def test_matmul_never_reads_out_when_beta_is_zero(data):
    i, _ = data
    nan = kc.array(np.full((M, N), np.nan, np.float32))  # as in BLAS: NaN cannot leak
    acc, new = poisoned((M, N), np.float32), poisoned((M, N), np.float32)
    kc.launch_tiled(TK.matmul_kernel, dim=1, inputs=[kc.array(i["a"]), kc.array(i["b"]), nan,
                                                     2.0, 0.0, acc, new])
    np.testing.assert_allclose(acc.numpy(), 2.0 * (f64(i["a"]) @ i["b"]), **F32)


def test_matmul_precisions(data):
    i, r = data
    np.testing.assert_allclose(r["mm64"], i["a64"] @ i["b64"], **F64)
    mixed = f64(i["h16"]) @ i["b"]  # float16 @ float32, accumulated in float32 ...
    np.testing.assert_allclose(r["mm32"], mixed, **F32)
    np.testing.assert_allclose(f64(r["mm16"]), mixed, rtol=1e-2, atol=0.1)  # ... in float16


@kc.kernel
def matmul_views_kernel(a: kc.array2d(dtype=float), b: kc.array2d(dtype=float),
                        out: kc.array2d(dtype=float), big: kc.array2d(dtype=float)):
    # a.T @ b.T through transposed views, and a product written into part of a larger tile
    # (beta=0: that part's ones are not read)
    ta = kc.tile_load(a, shape=(K, M))
    tb = kc.tile_load(b, shape=(N, K))
    kc.tile_store(out, kc.tile_matmul(kc.tile_transpose(ta), kc.tile_transpose(tb), 2.0))
    acc = kc.tile_ones(shape=(M + 2, N + 1), dtype=float)
    part = kc.tile_view(acc, offset=(1, 0), shape=(M, N))
    kc.tile_matmul(kc.tile_transpose(ta), kc.tile_transpose(tb), out=part, beta=0.0,
                   precision="tf32")
    kc.tile_store(big, acc)


def test_matmul_of_views(data):
    i, _ = data
    a, b = i["a"].reshape(K, M), i["b"].reshape(N, K)
    out, big = poisoned((M, N), np.float32), poisoned((M + 2, N + 1), np.float32)
    kc.launch_tiled(matmul_views_kernel, dim=1, inputs=[kc.array(a), kc.array(b), out, big])
    product = f64(a.T) @ b.T
    np.testing.assert_allclose(out.numpy(), 2.0 * product, **F32)
    want = np.ones((M + 2, N + 1))
    want[1:M + 1, :N] = product
    np.testing.assert_allclose(big.numpy(), want, **F32)


# ---- FFT ----------------------------------------------------------------------------------

def test_fft_matches_numpy_and_ifft_inverts_it_unnormalised(data):
    i, r = data
    z = as_complex(i["fft_x"])
    scale = np.abs(z).sum(axis=-1).max()  # the largest possible bin
    np.testing.assert_allclose(as_complex(r["fft"]), np.fft.fft(z), atol=2e-7 * scale)
    np.testing.assert_allclose(as_complex(r["fft_roundtrip"]), FFT_N * z, atol=4e-7 * scale)


def test_fft_of_other_lengths_uses_the_direct_transform(data):
    i, r = data
    z = as_complex(i["dft_y"])
    n = z.shape[-1]
    np.testing.assert_allclose(as_complex(r["dft"]), np.fft.fft(z), atol=2e-5)
    np.testing.assert_allclose(as_complex(r["dft_roundtrip"]), n * z, atol=4e-5)


def test_ifft_of_a_3d_tile_in_double_precision(data):
    i, r = data
    z = as_complex(i["fft_z"])
    n = z.shape[-1]
    np.testing.assert_allclose(as_complex(r["ifft3"]), np.fft.ifft(z) * n, atol=1e-13)
    np.testing.assert_allclose(as_complex(r["fft3_roundtrip"]), n * z, atol=1e-13)


# ---- Cholesky and triangular solves -------------------------------------------------------

def test_cholesky_and_solves(data):
    i, r = data
    a = np.tril(i["spd"]) + np.tril(i["spd"], -1).T  # the upper triangle given is junk
    ell, low = np.linalg.cholesky(a), np.tril(i["spd"])
    y, ys = i["y"], i["ys"]
    np.testing.assert_allclose(r["ell"], ell, **F64)  # with a zero upper triangle
    np.testing.assert_allclose(r["x"], np.linalg.solve(a, y), **F64)
    np.testing.assert_allclose(r["xs"], np.linalg.solve(a, ys), **F64)
    np.testing.assert_allclose(r["z"], np.linalg.solve(low, y), **F64)
    np.testing.assert_allclose(r["w"], np.linalg.solve(low.T, ys), **F64)
    np.testing.assert_allclose(r["z_inplace"], np.linalg.solve(low, y), **F64)
    np.testing.assert_allclose(r["w_inplace"], np.linalg.solve(low.T, ys), **F64)
    np.testing.assert_allclose(r["ell_inplace"], ell, **F64)
    np.testing.assert_allclose(r["xs_inplace"], np.linalg.solve(a, ys), **F64)
    np.testing.assert_array_equal(r["diag_add"], i["spd"] + np.diag(i["diag"]))


def test_upper_cholesky(data):
    i, r = data
    up = f64(i["spd_upper"])
    a = np.triu(up) + np.triu(up, 1).T  # the lower triangle given is junk
    u = np.linalg.cholesky(a).T
    x = np.linalg.solve(a, i["ys32"])
    tol = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r["upper"], u, **tol)  # with a zero lower triangle
    np.testing.assert_allclose(r["upper_x"], x, **tol)
    np.testing.assert_allclose(r["upper_inplace"], u, **tol)
    np.testing.assert_allclose(r["upper_x_inplace"], x, **tol)


# ---- gradients ----------------------------------------------------------------------------

def test_matmul_gradient(data):
    i, r = data
    w = f64(i["grad_ab"])
    np.testing.assert_allclose(r["d_a"], w @ i["b"].T, **F32)
    np.testing.assert_allclose(r["d_b"], i["a"].T @ w, **F32)


def test_fft_gradient_is_the_unnormalised_inverse(data):
    i, r = data
    want = np.fft.ifft(as_complex(i["grad_fx"])) * FFT_N
    np.testing.assert_allclose(as_complex(r["d_fft_x"]), want, atol=1e-12)


def test_cholesky_solve_gradient(data):
    i, r = data
    ell = np.tril(i["ell_in"])  # the strict upper triangle given is junk, never read
    a = ell @ ell.T
    x, v = np.linalg.solve(a, i["y"]), np.linalg.solve(a, i["grad_sol"])
    np.testing.assert_allclose(r["d_y"], v, **F64)
    # x = (L L^T)^-1 y: dx = -A^-1 (dL L^T + L dL^T) x, so dL = -(v x^T + x v^T) L on the
    # lower triangle, zero above it.
    np.testing.assert_allclose(r["d_ell_in"], -np.tril((np.outer(v, x) + np.outer(x, v)) @ ell),
                               **F64)


def _cholesky_loss(lower: np.ndarray, weights: np.ndarray) -> float:
    a = np.tril(lower) + np.tril(lower, -1).T
    return float((weights * np.linalg.cholesky(a)).sum())


def test_cholesky_gradient_against_finite_differences(data):
    # Only A's lower triangle is read, so an entry below the diagonal stands for both
    # a[i, j] and a[j, i]; entries above it get no gradient.
    i, r = data
    a, w, h = i["spd"], i["grad_factor"], 1e-6
    want = np.zeros((S, S))
    for row in range(S):
        for col in range(row + 1):
            step = np.zeros((S, S))
            step[row, col] = h
            want[row, col] = (_cholesky_loss(a + step, w) - _cholesky_loss(a - step, w)) / (2 * h)
    np.testing.assert_allclose(r["d_spd"], want, rtol=1e-7, atol=1e-8)


# ---- scans, sort, dot and axpy ------------------------------------------------------------

def test_scans_run_over_the_row_major_sequence(data):
    i, r = data
    flat = i["scan_x"].ravel()
    sums = np.cumsum(flat, dtype=np.float32)  # sequential float32 sums, as the kernel's
    np.testing.assert_array_equal(r["inclusive"].ravel(), sums)
    np.testing.assert_array_equal(r["exclusive"].ravel(), np.concatenate([[0], sums[:-1]]))
    np.testing.assert_array_equal(r["maxima"].ravel(), np.maximum.accumulate(flat))
    np.testing.assert_array_equal(r["minima"].ravel(), np.minimum.accumulate(flat))
    np.testing.assert_array_equal(r["maxima_t"].ravel(),
                                  np.maximum.accumulate(i["scan_x"].T.ravel()))


def test_integer_scans(data):
    i, r = data
    x, u = i["scan_i"], i["scan_u"]
    np.testing.assert_array_equal(r["i_inclusive"], np.cumsum(x))
    np.testing.assert_array_equal(r["i_exclusive"], np.concatenate([[0], np.cumsum(x)[:-1]]))
    np.testing.assert_array_equal(r["u_maxima"], np.maximum.accumulate(u))
    np.testing.assert_array_equal(r["i_minima"], np.minimum.accumulate(x))


def test_sort_carries_values(data):
    i, r = data
    order = np.argsort(i["sort_keys"])
    np.testing.assert_array_equal(r["sorted_keys"], i["sort_keys"][order])
    np.testing.assert_array_equal(r["sorted_values"], i["sort_values"][order])
    order2 = np.argsort(i["sort_keys2"].ravel())  # 2-d tiles: their row-major sequence
    np.testing.assert_array_equal(r["sorted_keys2"].ravel(), i["sort_keys2"].ravel()[order2])
    np.testing.assert_array_equal(r["sorted_values2"].reshape(-1, 3),
                                  i["sort_values2"].reshape(-1, 3)[order2])


def test_sort_keeps_equal_keys_in_order(data):
    i, _ = data
    keys = np.random.default_rng(3).integers(-5, 6, SORT_N).astype(np.float32)
    values = np.arange(SORT_N, dtype=np.int32)
    tk, tv = kc.array(keys), kc.array(values)
    kc.launch_tiled(TK.sort_kernel, dim=1, inputs=[tk, tv, kc.array(i["sort_keys2"],
                                                   dtype=kc.int64),
                                                   kc.array(i["sort_values2"], dtype=kc.vec3)])
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(tk.numpy(), keys[order])
    np.testing.assert_array_equal(tv.numpy(), order)


def test_dot_and_axpy(data):
    i, r = data
    alpha = i["alpha"]
    np.testing.assert_allclose(r["dot"], [f64(i["dot_a"]) @ i["dot_b"]], rtol=1e-5)
    np.testing.assert_allclose(r["vdot"], [(f64(i["dot_va"]) * i["dot_vb"]).sum()], rtol=1e-5)
    np.testing.assert_allclose(r["mdot"], [(f64(i["dot_ma"]) * i["dot_mb"]).sum()], rtol=1e-5)
    np.testing.assert_array_equal(r["axpy"], i["dot_b"] + alpha * i["dot_a"])
    np.testing.assert_array_equal(r["vaxpy"], i["dot_vb"] + alpha * i["dot_va"])


# ---- Warp, NVRTC, errors ------------------------------------------------------------------

_WARP_DRIVER = f"""
import os
import sys

os.environ["KERNELC_TILE_MODULE"] = "warp"
sys.path.insert(0, {str(ROOT)!r})
from tests import tile_linalg_kernels

results.update(tile_linalg_kernels.run_all(inputs))
"""

# Outputs Warp computes in the same order as kernelc: they must agree bit for bit.
_BITWISE = ("mm_acc", "mm_new", "mm64", "mm32", "mm16", "inclusive", "exclusive", "maxima",
            "minima", "maxima_t", "i_inclusive", "i_exclusive", "u_maxima", "i_minima",
            "sorted_keys", "sorted_values", "sorted_keys2", "sorted_values2", "diag_add",
            "axpy", "vaxpy")


# Warp 1.19 has no adjoint for tile_cholesky_solve (tile_solve.h: "MISSINGADJOINT"): its
# gradients through the solve are zero. kernelc's are checked against closed forms above.
_WARP_ZERO = ("d_ell_in", "d_y")


def test_results_and_gradients_match_warp(data, tmp_path):
    inputs, mine = data
    theirs = run_warp(_WARP_DRIVER, tmp_path, **inputs)
    assert set(theirs) == set(mine)
    for name, want in theirs.items():
        got = mine[name]
        if name in _WARP_ZERO:
            assert not want.any(), name  # if this fails, Warp has gained the adjoint
            continue
        if name in _BITWISE:
            assert got.tobytes() == want.tobytes(), name
            continue
        # Warp's FFT updates twiddles by recurrence (kernelc computes each one), and
        # rounding differs in the last bits elsewhere: agree to the dtype's precision,
        # relative to the field's largest value.
        eps = 1e-12 if want.dtype == np.float64 else 2e-6
        scale = max(float(np.abs(want.astype(np.float64)).max()), 1.0)
        np.testing.assert_allclose(got, want, rtol=0, atol=eps * scale, err_msg=name)


@kc.kernel
def sort_small_kernel(keys: kc.array(dtype=float), values: kc.array(dtype=kc.vec2)):
    k = kc.tile_load(keys, shape=8)
    v = kc.tile_load(values, shape=8)
    kc.tile_sort(k, v)
    kc.tile_store(keys, k)
    kc.tile_store(values, v)


@pytest.mark.parametrize("kernel", [TK.grad_kernel, TK.scan_kernel, sort_small_kernel],
                         ids=lambda k: k.__name__)
def test_cuda_c_compiles_with_nvrtc(kernel):
    pytest.importorskip("cuda.bindings.nvrtc")
    compiled = kc.compile(kernel, target="cuda", arch=80)
    assert compiled.format == "cubin" and compiled.binary[:4] == b"\x7fELF"


# Mistakes the compiler must report, each at the line marked `# error`.
@kc.kernel
def bad_matmul_shapes(a: kc.array2d(dtype=float)):
    ta = kc.tile_load(a, shape=(M, K))
    kc.tile_matmul(ta, ta)  # error


@kc.kernel
def bad_matmul_precision(a: kc.array2d(dtype=float)):
    ta = kc.tile_load(a, shape=(M, K))
    out = kc.tile_zeros(shape=(M, M), dtype=float)
    kc.tile_matmul(ta, kc.tile_transpose(ta), out, 1.0, 1.0, "tf33")  # error


@kc.kernel
def bad_matmul_out(a: kc.array2d(dtype=float)):
    ta = kc.tile_load(a, shape=(M, K))
    out = kc.tile_zeros(shape=(M, K), dtype=float)
    kc.tile_matmul(ta, kc.tile_transpose(ta), out)  # error


@kc.kernel
def bad_fft_dtype(a: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(2, 8))
    kc.tile_fft(t)  # error


@kc.kernel
def bad_fft_rank(a: kc.array(dtype=kc.vec2f)):
    t = kc.tile_load(a, shape=8)
    kc.tile_ifft(t)  # error


@kc.kernel
def bad_cholesky_shape(a: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(M, K))
    kc.tile_cholesky(t)  # error


@kc.kernel
def bad_solve_rhs(a: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(M, M))
    kc.tile_lower_solve(t, kc.tile_load(a, shape=(K, 1)))  # error


@kc.kernel
def bad_sort_shapes(a: kc.array(dtype=float)):
    kc.tile_sort(kc.tile_load(a, shape=8), kc.tile_load(a, shape=4))  # error


@pytest.mark.parametrize("kernel, message", [
    (bad_matmul_shapes, "tile_matmul(): shapes (4, 6) and (4, 6) do not agree"),
    (bad_matmul_precision, "precision must be the string literal 'default' or 'tf32'"),
    (bad_matmul_out, "tile_matmul(): shapes (4, 6) @ (6, 4) -> (4, 6) do not agree"),
    (bad_fft_dtype, "tile_fft() needs a tile of vec2f or vec2d"),
    (bad_fft_rank, "tile_ifft() needs a tile of at least 2 dimensions"),
    (bad_cholesky_shape, "tile_cholesky() needs a square tile, got shape (4, 6)"),
    (bad_solve_rhs, "tile_lower_solve(): the right-hand side has 6 rows, the matrix 4"),
    (bad_sort_shapes, "tile_sort(): keys of shape (8,) and values of shape (4,)"),
], ids=lambda x: getattr(x, "__name__", ""))
def test_mistakes_are_reported_at_their_line(kernel, message):
    lines, first = inspect.getsourcelines(kernel.func)
    line = first + next(k for k, text in enumerate(lines) if "# error" in text)
    with pytest.raises(kc.KernelError) as err:
        kc.compile(kernel, target="cpu")
    text = str(err.value)
    assert message in text, text
    assert f"test_tile_linalg.py:{line}:5:" in text, text


@kc.kernel
def bf16_matmul(a: kc.array2d(dtype=kc.bfloat16), b: kc.array2d(dtype=kc.bfloat16),
                c: kc.array2d(dtype=float)):
    acc = kc.tile_zeros(shape=(4, 3), dtype=float)
    kc.tile_matmul(kc.tile_load(a, shape=(4, 5)), kc.tile_load(b, shape=(5, 3)), acc)
    kc.tile_store(c, acc)


def test_matmul_takes_bfloat16_inputs_with_a_wider_accumulator():
    rng = np.random.default_rng(7)
    # values bfloat16 holds exactly, so the float32 result is exact too
    a = rng.integers(-8, 8, (4, 5)).astype(np.float32) / 4
    b = rng.integers(-8, 8, (5, 3)).astype(np.float32) / 4
    c = poisoned((4, 3), np.float32)
    kc.launch_tiled(bf16_matmul, dim=[1], block_dim=16, inputs=[
        kc.array(a, dtype=kc.bfloat16), kc.array(b, dtype=kc.bfloat16), c])
    np.testing.assert_array_equal(c.numpy(), a @ b)


@pytest.mark.parametrize("dtype, message", [
    ("kc.vec2f", "does not support complex tiles"),
    ("kc.bfloat16", "does not support a bfloat16 'out' tile"),
])
def test_matmul_rejects_complex_and_bfloat16_accumulators(tmp_path, dtype, message):
    from tests.conftest import kernel_in_file

    k = kernel_in_file(tmp_path, "bad_matmul", f"a: kc.array2d(dtype={dtype})",
                       "t = kc.tile_load(a, shape=(2, 2))\n    c = kc.tile_matmul(t, t)")
    with pytest.raises(kc.KernelError, match=message):
        kc.compile(k)
