"""`@kc.struct`: a class whose annotated fields form one kernel value.

On the host an instance holds its fields as attributes (scalars, `kc.vec3(...)` values,
nested struct instances, `kc.array`s); it is packed in the C layout of `StructType` when
passed to a kernel. `Cls.numpy_dtype()` gives the matching NumPy structured dtype, so arrays
of structs can be filled and read from NumPy.
"""

from __future__ import annotations

import inspect
import struct as pystruct
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.runtime.struct_fields import install_field_setters
from kernelc.types_bf16 import storage


def struct(cls: type) -> type:
    """Class decorator: `@kc.struct class Body: pos: kc.vec3; mass: float`."""
    try:
        annotations = inspect.get_annotations(cls, eval_str=True)
    except Exception as err:
        raise KernelError(f"cannot evaluate the annotations of struct '{cls.__name__}': {err}"
                          ) from None
    fields = []
    for name, ann in annotations.items():
        t = T.as_type(ann)
        if t is None or isinstance(t, (T.VoidType, T.TupleType, T.LocalArrayType)) or \
                T.is_generic(t):
            raise KernelError(f"field '{name}' of struct '{cls.__name__}' has no kernelc type "
                              f"({ann!r})")
        fields.append((name, t))
    st = T.StructType(cls.__qualname__, tuple(fields), cls)
    install_field_setters(cls, st)  # checked host assignments, as in Warp
    cls._kc_type = st
    cls.__init__ = _make_init(st)
    cls.__repr__ = _struct_repr
    cls.numpy_dtype = staticmethod(lambda: numpy_dtype(st))
    cls.numpy_value = _numpy_value
    cls.to = _to_device
    return cls


def _make_init(st: T.StructType):
    def __init__(self, **values: Any) -> None:
        for name, t in st.fields:
            setattr(self, name, default_value(t))
        for name, value in values.items():
            if name not in dict(st.fields):
                raise TypeError(f"struct '{st.name}' has no field '{name}'")
            setattr(self, name, value)

    return __init__


def _struct_repr(self) -> str:
    st = type(self)._kc_type
    parts = ", ".join(f"{n}={getattr(self, n)!r}" for n, _ in st.fields)
    return f"{st.name}({parts})"


def default_value(t: T.Type) -> Any:
    """The value a new host struct gives a field of type `t` (zero, or no array)."""
    if isinstance(t, T.ScalarType):
        return t(0)
    if isinstance(t, (T.VectorType, T.MatrixType)):
        return t()
    if isinstance(t, T.StructType):
        return t.cls()
    return None


def numpy_dtype(st: T.StructType) -> np.dtype:
    """The NumPy structured dtype with the same field offsets and size as the kernel layout."""
    formats: list[Any] = []
    for _, t in st.fields:
        if isinstance(t, T.ScalarType):
            formats.append(t.np_dtype)
        elif isinstance(t, T.VectorType):
            formats.append((t.dtype.np_dtype, (t.length,)))
        elif isinstance(t, T.MatrixType):
            formats.append((t.dtype.np_dtype, t.shape))
        elif isinstance(t, T.StructType):
            formats.append(numpy_dtype(t))
        else:  # an array field: pointer, shape and strides, opaque to NumPy
            formats.append(np.dtype((np.void, t.size)))
    return np.dtype({"names": [n for n, _ in st.fields], "formats": formats,
                     "offsets": list(st.offsets), "itemsize": st.size})


def _to_device(self, device: Any) -> Any:
    """A copy of this instance whose arrays are on `device` (nested structs too), as
    Warp's `Struct.to`: arrays already there are shared, others copied; an indexed array
    moved to another device becomes a plain indexed array over its contiguous copy."""
    st = type(self)._kc_type
    out = st.cls()
    for name, t in st.fields:
        value = getattr(self, name)
        if value is not None and isinstance(t, (T.ArrayType, T.StructType)):
            value = value.to(device)
        elif value is not None and isinstance(t, T.IndexedArrayType):
            moved = value.to(device)
            value = moved if moved is value else type(value)(moved)
        setattr(out, name, value)
    return out


def _numpy_value(self) -> np.void:
    """This instance as one element of `numpy_dtype()` (array fields left zero)."""
    return np.frombuffer(struct_bytes(type(self)._kc_type, self), numpy_dtype(
        type(self)._kc_type))[0]


def struct_bytes(t: T.Type, value: Any) -> bytes:
    """The bytes of `value` as a kernel argument of type `t` (C layout)."""
    if isinstance(t, T.ScalarType):
        if t.is_bool:
            return bytes([1 if value else 0])
        return storage(value, t).tobytes()
    if isinstance(t, (T.VectorType, T.MatrixType)):
        from kernelc.types_vec import as_host_array

        data = as_host_array(t, value)
        if data is None:
            raise TypeError(f"expected {t!r}, got {value!r}")
        return np.ascontiguousarray(data).tobytes()
    if isinstance(t, T.ArrayType):
        return _array_bytes(t, value)
    if isinstance(t, T.IndexedArrayType):
        return _indexed_bytes(t, value)
    if isinstance(t, T.StructType):
        kc_type = getattr(value, "_kc_type", None)
        if kc_type is not t and kc_type != t:
            raise TypeError(f"expected a {t.name}, got {type(value).__name__}")
        out = bytearray(t.size)
        for name, ft, offset, packer in _field_packers(t):
            field = getattr(value, name)
            if packer is not None:
                try:  # the common case, without NumPy: a Python number in a scalar field
                    packer.pack_into(out, offset, field)
                    continue
                except (pystruct.error, TypeError, OverflowError):
                    pass  # NumPy's conversion rules (floats into ints...) below
            if isinstance(field, np.ndarray) and isinstance(ft, (T.VectorType, T.MatrixType)) \
                    and field.dtype == ft.dtype.np_dtype and field.size == ft.count:
                data = field.tobytes()  # a host vector or matrix already in its C layout
            else:
                data = struct_bytes(ft, field)
            out[offset:offset + len(data)] = data
        return bytes(out)
    raise TypeError(f"cannot pack a {t!r}")


_SCALAR_CODES = {"float16": "e", "float32": "f", "float64": "d", "int8": "b", "uint8": "B",
                 "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q",
                 "uint64": "Q"}
_PACKERS: dict[int, tuple[T.StructType, list]] = {}


def _field_packers(t: T.StructType) -> list:
    """(name, type, offset, packer or None) per field, made once per struct type (a launch
    repacks its struct arguments every time: they may have changed in place)."""
    found = _PACKERS.get(id(t))
    if found is not None and found[0] is t:
        return found[1]
    layout = []
    for (name, ft), offset in zip(t.fields, t.offsets):
        code = _SCALAR_CODES.get(ft.name) if isinstance(ft, T.ScalarType) else None
        layout.append((name, ft, offset, pystruct.Struct("<" + code) if code else None))
    _PACKERS[id(t)] = (t, layout)
    return layout


def _array_bytes(t: T.ArrayType, value: Any) -> bytes:
    if value is None:
        return bytes(t.size)
    kc_type = getattr(value, "_kc_type", None)
    if not isinstance(kc_type, T.ArrayType) or kc_type.ndim != t.ndim or kc_type.dtype != t.dtype:
        raise TypeError(f"expected {t!r}, got {type(value).__name__}")
    if value.ptr is None:  # a type-only array packs as a null one, as in Warp
        return bytes(t.size)
    header = [int(value.ptr)] + list(value.shape) + list(value.strides)
    return np.asarray(header, dtype=np.int64).tobytes()


def _indexed_bytes(t: T.IndexedArrayType, value: Any) -> bytes:
    """An indexed array's record (`kernelc.types.IndexedArrayType`); None packs a null one."""
    kc_type = getattr(value, "_kc_type", None)
    if value is None or kc_type == t and getattr(value, "data", None) is None:
        return bytes(t.size)  # None or a type-only indexed array: a null one
    if not isinstance(kc_type, T.IndexedArrayType) or kc_type.ndim != t.ndim \
            or kc_type.dtype != t.dtype:
        raise TypeError(f"expected {t!r}, got {type(value).__name__}")
    packed = getattr(value, "_kc_packed", None)  # its parts never change: packed once
    if packed is None:
        data = value.data
        words = [int(data.ptr), *data.shape, *data.strides]
        mask = 0
        for k in range(t.ndim):
            index = value.indices[k]
            if index is None:  # null: the dimension's index is used as it is
                words += [0, value.shape[k], 0]
            else:
                words += [int(index.ptr), value.shape[k], index.strides[0]]
                mask |= 1 << k
        packed = np.asarray(words, dtype=np.int64).tobytes() + pystruct.pack("<iI", mask, 0)
        value._kc_packed = packed
    return packed
