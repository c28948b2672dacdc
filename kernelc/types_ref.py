"""`kc.ref[T]`: the annotation of a func parameter passed by reference."""

from __future__ import annotations

from typing import Any

from kernelc import types as T


class RefAnnotation:
    """`kc.ref[T]`: a func parameter of type T whose changes reach the caller's variable,
    array element, struct field or component. Annotations compare by their type."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: Any):
        self.dtype = dtype

    @property
    def _kc_type(self) -> T.Type | None:  # what `T.as_type` reads: the referenced type
        return T.as_type(self.dtype)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RefAnnotation) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("ref", self.dtype))

    def __repr__(self) -> str:
        t = T.as_type(self.dtype)
        return f"ref[{t!r}]" if t is not None else f"ref[{self.dtype!r}]"


class ref:  # noqa: N801  (spelled as in Warp: `kc.ref[kc.float32]`)
    """Subscript it with a type: `def add_to(x: kc.ref[float], d: float): x += d`."""

    def __init__(self) -> None:
        raise TypeError("kc.ref is an annotation: write kc.ref[T], e.g. kc.ref[kc.float32]")

    def __class_getitem__(cls, dtype: Any) -> RefAnnotation:
        if isinstance(dtype, RefAnnotation):
            raise TypeError("kc.ref[kc.ref[T]] is not a type: a reference to a reference")
        return RefAnnotation(dtype)


def is_ref(annotation: Any) -> bool:
    return isinstance(annotation, RefAnnotation)


def passes_back(t: T.Type) -> bool:
    """Whether a reference of type `t` hands its final value back to the caller: values
    do; arrays and other handles already share their storage."""
    return isinstance(t, (T.ScalarType, T.VectorType, T.MatrixType, T.StructType))
