"""Device-side helpers of the gradient checks: scalar views and one-element kernels.

The Jacobian code touches single elements of arrays that may live on a GPU (a seed in an
output's gradient, a perturbation of an input); these small kernels do that without
copying the arrays to the host. None of their launches is recorded on a tape.
"""

from __future__ import annotations

from typing import Any

from kernelc import types as T
from kernelc.frontend.decorators import kernel
from kernelc.frontend.special import tid
from kernelc.runtime.array import array


def scalar_type(dtype: Any) -> T.ScalarType | None:
    """The scalar type of an array dtype (a scalar, vector or matrix type), else None."""
    if isinstance(dtype, T.ScalarType):
        return dtype
    if isinstance(dtype, (T.VectorType, T.MatrixType)):
        return dtype.dtype
    return None


def components(dtype: Any) -> int:
    """How many scalars one element of `dtype` holds (1 for scalars)."""
    return dtype.count if isinstance(dtype, (T.VectorType, T.MatrixType)) else 1


def is_differentiable(value: Any) -> bool:
    """Whether `value` takes part in a Jacobian: an array with a gradient whose elements
    are floating-point scalars, vectors or matrices."""
    if not isinstance(value, array) or value.ptr is None or value.grad is None:
        return False
    scalar = scalar_type(value.dtype)
    return scalar is not None and scalar.is_float


def scalar_view(a: array, what: str) -> array:
    """A 1-d view of every scalar in `a` (vector and matrix components one after another).

    The view does not keep `a`'s memory alive: callers hold on to `a` while they use it.

    Raises:
        ValueError: `a` is not contiguous.
    """
    if not a.is_contiguous:
        raise ValueError(f"{what} must be a contiguous array to compute Jacobians, got one "
                         f"with shape {a.shape} and strides {a.strides}")
    scalar = scalar_type(a.dtype)
    if scalar is None:
        raise ValueError(f"{what} must hold scalars, vectors or matrices, not {a.dtype!r}")
    return array(ptr=a.ptr, dtype=scalar, shape=(a.size * components(a.dtype),),
                 device=a.device)


def set_element(a: array, index: int, value: float, relative: bool = False) -> None:
    """Sets `a[index] = value` (or adds `value` when `relative`) on `a`'s device."""
    cast = a.dtype.np_dtype.type
    _launch(_set_element_kernel, 1, [a, index, cast(value), relative], a.device)


def copy_element(dest: array, src: array, index: int) -> None:
    """Copies `src[index]` into `dest[index]` on their device."""
    _launch(_copy_element_kernel, 1, [dest, src, index], dest.device)


def difference_quotient(left: array, right: array, eps: float, out: array) -> None:
    """`out = (right - left) / (2 eps)` elementwise, in the arrays' precision."""
    cast = left.dtype.np_dtype.type
    _launch(_quotient_kernel, left.size, [left, right, cast(eps), out], left.device)



def _launch(k: Any, dim: int, args: list, device: Any) -> None:
    from kernelc.runtime.launch import launch

    launch(k, dim, inputs=args, device=device, record_tape=False)


@kernel(enable_backward=False)
def _set_element_kernel(a: array(dtype=Any), index: int, value: Any, relative: bool):
    if relative:
        a[index] = a[index] + value
    else:
        a[index] = value


@kernel(enable_backward=False)
def _copy_element_kernel(dest: array(dtype=Any), src: array(dtype=Any), index: int):
    dest[index] = src[index]


@kernel(enable_backward=False)
def _quotient_kernel(left: array(dtype=Any), right: array(dtype=Any), eps: Any,
                     out: array(dtype=Any)):
    i = tid()
    out[i] = (right[i] - left[i]) / (eps + eps)


for _k in (_set_element_kernel, _copy_element_kernel, _quotient_kernel):
    _k.is_builtin = True  # reported as "builtin kernel ..." by the timing tools
