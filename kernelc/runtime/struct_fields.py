"""Assigning to the fields of a `@kc.struct` instance on the host, checked as in Warp.

Each field gets a setter chosen by its type, installed as the class's `__setattr__`:

| field type | accepted | stored |
| --- | --- | --- |
| array, indexed array | None, or an array of that family with the field's dtype and ndim | the array; `_<name>_grad` keeps its gradient alive |
| vector, matrix, quat, transform | None (the type's `T()`), a value of the type, a sequence or NumPy array of the right size | a copy of the type's host value |
| nested struct | an instance of that struct | the instance |
| scalar | a number (None is zero) | the value |

A wrong array family, dtype or ndim, or a single number (a Python number, or one made by a
kernelc scalar type such as `kc.float32(1.5)`) for a composite field, is a `TypeError` with
Warp's wording. Other NumPy scalars and booleans for a composite field are still broadcast,
as Warp does, with Warp's `DeprecationWarning`. Names that are not fields are set as on
any Python object.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.types_query import type_repr

# Values Warp still broadcasts into a vector or matrix, with a deprecation warning (not
# kernelc's own typed scalars, `T.HostScalar`: Warp refuses its scalar classes).
DEPRECATED_FILL = (bool, np.bool_, np.integer, np.floating)


def is_deprecated_fill(value: Any) -> bool:
    """Whether Warp broadcasts `value` into a vector or matrix, with a deprecation warning:
    a boolean, or a NumPy scalar not made by a kernelc scalar type."""
    return isinstance(value, DEPRECATED_FILL) and not isinstance(value, T.HostScalar)


_set = object.__setattr__


def install_field_setters(cls: type, st: T.StructType) -> None:
    """Makes assignments to the fields of `cls` (the struct `st`) checked and converted."""
    for base in cls.__mro__[1:]:
        if isinstance(getattr(base, "_kc_type", None), T.StructType):
            raise KernelError(f"struct '{cls.__name__}' derives from the struct "
                              f"'{base.__name__}', but Warp structs must be defined as base "
                              f"classes")
    setters = {name: _setter_for(name, t) for name, t in st.fields}

    def __setattr__(self, name: str, value: Any) -> None:
        setter = setters.get(name)
        if setter is not None:
            setter(self, value)
        elif name.startswith("_"):  # kernelc's own bookkeeping on the instance
            _set(self, name, value)
        else:
            raise RuntimeError(f"Trying to set Warp struct attribute that does not exist "
                               f"{name}")

    cls.__setattr__ = __setattr__
    cls.__ctype__ = _ctype
    if "cls" not in setters:
        cls.cls = cls  # Warp's `Struct.cls`: the class whose instances these are


def _ctype(self: Any) -> Any:
    """The instance's C layout as a ctypes object (Warp's `__ctype__()`), which recorded
    launches take (`Launch.set_param_at_index_from_ctype`)."""
    from kernelc.runtime.launch_cmd import ctype_descriptor

    return ctype_descriptor(self)


def _setter_for(name: str, t: T.Type):
    if isinstance(t, T.ArrayType):
        return _array_setter(name, t, "a Warp array")
    if isinstance(t, T.IndexedArrayType):
        return _array_setter(name, t, "a Warp indexed array")
    if isinstance(t, (T.VectorType, T.MatrixType)):
        return _composite_setter(name, t)
    if isinstance(t, T.StructType):
        return _struct_setter(name, t)
    if isinstance(t, T.ScalarType):
        def set_scalar(self: Any, value: Any) -> None:
            _set(self, name, t(0) if value is None else value)

        return set_scalar
    return lambda self, value: _set(self, name, value)


def _array_setter(name: str, t: T.ArrayType | T.IndexedArrayType, family: str):
    grad_name = f"_{name}_grad"
    indexed = isinstance(t, T.IndexedArrayType)

    def set_array(self: Any, value: Any) -> None:
        grad = None
        if value is not None:
            kc_type = getattr(value, "_kc_type", None)
            if type(kc_type) is not type(t):
                raise TypeError(f"Struct field '{name}' expects {family}, got "
                                f"{type(value).__name__}")
            if kc_type.dtype != t.dtype:
                raise TypeError(f"Struct field '{name}' expects dtype {type_repr(t.dtype)}, "
                                f"got {type_repr(kc_type.dtype)}")
            if kc_type.ndim != t.ndim:
                raise TypeError(f"Struct field '{name}' expects an array with {t.ndim} "
                                f"dimension(s), got {kc_type.ndim} dimension(s)")
            owner = value.data if indexed else value
            if owner is not None and getattr(owner, "requires_grad", False):
                grad = owner.grad
        # The gradient stays alive while the struct holds the array (a backward pass finds
        # it through the field); replacing the array releases it.
        _set(self, grad_name, grad)
        _set(self, name, value)

    return set_array


def _composite_setter(name: str, t: T.VectorType | T.MatrixType):
    def set_composite(self: Any, value: Any) -> None:
        _set(self, name, composite_value(t, value, f"struct field '{name}'",
                                         f"Struct field '{name}'", TypeError))

    return set_composite


def composite_value(t: T.VectorType | T.MatrixType, value: Any, what: str, subject: str,
                    error: type[Exception]) -> Any:
    """`value` as a new host value of the vector or matrix type `t`, as Warp converts one
    assigned to `what` ("struct field 'v'", "kernel parameter 'v'"): None is `t()`, a
    sequence or array is converted, a NumPy scalar or a boolean fills every component
    (deprecated, with a warning: see `is_deprecated_fill`), and another single value
    raises `error` (its message begins with `subject`)."""
    if value is None:
        return t()
    if getattr(value, "_kc_type", None) == t and isinstance(value, np.ndarray):
        return value.copy()
    if is_deprecated_fill(value):
        warn_deprecated_fill(t, value, what)
        value = float(value) if isinstance(value, np.floating) else int(value)
    elif not hasattr(value, "__len__"):
        raise error(single_value_message(t, value, subject))
    return t(value)


def single_value_message(t: T.Type, value: Any, subject: str) -> str:
    """Warp's message for a single value given where the composite type `t` is expected."""
    name = type_repr(t)
    return (f"{subject} expects {name} but got a single value of type "
            f"{type(value).__name__}. Construct the value explicitly, e.g.: {name}(...).")


def warn_deprecated_fill(t: T.Type, value: Any, what: str) -> None:
    """Warp's DeprecationWarning for a NumPy scalar or a boolean broadcast into `t`."""
    from kernelc.logger import log_warning
    from kernelc.runtime.array_access import user_frame

    name = type_repr(t)
    log_warning(f"Implicit conversion from a value of type `{type(value).__name__}` to the "
                f"composite type `{name}` for {what} is deprecated. Construct the value "
                f"explicitly, e.g.: `{name}(...)`.", DeprecationWarning,
                stacklevel=user_frame(2)[1])


def _struct_setter(name: str, t: T.StructType):
    def set_struct(self: Any, value: Any) -> None:
        kc_type = getattr(value, "_kc_type", None)
        if not isinstance(kc_type, T.StructType):
            raise KernelError(f"Struct field '{name}' expects a {t.name} instance, got "
                              f"{type(value).__name__} (trying to assign a non-structure "
                              f"value to a struct attribute)")
        if kc_type != t:
            raise KernelError(f"Struct field '{name}' expects a {t.name} instance, got a "
                              f"{kc_type.name} (trying to assign a structure of another type)")
        _set(self, name, value)

    return set_struct
