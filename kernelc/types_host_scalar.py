"""The classes of scalars made on the host, `kc.float32(1.5)`: NumPy scalars of the type
(a subclass of `np.float32` named `float32`) marked `HostScalar`, with the operators Warp's
scalar classes have (a vector, matrix or array operand gets its own operator; no integer
powers). `kernelc.types` builds one per scalar type.
"""

from __future__ import annotations

from typing import Any


class HostScalar:
    """Marks a number made by calling a scalar type on the host (`kc.float32(1.5)`): a
    NumPy scalar of the type (a subclass of `np.float32` named `float32`), told from other
    NumPy scalars where Warp tells its scalar classes from NumPy's (a single `wp.float32`
    for a vector argument or struct field is refused, a NumPy scalar still broadcast).
    Booleans are not marked: NumPy's two booleans are singletons."""

    __slots__ = ()

    @property
    def value(self) -> Any:
        """The number as a Python int or float (Warp's scalar `.value`)."""
        return self.item()  # type: ignore[attr-defined]


def _refuse_power(base: Any, exponent: Any) -> Any:
    raise TypeError("'**' needs float operands (as in kernels); cast with float(x): "
                    f"{type(base).__name__} ** {type(exponent).__name__}")


def _defer_to_composite(numpy_op: Any) -> Any:
    """A scalar operator that leaves a vector, matrix or array operand to that operand's own
    (reflected) operator, so `kc.float32(2) * v` is a vector and `kc.int8(5) + a` a kernelc
    array, as in Warp, not NumPy's arrays."""

    def op(self: Any, other: Any) -> Any:
        from kernelc.types import ArrayType, IndexedArrayType  # (it imports this module)

        if getattr(other, "_kc_base", None) is not None or isinstance(
                getattr(other, "_kc_type", None), (ArrayType, IndexedArrayType)):
            return NotImplemented
        return numpy_op(self, other)

    op.__name__ = numpy_op.__name__
    return op


def host_scalar_class(t: Any) -> type:
    """The class of `t(x)` on the host (`t` a ScalarType): a NumPy scalar subclass named as
    NumPy's (`float32`), marked a `HostScalar`."""
    base = t.np_dtype.type
    namespace = {
        "__slots__": (), "__module__": "kernelc.types",
        "__repr__": lambda self: repr(base(self)),  # NumPy's, which names the subclass
    }
    for op_name in ("add", "sub", "mul", "truediv", "mod"):
        for dunder in (f"__{op_name}__", f"__r{op_name}__"):
            namespace[dunder] = _defer_to_composite(getattr(base, dunder))
    if t.is_int:
        # Kernels refuse integer powers, and so does Warp on the host.
        namespace["__pow__"] = lambda self, other, modulo=None: _refuse_power(self, other)
        namespace["__rpow__"] = lambda self, other, modulo=None: _refuse_power(other, self)
    return type(base.__name__, (base, HostScalar), namespace)
