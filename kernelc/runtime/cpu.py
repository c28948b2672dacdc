"""The CPU backend's runtime: the LLVM JIT (started only when needed), kernel libraries
loaded with dlopen, and a pool of worker threads."""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelRuntimeError, Loc, render_caret
from kernelc.runtime.hostinfo import HostTarget, resolve_host
from kernelc.runtime.native import Libraries, Linker

KERNEL_CFUNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


def kernel_cfunc(address: int):
    """A kernel entry callable from Python; `kernel_address` is what the native pool calls."""
    fn = KERNEL_CFUNC(address)
    fn.kernel_address = address
    return fn


class CpuJit:
    """Compiles LLVM IR for the host CPU and loads object code into MCJIT, one engine each.

    Objects are position-independent (`reloc="pic"`) so that the same object also links
    into the shared library a warm start dlopens, and use the large code model, so that
    every reference is 64-bit wherever MCJIT puts the sections. Each object gets its own
    engine: MCJIT resolves a second large-model PIC object's GOT references against the
    first object's GOT (wrong results), which one RuntimeDyld per object rules out.
    """

    def __init__(self) -> None:
        import llvmlite.binding as llvm  # loading LLVM costs ~35 ms, paid only when needed

        self.llvm = llvm
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.target = llvm.Target.from_default_triple()
        self.cpu_name = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.tm = self._target_machine()
        self.triple = self.target.triple
        self.lock = threading.Lock()
        self._engines: list = []  # kept alive: they own the loaded code
        self._loaded: dict[str, int] = {}
        self.host = HostTarget.from_llvm(llvm, self.triple, self.cpu_name, self.features)

    def _target_machine(self):
        return self.target.create_target_machine(
            cpu=self.cpu_name, features=self.features, opt=3, jit=True, reloc="pic",
            codemodel="jitdefault",
        )

    @property
    def target_id(self) -> str:
        return self.host.target_id

    @property
    def has_avx512(self) -> bool:
        return self.host.has_avx512

    def compile(self, text: str) -> bytes:
        """LLVM IR text -> optimised object code for this CPU."""
        llvm = self.llvm
        mod = llvm.parse_assembly(text)
        mod.triple = self.triple
        mod.data_layout = str(self.tm.target_data)
        mod.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(self.tm, pto)
        pb.getModulePassManager().run(mod, pb)
        return self.tm.emit_object(mod)

    def optimized_ir(self, text: str) -> str:
        llvm = self.llvm
        mod = llvm.parse_assembly(text)
        mod.triple = self.triple
        mod.data_layout = str(self.tm.target_data)
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pb = llvm.create_pass_builder(self.tm, pto)
        pb.getModulePassManager().run(mod, pb)
        return str(mod)

    def load(self, obj: bytes, entry: str) -> int:
        """Loads an object file into a new engine (once per entry symbol); returns the address."""
        llvm = self.llvm
        with self.lock:
            addr = self._loaded.get(entry)
            if addr is None:
                # the engine owns its target machine, so each gets a fresh one (~0.4 ms)
                engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""),
                                                    self._target_machine())
                engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
                engine.finalize_object()
                addr = engine.get_function_address(entry)
                if not addr:
                    raise RuntimeError(f"kernel symbol {entry} not found in its object code")
                self._engines.append(engine)
                self._loaded[entry] = addr
            return addr


class ThreadPool:
    """Runs a kernel's thread range in blocks on worker threads (ctypes drops the GIL).

    Kernels run on the native pool (`native_pool.py`) once its library is loaded; Python
    callables, and kernels until then, on a Python executor.
    """

    def __init__(self, num_threads: int):
        self.num_threads = max(1, num_threads)
        self._executor = None  # a ThreadPoolExecutor once a launch is big enough
        self._native_loader = None
        self._native_lock = threading.Lock()  # the native pool runs one launch at a time
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        self._executor = None
        self._native_lock = threading.Lock()
        pool = self._native_loader.pool if self._native_loader is not None else None
        if pool is not None:
            pool.forget_workers()

    def _pool(self):
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor  # ~4 ms of imports, on demand

            self._executor = ThreadPoolExecutor(self.num_threads, thread_name_prefix="kernelc")
        return self._executor

    def native(self, wait: bool = False):
        """The native pool, or None while it loads (or where there is no C compiler)."""
        loader = self._native_loader
        if loader is None:
            from kernelc.config import config
            from kernelc.runtime.native import find_compiler
            from kernelc.runtime.native_pool import NativePoolLoader

            loader = self._native_loader = NativePoolLoader(self.num_threads - 1)
            loader.request(config.kernel_cache_dir, find_compiler())
        return loader.wait() if wait else loader.pool

    def run(self, fn, args: int, n: int, blocks_per_thread: int) -> None:
        workers = self.num_threads
        nblocks = min(n, workers * blocks_per_thread)
        if workers == 1 or nblocks <= 1:
            fn(args, 0, n)
            return
        address = getattr(fn, "kernel_address", None)
        if address is not None:
            native = self.native()
            if native is not None and self._native_lock.acquire(blocking=False):
                try:
                    native.run(address, args, n, nblocks)
                finally:
                    self._native_lock.release()
                return
        step = -(-n // nblocks)
        ranges = [(s, min(s + step, n)) for s in range(0, n, step)]
        pool = self._pool()
        futures = [pool.submit(fn, args, s, e) for s, e in ranges[1:]]
        fn(args, *ranges[0])  # the calling thread takes the first block
        for f in futures:
            f.result()


class CpuState:
    """The process's CPU backend: host target, JIT engine (on demand), libraries, pool."""

    def __init__(self, num_threads: int) -> None:
        self.pool = ThreadPool(num_threads)
        self.linker = Linker()
        self.libraries = Libraries()
        self.snippets = None  # @kc.func_native libraries (native_snippets.SnippetLibraries)
        self._lock = threading.Lock()
        self._jit: CpuJit | None = None
        self._host: HostTarget | None = None

    @property
    def jit_started(self) -> bool:
        return self._jit is not None

    @property
    def jit(self) -> CpuJit:
        """The LLVM JIT, started on first use: compiling, or loading an object file."""
        if self._jit is None:
            with self._lock:
                if self._jit is None:
                    jit = CpuJit()
                    if self._host is not None and self._host != jit.host:
                        self._host = None  # remembered wrongly: LLVM's own answer wins
                    self._jit = jit
        return self._jit

    def host(self, cache_dir: str | None) -> HostTarget:
        """The host target for cache keys: LLVM's answer, remembered in `cache_dir` (if any)."""
        if self._host is None:
            if self._jit is not None or cache_dir is None:
                self._host = self.jit.host
            else:
                self._host = resolve_host(cache_dir, lambda: self.jit.host)
        return self._host


def cpu_state(num_threads: int) -> CpuState:
    """The process's CPU state (kept on the runtime object, built on first use)."""
    from kernelc.runtime.context import get_runtime

    rt = get_runtime()
    with rt.lock:
        if rt.cpu is None:
            rt.cpu = CpuState(num_threads)
        elif rt.cpu.pool.num_threads != max(1, num_threads):
            rt.cpu.pool = ThreadPool(num_threads)
    return rt.cpu


# ---- argument packing ------------------------------------------------------------------------

_SCALAR_CTYPES = {
    "bool": ctypes.c_uint8, "int8": ctypes.c_int8, "int16": ctypes.c_int16,
    "int32": ctypes.c_int32, "int64": ctypes.c_int64, "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
    "float16": ctypes.c_uint16, "bfloat16": ctypes.c_uint16, "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}


class ErrorRecord(ctypes.Structure):
    """What a debug-mode kernel writes when a check fails (same layout on every backend)."""

    _fields_ = [("code", ctypes.c_int32), ("check_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("pad", ctypes.c_int32), ("index", ctypes.c_int64 * 4),
                ("shape", ctypes.c_int64 * 4)]


_ARRAY_CTYPES: dict[int, type] = {}


def array_ctype(ndim: int) -> type:
    if ndim not in _ARRAY_CTYPES:
        _ARRAY_CTYPES[ndim] = type(f"Array{ndim}d", (ctypes.Structure,), {
            "_fields_": [("data", ctypes.c_void_p), ("shape", ctypes.c_int64 * ndim),
                         ("strides", ctypes.c_int64 * ndim)]
        })
    return _ARRAY_CTYPES[ndim]


def ctype_of(t: T.Type) -> type:
    if isinstance(t, T.ScalarType):
        return _SCALAR_CTYPES[t.name]
    if isinstance(t, T.ArrayType):
        return array_ctype(t.ndim)
    if isinstance(t, (T.VectorType, T.MatrixType)):
        return _SCALAR_CTYPES[t.dtype.name] * t.count
    if isinstance(t, (T.StructType, T.IndexedArrayType)):
        return struct_ctype(t)
    raise NotImplementedError(f"cannot pass {t!r} to a CPU kernel yet")


_STRUCT_CTYPES: dict[T.Type, type] = {}


def struct_ctype(t: T.StructType | T.IndexedArrayType) -> type:
    """A ctypes Structure with the struct's (or indexed array's) C layout (ctypes aligns
    fields as C does)."""
    if t not in _STRUCT_CTYPES:
        _STRUCT_CTYPES[t] = type(f"Struct_{getattr(t, 'name', 'indexedarray')}",
                                 (ctypes.Structure,), {
            "_fields_": [(name, ctype_of(f)) for name, f in t.fields]
            or [("_padding", ctypes.c_uint8)]  # an empty struct is one byte, as in C++
        })
    return _STRUCT_CTYPES[t]


def args_ctype(params: tuple[T.Type, ...]) -> type:
    fields = [("dims", ctypes.c_int64 * 4), ("error", ctypes.c_void_p)]
    fields += [(f"p{i}", ctype_of(t)) for i, t in enumerate(params)]
    return type("KernelArgs", (ctypes.Structure,), {"_fields_": fields})


@dataclass
class CpuKernel:
    """A kernel specialisation loaded (JIT or shared library), ready to launch."""

    name: str
    entry: str
    hash: str
    cfunc: object
    args_type: type
    params: tuple[T.Type, ...]
    check_locs: tuple[Loc, ...]
    has_print: bool
    has_loops: bool
    private_params: frozenset[int]  # arrays whose atomics compiled to plain updates
    # Parameter indices of arrays with order-dependent atomics (-1: an array in a struct);
    # see `ir.analysis.order_dependent_atomics` and `kc.DeterministicMode`.
    order_dependent: frozenset[int]
    source_fn: Callable[[], str]  # LLVM IR text, generated on demand (a cache hit never needs it)
    binary_fn: Callable[[], bytes]  # the object code, read (or rebuilt) on demand
    codegen_time: float
    backend_time: float
    cache: str
    wide_launch: bool = False  # compiled for launches wider than its tid() (launch_alias.py)
    lanes: int = 1  # compiled for CPU blocks of this many threads (block_dim, ir/lanes.py)
    per_block: bool = False  # runs once per block (else per thread: it uses no tiles)

    def threads(self, size: int) -> int:
        """How many times the entry runs for a launch of `size` threads."""
        return -(-size // self.lanes) if self.per_block else size

    @functools.cached_property
    def source(self) -> str:
        """The LLVM IR text (made on first use, then kept: the kernel history reads it at
        every launch)."""
        return self.source_fn()

    @property
    def binary(self) -> bytes:
        return self.binary_fn()


def default_threads() -> int:
    return os.cpu_count() or 1


def raise_kernel_error(kernel: Any, compiled: Any, error: ErrorRecord) -> None:
    """Raises the KernelRuntimeError a failed check of `compiled` wrote into `error`
    (clearing it), with the check's source location and caret."""
    code = error.code
    loc = compiled.check_locs[error.check_id] if 0 <= error.check_id < len(
        compiled.check_locs) else None
    ndim = error.ndim
    index = tuple(error.index[:ndim])
    shape = tuple(error.shape[:ndim])
    error.code = 0
    if code == 2:
        what = "assertion failed"
    elif code == 3:
        what = f"local array index {index[0]} out of bounds for length {shape[0]}"
    else:
        what = f"array index {index} out of bounds for shape {shape}"
    where = f"{loc}: " if loc else ""
    caret = ("\n" + render_caret(loc)) if loc else ""
    raise KernelRuntimeError(f"{where}in kernel '{kernel.__name__}': {what}{caret}")
