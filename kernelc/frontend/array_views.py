"""Views of arrays inside kernels: `a[i]` of a 2-d array (a row), `a[1:n]`, `a[::-1]`,
`a[i, 2:]`, as Warp takes them; and slices of vectors and matrices (`v[1:]`, `m[1, :2]`),
which are new values.

A view shares the array's memory: an index removes its axis, a slice keeps it with Python's
slice rules (negative bounds count from the end, bounds past the ends are clipped, a
negative step walks backwards). Axes not named are kept whole. The bounds arithmetic is
plain int32 IR here; the backends only move the data pointer and rescale the strides
(`OpCode.ARRAY_VIEW`).
"""

from __future__ import annotations

import ast
from typing import Any

from kernelc import types as T
from kernelc.builtins import array_index
from kernelc.errors import KernelError, WarpCodegenValueError
from kernelc.frontend.builder import Val
from kernelc.ir.nodes import OpCode

I32 = T.int32


class _Ints:
    """int32 IR arithmetic, briefly written."""

    def __init__(self, b: Any):
        self.b = b

    def const(self, n: int) -> Any:
        return self.b.const(n, I32)

    def op(self, code: OpCode, *args: Any) -> Any:
        return self.b.op(code, args, I32)

    def test(self, code: OpCode, x: Any, y: Any) -> Any:
        return self.b.op(code, (x, y), T.bool_)

    def where(self, cond: Any, x: Any, y: Any) -> Any:
        return self.b.op(OpCode.SELECT, (cond, x, y), I32)

    def clamp(self, x: Any, lo: Any, hi: Any) -> Any:
        x = self.where(self.test(OpCode.LT, x, lo), lo, x)
        return self.where(self.test(OpCode.GT, x, hi), hi, x)


def slice_bounds(lowerer: Any, size: Any, node: ast.Slice) -> tuple[Any, Any, Any]:
    """(first index, step, element count) of `node` over an axis of `size` elements, by
    Python's rules (`slice.indices`)."""
    ints = _Ints(lowerer.b)

    def operand(part: ast.expr | None) -> Val | None:
        if part is None:
            return None
        v = lowerer.as_val(lowerer.visit(part), part)
        if not (isinstance(v.type, T.ScalarType) and v.type.is_int):
            raise KernelError(f"slice bounds must be integers, got {v.type!r}")
        return v

    start, stop, step = (operand(p) for p in (node.lower, node.upper, node.step))
    if step is not None and step.const == 0:
        raise WarpCodegenValueError("Slice step cannot be zero")
    step_v = ints.const(1) if step is None else lowerer.b.cast(step.value, I32)
    zero, one, minus_one = ints.const(0), ints.const(1), ints.const(-1)
    forward = ints.test(OpCode.GT, step_v, zero)
    # Clipping range: [0, size] walking forwards, [-1, size - 1] backwards.
    lo = ints.where(forward, zero, minus_one)
    hi = ints.where(forward, size, ints.op(OpCode.SUB, size, one))

    def bound(v: Val | None, default: Any) -> Any:
        if v is None:
            return default
        x = lowerer.b.cast(v.value, I32)
        x = ints.where(ints.test(OpCode.LT, x, zero), ints.op(OpCode.ADD, x, size), x)
        return ints.clamp(x, lo, hi)

    first = bound(start, ints.where(forward, zero, ints.op(OpCode.SUB, size, one)))
    last = bound(stop, ints.where(forward, size, minus_one))
    # Elements: ceil(span / |step|) when the span runs the step's way, else none.
    span = ints.where(forward, ints.op(OpCode.SUB, last, first), ints.op(OpCode.SUB, first, last))
    stride = ints.where(forward, step_v, ints.op(OpCode.NEG, step_v))
    count = ints.op(OpCode.DIV, ints.op(OpCode.SUB, ints.op(OpCode.ADD, span, stride), one), stride)
    count = ints.where(ints.test(OpCode.GT, span, zero), count, zero)
    return first, step_v, count


def array_view(lowerer: Any, array: Val, parts: list[Val | ast.Slice]) -> Val:
    """The view `array[parts]` (an index `Val` or a slice per leading axis)."""
    t = array.type
    if not isinstance(t, T.ArrayType):
        raise KernelError(f"only plain arrays can be sliced or partly indexed in kernels, "
                          f"not a {t!r}")
    if len(parts) > t.ndim:
        raise KernelError(f"too many indices ({len(parts)}) for a {t.ndim}-d array")
    b = lowerer.b
    kinds, operands = [], []
    for axis in range(t.ndim):
        part = parts[axis] if axis < len(parts) else ast.Slice()
        if isinstance(part, ast.Slice):
            size = b.op(OpCode.ARRAY_SHAPE, (array.value,), I32, axis)
            kinds.append("s")
            operands.extend(slice_bounds(lowerer, size, part))
        else:
            kinds.append("i")
            operands.extend(array_index.wrapped(b, array.value, [b.cast(part.value, I32)], axis))
    ndim = kinds.count("s")
    if ndim == 0:
        raise KernelError("a view needs at least one slice or unindexed axis")
    result = T.ArrayType(t.dtype, ndim)
    return Val(b.op(OpCode.ARRAY_VIEW, (array.value, *operands), result, tuple(kinds)))


def _constant(lowerer: Any, node: ast.expr, what: str) -> int:
    """A compile-time int, or an error pointing at `node` itself."""
    try:
        return lowerer.static_int(node, what)
    except KernelError as err:
        raise KernelError(err.message, err.loc or lowerer.source.loc(node),
                          lowerer.ctx.kernel_name) from None


def composite_slice(lowerer: Any, value: Val, index_nodes: list[ast.expr]) -> Val:
    """`v[1:3]`, `m[1:, ::2]`, `m[0, 1:]`: a new vector or matrix of the components picked
    by constant indices and slices (Python's rules)."""
    t = value.type
    flat, result = slice_positions(lowerer, t, index_nodes)
    b = lowerer.b
    parts = [b.op(OpCode.EXTRACT, (value.value,), t.dtype, k) for k in flat]
    return Val(b.op(OpCode.BUILD, parts, result))


def slice_positions(lowerer: Any, t: T.VectorType | T.MatrixType,
                    index_nodes: list[ast.expr]) -> tuple[list[int], T.Type]:
    """The flat component positions a slice of a `t` picks, in order, and the type of the
    vector or matrix they make (what `v[1:3]` reads and `v[1:3] = w` writes)."""
    shape = (t.length,) if isinstance(t, T.VectorType) else t.shape
    if len(index_nodes) > len(shape):
        raise KernelError(f"too many indices ({len(index_nodes)}) for a {t!r}")
    axes: list[list[int] | int] = []
    for axis, size in enumerate(shape):
        node = index_nodes[axis] if axis < len(index_nodes) else ast.Slice()
        if isinstance(node, ast.Slice):
            bounds = [None if p is None else _constant(lowerer, p, "slice bound of a vector "
                      "or matrix") for p in (node.lower, node.upper, node.step)]
            if bounds[2] == 0:
                raise WarpCodegenValueError("Slice step cannot be zero")
            axes.append(list(range(*slice(*bounds).indices(size))))
        else:
            index = _constant(lowerer, node, "index next to a slice of a vector or matrix")
            if not -size <= index < size:
                raise KernelError(f"index {index} is out of range for a {t!r}")
            axes.append(index % size)
    kept = [a for a in axes if isinstance(a, list)]  # an empty slice is a 0-vector, as in Warp
    from kernelc.types_vec import matrix, vector

    cols = shape[1] if len(shape) == 2 else 1
    positions: list[tuple[int, ...]] = [()]
    for a in axes:
        positions = [(*p, i) for p in positions for i in (a if isinstance(a, list) else [a])]
    flat = [p[0] * cols + p[1] if len(p) == 2 else p[0] for p in positions]
    if len(kept) == 2:
        if not flat:  # an empty matrix slice is 0 x 0 whichever side is empty, as in Warp
            return flat, matrix((0, 0), t.dtype)
        return flat, matrix((len(kept[0]), len(kept[1])), t.dtype)
    return flat, vector(len(kept[0]), t.dtype)


def shape_entry(lowerer: Any, ref: Any, axis: int) -> Val:
    """`a.shape[axis]` (a `ShapeRef`, of a view `a[i]` too): Warp's shapes have four
    entries, so those past the rank read 0."""
    ndim = ref.array.type.ndim - ref.skip
    if ndim <= axis < 4:
        return Val(lowerer.b.const(0, I32), const=0)
    if not 0 <= axis < ndim:
        raise KernelError(f"shape index {axis} out of range for a {ndim}-d array")
    return Val(lowerer.array_dim(ref.array, ref.skip + axis))
