"""Which IR types carry gradients, and the arithmetic on adjoints of those types."""

from __future__ import annotations

from kernelc import types as T
from kernelc.frontend.builder import IRBuilder
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


def differentiable(t: T.Type) -> bool:
    """Whether values of type `t` have an adjoint (floats and aggregates of floats)."""
    if isinstance(t, T.ScalarType):
        return t.is_float
    if isinstance(t, (T.VectorType, T.MatrixType)):
        return t.dtype.is_float
    if isinstance(t, T.StructType):
        return all(_zeroable(f) for _, f in t.fields) and \
            any(differentiable(f) for _, f in t.fields)
    return False


def has_arrays(t: T.Type) -> bool:
    """Whether `t` is an array or a struct (or a func's tuple of results) holding one:
    those get a shadow of gradients."""
    if isinstance(t, T.ArrayType):
        return True
    if isinstance(t, T.StructType):
        return any(has_arrays(f) for _, f in t.fields)
    if isinstance(t, T.TupleType):
        return any(has_arrays(e) for e in t.elements)
    return False


def _zeroable(t: T.Type) -> bool:
    # An array field of an adjoint struct is a null array: its gradients live in the
    # array's own grad (the shadow), so a struct holding arrays still has an adjoint.
    if isinstance(t, (T.ScalarType, T.VectorType, T.MatrixType, T.ArrayType)):
        return True
    if isinstance(t, T.StructType):
        return all(_zeroable(f) for _, f in t.fields)
    return False


def _components(t: T.Type) -> list[T.Type]:
    if isinstance(t, (T.VectorType, T.MatrixType)):
        return [t.dtype] * t.count
    if isinstance(t, T.StructType):
        return [f for _, f in t.fields]
    raise TypeError(t)


def zero(b: IRBuilder, t: T.Type) -> ir.Value:
    if isinstance(t, T.ScalarType):
        return b.const(0, t)
    if isinstance(t, T.ArrayType):
        return b.op(OpCode.CONST, (), t, None)
    return b.op(OpCode.BUILD, [zero(b, c) for c in _components(t)], t)


def add(b: IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """`x + y` for adjoints (component-wise; fields without gradients keep `x`'s)."""
    t = x.type
    if isinstance(t, T.ScalarType):
        return b.op(OpCode.ADD, (x, y), t)
    parts = []
    for k, c in enumerate(_components(t)):
        xk = b.op(OpCode.EXTRACT, (x,), c, k)
        if differentiable(c):
            parts.append(add(b, xk, b.op(OpCode.EXTRACT, (y,), c, k)))
        else:
            parts.append(xk)
    return b.op(OpCode.BUILD, parts, t)


def neg(b: IRBuilder, x: ir.Value) -> ir.Value:
    t = x.type
    if isinstance(t, T.ScalarType):
        return b.op(OpCode.SUB, (b.const(0, t), x), t)
    parts = []
    for k, c in enumerate(_components(t)):
        xk = b.op(OpCode.EXTRACT, (x,), c, k)
        parts.append(neg(b, xk) if differentiable(c) else xk)
    return b.op(OpCode.BUILD, parts, t)


def nonzero(b: IRBuilder, x: ir.Value) -> ir.Value:
    """Whether any component of the gradient `x` is not zero (NaN counts as not zero)."""
    t = x.type
    if isinstance(t, T.ScalarType):
        return b.op(OpCode.NE, (x, b.const(0, t)), T.bool_)
    out = None
    for k, c in enumerate(_components(t)):
        if not differentiable(c):
            continue
        part = nonzero(b, b.op(OpCode.EXTRACT, (x,), c, k))
        out = part if out is None else b.op(OpCode.SELECT, (out, out, part), T.bool_)
    return out if out is not None else b.const(False, T.bool_)
