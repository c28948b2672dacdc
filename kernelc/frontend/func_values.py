"""Funcs and builtins passed to funcs as values (`def apply(g: kc.Function, x: float)`).

A function argument is known when compiling, so it is not passed at run time: the callee
is specialised for it (its parameter type names the target) and its name is bound to the
target, so `g(x)` in its body calls that func or builtin directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError


class FunctionValueType(T.Type):
    """The type of a parameter given the func or builtin `target`; one per target."""

    __slots__ = ("target",)

    def __init__(self, target: Any):
        self.target = target

    @property
    def size(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FunctionValueType) and other.target is self.target

    def __hash__(self) -> int:
        return hash(("function", id(self.target)))

    def __repr__(self) -> str:
        return f"Function({_name(self.target)})"


@dataclass(frozen=True)
class FunctionArg:
    """A func or builtin given as an argument (read by `Func.resolve` like a value)."""

    target: Any
    weak: bool = False

    @property
    def type(self) -> FunctionValueType:
        return FunctionValueType(self.target)


def is_function_class(annotation: Any) -> bool:
    """Whether an annotation is `kc.Function`."""
    from kernelc.frontend.decorators import Func

    return annotation is Func


def function_arg(obj: Any, special_form: Any) -> FunctionArg | None:
    """`obj` as a function argument if it names a func or a builtin (None if it is no
    function at all); raises for builtins that only their own call syntax can lower.
    `special_form(obj)` tells the latter."""
    from kernelc.builtins.registry import Builtin
    from kernelc.frontend.decorators import Func, Kernel

    if isinstance(obj, Func):
        return FunctionArg(obj)
    if isinstance(obj, Kernel):
        raise KernelError(f"kernel '{obj.__name__}' cannot be passed to a func; pass a "
                          f"@kc.func")
    if isinstance(obj, Builtin) and obj.public and special_form(obj) is None:
        return FunctionArg(obj)
    if callable(obj) and not isinstance(obj, type) and (
            special_form(obj) is not None or isinstance(obj, Builtin)):
        raise KernelError(f"unsupported built-in function '{_name(obj)}' as a function "
                          f"argument: it is lowered by its own call syntax, so call it "
                          f"directly")
    return None


def _name(target: Any) -> str:
    return getattr(target, "__name__", None) or getattr(target, "name", None) or repr(target)
