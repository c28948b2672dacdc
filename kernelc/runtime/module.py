"""Module-level runtime functions: init, constants, cache control, eager loading."""

from __future__ import annotations

import sys
from typing import Any

from kernelc.config import config
from kernelc.runtime.context import get_runtime


def init() -> None:
    """Initialises the runtime (done implicitly on first use; calling it again is harmless)."""
    get_runtime()


def constant(value: Any) -> Any:
    """Marks a module-level value as a compile-time constant (folded into kernels)."""
    return value


def clear_kernel_cache() -> None:
    """Deletes every compiled kernel in the disk cache (`kc.config.kernel_cache_dir`)."""
    from kernelc.runtime.cache import DiskCache

    DiskCache(config.kernel_cache_dir).clear()


def _kernels_of(module: Any) -> list:
    from kernelc.frontend.decorators import Kernel

    if module is None:
        module = sys.modules.get("__main__")
    if isinstance(module, str):
        module = sys.modules[module]
    return [v for v in vars(module).values() if isinstance(v, Kernel)]


def load_module(module: Any = None, device: Any = None) -> None:
    """Compiles (or loads from the cache) every non-generic kernel defined in `module`."""
    from kernelc.runtime.compiler import get_cpu_kernel
    from kernelc.runtime.device import get_device

    dev = get_device(device)
    if module is None:  # as in Warp: the module that called load_module()
        module = sys._getframe(1).f_globals.get("__name__", "__main__")
    for k in _kernels_of(module):
        if k.is_generic:
            continue
        if dev.is_cpu:
            get_cpu_kernel(k, k.param_types)
        else:
            from kernelc.runtime.cuda_launch import load_cuda_kernel

            load_cuda_kernel(k, k.param_types, dev)


def force_load(device: Any = None, modules: Any = None) -> None:
    """Loads the kernels of `modules` (default: `__main__`) on `device` before any launch."""
    for m in modules if modules is not None else ["__main__"]:
        load_module(m, device)
