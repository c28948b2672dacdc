"""`@kc.kernel(module="unique")` defined again with the same code returns the same kernel,
as in Warp: a kernel factory called every frame then compiles (and loads) its kernel once.

Two definitions are the same kernel when their code, annotations, options, captured values
and the globals they read are. Only values that cannot change are compared (numbers,
strings, types, funcs, kernels, modules, tuples of those); a definition reading anything
else, or `kc.static(...)` (whose value may have changed since), makes a new kernel each
time.
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Callable
from typing import Any

from kernelc import types as T

_DEFINED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def reuse_key(fn: Callable, name: str | None, options: dict[str, Any],
              module_options: dict[str, Any] | None) -> tuple | None:
    """What makes a unique kernel defined from `fn` the same as an earlier one, or None
    when it must be a new kernel."""
    code = getattr(fn, "__code__", None)
    if code is None or "static" in code.co_names:
        return None
    captured = []
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            return None
        fixed = _fixed(value)
        if fixed is None:
            return None
        captured.append(fixed)
    # The globals the code reads (a changed constant makes another kernel, as Warp's hash)
    for name in code.co_names:
        if name in fn.__globals__:
            fixed = _fixed(fn.__globals__[name])
            if fixed is None:
                return None
            captured.append((name, fixed))
    try:
        annotations = tuple((k, repr(v)) for k, v in fn.__annotations__.items())
        settings = tuple(sorted((k, repr(v)) for k, v in options.items()))
        extra = tuple(sorted((k, repr(v)) for k, v in (module_options or {}).items()))
    except Exception:  # an annotation or option without a stable text
        return None
    return (fn.__module__, fn.__qualname__, name, _code_key(code), tuple(captured),
            annotations, settings, extra)


def _code_key(code: types.CodeType) -> tuple:
    """The code's instructions, names and constants (not where it was defined)."""
    consts = tuple(_code_key(c) if isinstance(c, types.CodeType) else (type(c), c)
                   for c in code.co_consts)
    return (code.co_code, code.co_names, code.co_varnames, code.co_freevars, consts)


def _fixed(value: Any) -> Any:
    """A comparable stand-in for a captured value that cannot change, else None."""
    from kernelc.builtins.registry import Builtin
    from kernelc.frontend.decorators import Func, Kernel

    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return (type(value), value)
    if isinstance(value, tuple):
        items = [_fixed(v) for v in value]
        return None if any(i is None for i in items) else ("tuple", tuple(items))
    if isinstance(value, (type, T.Type, Func, Kernel, Builtin, types.ModuleType,
                          types.BuiltinFunctionType)):
        return ("object", id(value))  # kept alive by the kernel that captured it
    return None


def find(key: tuple | None) -> Any:
    return None if key is None else _DEFINED.get(key)


def remember(key: tuple | None, kernel: Any) -> None:
    if key is not None:
        _DEFINED[key] = kernel
