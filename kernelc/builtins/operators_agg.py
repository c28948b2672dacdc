"""Arithmetic operators on vectors, matrices, quaternions and transforms (Warp's rules).

`+ -` need two values of one type, `%` two vectors of one type; `*` scales by a scalar,
multiplies matrix @ vector, vector @ matrix, matrix @ matrix, quaternion * quaternion
(Hamilton product) and transform * transform (composition); `/` divides component-wise by a
scalar (or a scalar by each component). Vector * vector is rejected, as in Warp (use dot,
cw_mul or outer). `& | ^ << >>` work component-wise on two integer vectors or matrices of one
type.
"""

from __future__ import annotations

from kernelc import types as T
from kernelc.builtins.aggregate import (
    binop,
    build,
    comps,
    dot_values,
    extend,
    fma_dot,
    is_aggregate,
    map_comps,
    require,
    scalar_fits,
)
from kernelc.builtins.matrix import rows_of
from kernelc.builtins.quat import multiply_values, quat_mul_values
from kernelc.builtins.registry import Overload
from kernelc.ir.nodes import OpCode, Value
from kernelc.types_vec import matrix, vector

GROUP = "operators"


def _same_rule(types, weak):
    a, b = types
    require(is_aggregate(a) and a == b, f"expected two values of one type, got {a!r} and {b!r}")
    return (a, b), a


def _same_vector_rule(types, weak):
    a, b = types
    require(isinstance(a, T.VectorType) and a == b,
            f"expected two vectors of one type, got {a!r} and {b!r}")
    return (a, b), a


def _componentwise(op: OpCode):
    def expand(em, a: Value, b: Value) -> Value:
        return map_comps(em, a.type, lambda x, y: binop(em, op, x, y), comps(em, a), comps(em, b))

    return expand


def _scaled_rule(allow_scalar_first: bool):
    """aggregate op scalar (and scalar op aggregate): the scalar has the component type."""

    def rule(types, weak):
        a, b = types
        if is_aggregate(a) and isinstance(b, T.ScalarType):
            require(scalar_fits(b, weak[1], a.dtype), f"cannot combine {a!r} with {b!r}")
            return (a, a.dtype), a
        if allow_scalar_first and isinstance(a, T.ScalarType) and is_aggregate(b):
            require(scalar_fits(a, weak[0], b.dtype), f"cannot combine {a!r} with {b!r}")
            return (b.dtype, b), b
        raise TypeError(f"expected a vector or matrix and a scalar, got {a!r} and {b!r}")

    return rule


def _scaled(op: OpCode):
    def expand(em, a: Value, b: Value) -> Value:
        if isinstance(a.type, T.ScalarType):
            return map_comps(em, b.type, lambda y: binop(em, op, a, y), comps(em, b))
        return map_comps(em, a.type, lambda x: binop(em, op, x, b), comps(em, a))

    return expand


def _neg_rule(types, weak):
    (a,) = types
    require(is_aggregate(a), f"expected a vector or matrix, got {a!r}")
    return (a,), a


def _neg(em, a: Value) -> Value:
    return map_comps(em, a.type, lambda x: em.op(OpCode.NEG, (x,), x.type), comps(em, a))


# ---- products -------------------------------------------------------------------------------


def _product_rule(types, weak):
    a, b = types
    require(is_aggregate(a) and is_aggregate(b), f"cannot multiply {a!r} and {b!r}")
    require(a.dtype == b.dtype, f"cannot multiply {a!r} and {b!r}: component types differ")
    if isinstance(a, T.VectorType) and isinstance(b, T.VectorType):
        require(a == b and a.kind in ("quat", "transform"),
                f"cannot multiply {a!r} and {b!r} (use dot, cw_mul or outer)")
        return (a, b), a
    if isinstance(a, T.MatrixType) and isinstance(b, T.VectorType):
        require(b.kind == "vec" and a.shape[1] == b.length,
                f"cannot multiply {a!r} and {b!r}: shapes do not match")
        return (a, b), vector(a.shape[0], a.dtype)
    if isinstance(a, T.VectorType) and isinstance(b, T.MatrixType):
        require(a.kind == "vec" and a.length == b.shape[0],
                f"cannot multiply {a!r} and {b!r}: shapes do not match")
        return (a, b), vector(b.shape[1], a.dtype)
    require(a.shape[1] == b.shape[0], f"cannot multiply {a!r} and {b!r}: shapes do not match")
    return (a, b), matrix((a.shape[0], b.shape[1]), a.dtype)


def _product(em, a: Value, b: Value) -> Value:
    ta, tb = a.type, b.type
    if isinstance(ta, T.VectorType) and isinstance(tb, T.VectorType):
        if ta.kind == "quat":
            return build(em, ta, quat_mul_values(em, comps(em, a), comps(em, b)))
        return build(em, ta, multiply_values(em, a, b))
    if isinstance(ta, T.MatrixType) and isinstance(tb, T.VectorType):
        v = comps(em, b)
        return build(em, vector(ta.shape[0], ta.dtype),
                     [dot_values(em, row, v) for row in rows_of(em, a)])
    if isinstance(ta, T.VectorType):
        v, rows = comps(em, a), rows_of(em, b)
        cols = [[row[c] for row in rows] for c in range(tb.shape[1])]
        return build(em, vector(tb.shape[1], ta.dtype), [dot_values(em, v, col) for col in cols])
    ra, rb = rows_of(em, a), rows_of(em, b)
    cols = [[row[c] for row in rb] for c in range(tb.shape[1])]
    out = [fma_dot(em, row, col) for row in ra for col in cols]
    return build(em, matrix((ta.shape[0], tb.shape[1]), ta.dtype), out)


extend("add", GROUP, "", Overload(("a", "b"), _same_rule, _componentwise(OpCode.ADD)))
extend("sub", GROUP, "", Overload(("a", "b"), _same_rule, _componentwise(OpCode.SUB)))
extend("mul", GROUP, "",
       Overload(("a", "b"), _scaled_rule(True), _scaled(OpCode.MUL)),
       Overload(("a", "b"), _product_rule, _product))
extend("div", GROUP, "", Overload(("a", "b"), _scaled_rule(True), _scaled(OpCode.DIV)))
# Warp's vector `%`: component-wise, truncated (C's `%`, fmod for floats); not for matrices.
extend("mod", GROUP, "", Overload(("a", "b"), _same_vector_rule, _componentwise(OpCode.MOD)))
extend("neg", GROUP, "", Overload(("x",), _neg_rule, _neg))


def _same_int_rule(types, weak):
    a, b = types
    require(is_aggregate(a) and a == b and a.dtype.is_int,
            f"expected two integer vectors or matrices of one type, got {a!r} and {b!r}")
    return (a, b), a


# Warp's bitwise operators on integer vectors and matrices: component-wise, both operands of
# one type (a scalar is not broadcast).
for _name, _op in (("bit_and", OpCode.BITAND), ("bit_or", OpCode.BITOR),
                   ("bit_xor", OpCode.BITXOR), ("lshift", OpCode.SHL), ("rshift", OpCode.SHR)):
    extend(_name, GROUP, "", Overload(("a", "b"), _same_int_rule, _componentwise(_op)))


# isnan / isinf are true when any component is, isfinite when every component is (Warp).
def _float_agg_rule(types, weak):
    (a,) = types
    require(is_aggregate(a) and a.dtype.is_float, f"expected a float, got {a!r}")
    return (a,), T.bool_


def _any_or_all(test: str, combine: OpCode):
    def expand(em, x: Value) -> Value:
        parts = [em.call(test, (c,)) for c in comps(em, x)]
        acc = parts[0]
        for p in parts[1:]:
            acc = em.op(combine, (acc, p), T.bool_)
        return acc

    return expand


for _name, _combine in (("isnan", OpCode.BITOR), ("isinf", OpCode.BITOR),
                        ("isfinite", OpCode.BITAND)):
    extend(_name, "scalar math", "",
           Overload(("x",), _float_agg_rule, _any_or_all(_name, _combine)))
