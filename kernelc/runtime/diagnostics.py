"""What this process can compile for and run on: Warp's CUDA version queries,
`print_diagnostics` and `get_suggested_block_size`.

kernelc has no native library built against a CUDA toolkit: its CUDA compiler is NVRTC
(the `nvidia-cuda-nvrtc` wheel), which works without a GPU. So the "toolkit" version Warp
reports is NVRTC's here, and the architectures are the ones NVRTC can emit code for; the
driver version comes from the NVIDIA driver library, None where there is none.
"""

from __future__ import annotations

import ctypes
import platform
import sys
from typing import Any

from kernelc.errors import KernelError
from kernelc.runtime.device import get_cuda_devices, get_device
from kernelc.runtime.mempool import DeviceLike, is_mempool_enabled

__all__ = ["get_cuda_driver_version", "get_cuda_supported_archs", "get_cuda_toolkit_version",
           "get_suggested_block_size", "print_diagnostics"]

# Where the driver lives on Linux and on Windows.
_DRIVER_LIBRARIES = ("libcuda.so.1", "libcuda.so", "nvcuda.dll")


def _driver_version_number() -> int:
    """`cuDriverGetVersion` (e.g. 13000 for CUDA 13.0); 0 without a driver."""
    for name in _DRIVER_LIBRARIES:
        try:
            library = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int(0)
        # Needs no cuInit, so asking does not start CUDA in a CPU-only process.
        if library.cuDriverGetVersion(ctypes.byref(version)) == 0:
            return version.value
        return 0
    return 0


def get_cuda_driver_version() -> tuple[int, int] | None:
    """The CUDA version the installed NVIDIA driver supports, e.g. `(13, 0)`.

    Returns:
        `(major, minor)`, or None when no NVIDIA driver can be loaded.
    """
    version = _driver_version_number()
    return (version // 1000, version % 1000 // 10) if version else None


def get_cuda_toolkit_version() -> tuple[int, int] | None:
    """The version of the CUDA compiler kernelc uses, NVRTC, e.g. `(13, 5)`.

    Warp reports the toolkit its native library was built with; kernelc compiles CUDA-C
    with NVRTC at run time, so NVRTC's version plays that part.

    Returns:
        `(major, minor)`, or None when NVRTC is not installed.
    """
    from kernelc.codegen.nvrtc import nvrtc_version

    try:
        major, minor = nvrtc_version()
    except KernelError:
        return None
    return int(major), int(minor)


def get_cuda_supported_archs() -> list[int]:
    """The compute capabilities NVRTC can compile for, sorted (75 means sm_75).

    Returns:
        The architectures, or an empty list when NVRTC is not installed. A GPU is not
        needed: kernelc compiles CUDA code without one (`kc.compile(..., target="cuda")`).
    """
    from kernelc.codegen.nvrtc import supported_archs

    try:
        return sorted(supported_archs())
    except KernelError:
        return []


def get_suggested_block_size(kernel: Any, device: DeviceLike = None) -> tuple[int, int]:
    """The block size that maximises a kernel's occupancy on a GPU (the driver's
    `cuOccupancyMaxPotentialBlockSize`), for `kc.launch(..., block_dim=...)`.

    Args:
        kernel (Kernel): A `@kc.kernel` with concrete parameter types (for a generic one,
            use `kc.overload` and launch it instead).
        device (DeviceLike): The device; None for the current one.

    Returns:
        `(block_size, min_grid_size)`: the threads per block, and the fewest blocks that
        fill every SM at that occupancy. `(1, 1)` on the CPU, as in Warp.

    Raises:
        TypeError: `kernel` is not a kernel.
        RuntimeError: `kernel` is generic, or the driver query failed.
    """
    from kernelc.frontend.decorators import Kernel
    from kernelc.typevars import has_constraint

    if not isinstance(kernel, Kernel):
        raise TypeError(f"get_suggested_block_size() expects a kernel, got "
                        f"{type(kernel).__name__}")
    dev = get_device(device)
    if not dev.is_cuda:
        return 1, 1
    if kernel.is_generic or has_constraint(kernel.param_types):
        raise RuntimeError(f"get_suggested_block_size() needs concrete parameter types; "
                           f"kernel '{kernel.__name__}' is generic")
    from kernelc.runtime import cuda
    from kernelc.runtime.cuda_launch import load_cuda_kernel

    compiled = load_cuda_kernel(kernel, kernel.param_types, dev)
    cuda.device_info(dev)
    min_grid, block = cuda.call(cuda.cu.cuOccupancyMaxPotentialBlockSize, compiled.function,
                                None, 0, 0)
    return int(block), int(min_grid)


def _version(package: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _dotted(version: tuple[int, int] | None) -> str | None:
    return None if version is None else f"{version[0]}.{version[1]}"


def _cpu_info() -> dict[str, Any]:
    """LLVM's view of the host CPU (remembered in the kernel cache, so usually cheap)."""
    from kernelc.config import config
    from kernelc.runtime.cpu import cpu_state

    try:
        host = cpu_state(config.num_threads).host(
            config.kernel_cache_dir if config.cache_kernels else None)
    except Exception as err:  # diagnostics must print even when LLVM is broken
        return {"cpu_name": f"unknown ({type(err).__name__}: {err})", "cpu_features": [],
                "llvm": None}
    features = sorted(f[1:] for f in host.features.split(",") if f.startswith("+"))
    return {"cpu_name": host.cpu_name, "cpu_features": features, "llvm": host.llvm_version}


def _devices() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"alias": "cpu", "name": get_device("cpu").name}]
    cuda_devices = get_cuda_devices()
    if cuda_devices:
        from kernelc.runtime import cuda

        for dev in cuda_devices:
            info = cuda.device_info(dev)
            out.append({"alias": dev.alias, "name": dev.name, "arch": f"sm_{dev.arch}",
                        "sm_count": info.sm_count,
                        "memory_gb": round(info.total_memory / 1024**3, 1),
                        "mempool_enabled": is_mempool_enabled(dev)})
    return out


def diagnostics() -> dict[str, Any]:
    """What `print_diagnostics` reports, without printing it."""
    from kernelc import __version__
    from kernelc.runtime.device import cuda_unavailable_error, is_cuda_available

    toolkit = get_cuda_toolkit_version()
    info: dict[str, Any] = {
        "kernelc": __version__,
        "numpy": _version("numpy"),
        "llvmlite": _version("llvmlite"),
        "cuda_python": _version("cuda-python") or _version("cuda-bindings"),
        "python": sys.version,
        "platform": platform.platform(),
        # As in Warp: CUDA code can be compiled (NVRTC), whether or not a GPU is present.
        "cuda_enabled": toolkit is not None,
        "cuda_toolkit": _dotted(toolkit),
        "cuda_driver": _dotted(get_cuda_driver_version()),
        "nvrtc": _dotted(toolkit),
        "cuda_archs": get_cuda_supported_archs(),
        "cuda_devices_reason": None if is_cuda_available() else str(cuda_unavailable_error()),
    }
    info.update(_cpu_info())
    info["devices"] = _devices()
    return info


def _format(info: dict[str, Any]) -> str:
    lines: list[str] = []

    def field(label: str, value: Any, indent: int = 2) -> None:
        lines.append(f"{' ' * indent}{label:<18}{value}")

    lines.append("Software")
    field("kernelc:", info["kernelc"])
    for label, key in (("NumPy:", "numpy"), ("llvmlite:", "llvmlite"), ("LLVM:", "llvm"),
                       ("cuda-python:", "cuda_python")):
        if info[key] is not None:
            field(label, info[key])
    field("Python:", info["python"])
    field("Platform:", info["platform"])
    lines += ["", "CUDA"]
    field("Enabled:", info["cuda_enabled"])
    for label, key in (("NVRTC:", "nvrtc"), ("Driver:", "cuda_driver")):
        if info[key] is not None:
            field(label, info[key])
    if info["cuda_archs"]:
        field("Archs:", ", ".join(f"sm_{a}" for a in info["cuda_archs"]))
    if info["cuda_devices_reason"]:
        field("No GPU:", info["cuda_devices_reason"])
    lines += ["", "CPU"]
    field("Model:", info["cpu_name"])
    features = info["cpu_features"]
    field("ISA features:", len(features))
    if features:
        field("", ", ".join(features[:8]) + (", ..." if len(features) > 8 else ""), indent=4)
    lines += ["", "Devices"]
    for dev in info["devices"]:
        lines.append(f"  {dev['alias']}")
        field("Name:", dev["name"], indent=4)
        if "arch" in dev:
            field("Memory:", f"{dev['memory_gb']} GiB", indent=4)
            field("Arch:", dev["arch"], indent=4)
            field("SMs:", dev["sm_count"], indent=4)
            field("Mempool:", "enabled" if dev["mempool_enabled"] else "disabled", indent=4)
    return "\n".join(lines) + "\n"


def print_diagnostics() -> dict[str, Any]:
    """Prints kernelc's versions, its CUDA compiler and driver, the CPU and the devices,
    for bug reports (Warp's sections and, where they mean the same, its dictionary keys).

    Returns:
        The same information as a dict: `kernelc`, `numpy`, `llvmlite`, `llvm`, `python`,
        `platform`, `cuda_enabled` (NVRTC can compile CUDA code), `cuda_toolkit` and `nvrtc`
        (NVRTC's version), `cuda_driver` (None without a driver), `cuda_archs`,
        `cpu_name`, `cpu_features` and `devices` (a dict per device).
    """
    info = diagnostics()
    print(_format(info))
    return info
