"""Shared pieces of the vector, matrix, quaternion and transform builtins.

Every such builtin is an expansion into scalar IR ops: components are read with EXTRACT,
combined with ordinary scalar ops, and put back together with BUILD, so a backend only has
to lower those two (plus INSERT and the dynamic-index forms) to support all of them.

`extend` adds overloads to a builtin that may already exist with the same argument count
(`add` for scalars and for vectors): the overloads are tried in order and the first type
rule that accepts the arguments wins.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kernelc import types as T
from kernelc.builtins.registry import BUILTINS, Builtin, Overload, Signature, register
from kernelc.ir.nodes import OpCode, Value

Aggregate = T.VectorType | T.MatrixType


def is_aggregate(t: T.Type) -> bool:
    return isinstance(t, (T.VectorType, T.MatrixType))


def is_vec(t: T.Type, kind: str = "vec", length: int | None = None) -> bool:
    return isinstance(t, T.VectorType) and t.kind == kind and (length is None or
                                                               t.length == length)


def comps(em, v: Value) -> list[Value]:
    """The scalar components of a vector or matrix value (row-major for matrices)."""
    return [em.op(OpCode.EXTRACT, (v,), v.type.dtype, i) for i in range(v.type.count)]


def build(em, t: T.Type, values: Sequence[Value]) -> Value:
    return em.op(OpCode.BUILD, tuple(values), t)


def binop(em, op: OpCode, a: Value, b: Value) -> Value:
    return em.op(op, (a, b), a.type)


def total(em, values: Sequence[Value]) -> Value:
    acc = values[0]
    for v in values[1:]:
        acc = binop(em, OpCode.ADD, acc, v)
    return acc


def dot_values(em, a: Sequence[Value], b: Sequence[Value]) -> Value:
    return total(em, [binop(em, OpCode.MUL, x, y) for x, y in zip(a, b)])


def warp_dot(em, a: Sequence[Value], b: Sequence[Value]) -> Value:
    """The dot product of two vectors as Warp sums it: left to right, and for lengths other
    than 2 and 3 starting from zero (so a sum of negative zeros is +0.0)."""
    if len(a) in (2, 3):
        return dot_values(em, a, b)
    return total(em, [em.const(0, a[0].type), *(binop(em, OpCode.MUL, x, y)
                                                for x, y in zip(a, b))])


def muladd(em, a: Value, b: Value, acc: Value) -> Value:
    """acc + a * b as Warp accumulates matrix products: one fused multiply-add for float32
    and float64 (Warp calls C's fma), a rounded product and sum for other types."""
    if a.type.is_float and a.type.bits >= 32:
        return em.call("_fma", (a, b, acc))
    return binop(em, OpCode.ADD, acc, binop(em, OpCode.MUL, a, b))


def fma_dot(em, a: Sequence[Value], b: Sequence[Value]) -> Value:
    """sum a[k] * b[k] as Warp's matrix products and ddot compute it: muladd from zero."""
    acc = em.const(0, a[0].type)
    for x, y in zip(a, b):
        acc = muladd(em, x, y, acc)
    return acc


def map_comps(em, t: T.Type, fn: Callable[..., Value], *args: Sequence[Value]) -> Value:
    """BUILD of `fn` applied to the components of the argument lists, position by position."""
    return build(em, t, [fn(*xs) for xs in zip(*args)])


def scalar_fits(t: T.Type, weak: bool, want: T.ScalarType) -> bool:
    """Whether a scalar argument of type `t` can be used as `want` (literals convert)."""
    if t == want:
        return True
    return weak and isinstance(t, T.ScalarType) and not (t.is_float and not want.is_float)


def require(ok: bool, message: str) -> None:
    if not ok:
        raise TypeError(message)


def float_agg(t: T.Type, what: str) -> None:
    require(is_aggregate(t) and t.dtype.is_float, f"expected a float {what}, got {t!r}")


def describe(types: Sequence[T.Type]) -> str:
    return ", ".join(repr(t) for t in types)


# ---- overload sets --------------------------------------------------------------------------


def _choice(alternatives: list[Overload]) -> Overload:
    """One overload trying several alternatives of the same argument count in order."""

    def pick(types: tuple[T.Type, ...], weak: tuple[bool, ...]) -> tuple[Overload, Signature]:
        errors = []
        for ov in alternatives:
            try:
                return ov, ov.rule(types, weak)
            except TypeError as err:
                errors.append(str(err))
        # Report the most specific failure: the aggregate rule when aggregates are involved.
        nonscalar = any(not isinstance(t, T.ScalarType) for t in types)
        raise TypeError(errors[-1] if nonscalar else errors[0])

    def rule(types, weak):
        return pick(types, weak)[1]

    def expand(em, *args: Value):
        ov, (_, result) = pick(tuple(a.type for a in args), (False,) * len(args))
        if ov.expand is None:
            return em.op(OpCode.CALL, args, result, ov.key)
        return ov.expand(em, *args)

    return Overload(alternatives[0].params, rule, expand)


def extend(name: str, group: str, doc: str, *overloads: Overload) -> Builtin:
    """Registers `name`, or adds `overloads` to the builtin already registered under it."""
    old = BUILTINS.get(name)
    if old is None:
        return register(name, group, doc, *overloads)
    by_count: dict[int, list[Overload]] = {}
    for ov in (*old.overloads, *overloads):
        by_count.setdefault(len(ov.params), []).append(ov)
    merged = []
    for group_ovs in by_count.values():
        merged.append(group_ovs[0] if len(group_ovs) == 1 else _choice(group_ovs))
    # A merged primitive would hide its key from `primitive_keys()`; none is merged today.
    if any(ov.key for ov in old.overloads):
        raise ValueError(f"builtin {name} has a primitive overload; it cannot be extended")
    entry = Builtin(name, old.group, old.doc, tuple(merged))
    BUILTINS[name] = entry
    return entry
