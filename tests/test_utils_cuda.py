"""`kc.utils` on the CUDA backend: every utility kernel through NVRTC, scan, sorts, run-length
encoding and the reductions through the g++ host harness against NumPy, and on a GPU when
there is one."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import kernelc as kc
from kernelc import utils
from kernelc.utils import _common, reduce, scan, segmented_sort, sort
from tests.conftest import nonzero, poisoned
from tests.test_utils import assert_scan, random_keys, sort_pairs
from tests.test_utils_segments import (
    assert_runs,
    random_runs,
    random_segments,
    segments_reference,
    sort_segments,
)

# ---- CUDA: NVRTC and the host harness ---------------------------------------------------------


def _record_specialisations(monkeypatch) -> set:
    """Runs every utility on the CPU for every supported dtype, recording which kernel
    specialisations were launched."""
    from kernelc.runtime.launch import arg_type

    seen = set()
    real = _common.launch

    def recording(kernel, dim, args, device):
        types = tuple(arg_type(kernel, n, w, v, device)
                      for n, w, v in zip(kernel.arg_names, kernel.param_types, args))
        seen.add((kernel, types))
        real(kernel, dim, args, device)

    monkeypatch.setattr(_common, "launch", recording)
    monkeypatch.setattr(scan, "block_size", lambda n, device: 16)
    n = 100
    bits = np.random.default_rng(5).integers(0, 1 << 30, 2 * n)  # every pass moves pairs
    for dtype in (kc.int32, kc.int64, kc.float32, kc.float64):
        utils.array_scan(kc.ones(n, dtype=dtype), kc.zeros(n, dtype=dtype))
    for key in (kc.int32, kc.uint32, kc.float32, kc.int64, kc.uint64, kc.float64):
        for value in (kc.int32, kc.float64):
            keys = kc.array(bits.astype(key.np_dtype), dtype=key)
            utils.radix_sort_pairs(keys, kc.zeros(2 * n, dtype=value), n,
                                   end_bit=20)  # three passes, the last one partial
    for dtype in (kc.float32, kc.float64):
        a = kc.ones((10, n), dtype=dtype)
        utils.array_sum(a)
        utils.array_inner(a, a, axis=1)
    utils.runlength_encode(kc.array(bits[:n] % 3, dtype=kc.int32), kc.zeros(n, dtype=kc.int32),
                           kc.zeros(n, dtype=kc.int32))
    for key in (kc.int32, kc.float32):
        utils.segmented_sort_pairs(kc.array(bits.astype(key.np_dtype), dtype=key),
                                   kc.zeros(2 * n, dtype=kc.int32), n,
                                   kc.array([0, 40, n], dtype=kc.int32))
    return seen


def test_every_utility_kernel_compiles_with_nvrtc(monkeypatch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs the NVRTC bindings")
    from kernelc.codegen import nvrtc
    from kernelc.codegen.cuda import CudaOptions, emit_cuda

    specs = _record_specialisations(monkeypatch)
    kernels = {kernel.__name__ for kernel, _ in specs}
    assert kernels == {"array_scan_serial", "array_scan_block_sums", "array_scan_blocks",
                       "radix_sort_flip", "radix_sort_histogram", "radix_sort_scatter",
                       "radix_sort_copy_back",
                       "array_sum_blocks", "array_sum_total", "array_inner_blocks",
                       "runlength_block_heads", "runlength_block_starts",
                       "runlength_block_lengths", "segmented_sort_mark",
                       "segmented_sort_compose", "segmented_sort_decompose"}
    for kernel, types in specs:
        source = emit_cuda(kernel.get_ir(types), CudaOptions())
        image, fmt = nvrtc.compile_cuda(source.text, 80, name=source.kernel)
        assert fmt == "cubin" and image[:4] == b"\x7fELF"


@pytest.fixture
def through_harness(monkeypatch):
    """Every utility launch runs the kernel's CUDA-C on the host (tests/cuda_harness),
    with small blocks so that every level of the algorithms is exercised."""
    import cuda_harness

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    from kernelc.codegen.cuda import CudaOptions, emit_cuda
    from kernelc.codegen.cuda_layout import ArrayArg
    from kernelc.runtime.launch import arg_type

    def harness_launch(kernel, dim, args, device):
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if min(dims) == 0:
            return
        types = tuple(arg_type(kernel, n, w, v, device)
                      for n, w, v in zip(kernel.arg_names, kernel.param_types, args))
        host = cuda_harness.build(emit_cuda(kernel.get_ir(types), CudaOptions()))
        values = [ArrayArg(a.ptr, a.shape, a.strides) if isinstance(a, kc.array) else a
                  for a in args]
        assert host.launch(dims, values, block_dim=32, max_blocks=8, workers=2) is None

    monkeypatch.setattr(_common, "launch", harness_launch)
    monkeypatch.setattr(scan, "block_size", lambda n, device: 16)
    monkeypatch.setattr(sort, "block_size", lambda n, device: 64)
    monkeypatch.setattr(reduce, "block_size", lambda n, device: 64)


@pytest.mark.parametrize("dtype", [np.int32, np.float32], ids=lambda d: np.dtype(d).name)
def test_scan_through_the_cuda_harness(rng, through_harness, dtype):
    for n in (1, 16, 3001):  # 3001 values: 188 blocks, their sums scanned in 12 blocks
        x = nonzero(rng, n, dtype, -20, 20)
        for inclusive in (True, False):
            out = poisoned(n, dtype)
            utils.array_scan(kc.array(x), out, inclusive)
            assert_scan(out.numpy(), x, inclusive)
    v = nonzero(rng, 3 * 500, np.float32).reshape(-1, 3)
    out = kc.array(np.full(v.shape, np.nan, np.float32), dtype=kc.vec3)
    utils.array_scan(kc.array(v, dtype=kc.vec3), out)
    assert_scan(out.numpy(), v, True)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint64],
                         ids=lambda d: np.dtype(d).name)
def test_sort_through_the_cuda_harness(rng, through_harness, dtype):
    n = 5003
    keys = random_keys(rng, n, dtype)
    keys[::7] = keys[0]  # ties, for stability
    values = np.arange(n, dtype=np.int64 if np.dtype(dtype).itemsize == 8 else np.int32)
    got_keys, got_values = sort_pairs(keys, values)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(got_keys, keys[order])
    np.testing.assert_array_equal(got_values, order)


def test_runlength_encode_through_the_cuda_harness(rng, through_harness):
    for n in (1, 17, 3001):  # 3001 values: 188 blocks
        for kind in ("short", "long"):
            values = random_runs(rng, n, kind)
            run_values, run_lengths = poisoned(n, np.int32), poisoned(n, np.int32)
            count = utils.runlength_encode(kc.array(values), run_values, run_lengths)
            assert_runs(values, run_values, run_lengths, count)


@pytest.mark.parametrize("dtype", [np.int32, np.float32], ids=lambda d: np.dtype(d).name)
def test_segmented_sort_through_the_cuda_harness(rng, through_harness, monkeypatch, dtype):
    # CUDA does not check the ranges on the host: the kernels skip invalid ones.
    monkeypatch.setattr(segmented_sort.SegmentCheck, "launch", lambda self: None)
    n = 3001
    keys = random_keys(rng, n, dtype)
    keys[::7] = keys[0]  # ties, for stability
    values = np.arange(n, dtype=np.int32)
    starts, ends = random_segments(rng, n, 40)
    starts[:2], ends[:2] = (-1, 5), (3, n + 1)  # invalid ranges: treated as empty
    got_keys, got_values = sort_segments(keys, values, starts, ends)
    valid = slice(2, None)
    want_keys, want_values = segments_reference(keys, values, starts[valid], ends[valid])
    np.testing.assert_array_equal(got_keys, want_keys)
    np.testing.assert_array_equal(got_values, want_values)


def test_reductions_through_the_cuda_harness(rng, through_harness):
    a = nonzero(rng, 3 * 2000, np.float64).reshape(3, 2000)
    assert utils.array_sum(kc.array(a)) == pytest.approx(a.sum())
    np.testing.assert_allclose(utils.array_inner(kc.array(a), kc.array(a), axis=1).numpy(),
                               (a * a).sum(axis=1, keepdims=True))


@pytest.mark.cuda
def test_utilities_on_a_gpu(rng):
    if not kc.is_cuda_available():
        pytest.skip("needs a CUDA device")
    n = 1 << 20
    x = nonzero(rng, n, np.int32, -9, 9)
    out = kc.zeros(n, dtype=kc.int32, device="cuda")
    utils.array_scan(kc.array(x, device="cuda"), out)
    assert_scan(out.numpy(), x, True)
    keys = random_keys(rng, n, np.float32)
    k = kc.array(np.concatenate([keys, keys]), device="cuda")
    v = kc.array(np.arange(2 * n, dtype=np.int32), device="cuda")
    utils.radix_sort_pairs(k, v, n)
    np.testing.assert_array_equal(v.numpy()[:n], np.argsort(keys, kind="stable"))
    f = nonzero(rng, n, np.float32)
    assert utils.array_sum(kc.array(f, device="cuda")) == pytest.approx(f.sum(dtype=np.float64),
                                                                        rel=1e-4)
    with pytest.raises(RuntimeError, match="devices do not match"):
        utils.array_scan(kc.array(x), out)
    with pytest.raises(RuntimeError, match="devices do not match"):
        utils.radix_sort_pairs(k, kc.zeros(2 * n, dtype=kc.int32), n)
