"""Tile subscripts with numpy's meaning: `t[i]` and `t[a:b, ::2]` are views (no copy),
`t[i, j]` an element, `t[indices, :]` a gather through a 1-d int tile; negative indices
count from the end. Chains (`t[::-1][1:][i]`) apply each bracket to the result of the
last. Assignment through a view (`t[0:4, :] = u`, `t[0] = row`) writes into `t`.

Slice bounds must be compile-time constants (the view's shape is part of its type);
integer indices may be run-time values (see `Tile.shift`).
"""

from __future__ import annotations

import ast
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend import tile_value as tv
from kernelc.frontend.builder import Val
from kernelc.frontend.lower_expr import PyObj
from kernelc.frontend.tile_value import Tile
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

Part = Any  # one subscript entry: a slice (constant bounds), an int Val, or a Tile of indices


def index_nodes(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def constant_int(lowerer, node: ast.expr | None, what: str) -> int | None:
    """A compile-time int (None for an omitted bound)."""
    if node is None:
        return None
    v = lowerer.local_constant(node, lowerer.visit(node))
    if isinstance(v, PyObj) and v.obj is None:
        return None
    if isinstance(v, PyObj) and isinstance(v.obj, int) and not isinstance(v.obj, bool):
        return int(v.obj)
    if isinstance(v, Val) and isinstance(v.const, int) and not isinstance(v.const, bool):
        return v.const
    raise KernelError(f"{what} must be compile-time constant ints, got "
                      f"'{ast.unparse(node)}'")


def constant_slice(lowerer, node: ast.Slice) -> slice:
    what = "tile slice bounds"
    return slice(constant_int(lowerer, node.lower, what),
                 constant_int(lowerer, node.upper, what),
                 constant_int(lowerer, node.step, what))


def slice_call(lowerer, node: ast.expr) -> slice | None:
    """`slice(start, stop[, step])` written in a kernel (a tile_view() offset), or None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "slice" and not node.keywords and 1 <= len(node.args) <= 3):
        return None
    what = "tile_view() slice bounds"
    bounds = [constant_int(lowerer, n, what) for n in node.args]
    return slice(*bounds) if len(bounds) > 1 else slice(None, bounds[0])


def parse(lowerer, t: Tile, nodes: list[ast.expr]) -> list[Part]:
    """The subscript entries of `t[nodes]`, each checked for its kind."""
    if len(nodes) > t.ndim:
        raise KernelError(f"too many indices ({len(nodes)}) for a {t.ndim}-d tile")
    parts: list[Part] = []
    for n in nodes:
        if isinstance(n, ast.Slice):
            parts.append(constant_slice(lowerer, n))
            continue
        v = lowerer.visit(n)
        if isinstance(v, Tile) or (isinstance(v, PyObj) and isinstance(v.obj, slice)):
            parts.append(v if isinstance(v, Tile) else v.obj)
            continue
        parts.append(int_index(lowerer, v, n, "tile indices"))
    return parts


def int_index(lowerer, v: Any, node: ast.AST, what: str) -> Val:
    v = lowerer.as_val(v, node)
    if not (isinstance(v.type, T.ScalarType) and v.type.is_int):
        raise KernelError(f"{what} must be integers or slices, got {v.type!r}")
    return v


def makes_view(t: Tile, parts: list[Part]) -> bool:
    return len(parts) < t.ndim or any(isinstance(p, (slice, Tile)) for p in parts)


def slice_range(p: slice, n: int, axis: int) -> range:
    """The positions a constant slice picks along an axis of length n (Python's rules)."""
    try:
        r = range(n)[p]
    except ValueError as err:  # a zero step
        raise KernelError(f"tile slice on axis {axis}: {err}") from None
    if not r:
        raise KernelError(f"tile slice {_show(p)} on axis {axis} of length {n} produced an "
                          f"empty tile; zero-length tile dimensions are not supported")
    return r


def wrap(lowerer, v: Val, n: int, axis: int) -> int | ir.Value:
    """An int index counted from the end when negative (once, as numpy does): a constant
    one is checked here, a run-time one in debug mode."""
    if v.const is not None:
        k = v.const + n if v.const < 0 else v.const
        if not 0 <= k < n:
            raise KernelError(f"tile index {v.const} is out of bounds for axis {axis} with "
                              f"size {n}")
        return k
    b = lowerer.b
    k = b.cast(v.value, T.int32)
    negative = b.op(OpCode.LT, (k, tv.const(b, 0)), T.bool_)
    k = b.op(OpCode.SELECT, (negative, b.op(OpCode.ADD, (k, tv.const(b, n)), T.int32), k),
             T.int32)
    ok = b.op(OpCode.BITAND, (b.op(OpCode.GE, (k, tv.const(b, 0)), T.bool_),
                              b.op(OpCode.LT, (k, tv.const(b, n)), T.bool_)), T.bool_)
    b.append(ir.Assert(b.loc, ok, f"tile index {axis} within {-n}..{n - 1}"))
    return k


def element_indices(lowerer, t: Tile, parts: list[Val]) -> list[ir.Value]:
    b = lowerer.b
    out = []
    for axis, (v, n) in enumerate(zip(parts, t.shape)):
        k = wrap(lowerer, v, n, axis)
        out.append(tv.const(b, k) if isinstance(k, int) else k)
    return out


def view(lowerer, t: Tile, parts: list[Part]) -> Tile:
    """The view `t[parts]` for int indices (which drop their axis) and slices (which keep
    theirs); axes past the last part are kept whole."""
    b = lowerer.b
    shape: list[int] = []
    strides: list[int] = []
    start = 0
    moved: ir.Value | None = None
    for axis, (n, stride) in enumerate(zip(t.shape, t.strides)):
        p = parts[axis] if axis < len(parts) else slice(None)
        if isinstance(p, slice):
            r = slice_range(p, n, axis)
            start += r.start * stride
            shape.append(len(r))
            strides.append(stride * r.step)
            continue
        k = wrap(lowerer, p, n, axis)
        if isinstance(k, int):
            start += k * stride
            continue
        step = k if stride == 1 else b.op(OpCode.MUL, (k, tv.const(b, stride)), T.int32)
        moved = step if moved is None else b.op(OpCode.ADD, (moved, step), T.int32)
    if not shape:
        raise KernelError("a tile view needs at least one axis left; index every axis to "
                          "read an element")
    out = t.view(tuple(shape), tuple(strides), start)
    return out if moved is None else tv.shifted(b, out, moved)


def gather(lowerer, t: Tile, parts: list[Part]) -> Tile:
    """`t[indices, :]`: one 1-d int tile of indices, full slices on every other axis."""
    from kernelc.frontend.tile_indexed import gather_rows

    axis, picks = None, None
    for k, p in enumerate(parts):
        if isinstance(p, Tile):
            if axis is not None:
                raise KernelError("tile indexing takes exactly one 1-d integer index tile")
            if p.ndim != 1:
                raise KernelError(f"tile indexing requires a 1-d integer index tile, got "
                                  f"{p.ndim} dimensions")
            if not (isinstance(p.dtype, T.ScalarType) and p.dtype.is_int):
                raise KernelError(f"tile indexing requires an integer index tile, got "
                                  f"{p.dtype!r}")
            axis, picks = k, p
        elif isinstance(p, slice):
            if range(t.shape[k])[p] != range(t.shape[k]):
                raise KernelError("tile indexing with an integer index tile requires ':' on "
                                  "all other axes, e.g. t[indices, :]")
        else:
            raise KernelError("tile indexing entries must be one 1-d integer index tile and "
                              "full slices ':'")
    return gather_rows(lowerer, t, picks, axis)


def read(lowerer, t: Tile, node: ast.Subscript) -> Any:
    """`t[...]`: a view, a gathered copy, or an element (a Val)."""
    parts = parse(lowerer, t, index_nodes(node))
    if any(isinstance(p, Tile) for p in parts):
        return gather(lowerer, t, parts)
    if makes_view(t, parts):
        return view(lowerer, t, parts)
    return Val(tv.load(lowerer.b, t, element_indices(lowerer, t, parts)))


def write(lowerer, t: Tile, target: ast.Subscript, value: Any) -> None:
    """`t[...] = value`: into a view (value a tile of its shape) or one element."""
    parts = parse(lowerer, t, index_nodes(target))
    if any(isinstance(p, Tile) for p in parts):
        raise KernelError("assignment through an index tile (t[indices, :] = u) is not "
                          "supported; use slice assignment (t[a:b, :] = u) or build the tile "
                          "explicitly")
    b = lowerer.b
    if makes_view(t, parts):
        if not isinstance(value, Tile):
            got = value.type if isinstance(value, Val) else type(value).__name__
            raise KernelError(f"tile view assignment requires a tile of matching shape on the "
                              f"right-hand side (t[a:b, :] = u or t[0] = row), got a value "
                              f"of type {got!r}")
        dest = view(lowerer, t, parts)
        if dest.shape != value.shape:
            raise KernelError(f"tile view assignment shape mismatch: the view has shape "
                              f"{dest.shape}, the value {value.shape}")
        assign_tile(lowerer, dest, value, "tile view assignment")
        return
    v = lowerer.as_val(value, target)
    v = lowerer.coerce(v, t.dtype) if v.weak else v
    if v.type != t.dtype:
        raise KernelError(f"cannot store a {v.type!r} value in a tile of {t.dtype!r}")
    tv.store(b, t, element_indices(lowerer, t, parts), v.value)


def assign_tile(lowerer, dest: Tile, src: Tile, what: str) -> None:
    """dest[...] = src[...] (same shape), converting numeric elements to dest's type; an
    overlapping source (the same storage) is copied first, so numpy's result comes out."""
    b = lowerer.b
    if src.dtype != dest.dtype:
        src = convert(lowerer, src, dest.dtype, what)
    elif src.slot == dest.slot:
        src = tv.materialise(b, src)
    tv.copy(b, dest, src)


def convert(lowerer, t: Tile, dtype: T.Type, what: str) -> Tile:
    """A copy of `t` with its elements converted to `dtype` (scalars, or vectors and
    matrices of the same size)."""
    b = lowerer.b
    n = tv.components(dtype)
    ok = (isinstance(dtype, T.ScalarType) and isinstance(t.dtype, T.ScalarType)) or (
        n > 1 and n == tv.components(t.dtype) and type(dtype) is type(t.dtype))
    if not ok:
        raise KernelError(f"{what}: cannot convert a tile of {t.dtype!r} to {dtype!r}")

    def one(x: Val) -> Val:
        if n == 1:
            return Val(b.cast(x.value, dtype))
        parts = [b.cast(b.op(OpCode.EXTRACT, (x.value,), tv.scalar_of(x.type), c),
                        tv.scalar_of(dtype)) for c in range(n)]
        return Val(b.op(OpCode.BUILD, parts, dtype))

    return lowerer.elementwise([t], one, None)


def reject_compound(lowerer, t: Tile, target: ast.Subscript) -> None:
    """`t[a:b] += u` and `t[i] += row` (views) are errors, as in Warp; `t[i, j] += x` is an
    ordinary element update."""
    nodes = index_nodes(target)
    view_like = len(nodes) < t.ndim or any(
        isinstance(n, ast.Slice) or (isinstance(n, ast.Name)
                                     and isinstance(lowerer.names.get(n.id), Tile))
        for n in nodes)
    if view_like:
        raise KernelError("Compound assignment to a tile view (t[a:b, :] += x or t[i] += x) "
                          "is not supported; assign the result instead (t[a:b, :] = "
                          "t[a:b, :] + x)")


def _show(p: slice) -> str:
    def text(x):
        return "" if x is None else str(x)

    out = f"{text(p.start)}:{text(p.stop)}"
    return out + (f":{p.step}" if p.step is not None else "")
