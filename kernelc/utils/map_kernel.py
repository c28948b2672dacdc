"""The kernels of `kc.map`: the result types of a mapped call, and the generated kernel.

One kernel is generated per callable, input types and kinds (array dimensions and which
have size 1, or a value) and result types, as Warp does; its parameters are typed, so
`kc.compile` and `kc.launch` treat it like any other kernel. The kernel's text is written
to `kc.config.kernel_cache_dir`/map (to be read when debugging) and registered with
`linecache`, which is where kernelc reads kernel source from.
"""

from __future__ import annotations

import ast
import hashlib
import linecache
import os
import tempfile
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

from kernelc import types as T
from kernelc.config import config
from kernelc.errors import UNKNOWN_LOC, KernelError
from kernelc.frontend.decorators import Func, Kernel
from kernelc.frontend.source import Source
from kernelc.runtime.context import get_runtime
from kernelc.utils.map_func import MapTarget

# An input's kind: None for a value passed through, (ndim, broadcast mask, indexed) for an
# array; the mask says which dimensions have size 1 (they are read at index 0), and
# `indexed` that it is a kc.indexedarray (the kernel parameter's type differs).
InputKind = tuple[int, tuple[bool, ...], bool] | None

_PROBE_FILE = "<kc.map call>"
# Names the generated code uses itself; parameter names that clash fall back to argN.
_RESERVED = {"kc", "map_func", "map_kernel"}
_RESERVED_PREFIXES = ("tid_", "out_", "result_", "type_")


class MapCache:
    """What `kc.map` keeps for the life of the process (on the runtime object): funcs made
    from Python functions, result types per argument types, and generated kernels."""

    def __init__(self) -> None:
        self.funcs: dict[Hashable, Func] = {}
        self.results: dict[Hashable, tuple[T.Type, ...]] = {}
        self.kernels: dict[Hashable, Kernel] = {}


def map_cache() -> MapCache:
    extras = get_runtime().extras
    cache = extras.get("map")
    return cache if cache is not None else extras.setdefault("map", MapCache())


# ---- result types ------------------------------------------------------------------------

def result_types(target: MapTarget, arg_types: tuple[T.Type, ...],
                 cache: MapCache) -> tuple[T.Type, ...]:
    """The types `target` returns for arguments of `arg_types` (one per output).

    Raises:
        KernelError: The call does not compile: at the mapped function's line when its own
            code is at fault, without a position when it does not take these types.
        TypeError: It returns nothing.
    """
    key = (target.key, arg_types)
    found = cache.results.get(key)
    if found is None:
        found = cache.results[key] = _probe(target, arg_types)
    return found


def _probe(target: MapTarget, arg_types: tuple[T.Type, ...]) -> tuple[T.Type, ...]:
    """Lowers `def probe(args): return map_func(args)` for these types: what the kernel's
    call will return, found by the same type rules that compile the kernel."""
    try:
        lowered = _lower_probe(target, arg_types, "return ")
    except KernelError as err:
        if err.loc is not None and err.loc.file != _PROBE_FILE:
            raise  # a mistake in the mapped function's own code: shown at its line
        try:  # does the call compile as a statement? Then it returns nothing
            _lower_probe(target, arg_types, "")
        except KernelError:
            got = ", ".join(repr(t) for t in arg_types)
            # Warp's wording, then what kernelc's type rules found
            raise KernelError(f"Function {target.name} does not support the provided "
                              f"argument types {got}: {err.message}") from None
        lowered = None
    if lowered is None or not lowered.return_types:
        raise TypeError("The provided function must return a value")
    return tuple(lowered.return_types)


def _lower_probe(target: MapTarget, arg_types: tuple[T.Type, ...], prefix: str) -> Any:
    from kernelc.frontend.lower import CompileContext

    names = [f"arg{i}" for i in range(len(arg_types))]
    text = f"def map_probe({', '.join(names)}):\n    {prefix}map_func({', '.join(names)})\n"
    source = Source("map_probe", _PROBE_FILE, 1, 0, ast.parse(text).body[0],
                    {"map_func": target.callee}, {})
    context = CompileContext(kernel_name=f"map({target.name})")
    return context.lower_func(_Probe(source), arg_types, UNKNOWN_LOC)


def _placeholder(*args: Any) -> None:
    """Stands in for the probe's Python function, which never runs."""


class _Probe(Func):
    """A func whose source tree is given rather than read from a file."""

    def __init__(self, source: Source) -> None:
        super().__init__(_placeholder)
        self.__name__ = source.tree.name
        self.__dict__.update(source=source, annotations={}, defaults={},
                             arg_names=tuple(a.arg for a in source.tree.args.args))


# ---- the kernel --------------------------------------------------------------------------

def map_kernel(target: MapTarget, arg_types: tuple[T.Type, ...], kinds: tuple[InputKind, ...],
               results: tuple[T.Type, ...], out_ndim: int, cache: MapCache,
               out_indexed: tuple[bool, ...] | None = None) -> Kernel:
    """The kernel mapping `target` over inputs of `arg_types` (element types) and `kinds`
    into arrays of `results` with `out_ndim` dimensions (kc.indexedarrays where
    `out_indexed` says so); generated on first use."""
    out_indexed = out_indexed or (False,) * len(results)
    key = (target.key, arg_types, kinds, results, out_ndim, out_indexed)
    kernel = cache.kernels.get(key)
    if kernel is None:
        text = kernel_text(_param_names(target.arg_names, kinds), kinds, out_ndim, out_indexed)
        path = _save(text)
        namespace: dict[str, Any] = {
            "__name__": f"kernelc.map.{_identifier(target.name)}_{len(cache.kernels)}",
            "map_func": target.callee,
            **{f"type_{i}": t for i, t in enumerate(arg_types)},
            **{f"result_type_{k}": t for k, t in enumerate(results)},
        }
        exec(compile(text, path, "exec"), namespace)  # noqa: S102  (our own generated code)
        kernel = cache.kernels[key] = Kernel(namespace["map_kernel"])
    return kernel


def kernel_text(names: Sequence[str], kinds: Sequence[InputKind], out_ndim: int,
                out_indexed: Sequence[bool]) -> str:
    """The source of a map kernel: thread (i, j, ...) reads element (i, j, ...) of each
    input array (index 0 along its size-1 dimensions; a shorter array lines up with the
    last dimensions), calls `map_func` and stores its results. The types are names bound
    in the kernel's globals: `type_N` of input N (its dtype for an array), `result_type_K`
    of output K; the text is the same for all types."""
    outputs = len(out_indexed)
    tids = [f"tid_{k}" for k in range(out_ndim)]
    params, loads = [], []
    for i, (name, kind) in enumerate(zip(names, kinds)):
        if kind is None:
            params.append(f"{name}: type_{i}")
            continue
        ndim, mask, indexed = kind
        params.append(f"{name}_array: {_array_type(indexed)}(dtype=type_{i}, ndim={ndim})")
        index = ["0" if one else tids[out_ndim - ndim + d] for d, one in enumerate(mask)]
        loads.append(f"{name} = {name}_array[{', '.join(index)}]")
    params += [f"out_{k}: {_array_type(indexed)}(dtype=result_type_{k}, ndim={out_ndim})"
               for k, indexed in enumerate(out_indexed)]
    where = ", ".join(tids)
    call = f"map_func({', '.join(names)})"
    if outputs == 1:
        stores = [f"out_0[{where}] = {call}"]
    else:
        results = [f"result_{k}" for k in range(outputs)]
        stores = [f"{', '.join(results)} = {call}"]
        stores += [f"out_{k}[{where}] = result_{k}" for k in range(outputs)]
    lines = [
        "# A kernel generated by kc.map (kernelc/utils/map_kernel.py).",
        "import kernelc as kc",
        "",
        "",
        "def map_kernel(",
        *(f"    {p}," for p in params),
        "):",
        f"    {where} = kc.tid()",
        *(f"    {s}" for s in loads + stores),
    ]
    return "\n".join(lines) + "\n"


def _array_type(indexed: bool) -> str:
    return "kc.indexedarray" if indexed else "kc.array"


def _param_names(arg_names: Sequence[str], kinds: Sequence[InputKind]) -> list[str]:
    """The mapped function's parameter names (Warp names the kernel's parameters after
    them: `x_array` for an array input `x`), or arg0, arg1, ... where they would clash."""
    names = list(arg_names)
    used = names + [f"{n}_array" for n, kind in zip(names, kinds) if kind is not None]
    if (len(set(used)) == len(used)
            and all(n.isidentifier() and not n.startswith(_RESERVED_PREFIXES)
                    and n not in _RESERVED for n in used)):
        return names
    return [f"arg{i}" for i in range(len(names))]


def _identifier(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_") or "func"


def _save(text: str) -> str:
    """The file name the kernel's code is compiled under: a file in the kernel cache when
    it can be written there, and in any case the text in `linecache`."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:20]
    folder = Path(config.kernel_cache_dir) / "map"
    path = folder / f"map_{digest}.py"
    if not path.exists():
        tmp = None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".map_", suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)  # atomic: a parallel process never reads half a file
        except OSError:  # a read-only cache: linecache alone holds the text
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
    name = str(path)
    # No modification time: linecache.checkcache() keeps the entry even if the file goes.
    linecache.cache[name] = (len(text), None, text.splitlines(keepends=True), name)
    return name
