"""Every kernel of the bundled examples compiles to CUDA-C and through NVRTC (no GPU needed)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import kernelc.examples as examples
from kernelc.frontend.decorators import Kernel


def _example_kernels():
    found = []
    for info in pkgutil.iter_modules(examples.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"kernelc.examples.{info.name}")
        found += [(info.name, obj) for obj in vars(module).values() if isinstance(obj, Kernel)]
    return found


KERNELS = _example_kernels()


@pytest.mark.parametrize("name, kernel", KERNELS, ids=[f"{n}.{k.__name__}" for n, k in KERNELS])
def test_example_kernel_compiles_for_cuda(name, kernel):
    pytest.importorskip("cuda.bindings.nvrtc")
    from kernelc.codegen import nvrtc
    from kernelc.codegen.cuda import CudaOptions, emit_cuda
    from kernelc.runtime.compiler import optimized_ir

    source = emit_cuda(optimized_ir(kernel, kernel.param_types), CudaOptions())
    image, fmt = nvrtc.compile_cuda(source.text, 80, name=source.kernel)
    assert fmt == "cubin" and source.entry.encode() in image
