"""Value types of function spaces (scalars, vectors, matrices) and the device funcs that turn
node weights into values, gradients and divergences (Warp's `CollocatedFunctionSpace` with
its identity dof mapper).

A space of value type V stores one V per node; its degrees of freedom are V's scalar
components (`dof_count`), in row-major order for matrices. The basis function of dof d of a
node is the node's scalar weight times the unit value `unit(d)` (a 1 at component d); its
gradient is `outer(unit(d), grad w)` and its divergence `dot(unit(d), grad w)` (vectors) or
`grad w . unit(d)` (matrices: a sum over the first index), as in Warp.
"""

from dataclasses import dataclass
from functools import cache
from typing import Any

import kernelc as kc
from kernelc import types as T
from kernelc.fem.types import mat_type, vec_type


def value_kind(dtype: Any) -> str:
    """"scalar", "vector" or "matrix"."""
    t = T.as_type(dtype)
    if isinstance(t, T.MatrixType):
        return "matrix"
    if isinstance(t, T.VectorType):
        return "vector"
    return "scalar"


def scalar_of(dtype: Any) -> Any:
    """The scalar type of a scalar, vector or matrix type."""
    t = T.as_type(dtype)
    return t.dtype if isinstance(t, (T.VectorType, T.MatrixType)) else t


def dof_count(dtype: Any) -> int:
    """Number of scalar components of a value type."""
    t = T.as_type(dtype)
    if isinstance(t, T.MatrixType):
        return t.shape[0] * t.shape[1]
    if isinstance(t, T.VectorType):
        return t.length
    return 1


@dataclass(frozen=True)
class ValueAlgebra:
    """The device funcs of one value type on a geometry of dimension `dim`.

    Basis funcs take a weight (or weight gradient, in world space) and a dof index; node
    funcs take a node value and a weight (gradient). `grad_type` / `div_type` are None where
    Warp has no such operator (gradients of matrices; divergences of scalars, or of values
    whose leading size is not `dim`).
    """

    dtype: Any
    scalar: Any
    kind: str
    dof_count: int
    grad_type: Any
    div_type: Any
    zero: Any  # () -> V
    grad_zero: Any
    div_zero: Any
    unit: Any  # (dof) -> V
    basis_grad: Any  # (grad w, dof) -> grad type
    basis_div: Any  # (grad w, dof) -> div type
    node_grad: Any  # (value, grad w) -> grad type
    node_div: Any  # (value, grad w) -> div type
    to_value: Any = None  # (node value) -> value, for spaces with a dof mapper (dof_mapper.py)


def _zero_func(t: Any, scalar: Any) -> Any:
    if t is None:
        return None
    if value_kind(t) == "scalar":
        @kc.func
        def zero_scalar():
            return scalar(0.0)

        return zero_scalar

    @kc.func
    def zero_value():
        return t(scalar(0.0))

    return zero_value


@cache
def value_algebra(dtype: Any, dim: int) -> ValueAlgebra:
    """The `ValueAlgebra` of `dtype` (a kernelc scalar, vector or matrix type) in dimension
    `dim`; made once per arguments."""
    t = T.as_type(dtype)
    kind = value_kind(t)
    scalar = scalar_of(t)
    count = dof_count(t)
    grad_t = div_t = None
    if kind == "scalar":
        grad_t = vec_type(dim, scalar)
    elif kind == "vector":
        grad_t = mat_type(t.length, dim, scalar)
        div_t = scalar if t.length == dim else None
    elif t.shape[0] == dim:
        div_t = vec_type(t.shape[1], scalar)
    cols = t.shape[1] if kind == "matrix" else 1

    if kind == "scalar":
        @kc.func
        def unit(dof: int):
            return scalar(1.0)

        @kc.func
        def basis_grad(gw: Any, dof: int):
            return gw

        @kc.func
        def node_grad(x: Any, gw: Any):
            return x * gw

        basis_div = node_div = None
    elif kind == "vector":
        @kc.func
        def unit(dof: int):
            u = t(scalar(0.0))
            u[dof] = scalar(1.0)
            return u

        @kc.func
        def basis_grad(gw: Any, dof: int):
            return kc.outer(unit(dof), gw)

        @kc.func
        def basis_div(gw: Any, dof: int):
            return gw[dof]

        @kc.func
        def node_grad(x: Any, gw: Any):
            return kc.outer(x, gw)

        @kc.func
        def node_div(x: Any, gw: Any):
            return kc.dot(x, gw)
    else:
        @kc.func
        def unit(dof: int):
            u = t(scalar(0.0))
            u[dof // cols, dof % cols] = scalar(1.0)
            return u

        @kc.func
        def basis_div(gw: Any, dof: int):
            return gw * unit(dof)

        @kc.func
        def node_div(x: Any, gw: Any):
            return gw * x

        basis_grad = node_grad = None
    if div_t is None:
        basis_div = node_div = None
    return ValueAlgebra(t, scalar, kind, count, grad_t, div_t, _zero_func(t, scalar),
                        _zero_func(grad_t, scalar), _zero_func(div_t, scalar), unit,
                        basis_grad, basis_div, node_grad, node_div)


@cache
def symmetric_part_func(grad_type: Any) -> Any:
    """(square matrix) -> its symmetric part (Warp's `fem.D` of a gradient)."""
    scalar = scalar_of(grad_type)

    @kc.func
    def symmetric_part(g: Any):
        return scalar(0.5) * (g + kc.transpose(g))

    return symmetric_part


@cache
def skew_part_func(grad_type: Any) -> Any:
    """(2x2 or 3x3 matrix) -> its skew part as a rotation angle or vector (Warp's `fem.curl`
    of a gradient)."""
    t = T.as_type(grad_type)
    scalar = t.dtype
    if t.shape == (2, 2):
        @kc.func
        def skew_angle(g: Any):
            return scalar(0.5) * (g[1, 0] - g[0, 1])

        return skew_angle
    vec3 = vec_type(3, scalar)

    @kc.func
    def skew_vector(g: Any):
        half = scalar(0.5)
        return vec3(half * (g[2, 1] - g[1, 2]), half * (g[0, 2] - g[2, 0]),
                    half * (g[1, 0] - g[0, 1]))

    return skew_vector
