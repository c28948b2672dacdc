"""CUDA images for a kernel specialisation: CUDA-C -> NVRTC, with the disk cache.

Needs no GPU: `kc.compile(kernel, target="cuda", arch=90)` works wherever the NVRTC wheel
is installed. The CUDA runtime loads the same cached images onto a device.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kernelc import types as T
from kernelc.config import config
from kernelc.logger import LOG_INFO, log_debug, log_info
from kernelc.runtime.cache import DiskCache, cache_key

DEFAULT_ARCH = 75  # the oldest arch NVRTC 13 targets: runs on every GPU it supports


@dataclass(frozen=True)
class CudaImage:
    source: object  # kernelc.codegen.cuda.CudaSource
    image: bytes
    format: str  # "cubin" | "ptx"
    key: str
    arch: int
    codegen_time: float  # ms
    backend_time: float  # ms
    cache: str  # "memory" | "disk" | "miss"


def cuda_options():
    from kernelc.codegen.cuda import CudaOptions

    return CudaOptions(debug=config.mode == "debug", lineinfo=config.lineinfo,
                       line_directives=config.line_directives)


def build_cuda_image(kernel, arg_types: tuple[T.Type, ...], arch: int) -> CudaImage:
    """The CUDA image of a kernel specialisation for `sm_<arch>` (memory, disk, NVRTC)."""
    from kernelc import __version__
    from kernelc.codegen.cuda import emit_cuda
    from kernelc.codegen.nvrtc import compile_cuda, nvrtc_version
    from kernelc.runtime.compiler import optimized_ir

    options = cuda_options()
    mem_key = ("cuda", arg_types, arch, options, config.verify_fp)
    found = kernel.compiled.get(mem_key)
    if found is not None:
        return found
    t0 = time.perf_counter()
    module = optimized_ir(kernel, arg_types)
    source = emit_cuda(module, options)
    t1 = time.perf_counter()
    key = cache_key(source.text, str(arch), repr(nvrtc_version()), __version__, repr(options))
    disk = DiskCache(config.kernel_cache_dir)
    image, fmt, cache = None, "cubin", "disk"
    for ext in ("cubin", "ptx"):
        image = disk.load(key, ext) if config.cache_kernels else None
        if image is not None:
            fmt = ext
            break
    if image is None:
        from kernelc.runtime import compiler

        if compiler.LOAD_ONLY:
            raise FileNotFoundError(f"kernel '{kernel.__name__}' was not compiled ahead of "
                                    f"time for sm_{arch} and this code: no "
                                    f"{disk.path(key, 'cubin')}")
        image, fmt = compile_cuda(source.text, arch, lineinfo=options.lineinfo,
                                  name=kernel.__name__)
        cache = "miss"
        if config.cache_kernels:
            disk.store(key, fmt, image)
    t2 = time.perf_counter()
    result = CudaImage(source, image, fmt, key, arch, (t1 - t0) * 1e3, (t2 - t1) * 1e3, cache)
    kernel.compiled[mem_key] = result
    if config.log_level <= LOG_INFO:
        how = "compiled" if cache == "miss" else "cached"
        what = "NVRTC compile" if cache == "miss" else "cache read"
        log_debug(f"Kernel {kernel.key} for sm_{arch}: codegen {(t1 - t0) * 1e3:.2f} ms, "
                  f"{what} {(t2 - t1) * 1e3:.2f} ms ({fmt}, cache key {key[:12]})")
        log_info(f"Module {kernel.key} build for sm_{arch} took {(t2 - t0) * 1e3:.2f} ms  "
                 f"({how})")
    return result


def compile_cuda_kernel(kernel, arg_types: tuple[T.Type, ...], arch: int | None):
    """`kc.compile(kernel, target="cuda", arch=...)`."""
    from kernelc.runtime.compiler import CompiledKernel

    built = build_cuda_image(kernel, arg_types, arch or DEFAULT_ARCH)
    return CompiledKernel(built.source.text, built.image, built.format, built.key,
                          f"cuda:sm_{built.arch}", built.source.entry)
