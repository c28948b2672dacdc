"""Arithmetic on whole arrays (`a + b`, `a -= b`, `-a`, ...), element by element through
`kc.map`, as Warp's arrays do it (`wp.array.__add__` is `wp.map(wp.add, ...)`).

Each operator launches one kernel on the arrays' device (recorded by an active tape like any
launch); the other operand may be an array (shapes broadcast) or a scalar, vector or matrix.
The in-place forms write into the left array (`out=`). Python numbers take the array's scalar
type.
"""

from __future__ import annotations

from typing import Any


def _map(name: str, *inputs: Any, out: Any = None) -> Any:
    import kernelc as kc  # the builtins; imported on first use (kernelc imports this module)

    return kc.map(getattr(kc, name), *inputs, out=out)


def _scalar_like(array: Any, value: Any) -> Any:
    """A Python number as the array's scalar type (a float32 array times 2.0 stays float32)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        scalar = getattr(array.dtype, "dtype", array.dtype)  # vectors' and matrices' scalar
        return scalar(value)
    return value


# The binary operators, by builtin name (Python's dunder name where it differs).
_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "truediv",
           "floordiv": "floordiv", "mod": "mod", "pow": "pow"}


def install_binary_operators(cls: type, make: Any) -> type:
    """Sets `cls`'s binary operators, plain, reflected (`__radd__`) and in place
    (`__iadd__`), to `make(builtin name, reflected, in_place)`."""
    for name, dunder in _BINARY.items():
        for prefix, reflected, in_place in (("", False, False), ("r", True, False),
                                             ("i", False, True)):
            op = make(name, reflected, in_place)
            op.__name__ = f"__{prefix}{dunder}__"
            setattr(cls, op.__name__, op)
    return cls


def _binary(name: str, reflected: bool, in_place: bool) -> Any:
    def op(self: Any, other: Any) -> Any:
        other = _scalar_like(self, other)
        if in_place:
            _map(name, self, other, out=self)
            return self
        return _map(name, other, self) if reflected else _map(name, self, other)

    op.__doc__ = f"Elementwise `{name}` through `kc.map`."
    return op


class ArithmeticMixin:
    """Warp's array operators: elementwise through `kc.map`."""

    def __neg__(self) -> Any:
        return _map("neg", self)

    def __pos__(self) -> Any:
        import kernelc as kc

        return kc.clone(self)  # a copy, as Warp's `+a` (recorded by a tape as a copy)


install_binary_operators(ArithmeticMixin, _binary)
