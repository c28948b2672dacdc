"""Settings. Environment variables are read here, once, and nowhere else."""

from __future__ import annotations

import os
from pathlib import Path


def _default_cache_dir() -> str:
    env = os.environ.get("KERNELC_CACHE_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    from kernelc import __version__

    return str(Path(base) / "kernelc" / __version__)


class Config:
    """`kc.config`: plain attributes a user may set at any time."""

    def __init__(self) -> None:
        self.mode: str = os.environ.get("KERNELC_MODE", "release")  # "release" | "debug"
        self.log_level: str = "warning"
        self.kernel_cache_dir: str = _default_cache_dir()
        self.cache_kernels: bool = os.environ.get("KERNELC_NO_CACHE", "") == ""
        self.lineinfo: bool = False
        self.line_directives: bool = True
        self.compile_time_trace: bool = False
        self.max_unroll: int = 16
        self.num_threads: int = int(os.environ.get("KERNELC_NUM_THREADS", "0")) or (
            os.cpu_count() or 1
        )
        self.dump_ir: bool = os.environ.get("KERNELC_DUMP_IR", "") not in ("", "0")
        self.quiet: bool = True

    @property
    def verbose(self) -> bool:
        return self.log_level == "debug"

    @verbose.setter
    def verbose(self, value: bool) -> None:
        self.log_level = "debug" if value else "warning"


config = Config()
