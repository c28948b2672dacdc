"""Atomic read-modify-write on array elements; each returns the element's old value."""

from __future__ import annotations

from kernelc import types as T
from kernelc.builtins.registry import Overload, register
from kernelc.ir.nodes import OpCode


def _atomic_rule(ndim: int):
    def rule(types, weak):
        arr = types[0]
        if not isinstance(arr, T.ArrayType):
            raise TypeError(f"the first argument must be an array, got {arr!r}")
        if arr.ndim != ndim:
            raise TypeError(f"{arr.ndim}-d array indexed with {ndim} indices")
        for t in types[1:-1]:
            if not (isinstance(t, T.ScalarType) and t.is_int):
                raise TypeError(f"array indices must be integers, got {t!r}")
        value = types[-1]
        if value != arr.dtype and not weak[-1]:
            raise TypeError(f"value of type {value!r} for an array of {arr.dtype!r}")
        return (arr, *types[1:-1], arr.dtype), arr.dtype

    return rule


def _make(kind: str):
    def expand(em, arr, *rest):
        return em.op(OpCode.ATOMIC, (arr, *rest), arr.type.dtype, attr=kind)

    return expand


_INDEX_NAMES = ("i", "j", "k", "l")
for _kind, _doc in (
    ("add", "Atomically adds value to arr[i, ...]; returns the old value."),
    ("sub", "Atomically subtracts value from arr[i, ...]; returns the old value."),
    ("min", "Atomically stores min(arr[i, ...], value); returns the old value."),
    ("max", "Atomically stores max(arr[i, ...], value); returns the old value."),
):
    register(
        f"atomic_{_kind}", "atomic", _doc,
        *(
            Overload(("arr", *_INDEX_NAMES[:n], "value"), _atomic_rule(n), _make(_kind))
            for n in range(1, 5)
        ),
    )
