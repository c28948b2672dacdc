"""Warp's `warp.fem.cache.dynamic_func`, `dynamic_kernel` and `dynamic_struct`: decorators
that make a func, kernel or struct once per (definition, suffix) and hand back the same
object whenever the decorated definition is met again with that suffix. Code that builds
kernels inside functions (one per geometry, per field type, ...) names each variant by its
suffix and reuses it instead of compiling a new one each call."""

from collections.abc import Callable
from typing import Any

import kernelc as kc
from kernelc.frontend.decorators import Func

_funcs: dict[Any, Func] = {}
_kernels: dict[Any, Any] = {}
_structs: dict[Any, Any] = {}


def _key(obj: Any, suffix: Any, options: dict[str, Any] | None = None) -> tuple:
    return (obj.__module__, obj.__qualname__, suffix,
            tuple(sorted((options or {}).items(), key=lambda kv: kv[0])))


def _signature(obj: Callable) -> tuple:
    return tuple((k, repr(v)) for k, v in getattr(obj, "__annotations__", {}).items())


def dynamic_func(suffix: Any, code_transformers: Any = None,
                 allow_overloads: bool = False) -> Callable[[Callable], Func]:
    """A decorator returning one `kc.func` per (definition, suffix). With
    `allow_overloads`, definitions with other annotations become overloads of that func
    (chosen by argument types at each call), as in Warp."""
    if code_transformers:
        raise NotImplementedError("code_transformers are not supported by kernelc")

    def wrap(fn: Callable) -> Func:
        base = _key(fn, suffix)
        key = (base, _signature(fn)) if allow_overloads else base
        if key in _funcs:
            return _funcs[key]
        made = kc.func(fn)
        existing = _funcs.get(base) if allow_overloads else None
        if existing is not None:
            existing.add_variant(made)
            made = existing
        elif allow_overloads:
            _funcs[base] = made
        _funcs[key] = made
        return made

    return wrap


def dynamic_kernel(suffix: Any, kernel_options: dict[str, Any] | None = None,
                   allow_overloads: bool = False) -> Callable[[Callable], Any]:
    """A decorator returning one `kc.kernel` (with `kernel_options`, e.g.
    `{"enable_backward": False}`) per (definition, suffix, options); with
    `allow_overloads`, also per annotations."""
    options = dict(kernel_options or {})

    def wrap(fn: Callable) -> Any:
        key = _key(fn, suffix, options)
        if allow_overloads:
            key = (key, _signature(fn))
        if key not in _kernels:
            _kernels[key] = kc.kernel(fn, **options)
        return _kernels[key]

    return wrap


def dynamic_struct(suffix: Any) -> Callable[[type], Any]:
    """A decorator returning one `kc.struct` per (class definition, suffix)."""

    def wrap(cls: type) -> Any:
        key = _key(cls, suffix)
        if key not in _structs:
            _structs[key] = kc.struct(cls)
        return _structs[key]

    return wrap
