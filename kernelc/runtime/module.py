"""Module-level runtime functions: init, constants, cache control, eager loading."""

from __future__ import annotations

import sys
import types
import weakref
from typing import Any

from kernelc.config import check_deterministic, check_max_records, config
from kernelc.runtime.context import get_runtime
from kernelc.typevars import has_constraint


def init() -> None:
    """Initialises the runtime (done implicitly on first use; calling it again is harmless)."""
    get_runtime()


def constant(value: Any) -> Any:
    """Marks a module-level value as a compile-time constant (folded into kernels)."""
    return value


# Warp's module options. kernelc honours `block_dim` (the default block size of CUDA launches
# of the module's kernels), `enable_backward` (False leaves the module's kernels out of
# `Tape.backward`) and `deterministic` (see `kc.DeterministicMode`); the others are stored
# and returned but have no effect (kernelc leaves unrolling and FP contraction to
# LLVM/NVRTC, and takes `mode` and `lineinfo` from `kc.config`).
_MODULE_OPTION_DEFAULTS: dict[str, Any] = {
    "max_unroll": None, "enable_backward": None, "fast_math": False, "fuse_fp": True,
    "lineinfo": None, "cuda_output": None, "mode": None, "optimization_level": None,
    "cpu_compiler_flags": None, "block_dim": 256, "compile_time_trace": None,
    "strip_hash": False, "deterministic": None, "deterministic_max_records": None,
    # libraries Warp may use for tile operations on GPUs; kernelc's are its own loops
    "enable_mathdx_gemm": None, "enable_mathdx_solver": None, "enable_mathdx_fft": None,
    "extra_build_options": None, "default_grid_stride": None,
}
MODULE_OPTION_KEYS = tuple(sorted(_MODULE_OPTION_DEFAULTS))
# `deterministic` stays None (follow `kc.config.deterministic` at each launch) until set.
_FROM_CONFIG = ("max_unroll", "enable_backward", "lineinfo", "compile_time_trace",
                "deterministic_max_records")


def _module_name(module: Any, depth: int) -> str:
    if module is None:  # as in Warp: the module of the caller
        return sys._getframe(depth + 1).f_globals.get("__name__", "__main__")
    if isinstance(module, str):
        return module
    name = getattr(module, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"a module is a module object or its name, not {type(module).__name__}")
    return name


def module_options(name: str) -> dict[str, Any]:
    """The options of the module called `name` (Warp's defaults until set)."""
    table = get_runtime().extras.setdefault("module_options", {})
    options = table.get(name)
    if options is None:
        options = dict(_MODULE_OPTION_DEFAULTS)
        for key in _FROM_CONFIG:
            options[key] = getattr(config, key)
        table[name] = options
    return options


def set_module_options(options: dict[str, Any], module: Any = None) -> None:
    """Updates the options of `module` (default: the calling module), as Warp's
    `wp.set_module_options`. Any of Warp's keys is accepted; kernelc acts on `block_dim`
    (default CUDA block size for launches of the module's kernels), `enable_backward` and
    `deterministic` (a `kc.DeterministicMode`; None, the default, follows
    `kc.config.deterministic`), and ignores the rest.
    """
    if not isinstance(options, dict):
        raise TypeError(f"set_module_options() takes a dict, got {type(options).__name__}")
    block_dim = options.get("block_dim")
    if block_dim is not None and not (isinstance(block_dim, int) and 1 <= block_dim <= 1024):
        raise ValueError(f"block_dim must be an int from 1 to 1024, got {block_dim!r}")
    if options.get("deterministic") is not None:
        check_deterministic(options["deterministic"])
    if "deterministic" in options:
        config.deterministic_epoch += 1
    if "deterministic_max_records" in options:
        check_max_records(options["deterministic_max_records"])
    module_options(_module_name(module, 1)).update(options)


def get_module_options(module: Any = None) -> dict[str, Any]:
    """The options of `module` (default: the calling module); see `set_module_options`."""
    return module_options(_module_name(module, 1))


def clear_kernel_cache() -> None:
    """Deletes every compiled kernel in the disk cache (`kc.config.kernel_cache_dir`)."""
    from kernelc.runtime.cache import DiskCache

    DiskCache(config.kernel_cache_dir).clear()


# Every kernel made, by module name: Warp's modules hold the kernels defined inside
# functions too, which a scan of the module's globals would miss.
_KERNELS: dict[str, weakref.WeakSet] = {}


def register_kernel(kernel: Any) -> None:
    _KERNELS.setdefault(str(kernel.module), weakref.WeakSet()).add(kernel)


def registered_kernels() -> list:
    """Every kernel made so far (and still alive), in every module."""
    return [k for kernels in list(_KERNELS.values()) for k in list(kernels)]


def _kernels_of(module: Any) -> list:
    from kernelc.frontend.decorators import Kernel

    name = _module_name(module if module is not None else "__main__", 1)
    found = {id(k): k for k in _KERNELS.get(name, ())}
    python_module = module if isinstance(module, types.ModuleType) else sys.modules.get(name)
    for v in vars(python_module).values() if python_module is not None else ():
        if isinstance(v, Kernel):
            found.setdefault(id(v), v)
    return list(found.values())


class Module(str):
    """A kernel module as Warp names it (`kernel.module`, `kc.get_module(name)`): the kernels
    defined in one Python module, with its options. It is its name (a `str`), so it can be
    used wherever a module name is taken."""

    def __new__(cls, name: str, loader: Any = None) -> Module:
        # `loader` is the second argument of Warp's constructor (`wp.Module(name, None)`);
        # kernelc finds a module's kernels by name, so there is nothing to load with it.
        if isinstance(name, types.ModuleType):  # `@kc.kernel(module=some_python_module)`
            name = name.__name__
        if not isinstance(name, str):
            raise TypeError(f"a module name is a str, not {type(name).__name__}")
        return super().__new__(cls, name)

    @property
    def name(self) -> str:
        return str(self)

    @property
    def options(self) -> dict[str, Any]:
        """The module's options (live: updating them is `kc.set_module_options`)."""
        return module_options(str(self))

    @property
    def kernels(self) -> list:
        return _kernels_of(str(self))

    def load(self, device: Any = None, block_dim: int | None = None) -> None:
        """Compiles (or loads from the cache) the module's non-generic kernels on `device`."""
        if block_dim is not None:
            set_module_options({"block_dim": block_dim}, str(self))
        load_module(str(self), device)

    def unload(self) -> None:
        """Drops the compiled kernels from memory; the next launch loads them again (from
        the disk cache when the code is unchanged)."""
        for k in self.kernels:
            k.compiled.clear()
            k.last_launch = None

    def mark_modified(self) -> None:
        """Forgets the kernels' IR and code, so that the next launch reads their Python
        source and globals again (after a module-level constant changed)."""
        for k in self.kernels:
            k.forget_compiled()

    def hash_module(self) -> str:
        """A hash of the module's kernels, in hex: each one's key, Python source, parameter
        types, `kc.static` values known at declaration and code as it compiles now (so the
        constants, funcs and func arguments it reads count, as in Warp); a struct by its
        name and fields (so a struct redefined with the same fields hashes the same, and one
        whose fields changed does not)."""
        import hashlib
        import inspect

        from kernelc.errors import KernelError
        from kernelc.ir.printer import format_module
        from kernelc.runtime.compiler import _struct_definitions

        parts = []
        for k in self.kernels:
            try:
                source = inspect.getsource(k.func)
            except (OSError, TypeError):
                source = ""
            try:
                params = ",".join(type_code(t) for t in k.param_types)
            except KernelError:  # an annotation that is no kernelc type
                params = repr(k.annotations)
            statics = ";".join(_static_code(v) for _, v in sorted(k.static_values.items()))
            code = "\n".join(f"{format_module(m)}\n{_struct_definitions(m)}"
                             for m in k.lowered_now())
            parts.append(f"{k.key}\n{params}\n{statics}\n{source}\n{code}")
        digest = hashlib.sha256()
        for part in sorted(parts):
            digest.update(part.encode())
        return digest.hexdigest()

    def __repr__(self) -> str:
        return f"<kernelc.Module {str(self)!r}>"


def _static_code(value: Any) -> str:
    """A description of a `kc.static` value for hashing: funcs and kernels by name, values
    by their repr (never an address, which changes from run to run)."""
    name = getattr(value, "key", None) or getattr(value, "__qualname__", None)
    if name is not None:
        return f"{getattr(value, '__module__', '')}.{name}"
    text = repr(value)
    return type(value).__qualname__ if " at 0x" in text else text


def type_code(t: Any) -> str:
    """A description of the type `t` for hashing: structs by name and fields, never by the
    identity of their Python class."""
    from kernelc import types as T

    if t is None:
        return "Any"
    if isinstance(t, T.StructType):
        fields = ";".join(f"{name}:{type_code(ft)}" for name, ft in t.fields)
        return f"struct {t.name}{{{fields}}}"
    if isinstance(t, (T.ArrayType, T.IndexedArrayType)):
        return f"{type(t).__name__}({t.ndim},{type_code(t.dtype)})"
    if isinstance(t, T.VectorType):
        return f"{t.kind}({t.length},{t.dtype!r})"
    return repr(t)


def get_module(name: str | None = None) -> Module:
    """The module called `name` (default: the caller's), as Warp's `wp.get_module`."""
    return Module(_module_name(name, 1))


def load_module(module: Any = None, device: Any = None, block_dim: int | None = None) -> None:
    """Compiles (or loads from the cache) every non-generic kernel defined in `module`;
    on the CPU, for launches with `block_dim` (see `config.enable_cpu_blocks`)."""
    from kernelc.runtime.compiler import get_cpu_kernel
    from kernelc.runtime.cpu_blocks import cpu_lanes
    from kernelc.runtime.device import get_device

    dev = get_device(device)
    if module is None:  # as in Warp: the module that called load_module()
        module = sys._getframe(1).f_globals.get("__name__", "__main__")
    for k in _kernels_of(module):
        if k.is_generic or has_constraint(k.param_types):  # specialised per launch
            continue
        if dev.is_cpu:
            get_cpu_kernel(k, k.param_types, lanes=cpu_lanes(block_dim))
        else:
            from kernelc.runtime.cuda_launch import load_cuda_kernel

            load_cuda_kernel(k, k.param_types, dev)


def force_load(device: Any = None, modules: Any = None, block_dim: int | None = None,
               max_workers: int | None = None) -> None:
    """Loads the kernels of `modules` (default: `__main__`) on `device` before any launch,
    for launches with `block_dim`. `max_workers` (Warp's parallel loading) is accepted:
    kernelc loads one module after another."""
    for m in modules if modules is not None else ["__main__"]:
        load_module(m, device, block_dim)
