"""`kc.Float`, `kc.Int`, `kc.Scalar`: Warp's constrained type variables for generic funcs.

As in Warp they are `typing.TypeVar`s whose constraints are the scalar types they stand
for, so type checkers read them as usual. Each also carries a kernelc type, a
`ScalarConstraint`, that the front end reads from the annotation (`as_type` looks for a
`_kc_type` attribute): a `@kc.func` parameter annotated `kc.Float` accepts an argument of
any float type and is specialised for it, as a `typing.Any` parameter is for any type; an
argument of another type is a KernelError naming the parameter and the constraint. Each
parameter is matched on its own (two `kc.Float` parameters may get float32 and float64),
as in Warp.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from kernelc import types as T


class Constraint(T.Type):
    """A generic annotation: it compares equal to each concrete type it admits, which is how
    a parameter annotated with it matches an argument; it is never the type of a value."""

    __slots__ = ()

    def admits(self, t: T.Type) -> bool:
        raise NotImplementedError

    @property
    def size(self) -> int:
        raise TypeError(f"{self!r} is a generic annotation, not the type of a value")

    def __eq__(self, other: object) -> bool:
        if type(other) is type(self):
            return self._key() == other._key()
        if isinstance(other, Constraint):
            return False
        if isinstance(other, T.Type):
            return self.admits(other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def _key(self) -> tuple:
        raise NotImplementedError


class ScalarConstraint(Constraint):
    """The kernelc type behind `kc.Float`, `kc.Int` and `kc.Scalar`: the scalar types of
    some kinds. It compares equal to each scalar type it admits, which is how a parameter
    annotated with it matches an argument; it is never the type of a value."""

    __slots__ = ("name", "kinds")

    def __init__(self, name: str, kinds: frozenset[str]) -> None:
        self.name = name
        self.kinds = kinds

    def admits(self, t: T.Type) -> bool:
        """Whether scalar type `t` is one this constraint stands for."""
        return isinstance(t, T.ScalarType) and t.kind in self.kinds

    @property
    def members(self) -> tuple[T.ScalarType, ...]:
        """The scalar types admitted, in kernelc's order."""
        return tuple(t for t in T.SCALAR_TYPES if t.kind in self.kinds)

    def _key(self) -> tuple:
        return (self.kinds,)

    def __repr__(self) -> str:
        return f"{self.name} ({', '.join(t.name for t in self.members)})"


class AggregateConstraint(Constraint):
    """A vector or matrix annotation with a generic part, as Warp allows:
    `kc.types.vector(typing.Any, float)` (any length), `kc.types.vector(3, kc.Float)`,
    `kc.types.matrix((typing.Any, typing.Any), typing.Any)`. `shape` holds the length (one
    entry) or the (rows, cols) of a matrix, None where any size goes; `dtype` is a scalar
    type, a `ScalarConstraint`, or None for any scalar type."""

    __slots__ = ("kind", "shape", "dtype")

    def __init__(self, kind: str, shape: tuple[int | None, ...],
                 dtype: T.ScalarType | ScalarConstraint | None) -> None:
        self.kind = kind  # "vec" or "mat"
        self.shape = shape
        self.dtype = dtype

    def admits(self, t: T.Type) -> bool:
        if self.kind == "vec":
            if not isinstance(t, T.VectorType) or t.kind != "vec":
                return False
            sizes: tuple[int, ...] = (t.length,)
        else:
            if not isinstance(t, T.MatrixType):
                return False
            sizes = t.shape
        return (all(want is None or want == got for want, got in zip(self.shape, sizes))
                and (self.dtype is None or self.dtype == t.dtype))

    def _key(self) -> tuple:
        return (self.kind, self.shape, self.dtype)

    def __repr__(self) -> str:
        def show(x: object) -> str:
            return "Any" if x is None else repr(x)

        dtype = "Any" if self.dtype is None else getattr(self.dtype, "name", repr(self.dtype))
        if self.kind == "vec":
            return f"vector(length={show(self.shape[0])}, dtype={dtype})"
        return f"matrix(shape=({', '.join(map(show, self.shape))}), dtype={dtype})"


class TupleConstraint(Constraint):
    """`tuple[T, ...]`: a tuple of any length whose items are all of type `T` (None: any
    types), as Warp's func annotations allow."""

    __slots__ = ("item",)

    def __init__(self, item: T.Type | None) -> None:
        self.item = item

    def admits(self, t: T.Type) -> bool:
        return isinstance(t, T.TupleType) and (
            self.item is None or all(self.item == e for e in t.elements))

    def _key(self) -> tuple:
        return (self.item,)

    def __repr__(self) -> str:
        return f"tuple[{'Any' if self.item is None else repr(self.item)}, ...]"


def has_constraint(types: Sequence[T.Type | None]) -> bool:
    """Whether any of `types` is a `Constraint` or an array of one: a kernel with such a
    parameter is generic, specialised for the argument types of each launch."""
    return any(isinstance(t, Constraint)
               or isinstance(getattr(t, "dtype", None), Constraint) for t in types)


def _type_var(name: str, kinds: frozenset[str], python_types: tuple[type, ...]) -> Any:
    constraint = ScalarConstraint(name, kinds)
    var = TypeVar(name, *python_types, *constraint.members)  # type: ignore[misc]
    var._kc_type = constraint  # type: ignore[attr-defined]  (read by types.as_type)
    return var


Int = _type_var("Int", frozenset(("int", "uint")), (int,))
"""Any integer scalar type (`int8` ... `uint64`; `int` in an annotation is int32)."""

Float = _type_var("Float", frozenset(("float",)), (float,))
"""Any floating-point scalar type (`float16`, `bfloat16`, `float32`, `float64`)."""

Scalar = _type_var("Scalar", frozenset(("int", "uint", "float")), (int, float))
"""Any integer or floating-point scalar type (not `bool`, as in Warp)."""
