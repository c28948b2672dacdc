"""Vector builtins (Warp's names): dot, cross, length, normalize, component-wise ops."""

from __future__ import annotations

from kernelc import types as T
from kernelc.builtins.aggregate import (
    binop,
    build,
    comps,
    dot_values,
    extend,
    is_aggregate,
    map_comps,
    require,
    scalar_fits,
    warp_dot,
)
from kernelc.builtins.registry import Overload, register
from kernelc.ir.nodes import OpCode, Value

GROUP = "vector math"


def _same_vectors(float_only: bool, kinds: tuple[str, ...] = ("vec", "quat")):
    """Two vectors of one type (quaternions too where `kinds` allows)."""

    def rule(types, weak):
        a, b = types
        require(isinstance(a, T.VectorType) and a.kind in kinds,
                f"expected a vector, got {a!r}")
        require(a == b, f"both arguments must have the same type, got {a!r} and {b!r}")
        require(not float_only or a.dtype.is_float, f"expected float components, got {a!r}")
        return (a, a), a

    return rule


def _one_vector(kinds: tuple[str, ...] = ("vec", "quat"), result=None):
    def rule(types, weak):
        (a,) = types
        require(isinstance(a, T.VectorType) and a.kind in kinds and a.dtype.is_float,
                f"expected a float vector, got {a!r}")
        return (a,), (a.dtype if result == "scalar" else a)

    return rule


# ---- dot, cross, lengths ----------------------------------------------------------------------


def _dot_rule(types, weak):
    params, t = _same_vectors(False)(types, weak)
    return params, t.dtype


def _dot(em, a: Value, b: Value) -> Value:
    if a.type.kind == "quat":
        return dot_values(em, comps(em, a), comps(em, b))
    return warp_dot(em, comps(em, a), comps(em, b))


register("dot", GROUP, "Dot product of two vectors (or quaternions).",
         Overload(("a", "b"), _dot_rule, _dot))


def cross_values(em, a: list[Value], b: list[Value]) -> list[Value]:
    def term(i: int, j: int) -> Value:
        return binop(em, OpCode.SUB, binop(em, OpCode.MUL, a[i], b[j]),
                     binop(em, OpCode.MUL, a[j], b[i]))

    return [term(1, 2), term(2, 0), term(0, 1)]


def _cross_rule(types, weak):
    a, b = types
    require(isinstance(a, T.VectorType) and a.kind == "vec" and a.length == 3,
            f"cross() needs 3-component vectors, got {a!r}")
    require(a == b, f"both arguments must have the same type, got {a!r} and {b!r}")
    return (a, a), a


def _cross(em, a: Value, b: Value) -> Value:
    return build(em, a.type, cross_values(em, comps(em, a), comps(em, b)))


register("cross", GROUP, "Cross product of two 3-vectors.",
         Overload(("a", "b"), _cross_rule, _cross))


def _length_sq(em, a: Value) -> Value:
    return _dot(em, a, a)


def _length(em, a: Value) -> Value:
    return em.call("sqrt", (_length_sq(em, a),))


register("length", GROUP, "Euclidean length of a vector.",
         Overload(("a",), _one_vector(result="scalar"), _length))
register("length_sq", GROUP, "Squared Euclidean length of a vector.",
         Overload(("a",), _one_vector(result="scalar"), _length_sq))


def _normalize(em, a: Value) -> Value:
    """a / length(a); a zero vector stays zero, a zero quaternion becomes the identity
    (both as in Warp, which scales a quaternion by 1 / length instead of dividing)."""
    t = a.type
    length = _length(em, a)
    zero = em.const(0.0, t.dtype)
    nonzero = em.op(OpCode.GT, (length, zero), T.bool_)
    scaled = [binop(em, OpCode.DIV, c, length) for c in comps(em, a)]
    fallback = [zero] * t.length
    if t.kind == "quat":
        inverse = binop(em, OpCode.DIV, em.const(1.0, t.dtype), length)
        scaled = [binop(em, OpCode.MUL, c, inverse) for c in comps(em, a)]
        fallback = [zero, zero, zero, em.const(1.0, t.dtype)]
    out = [em.op(OpCode.SELECT, (nonzero, s, f), t.dtype) for s, f in zip(scaled, fallback)]
    return build(em, t, out)


register("normalize", GROUP, "a / length(a), or zero for a zero vector.",
         Overload(("a",), _one_vector(), _normalize))


# ---- component-wise --------------------------------------------------------------------------


def _same_aggregates(types, weak):
    a, b = types
    require(is_aggregate(a), f"expected a vector or matrix, got {a!r}")
    require(a == b, f"both arguments must have the same type, got {a!r} and {b!r}")
    return (a, a), a


def _cw(op: OpCode):
    def expand(em, a: Value, b: Value) -> Value:
        return map_comps(em, a.type, lambda x, y: binop(em, op, x, y), comps(em, a), comps(em, b))

    return expand


register("cw_mul", GROUP, "Component-wise product of two vectors or matrices.",
         Overload(("a", "b"), _same_aggregates, _cw(OpCode.MUL)))
register("cw_div", GROUP, "Component-wise quotient of two vectors or matrices.",
         Overload(("a", "b"), _same_aggregates, _cw(OpCode.DIV)))


def _cw_builtin(name: str):
    def expand(em, *args: Value) -> Value:
        lists = [comps(em, a) for a in args]
        return map_comps(em, args[0].type, lambda *xs: em.call(name, xs), *lists)

    return expand


def _abs_rule(types, weak):
    (a,) = types
    require(is_aggregate(a), f"expected a vector or matrix, got {a!r}")
    return (a,), a


def _vector_rule(types, weak):
    (a,) = types
    require(isinstance(a, T.VectorType) and a.dtype.kind != "bool",
            f"expected a numeric vector, got {a!r}")
    return (a,), a


extend("abs", GROUP, "", Overload(("x",), _abs_rule, _cw_builtin("abs")))
extend("sign", GROUP, "", Overload(("x",), _vector_rule, _cw_builtin("sign")))
extend("min", GROUP, "", Overload(("a", "b"), _same_aggregates, _cw_builtin("min")))
extend("max", GROUP, "", Overload(("a", "b"), _same_aggregates, _cw_builtin("max")))


def _reduce_rule(types, weak):
    (a,) = types
    require(isinstance(a, T.VectorType), f"expected a vector, got {a!r}")
    return (a,), a.dtype


def _reduce(name: str):
    def expand(em, a: Value) -> Value:
        values = comps(em, a)
        acc = values[0]
        for v in values[1:]:
            acc = em.call(name, (acc, v))
        return acc

    return expand


# min(v) / max(v): the smallest / largest component, as in Warp.
extend("min", GROUP, "", Overload(("a",), _reduce_rule, _reduce("min")))
extend("max", GROUP, "", Overload(("a",), _reduce_rule, _reduce("max")))


def _lerp_rule(types, weak):
    a, b, t = types
    require(is_aggregate(a) and a == b, f"expected two values of one type, got {a!r} and {b!r}")
    require(isinstance(t, T.ScalarType) and scalar_fits(t, weak[2], a.dtype),
            f"the weight of lerp({a!r}, ...) must be a {a.dtype!r}, got {t!r}")
    return (a, a, a.dtype), a


def _lerp(em, a: Value, b: Value, t: Value) -> Value:
    """a * (1 - t) + b * t, component by component (the scalar formula, as in Warp)."""
    s = em.op(OpCode.SUB, (em.const(1.0, t.type), t), t.type)
    return map_comps(em, a.type,
                     lambda x, y: binop(em, OpCode.ADD, binop(em, OpCode.MUL, x, s),
                                        binop(em, OpCode.MUL, y, t)),
                     comps(em, a), comps(em, b))


# lerp(a, b, t) of vectors, matrices, quaternions and transforms with a scalar weight.
extend("lerp", GROUP, "", Overload(("a", "b", "t"), _lerp_rule, _lerp))
