"""Tiles whose elements are `@kc.struct` values.

A struct tile is stored like any other: one local array, here of struct elements. What
differs is the arithmetic tile operations do on elements. As Warp does, adding or
subtracting two struct elements (`t + u`, `t -= u`, `tile_sum`, `tile_scatter_add`,
`tile_atomic_add`) works field by field, and only on the fields that can accumulate: those
whose scalar type has an atomic add ([u]int32, [u]int64 and the float types, in scalars,
vectors and matrices), nested structs recursively. The other fields (bool, 8- and 16-bit
ints, arrays) ride along: they keep the left operand's value (an atomic add leaves the
array's value in place).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.builder import IRBuilder, Val
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

ACCUMULATING_SCALARS = (T.int32, T.uint32, T.int64, T.uint64, T.float16, T.bfloat16,
                        T.float32, T.float64)


def is_struct(dtype: T.Type) -> bool:
    return isinstance(dtype, T.StructType)


def reject(what: str, dtype: T.Type) -> None:
    """Raises for a tile operation that has no meaning on struct elements."""
    if is_struct(dtype):
        raise KernelError(f"{what} does not support Warp struct (@struct) tile elements, "
                          f"got {dtype!r}")


def accumulates(t: T.Type) -> bool:
    """Whether a struct field of type `t` takes part in field-wise addition."""
    if isinstance(t, (T.VectorType, T.MatrixType)):
        return t.dtype in ACCUMULATING_SCALARS
    return isinstance(t, T.ScalarType) and t in ACCUMULATING_SCALARS


def zero(b: IRBuilder, t: T.Type) -> ir.Value:
    """The zero value of `t`, fields of structs included (an array field is a null array)."""
    if isinstance(t, T.ScalarType):
        return b.const(0, t)
    if isinstance(t, (T.VectorType, T.MatrixType)):
        return b.op(OpCode.BUILD, [b.const(0, t.dtype)] * t.count, t)
    if isinstance(t, T.StructType):
        return b.op(OpCode.BUILD, [zero(b, f) for _, f in t.fields], t)
    if isinstance(t, (T.ArrayType, T.IndexedArrayType)):
        return b.op(OpCode.CONST, (), t, None)
    raise KernelError(f"a tile cannot hold {t!r} elements")


def binary(lowerer, op: OpCode, x: Val, y: Val, node: ast.AST) -> Val:
    """`x + y` or `x - y` of two struct elements of one type, field by field."""
    if op in (OpCode.BITAND, OpCode.BITOR, OpCode.BITXOR):
        what = ("Tile bitwise inplace operators" if getattr(lowerer, "tile_in_place", False)
                else "Tile bitwise operators")
        reject(what, x.type if is_struct(x.type) else y.type)
    if op not in (OpCode.ADD, OpCode.SUB):
        raise KernelError(f"tiles of struct elements support only + and - between "
                          f"elements, not this operator ({x.type!r} and {y.type!r})")
    if x.type != y.type:
        raise KernelError(f"cannot combine a {x.type!r} and a {y.type!r} tile element")
    return Val(_fields(lowerer, op, x.value, y.value, node))


def _fields(lowerer, op: OpCode, x: ir.Value, y: ir.Value, node: ast.AST) -> ir.Value:
    b = lowerer.b
    parts = []
    for k, (_, f) in enumerate(x.type.fields):
        xk = b.op(OpCode.EXTRACT, (x,), f, k)
        if isinstance(f, T.StructType):
            xk = _fields(lowerer, op, xk, b.op(OpCode.EXTRACT, (y,), f, k), node)
        elif accumulates(f):
            yk = b.op(OpCode.EXTRACT, (y,), f, k)
            xk = lowerer.as_val(lowerer.binary(op, Val(xk), Val(yk), node), node).value
        parts.append(xk)
    return b.op(OpCode.BUILD, parts, x.type)


def leaves(t: T.StructType, path: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...],
                                                                          T.Type]]:
    """(field path, type) of every accumulating field of `t`, nested structs included."""
    for k, (_, f) in enumerate(t.fields):
        if isinstance(f, T.StructType):
            yield from leaves(f, (*path, k))
        elif accumulates(f):
            yield (*path, k), f


def _extract(b: IRBuilder, value: ir.Value, path: tuple[int, ...]) -> ir.Value:
    for k in path:
        value = b.op(OpCode.EXTRACT, (value,), value.type.fields[k][1], k)
    return value


def _insert(b: IRBuilder, agg: ir.Value, path: tuple[int, ...], part: ir.Value) -> ir.Value:
    if not path:
        return part
    k = path[0]
    inner = b.op(OpCode.EXTRACT, (agg,), agg.type.fields[k][1], k)
    return b.op(OpCode.INSERT, (agg, _insert(b, inner, path[1:], part)), agg.type, k)


def atomic_add(b: IRBuilder, where: tuple[ir.Value, ...], value: ir.Value) -> ir.Value:
    """Atomically adds struct `value` into the array element `where` (array, indices), one
    atomic per accumulating field; returns the element's previous value (the fields that
    do not accumulate are read and left as they are)."""
    old = b.op(OpCode.ARRAY_LOAD, where, value.type)
    for path, leaf in leaves(value.type):
        previous = b.op(OpCode.ATOMIC, (*where, _extract(b, value, path)), leaf, ("add", path))
        old = _insert(b, old, path, previous)
    return old
