"""The reverse rule of each IR op: how the gradient `g` of its result reaches its operands.

Builtins reach the IR either as ops (vector algebra, min/max, clamp... are expanded by the
front end) or as one of the primitive CALL keys below, so these rules differentiate every
builtin. The derivatives follow Warp's adjoints (e.g. `sqrt` uses 0.5 / result, `atan2`
and `acos` skip their singular points). A zero gradient never turns into NaN: the rules
whose partial derivative may be infinite (products, quotients, calls) contribute nothing
when `g` is zero, so `normalize` or `length` of a zero vector have zero gradients, as in
Warp.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kernelc import types as T
from kernelc.autodiff.values import add, differentiable, neg, zero
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode
from kernelc.ir.passes.rewrite import operands

# -- what the reverse sweep reads of the forward ------------------------------------------------

_NEEDS_ALL = frozenset({OpCode.MUL, OpCode.DIV, OpCode.POW, OpCode.CALL, OpCode.ATOMIC,
                        OpCode.CALL_FUNC, OpCode.NATIVE})


def needed(s: ir.Stmt) -> tuple[ir.Value, ...]:
    """The primal values whose reverse code (or replay) of `s` depends on."""
    if isinstance(s, ir.Op):
        if s.opcode in _NEEDS_ALL:
            return s.args
        if s.opcode is OpCode.SELECT:
            return s.args if s.attr == ir.TIES_TO_OTHER else s.args[:1]
        if s.opcode in (OpCode.ARRAY_LOAD, OpCode.ARRAY_VIEW):
            return s.args
        if s.opcode in (OpCode.EXTRACT_DYN, OpCode.INSERT_DYN):
            return s.args[1:2]
        if s.opcode is OpCode.LOCAL_LOAD:
            return s.args
        return ()
    if isinstance(s, (ir.If, ir.For, ir.While)):
        return operands(s)  # conditions and loop bounds decide what the reverse runs
    if isinstance(s, ir.ArrayStore):
        return (s.array, *s.indices)
    if isinstance(s, ir.LocalStore):
        return (s.index,)
    return ()


# -- helpers --------------------------------------------------------------------------------


def _op(ad, opcode: OpCode, args, t: T.Type, attr=None) -> ir.Value:
    return ad.b.op(opcode, args, t, attr)


def _call(ad, key: str, x: ir.Value) -> ir.Value:
    return ad.b.op(OpCode.CALL, (x,), x.type, key)


def _mul(ad, x: ir.Value, y: ir.Value) -> ir.Value:
    return ad.b.op(OpCode.MUL, (x, y), x.type)


def _div(ad, x: ir.Value, y: ir.Value) -> ir.Value:
    return ad.b.op(OpCode.DIV, (x, y), x.type)


def _c(ad, value: float, t: T.Type) -> ir.Value:
    return ad.b.const(value, t)


def _unless_zero(ad, g: ir.Value, contribution: ir.Value) -> ir.Value:
    """`contribution`, or exactly 0 where the incoming gradient `g` is 0."""
    t = g.type
    is_zero = _op(ad, OpCode.EQ, (g, _c(ad, 0, t)), T.bool_)
    return _op(ad, OpCode.SELECT, (is_zero, _c(ad, 0, t), contribution), t)


def _scaled(ad, g: ir.Value, factor: ir.Value) -> ir.Value:
    """g * factor, 0 when g is 0 (even for an infinite or NaN factor)."""
    return _unless_zero(ad, g, _mul(ad, factor, g))


def _when(ad, cond: ir.Value, g: ir.Value) -> ir.Value:
    # zero() builds vectors and matrices from scalar zeros (a CONST is scalar only).
    return _op(ad, OpCode.SELECT, (cond, g, zero(ad.b, g.type)), g.type)


# -- scalar calls: d(result)/d(x) as a function of (ad, x, result) ------------------------------

_UNARY: dict[str, Callable] = {
    "sqrt": lambda ad, x, r: _mul(ad, _c(ad, 0.5, x.type), _div(ad, _c(ad, 1, x.type), r)),
    "cbrt": lambda ad, x, r: _mul(ad, _c(ad, 1 / 3, x.type),
                                  _div(ad, _c(ad, 1, x.type), _mul(ad, r, r))),
    "exp": lambda ad, x, r: r,
    "log": lambda ad, x, r: _div(ad, _c(ad, 1, x.type), x),
    "log2": lambda ad, x, r: _mul(ad, _div(ad, _c(ad, 1, x.type), x),
                                  _c(ad, 1 / math.log(2), x.type)),
    "log10": lambda ad, x, r: _mul(ad, _div(ad, _c(ad, 1, x.type), x),
                                   _c(ad, 1 / math.log(10), x.type)),
    "sin": lambda ad, x, r: _call(ad, "cos", x),
    "cos": lambda ad, x, r: neg(ad.b, _call(ad, "sin", x)),
    "sinh": lambda ad, x, r: _call(ad, "cosh", x),
    "cosh": lambda ad, x, r: _call(ad, "sinh", x),
    "tanh": lambda ad, x, r: _op(ad, OpCode.SUB, (_c(ad, 1, x.type), _mul(ad, r, r)), x.type),
    "atan": lambda ad, x, r: _div(ad, _c(ad, 1, x.type),
                                  _op(ad, OpCode.ADD, (_mul(ad, x, x), _c(ad, 1, x.type)),
                                      x.type)),
    "erf": lambda ad, x, r: _erf_slope(ad, x, 1),
    "erfc": lambda ad, x, r: _erf_slope(ad, x, -1),
    "frac": lambda ad, x, r: _c(ad, 1, x.type),
}
# Piecewise constant: zero gradient almost everywhere (as in Warp).
_FLAT = frozenset({"floor", "ceil", "trunc", "rint", "round", "bitcast", "popcount"})


def _erf_slope(ad, x: ir.Value, sign: int) -> ir.Value:
    t = x.type
    e = _call(ad, "exp", neg(ad.b, _mul(ad, x, x)))
    return _mul(ad, _c(ad, sign * 2 / math.sqrt(math.pi), t), e)


def _call_rule(ad, s: ir.Op, g: ir.Value) -> None:
    key = s.attr
    args = [ad.val(a) for a in s.args]
    prim = s.args
    if key in _FLAT or not differentiable(s.result.type):
        return
    if key in _UNARY:
        x = args[0]
        slope = _UNARY[key](ad, x, ad.val(s.result))
        ad.acc(prim[0], _scaled(ad, g, slope))
    elif key == "fabs":
        x = args[0]
        negative = _op(ad, OpCode.LT, (x, _c(ad, 0, x.type)), T.bool_)
        ad.acc(prim[0], _op(ad, OpCode.SELECT, (negative, neg(ad.b, g), g), g.type))
    elif key == "tan":
        x = args[0]
        c = _call(ad, "cos", x)
        ok = _op(ad, OpCode.NE, (c, _c(ad, 0, x.type)), T.bool_)
        slope = _div(ad, _c(ad, 1, x.type), _mul(ad, c, c))
        ad.acc(prim[0], _when(ad, ok, _scaled(ad, g, slope)))
    elif key == "atan2":
        y, x = args
        t = x.type
        d = _op(ad, OpCode.ADD, (_mul(ad, x, x), _mul(ad, y, y)), t)
        ok = _op(ad, OpCode.GT, (d, _c(ad, 0, t)), T.bool_)
        ad.acc(prim[1], _when(ad, ok, neg(ad.b, _scaled(ad, g, _div(ad, y, d)))))
        ad.acc(prim[0], _when(ad, ok, _scaled(ad, g, _div(ad, x, d))))
    elif key == "copysign":
        x, y = args
        t = x.type
        one = _c(ad, 1, t)
        same = _op(ad, OpCode.EQ, (_op(ad, OpCode.CALL, (one, x), t, "copysign"),
                                   _op(ad, OpCode.CALL, (one, y), t, "copysign")), T.bool_)
        ad.acc(prim[0], _op(ad, OpCode.SELECT, (same, g, neg(ad.b, g)), t))
    elif key == "fma":
        a, b, _ = args
        ad.acc(prim[0], _scaled(ad, g, b))
        ad.acc(prim[1], _scaled(ad, g, a))
        ad.acc(prim[2], g)
    else:
        raise NotImplementedError(f"no derivative for the builtin primitive '{key}'")


# -- ops ------------------------------------------------------------------------------------


def apply(ad, s: ir.Op, g: ir.Value) -> None:
    """Adds the gradient `g` of `s.result` into the gradients of `s`'s operands."""
    op = s.opcode
    a = s.args
    b = ad.b
    if op is OpCode.CALL:
        if s.attr in ("asin", "acos"):
            x = ad.val(a[0])
            t = x.type
            d = _call(ad, "sqrt", _op(ad, OpCode.SUB, (_c(ad, 1, t), _mul(ad, x, x)), t))
            slope = _div(ad, _c(ad, 1 if s.attr == "asin" else -1, t), d)
            ok = _op(ad, OpCode.GT, (d, _c(ad, 0, t)), T.bool_)
            ad.acc(a[0], _when(ad, ok, _scaled(ad, g, slope)))
        else:
            _call_rule(ad, s, g)
    elif op is OpCode.CAST:
        if differentiable(a[0].type):
            ad.acc(a[0], b.cast(g, a[0].type))
    elif op is OpCode.NEG:
        ad.acc(a[0], neg(b, g))
    elif op is OpCode.ADD:
        ad.acc(a[0], g)
        ad.acc(a[1], g)
    elif op is OpCode.SUB:
        ad.acc(a[0], g)
        ad.acc(a[1], neg(b, g))
    elif op is OpCode.MUL:
        if differentiable(g.type):
            ad.acc(a[0], _scaled(ad, g, ad.val(a[1])))
            ad.acc(a[1], _scaled(ad, g, ad.val(a[0])))
    elif op is OpCode.DIV:
        if differentiable(g.type):
            y = ad.val(a[1])
            ad.acc(a[0], _unless_zero(ad, g, _div(ad, g, y)))
            ad.acc(a[1], neg(b, _unless_zero(ad, g, _div(ad, _mul(ad, g, ad.val(s.result)), y))))
    elif op is OpCode.MOD:
        ad.acc(a[0], g)  # Warp's adjoint of fmod: the divisor gets none
    elif op is OpCode.POW:
        if differentiable(g.type):
            x, y = ad.val(a[0]), ad.val(a[1])
            t = x.type
            slope = _mul(ad, y, b.op(OpCode.POW, (x, _op(ad, OpCode.SUB, (y, _c(ad, 1, t)), t)),
                                     t))
            ad.acc(a[0], _scaled(ad, g, slope))
            ad.acc(a[1], _scaled(ad, g, _mul(ad, _call(ad, "log", x), ad.val(s.result))))
    elif op is OpCode.SELECT:
        cond = ad.val(a[0])
        if s.attr == ir.TIES_TO_OTHER:  # min / max: a tie's gradient goes to the other
            differs = _op(ad, OpCode.NE, (ad.val(a[1]), ad.val(a[2])), T.bool_)
            cond = _op(ad, OpCode.SELECT, (cond, differs, cond), T.bool_)
        ad.acc(a[1], _when(ad, cond, g))
        ad.acc(a[2], _op(ad, OpCode.SELECT, (cond, zero(b, g.type), g), g.type))
    elif op is OpCode.LOAD_SLOT:
        if differentiable(s.attr.type):
            slot = ad.adj_slot(s.attr)
            b.store(slot, add(b, b.load(slot), g))
    elif op is OpCode.LOCAL_LOAD:
        slot = ad.adj_slot(s.attr)
        index = ad.val(a[0])
        cur = b.op(OpCode.LOCAL_LOAD, (index,), g.type, slot)
        b.append(ir.LocalStore(b.loc, slot, index, add(b, cur, g)))  # structs: field-wise
    elif op is OpCode.ARRAY_LOAD:
        array_load(ad, s, g)
    elif op is OpCode.EXTRACT:
        _extract(ad, s, g)
    elif op is OpCode.BUILD:
        for k, part in enumerate(a):
            if differentiable(part.type):
                ad.acc(part, b.op(OpCode.EXTRACT, (g,), part.type, k))
    elif op is OpCode.INSERT:
        agg, v = a
        if differentiable(agg.type):
            ad.acc(agg, b.op(OpCode.INSERT, (g, zero(b, v.type)), agg.type, s.attr))
        if differentiable(v.type):
            ad.acc(v, b.op(OpCode.EXTRACT, (g,), v.type, s.attr))
    elif op is OpCode.EXTRACT_DYN:
        agg = a[0]
        if differentiable(agg.type):
            slot = ad.adj_value_slot(agg)
            index = ad.val(a[1])
            cur = b.load(slot)
            old = b.op(OpCode.EXTRACT_DYN, (cur, index), g.type)
            b.store(slot, b.op(OpCode.INSERT_DYN, (cur, index, add(b, old, g)), agg.type))
    elif op is OpCode.INSERT_DYN:
        agg, index, v = a
        i = ad.val(index)
        if differentiable(agg.type):
            ad.acc(agg, b.op(OpCode.INSERT_DYN, (g, i, zero(b, v.type)), agg.type))
        if differentiable(v.type):
            count = agg.type.count if hasattr(agg.type, "count") else len(agg.type.fields)
            lo = b.op(OpCode.GE, (i, b.const(0, i.type)), T.bool_)
            hi = b.op(OpCode.LT, (i, b.const(count, i.type)), T.bool_)
            inside = b.op(OpCode.SELECT, (lo, hi, lo), T.bool_)
            ad.acc(v, _when(ad, inside, b.op(OpCode.EXTRACT_DYN, (g, i), v.type))
                   if isinstance(v.type, T.ScalarType) else
                   b.op(OpCode.EXTRACT_DYN, (g, i), v.type))
    # Comparisons, integer and bit operations, constants, thread indices, shapes and
    # addresses carry no gradient.


def _extract(ad, s: ir.Op, g: ir.Value) -> None:
    b = ad.b
    agg = s.args[0]
    if isinstance(agg.type, T.TupleType):
        ad.acc_element(agg, s.attr, g)
        return
    if not differentiable(agg.type) or not differentiable(g.type):
        return
    slot = ad.adj_value_slot(agg)
    cur = b.load(slot)
    old = b.op(OpCode.EXTRACT, (cur,), g.type, s.attr)
    b.store(slot, b.op(OpCode.INSERT, (cur, add(b, old, g)), agg.type, s.attr))


def _if_gradient_array(ad, shadow: ir.Value, emit: Callable[[], None]) -> None:
    """Runs `emit` under `if shadow is not empty` (a missing gradient array is empty)."""
    b = ad.b
    if shadow.id in ad.nonempty:  # known at launch
        emit()
        return
    if shadow.id in ad.empty:
        return
    size = b.op(OpCode.ARRAY_SHAPE, (shadow,), T.int32, 0)
    nonempty = b.op(OpCode.NE, (size, b.const(0, T.int32)), T.bool_)
    with b.region() as body:
        emit()
    b.append(ir.If(b.loc, nonempty, tuple(body)))


def array_load(ad, s: ir.Op, g: ir.Value) -> None:
    """The gradient `g` of array read `s`: into the gradient array, or into a loop's sum."""
    dtype = s.args[0].type.dtype
    if not differentiable(dtype) or ad.sh(s.args[0]) is None:
        return
    if not isinstance(dtype, T.StructType) and ad.defer_read(s, g):
        return  # summed while the loop runs backwards, added once after it
    array_load_gradient(ad, s, g)


def array_load_gradient(ad, s: ir.Op, g: ir.Value) -> None:
    """Adds `g` into the gradient array of array read `s`, at the read's indices."""
    dtype = s.args[0].type.dtype
    shadow = ad.sh(s.args[0])
    indices = [ad.val(i) for i in s.args[1:]]
    b = ad.b

    def emit():
        if not isinstance(dtype, T.StructType):
            b.op(OpCode.ATOMIC, (shadow, *indices, g), dtype, "add")
            return
        for path, leaf in _float_fields(dtype, ()):  # an atomic add per field of a struct
            part = g
            t = dtype
            for k in path:
                t = t.fields[k][1]
                part = b.op(OpCode.EXTRACT, (part,), t, k)
            b.op(OpCode.ATOMIC, (shadow, *indices, part), leaf, ("add", path))

    _if_gradient_array(ad, shadow, emit)


def _float_fields(t: T.StructType, path: tuple[int, ...]):
    """(path, type) of every field of `t` (nested structs included) that has a gradient."""
    for k, (_, f) in enumerate(t.fields):
        if isinstance(f, T.StructType):
            yield from _float_fields(f, (*path, k))
        elif differentiable(f):
            yield (*path, k), f


def array_store(ad, s: ir.ArrayStore) -> None:
    """`a[i] = v`: v's gradient is a.grad[i]; a store into a kernel's own gradient
    consumes it (zeroes the element), as Warp's backward kernels do."""
    if not differentiable(s.value.type):
        return
    shadow = ad.sh(s.array)
    if shadow is None:
        return
    b = ad.b
    indices = [ad.val(i) for i in s.indices]
    bit = ad.store_bit(s.array)

    def emit():
        g = b.op(OpCode.ARRAY_LOAD, (shadow, *indices), s.value.type)
        ad.acc(s.value, g)
        if bit is not None and ad.known_mask is not None:
            if ad.known_mask >> bit & 1:
                b.append(ir.ArrayStore(b.loc, shadow, tuple(indices), zero(b, s.value.type)))
        elif bit is not None:
            shifted = b.op(OpCode.SHR, (ad.mask, b.const(bit, T.uint64)), T.uint64)
            own = b.op(OpCode.BITAND, (shifted, b.const(1, T.uint64)), T.uint64)
            is_own = b.op(OpCode.NE, (own, b.const(0, T.uint64)), T.bool_)
            b.append(ir.If(b.loc, is_own, (ir.ArrayStore(b.loc, shadow, tuple(indices),
                                                         zero(b, s.value.type)),)))

    _if_gradient_array(ad, shadow, emit)


def atomic(ad, s: ir.Op) -> None:
    """atomic_add/sub pass a.grad[i] on to the value; atomic_min/max only to a value that
    won (equals the final element); the other kinds carry no gradient."""
    kind = s.attr
    arr = s.args[0]
    dtype = arr.type.dtype
    if not isinstance(kind, str):
        return field_atomic(ad, s)
    if kind not in ("add", "sub", "min", "max") or not differentiable(dtype) \
            or isinstance(dtype, T.StructType):
        return
    shadow = ad.sh(arr)
    if shadow is None:
        return
    b = ad.b
    nd = arr.type.ndim
    indices = [ad.val(i) for i in s.args[1:1 + nd]]
    value = s.args[1 + nd]

    def emit():
        g = b.op(OpCode.ARRAY_LOAD, (shadow, *indices), dtype)
        if kind == "add":
            ad.acc(value, g)
        elif kind == "sub":
            ad.acc(value, neg(b, g))
        else:
            final = b.op(OpCode.ARRAY_LOAD, (ad.val(arr), *indices), dtype)
            v = ad.val(value)
            if isinstance(dtype, T.ScalarType):
                ad.acc(value, _when(ad, _stored(b, v, final), g))
            else:  # vectors and matrices: component by component, as the update was
                parts = []
                for k in range(dtype.count):
                    vk, fk, gk = (b.op(OpCode.EXTRACT, (x,), dtype.dtype, k) for x in (v, final, g))
                    parts.append(_when(ad, _stored(b, vk, fk), gk))
                ad.acc(value, b.op(OpCode.BUILD, tuple(parts), dtype))

    _if_gradient_array(ad, shadow, emit)


def field_atomic(ad, s: ir.Op) -> None:
    """An atomic add into one field of an array-of-structs element (a struct tile's atomic
    add) passes that field of a.grad[i] on to the value."""
    (kind, path), arr = s.attr, s.args[0]
    if kind != "add" or not differentiable(s.result.type):
        return
    shadow = ad.sh(arr)
    if shadow is None:
        return
    b = ad.b
    nd = arr.type.ndim
    indices = [ad.val(i) for i in s.args[1:1 + nd]]

    def emit():
        g = b.op(OpCode.ARRAY_LOAD, (shadow, *indices), arr.type.dtype)
        for k in path:
            g = b.op(OpCode.EXTRACT, (g,), g.type.fields[k][1], k)
        ad.acc(s.args[1 + nd], g)

    _if_gradient_array(ad, shadow, emit)


def _stored(b, v: ir.Value, final: ir.Value) -> ir.Value:
    """Whether an atomic min/max stored `v`: it equals the final element, or both are NaN
    (a NaN that was stored won, though NaN == NaN is false)."""
    won = b.op(OpCode.EQ, (v, final), T.bool_)
    if v.type.is_float:
        both_nan = b.op(OpCode.BITAND, (b.op(OpCode.NE, (v, v), T.bool_),
                                        b.op(OpCode.NE, (final, final), T.bool_)), T.bool_)
        won = b.op(OpCode.BITOR, (won, both_nan), T.bool_)
    return won
