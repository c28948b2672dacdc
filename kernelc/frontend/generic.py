"""`kc.overload`: explicit specialisations of a generic kernel (Warp's API).

A generic kernel (parameters annotated `typing.Any` or `kc.array(dtype=typing.Any)`) is
specialised for the argument types of each launch anyway; `overload` declares a
specialisation ahead of time so that its IR is built (and its type errors reported) at once:

    kc.overload(scale, [kc.array(dtype=kc.float64), kc.float64])
    kc.overload(scale, {"a": kc.array(dtype=kc.vec3), "s": float})

    @kc.overload
    def scale(a: kc.array(dtype=kc.float16), s: kc.float16): ...
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.decorators import Kernel, _match


def overload(kernel: Kernel | Callable, arg_types: Sequence[Any] | Mapping[str, Any] | None = None
             ) -> Kernel:
    """Declares the specialisation of generic `kernel` for `arg_types`; returns the kernel."""
    if not isinstance(kernel, Kernel):
        return _overload_from_function(kernel, inspect.currentframe().f_back)
    if arg_types is None:
        raise TypeError("overload() needs arg_types (a list, or a dict by parameter name)")
    names = kernel.arg_names
    if isinstance(arg_types, Mapping):
        unknown = set(arg_types) - set(names)
        if unknown:
            raise KernelError(f"overload(): kernel '{kernel.__name__}' has no parameter "
                              f"{sorted(unknown)[0]!r}", kernel=kernel.__name__)
        arg_types = [arg_types.get(n) for n in names]
    if len(arg_types) != len(names):
        raise KernelError(f"overload(): kernel '{kernel.__name__}' takes {len(names)} "
                          f"arguments, {len(arg_types)} types given", kernel=kernel.__name__)
    types = []
    for name, want, given in zip(names, kernel.param_types, arg_types):
        t = want if given is None else T.as_type(given)
        if T.is_generic(t):
            raise KernelError(f"overload(): parameter '{name}' needs a concrete type",
                              kernel._param_loc(name), kernel.__name__)
        if _match(want, t) is None:
            raise KernelError(f"overload(): parameter '{name}' is {want!r}, got {t!r}",
                              kernel._param_loc(name), kernel.__name__)
        types.append(t)
    kernel.get_ir(tuple(types))
    return kernel


def _overload_from_function(fn: Callable, frame) -> Kernel:
    """`@kc.overload` on a stub whose annotations give the types of a generic kernel
    of the same name in the defining scope (or, where that name is now the stub itself,
    the kernel made from a function of the stub's module and qualified name)."""
    annotations = inspect.get_annotations(fn, eval_str=True)
    if annotations.get("return", None) not in (None, type(None)):
        raise TypeError(f"overload(): the stub '{fn.__name__}' has a return annotation; "
                        f"kernels return nothing, so a stub may only annotate parameters")
    target = frame.f_locals.get(fn.__name__) if frame is not None else None
    if not isinstance(target, Kernel):
        target = _kernel_for_stub(fn)
    return overload(target, {k: v for k, v in annotations.items() if k != "return"})


def _kernel_for_stub(fn: Callable) -> Kernel:
    from kernelc.runtime.module import registered_kernels

    found = [k for k in registered_kernels()
             if k.func.__module__ == fn.__module__ and k.func.__qualname__ == fn.__qualname__]
    if not found:
        raise KernelError(f"overload(): no kernel named '{fn.__name__}' is defined before it",
                          kernel=fn.__name__)
    if len(found) > 1:
        keys = ", ".join(sorted(k.key for k in found))
        raise KernelError(f"overload(): '{fn.__qualname__}' is ambiguous: several kernels "
                          f"were made from functions of that name ({keys}); call "
                          f"kc.overload(kernel, arg_types) on the one meant")
    return found[0]
