"""bfloat16 on the host: conversions between float32 values and bfloat16 bits.

bfloat16 keeps float32's sign and 8-bit exponent and the top 7 of its 23 mantissa bits, so
a bfloat16 is the upper half of a float32. NumPy has no such dtype, hence two host forms:

- in memory (array elements, struct fields, kernel arguments): the 16 raw bits as
  `np.uint16`, which is also what `arr.numpy()` returns, as in Warp;
- as a number (`kc.bfloat16(x)`, the components of a host vector): a float32 that
  bfloat16 represents exactly.

One conversion rule serves the host, the CPU backend and the CUDA backend, so a value
rounds the same way everywhere: round to nearest, ties to even; overflow gives infinity;
a NaN stays a NaN (its quiet bit set, so that a payload living only in the dropped low
bits cannot turn it into an infinity).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

QUIET_BIT = 0x0040  # the top mantissa bit of a bfloat16


def to_bits(values: Any) -> np.ndarray:
    """bfloat16 bits (`np.uint16`) of `values`, converted to float32 first as Warp does."""
    with np.errstate(over="ignore", invalid="ignore"):
        single = np.asarray(values, dtype=np.float32)
    bits = single.view(np.uint32).astype(np.uint64)  # (room for the carry of the rounding)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = ((bits >> 16) | QUIET_BIT) & 0xFFFF
    out = np.where(np.isnan(single), nan, rounded)
    return out.astype(np.uint16)


def from_bits(bits: Any) -> np.ndarray:
    """The float32 values of bfloat16 `bits` (exact: a bfloat16 is a truncated float32)."""
    wide = np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16
    return wide.view(np.float32)


def round_float32(values: Any) -> np.ndarray:
    """`values` rounded to the nearest bfloat16, as float32."""
    return from_bits(to_bits(values))


def host_scalar_class(marker: type) -> type:
    """The class of `kc.bfloat16(x)`: a float32 rounded to bfloat16 on construction.

    It subclasses `np.float32` (so it is a number everywhere NumPy's are) and `marker`
    (`kernelc.types.HostScalar`). `+ - * /` with another bfloat16 or a Python number give
    a bfloat16, rounded as in kernels; with other NumPy numbers, NumPy's float32 result.
    """

    def __new__(cls, value: Any = 0.0) -> Any:
        return np.float32.__new__(cls, round_float32(float(value)).item())

    def __repr__(self) -> str:
        return f"bfloat16({float(self)!r})"

    def arithmetic(op: Any, reflected: bool) -> Any:
        def method(self: Any, other: Any) -> Any:
            if not (isinstance(other, cls) or isinstance(other, (int, float))
                    and not isinstance(other, (bool, np.generic))):
                return NotImplemented
            # (a Python number takes the bfloat16 type, as a literal does in kernels)
            a, b = np.float32(self), np.float32(cls(other))
            with np.errstate(all="ignore"):
                return cls(op(b, a) if reflected else op(a, b))

        return method

    namespace: dict[str, Any] = {
        "__slots__": (), "__module__": "kernelc.types", "__new__": __new__,
        "__repr__": __repr__, "__str__": lambda self: str(float(self)),
        "__neg__": lambda self: cls(-np.float32(self)),
    }
    for name, op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                     ("truediv", operator.truediv)):
        namespace[f"__{name}__"] = arithmetic(op, False)
        namespace[f"__r{name}__"] = arithmetic(op, True)
    cls = type("bfloat16", (np.float32, marker), namespace)
    return cls


def is_bfloat16(t: Any) -> bool:
    """Whether `t` is the bfloat16 scalar type."""
    return getattr(t, "name", None) == "bfloat16" and getattr(t, "kind", None) == "float"


def storage(values: Any, t: Any) -> np.ndarray:
    """Host `values` of scalar type `t` in their memory form: bfloat16 as its bits, any
    other type as NumPy converts to its dtype."""
    if is_bfloat16(t):
        return to_bits(values)
    return np.asarray(values, dtype=t.np_dtype)


def number_dtype(t: Any) -> np.dtype:
    """The NumPy dtype host numbers of scalar type `t` are held in: float32 for bfloat16
    (rounded to it), else the type's own."""
    return np.dtype(np.float32) if is_bfloat16(t) else t.np_dtype
