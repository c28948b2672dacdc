"""From a kernel specialisation to loaded machine code, through the memory and disk caches."""

from __future__ import annotations

import functools
import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from kernelc import types as T
from kernelc.codegen.llvm import LlvmOptions, emit_llvm
from kernelc.config import config
from kernelc.errors import Loc
from kernelc.ir import nodes as ir
from kernelc.ir.passes import run_pipeline
from kernelc.ir.printer import format_module
from kernelc.runtime.cache import DiskCache, cache_key
from kernelc.runtime.cpu import KERNEL_CFUNC, CpuKernel, args_ctype, cpu_state


def ir_hash(module: ir.Module, *options: Any) -> str:
    """SHA-256 of the IR text and the options: names the entry symbol and keys the cache."""
    text = format_module(module) + "|" + "|".join(map(repr, options))
    return hashlib.sha256(text.encode()).hexdigest()


def optimized_ir(kernel, arg_types: tuple[T.Type, ...]) -> ir.Module:
    module = kernel.get_ir(arg_types)
    return run_pipeline(module, dump=config.dump_ir)


def cpu_options(private_atomics: bool = True) -> LlvmOptions:
    jit = cpu_state(config.num_threads).jit
    # 512-bit vectors where the CPU has them: kernels are mostly streaming loops, and
    # LLVM's default of 256 bits halves their width for no gain here.
    return LlvmOptions(debug=config.mode == "debug",
                       vector_width=512 if jit.has_avx512 else 256,
                       private_atomics=private_atomics)


def get_cpu_kernel(kernel, arg_types: tuple[T.Type, ...],
                   private_atomics: bool = True) -> CpuKernel:
    """The loaded CPU kernel for these argument types (memory cache, disk cache, compile)."""
    options = cpu_options(private_atomics)
    mem_key = ("cpu", arg_types, options)
    found = kernel.compiled.get(mem_key)
    if found is not None:
        return found
    from kernelc import __version__

    state = cpu_state(config.num_threads)
    t0 = time.perf_counter()
    module = optimized_ir(kernel, arg_types)
    digest = ir_hash(module, options)
    entry = f"kc_{module.kernel.name}_{digest[:16]}"
    # The disk key hashes kernelc's own IR, so a warm start skips LLVM IR generation too.
    key = cache_key(digest, entry, state.jit.target_id, __version__)
    disk = DiskCache(config.kernel_cache_dir)
    payload = disk.load(key, "o") if config.cache_kernels else None
    cached = _unpack_object(payload) if payload is not None else None
    t1 = time.perf_counter()
    cache = "disk"
    if cached is None:
        source = emit_llvm(module, entry, options)
        t1 = time.perf_counter()
        binary = state.jit.compile(source.text)
        cache = "miss"
        cached = (binary, source.check_locs, source.has_print)
        if config.cache_kernels:
            disk.store(key, "o", _pack_object(*cached))
    binary, check_locs, has_print = cached
    address = state.jit.load(binary, entry)
    t2 = time.perf_counter()
    compiled = CpuKernel(
        name=kernel.__name__, entry=entry, hash=key, cfunc=KERNEL_CFUNC(address),
        args_type=args_ctype(arg_types), params=arg_types, check_locs=check_locs,
        has_print=has_print, has_loops=_has_loops(module),
        private_params=_private(module, options),
        source_fn=functools.partial(_llvm_text, module, entry, options),
        binary=binary, codegen_time=(t1 - t0) * 1e3, backend_time=(t2 - t1) * 1e3, cache=cache,
    )
    _trace_compile(kernel.__name__, cache, t0, t1, t2)
    if config.log_level == "debug":
        how = "compiled" if cache == "miss" else "cached"
        print(f"Module {kernel.key} load on device 'cpu' took {(t2 - t0) * 1e3:.2f} ms  ({how})")
    kernel.compiled[mem_key] = compiled
    return compiled


def _trace_compile(name: str, cache: str, t0: float, t1: float, t2: float) -> None:
    from kernelc.timing.trace import active_sink

    sink = active_sink()
    if sink is None:
        return
    # perf_counter and perf_counter_ns share one clock: seconds -> ns keeps events aligned.
    a, b, c = (int(t * 1e9) for t in (t0, t1, t2))
    sink.event(f"codegen {name}", "compile", a, b, {"cache": cache})
    phase = "llvm compile" if cache == "miss" else "load cached object"
    sink.event(f"{phase} {name}", "compile", b, c, {"cache": cache})


def _private(module: ir.Module, options: LlvmOptions) -> frozenset[int]:
    if not options.private_atomics:
        return frozenset()
    from kernelc.ir.analysis import thread_private_params

    return thread_private_params(module.kernel)


def _llvm_text(module: ir.Module, entry: str, options: LlvmOptions) -> str:
    return emit_llvm(module, entry, options).text


def _pack_object(binary: bytes, check_locs, has_print: bool) -> bytes:
    meta = json.dumps({"has_print": has_print,
                       "check_locs": [[c.file, c.line, c.col, c.end_col] for c in check_locs]})
    head = meta.encode()
    return len(head).to_bytes(4, "little") + head + binary


def _unpack_object(payload: bytes):
    try:
        n = int.from_bytes(payload[:4], "little")
        meta = json.loads(payload[4:4 + n])
        locs = tuple(Loc(*c) for c in meta["check_locs"])
        return payload[4 + n:], locs, bool(meta["has_print"])
    except (ValueError, KeyError, TypeError):
        return None  # not ours: recompile


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
        return kernel.param_types
    if isinstance(arg_types, dict):
        arg_types = [arg_types[n] for n in kernel.arg_names]
    types = []
    for a in arg_types:
        t = T.as_type(a)
        if t is None:
            raise TypeError(f"{a!r} is not a kernelc type")
        types.append(t)
    return kernel.specialize(tuple(types))
