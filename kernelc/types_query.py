"""Host-side type introspection with Warp's names (`warp.types.type_is_vector`,
`is_array`, `types_equal`, `type_repr`, ...), for generic host code that branches on dtypes.

`type_is_*` take a type (`kc.vec3`, `float`, `kc.array`), `is_*` a value (`kc.vec3(1, 2, 3)`,
`kc.float32(2.0)`, an array). Quaternions and transforms share the vector layout but are
not vectors here, as in Warp.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from kernelc import types as T

# Warp's short suffixes: vec3f, mat22d, quath, transformf, vec4ub, ...
_SHORT = {"float16": "h", "bfloat16": "bf", "float32": "f", "float64": "d", "int8": "b",
          "int16": "s", "int32": "i", "int64": "l", "uint8": "ub", "uint16": "us", "uint32": "ui",
          "uint64": "ul"}
_CTYPES = {"float16": ctypes.c_uint16, "bfloat16": ctypes.c_uint16, "float32": ctypes.c_float,
           "float64": ctypes.c_double, "int8": ctypes.c_int8, "int16": ctypes.c_int16,
           "int32": ctypes.c_int32, "int64": ctypes.c_int64, "uint8": ctypes.c_uint8,
           "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
           "bool": ctypes.c_bool}


def _value_type(t: Any) -> T.Type | None:
    """The scalar/vector/matrix type `t` denotes (Python's int, float and bool included)."""
    if isinstance(t, (T.ScalarType, T.VectorType, T.MatrixType)):
        return t
    if t in (int, float, bool):
        return T.as_type(t)
    class_type = getattr(t, "_kc_class_type", None)  # `type(v)` of a host value
    if isinstance(t, type) and isinstance(class_type, (T.VectorType, T.MatrixType)):
        return class_type
    if isinstance(t, type) and issubclass(t, np.generic):
        try:
            return T.from_numpy_dtype(t)
        except TypeError:
            return None
    return None


def _as_type(t: Any) -> T.Type | None:
    try:
        return T.as_type(t)
    except (TypeError, ValueError):  # a class NumPy cannot read as a dtype
        return None


def _kind(t: Any) -> str | None:
    kt = _value_type(t)
    if isinstance(kt, T.ScalarType):
        return "bool" if kt.is_bool else "int" if kt.is_int else "float"
    if isinstance(kt, T.VectorType):
        return kt.kind  # "vec", "quat" or "transform"
    if isinstance(kt, T.MatrixType):
        return "mat"
    return None


def type_is_int(t: Any) -> bool:
    """Whether `t` is an integer type (`int`, `kc.int8` ... `kc.uint64`)."""
    return _kind(t) == "int"


def type_is_float(t: Any) -> bool:
    """Whether `t` is a floating-point type (`float`, `kc.float16/32/64`, `kc.bfloat16`)."""
    return _kind(t) == "float"


def type_is_scalar(t: Any) -> bool:
    """Whether `t` is an integer or floating-point type (bool is neither)."""
    return _kind(t) in ("int", "float")


def type_is_vector(t: Any) -> bool:
    """Whether `t` is a vector type (not a quaternion or transform)."""
    return _kind(t) == "vec"


def type_is_quaternion(t: Any) -> bool:
    """Whether `t` is a quaternion type."""
    return _kind(t) == "quat"


def type_is_transformation(t: Any) -> bool:
    """Whether `t` is a transform type."""
    return _kind(t) == "transform"


def type_is_matrix(t: Any) -> bool:
    """Whether `t` is a matrix type."""
    return _kind(t) == "mat"


def type_is_composite(t: Any) -> bool:
    """Whether `t` is a vector, matrix, quaternion or transform type."""
    return _kind(t) in ("vec", "quat", "transform", "mat")


def type_is_value(t: Any) -> bool:
    """Whether `t` is a scalar, bool or composite type."""
    return _kind(t) is not None


def type_is_struct(t: Any) -> bool:
    """Whether `t` is a `@kc.struct` class."""
    return isinstance(t, type) and isinstance(getattr(t, "_kc_type", None), T.StructType)


def _array_classes() -> tuple[type, ...]:
    from kernelc.runtime.array import array
    from kernelc.runtime.indexedarray import indexedarray

    return (array, indexedarray)


def type_is_array(t: Any) -> bool:
    """Whether `t` is one of kernelc's array classes (`kc.array`, `kc.indexedarray`, ...)."""
    return isinstance(t, type) and issubclass(t, _array_classes())


def type_is_tile(t: Any) -> bool:
    """Whether `t` is the tile type (`kc.tile`)."""
    import kernelc

    return t is getattr(kernelc, "tile", None)


def _host_kind(x: Any) -> str | None:
    base = getattr(x, "_kc_base", None)  # vectors and matrices on the host (HostValue)
    if isinstance(x, np.ndarray) and base is not None:
        return _kind(base)
    if isinstance(x, (bool, np.bool_)):
        return "bool"
    if isinstance(x, (int, float, np.generic)):
        return _kind(type(x))
    return None


def is_int(x: Any) -> bool:
    """Whether `x` is an integer value (a Python int or a kernelc/NumPy integer scalar)."""
    return _host_kind(x) == "int"


def is_float(x: Any) -> bool:
    """Whether `x` is a floating-point value."""
    return _host_kind(x) == "float"


def is_scalar(x: Any) -> bool:
    """Whether `x` is an integer or floating-point value."""
    return _host_kind(x) in ("int", "float")


def is_vector(x: Any) -> bool:
    """Whether `x` is a vector value (`kc.vec3(...)`)."""
    return _host_kind(x) == "vec"


def is_quaternion(x: Any) -> bool:
    """Whether `x` is a quaternion value."""
    return _host_kind(x) == "quat"


def is_transformation(x: Any) -> bool:
    """Whether `x` is a transform value."""
    return _host_kind(x) == "transform"


def is_matrix(x: Any) -> bool:
    """Whether `x` is a matrix value."""
    return _host_kind(x) == "mat"


def is_composite(x: Any) -> bool:
    """Whether `x` is a vector, matrix, quaternion or transform value."""
    return _host_kind(x) in ("vec", "quat", "transform", "mat")


def is_value(x: Any) -> bool:
    """Whether `x` is a scalar, bool or composite value."""
    return _host_kind(x) is not None


def is_struct(x: Any) -> bool:
    """Whether `x` is an instance of a `@kc.struct` class."""
    return not isinstance(x, type) and type_is_struct(type(x))


def is_array(x: Any) -> bool:
    """Whether `x` is an array (or an array annotation such as `kc.array(dtype=float)`)."""
    return isinstance(x, _array_classes())


def is_tile(x: Any) -> bool:
    """Whether `x` is a tile value; tiles exist only inside kernels, so never on the host."""
    return False


def types_equal(a: Any, b: Any) -> bool:
    """Whether two types are the same: `float` and `kc.float32` are; vectors compare by
    kind, length and scalar type; arrays by class and dtype (as in Warp)."""
    if a is b:
        return True
    if is_array(a) or is_array(b):
        return (is_array(a) and is_array(b) and type(a) is type(b)
                and types_equal(a.dtype, b.dtype))
    ta, tb = _value_type(a), _value_type(b)
    if ta is None or tb is None:
        return _as_type(a) is not None and _as_type(a) == _as_type(b)
    return ta == tb


def type_size(t: Any) -> int:
    """The number of scalars in one value of `t`: 1 for scalars and structs, the length of
    a vector, rows × columns of a matrix."""
    kt = _as_type(t)
    if isinstance(kt, T.VectorType):
        return kt.length
    if isinstance(kt, T.MatrixType):
        return kt.shape[0] * kt.shape[1]
    if kt is None:
        raise TypeError(f"invalid data type: {t!r}")
    return 1


def _scalar_repr(s: T.ScalarType) -> str:
    return "bool" if s.is_bool else repr(s)


def type_repr(t: Any) -> str:
    """A readable name of `t`, with Warp's spelling: `float32`, `vec3f`, `mat22d`, `quatf`,
    `transformf`, `vector(length=5, dtype=float32)`, `array(ndim=2, dtype=vec3f)`."""
    if t is Any:
        return "Any"
    if is_array(t):
        return f"{type(t).__name__}(ndim={t.ndim}, dtype={type_repr(t.dtype)})"
    if t is float:
        return "float"
    if t is int:
        return "int"
    if t is bool:
        return "bool"
    kt = _as_type(t)
    if isinstance(kt, T.ScalarType):
        return _scalar_repr(kt)
    if isinstance(kt, T.VectorType):
        short = _SHORT.get(repr(kt.dtype))
        if kt.kind in ("quat", "transform"):
            prefix = "quat" if kt.kind == "quat" else "transform"
            return f"{prefix}{short}" if short else f"{prefix}(dtype={type_repr(kt.dtype)})"
        if short and kt.length <= 4:
            return f"vec{kt.length}{short}"
        return f"vector(length={kt.length}, dtype={type_repr(kt.dtype)})"
    if isinstance(kt, T.MatrixType):
        short = _SHORT.get(repr(kt.dtype))
        rows, cols = kt.shape
        if short and rows <= 4 and cols <= 4:
            return f"mat{rows}{cols}{short}"
        return f"matrix(shape=({rows}, {cols}), dtype={type_repr(kt.dtype)})"
    if isinstance(t, T.Type):  # its `__name__` comes from here: no recursion
        return repr(t)
    name = getattr(t, "__qualname__", getattr(t, "__name__", None))
    return repr(t) if name is None else f"{t.__module__}.{name}"


def class_name(t: T.Type) -> str:
    """`t.__name__`: Warp's class names; `vec_t`/`mat_t` for sizes without a short name."""
    if isinstance(t, T.ScalarType):
        return _scalar_repr(t)
    if isinstance(t, T.StructType):
        return t.name
    name = type_repr(t)
    # (bfloat16 vectors and matrices have a short repr, `vec3bf`, but no named class)
    if "(" not in name and getattr(t, "dtype", None) != T.bfloat16:
        return name
    return {"vec": "vec_t", "quat": "quat_t", "transform": "transform_t"}.get(
        getattr(t, "kind", ""), "mat_t")


def type_ctype(t: Any) -> Any:
    """The ctypes type of one value of `t`: `ctypes.c_float` for `float`, an array of
    scalars for a vector or matrix, a Structure with the C layout for a struct."""
    kt = _as_type(t)
    if isinstance(kt, T.ScalarType):
        return _CTYPES["bool" if kt.is_bool else repr(kt)]
    if isinstance(kt, (T.VectorType, T.MatrixType, T.StructType)):
        from kernelc.runtime.cpu import ctype_of

        return ctype_of(kt)
    raise TypeError(f"invalid data type: {t!r}")


NAMES = frozenset(name for name in globals()
                  if name.startswith(("type_is_", "is_")) or name in
                  ("types_equal", "type_size", "type_repr", "type_ctype"))
