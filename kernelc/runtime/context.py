"""The one process-wide runtime object, created on first use.

Everything the runtime and the timing package share lives here rather than in module
globals: the activity recorder (set while activity timing is on), JIT flags, the kernel
history, the trace sink, the current device and the CPU JIT engine / thread pool.
"""

from __future__ import annotations

import threading
from typing import Any


class Runtime:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        # Activity timing: an object with `wants(kind) -> bool`, `begin(device, name, kind)
        # -> token` and `end(token)`; None when no timing session is active (the fast path).
        self.recorder: Any = None
        # JitFlag bits (see kernelc.timing.history); KernelHistory makes launches append
        # one dict each to `history`.
        from kernelc.timing.history import default_flags

        self.flags: int = int(default_flags())
        self.history: list[dict[str, Any]] = []
        # Chrome-trace sink: an object with `event(name, category, start_ns, end_ns, args)`,
        # or None when tracing is off.
        self.trace: Any = None
        self.current_device: Any = None
        # The allocation tracker while tracking is on (kernelc.runtime.alloc_tracker),
        # else None: the one check array allocation pays when tracking is off.
        self.alloc_tracker: Any = None
        self.cpu: Any = None  # the CPU backend's JIT engine and thread pool, built lazily
        self.extras: dict[str, Any] = {}


_runtime: Runtime | None = None
_create_lock = threading.Lock()


def get_runtime() -> Runtime:
    global _runtime
    if _runtime is None:
        with _create_lock:
            if _runtime is None:
                _runtime = Runtime()
    return _runtime
