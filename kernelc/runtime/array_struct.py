"""Arrays of `@kc.struct` instances on the host: building, filling and reading them.

`kc.array([s0, s1, ...], dtype=Body)` packs struct instances into the struct's C layout
(a NumPy structured array, `Body.numpy_dtype()`), and `arr.list()`, `arr[i]` and
`arr.fill_(s)` turn elements back into instances, or an instance into every element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.runtime.array_bf16 import numbers
from kernelc.runtime.memory import struct_np_dtype


def _leaf(data: Any) -> Any:
    """The first non-sequence item of nested lists and tuples (None if there is none)."""
    while isinstance(data, (list, tuple)):
        if not data:
            return None
        data = data[0]
    return data


def struct_host_data(data: Any, dtype: T.Type | None) -> tuple[Any, T.Type | None]:
    """Array data and element type, with struct instances packed into a structured array.

    Data that holds no struct instances (and any NumPy array of a non-object dtype) is
    returned as it is. Without `dtype`, the struct type of the first instance is used
    (Warp needs `dtype=`).

    Raises:
        TypeError: An item is not an instance of the struct (or instances of different
            structs are mixed).
        ValueError: Nested sequences are ragged.
    """
    if isinstance(data, np.ndarray):
        if data.dtype != object:
            return data, dtype
        data = data.tolist()
    if dtype is None:
        dtype = getattr(_leaf(data), "_kc_type", None)
        if not isinstance(dtype, T.StructType):
            return data, None
    if not isinstance(dtype, T.StructType):
        return data, dtype
    if not isinstance(data, (list, tuple)) and getattr(data, "_kc_type", None) is None:
        return data, dtype  # not struct instances: left to NumPy's conversion
    shape, items = _flatten(data, dtype)
    np_dtype = struct_np_dtype(dtype)
    # Filled through a byte view: a NumPy copy of a structured array with padding would
    # leave the padding bytes uninitialised.
    host = np.zeros(len(items), dtype=np_dtype)
    host.view(np.uint8)[:] = np.frombuffer(
        b"".join(item.numpy_value().tobytes() for item in items), np.uint8)
    return host.reshape(shape), dtype


def _flatten(data: Any, st: T.StructType) -> tuple[tuple[int, ...], list[Any]]:
    """The shape of nested sequences of instances of `st`, and the instances in C order."""
    if not isinstance(data, (list, tuple)):
        if getattr(data, "_kc_type", None) != st:
            raise TypeError(f"an array of {st.name} needs {st.name} instances, got "
                            f"{type(data).__name__} {data!r}")
        return (), [data]
    parts = [_flatten(item, st) for item in data]
    shapes = {shape for shape, _ in parts}
    if len(shapes) > 1:
        raise ValueError(f"nested sequences of {st.name} instances must be rectangular, got "
                         f"items of shapes {sorted(shapes)}")
    inner = shapes.pop() if shapes else ()
    return (len(data), *inner), [item for _, items in parts for item in items]


def struct_fill_value(dtype: T.Type, value: Any) -> Any:
    """A fill value for `arr.fill_`: a struct instance becomes its structured NumPy record."""
    if not isinstance(dtype, T.StructType) or isinstance(value, np.ndarray | np.void):
        return value
    if getattr(value, "_kc_type", None) != dtype:
        raise TypeError(f"cannot fill an array of {dtype.name} with {type(value).__name__} "
                        f"{value!r}")
    return value.numpy_value()


def struct_instance(st: T.StructType, record: np.void) -> Any:
    """A new instance of the struct class of `st` holding one structured NumPy record."""
    values = {}
    for name, field in st.fields:
        item = record[name]
        if isinstance(field, (T.ArrayType, T.IndexedArrayType)):
            # Only an address is stored, not the array object: as Warp does, give a
            # memoryless array of the field's dtype and ndim rather than a view that
            # could outlive the memory.
            values[name] = _field_annotation(field)
        elif isinstance(field, T.StructType):
            values[name] = struct_instance(field, item)
        elif isinstance(field, (T.VectorType, T.MatrixType)):
            values[name] = field(numbers(np.array(item), field))
        else:
            values[name] = field(numbers(item, field))
    return st.cls(**values)


def _field_annotation(field: T.ArrayType | T.IndexedArrayType) -> Any:
    """A type-only `kc.array` (or `kc.indexedarray`) of an array field's dtype and ndim."""
    if isinstance(field, T.IndexedArrayType):
        from kernelc.runtime.indexedarray import indexedarray

        return indexedarray(dtype=field.dtype, ndim=field.ndim)
    from kernelc.runtime.array import array

    return array(dtype=field.dtype, ndim=field.ndim)


def struct_instances(st: T.StructType, records: np.ndarray) -> list[Any]:
    """Struct instances for the records of a structured NumPy array, in C order."""
    return [struct_instance(st, record) for record in records.reshape(-1)]


def struct_refs(data: Any) -> list[Any]:
    """The arrays held by the struct instances in `data` (nested lists too). An array of
    structs copies their addresses, so it keeps these alive."""
    if isinstance(data, np.ndarray) and data.dtype == object:
        data = data.ravel().tolist()
    out: list[Any] = []
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, (list, tuple)):
            pending.extend(item)
            continue
        st = getattr(item, "_kc_type", None)
        if not isinstance(st, T.StructType):
            continue
        for name, field in st.fields:
            value = getattr(item, name, None)
            if isinstance(field, (T.ArrayType, T.IndexedArrayType)) and value is not None:
                out.append(value)
            elif isinstance(field, T.StructType):
                pending.append(value)
    return out


def keep_field_arrays(owner: Any, dtype: Any, data: Any) -> None:
    """Makes an array of structs built or filled from the instances in `data` keep the
    arrays their fields hold alive (it holds only their addresses)."""
    if isinstance(dtype, T.StructType) and T.holds_arrays(dtype):
        owner._field_refs = struct_refs(data)
