"""What SGD and Adam share: argument checks, scalar conversion and 1-d views."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.runtime.array import array


def check_params(params: Any, what: str) -> list[array] | None:
    """`params` as a list of arrays with memory (None stays None)."""
    if params is None:
        return None
    if isinstance(params, array) or not isinstance(params, Sequence):
        raise TypeError(f"{what} parameters must be a list of kc.array, "
                        f"got {type(params).__name__}")
    for index, param in enumerate(params):
        if not isinstance(param, array) or param.ptr is None:
            raise TypeError(f"{what} parameter {index} must be a kc.array with memory, "
                            f"got {param!r}")
    return list(params)


def check_grads(what: str, params: list[array] | None, grad: Sequence[array]) -> None:
    """Raises unless the parameters are set and `grad` has one array per parameter."""
    if params is None:
        raise RuntimeError(f"{what} parameters must be set before calling step(), got None")
    if len(grad) != len(params):
        raise ValueError(f"{what}.step() needs one gradient per parameter ({len(params)}), "
                         f"got {len(grad)}")


def scalar_of(dtype: T.Type) -> T.ScalarType | None:
    """The float scalar type of a scalar, vector or matrix element type (None otherwise)."""
    scalar = dtype.dtype if isinstance(dtype, (T.VectorType, T.MatrixType)) else dtype
    if isinstance(scalar, T.ScalarType) and scalar.is_float:
        return scalar
    return None


def typed(scalar: T.ScalarType, value: float) -> np.generic:
    """A hyperparameter as a value of the parameters' scalar type.

    The update kernels are generic, and a launch argument's type picks the specialisation:
    float32 parameters get float32 coefficients, as Warp's `float` parameters, and float64
    parameters float64 ones (which Warp does not support).
    """
    return scalar(float(value))


def check_step(name: str, g: array, params: array, buffers: dict[str, array]) -> None:
    """Raises as Warp does when a gradient or a state buffer does not fit its parameter."""
    if g.dtype != params.dtype:
        raise TypeError(f"{name} gradient dtype must match parameter dtype {params.dtype!r}, "
                        f"got {g.dtype!r}")
    for label, (buffer, dtype) in buffers.items():
        if buffer.dtype != dtype:
            raise TypeError(f"{name} {label} dtype must be {dtype!r} for parameters of "
                            f"{params.dtype!r}, got {buffer.dtype!r}")
    if g.shape != params.shape:
        raise ValueError(f"{name} gradient shape must match parameter shape {params.shape}, "
                         f"got {g.shape}")
    for label, (buffer, _) in buffers.items():
        if buffer.shape != params.shape:
            raise ValueError(f"{name} {label} shape must match parameter shape "
                             f"{params.shape}, got {buffer.shape}")


def flat(arrays: Sequence[array], what: str) -> list[array]:
    """1-d views of the arrays of one update (multi-dimensional ones must be contiguous).

    Warp's kernels take 1-d arrays only; kernelc also updates contiguous N-d parameters.
    """
    if arrays[-1].ndim == 1:
        return list(arrays)
    views = []
    for arr in arrays:
        if not arr.is_contiguous:
            raise ValueError(f"{what}: a {arr.ndim}-d array must be contiguous to be updated "
                             f"in place (pass arr.flatten() views of contiguous arrays)")
        views.append(arr.reshape(arr.size))
    return views


def fresh_buffer(buffer: array | None, param: array, dtype: T.Type) -> array:
    """A state buffer for `param`: the old one if it still fits (moved to the parameter's
    device if needed), else zeros of the parameter's shape and `dtype`."""
    if buffer is None or buffer.shape != param.shape or buffer.dtype != dtype:
        from kernelc.runtime.array import zeros

        return zeros(param.shape, dtype=dtype, device=param.device)
    if buffer.device != param.device:
        return buffer.to(param.device)
    return buffer
