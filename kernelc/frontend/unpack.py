"""`*x` in call arguments (`wp.vec4(*v3, 1.0)`, `wp.max(*v)`, `wp.matrix_from_rows(*m[:2])`,
`wp.vec3i(*arr[2:5])`), expanded into one argument per item before the call is lowered,
as Warp does.

What can be unpacked: vectors and quaternions (components), matrices (rows), tuples
(items), and slices of 1-D arrays (or of the last axis of an indexed array view) whose
bounds are compile-time constants: `arr[a:b:s]` becomes `arr[a], arr[a + s], ...`, so a
stop is required and negative bounds or steps are refused (an array's length is not
known when compiling).
"""

from __future__ import annotations

import ast
from typing import Any

from kernelc import types as T
from kernelc.errors import WarpCodegenTypeError, WarpCodegenValueError
from kernelc.frontend.builder import Val
from kernelc.frontend.lower_expr import ARRAY_TYPES, ArrayView, TupleVal


class Lowered(ast.expr):
    """An argument already lowered: `visit` returns its value as it is."""

    _fields = ()

    def __init__(self, value: Any, where: ast.AST):
        super().__init__()
        self.value = value
        ast.copy_location(self, where)


def expand_starred(lowerer: Any, node: ast.Call) -> ast.Call:
    """`node` with each `*x` argument replaced by the items of `x`."""
    if not any(isinstance(a, ast.Starred) for a in node.args):
        return node
    args: list[ast.expr] = []
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            lowerer.b.loc = lowerer.source.loc(arg)
            args.extend(_items(lowerer, arg))
        else:
            args.append(arg)
    return ast.copy_location(ast.Call(node.func, args, node.keywords), node)


def _items(lowerer: Any, starred: ast.Starred) -> list[ast.expr]:
    inner = starred.value
    if isinstance(inner, ast.Subscript):
        base = lowerer.visit(inner.value)
        if isinstance(base, Val) and isinstance(base.type, ARRAY_TYPES):
            base = ArrayView(base, ())
        if isinstance(base, ArrayView):
            return _array_slice_items(lowerer, base, inner)
        value = lowerer.subscript(base, inner)
    else:
        value = lowerer.visit(inner)
    if isinstance(value, TupleVal):
        return [Lowered(v, starred) for v in value.items]
    t = value.type if isinstance(value, Val) else None
    if isinstance(t, T.VectorType):
        count = t.length
    elif isinstance(t, T.MatrixType):
        count = t.shape[0]
    else:
        what = repr(t) if t is not None else type(getattr(value, "obj", value)).__name__
        raise WarpCodegenTypeError(
            f"Starred expressions are only supported for vectors, matrices, quaternions, "
            f"tuples and array slices, got {what}")
    return [ast.copy_location(ast.Subscript(Lowered(value, starred), ast.Constant(k),
                                            ast.Load()), starred) for k in range(count)]


def _array_slice_items(lowerer: Any, view: ArrayView, node: ast.Subscript) -> list[ast.expr]:
    index_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    ndim = view.array.type.ndim
    if len(view.indices) + len(index_nodes) != ndim or not isinstance(index_nodes[-1],
                                                                       ast.Slice):
        raise WarpCodegenValueError("only a slice of an array's last axis can be unpacked "
                                    "(arr[a:b] or arr[i, a:b])")
    if any(isinstance(n, ast.Slice) for n in index_nodes[:-1]):
        raise WarpCodegenValueError("only a slice of an array's last axis can be unpacked")
    part = index_nodes[-1]
    if part.upper is None:
        raise WarpCodegenValueError("unpacking an array slice requires explicit upper bound "
                                    "(an array's length is not known when compiling)")
    bounds = [_bound(lowerer, p, default) for p, default in
              ((part.lower, 0), (part.upper, None), (part.step, 1))]
    if bounds[2] == 0:
        raise WarpCodegenValueError("Slice step cannot be zero")
    if bounds[2] < 0:
        raise WarpCodegenValueError("slice step cannot be negative for arrays")
    if bounds[0] < 0 or bounds[1] < 0:
        raise WarpCodegenValueError("slice bounds cannot be negative for arrays (their "
                                    "length is not known when compiling)")
    base = Lowered(view, node)
    fixed = list(index_nodes[:-1])
    items = []
    for k in range(*bounds):
        index = ast.Tuple([*fixed, ast.Constant(k)], ast.Load()) if fixed else ast.Constant(k)
        items.append(ast.copy_location(ast.Subscript(base, index, ast.Load()), node))
    for item in items:
        ast.fix_missing_locations(item)
    return items


def _bound(lowerer: Any, node: ast.expr | None, default: int | None) -> int:
    if node is None:
        return default
    v = lowerer.visit(node)
    if isinstance(v, Val) and isinstance(v.const, int) and not isinstance(v.const, bool):
        return v.const
    raise WarpCodegenValueError("Slice component must be a compile-time constant when "
                                "unpacking an array slice")

