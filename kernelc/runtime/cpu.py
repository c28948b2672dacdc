"""The CPU backend's runtime: one LLVM JIT engine per process and a pool of worker threads."""

from __future__ import annotations

import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kernelc import types as T
from kernelc.errors import Loc

KERNEL_CFUNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


class CpuJit:
    """Compiles LLVM IR for the host CPU and loads object code into one MCJIT engine."""

    def __init__(self) -> None:
        import llvmlite  # imported here: loading LLVM costs ~35 ms, paid at the first compile
        import llvmlite.binding as llvm

        self.llvm = llvm
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        self.cpu_name = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.tm = target.create_target_machine(
            cpu=self.cpu_name, features=self.features, opt=3, jit=True
        )
        self.triple = target.triple
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.tm)
        self.lock = threading.Lock()
        self._loaded: dict[str, int] = {}
        self.target_id = "|".join(
            (self.triple, self.cpu_name, self.features, llvmlite.__version__,
             ".".join(map(str, llvm.llvm_version_info)))
        )

    @property
    def has_avx512(self) -> bool:
        return "+avx512f" in self.features

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
        """Adds an object file to the engine (once per entry symbol); returns the address."""
        with self.lock:
            addr = self._loaded.get(entry)
            if addr is None:
                self.engine.add_object_file(self.llvm.ObjectFileRef.from_data(obj))
                self.engine.finalize_object()
                addr = self.engine.get_function_address(entry)
                if not addr:
                    raise RuntimeError(f"kernel symbol {entry} not found in its object code")
                self._loaded[entry] = addr
            return addr


class ThreadPool:
    """Runs a kernel's thread range in blocks on worker threads (ctypes drops the GIL)."""

    def __init__(self, num_threads: int):
        self.num_threads = max(1, num_threads)
        self._executor: ThreadPoolExecutor | None = None

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.num_threads, thread_name_prefix="kernelc")
        return self._executor

    def run(self, fn, args: int, n: int, blocks_per_thread: int) -> None:
        workers = self.num_threads
        nblocks = min(n, workers * blocks_per_thread)
        if workers == 1 or nblocks <= 1:
            fn(args, 0, n)
            return
        step = -(-n // nblocks)
        ranges = [(s, min(s + step, n)) for s in range(0, n, step)]
        pool = self._pool()
        futures = [pool.submit(fn, args, s, e) for s, e in ranges[1:]]
        fn(args, *ranges[0])  # the calling thread takes the first block
        for f in futures:
            f.result()


@dataclass
class CpuState:
    jit: CpuJit
    pool: ThreadPool


def cpu_state(num_threads: int) -> CpuState:
    """The process's CPU JIT and pool (kept on the runtime object, built on first use)."""
    from kernelc.runtime.context import get_runtime

    rt = get_runtime()
    with rt.lock:
        if rt.cpu is None:
            rt.cpu = CpuState(CpuJit(), ThreadPool(num_threads))
        elif rt.cpu.pool.num_threads != max(1, num_threads):
            rt.cpu.pool = ThreadPool(num_threads)
    return rt.cpu


# ---- argument packing ------------------------------------------------------------------------

_SCALAR_CTYPES = {
    "bool": ctypes.c_uint8, "int8": ctypes.c_int8, "int16": ctypes.c_int16,
    "int32": ctypes.c_int32, "int64": ctypes.c_int64, "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
    "float16": ctypes.c_uint16, "float32": ctypes.c_float, "float64": ctypes.c_double,
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
    if isinstance(t, T.StructType):
        return struct_ctype(t)
    raise NotImplementedError(f"cannot pass {t!r} to a CPU kernel yet")


_STRUCT_CTYPES: dict[T.StructType, type] = {}


def struct_ctype(t: T.StructType) -> type:
    """A ctypes Structure with the struct's C layout (ctypes aligns fields as C does)."""
    if t not in _STRUCT_CTYPES:
        _STRUCT_CTYPES[t] = type(f"Struct_{t.name}", (ctypes.Structure,), {
            "_fields_": [(name, ctype_of(f)) for name, f in t.fields]
        })
    return _STRUCT_CTYPES[t]


def args_ctype(params: tuple[T.Type, ...]) -> type:
    fields = [("dims", ctypes.c_int64 * 4), ("error", ctypes.c_void_p)]
    fields += [(f"p{i}", ctype_of(t)) for i, t in enumerate(params)]
    return type("KernelArgs", (ctypes.Structure,), {"_fields_": fields})


@dataclass
class CpuKernel:
    """A kernel specialisation loaded into the CPU JIT, ready to launch."""

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
    source_fn: object  # () -> LLVM IR text, generated on demand (a cache hit never needs it)
    binary: bytes
    codegen_time: float
    backend_time: float
    cache: str


    @property
    def source(self) -> str:
        return self.source_fn()


def default_threads() -> int:
    return os.cpu_count() or 1
