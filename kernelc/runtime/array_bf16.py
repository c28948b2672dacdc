"""Array elements on the host, in and out, where bfloat16 needs care (kernelc.types_bf16).

NumPy has no bfloat16 of its own. As in Warp, an array of it (or of vectors, matrices of
it) reads back as the `ml_dtypes.bfloat16` type where that package is installed, else as
its raw bits, `np.uint16`, with a warning the first time; `list()` gives numbers. Data
given to `kc.array` and `fill_()` is converted from numbers, except data that already is
`np.uint16` (taken as the bits) or `ml_dtypes.bfloat16`, as in Warp.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.runtime.memory import element_layout
from kernelc.types_bf16 import from_bits, to_bits

_NUMPY_WARNING = (
    "bfloat16 arrays are returned as np.uint16 (raw bit representation) because NumPy does "
    "not natively support bfloat16; convert them with kernelc.types_bf16.from_bits, read "
    "them with arr.list(), or pass them to a framework with a bfloat16 type (torch)")


def has_bf16(dtype: Any) -> bool:
    """Whether elements of `dtype` are bfloat16 scalars, vectors or matrices."""
    return getattr(dtype, "dtype", dtype) == T.bfloat16


def element_storage(data: Any, dtype: T.Type, np_dtype: np.dtype) -> np.ndarray:
    """Host `data` for elements of `dtype` in their memory form (`np_dtype`)."""
    if has_bf16(dtype) and isinstance(data, np.ndarray) and T.is_ml_bfloat16(data.dtype):
        return data.view(np.uint16)
    if has_bf16(dtype) and not (isinstance(data, np.ndarray) and data.dtype == np.uint16):
        return to_bits(data)
    return np.asarray(data, dtype=np_dtype)


@functools.cache
def ml_bfloat16() -> Any:
    """`ml_dtypes.bfloat16` where the package is installed, else None."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes.bfloat16


def public_values(values: np.ndarray, dtype: T.Type) -> np.ndarray:
    """What `numpy()` gives for `values` read from memory: bfloat16 bits seen as
    `ml_dtypes.bfloat16` where it is installed (else the bits, with a warning)."""
    if not has_bf16(dtype):
        return values
    ml = ml_bfloat16()
    if ml is not None:
        return values.view(ml)
    warn_bits(dtype)
    return values


def warn_bits(dtype: T.Type) -> None:
    """Says once per process that `numpy()` of a bfloat16 array gives its bits, when
    `numpy()` is called from outside kernelc (kernelc's own calls copy bits knowingly)."""
    if has_bf16(dtype):
        from kernelc.logger import log_warning
        from kernelc.runtime.array_access import user_frame

        level = user_frame(4)[1]  # (this function, public_values, numpy(), its caller)
        if level == 4:
            log_warning(_NUMPY_WARNING, UserWarning, stacklevel=level, once=True)


def numbers(values: np.ndarray, dtype: T.Type) -> np.ndarray:
    """Array values read from memory as numbers (bfloat16 bits as float32)."""
    return from_bits(values) if has_bf16(dtype) else values


def list_items(values: np.ndarray, dtype: T.Type, size: int) -> list[Any]:
    """The `size` elements of an array of scalars, vectors or matrices (read from memory
    as `values`), flattened, as `list()` gives them: Python numbers, but bfloat16 values
    as `kc.bfloat16` numbers (Warp's list gives its bfloat16 objects); host vectors and
    matrices."""
    inner = element_layout(dtype)[1]
    flat = numbers(values.reshape((size, *inner)), dtype)
    if inner:
        return [dtype(row) for row in flat]
    if dtype == T.bfloat16:
        return [T.bfloat16(x) for x in flat.tolist()]
    return flat.tolist()
