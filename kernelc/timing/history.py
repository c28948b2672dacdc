"""JIT flags and the kernel history.

The flags live in `get_runtime().flags` as the integer value of a `JitFlag`. The runtime
starts with `flags == 0`; `default_flags()` is the value it should start with. Until the
`Runtime` constructor sets it, the functions here set it lazily the first time they are
used, and mark that in `rt.extras["jit_flags_ready"]`, so that a user who turns every flag
off is not reset to the defaults.

While `JitFlag.KernelHistory` is set, the launcher appends one dict per launch to
`rt.history` (see `history_entry` for the keys). `execution_time` may be filled after the
launch: on CUDA the launcher stores a zero-argument callable there (for instance one that
synchronizes an end event and returns the elapsed milliseconds), and `kernel_history`
replaces it with the number.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kernelc.runtime.context import Runtime, get_runtime


class JitFlag(enum.IntFlag):
    """Switches for the compiler and the runtime (Dr.Jit's names).

    Attributes:
        ConstantPropagation: Fold operations whose operands are known at compile time.
        ValueNumbering: Reuse the result of an identical earlier operation.
        DeadCodeElimination: Drop operations whose results are never used.
        KernelHistory: Record one entry per launch for `kernel_history()`.
        Default: The flags a new runtime starts with.
    """

    # KernelHistory is bit 0: the launcher tests that bit directly on its fast path.
    KernelHistory = 1 << 0
    ConstantPropagation = 1 << 1
    ValueNumbering = 1 << 2
    DeadCodeElimination = 1 << 3
    Default = ConstantPropagation | ValueNumbering | DeadCodeElimination


def default_flags() -> int:
    """The flag value a new `Runtime` starts with."""
    return int(JitFlag.Default)


def _ready(rt: Runtime) -> Runtime:
    if not rt.extras.get("jit_flags_ready"):
        with rt.lock:
            if not rt.extras.get("jit_flags_ready"):
                if rt.flags == 0:
                    rt.flags = default_flags()
                rt.extras["jit_flags_ready"] = True
    return rt


def flag(flag: JitFlag) -> bool:
    """Whether `flag` is set."""
    return bool(_ready(get_runtime()).flags & flag)


def set_flag(flag: JitFlag, value: bool) -> None:
    """Sets (`value=True`) or clears `flag`."""
    rt = _ready(get_runtime())
    with rt.lock:
        rt.flags = (rt.flags | int(flag)) if value else (rt.flags & ~int(flag))


@contextlib.contextmanager
def scoped_set_flag(flag: JitFlag, value: bool = True) -> Iterator[None]:
    """Sets or clears `flag` for the duration of a `with` block, then restores it.

    Example:
        >>> with kc.scoped_set_flag(kc.JitFlag.KernelHistory):
        ...     kc.launch(saxpy, dim=n, inputs=[a, x, y])
        >>> hist = kc.kernel_history()
    """
    rt = _ready(get_runtime())
    with rt.lock:
        previous = rt.flags & int(flag)
    set_flag(flag, value)
    try:
        yield
    finally:
        set_flag(flag, bool(previous))


def history_entry(
    name: str,
    hash: str,
    device: str,
    dim: tuple[int, ...],
    execution_time: float | Callable[[], float] = 0.0,
    codegen_time: float = 0.0,
    backend_time: float = 0.0,
    cache: str = "miss",
    ir: str = "",
    flops: float | None = 0,
    bytes: float | None = 0,
    **extra: Any,
) -> dict[str, Any]:
    """Builds one kernel-history entry with every documented key (for the launcher).

    Args:
        name: The kernel's name.
        hash: The kernel's cache hash.
        device: The device alias it ran on.
        dim: The launch dimensions.
        execution_time: Milliseconds on the device, or a callable returning them later.
        codegen_time: Milliseconds spent building IR and generating code (0 if cached).
        backend_time: Milliseconds in LLVM / NVRTC or loading the binary.
        cache: "memory", "disk" or "miss".
        ir: The kernel's IR (or generated source) as text.
        flops: Floating-point operations the launch performs, from the IR (None where a
            loop's trip count is unknown).
        bytes: Bytes the launch reads and writes, from the IR (None likewise).
        **extra: More keys, e.g. `type` ("kernel", "builtin", "graph") and `activity`
            (the name activity timing reports, such as "backward kernel step").
    """
    return {
        "name": name,
        "hash": hash,
        "device": device,
        "dim": tuple(dim),
        "execution_time": execution_time,
        "codegen_time": codegen_time,
        "backend_time": backend_time,
        "cache": cache,
        "ir": ir,
        "flops": flops,
        "bytes": bytes,
        **extra,
    }


def launch_record(kernel: Any, compiled: Any, types: tuple, dims: tuple[int, ...], device: Any,
                  execution_time: float | Callable[[], float]) -> dict[str, Any]:
    """The history entry of one launch of `kernel`, compiled as `compiled` (a CPU or CUDA
    kernel) for argument `types`, over `dims` on `device`."""
    from kernelc.ir.analysis import count_work
    from kernelc.runtime.launch import launch_activity

    flops, nbytes = count_work(kernel, types, dims, getattr(compiled, "lanes", 1))
    fresh = compiled.cache != "memory"  # compile times belong to the launch that compiled
    return history_entry(
        kernel.__name__, compiled.hash, str(device), dims, execution_time,
        compiled.codegen_time if fresh else 0.0, compiled.backend_time if fresh else 0.0,
        compiled.cache, compiled.source, flops, nbytes,
        type="builtin" if getattr(kernel, "is_builtin", False) else "kernel",
        activity=launch_activity(kernel)[1])


def kernel_history(types: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Returns the launches recorded while `JitFlag.KernelHistory` was set, and clears them.

    Args:
        types: Keep only entries whose `type` ("kernel" when absent; "builtin", "graph")
            is in this collection. The whole history is cleared either way.

    Returns:
        One dict per launch, oldest first, with `name`, `hash`, `device`, `dim`,
            `execution_time` (ms), `codegen_time` (ms), `backend_time` (ms), `cache`
            ("memory" | "disk" | "miss"), `ir`, `flops` and `bytes`.
    """
    rt = get_runtime()
    with rt.lock:  # (the list object stays: a profiler may have put its own in place)
        entries = list(rt.history)
        rt.history.clear()
    wanted = None if types is None else set(types)
    result = []
    for entry in entries:
        if wanted is not None and entry.get("type", "kernel") not in wanted:
            continue
        if callable(entry.get("execution_time")):
            entry["execution_time"] = float(entry["execution_time"]())
        result.append(entry)
    return result
