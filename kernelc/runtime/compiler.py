"""From a kernel specialisation to loaded machine code, through the memory and disk caches.

A CPU kernel's disk entries are keyed by a hash of kernelc's IR, the host target (see
`hostinfo.py`) and kernelc's version: `<key>.o`, the object code and its metadata, which
the LLVM JIT loads; and `<key>.so`, the same code linked into a shared library in the
background after a compile (see `native.py`). A warm start computes the key, dlopens the
library and takes the entry's address: it never starts LLVM nor imports the code generator.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelc import types as T
from kernelc.config import config
from kernelc.errors import KernelError, Loc
from kernelc.ir import nodes as ir
from kernelc.ir.passes import run_pipeline
from kernelc.ir.printer import format_module
from kernelc.logger import LOG_INFO, log_debug, log_info
from kernelc.runtime.cache import DiskCache, cache_key, codegen_fingerprint, sha256
from kernelc.runtime.cpu import CpuKernel, CpuState, args_ctype, cpu_state, kernel_cfunc
from kernelc.runtime.native import LIBRARY_EXT, NO_LINK_EXT, LinkJob
from kernelc.typevars import has_constraint

OBJECT_EXT = "o"


def ir_hash(module: ir.Module, *options: Any) -> str:
    """SHA-256 of the IR text, the layouts of the structs it uses and the options: names
    the entry symbol and keys the cache."""
    text = (format_module(module) + "|" + _struct_definitions(module) + "|"
            + "|".join(map(repr, options)))
    return sha256(text.encode()).hexdigest()


def _struct_definitions(module: ir.Module) -> str:
    """Every struct type the module uses, with its fields: the IR text names structs only,
    and a struct whose fields changed under the same name must not load an old image."""
    seen: dict[int, T.StructType] = {}

    def visit_type(t: Any) -> None:
        if isinstance(t, T.StructType):
            if id(t) in seen:
                return
            seen[id(t)] = t
            for _, f in t.fields:
                visit_type(f)
        else:
            inner = getattr(t, "dtype", None)
            if isinstance(inner, T.Type):
                visit_type(inner)

    def visit_block(block: Any) -> None:
        for stmt in block:
            for name in ("result", "value", "cond"):
                value = getattr(stmt, name, None)
                if isinstance(value, ir.Value):
                    visit_type(value.type)
            for value in getattr(stmt, "args", ()) or ():
                if isinstance(value, ir.Value):
                    visit_type(value.type)
            for name in ("then_body", "else_body", "body", "cond_body"):
                inner = getattr(stmt, name, None)
                if inner is not None:
                    visit_block(inner)

    for fn in (*module.funcs, module.kernel):
        for value in (*fn.params, *fn.slots):
            visit_type(value.type)
        visit_block(fn.body)
    return ";".join(sorted(f"{t.name}{{{', '.join(f'{n}: {f!r}' for n, f in t.fields)}}}"
                           for t in seen.values()))


def optimized_ir(kernel, arg_types: tuple[T.Type, ...], lanes: int = 1) -> ir.Module:
    module = run_pipeline(kernel.get_ir(arg_types, lanes=lanes), dump=config.dump_ir)
    if config.verify_fp:
        from kernelc.ir.passes.fp_checks import insert_fp_checks

        module = insert_fp_checks(module)
    return module


@dataclass(frozen=True)
class CpuOptions:
    """A CPU kernel's code generation options (those of `codegen.llvm.LlvmOptions`).

    Kept apart from the code generator so that keying a kernel does not import it: a warm
    start never generates LLVM IR.
    """

    debug: bool = False
    vector_width: int = 512
    disjoint_arrays: bool = True
    expanded: bool = False
    simd: str = "auto"
    wide_launch: bool = False

    def llvm(self):
        from kernelc.codegen.llvm import LlvmOptions

        return LlvmOptions(debug=self.debug, vector_width=self.vector_width,
                           disjoint_arrays=self.disjoint_arrays, expanded=self.expanded,
                           simd=self.simd, wide_launch=self.wide_launch)


def cpu_options(disjoint_arrays: bool = True, expanded: bool = False,
                wide_launch: bool = False) -> CpuOptions:
    host = cpu_state(config.num_threads).host(_cache_dir())
    # 512-bit vectors where the CPU has them: kernels are mostly streaming loops, and
    # LLVM's default of 256 bits halves their width for no gain here.
    return CpuOptions(debug=config.mode == "debug",
                      vector_width=512 if host.has_avx512 else 256,
                      disjoint_arrays=disjoint_arrays, expanded=expanded, simd=_simd_mode(),
                      wide_launch=wide_launch)


def _simd_mode() -> str:
    mode = config.cpu_simd
    if mode not in ("auto", "all", "off"):
        raise ValueError(f"config.cpu_simd must be 'auto', 'all' or 'off', not {mode!r}")
    return mode


# Set while `kc.load_aot_module` loads: a kernel missing from the disk cache then raises
# FileNotFoundError instead of being compiled (runtime/aot.py).
LOAD_ONLY = False


def _cache_dir() -> str | None:
    return config.kernel_cache_dir if config.cache_kernels else None


@dataclass(frozen=True)
class _Loaded:
    """Machine code in memory, from a library, a cached object or a compile."""

    address: int
    check_locs: tuple[Loc, ...]
    has_print: bool
    binary_fn: Callable[[], bytes]
    cache: str  # "disk" | "miss"
    phase: str  # what the backend time was spent on (for the trace)
    codegen_end: float  # perf_counter() when the key was known / the LLVM IR was generated


def get_cpu_kernel(kernel, arg_types: tuple[T.Type, ...], disjoint_arrays: bool = True,
                   expanded: bool = False, wide_launch: bool = False,
                   lanes: int = 1) -> CpuKernel:
    """The loaded CPU kernel for these argument types (memory cache, disk cache, compile).

    `expanded`: the variant run by `ReduceMode.Expand` on per-worker private copies;
    `wide_launch`: the variant for launches with more dimensions than some tid() unpacks
    (see `launch_alias.wide_launch`); `lanes` > 1: the variant run once per CPU block of
    that many lanes (`config.enable_cpu_blocks`, see `ir/lanes.py`)."""
    options = cpu_options(disjoint_arrays, expanded, wide_launch)
    mem_key = ("cpu", arg_types, options, config.verify_fp, lanes)
    found = kernel.compiled.get(mem_key)
    if found is not None:
        return found
    from kernelc import __version__

    state = cpu_state(config.num_threads)
    t0 = time.perf_counter()
    module = optimized_ir(kernel, arg_types, lanes)
    from kernelc.runtime.native_snippets import prepare_cpu

    prepare_cpu(module, state, _cache_dir(), kernel.__name__)  # before any load resolves them
    digest = ir_hash(module, options)
    entry = f"kc_{module.kernel.name}_{digest[:16]}"
    host = state.host(_cache_dir())
    # The disk key hashes kernelc's own IR, so a warm start skips LLVM IR generation too.
    key = cache_key(digest, entry, host.target_id, __version__, codegen_fingerprint())
    disk = DiskCache(config.kernel_cache_dir) if config.cache_kernels else None
    loaded = _load_cached(state, disk, key, entry, module, options) if disk else None
    if loaded is None and LOAD_ONLY:
        raise FileNotFoundError(f"kernel '{kernel.__name__}' was not compiled ahead of time "
                                f"for this CPU and code: no {disk.path(key, LIBRARY_EXT)}")
    if loaded is None:
        if state.jit.host != host:  # the remembered host target was not LLVM's: re-key
            _remember_host(state, replace=True)
            return get_cpu_kernel(kernel, arg_types, disjoint_arrays, expanded, wide_launch,
                                  lanes)
        loaded = _compile(state, disk, key, entry, module, options)
    t1, t2 = loaded.codegen_end, time.perf_counter()
    compiled = CpuKernel(
        name=kernel.__name__, entry=entry, hash=key, cfunc=kernel_cfunc(loaded.address),
        args_type=args_ctype(arg_types), params=arg_types, check_locs=loaded.check_locs,
        has_print=loaded.has_print, has_loops=_has_loops(module),
        private_params=_private(module, options),
        order_dependent=_order_dependent(module, options),
        source_fn=functools.partial(_llvm_text, module, entry, options),
        binary_fn=loaded.binary_fn, codegen_time=(t1 - t0) * 1e3,
        backend_time=(t2 - t1) * 1e3, cache=loaded.cache, wide_launch=wide_launch,
        lanes=lanes, per_block=module.kernel.lanes > 1,
    )
    _trace_compile(kernel.__name__, loaded, t0, t1, t2)
    if config.log_level <= LOG_INFO:
        _log_load(kernel, loaded, key, t0, t1, t2)
    kernel.compiled[mem_key] = compiled
    return compiled


def _load_cached(state: CpuState, disk: DiskCache, key: str, entry: str, module: ir.Module,
                 options: CpuOptions) -> _Loaded | None:
    """The kernel from the disk cache: its shared library (no LLVM), else its object (JIT)."""
    t1 = time.perf_counter()
    found = disk.load_image(key, LIBRARY_EXT)
    meta = _unpack_meta(found[1]) if found is not None else None
    if meta is not None:
        try:
            address = state.libraries.address(found[0], entry)
        except OSError:  # not loadable here: use the object, and do not link it again
            disk.discard(key, LIBRARY_EXT)
            disk.store(key, NO_LINK_EXT, b"dlopen failed")
        else:
            binary_fn = functools.partial(_object_code, state, disk, key, entry, module, options)
            return _Loaded(address, *meta, binary_fn, "disk", "load shared library", t1)
    elif found is not None:
        disk.discard(key, LIBRARY_EXT)
    payload = disk.load(key, OBJECT_EXT)
    cached = _unpack_object(payload) if payload is not None else None
    if cached is None:
        return None
    binary, check_locs, has_print = cached
    address = state.jit.load(binary, entry)
    if not disk.exists(key, LIBRARY_EXT) and not disk.exists(key, NO_LINK_EXT):
        state.linker.submit(LinkJob(disk.directory, key, binary, _pack_meta(check_locs, has_print)))
    return _Loaded(address, check_locs, has_print, lambda: binary, "disk", "load cached object", t1)


def _compile(state: CpuState, disk: DiskCache | None, key: str, entry: str, module: ir.Module,
             options: CpuOptions) -> _Loaded:
    """LLVM IR -> object code, stored (and linked in the background), loaded into the JIT."""
    from kernelc.codegen.llvm import emit_llvm

    source = emit_llvm(module, entry, options.llvm())
    t1 = time.perf_counter()
    binary = state.jit.compile(source.text)
    if disk is not None:
        meta = _pack_meta(source.check_locs, source.has_print)
        disk.store(key, OBJECT_EXT, _pack_object(binary, meta))
        _remember_host(state)  # lets the next process skip LLVM
        state.linker.submit(LinkJob(disk.directory, key, binary, meta))
    address = state.jit.load(binary, entry)
    return _Loaded(address, source.check_locs, source.has_print, lambda: binary, "miss",
                   "llvm compile", t1)


def _remember_host(state: CpuState, replace: bool = False) -> None:
    from kernelc.runtime.hostinfo import remember

    if config.cache_kernels:
        remember(config.kernel_cache_dir, state.jit.host, replace=replace)


def _object_code(state: CpuState, disk: DiskCache, key: str, entry: str, module: ir.Module,
                 options: CpuOptions) -> bytes:
    """A library-loaded kernel's object code (for `kc.compile`): the cached entry, or rebuilt."""
    payload = disk.load(key, OBJECT_EXT)
    cached = _unpack_object(payload) if payload is not None else None
    if cached is not None:
        return cached[0]
    return state.jit.compile(_llvm_text(module, entry, options))


def _log_load(kernel, loaded: _Loaded, key: str, t0: float, t1: float, t2: float) -> None:
    """Warp's load line at info level (`config.log_level = kc.LOG_INFO`), and where the
    time went at debug level."""
    how = "compiled" if loaded.cache == "miss" else "cached"
    log_debug(f"Kernel {kernel.key} on device 'cpu': codegen {(t1 - t0) * 1e3:.2f} ms, "
              f"{loaded.phase} {(t2 - t1) * 1e3:.2f} ms (cache key {key[:12]})")
    log_info(f"Module {kernel.key} load on device 'cpu' took {(t2 - t0) * 1e3:.2f} ms  ({how})")


def _trace_compile(name: str, loaded: _Loaded, t0: float, t1: float, t2: float) -> None:
    from kernelc.timing.trace import active_sink

    sink = active_sink()
    if sink is None:
        return
    # perf_counter and perf_counter_ns share one clock: seconds -> ns keeps events aligned.
    a, b, c = (int(t * 1e9) for t in (t0, t1, t2))
    sink.event(f"codegen {name}", "compile", a, b, {"cache": loaded.cache})
    sink.event(f"{loaded.phase} {name}", "compile", b, c, {"cache": loaded.cache})


def _order_dependent(module: ir.Module, options: CpuOptions) -> frozenset[int]:
    from kernelc.ir.analysis import order_dependent_atomics

    ids = order_dependent_atomics(module.kernel, _private(module, options))
    index = {p.id: i for i, p in enumerate(module.kernel.params)}
    return frozenset(index.get(i, -1) for i in ids)


def _private(module: ir.Module, options: CpuOptions) -> frozenset[int]:
    if not options.disjoint_arrays or options.wide_launch:
        return frozenset()
    from kernelc.ir.analysis import thread_private_params

    return thread_private_params(module.kernel)


def _llvm_text(module: ir.Module, entry: str, options: CpuOptions) -> str:
    from kernelc.codegen.llvm import emit_llvm

    return emit_llvm(module, entry, options.llvm()).text


def _pack_meta(check_locs: tuple[Loc, ...], has_print: bool) -> bytes:
    return json.dumps({"has_print": has_print,
                       "check_locs": [[c.file, c.line, c.col, c.end_col] for c in check_locs]
                       }).encode()


def _unpack_meta(meta: bytes) -> tuple[tuple[Loc, ...], bool] | None:
    try:
        fields = json.loads(meta)
        return tuple(Loc(*c) for c in fields["check_locs"]), bool(fields["has_print"])
    except (ValueError, KeyError, TypeError):
        return None  # not ours: recompile


def _pack_object(binary: bytes, meta: bytes) -> bytes:
    return len(meta).to_bytes(4, "little") + meta + binary


def _unpack_object(payload: bytes) -> tuple[bytes, tuple[Loc, ...], bool] | None:
    n = int.from_bytes(payload[:4], "little")
    meta = _unpack_meta(payload[4:4 + n])
    return None if meta is None else (payload[4 + n:], *meta)


def _has_loops(module: ir.Module) -> bool:
    for fn in (module.kernel, *module.funcs):
        for s in ir.walk(fn.body):
            if isinstance(s, (ir.For, ir.While)):
                return True
    return False


@dataclass(frozen=True)
class CompiledKernel:
    """What `kc.compile` returns: the generated source and the binary image."""

    source: str
    binary: bytes
    format: str  # "obj" | "cubin" | "ptx"
    hash: str
    target: str
    entry: str


def compile_kernel(kernel, target: str = "cpu", arch: int | None = None,
                   arg_types: Any = None) -> CompiledKernel:
    """Ahead-of-time compile `kernel` for `target` ("cpu" or "cuda") without launching it."""
    types = _arg_types(kernel, arg_types)
    if target == "cpu":
        k = get_cpu_kernel(kernel, types)
        return CompiledKernel(k.source, k.binary, "obj", k.hash, "cpu", k.entry)
    if target == "cuda":
        from kernelc.runtime.cuda_compile import compile_cuda_kernel

        return compile_cuda_kernel(kernel, types, arch)
    raise ValueError(f"unknown target {target!r}; expected 'cpu' or 'cuda'")


def _arg_types(kernel, arg_types: Any) -> tuple[T.Type, ...]:
    if arg_types is None:
        types = kernel.param_types
    else:
        if isinstance(arg_types, dict):
            arg_types = [arg_types[n] for n in kernel.arg_names]
        given = []
        for a in arg_types:
            t = T.as_type(a)
            if t is None:
                raise TypeError(f"{a!r} is not a kernelc type")
            given.append(t)
        types = kernel.specialize(tuple(given))
    if has_constraint(types):  # kc.Float / kc.Int / kc.Scalar left unspecialised
        raise KernelError(f"kernel '{kernel.__name__}' is generic: give arg_types",
                          kernel=kernel.__name__)
    return types
