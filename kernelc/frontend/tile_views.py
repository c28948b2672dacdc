"""Tile views and copies: transpose, broadcast, view, reshape, squeeze, type conversion,
element extraction and assignment, in-place updates (special forms; see `tile_forms`)."""

from __future__ import annotations

import math

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend import tile_value as tv
from kernelc.frontend.builder import Val
from kernelc.frontend.lower_expr import PyObj, TupleVal
from kernelc.frontend.tile_forms import axis_operand, form_table
from kernelc.frontend.tile_value import Tile
from kernelc.ir.nodes import OpCode

form = form_table(globals())


# ---- shape and type -----------------------------------------------------------------------

@form("tile_transpose", "a", "The transpose of a 2-d tile (a view: no copy).")
def _tile_transpose(lowerer, args, node):
    t = lowerer.tile_operand(args["a"], "tile_transpose()")
    if t.ndim != 2:
        raise KernelError(f"tile_transpose() needs a 2-d tile, got shape {t.shape}")
    return t.view(t.shape[::-1], t.strides[::-1])


@form("tile_broadcast", "a, shape",
      "The tile broadcast to `shape` as numpy.broadcast_to does (a view: no copy).")
def _tile_broadcast(lowerer, args, node):
    t = lowerer.tile_operand(args["a"], "tile_broadcast()")
    shape = lowerer.static_shape(args["shape"])
    if len(shape) < t.ndim:
        raise KernelError(f"cannot broadcast shape {t.shape} to {shape}")
    strides = [0] * (len(shape) - t.ndim)
    for n, (m, stride) in zip(shape[len(shape) - t.ndim:], zip(t.shape, t.strides)):
        if m != n and m != 1:
            raise KernelError(f"cannot broadcast shape {t.shape} to {shape}")
        strides.append(stride if m == n else 0)
    return t.view(shape, tuple(strides))


@form("tile_view", "t, offset, shape=",
      "A view of part of a tile from the constant `offset` (leading indices), with `shape` "
      "(by default the rest of the tile).")
def _tile_view(lowerer, args, node):
    t = lowerer.tile_operand(args["t"], "tile_view()")
    offset = lowerer.static_ints(args["offset"], "tile_view() offset")
    if len(offset) > t.ndim:
        raise KernelError(f"tile_view(): {len(offset)} offsets for a {t.ndim}-d tile")
    if any(not 0 <= o < n for o, n in zip(offset, t.shape)):
        raise KernelError(f"tile_view(): offset {offset} is outside a tile of shape {t.shape}")
    start = sum(o * s for o, s in zip(offset, t.strides))
    rest_shape, rest_strides = t.shape[len(offset):], t.strides[len(offset):]
    if "shape" in args:
        shape = lowerer.static_shape(args["shape"])
        if len(shape) == t.ndim:  # a sub-block starting at `offset` in every dimension
            full = (*offset, *(0,) * (t.ndim - len(offset)))
            if any(o + n > m for o, n, m in zip(full, shape, t.shape)):
                raise KernelError(f"tile_view(): shape {shape} at {full} exceeds {t.shape}")
            return t.view(shape, t.strides, start)
        if len(shape) != len(rest_shape) or any(n > m for n, m in zip(shape, rest_shape)):
            raise KernelError(f"tile_view(): shape {shape} does not fit {rest_shape}")
        rest_shape = shape
    if not rest_shape:
        rest_shape, rest_strides = (1,), (1,)
    return t.view(tuple(rest_shape), tuple(rest_strides), start)


@form("tile_reshape", "t, shape", "The tile with a new shape of the same size (-1 once "
      "allowed); a view where the elements are in order, else a copy.")
def _tile_reshape(lowerer, args, node):
    t = lowerer.tile_operand(args["t"], "tile_reshape()")
    raw = lowerer.visit(args["shape"])
    items = raw.items if isinstance(raw, TupleVal) else (raw,)
    dims = [x.const if isinstance(x, Val) else None for x in items]
    if any(not isinstance(d, int) for d in dims) or dims.count(-1) > 1:
        raise KernelError("tile_reshape() needs a constant shape (at most one -1)")
    if -1 in dims:
        known = 1
        for d in dims:
            known *= d if d != -1 else 1
        dims[dims.index(-1)] = t.size // known if known else 0
    shape = tv.check_shape(dims)
    if math.prod(shape) != t.size:
        raise KernelError(f"tile_reshape(): cannot reshape {t.shape} into {shape}")
    src = t if tv.in_order(t) else tv.materialise(lowerer.b, t)
    return src.view(shape, tv.row_major(shape))


@form("tile_squeeze", "t, axis=", "The tile without its dimensions of length 1 (or just "
      "`axis`); a view.")
def _tile_squeeze(lowerer, args, node):
    t = lowerer.tile_operand(args["t"], "tile_squeeze()")
    axis = axis_operand(lowerer, args)
    if axis is not None:
        if not -t.ndim <= axis < t.ndim:
            raise KernelError(f"tile_squeeze(): axis {axis} out of range for a {t.ndim}-d tile")
        axis %= t.ndim
        if t.shape[axis] != 1:
            raise KernelError(f"tile_squeeze(): dimension {axis} has length {t.shape[axis]}")
        drop = {axis}
    else:
        drop = {k for k, n in enumerate(t.shape) if n == 1}
    keep = [k for k in range(t.ndim) if k not in drop] or [0]
    return t.view(tuple(t.shape[k] for k in keep), tuple(t.strides[k] for k in keep))


@form("tile_astype", "t, dtype", "A copy of the tile with its elements converted to `dtype`.")
def _tile_astype(lowerer, args, node):
    t = lowerer.tile_operand(args["t"], "tile_astype()")
    dtype = lowerer.eval_annotation(args["dtype"])
    b = lowerer.b

    def convert(x: Val) -> Val:
        if isinstance(dtype, T.ScalarType) and isinstance(x.type, T.ScalarType):
            return Val(b.cast(x.value, dtype))
        if tv.components(dtype) == tv.components(x.type) and tv.components(dtype) > 1:
            parts = [b.cast(b.op(OpCode.EXTRACT, (x.value,), tv.scalar_of(x.type), c),
                            tv.scalar_of(dtype)) for c in range(tv.components(dtype))]
            return Val(b.op(OpCode.BUILD, parts, dtype))
        raise KernelError(f"tile_astype(): cannot convert {x.type!r} to {dtype!r}")

    return lowerer.elementwise([t], convert, node)


@form("tile_extract", "a, *args", "Element (i, j, ...) of a tile, as a value; one more "
      "index picks a vector element's component or a matrix element's row, two a matrix "
      "entry.")
def _tile_extract(lowerer, args, node):
    t = lowerer.tile_operand(args["a"], "tile_extract()")
    nodes = args.get("args", [])
    extra = 2 if isinstance(t.dtype, T.MatrixType) else int(isinstance(t.dtype, T.VectorType))
    if not t.ndim <= len(nodes) <= t.ndim + extra:
        raise KernelError(f"tile_extract() needs {t.ndim} indices for a {t.ndim}-d tile"
                          + (f" (plus up to {extra} for a component)" if extra else ""))
    idx = [lowerer.int32_value(lowerer.visit(n), n) for n in nodes[:t.ndim]]
    value = Val(tv.load(lowerer.b, t, idx))
    if len(nodes) == t.ndim:
        return value
    # a component of a vector element, a row or entry of a matrix element
    return lowerer.value_subscript(value, tuple(lowerer.index_value(n) for n in nodes[t.ndim:]),
                                   node)


@form("tile_assign", "dst, src, offset=",
      "Copies tile `src` into tile `dst` starting at `offset` (one index per dimension).")
def _tile_assign(lowerer, args, node):
    dst = lowerer.tile_operand(args["dst"], "tile_assign()")
    src = lowerer.visit(args["src"])
    b = lowerer.b
    offsets = [tv.const(b, 0)] * dst.ndim
    if "offset" in args:
        v = lowerer.visit(args["offset"])
        items = list(v.items) if isinstance(v, TupleVal) else [v]
        if len(items) != dst.ndim:
            raise KernelError(f"tile_assign(): the offset needs {dst.ndim} values")
        offsets = [lowerer.int32_value(x, node) for x in items]
    if not isinstance(src, Tile):  # a single value at `offset`
        value = lowerer.as_val(src, node)
        value = lowerer.coerce(value, dst.dtype) if value.weak else value
        tv.store(b, dst, offsets, value.value)
        return PyObj(None)
    if src.dtype != dst.dtype or src.ndim != dst.ndim:
        raise KernelError(f"tile_assign(): a {src!r} into a {dst!r}")
    with tv.loop_nest(b, src.shape) as idx:
        where = [b.op(OpCode.ADD, (o, i), T.int32) for o, i in zip(offsets, idx)]
        tv.store(b, dst, where, tv.load(b, src, idx))
    return PyObj(None)


def _in_place(name: str, opcode: OpCode, symbol: str):
    @form(name, "dst, src", f"dst {symbol}= src, element by element, in place.")
    def handler(lowerer, args, node):
        dst = lowerer.tile_operand(args["dst"], f"{name}()")
        src = lowerer.tile_operand(args["src"], f"{name}()")
        if src.shape != dst.shape:
            raise KernelError(f"{name}(): shapes {dst.shape} and {src.shape} differ")
        b = lowerer.b
        with tv.loop_nest(b, dst.shape) as idx:
            x = lowerer.binary(opcode, Val(tv.load(b, dst, idx)), Val(tv.load(b, src, idx)),
                               node)
            tv.store(b, dst, idx, lowerer.as_val(x, node).value)
        return PyObj(None)


_in_place("tile_add_inplace", OpCode.ADD, "+")
_in_place("tile_sub_inplace", OpCode.SUB, "-")
_in_place("tile_bit_and_inplace", OpCode.BITAND, "&")
_in_place("tile_bit_or_inplace", OpCode.BITOR, "|")
_in_place("tile_bit_xor_inplace", OpCode.BITXOR, "^")
