"""Loading CUDA images onto a device: PTX version matching, modules, grid sizing."""

from __future__ import annotations

import math
import re
from typing import Any

from kernelc.runtime.cuda import call, cu, device_info, state

_PTX_VERSION = re.compile(rb"^(\s*\.version\s+)(\d+)\.(\d+)", re.MULTILINE)


def ptx_isa_for_driver(driver_version: int) -> tuple[int, int] | None:
    """The newest PTX ISA a driver (cuDriverGetVersion, e.g. 12040) can JIT, if known."""
    major, minor = driver_version // 1000, driver_version % 1000 // 10
    if major == 11:
        return 7, minor
    if major == 12:
        # CUDA 12.0-12.5 -> 8.0-8.5; 12.6 kept 8.5; 12.8 -> 8.7, 12.9 -> 8.8.
        return 8, minor if minor <= 5 else minor - 1
    if major >= 13:
        return major - 4, minor
    return None


def ptx_for_driver(ptx: bytes, driver_version: int) -> bytes:
    """`ptx` with its `.version` lowered to what the driver supports (never raised).

    NVRTC stamps its own (newer) ISA version on PTX even when the code uses nothing new; an
    older driver rejects the module for the stamp alone, so the stamp is lowered.
    """
    supported = ptx_isa_for_driver(driver_version)
    match = _PTX_VERSION.search(ptx)
    if supported is None or match is None:
        return ptx
    if (int(match.group(2)), int(match.group(3))) <= supported:
        return ptx
    stamp = f"{supported[0]}.{supported[1]}".encode()
    return ptx[:match.start()] + match.group(1) + stamp + ptx[match.end():]


def load_module(device: Any, image: bytes, fmt: str, entry: str) -> tuple[Any, Any]:
    """Loads a CUBIN or PTX image on `device`; returns (CUmodule, CUfunction of `entry`)."""
    device_info(device)
    cuda = state()
    if fmt == "ptx":
        image = ptx_for_driver(image, cuda.driver_version)
        if not image.endswith(b"\0"):
            image += b"\0"  # cuModuleLoadData reads PTX as a C string
    module = call(cu.cuModuleLoadData, image)
    with cuda.lock:
        cuda.modules.append(module)
    function = call(cu.cuModuleGetFunction, module, entry.encode())
    return module, function


def blocks_per_sm(function: Any, block_dim: int) -> int:
    """How many blocks of `block_dim` threads of `function` fit on one SM at once."""
    return max(1, int(call(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor, function,
                           block_dim, 0)))


def grid_size(size: int, block_dim: int, sm_count: int, per_sm: int) -> int:
    """Blocks to launch: enough to cover `size` threads, at most one full wave of the GPU.

    The kernel loops over its threads with a grid-stride loop, so a grid larger than the
    GPU holds at once only adds block scheduling overhead.
    """
    return max(1, min(math.ceil(size / block_dim), sm_count * per_sm))
