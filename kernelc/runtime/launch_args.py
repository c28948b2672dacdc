"""Launch arguments for parameters passed by value: structs, vectors and matrices.

As in Warp, a vector, matrix, quaternion or transform parameter takes a value of its type,
or a sequence or NumPy array of the right size, converted. A single Python number or
kernelc scalar (`kc.float32(1.5)`) is refused (`vec3(x)` has to be written out); another
NumPy scalar or a boolean is still broadcast to every component, with Warp's
`DeprecationWarning`. A struct parameter needs an instance
of its struct: None is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.errors import KernelError, WarpCodegenValueError
from kernelc.runtime.struct_fields import (
    is_deprecated_fill,
    single_value_message,
    warn_deprecated_fill,
)
from kernelc.types_query import type_repr


def struct_arg_type(kernel, name: str, want: T.StructType, value: Any, fail) -> T.Type:
    """The type of `value` as the struct parameter `name` (its own type, checked)."""
    if value is None:
        raise KernelError(f"argument '{name}' expects {want.name} but got None",
                          kernel._param_loc(name), kernel.__name__)
    kc_type = getattr(value, "_kc_type", None)
    if kc_type == want:
        return want
    got = repr(kc_type) if kc_type is not None else type(value).__name__
    raise fail(f"expected {want!r}, got {got}")


def composite_arg_type(kernel, name: str, want: T.VectorType | T.MatrixType, value: Any,
                       fail) -> T.Type:
    """The type of `value` as the vector or matrix parameter `name`: `want`, when `value`
    is one or converts to one (see the module's docstring); raises otherwise."""
    from kernelc.types_vec import as_host_array

    kc_type = getattr(value, "_kc_type", None)
    if kc_type == want:
        return want
    if isinstance(kc_type, T.StructType):
        raise fail(f"expected {want!r}, got {kc_type!r}")
    if is_deprecated_fill(value):
        warn_deprecated_fill(want, value, f"kernel parameter '{name}'")
        return want
    loc = kernel._param_loc(name)
    if value is not None and not hasattr(value, "__len__"):
        raise KernelError(single_value_message(want, value, f"argument '{name}'"), loc,
                          kernel.__name__)
    if value is not None and as_host_array(want, value) is not None:
        return want
    got = repr(kc_type) if kc_type is not None else type(value).__name__
    raise WarpCodegenValueError(f"Failed to convert argument for param {name} to "
                                f"{type_repr(want)}: expected {want!r}, got {got}", loc,
                                kernel.__name__)


def fills_composite(values: Sequence[Any], types: Sequence[T.Type]) -> bool:
    """Whether a NumPy scalar or a boolean is given for a vector or matrix parameter."""
    return any(is_deprecated_fill(v) and isinstance(t, (T.VectorType, T.MatrixType))
               for v, t in zip(values, types))


def filled_composites(values: Sequence[Any], types: Sequence[T.Type]) -> list[Any]:
    """`values` with each NumPy scalar or boolean given for a vector or matrix parameter
    replaced by the value of that type with every component set to it (as Warp still
    does; `composite_arg_type` has warned)."""
    out = list(values)
    for i, (v, t) in enumerate(zip(values, types)):
        if is_deprecated_fill(v) and isinstance(t, (T.VectorType, T.MatrixType)):
            out[i] = t(float(v) if isinstance(v, np.floating) else int(v))
    return out
