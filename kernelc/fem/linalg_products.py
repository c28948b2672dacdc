"""Kernel funcs of `fem.linalg` that combine values of any rank (Warp's
`generalized_inner`, `generalized_outer`) or split a square tensor into parts
(`symmetric_part`, `skew_part`, `spherical_part`). Integrands use the generalized products
to write one form for scalar, vector and matrix fields."""

from typing import Any

import kernelc as kc

_vector = kc.types.vector(Any, kc.Scalar)
_matrix = kc.types.matrix((Any, Any), kc.Scalar)
_mat22 = kc.types.matrix((2, 2), kc.Scalar)
_mat33 = kc.types.matrix((3, 3), kc.Scalar)


@kc.func
def generalized_outer(x: _vector, y: _vector):
    """The matrix x yᵀ."""
    return kc.outer(x, y)


@kc.func
def generalized_outer(x: kc.Scalar, y: _vector):  # noqa: F811
    """The vector x y."""
    return x * y


@kc.func
def generalized_outer(x: _vector, y: kc.Scalar):  # noqa: F811
    """The vector x y."""
    return x * y


@kc.func
def generalized_outer(x: kc.quatf, y: _vector):  # noqa: F811
    """The 4-row matrix of the quaternion's components times yᵀ."""
    return kc.outer(kc.vec4(x[0], x[1], x[2], x[3]), y)


@kc.func
def generalized_inner(x: _vector, y: _vector):
    """The dot product."""
    return kc.dot(x, y)


@kc.func
def generalized_inner(x: kc.Scalar, y: kc.Scalar):  # noqa: F811
    """The product."""
    return x * y


@kc.func
def generalized_inner(x: _matrix, y: _vector):  # noqa: F811
    """The vector yᵀ x."""
    return y @ x


@kc.func
def generalized_inner(x: _vector, y: _matrix):  # noqa: F811
    """The vector xᵀ y."""
    return x @ y


@kc.func
def generalized_inner(x: _matrix, y: _matrix):  # noqa: F811
    """The double contraction x : y."""
    return kc.ddot(x, y)


@kc.func
def symmetric_part(x: Any):
    """(x + xᵀ) / 2."""
    return x.dtype(0.5) * (x + kc.transpose(x))


@kc.func
def spherical_part(x: _mat22):
    """The multiple of the identity with x's trace."""
    return x.dtype(0.5) * kc.trace(x) * kc.identity(n=2, dtype=x.dtype)


@kc.func
def spherical_part(x: _mat33):  # noqa: F811
    """The multiple of the identity with x's trace."""
    return (kc.trace(x) / x.dtype(3.0)) * kc.identity(n=3, dtype=x.dtype)


@kc.func
def skew_part(x: _mat22):
    """The rotation angle of x's skew-symmetric part."""
    return x.dtype(0.5) * (x[1, 0] - x[0, 1])


@kc.func
def skew_part(x: _mat33):  # noqa: F811
    """The rotation vector of x's skew-symmetric part."""
    return type(x[0])(x.dtype(0.5) * (x[2, 1] - x[1, 2]), x.dtype(0.5) * (x[0, 2] - x[2, 0]),
                      x.dtype(0.5) * (x[1, 0] - x[0, 1]))
