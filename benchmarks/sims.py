"""The example simulations' kernels: kernelc beside NumPy, warp-lang and Numba, in one run.

    python benchmarks/sims.py [--quick]

Prints one table: the N-body force kernel of `kernelc.examples.nbody` (accelerations and
potentials, G interactions/s = N^2 / time) and the 5-point wave stencil of
`kernelc.examples.wave` (G points/s and the bytes it must move, against the machine's copy
bandwidth). Every figure is the median of repeated runs after a warm-up; warp-lang (CPU
device) and Numba (`njit(parallel=True)`) rows appear when they are installed.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from _common import median_time, median_times, print_table  # puts this checkout on sys.path

import kernelc as kc
from kernelc.examples import nbody, wave

try:
    import warp as wp

    wp.config.quiet = True  # warp-lang before 1.10
    wp.config.log_level = getattr(wp, "LOG_ERROR", 40)
    wp.init()
except Exception:  # warp-lang is optional
    wp = None

try:
    import numba
except ImportError:  # Numba is optional
    numba = None

EPS2 = 0.0025
C2 = 0.2
FLOPS_PER_INTERACTION = 20  # the usual N-body convention (sqrt and divide counted as 4 each)


# ---- kernelc: the examples' own kernels, plus a copy for the bandwidth limit ---------------

@kc.kernel
def kc_copy(src: kc.array(dtype=float), dst: kc.array(dtype=float)):
    i = kc.tid()
    dst[i] = src[i]


# ---- warp-lang: the same kernels -----------------------------------------------------------

if wp is not None:
    @wp.kernel
    def wp_accelerations(pos: wp.array(dtype=wp.vec3), mass: wp.array(dtype=float),
                         eps2: float, acc: wp.array(dtype=wp.vec3),
                         phi: wp.array(dtype=float)):
        i = wp.tid()
        p = pos[i]
        a = wp.vec3()
        potential = float(0.0)  # noqa: UP018 (Warp rejects a literal changed in a loop)
        for j in range(pos.shape[0]):
            d = pos[j] - p
            inv_r = 1.0 / wp.sqrt(wp.dot(d, d) + eps2)
            m_inv_r = mass[j] * inv_r
            a += d * (m_inv_r * inv_r * inv_r)
            potential -= m_inv_r
        acc[i] = a
        phi[i] = potential + mass[i] / wp.sqrt(eps2)

    @wp.kernel
    def wp_wave_step(u_prev: wp.array2d(dtype=float), u: wp.array2d(dtype=float),
                     u_next: wp.array2d(dtype=float), c2: float):
        i, j = wp.tid()
        n = u.shape[0]
        m = u.shape[1]
        up = u[wp.max(i - 1, 0), j]
        down = u[wp.min(i + 1, n - 1), j]
        left = u[i, wp.max(j - 1, 0)]
        right = u[i, wp.min(j + 1, m - 1)]
        lap = up + down + left + right - 4.0 * u[i, j]
        u_next[i, j] = 2.0 * u[i, j] - u_prev[i, j] + c2 * lap


# ---- Numba ---------------------------------------------------------------------------------

def _numba_nbody(pos, mass, eps2, acc, phi):
    n = pos.shape[0]
    one = np.float32(1.0)
    for i in numba.prange(n):
        px, py, pz = pos[i, 0], pos[i, 1], pos[i, 2]
        ax = ay = az = potential = np.float32(0.0)
        for j in range(n):
            dx, dy, dz = pos[j, 0] - px, pos[j, 1] - py, pos[j, 2] - pz
            inv_r = one / np.sqrt(dx * dx + dy * dy + dz * dz + eps2)
            m_inv_r = mass[j] * inv_r
            s = m_inv_r * inv_r * inv_r
            ax += dx * s
            ay += dy * s
            az += dz * s
            potential -= m_inv_r
        acc[i, 0], acc[i, 1], acc[i, 2] = ax, ay, az
        phi[i] = potential + mass[i] / np.sqrt(eps2)


def _numba_wave(u_prev, u, u_next, c2):
    n, m = u.shape
    for i in numba.prange(n):
        for j in range(m):
            lap = (u[max(i - 1, 0), j] + u[min(i + 1, n - 1), j] + u[i, max(j - 1, 0)]
                   + u[i, min(j + 1, m - 1)] - np.float32(4.0) * u[i, j])
            u_next[i, j] = np.float32(2.0) * u[i, j] - u_prev[i, j] + c2 * lap


if numba is not None:
    nb_nbody = numba.njit(parallel=True)(_numba_nbody)
    nb_nbody_fast = numba.njit(parallel=True, fastmath=True)(_numba_nbody)
    nb_wave = numba.njit(parallel=True)(_numba_wave)


# ---- NumPy ---------------------------------------------------------------------------------

def np_nbody(pos, mass, eps2, acc, phi, chunk=256):
    """All pairs, `chunk` rows of the N x N interaction matrix at a time (float32)."""
    self_term = mass / np.sqrt(eps2)
    for start in range(0, len(pos), chunk):
        d = pos[None, :, :] - pos[start:start + chunk, None, :]  # (chunk, N, 3)
        inv_r = 1.0 / np.sqrt(np.einsum("ijk,ijk->ij", d, d) + eps2)
        m_inv_r = mass[None, :] * inv_r
        acc[start:start + chunk] = np.einsum("ijk,ij->ik", d, m_inv_r * inv_r * inv_r)
        phi[start:start + chunk] = self_term[start:start + chunk] - m_inv_r.sum(axis=1)


def np_wave(u_prev, u, u_next, c2):
    """The stencil with slices; borders mirror the edge cell (as in the kernel)."""
    lap = u_next  # build the Laplacian in place, without temporaries
    np.multiply(u, -4.0, out=lap)
    lap[1:] += u[:-1]
    lap[0] += u[0]
    lap[:-1] += u[1:]
    lap[-1] += u[-1]
    lap[:, 1:] += u[:, :-1]
    lap[:, 0] += u[:, 0]
    lap[:, :-1] += u[:, 1:]
    lap[:, -1] += u[:, -1]
    lap *= c2
    lap += u
    lap += u
    lap -= u_prev


# ---- measurements --------------------------------------------------------------------------

def copy_bandwidth(n: int) -> float:
    """GB/s of the kernelc copy kernel on all threads (8 bytes moved per element)."""
    a, b = kc.array(np.random.rand(n).astype(np.float32)), kc.zeros(n, dtype=float)
    return 8 * n / median_time(lambda: kc.launch(kc_copy, n, [a, b]), 5) / 1e9


def nbody_rows(n: int, repeat: int) -> list[tuple]:
    pos, _, mass = nbody.plummer(n)
    eps2 = np.float32(EPS2)
    ref_acc, ref_phi = np.empty((n, 3), np.float32), np.empty(n, np.float32)
    fns, results = {}, {}  # system -> function to time; system -> (acc, phi) read afterwards
    fns["numpy (chunked)"] = lambda: np_nbody(pos, mass, eps2, ref_acc, ref_phi)
    results["numpy (chunked)"] = lambda: (ref_acc, ref_phi)
    x, m = kc.array(pos, dtype=kc.vec3), kc.array(mass)
    acc, phi = kc.zeros(n, dtype=kc.vec3), kc.zeros(n, dtype=float)
    name = f"kernelc ({kc.config.num_threads} threads)"
    fns[name] = lambda: kc.launch(nbody.accelerations, n, [x, m, EPS2, acc, phi])
    results[name] = lambda: (acc.numpy(), phi.numpy())
    if wp is not None:
        wx, wm = wp.array(pos, dtype=wp.vec3, device="cpu"), wp.array(mass, device="cpu")
        wacc = wp.zeros(n, dtype=wp.vec3, device="cpu")
        wphi = wp.zeros(n, dtype=float, device="cpu")
        fns["warp (cpu)"] = lambda: wp.launch(wp_accelerations, n, [wx, wm, EPS2, wacc, wphi],
                                              device="cpu")
        results["warp (cpu)"] = lambda: (wacc.numpy(), wphi.numpy())
    if numba is not None:
        for name, fn in (("numba parallel", nb_nbody), ("numba parallel fastmath", nb_nbody_fast)):
            out = np.empty((n, 3), np.float32), np.empty(n, np.float32)
            fns[name] = lambda fn=fn, out=out: fn(pos, mass, eps2, *out)
            results[name] = lambda out=out: out

    rows = []
    for system, seconds in median_times(fns, repeat).items():
        got_acc, got_phi = results[system]()
        err = max(np.abs(got_acc - ref_acc).max() / np.abs(ref_acc).max(),
                  np.abs(got_phi - ref_phi).max() / np.abs(ref_phi).max())
        rate = n * n / seconds / 1e9
        rows.append(("" if rows else f"nbody forces N={n}", system,
                     f"{rate:.2f} G interactions/s",
                     f"{rate * FLOPS_PER_INTERACTION:.1f} GFLOP/s; err {err:.0e}"))
    return rows


def wave_rows(size: int, repeat: int, bandwidth: float) -> list[tuple]:
    shape = (size, size)
    rng = np.random.default_rng(0)
    u_prev, u = (rng.random(shape, dtype=np.float32) for _ in range(2))
    c2 = np.float32(C2)
    ref = np.empty_like(u)
    fns, results = {"numpy (slices)": lambda: np_wave(u_prev, u, ref, c2)}, {}
    results["numpy (slices)"] = lambda: ref
    a, b, out = kc.array(u_prev), kc.array(u), kc.zeros(shape, dtype=float)
    name = f"kernelc ({kc.config.num_threads} threads)"
    fns[name] = lambda: kc.launch(wave.wave_step, shape, [a, b, out, C2])
    results[name] = out.numpy
    if wp is not None:
        wa, wb = wp.array(u_prev, device="cpu"), wp.array(u, device="cpu")
        wout = wp.zeros(shape, dtype=float, device="cpu")
        fns["warp (cpu)"] = lambda: wp.launch(wp_wave_step, shape, [wa, wb, wout, C2],
                                              device="cpu")
        results["warp (cpu)"] = wout.numpy
    if numba is not None:
        nout = np.empty_like(u)
        fns["numba parallel"] = lambda: nb_wave(u_prev, u, nout, c2)
        results["numba parallel"] = lambda: nout

    rows = []
    for system, seconds in median_times(fns, repeat).items():
        err = np.abs(results[system]() - ref).max()
        rate = size * size / seconds / 1e9
        gbs = 12 * rate  # read u and u_prev, write u_next: 12 bytes per point at least
        rows.append(("" if rows else f"wave stencil {size}x{size}", system,
                     f"{rate:.2f} G points/s",
                     f"{gbs:.1f} GB/s = {gbs / bandwidth:.0%} of copy; err {err:.0e}"))
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    args = p.parse_args()
    bandwidth = copy_bandwidth(10_000_000 if args.quick else 50_000_000)
    rows = [("benchmark", "system", "result", "notes"),
            ("copy bandwidth (limit)", "kernelc copy kernel", f"{bandwidth:.1f} GB/s",
             "8 bytes per element")]
    for n, repeat in ((2048, 3),) if args.quick else ((4096, 5), (8192, 3)):
        rows += nbody_rows(n, repeat)
    for size, repeat in ((1024, 5),) if args.quick else ((2048, 9), (4096, 5)):
        rows += wave_rows(size, repeat, bandwidth)
    versions = [f"kernelc {kc.__version__}", f"numpy {np.__version__}",
                f"warp {wp.__version__}" if wp is not None else "warp-lang not installed",
                f"numba {numba.__version__}" if numba is not None else "numba not installed"]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores (load average {load}); " + ", ".join(versions))
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
