"""`@kc.func_native` in CUDA-C: snippets compiled by NVRTC (no GPU needed) and run on the
host through the CUDA harness, forward and backward, against NumPy. (The harness runs
threads one after another, so the shared-memory snippet is only compiled.)"""

from __future__ import annotations

import shutil

import cuda_harness
import numpy as np
import pytest

import kernelc as kc
from kernelc import types as T
from kernelc.autodiff.kernel import adjoint_kernel
from kernelc.codegen.cuda import CudaOptions, emit_cuda
from kernelc.codegen.cuda_layout import ArrayArg
from tests.conftest import nonzero
from tests.test_func_native import k_refs, k_saxpy, k_values

ARCHS = (75, 80, 90)
N = 16
F1 = T.ArrayType(T.float32, 1)
I1 = T.ArrayType(T.int32, 1)


@kc.func_native("""
    __shared__ int s[8];
    int local = threadIdx.x;
    s[local] = d[tid];
    __syncthreads();
    d[tid] = s[blockDim.x - local - 1];
""")
def reverse_block(d: kc.array(dtype=kc.int32), tid: int): ...


@kc.func_native("slot[tid] = atomicAdd(counter, 1);", replay_snippet="")
def take_ticket(counter: kc.array(dtype=kc.int32), slot: kc.array(dtype=kc.int32), tid: int): ...


@kc.kernel
def k_reverse(d: kc.array(dtype=kc.int32)):
    tid = kc.tid()
    reverse_block(d, tid)


@kc.kernel
def k_tickets(x: kc.array(dtype=float), counter: kc.array(dtype=kc.int32),
              slot: kc.array(dtype=kc.int32), out: kc.array(dtype=float)):
    tid = kc.tid()
    take_ticket(counter, slot, tid)
    j = slot[tid]
    out[j] = x[j] * x[j]


SOURCES = {
    "saxpy": (k_saxpy, (T.float32, F1, F1, F1)),
    "values": (k_values, (F1, F1, T.ArrayType(T.as_type(kc.vec3), 1),
                          T.ArrayType(T.as_type(kc.mat22), 1), F1)),
    "refs": (k_refs, (F1, T.float32, I1, I1)),
    "shared_memory": (k_reverse, (I1,)),
}


def _nvrtc():
    return pytest.importorskip("cuda.bindings.nvrtc")


def _array(a: np.ndarray) -> ArrayArg:
    """A 1-d array of elements (a vec3 array is N x 3 floats on the host)."""
    return ArrayArg(a.ctypes.data, a.shape[:1], a.strides[:1])


needs_gxx = pytest.mark.skipif(shutil.which(cuda_harness.CXX) is None, reason="needs g++")


@pytest.mark.parametrize("name", list(SOURCES))
def test_nvrtc_compiles_snippets(name):
    _nvrtc()
    from kernelc.codegen import nvrtc

    kernel, types = SOURCES[name]
    source = emit_cuda(kernel.get_ir(types), CudaOptions())
    assert "kc_snippets" in source.text and "wp::array_t" in source.text
    for arch in ARCHS:
        image, fmt = nvrtc.compile_cuda(source.text, arch, name=source.kernel)
        assert image and fmt in ("cubin", "ptx")


def test_backward_kernel_compiles_with_the_adjoint_snippet():
    _nvrtc()
    from kernelc.codegen import nvrtc

    types = (T.float32, F1, F1, F1)
    backward = adjoint_kernel(k_saxpy)
    source = emit_cuda(backward.get_ir((*types, *types, T.uint64)), CudaOptions())
    assert "_adjoint(" in source.text
    for arch in ARCHS:
        assert nvrtc.compile_cuda(source.text, arch, name=source.kernel)[0]


@needs_gxx
def test_forward_in_harness(rng):
    x_np = nonzero(rng, N, np.float32)
    sq, d = np.full(N, np.nan, np.float32), np.full(N, np.nan, np.float32)
    v, m = np.full((N, 3), np.nan, np.float32), np.full((N, 2, 2), np.nan, np.float32)
    kernel, types = SOURCES["values"]
    source = emit_cuda(kernel.get_ir(types), CudaOptions())
    args = [_array(a) for a in (x_np, sq, v, m, d)]
    assert cuda_harness.build(source).launch(N, args, block_dim=4, max_blocks=2) is None
    np.testing.assert_allclose(sq, x_np * x_np, rtol=1e-6)
    np.testing.assert_allclose(v, np.stack([x_np, 2 * x_np, x_np * x_np], 1), rtol=1e-6)
    np.testing.assert_allclose(d, x_np + 4 * x_np + 3 * x_np * x_np - 1.0, rtol=1e-5)
    # reference parameters written back
    x2 = x_np.copy()
    flags, codes = np.full(N, -7, np.int32), np.full(N, -7, np.int32)
    kernel, types = SOURCES["refs"]
    source = emit_cuda(kernel.get_ir(types), CudaOptions())
    args = [_array(x2), -2.5, _array(flags), _array(codes)]
    assert cuda_harness.build(source).launch(N, args, block_dim=4, max_blocks=2) is None
    after = x_np * np.float32(-2.5) + np.float32(1.0)
    np.testing.assert_allclose(x2, after, rtol=1e-6)
    np.testing.assert_array_equal(codes, 10 + (after > 0).astype(np.int32))


@needs_gxx
def test_backward_in_harness_matches_numpy(rng):
    types = (T.float32, F1, F1, F1)
    x_np, y_np, seed = (nonzero(rng, N, np.float32) for _ in range(3))
    out = np.zeros(N, np.float32)
    gx, gy, gout = np.zeros(N, np.float32), np.zeros(N, np.float32), seed.copy()
    backward = adjoint_kernel(k_saxpy)
    source = emit_cuda(backward.get_ir((*types, *types, T.uint64)), CudaOptions())
    args = [1.5, _array(x_np), _array(y_np), _array(out),
            0.0, _array(gx), _array(gy), _array(gout), 0]
    assert cuda_harness.build(source).launch(N, args, block_dim=4, max_blocks=2) is None
    np.testing.assert_allclose(gx, 1.5 * seed, rtol=1e-6)
    np.testing.assert_allclose(gy, seed, rtol=1e-6)


@needs_gxx
def test_replay_snippet_in_harness(rng):
    """The backward kernel replays the empty snippet: the counter is not taken again."""
    types = (F1, I1, I1, F1)
    x_np = nonzero(rng, N, np.float32)
    counter, slot, out = np.zeros(1, np.int32), np.zeros(N, np.int32), np.zeros(N, np.float32)
    forward = emit_cuda(k_tickets.get_ir(types), CudaOptions())
    args = [_array(x_np), _array(counter), _array(slot), _array(out)]
    assert cuda_harness.build(forward).launch(N, args, block_dim=4, max_blocks=2) is None
    assert counter[0] == N and sorted(slot) == list(range(N))
    gx, gout = np.zeros(N, np.float32), np.ones(N, np.float32)
    backward = emit_cuda(adjoint_kernel(k_tickets).get_ir((*types, *types, T.uint64)),
                         CudaOptions())
    empty = np.zeros(0, np.int32)
    args += [_array(gx), _array(empty), _array(empty), _array(gout), 0]
    assert cuda_harness.build(backward).launch(N, args, block_dim=4, max_blocks=2) is None
    assert counter[0] == N
    np.testing.assert_allclose(gx, 2 * x_np, rtol=1e-6)
