"""Degree-of-freedom mappers: node values stored in a smaller type than the field's values
(Warp's `fem.DofMapper`, `SymmetricTensorMapper`, `SkewSymmetricTensorMapper`).

A space made with a mapper stores one `dof_dtype` per node (`DOF_SIZE` scalars) and its
fields take values of `value_dtype`: a node's contribution is its basis function times
`dof_to_value(node value)`, and interpolation stores `value_to_dof(value)`. Both are linear
and are kernelc funcs. The tensor mappers are orthonormal for the vector norm on the dofs
and half the Frobenius norm on the tensors (so an off-diagonal dof appears once in each of
the two entries it sets, a diagonal one scaled by sqrt 2 in Voigt order).
"""

import math
from enum import Enum
from functools import cache
from typing import Any

import numpy as np

import kernelc as kc
from kernelc import types as T
from kernelc.fem.types import mat_type, vec_type
from kernelc.fem.valuetypes import ValueAlgebra, dof_count, scalar_of, value_algebra
from kernelc.frontend.decorators import Func

SQRT_2, SQRT_1_2 = math.sqrt(2.0), math.sqrt(0.5)
SQRT_3, SQRT_1_3 = math.sqrt(3.0), math.sqrt(1.0 / 3.0)


class DofMapper:
    """Maps the degrees of freedom stored at a node to a field value, and back (Warp's
    `fem.DofMapper`).

    Subclasses set `value_dtype`, `dof_dtype`, `DOF_SIZE` and the kernelc funcs
    `dof_to_value(dof)` and `value_to_dof(value)`.
    """

    value_dtype: Any
    dof_dtype: Any
    DOF_SIZE: int
    dof_to_value: Any
    value_to_dof: Any

    @property
    def key(self) -> tuple:
        """What tells mappers apart in compiled code (the class and the value type)."""
        cls = type(self)
        return (f"{cls.__module__}.{cls.__qualname__}", repr(T.as_type(self.value_dtype)),
                int(self.DOF_SIZE))

    @property
    def name(self) -> str:
        """`key` as an identifier, for the names of spaces (and so of compiled code)."""
        return "".join(c if c.isalnum() else "_" for c in "_".join(map(str, self.key)))

    def __str__(self) -> str:
        return f"{type(self).__name__}_{T.as_type(self.value_dtype)!r}_{self.DOF_SIZE}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DofMapper) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


class IdentityMapper(DofMapper):
    """Nodes store the values themselves (what spaces without a mapper use)."""

    def __init__(self, dtype: Any) -> None:
        if dtype is float:
            dtype = kc.float32
        self.value_dtype = self.dof_dtype = dtype
        self.DOF_SIZE = dof_count(dtype)
        self.dof_to_value = self.value_to_dof = _identity()


class SymmetricTensorMapper(DofMapper):
    """Symmetric 2x2 (3 dofs) or 3x3 (6 dofs) tensors (Warp's `fem.SymmetricTensorMapper`).

    Args:
        dtype: `mat22`, `mat22d`, `mat33` or `mat33d`.
        mapping: `Mapping.VOIGT` (default: diagonal entries times sqrt 1/2, then the
            off-diagonal ones) or `Mapping.DB16` (trace part first, then the other diagonal
            and the off-diagonal parts).
    """

    class Mapping(Enum):
        """Order and scaling of the dofs."""

        VOIGT = 0
        DB16 = 1

    def __init__(self, dtype: Any, mapping: "SymmetricTensorMapper.Mapping" = Mapping.VOIGT
                 ) -> None:
        n, scalar = _square_shape(dtype)
        self.value_dtype = dtype
        self.mapping = mapping
        self.DOF_SIZE = n * (n + 1) // 2
        self.dof_dtype = vec_type(self.DOF_SIZE, scalar)
        voigt = mapping == SymmetricTensorMapper.Mapping.VOIGT
        self.dof_to_value, self.value_to_dof = _symmetric_funcs(n, scalar, voigt)

    @property
    def key(self) -> tuple:
        return (*super().key, self.mapping.name)

    def __str__(self) -> str:
        return f"{self.mapping}_{self.DOF_SIZE}"


class SkewSymmetricTensorMapper(DofMapper):
    """Skew-symmetric 2x2 (1 dof, a scalar) or 3x3 (3 dofs, the axial vector) tensors
    (Warp's `fem.SkewSymmetricTensorMapper`).

    Args:
        dtype: `mat22`, `mat22d`, `mat33` or `mat33d`.
    """

    def __init__(self, dtype: Any) -> None:
        n, scalar = _square_shape(dtype)
        self.value_dtype = dtype
        self.DOF_SIZE = n * (n - 1) // 2
        # a 2x2 tensor's single dof: a Python float for float32 tensors, as in Warp
        single = float if scalar is kc.float32 else scalar
        self.dof_dtype = single if n == 2 else vec_type(3, scalar)
        self.dof_to_value, self.value_to_dof = _skew_funcs(n, scalar)

    def __str__(self) -> str:
        return f"{type(self).__name__}_{self.DOF_SIZE}"


def _square_shape(dtype: Any) -> tuple[int, Any]:
    t = T.as_type(dtype)
    if not isinstance(t, T.MatrixType) or t.shape not in ((2, 2), (3, 3)) or t.dtype not in (
            T.float32, T.float64):
        raise ValueError(f"Unsupported value dtype: {dtype!r} (a 2x2 or 3x3 matrix of float32 "
                         "or float64)")
    return t.shape[0], kc.float64 if t.dtype == T.float64 else kc.float32


@cache
def _identity() -> Any:
    @kc.func
    def same(x: Any):
        return x

    return same


@cache
def _symmetric_funcs(n: int, scalar: Any, voigt: bool) -> tuple[Any, Any]:
    """(dof_to_value, value_to_dof) of symmetric n x n tensors of `scalar`."""
    Mat, Dofs = mat_type(n, n, scalar), vec_type(n * (n + 1) // 2, scalar)
    half, s2, s12 = scalar(0.5), scalar(SQRT_2), scalar(SQRT_1_2)
    s3, s13 = scalar(SQRT_3), scalar(SQRT_1_3)

    if n == 2 and voigt:
        @kc.func
        def to_value(d: Any):
            return Mat(s2 * d[0], d[2], d[2], s2 * d[1])

        @kc.func
        def to_dofs(m: Any):
            return Dofs(s12 * m[0, 0], s12 * m[1, 1], half * (m[0, 1] + m[1, 0]))
    elif n == 2:
        @kc.func
        def to_value(d: Any):
            return Mat(d[0] + d[1], d[2], d[2], d[0] - d[1])

        @kc.func
        def to_dofs(m: Any):
            return Dofs(half * (m[0, 0] + m[1, 1]), half * (m[0, 0] - m[1, 1]),
                        half * (m[0, 1] + m[1, 0]))
    elif voigt:
        @kc.func
        def to_value(d: Any):
            return Mat(s2 * d[0], d[5], d[4], d[5], s2 * d[1], d[3], d[4], d[3], s2 * d[2])

        @kc.func
        def to_dofs(m: Any):
            return Dofs(s12 * m[0, 0], s12 * m[1, 1], s12 * m[2, 2], half * (m[2, 1] + m[1, 2]),
                        half * (m[0, 2] + m[2, 0]), half * (m[1, 0] + m[0, 1]))
    else:
        two, three = scalar(2.0), scalar(3.0)

        @kc.func
        def to_value(d: Any):
            # isotropic part, in-plane deviator, out-of-plane deviator, shears
            iso = d[0] * s2 * s13
            dev = d[2] * s13
            return Mat(iso + d[1] - dev, d[5], d[4], d[5], iso - d[1] - dev, d[3], d[4], d[3],
                       iso + two * dev)

        @kc.func
        def to_dofs(m: Any):
            trace = m[0, 0] + m[1, 1] + m[2, 2]
            return Dofs(trace * s13 * s12, half * (m[0, 0] - m[1, 1]),
                        half * (m[2, 2] - trace / three) * s3, half * (m[2, 1] + m[1, 2]),
                        half * (m[0, 2] + m[2, 0]), half * (m[1, 0] + m[0, 1]))
    if scalar is kc.float64:
        return to_value, to_dofs
    # On the host, Warp evaluates these in Python floats and rounds once, when the result
    # is built; kernels keep the float32 arithmetic.
    wide_value, wide_dofs = _symmetric_funcs(n, kc.float64, voigt)
    Mat64, Dofs64 = mat_type(n, n, kc.float64), vec_type(n * (n + 1) // 2, kc.float64)
    return (_HostInDouble(to_value, wide_value, Dofs64, Mat),
            _HostInDouble(to_dofs, wide_dofs, Mat64, Dofs))


class _HostInDouble(Func):
    """A float32 func whose host calls run its float64 twin, the result rounded once."""

    def __init__(self, narrow: Func, wide: Func, wide_arg: Any, result: Any) -> None:
        super().__init__(narrow.func)
        self._wide, self._wide_arg, self._result = wide, wide_arg, result

    def __call__(self, x: Any) -> Any:
        wide = self._wide(self._wide_arg(np.asarray(x, dtype=np.float64)))
        return self._result(np.asarray(wide, dtype=np.float64).astype(np.float32))


@cache
def _skew_funcs(n: int, scalar: Any) -> tuple[Any, Any]:
    """(dof_to_value, value_to_dof) of skew-symmetric n x n tensors of `scalar`."""
    Mat, zero, half = mat_type(n, n, scalar), scalar(0.0), scalar(0.5)
    if n == 2:
        @kc.func
        def to_value(d: Any):
            return Mat(zero, -d, d, zero)

        @kc.func
        def to_dofs(m: Any):
            return half * (m[1, 0] - m[0, 1])

        return to_value, to_dofs
    Axial = vec_type(3, scalar)

    @kc.func
    def axial_to_value(d: Any):
        return Mat(zero, -d[2], d[1], d[2], zero, -d[0], -d[1], d[0], zero)

    @kc.func
    def value_to_axial(m: Any):
        return Axial(half * (m[2, 1] - m[1, 2]), half * (m[0, 2] - m[2, 0]),
                     half * (m[1, 0] - m[0, 1]))

    return axial_to_value, value_to_axial


def is_identity(mapper: Any) -> bool:
    """Whether `mapper` stores values as they are (None or an `IdentityMapper`)."""
    return mapper is None or isinstance(mapper, IdentityMapper)


_MAPPED: dict[tuple, ValueAlgebra] = {}


def mapped_algebra(mapper: DofMapper, dim: int) -> ValueAlgebra:
    """The `ValueAlgebra` of a space whose nodes store `mapper.dof_dtype`: the value type's
    operators applied to `dof_to_value` of the node values (or of the unit dofs, for test
    and trial functions); made once per mapper kind and dimension."""
    key = (mapper.key, dim)
    if key in _MAPPED:
        return _MAPPED[key]
    value = value_algebra(T.as_type(mapper.value_dtype), dim)
    dofs = value_algebra(T.as_type(mapper.dof_dtype), dim)
    to_value, dof_unit = mapper.dof_to_value, dofs.unit
    value_grad, value_div = value.node_grad, value.node_div

    @kc.func
    def unit(dof: int):
        return to_value(dof_unit(dof))

    @kc.func
    def basis_grad(gw: Any, dof: int):
        return value_grad(unit(dof), gw)

    @kc.func
    def basis_div(gw: Any, dof: int):
        return value_div(unit(dof), gw)

    @kc.func
    def node_grad(x: Any, gw: Any):
        return value_grad(to_value(x), gw)

    @kc.func
    def node_div(x: Any, gw: Any):
        return value_div(to_value(x), gw)

    has_grad, has_div = value_grad is not None, value_div is not None
    algebra = ValueAlgebra(
        value.dtype, value.scalar, value.kind, int(mapper.DOF_SIZE), value.grad_type,
        value.div_type, value.zero, value.grad_zero, value.div_zero, unit,
        basis_grad if has_grad else None, basis_div if has_div else None,
        node_grad if has_grad else None, node_div if has_div else None, to_value)
    _MAPPED[key] = algebra
    return algebra


def check_mapper(mapper: DofMapper, scalar: Any) -> None:
    """Raises unless `mapper`'s value type is of the geometry's `scalar` type."""
    if scalar_of(T.as_type(mapper.value_dtype)) != T.as_type(scalar):
        raise NotImplementedError(
            f"a dof mapper of {T.as_type(mapper.value_dtype)!r} values on a "
            f"{T.as_type(scalar)!r} geometry is not supported yet: values must be of the "
            "geometry's scalar type")


__all__ = ["DofMapper", "IdentityMapper", "SkewSymmetricTensorMapper", "SymmetricTensorMapper"]
