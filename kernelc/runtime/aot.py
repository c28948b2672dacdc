"""Ahead-of-time modules (Warp's `wp.compile_aot_module` / `wp.load_aot_module`): every
kernel of a module compiled into a directory, and later loaded from it without compiling.

The directory is a kernel cache of its own: the artifacts are the shared libraries (CPU)
and CUBIN/PTX images (CUDA) that launches would otherwise build, under the same keys, so a
loaded kernel is the one its source compiles to. CUDA images compile without a GPU (NVRTC
for the given `arch`). Generic kernels contribute the specialisations declared with
`kc.overload` (or launched so far).
"""

from __future__ import annotations

import contextlib
import os
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kernelc.config import config
from kernelc.runtime.module import _kernels_of

__all__ = ["compile_aot_module", "load_aot_module"]


def compile_aot_module(module: Any, device: Any = None, arch: Any = None,
                       module_dir: str | os.PathLike | None = None, use_ptx: bool | None = None,
                       strip_hash: bool | None = None) -> list[Path]:
    """Compiles every kernel of `module` (a `kc.Module`, a Python module or a name) into
    `module_dir` (default: the kernel cache) for `device` (a device or a list of them;
    default: the current device) or, for CUDA, for the architectures `arch` (an int or a
    list; no GPU needed). Returns the paths of the artifacts, in target order.

    Raises:
        TypeError: `module` is not a module.
        NotImplementedError: `strip_hash=True` (kernelc keys artifacts by their code).
    """
    name = _module_name(module)
    _refuse_strip_hash(strip_hash)
    paths: list[Path] = []
    with _cache_in(module_dir):
        for target in _targets(device, arch):
            for kernel, arg_types in _specialisations(name):
                paths.append(_compile_one(kernel, arg_types, target, use_ptx))
    return paths


def load_aot_module(module: Any, device: Any = None, arch: int | None = None,
                    module_dir: str | os.PathLike | None = None, use_ptx: bool | None = None,
                    strip_hash: bool | None = None) -> None:
    """Loads every kernel of `module` compiled by `compile_aot_module` from `module_dir`
    onto `device` (default: the current device), compiling nothing.

    Raises:
        FileNotFoundError: A kernel has no artifact there for this device (or its code
            changed since it was compiled); the message names the expected file.
        TypeError: `module` is not a module.
        NotImplementedError: `strip_hash=True`.
    """
    from kernelc.runtime.device import get_device

    name = _module_name(module)
    _refuse_strip_hash(strip_hash)
    devices = device if isinstance(device, (list, tuple)) else [device]
    with _cache_in(module_dir), _load_only():
        for dev in (get_device(d) for d in devices):
            for kernel, arg_types in _specialisations(name):
                if dev.is_cpu:
                    from kernelc.runtime.compiler import get_cpu_kernel

                    get_cpu_kernel(kernel, arg_types)
                else:
                    from kernelc.runtime.cuda_launch import load_cuda_kernel

                    load_cuda_kernel(kernel, arg_types, dev)


def _module_name(module: Any) -> str:
    if isinstance(module, types.ModuleType):
        return module.__name__
    if isinstance(module, str):  # a name, or a kc.Module (a str)
        return str(module)
    raise TypeError(f"expected a kc.Module, a Python module or a module name, got "
                    f"{type(module).__name__}")


def _refuse_strip_hash(strip_hash: bool | None) -> None:
    if strip_hash:
        raise NotImplementedError(
            "strip_hash=True is not supported: kernelc keys each compiled kernel by its "
            "code, so a kernel always loads the artifact its source compiles to")


def _targets(device: Any, arch: Any) -> list[tuple[str, Any]]:
    """("cpu", None) or ("cuda", arch) for each target asked for."""
    from kernelc.runtime.device import get_device

    if arch is not None and device is None:
        archs = arch if isinstance(arch, (list, tuple)) else [arch]
        return [("cuda", int(a)) for a in archs]
    out = []
    for d in device if isinstance(device, (list, tuple)) else [device]:
        dev = get_device(d)
        out.append(("cpu", None) if dev.is_cpu else ("cuda", int(arch or dev.arch)))
    return out


def _specialisations(module: str) -> list[tuple[Any, tuple]]:
    """(kernel, argument types) for each kernel of the module: its declared types, or for
    a generic one the specialisations made so far (`kc.overload`, launches)."""
    from kernelc.typevars import has_constraint

    found = []
    for kernel in _kernels_of(module):
        if not (kernel.is_generic or has_constraint(kernel.param_types)):
            found.append((kernel, tuple(kernel.param_types)))
            continue
        found += [(kernel, arg_types) for arg_types in list(kernel._ir)]
    return found


def _compile_one(kernel: Any, arg_types: tuple, target: tuple[str, Any],
                 use_ptx: bool | None) -> Path:
    from kernelc.runtime.cache import DiskCache

    disk = DiskCache(config.kernel_cache_dir)
    kind, arch = target
    kernel.compiled.clear()  # build (or find) it in this directory, not in memory
    kernel.last_launch = None
    if kind == "cpu":
        from kernelc.runtime.compiler import OBJECT_EXT, get_cpu_kernel
        from kernelc.runtime.cpu import cpu_state
        from kernelc.runtime.native import LIBRARY_EXT

        key = get_cpu_kernel(kernel, arg_types).hash
        # the shared library is linked in the background: the artifact once it is there
        # (without a system compiler to link it, the object file, which loads with LLVM)
        cpu_state(config.num_threads).linker.wait(disk.directory)
        library = disk.path(key, LIBRARY_EXT)
        return library if library.exists() else disk.path(key, OBJECT_EXT)
    from kernelc.runtime.cuda_compile import build_cuda_image

    if use_ptx:
        raise NotImplementedError("use_ptx=True: kernelc compiles CUDA kernels to CUBIN "
                                  "(PTX only where NVRTC cannot target the architecture)")
    image = build_cuda_image(kernel, arg_types, arch)
    return disk.path(image.key, image.format)


@contextlib.contextmanager
def _cache_in(directory: str | os.PathLike | None) -> Iterator[None]:
    """Kernels compiled and loaded in the block use `directory` as their disk cache."""
    saved = config.kernel_cache_dir, config.cache_kernels
    if directory is not None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        config.kernel_cache_dir = os.path.abspath(directory)
    config.cache_kernels = True
    try:
        yield
    finally:
        config.kernel_cache_dir, config.cache_kernels = saved


@contextlib.contextmanager
def _load_only() -> Iterator[None]:
    """In the block, a kernel missing from the disk cache raises instead of compiling."""
    from kernelc.runtime import compiler

    saved = compiler.LOAD_ONLY
    compiler.LOAD_ONLY = True
    try:
        yield
    finally:
        compiler.LOAD_ONLY = saved
