"""CUDA-C -> CUBIN (or PTX) with NVRTC, through `cuda.bindings.nvrtc` (cuda-python).

NVRTC needs no GPU. We ask for a CUBIN for exactly `sm_<arch>`, so that the driver never
has to JIT PTX of a newer ISA than it understands; only when this NVRTC cannot target that
architecture do we fall back to PTX for the newest virtual architecture it supports that
the device can still run (the driver JIT-compiles it at module load).
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from kernelc.errors import KernelError

_INSTALL_HINT = (
    "NVRTC is not available: install the CUDA extra (pip install 'kernelc[cuda]', which "
    "brings cuda-python and nvidia-cuda-nvrtc)"
)


def _nvrtc() -> Any:
    """The NVRTC bindings module; a KernelError saying what to install if missing."""
    try:
        return importlib.import_module("cuda.bindings.nvrtc")
    except ImportError as err:
        raise KernelError(f"{_INSTALL_HINT} ({err})") from None


def _check(result: Any, what: str) -> None:
    nvrtc = _nvrtc()
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, message = nvrtc.nvrtcGetErrorString(result)
        text = message.decode() if isinstance(message, bytes) else str(message)
        raise KernelError(f"NVRTC {what} failed: {text}")


def _call(fn: Any, *args: Any, what: str) -> Any:
    """Calls an NVRTC binding, turning a failed status (or a missing library) into a
    KernelError; returns the call's other results."""
    try:
        result, *rest = fn(*args)
    except RuntimeError as err:  # raised when libnvrtc itself cannot be loaded
        raise KernelError(f"{_INSTALL_HINT} ({err})") from None
    _check(result, what)
    return rest[0] if len(rest) == 1 else tuple(rest)


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    """NVRTC's (major, minor) version."""
    nvrtc = _nvrtc()
    return _call(nvrtc.nvrtcVersion, what="version query")


@functools.cache
def supported_archs() -> tuple[int, ...]:
    """The real architectures (75, 80, ...) this NVRTC can emit CUBINs for."""
    nvrtc = _nvrtc()
    return tuple(sorted(_call(nvrtc.nvrtcGetSupportedArchs, what="architecture query")))


def choose_target(arch: int) -> tuple[str, str]:
    """("cubin", "sm_<arch>") if NVRTC supports `arch`, else ("ptx", "compute_<a>") for
    the newest supported `a` <= arch.

    Raises:
        KernelError: every architecture NVRTC supports is newer than `arch`.
    """
    archs = supported_archs()
    if arch in archs:
        return "cubin", f"sm_{arch}"
    older = [a for a in archs if a <= arch]
    if not older:
        raise KernelError(
            f"NVRTC {'.'.join(map(str, nvrtc_version()))} cannot compile for sm_{arch} "
            f"(it supports {', '.join(map(str, archs))})"
        )
    return "ptx", f"compute_{max(older)}"


def compile_options(target: str, *, lineinfo: bool, fast_math: bool) -> list[bytes]:
    options = [f"--gpu-architecture={target}", "-std=c++17", "-default-device"]
    if lineinfo:
        options.append("-lineinfo")
    if fast_math:
        options.append("--use_fast_math")
    return [o.encode() for o in options]


def compile_cuda(source: str, arch: int, *, lineinfo: bool = False, fast_math: bool = False,
                 name: str = "kernel") -> tuple[bytes, str]:
    """Compiles a CUDA-C translation unit.

    Args:
        source: the CUDA-C text (from `emit_cuda`).
        arch: the device's compute capability as an int (90 for sm_90).
        lineinfo: keep line information for profilers (`-lineinfo`).
        fast_math: `--use_fast_math`.
        name: the kernel's name, for error messages and the program's file name.

    Returns:
        (image, format): a CUBIN for exactly sm_<arch> ("cubin"), or PTX text ("ptx")
        when this NVRTC cannot target that architecture.

    Raises:
        KernelError: NVRTC is missing, or the source does not compile (with the log).
    """
    nvrtc = _nvrtc()
    fmt, target = choose_target(arch)
    program = _call(nvrtc.nvrtcCreateProgram, source.encode(), f"{name}.cu".encode(), 0, [], [],
                    what="program creation")
    try:
        options = compile_options(target, lineinfo=lineinfo, fast_math=fast_math)
        (result,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise KernelError(
                f"NVRTC could not compile the CUDA-C for {target}:\n{_log(program)}",
                kernel=name,
            )
        if fmt == "cubin":
            size = _call(nvrtc.nvrtcGetCUBINSize, program, what="CUBIN size query")
            image = b" " * size
            _call(nvrtc.nvrtcGetCUBIN, program, image, what="CUBIN retrieval")
        else:
            size = _call(nvrtc.nvrtcGetPTXSize, program, what="PTX size query")
            image = b" " * size
            _call(nvrtc.nvrtcGetPTX, program, image, what="PTX retrieval")
            image = image.rstrip(b"\0")
        return bytes(image), fmt
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def _log(program: Any) -> str:
    nvrtc = _nvrtc()
    size = _call(nvrtc.nvrtcGetProgramLogSize, program, what="log size query")
    log = b" " * size
    _call(nvrtc.nvrtcGetProgramLog, program, log, what="log retrieval")
    return log.rstrip(b"\0").decode(errors="replace").strip()
