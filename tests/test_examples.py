"""Smoke tests of the bundled examples: a few frames each, checking physics, not just exit."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import kernelc as kc
from kernelc.examples import inc_loop, mandelbrot, saxpy, spectral, wave


def test_wave_conserves_mass_and_stays_finite():
    result = wave.run(size=64, frames=40, verbose=False)
    mass = np.array(result["mass"])
    assert np.isfinite(result["field"]).all()
    # Reflecting borders: the discrete Laplacian sums to zero, so the sum of u is constant.
    assert np.allclose(mass, mass[0], rtol=1e-4, atol=1e-3)
    assert np.abs(result["field"]).max() < 1.0  # the splash spreads out; nothing blows up


def test_spectral_heat_matches_numpy_fft():
    frames = 12
    result = spectral.run(frames=frames, verbose=False)
    want = result["start"].astype(np.float64)
    for _ in range(frames):  # the same exact decay per step, with NumPy's 2-D FFT
        want = np.real(np.fft.ifft2(np.fft.fft2(want) * result["decay"]))
    np.testing.assert_allclose(result["final"], want, atol=2e-5)
    assert abs(result["final"].mean() - result["start"].mean()) < 1e-5  # mode 0 never decays
    assert result["final"].max() < result["start"].max()  # the spots spread out


def test_spectral_kernels_compile_for_cuda():
    pytest.importorskip("cuda.bindings.nvrtc")
    for kernel in (spectral.rows_forward, spectral.columns_decay, spectral.rows_inverse):
        assert kc.compile(kernel, target="cuda", arch=80).format == "cubin"


def test_inc_loop_counts_every_iteration():
    assert inc_loop.run(n=4096, verbose=False) == 3000.0


def test_saxpy_matches_numpy():
    assert saxpy.run(n=1 << 16, frames=3, verbose=False) < 1e-5


def test_mandelbrot_escape_times():
    image = mandelbrot.run(height=48, width=64, max_iter=50, verbose=False)
    assert image.shape == (48, 64)
    assert image.min() >= 0.0 and image.max() == 1.0  # points inside the set never escape
    assert image[24, 0] < 0.1  # x = -2.25 lies outside the set: escapes at once


def test_examples_listing_and_cli(tmp_path):
    out = subprocess.run([sys.executable, "-m", "kernelc.examples"], capture_output=True,
                         text=True, check=True).stdout
    for name in ("wave", "inc_loop", "saxpy", "mandelbrot", "spectral"):
        assert name in out
    run = subprocess.run([sys.executable, "-m", "kernelc.examples", "wave", "--num-frames", "3"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "took" in run.stdout
