"""Kernels of the tile linear algebra, FFT, scan and sort tests, and `run_all`, which runs
them all (forward, and backward on a tape) and returns every output.

`wp` is kernelc, or Warp when KERNELC_TILE_MODULE=warp: test_tile_linalg.py runs the same
kernels and inputs in a Warp subprocess and compares. Kernels valid in kernelc only are in
the test file.
"""

import importlib
import os

import numpy as np

wp = importlib.import_module(os.environ.get("KERNELC_TILE_MODULE", "kernelc"))

M, K, N = 4, 6, 5  # matrix product extents
B, FFT_N, DFT_N = 3, 16, 12  # FFT batches and lengths
S = 6  # Cholesky size
R = 4  # right-hand-side columns
SCAN_R, SCAN_C = 3, 7
SORT_N = 37
DOT_N = 9


@wp.kernel
def matmul_kernel(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float),
                  c: wp.array2d(dtype=float), alpha: float, beta: float,
                  acc_out: wp.array2d(dtype=float), new_out: wp.array2d(dtype=float)):
    ta = wp.tile_load(a, shape=(M, K))
    tb = wp.tile_load(b, shape=(K, N))
    tc = wp.tile_load(c, shape=(M, N))
    wp.tile_matmul(ta, tb, tc, alpha, beta)
    wp.tile_store(acc_out, tc)
    wp.tile_store(new_out, wp.tile_matmul(ta, tb, alpha=alpha))


@wp.kernel
def matmul_dtypes_kernel(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64),
                         h: wp.array2d(dtype=wp.float16), f: wp.array2d(dtype=float),
                         out64: wp.array2d(dtype=wp.float64), out32: wp.array2d(dtype=float),
                         out16: wp.array2d(dtype=wp.float16)):
    r64 = wp.tile_zeros(shape=(M, N), dtype=wp.float64)
    wp.tile_matmul(wp.tile_load(a, shape=(M, K)), wp.tile_load(b, shape=(K, N)), r64)
    wp.tile_store(out64, r64)
    th = wp.tile_load(h, shape=(M, K))
    tf = wp.tile_load(f, shape=(K, N))
    r32 = wp.tile_zeros(shape=(M, N), dtype=float)
    wp.tile_matmul(th, tf, r32)  # float16 @ float32, accumulated in float32
    wp.tile_store(out32, r32)
    r16 = wp.tile_zeros(shape=(M, N), dtype=wp.float16)
    wp.tile_matmul(th, tf, r16)  # ... and in float16
    wp.tile_store(out16, r16)


@wp.kernel
def fft_kernel(x: wp.array2d(dtype=wp.vec2f), forward: wp.array2d(dtype=wp.vec2f),
               roundtrip: wp.array2d(dtype=wp.vec2f), y: wp.array2d(dtype=wp.vec2f),
               dft: wp.array2d(dtype=wp.vec2f), dft_roundtrip: wp.array2d(dtype=wp.vec2f),
               z: wp.array3d(dtype=wp.vec2d), z_inverse: wp.array3d(dtype=wp.vec2d),
               z_roundtrip: wp.array3d(dtype=wp.vec2d)):
    t = wp.tile_load(x, shape=(B, FFT_N))
    wp.tile_fft(t)
    wp.tile_store(forward, t)
    wp.tile_ifft(t)
    wp.tile_store(roundtrip, t)
    v = wp.tile_load(y, shape=(B, DFT_N))  # not a power of two: the direct transform
    wp.tile_fft(v)
    wp.tile_store(dft, v)
    wp.tile_ifft(v)
    wp.tile_store(dft_roundtrip, v)
    c = wp.tile_load(z, shape=(2, B, 8))  # a batch of batches, in double precision
    wp.tile_ifft(c)
    wp.tile_store(z_inverse, c)
    wp.tile_fft(c)
    wp.tile_store(z_roundtrip, c)


@wp.kernel
def cholesky_kernel(a: wp.array2d(dtype=wp.float64), y: wp.array(dtype=wp.float64),
                    ys: wp.array2d(dtype=wp.float64), ell: wp.array2d(dtype=wp.float64),
                    x: wp.array(dtype=wp.float64), xs: wp.array2d(dtype=wp.float64),
                    z: wp.array(dtype=wp.float64), w: wp.array2d(dtype=wp.float64),
                    z_inplace: wp.array(dtype=wp.float64),
                    w_inplace: wp.array2d(dtype=wp.float64),
                    diag: wp.array(dtype=wp.float64), a_diag: wp.array2d(dtype=wp.float64),
                    ell_inplace: wp.array2d(dtype=wp.float64),
                    xs_inplace: wp.array2d(dtype=wp.float64)):
    ta = wp.tile_load(a, shape=(S, S))
    factor = wp.tile_cholesky(ta)
    wp.tile_store(ell, factor)
    ty = wp.tile_load(y, shape=S)
    tys = wp.tile_load(ys, shape=(S, R))
    wp.tile_store(x, wp.tile_cholesky_solve(factor, ty))
    wp.tile_store(xs, wp.tile_cholesky_solve(factor, tys))
    wp.tile_store(z, wp.tile_lower_solve(ta, ty))  # the upper triangle of ta is ignored
    wp.tile_store(w, wp.tile_upper_solve(wp.tile_transpose(ta), tys))
    wp.tile_lower_solve_inplace(ta, ty)
    wp.tile_store(z_inplace, ty)
    wp.tile_upper_solve_inplace(wp.tile_transpose(ta), tys)
    wp.tile_store(w_inplace, tys)
    wp.tile_store(a_diag, wp.tile_diag_add(ta, wp.tile_load(diag, shape=S)))
    wp.tile_cholesky_inplace(ta)
    wp.tile_store(ell_inplace, ta)
    rhs = wp.tile_load(ys, shape=(S, R))
    wp.tile_cholesky_solve_inplace(ta, rhs)
    wp.tile_store(xs_inplace, rhs)


@wp.kernel
def cholesky_upper_kernel(a: wp.array2d(dtype=float), y: wp.array2d(dtype=float),
                          u_out: wp.array2d(dtype=float), x: wp.array2d(dtype=float),
                          inplace: wp.array2d(dtype=float), x_inplace: wp.array2d(dtype=float)):
    ta = wp.tile_load(a, shape=(S, S))
    u = wp.tile_cholesky(ta, fill_mode="upper")
    wp.tile_store(u_out, u)
    ty = wp.tile_load(y, shape=(S, R))
    wp.tile_store(x, wp.tile_cholesky_solve(u, ty, fill_mode="upper"))
    wp.tile_cholesky_inplace(ta, fill_mode="upper")
    wp.tile_store(inplace, ta)
    wp.tile_cholesky_solve_inplace(ta, ty, fill_mode="upper")
    wp.tile_store(x_inplace, ty)


@wp.kernel
def grad_kernel(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float),
                ab: wp.array2d(dtype=float), x: wp.array2d(dtype=wp.vec2d),
                fx: wp.array2d(dtype=wp.vec2d), spd: wp.array2d(dtype=wp.float64),
                factor: wp.array2d(dtype=wp.float64), ell: wp.array2d(dtype=wp.float64),
                y: wp.array(dtype=wp.float64), sol: wp.array(dtype=wp.float64)):
    ta = wp.tile_load(a, shape=(M, K))
    wp.tile_store(ab, wp.tile_matmul(ta, wp.tile_load(b, shape=(K, N))))
    t = wp.tile_load(x, shape=(B, FFT_N))
    wp.tile_fft(t)
    wp.tile_store(fx, t)
    wp.tile_store(factor, wp.tile_cholesky(wp.tile_load(spd, shape=(S, S))))
    te = wp.tile_load(ell, shape=(S, S))
    wp.tile_store(sol, wp.tile_cholesky_solve(te, wp.tile_load(y, shape=S)))


@wp.kernel
def scan_kernel(x: wp.array2d(dtype=float), inclusive: wp.array2d(dtype=float),
                exclusive: wp.array2d(dtype=float), maxima: wp.array2d(dtype=float),
                minima: wp.array2d(dtype=float), maxima_t: wp.array2d(dtype=float),
                i: wp.array(dtype=int), u: wp.array(dtype=wp.uint32),
                i_inclusive: wp.array(dtype=int), i_exclusive: wp.array(dtype=int),
                u_maxima: wp.array(dtype=wp.uint32), i_minima: wp.array(dtype=int)):
    t = wp.tile_load(x, shape=(SCAN_R, SCAN_C))
    wp.tile_store(inclusive, wp.tile_scan_inclusive(t))
    wp.tile_store(exclusive, wp.tile_scan_exclusive(t))
    wp.tile_store(maxima, wp.tile_scan_max_inclusive(t))
    wp.tile_store(minima, wp.tile_scan_min_inclusive(t))
    wp.tile_store(maxima_t, wp.tile_scan_max_inclusive(wp.tile_transpose(t)))
    ti = wp.tile_load(i, shape=SORT_N)
    wp.tile_store(i_inclusive, wp.tile_scan_inclusive(ti))
    wp.tile_store(i_exclusive, wp.tile_scan_exclusive(ti))
    wp.tile_store(u_maxima, wp.tile_scan_max_inclusive(wp.tile_load(u, shape=SORT_N)))
    wp.tile_store(i_minima, wp.tile_scan_min_inclusive(ti))


@wp.kernel
def sort_kernel(keys: wp.array(dtype=float), values: wp.array(dtype=int),
                keys2: wp.array2d(dtype=wp.int64), values2: wp.array2d(dtype=wp.vec3)):
    k = wp.tile_load(keys, shape=SORT_N)
    v = wp.tile_load(values, shape=SORT_N)
    wp.tile_sort(k, v)
    wp.tile_store(keys, k)
    wp.tile_store(values, v)
    k2 = wp.tile_load(keys2, shape=(4, 8))
    v2 = wp.tile_load(values2, shape=(4, 8))
    wp.tile_sort(k2, v2)
    wp.tile_store(keys2, k2)
    wp.tile_store(values2, v2)


@wp.kernel
def dot_axpy_kernel(a: wp.array(dtype=float), b: wp.array(dtype=float),
                    va: wp.array(dtype=wp.vec3), vb: wp.array(dtype=wp.vec3),
                    ma: wp.array(dtype=wp.mat22), mb: wp.array(dtype=wp.mat22), alpha: float,
                    dots: wp.array(dtype=float), vdots: wp.array(dtype=float),
                    mdots: wp.array(dtype=float), axpy: wp.array(dtype=float),
                    vaxpy: wp.array(dtype=wp.vec3)):
    ta = wp.tile_load(a, shape=DOT_N)
    tb = wp.tile_load(b, shape=DOT_N)
    tva = wp.tile_load(va, shape=DOT_N)
    tvb = wp.tile_load(vb, shape=DOT_N)
    wp.tile_store(dots, wp.tile_dot(ta, tb))
    wp.tile_store(vdots, wp.tile_dot(tva, tvb))
    wp.tile_store(mdots, wp.tile_dot(wp.tile_load(ma, shape=DOT_N), wp.tile_load(mb, shape=DOT_N)))
    wp.tile_axpy(alpha, ta, tb)
    wp.tile_store(axpy, tb)
    wp.tile_axpy(alpha, tva, tvb)
    wp.tile_store(vaxpy, tvb)


# ---- inputs and runs ----------------------------------------------------------------------

def _nonzero(rng, shape, dtype=np.float32):
    x = rng.uniform(-4.0, 4.0, shape)
    x[np.abs(x) < 0.05] = 0.5
    return x.astype(dtype)


def spd(rng, n: int) -> np.ndarray:
    m = rng.uniform(-1, 1, (n, n))
    return m @ m.T + n * np.eye(n)


def make_inputs(rng) -> dict:
    """Random non-zero inputs of every kernel; a symmetric positive-definite matrix whose
    other triangle holds junk for each Cholesky kernel (only one triangle may be read)."""
    a64, a32 = spd(rng, S), spd(rng, S)
    return {
        "a": _nonzero(rng, (M, K)), "b": _nonzero(rng, (K, N)), "c": _nonzero(rng, (M, N)),
        "alpha": np.float32(0.75), "beta": np.float32(-1.5),
        "a64": _nonzero(rng, (M, K), np.float64), "b64": _nonzero(rng, (K, N), np.float64),
        "h16": _nonzero(rng, (M, K), np.float16),
        "fft_x": _nonzero(rng, (B, FFT_N, 2)), "dft_y": _nonzero(rng, (B, DFT_N, 2)),
        "fft_z": _nonzero(rng, (2, B, 8, 2), np.float64),
        "spd": np.tril(a64) + np.triu(_nonzero(rng, (S, S), np.float64), 1),
        "spd_upper": (np.triu(a32) + np.tril(_nonzero(rng, (S, S), np.float64), -1)).astype(
            np.float32),
        "y": _nonzero(rng, S, np.float64), "ys": _nonzero(rng, (S, R), np.float64),
        "ys32": _nonzero(rng, (S, R)), "diag": _nonzero(rng, S, np.float64),
        "scan_x": _nonzero(rng, (SCAN_R, SCAN_C)),
        "scan_i": rng.integers(-100, 100, SORT_N).astype(np.int32),
        "scan_u": rng.integers(0, 2**32, SORT_N, dtype=np.uint32),
        "sort_keys": rng.permutation(SORT_N).astype(np.float32) - 11.5,  # distinct keys
        "sort_values": np.arange(SORT_N, dtype=np.int32),
        "sort_keys2": ((rng.permutation(32).astype(np.int64) - 7) * 2**40).reshape(4, 8),
        "sort_values2": _nonzero(rng, (4, 8, 3)),
        "dot_a": _nonzero(rng, DOT_N), "dot_b": _nonzero(rng, DOT_N),
        "dot_va": _nonzero(rng, (DOT_N, 3)), "dot_vb": _nonzero(rng, (DOT_N, 3)),
        "dot_ma": _nonzero(rng, (DOT_N, 2, 2)), "dot_mb": _nonzero(rng, (DOT_N, 2, 2)),
        "grad_ab": _nonzero(rng, (M, N)), "grad_fx": _nonzero(rng, (B, FFT_N, 2), np.float64),
        "grad_sol": _nonzero(rng, S, np.float64), "grad_factor": _nonzero(rng, (S, S), np.float64),
        "ell_in": np.linalg.cholesky(spd(rng, S)) + np.triu(_nonzero(rng, (S, S), np.float64), 1),
    }


class _Run:
    """Launches kernels on poisoned outputs and collects every output by name."""

    def __init__(self, inputs: dict):
        self.inputs = inputs
        self.results: dict[str, np.ndarray] = {}
        self.outputs: dict[str, object] = {}

    def arr(self, name: str, dtype, grad: bool = False, reshape=None):
        data = self.inputs[name]
        data = data.reshape(reshape) if reshape is not None else data
        return wp.array(data, dtype=dtype, requires_grad=grad)

    def out(self, name: str, shape, dtype, np_dtype=np.float32, length: int = 0,
            grad: bool = False):
        full = (shape if isinstance(shape, tuple) else (shape,)) + ((length,) if length else ())
        fill = np.nan if np.dtype(np_dtype).kind == "f" else 0x5A
        array = wp.array(np.full(full, fill, np_dtype), dtype=dtype, requires_grad=grad)
        self.outputs[name] = array
        return array

    def launch(self, kernel, *args) -> None:
        wp.launch_tiled(kernel, dim=1, inputs=list(args), block_dim=1)
        for name, array in self.outputs.items():
            self.results[name] = array.numpy()
        self.outputs = {}


def run_all(inputs: dict) -> dict:
    """Runs every kernel on `inputs` (see make_inputs); returns every output."""
    r, f32, f64, v2f, v2d = _Run(inputs), wp.float32, wp.float64, wp.vec2f, wp.vec2d
    r.launch(matmul_kernel, r.arr("a", f32), r.arr("b", f32), r.arr("c", f32),
             float(inputs["alpha"]), float(inputs["beta"]), r.out("mm_acc", (M, N), f32),
             r.out("mm_new", (M, N), f32))
    r.launch(matmul_dtypes_kernel, r.arr("a64", f64), r.arr("b64", f64),
             r.arr("h16", wp.float16), r.arr("b", f32), r.out("mm64", (M, N), f64, np.float64),
             r.out("mm32", (M, N), f32), r.out("mm16", (M, N), wp.float16, np.float16))
    r.launch(fft_kernel, r.arr("fft_x", v2f), r.out("fft", (B, FFT_N), v2f, length=2),
             r.out("fft_roundtrip", (B, FFT_N), v2f, length=2), r.arr("dft_y", v2f),
             r.out("dft", (B, DFT_N), v2f, length=2),
             r.out("dft_roundtrip", (B, DFT_N), v2f, length=2), r.arr("fft_z", v2d),
             r.out("ifft3", (2, B, 8), v2d, np.float64, 2),
             r.out("fft3_roundtrip", (2, B, 8), v2d, np.float64, 2))
    r.launch(cholesky_kernel, r.arr("spd", f64), r.arr("y", f64), r.arr("ys", f64),
             *(r.out(name, shape, f64, np.float64) for name, shape in (
                 ("ell", (S, S)), ("x", S), ("xs", (S, R)), ("z", S), ("w", (S, R)),
                 ("z_inplace", S), ("w_inplace", (S, R)))),
             r.arr("diag", f64), r.out("diag_add", (S, S), f64, np.float64),
             r.out("ell_inplace", (S, S), f64, np.float64),
             r.out("xs_inplace", (S, R), f64, np.float64))
    r.launch(cholesky_upper_kernel, r.arr("spd_upper", f32), r.arr("ys32", f32),
             r.out("upper", (S, S), f32), r.out("upper_x", (S, R), f32),
             r.out("upper_inplace", (S, S), f32), r.out("upper_x_inplace", (S, R), f32))
    r.launch(scan_kernel, r.arr("scan_x", f32),
             *(r.out(name, (SCAN_R, SCAN_C), f32) for name in (
                 "inclusive", "exclusive", "maxima", "minima")),
             r.out("maxima_t", (SCAN_C, SCAN_R), f32), r.arr("scan_i", wp.int32),
             r.arr("scan_u", wp.uint32), r.out("i_inclusive", SORT_N, wp.int32, np.int32),
             r.out("i_exclusive", SORT_N, wp.int32, np.int32),
             r.out("u_maxima", SORT_N, wp.uint32, np.uint32),
             r.out("i_minima", SORT_N, wp.int32, np.int32))
    keys, values = r.arr("sort_keys", f32), r.arr("sort_values", wp.int32)
    keys2, values2 = r.arr("sort_keys2", wp.int64), r.arr("sort_values2", wp.vec3)
    r.launch(sort_kernel, keys, values, keys2, values2)
    for name, array in (("sorted_keys", keys), ("sorted_values", values),
                        ("sorted_keys2", keys2), ("sorted_values2", values2)):
        r.results[name] = array.numpy()
    r.launch(dot_axpy_kernel, r.arr("dot_a", f32), r.arr("dot_b", f32),
             r.arr("dot_va", wp.vec3), r.arr("dot_vb", wp.vec3), r.arr("dot_ma", wp.mat22),
             r.arr("dot_mb", wp.mat22), float(inputs["alpha"]), r.out("dot", 1, f32),
             r.out("vdot", 1, f32), r.out("mdot", 1, f32), r.out("axpy", DOT_N, f32),
             r.out("vaxpy", DOT_N, wp.vec3, length=3))
    _run_gradients(r)
    return r.results


def _run_gradients(r: _Run) -> None:
    """grad_kernel on a tape, then backward from the grad_* inputs as output gradients."""
    f32, f64 = wp.float32, wp.float64
    inputs = {"a": r.arr("a", f32, True), "b": r.arr("b", f32, True),
              "fft_x": wp.array(r.inputs["fft_x"].astype(np.float64), dtype=wp.vec2d,
                                requires_grad=True),
              "spd": r.arr("spd", f64, True), "ell_in": r.arr("ell_in", f64, True),
              "y": r.arr("y", f64, True)}
    outputs = {"grad_ab": r.out("grad_ab", (M, N), f32, grad=True),
               "grad_fx": r.out("grad_fx", (B, FFT_N), wp.vec2d, np.float64, 2, grad=True),
               "grad_factor": r.out("grad_factor", (S, S), f64, np.float64, grad=True),
               "grad_sol": r.out("grad_sol", S, f64, np.float64, grad=True)}
    tape = wp.Tape()
    with tape:
        r.launch(grad_kernel, inputs["a"], inputs["b"], outputs["grad_ab"], inputs["fft_x"],
                 outputs["grad_fx"], inputs["spd"], outputs["grad_factor"], inputs["ell_in"],
                 inputs["y"], outputs["grad_sol"])
    tape.backward(grads={array: wp.array(r.inputs[name], dtype=array.dtype)
                         for name, array in outputs.items()})
    for name, array in inputs.items():
        r.results[f"d_{name}"] = array.grad.numpy()
