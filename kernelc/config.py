"""Settings. Environment variables are read here, once, and nowhere else."""

from __future__ import annotations

import enum
import os
from pathlib import Path

from kernelc.logger import LOG_DEBUG, LOG_INFO, LOG_WARNING, parse_log_level

# Warp settings that concern its own toolchain (clang flags, mathdx, precompiled headers,
# CUDA output formats) or features kernelc has otherwise: kept so that ported code that
# reads or sets them runs.
_WARP_ONLY_SETTINGS = {
    "cpu_compiler_flags": None, "cuda_arch_suffix": None, "cuda_output": None,
    "default_grid_stride": True, "deterministic_debug": False,
    "enable_graph_capture_module_load_by_default": True, "enable_mathdx_fft": True,
    "enable_mathdx_gemm": True, "enable_mathdx_solver": True, "enable_mempools_at_init": True,
    "enable_tiles_in_stack_memory": True, "enable_vector_component_overwrites": False,
    "legacy_cpu_linker": False, "legacy_scalar_return_types": False, "llvm_cuda": False,
    "load_module_max_workers": 0, "ptx_target_arch": None, "use_precompiled_headers": True,
}


class ReduceMode(enum.Enum):
    """How atomic updates (`kc.atomic_add`, `a[i] += x`) of contended elements are done
    (Dr.Jit's names). Pick one per kernel, `@kc.kernel(reduce_mode=kc.ReduceMode.Expand)`,
    or for every kernel with `kc.config.reduce_mode`.

    Attributes:
        Direct: One atomic instruction per update (the default). Where no kernel option
            chose a mode, CPU launches still sum small accumulators (arrays `Expand` could
            copy, holding at most `threads / num_threads` elements in all) in per-worker
            copies over fixed thread ranges: faster than contended atomics, and the sums
            repeat from run to run.
        Local: Pre-reduce updates within a SIMD packet or warp, then one atomic per distinct
            element. The backends do not pre-reduce yet: this currently runs as `Direct`.
        Expand: On the CPU, each worker thread updates a private copy of every array that
            the kernel only updates with one kind of atomic (add/sub, min, max, and, or or
            xor; never cas or exch, whose results depend on the order), never reads, and
            never uses an atomic's old value; the copies are combined into the array after
            the launch. Fast for
            heavily contended targets (histograms, small accumulators); costs one copy of
            each such array per worker. Elsewhere it runs as `Direct`.
    """

    Direct = "direct"
    Local = "local"
    Expand = "expand"


class DeterministicMode(enum.IntEnum):
    """Which reproducibility kernels with order-dependent atomics get (Warp's modes).

    Float atomic adds, compare-and-swap, exchange and atomics whose old value is used (slot
    counters) give results that depend on the order threads run in. Set one mode for every
    kernel with `kc.config.deterministic`, or per module with
    `kc.set_module_options({"deterministic": ...})`.

    Attributes:
        NOT_GUARANTEED: Threads update in whatever order they run (the default).
        RUN_TO_RUN: Bit-exact results from run to run with the same `config.num_threads`.
            On the CPU, arrays only accumulated into are summed in per-worker copies over
            fixed thread ranges, combined in worker order; other such kernels run as
            `GPU_TO_GPU`.
        GPU_TO_GPU: Results that do not depend on the machine's parallelism either: on the
            CPU such kernels run their threads one after another in index order, the
            order Warp's CPU backend uses, so results are Warp's bit for bit.
    """

    NOT_GUARANTEED = 0
    RUN_TO_RUN = 1
    GPU_TO_GPU = 2


def check_deterministic(value: object) -> DeterministicMode:
    """`value` if it is a `DeterministicMode`, else Warp's ValueError."""
    if not isinstance(value, DeterministicMode):
        raise ValueError(f"deterministic must be a kc.DeterministicMode value, got {value!r}")
    return value


def check_max_records(value: object) -> int:
    """`value` as a non-negative int, else Warp's TypeError / ValueError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("deterministic_max_records must be a non-negative integer, got "
                        f"{type(value).__name__}")
    if value < 0:
        raise ValueError(f"deterministic_max_records must be non-negative, got {value}")
    return value


def _default_cache_dir() -> str:
    env = os.environ.get("KERNELC_CACHE_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    from kernelc import __version__

    return str(Path(base) / "kernelc" / __version__)


class Config:
    """`kc.config`: plain attributes a user may set at any time.

    Environment variables give some of the defaults; they are read once, when kernelc is
    imported.

    Attributes:
        mode (str): `"release"` or `"debug"` (bounds checks and `assert` compiled in).
            Default from `KERNELC_MODE`.
        log_level (int): Warp's threshold: messages below it are not emitted (see
            `kc.set_logger`). `kc.LOG_DEBUG` (compile details), `LOG_INFO` (a line per
            kernel load), `LOG_WARNING` (warnings; kernelc's default, from
            `KERNELC_LOG_LEVEL` if set) or `LOG_ERROR`. The names `"debug"`, `"info"`,
            `"warning"` and `"error"` are accepted too; reading gives the int.
        verbose (bool): Whether `log_level` is `LOG_DEBUG` or lower; setting it True sets
            `LOG_DEBUG`, False goes back to `LOG_WARNING`.
        kernel_cache_dir (str): Where compiled kernels are cached on disk (default
            `KERNELC_CACHE_DIR`, else `$XDG_CACHE_HOME/kernelc/<version>`).
        cache_kernels (bool): Use the disk cache (`KERNELC_NO_CACHE=1` turns it off).
        lineinfo (bool): CUDA: `-lineinfo`, so profilers map instructions to Python lines.
        line_directives (bool): CUDA, with `lineinfo`: emit `#line` directives pointing
            at the Python source.
        compile_time_trace (bool): Record compile phases as trace events (see
            `trace_export`).
        max_unroll (int): Warp's loop-unrolling limit, accepted for compatibility (kernelc
            leaves unrolling to LLVM).
        num_threads (int): CPU worker threads for large launches (default
            `KERNELC_NUM_THREADS`, else the number of cores).
        dump_ir (bool): Print the IR after each pass (`KERNELC_DUMP_IR=1`).
        cpu_simd (str): How CPU kernels use SIMD across threads (default `KERNELC_SIMD`,
            else `"auto"`). `"auto"`: kernels with loops of their own run their threads as
            SIMD lanes when every op in those loops has a lane-wise form (often 10x faster
            N-body, ray-marching or quadrature loops, for somewhat longer compiles); the
            others leave the loop over threads to LLVM's vectoriser. `"all"`: every kernel
            runs as lanes. `"off"`: none does, one thread at a time. Debug mode always runs
            one thread at a time.
        quiet (bool): Warp's setting before `log_level` replaced it: True (the default)
            while `log_level` is above `LOG_INFO`. Setting it False lowers `log_level` to
            `LOG_INFO`; True raises `LOG_INFO` to `LOG_WARNING` (a debug level stays).
        reduce_mode (ReduceMode): How kernels without their own `reduce_mode` option carry
            out contended atomics (default `ReduceMode.Direct`).
        deterministic (DeterministicMode): How kernels with order-dependent atomics run,
            unless their module's `"deterministic"` option says otherwise (default
            `DeterministicMode.NOT_GUARANTEED`); see `kc.DeterministicMode`.
        deterministic_max_records (int): Warp's per-thread bound on recorded atomics
            (default 0). Accepted for compatibility: kernelc's CPU modes keep no records.
        enable_backward (bool): Whether kernels have backward kernels (`kc.Tape`), unless
            the kernel (`@kc.kernel(enable_backward=...)`) or its module
            (`kc.set_module_options`) says otherwise. Default True, as in Warp.
        track_memory (bool): Track every array allocation for `kc.print_memory_report`
            (default False). Warp reads it when `wp.init()` runs; kernelc starts or stops
            tracking as soon as it is assigned, so setting it before `init()` works the same.
        enable_cpu_blocks (bool): CPU launches with `block_dim` B from 2 to 1024 run
            blocks of B threads, as on a GPU: tile operations are each block's collective
            work and `tile(x)` gathers one value per thread (default False: one thread per
            block, Warp's CPU default). See docs/tiles.md.
        verify_autograd_array_access (bool): While a `kc.Tape` records, warn when an
            array is overwritten after a recorded launch read it, or when a kernel writes an
            array argument after reading it (Warp's setting; default False).
        version (str): The kernelc version.
        verify_fp (bool): Check every float written to an array (stores and atomics) and
            print the file, line, kernel, array and value when it is NaN or infinite
            (Warp's setting; default False). Kernels compile again with the checks.
        print_launches (bool): Send one line per `kc.launch` (kernel, dim, arguments,
            device) to the active logger's `info` (Warp's setting; default False).
        verify_cuda, verbose_warnings (bool): Warp's settings
            with Warp's defaults, readable and assignable so that ported code runs; kernelc
            ignores them.
        optimization_level (int | None): Warp's setting (default None), ignored likewise.
        default_grid_stride (bool): Warp's setting (default True), ignored likewise, as are
            Warp's other toolchain settings (`cpu_compiler_flags`, `enable_mathdx_gemm`,
            ...: the names in `_WARP_ONLY_SETTINGS`), which keep Warp's defaults.
    """

    def __init__(self) -> None:
        self.mode: str = os.environ.get("KERNELC_MODE", "release")  # "release" | "debug"
        self._log_level: int = parse_log_level(os.environ.get("KERNELC_LOG_LEVEL") or
                                               LOG_WARNING)
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
        self.cpu_simd: str = os.environ.get("KERNELC_SIMD", "auto")
        self.reduce_mode: ReduceMode = ReduceMode.Direct
        self.enable_backward: bool = True
        self.verify_autograd_array_access: bool = False
        self.enable_cpu_blocks: bool = False
        self._verify_fp = False
        # Warp-only settings: read and written by ported code, no effect in kernelc.
        self.verify_cuda: bool = False
        self.print_launches: bool = False
        self.verbose_warnings: bool = False
        self.optimization_level: int | None = None
        # More of Warp's settings, with its defaults: readable and assignable, no effect.
        for name, value in _WARP_ONLY_SETTINGS.items():
            setattr(self, name, value)
        self._track_memory = False
        self._deterministic = DeterministicMode.NOT_GUARANTEED
        self._deterministic_max_records = 0
        # Counts changes of the deterministic settings (here and in module options) and of
        # verify_fp: a launch packed under other settings is not reused.
        self.deterministic_epoch = 0

    @property
    def verify_fp(self) -> bool:
        """See the class docstring."""
        return self._verify_fp

    @verify_fp.setter
    def verify_fp(self, value: bool) -> None:
        self._verify_fp = bool(value)
        self.deterministic_epoch += 1

    @property
    def deterministic(self) -> DeterministicMode:
        """See `kc.DeterministicMode`."""
        return self._deterministic

    @deterministic.setter
    def deterministic(self, value: DeterministicMode) -> None:
        self._deterministic = check_deterministic(value)
        self.deterministic_epoch += 1

    @property
    def deterministic_max_records(self) -> int:
        """Warp's record bound; accepted, unused by kernelc's CPU modes."""
        return self._deterministic_max_records

    @deterministic_max_records.setter
    def deterministic_max_records(self, value: int) -> None:
        self._deterministic_max_records = check_max_records(value)

    @property
    def version(self) -> str:
        """The kernelc version (Warp's `config.version` is Warp's)."""
        from kernelc import __version__

        return __version__

    @property
    def track_memory(self) -> bool:
        """Whether every array allocation is tracked (see `kc.print_memory_report`)."""
        return self._track_memory

    @track_memory.setter
    def track_memory(self, value: bool) -> None:
        from kernelc.runtime.alloc_tracker import set_global_tracking

        set_global_tracking(bool(value))
        self._track_memory = bool(value)

    @property
    def log_level(self) -> int:
        """The logging threshold (`kc.LOG_DEBUG` ... `kc.LOG_ERROR`)."""
        return self._log_level

    @log_level.setter
    def log_level(self, value: int | str) -> None:
        self._log_level = parse_log_level(value)

    @property
    def verbose(self) -> bool:
        """Whether `log_level` lets debug messages through; setting it True sets
        `LOG_DEBUG`, False goes back to `LOG_WARNING` (if it was at debug or below)."""
        return self._log_level <= LOG_DEBUG

    @verbose.setter
    def verbose(self, value: bool) -> None:
        if value:
            self._log_level = LOG_DEBUG
        elif self._log_level <= LOG_DEBUG:
            self._log_level = LOG_WARNING

    @property
    def quiet(self) -> bool:
        """Warp's older switch: True while `log_level` is above `LOG_INFO` (no load lines)."""
        return self._log_level > LOG_INFO

    @quiet.setter
    def quiet(self, value: bool) -> None:
        # Warp replaced `quiet = True` with `log_level = LOG_WARNING`; map it the same way.
        # A debug level is left alone: old Warp scripts set `quiet` and `verbose` together,
        # and verbose output was what they asked for.
        if value and LOG_DEBUG < self._log_level <= LOG_INFO:
            self._log_level = LOG_WARNING
        elif not value and self._log_level > LOG_INFO:
            self._log_level = LOG_INFO


config = Config()
