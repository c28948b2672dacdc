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


def _binary(name: str, reflected: bool = False, in_place: bool = False) -> Any:
    def op(self: Any, other: Any) -> Any:
        other = _scalar_like(self, other)
        if in_place:
            _map(name, self, other, out=self)
            return self
        return _map(name, other, self) if reflected else _map(name, self, other)

    op.__name__ = f"__{'i' if in_place else 'r' if reflected else ''}{name}__"
    op.__doc__ = f"Elementwise `{name}` through `kc.map`."
    return op


class ArithmeticMixin:
    """Warp's array operators: elementwise through `kc.map`."""

    __add__ = _binary("add")
    __radd__ = _binary("add", reflected=True)
    __iadd__ = _binary("add", in_place=True)
    __sub__ = _binary("sub")
    __rsub__ = _binary("sub", reflected=True)
    __isub__ = _binary("sub", in_place=True)
    __mul__ = _binary("mul")
    __rmul__ = _binary("mul", reflected=True)
    __imul__ = _binary("mul", in_place=True)
    __truediv__ = _binary("div")
    __rtruediv__ = _binary("div", reflected=True)
    __itruediv__ = _binary("div", in_place=True)
    __floordiv__ = _binary("floordiv")
    __rfloordiv__ = _binary("floordiv", reflected=True)
    __ifloordiv__ = _binary("floordiv", in_place=True)
    __mod__ = _binary("mod")
    __rmod__ = _binary("mod", reflected=True)
    __imod__ = _binary("mod", in_place=True)
    __pow__ = _binary("pow")
    __rpow__ = _binary("pow", reflected=True)
    __ipow__ = _binary("pow", in_place=True)

    def __neg__(self) -> Any:
        return _map("neg", self)

    def __pos__(self) -> Any:
        import kernelc as kc

        return kc.clone(self)  # a copy, as Warp's `+a` (recorded by a tape as a copy)
