"""The spatial kernels of `tests/spatial_programs.py` (quaternion conversions, transform
helpers, spatial algebra) on the CUDA backend: their CUDA-C compiled by NVRTC, run through
the host harness against the CPU, and on a GPU when there is one.
"""

import shutil

import numpy as np
import pytest

from tests.spatial_programs import KERNELS, PRECISIONS, TOL, N, _tuple_results_in_kernels, wp

# ---- the CUDA backend ---------------------------------------------------------------------------


def _cuda_case(name: str, precision: str):
    from kernelc import types as T
    from kernelc.codegen.cuda import CudaOptions, emit_cuda

    kernel, make_args = KERNELS[name]
    if name == "tuples" and not _tuple_results_in_kernels():
        pytest.xfail("needs the front end to unpack builtins with several results")
    types = tuple(T.ArrayType(a.dtype, a.ndim) for a in make_args(precision))
    return kernel, make_args, emit_cuda(kernel.get_ir(types), CudaOptions())


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernels_compile_with_nvrtc(name, precision):
    pytest.importorskip("cuda.bindings.nvrtc")
    from kernelc.codegen import nvrtc

    _, _, source = _cuda_case(name, precision)
    image, fmt = nvrtc.compile_cuda(source.text, 80, name=source.kernel)
    assert fmt == "cubin" and source.entry.encode() in image


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_cuda_c_in_host_harness_matches_cpu(name, precision):
    import cuda_harness
    from test_cuda_aggregates import run_both

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    _, make_args, _ = _cuda_case(name, precision)
    kernel = KERNELS[name][0]
    run_both(kernel, N, lambda: [(a, None) for a in make_args(precision)])


@pytest.mark.cuda
def test_kernels_on_the_gpu_match_the_cpu():
    if not wp.is_cuda_available():
        pytest.skip("no CUDA device")
    for precision in PRECISIONS:
        for name, (kernel, make_args) in KERNELS.items():
            if name == "tuples" and not _tuple_results_in_kernels():
                continue
            cpu = make_args(precision)
            wp.launch(kernel, N, inputs=cpu)
            gpu = [a.to("cuda:0") for a in make_args(precision)]
            wp.launch(kernel, N, inputs=gpu, device="cuda:0")
            for a, b in zip(cpu, gpu):
                np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=TOL[precision] * 10,
                                           atol=TOL[precision] * 10)
