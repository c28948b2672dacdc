"""Atomic read-modify-write on array elements; each returns the element's old value.

The IR op is `ATOMIC` with args `(array, *indices, *operands)`: one operand (the value)
for every kind but "cas", which has two (compare, value); the array's ndim tells where
the indices end. On arrays of vectors and matrices each component is updated atomically
on its own, as in Warp. On an indexed array the element is looked up through its index
arrays first (`indexed_array.py`), so the op itself always updates a plain array.
"""

from __future__ import annotations

from kernelc import types as T
from kernelc.builtins import array_index, indexed_array
from kernelc.builtins.registry import Overload, register
from kernelc.ir.nodes import OpCode

# Element types Warp allows per kind (the component type for vectors and matrices);
# None: every type (add/sub/min/max predate these limits in kernelc).
_WORDS = (T.int32, T.int64, T.uint32, T.uint64)
_ALLOWED: dict[str, tuple[T.ScalarType, ...] | None] = {
    "add": None, "sub": None, "min": None, "max": None,
    "and": _WORDS, "or": _WORDS, "xor": _WORDS,
    "cas": (*_WORDS, T.float32, T.float64), "exch": (*_WORDS, T.float32, T.float64),
}


def _check_dtype(kind: str, dtype: T.Type) -> None:
    allowed = _ALLOWED[kind]
    if allowed is None:
        return
    scalar = dtype.dtype if isinstance(dtype, (T.VectorType, T.MatrixType)) else dtype
    if scalar not in allowed:
        names = "[u]int32 or [u]int64" if kind in ("and", "or", "xor") else \
            "[u]int32, [u]int64, float32 or float64"
        raise TypeError(f"atomic_{kind}() works on arrays of {names} (or vectors and "
                        f"matrices of them), not on an array of {dtype!r}")


def _atomic_rule(kind: str, ndim: int):
    operands = 2 if kind == "cas" else 1

    def rule(types, weak):
        arr = types[0]
        if not isinstance(arr, (T.ArrayType, T.IndexedArrayType)):
            raise TypeError(f"the first argument must be an array, got {arr!r}")
        if arr.ndim != ndim:
            raise TypeError(f"{arr.ndim}-d array indexed with {ndim} indices")
        for t in types[1:1 + ndim]:
            if not (isinstance(t, T.ScalarType) and t.is_int):
                raise TypeError(f"array indices must be integers, got {t!r}")
        _check_dtype(kind, arr.dtype)
        for value, is_weak in zip(types[1 + ndim:], weak[1 + ndim:]):
            if value != arr.dtype and not is_weak:
                raise TypeError(f"value of type {value!r} for an array of {arr.dtype!r}")
        return (arr, *types[1:1 + ndim], *(arr.dtype,) * operands), arr.dtype

    return rule


def _make(kind: str):
    def expand(em, arr, *rest):
        if isinstance(arr.type, T.IndexedArrayType):  # the element through the index arrays
            arr, indices = indexed_array.element(em, arr, rest[:arr.type.ndim])
            rest = (*indices, *rest[len(indices):])
        else:
            ndim = arr.type.ndim
            rest = (*array_index.wrapped(em, arr, rest[:ndim]), *rest[ndim:])
        return em.op(OpCode.ATOMIC, (arr, *rest), arr.type.dtype, attr=kind)

    return expand


_INDEX_NAMES = ("i", "j", "k", "l")
_KINDS = (
    ("add", ("value",), "Atomically adds value to arr[i, ...]; returns the old value."),
    ("sub", ("value",), "Atomically subtracts value from arr[i, ...]; returns the old value."),
    ("min", ("value",), "Atomically stores min(arr[i, ...], value); returns the old value. "
     "Floats as fmin: a NaN value is ignored, a NaN element replaced."),
    ("max", ("value",), "Atomically stores max(arr[i, ...], value); returns the old value. "
     "Floats as fmax: a NaN value is ignored, a NaN element replaced."),
    ("and", ("value",),
     "Atomically stores arr[i, ...] & value (integer arrays); returns the old value."),
    ("or", ("value",),
     "Atomically stores arr[i, ...] | value (integer arrays); returns the old value."),
    ("xor", ("value",),
     "Atomically stores arr[i, ...] ^ value (integer arrays); returns the old value."),
    ("cas", ("compare", "value"),
     "Atomically stores value in arr[i, ...] if it equals compare (floats compare by value, "
     "as ==); returns the old value."),
    ("exch", ("value",), "Atomically stores value in arr[i, ...]; returns the old value."),
)
for _kind, _operands, _doc in _KINDS:
    register(
        f"atomic_{_kind}", "atomic", _doc,
        *(
            Overload(("arr", *_INDEX_NAMES[:n], *_operands), _atomic_rule(_kind, n),
                     _make(_kind))
            for n in range(1, 5)
        ),
    )

