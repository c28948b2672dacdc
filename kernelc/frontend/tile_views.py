"""Tile views and copies: transpose, broadcast, view, reshape, squeeze, type conversion,
element extraction and assignment, in-place updates (special forms; see `tile_forms`)."""

from __future__ import annotations

import ast
import math

from kernelc import types as T
from kernelc.errors import KernelError, WarpCodegenValueError
from kernelc.frontend import tile_subscripts
from kernelc.frontend import tile_value as tv
from kernelc.frontend.builder import Val
from kernelc.frontend.lower_expr import PyObj, TupleVal
from kernelc.frontend.tile_forms import form_table
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
    shape = lowerer.static_ints(args["shape"], "tile_broadcast() shape")
    if not 1 <= len(shape) <= 4:
        raise WarpCodegenValueError(f"tile_broadcast() output must have between one and four "
                                    f"dimensions, got {len(shape)}")
    shape = tv.check_shape(shape)
    if len(shape) < t.ndim:
        raise KernelError(f"cannot broadcast shape {t.shape} to {shape}")
    strides = [0] * (len(shape) - t.ndim)
    for n, (m, stride) in zip(shape[len(shape) - t.ndim:], zip(t.shape, t.strides)):
        if m != n and m != 1:
            raise KernelError(f"cannot broadcast shape {t.shape} to {shape}")
        strides.append(stride if m == n else 0)
    return t.view(shape, tuple(strides))


@form("tile_view", "t, offset, shape=",
      "A view of part of a tile: int `offset` entries (constant or not) drop their axis, "
      "slices keep theirs; with `shape`, the block of that shape from `offset`.")
def _tile_view(lowerer, args, node):
    t = lowerer.tile_operand(args["t"], "tile_view()")
    parts = _view_offsets(lowerer, t, args["offset"])
    if any(isinstance(p, slice) for p in parts):
        if "shape" in args:
            raise KernelError("tile_view() does not support specifying 'shape' together with "
                              "a slice in 'offset'; the slices give the view's shape")
        return tile_subscripts.view(lowerer, t, parts)
    for axis, p in enumerate(parts):  # an explicit offset is a position: not wrapped
        if p.const is not None and not 0 <= p.const < t.shape[axis]:
            raise KernelError(f"tile_view() offset {p.const} is out of bounds for axis {axis} "
                              f"with size {t.shape[axis]} (only subscripts such as t[-1, :] "
                              f"count from the end)")
    if "shape" not in args:
        if len(parts) == t.ndim:  # every axis fixed: the element, as a tile of shape (1,)
            return _block(lowerer, t, parts, (1,) * t.ndim).view((1,), (1,))
        return tile_subscripts.view(lowerer, t, parts)
    shape = lowerer.static_shape(args["shape"])
    if len(shape) == t.ndim:  # a sub-block starting at `offset` in every dimension
        return _block(lowerer, t, parts, shape)
    rest = t.shape[len(parts):]
    if len(shape) != len(rest) or any(n > m for n, m in zip(shape, rest)):
        raise KernelError(f"tile_view(): shape {shape} does not fit {rest}")
    rows = tile_subscripts.view(lowerer, t, parts)
    return rows.view(shape, rows.strides)


def _view_offsets(lowerer, t: Tile, node) -> list:
    """The entries of a tile_view() offset: int Vals and constant slices."""
    nodes = node.elts if isinstance(node, ast.Tuple) else None
    if nodes is None:
        v = lowerer.visit(node)
        values = list(v.items) if isinstance(v, TupleVal) else [v]
        nodes = [node] * len(values)
    else:
        values = [tile_subscripts.slice_call(lowerer, n) for n in nodes]
        values = [v if v is not None else lowerer.visit(n) for v, n in zip(values, nodes)]
    if len(values) > t.ndim:
        raise KernelError(f"tile_view(): {len(values)} offsets for a {t.ndim}-d tile")
    parts = []
    for v, n in zip(values, nodes):
        if isinstance(v, PyObj) and isinstance(v.obj, slice):
            v = v.obj
        if isinstance(v, slice):
            for bound in (v.start, v.stop, v.step):
                if bound is not None and not isinstance(bound, int):
                    raise KernelError("tile_view() slice bounds must be compile-time "
                                      "constant ints")
            parts.append(v)
        else:
            parts.append(tile_subscripts.int_index(lowerer, v, n, "tile_view() offset entries"))
    return parts


def _block(lowerer, t: Tile, parts: list, shape: tuple[int, ...]) -> Tile:
    """The view of `shape` (one entry per axis) whose first element is t[parts, 0, ...]."""
    b = lowerer.b
    full = list(parts) + [None] * (t.ndim - len(parts))
    start, moved = 0, None
    for axis, (p, n, m, stride) in enumerate(zip(full, shape, t.shape, t.strides)):
        k = 0 if p is None else p.const
        if k is None:
            step = b.op(OpCode.MUL, (b.cast(p.value, T.int32), tv.const(b, stride)), T.int32)
            moved = step if moved is None else b.op(OpCode.ADD, (moved, step), T.int32)
            k = 0
        if k + n > m:
            raise KernelError(f"tile_view(): shape {shape} from offset {k} on axis {axis} "
                              f"exceeds {t.shape}")
        start += k * stride
    out = t.view(shape, t.strides, start)
    return out if moved is None else tv.shifted(b, out, moved)


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
    if not _dense(t):
        raise KernelError(f"tile_reshape() requires a contiguous tile; a view with shape "
                          f"{t.shape} and strides {t.strides} (a strided or reversed slice) "
                          f"cannot be reshaped: copy it into a new tile first (tile_assign)")
    src = t if tv.in_order(t) else tv.materialise(lowerer.b, t)
    return src.view(shape, tv.row_major(shape))


def _dense(t: Tile) -> bool:
    """Whether the tile's elements fill a block of its storage in some order of its axes (a
    transpose is dense, a strided or reversed slice is not); broadcasts count as dense, as
    reshaping them just copies."""
    dims = sorted((s, n) for n, s in zip(t.shape, t.strides) if n > 1)
    if any(s == 0 for s, _ in dims):
        return True
    step = 1
    for s, n in dims:
        if s != step:
            return False
        step *= n
    return True


@form("tile_squeeze", "t, axis=", "The tile without its dimensions of length 1 (or just "
      "`axis`); a view.")
def _tile_squeeze(lowerer, args, node):
    t = lowerer.tile_operand(args["t"], "tile_squeeze()")
    if "axis" in args:  # one axis or a tuple of them
        drop = set()
        for axis in lowerer.static_ints(args["axis"], "tile_squeeze() axis"):
            if not -t.ndim <= axis < t.ndim:
                raise WarpCodegenValueError(f"tile_squeeze() axis {axis} is out of bounds for "
                                            f"tile with {t.ndim} dimensions")
            axis %= t.ndim
            if t.shape[axis] != 1:
                raise KernelError(f"tile_squeeze(): dimension {axis} has length "
                                  f"{t.shape[axis]}")
            drop.add(axis)
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
    with lowerer.b.collective_code(False):  # each lane reads the element it names
        return _extract(lowerer, args, node)


def _extract(lowerer, args, node):
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
      "Copies tile `src` into tile `dst` starting at `offset` (one index per dimension), "
      "converting numeric elements to dst's type.")
def _tile_assign(lowerer, args, node):
    dst = lowerer.tile_operand(args["dst"], "tile_assign()")
    src = lowerer.visit(args["src"])
    b = lowerer.b
    parts = []
    if "offset" in args:
        v = lowerer.visit(args["offset"])
        items = list(v.items) if isinstance(v, TupleVal) else [v]
        if len(items) != dst.ndim:
            raise KernelError(f"tile_assign(): the offset needs {dst.ndim} values")
        parts = [tile_subscripts.int_index(lowerer, x, node, "tile_assign() offsets")
                 for x in items]
    if not isinstance(src, Tile):  # a single value at `offset`
        value = lowerer.as_val(src, node)
        value = lowerer.coerce(value, dst.dtype) if value.weak else value
        where = [b.cast(p.value, T.int32) for p in parts] or [tv.const(b, 0)] * dst.ndim
        tv.store(b, dst, where, value.value)
        return PyObj(None)
    if src.ndim != dst.ndim:
        raise KernelError(f"tile_assign(): a {src!r} into a {dst!r}")
    target = dst if not parts and src.shape == dst.shape else _block(lowerer, dst, parts,
                                                                     src.shape)
    tile_subscripts.assign_tile(lowerer, target, src, "tile_assign()")
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
            x = lowerer.element_binary(opcode, Val(tv.load(b, dst, idx)),
                                       Val(tv.load(b, src, idx)), node)
            tv.store(b, dst, idx, lowerer.as_val(x, node).value)
        return PyObj(None)


_in_place("tile_add_inplace", OpCode.ADD, "+")
_in_place("tile_sub_inplace", OpCode.SUB, "-")
_in_place("tile_bit_and_inplace", OpCode.BITAND, "&")
_in_place("tile_bit_or_inplace", OpCode.BITOR, "|")
_in_place("tile_bit_xor_inplace", OpCode.BITXOR, "^")
