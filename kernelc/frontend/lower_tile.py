"""Tiles in expressions and statements (a FunctionLowerer mixin): operators, element
reads and writes, `t.shape`, and assignment. The tile operations themselves are special
forms in `tile_forms`; `tile_value` holds the storage model.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError, WarpCodegenAttributeError
from kernelc.frontend import tile_value as tv
from kernelc.frontend.builder import Val
from kernelc.frontend.lower_expr import PyObj, TupleVal
from kernelc.frontend.tile_value import Tile
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

_TEMP_NAMES = itertools.count()


class TileLowering:
    """Hooks of the other lowering mixins for tile values."""

    # ---- helpers for the tile forms ---------------------------------------------------------

    def static_shape(self, node: ast.AST, what: str = "tile shape") -> tuple[int, ...]:
        """A compile-time shape: an int or a tuple of positive ints."""
        return tv.check_shape(self.static_ints(node, what))

    def static_ints(self, node: ast.AST, what: str) -> tuple[int, ...]:
        """An int or a tuple of ints known at compile time."""
        v = self.visit(node)
        items = v.items if isinstance(v, TupleVal) else (v,)
        if isinstance(v, PyObj) and isinstance(v.obj, (tuple, list)):
            items = tuple(PyObj(x) for x in v.obj)
        shape = []
        for item in items:
            if isinstance(item, Val) and isinstance(item.const, int) \
                    and not isinstance(item.const, bool):
                shape.append(item.const)
            elif isinstance(item, PyObj) and isinstance(item.obj, int):
                shape.append(int(item.obj))
            else:
                raise KernelError(f"the {what} must be a constant int or tuple of ints")
        return tuple(shape)

    def tile_operand(self, node: ast.AST, what: str) -> Tile:
        v = self.visit(node)
        if not isinstance(v, Tile):
            raise KernelError(f"{what} needs a tile, got {_describe(v)}")
        return v

    def int32_value(self, v: Any, node: ast.AST) -> Any:
        v = self.as_val(v, node)
        if not (isinstance(v.type, T.ScalarType) and v.type.is_int):
            raise KernelError(f"tile offsets and indices must be integers, got {v.type!r}")
        return self.b.cast(v.value, T.int32)

    @contextmanager
    def bound_names(self, values: list) -> Iterator[list[ast.Name]]:
        """Names bound to already-lowered values (or compile-time objects) while the
        `with` lasts, for AST built around them to go through the ordinary visitors."""
        names = [f"__tile_operand{next(_TEMP_NAMES)}" for _ in values]
        self.names.update(zip(names, values))
        try:
            yield [ast.Name(id=n, ctx=ast.Load()) for n in names]
        finally:
            for name in names:
                del self.names[name]

    def call_on_values(self, callee: ast.expr, values: list, node: ast.AST) -> Any:
        """Lowers `callee(*values)` for values already lowered, through the ordinary call
        path (builtins, funcs, generic funcs alike)."""
        with self.bound_names(values) as args:
            call = ast.copy_location(ast.Call(func=callee, args=args, keywords=[]), node)
            return self.visit(ast.fix_missing_locations(call))

    def elementwise(self, operands: list, combine, node: ast.AST) -> Tile:
        """A new tile whose elements are `combine(*elements)` (Vals), operands being tiles of
        one shape or single values used for every element."""
        tiles = [x for x in operands if isinstance(x, Tile)]
        shape = tiles[0].shape
        for t in tiles[1:]:
            if t.shape != shape:
                raise KernelError(f"tile shapes differ: {shape} and {t.shape}")
        b = self.b
        with tv.loop_nest(b, shape) as idx:
            elems = [Val(tv.load(b, x, idx)) if isinstance(x, Tile) else x for x in operands]
            result = self.as_val(combine(*elems), node)
            # The element type is known only now; a slot is storage, not a statement, so
            # the tile can be made inside the loop.
            out = tv.new_tile(b, result.type, shape)
            tv.store(b, out, idx, result.value)
        return out

    # ---- operators --------------------------------------------------------------------------

    def binary(self, op: OpCode, a: Any, b: Any, node: ast.AST):
        if not (isinstance(a, Tile) or isinstance(b, Tile)):
            return super().binary(op, a, b, node)
        for x in (a, b):
            if not isinstance(x, Tile):
                self.as_val(x, node)  # a clear error for tuples and the like
        return self.elementwise([a, b], lambda x, y: super(TileLowering, self).binary(
            op, x, y, node), node)

    def unary(self, op: ast.unaryop, v: Any, node: ast.AST):
        if not isinstance(v, Tile):
            return super().unary(op, v, node)
        if not isinstance(op, (ast.USub, ast.UAdd)):
            raise KernelError("only unary '-' and '+' apply to tiles")
        if isinstance(op, ast.UAdd):
            return v
        return self.elementwise([v], lambda x: super(TileLowering, self).unary(op, x, node),
                                node)

    # ---- element access ---------------------------------------------------------------------

    def subscript(self, base: Any, node: ast.Subscript):
        index_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if isinstance(base, Tile):
            parts = [n if isinstance(n, ast.Slice) else self.visit(n) for n in index_nodes]
            if any(isinstance(p, (ast.Slice, Tile)) for p in parts):
                return self.tile_gather(base, parts)
            indices = []
            for p, n in zip(parts, index_nodes):
                v = self.as_val(p, n)
                if not (isinstance(v.type, T.ScalarType) and v.type.is_int):
                    raise KernelError(f"indices must be integers, got {v.type!r}")
                indices.append(v)
            return self.value_subscript(base, tuple(indices), node)
        return super().subscript(base, node)

    def tile_gather(self, t: Tile, parts: list) -> Tile:
        """`t[indices, :]` (Warp's advanced indexing): one index is a 1-d int tile, every
        other a full `:` (`parts`: slices, and lowered indices); trailing axes may be left
        out."""
        from kernelc.frontend.tile_indexed import gather_rows

        if len(parts) > t.ndim:
            raise KernelError(f"too many indices ({len(parts)}) for a {t.ndim}-d tile")
        axis, picks = None, None
        for k, p in enumerate(parts):
            if isinstance(p, ast.Slice):
                if p.lower or p.upper or p.step:
                    raise KernelError("a tile takes only full slices ':' beside a tile of "
                                      "indices")
                continue
            if axis is not None or not isinstance(p, Tile):
                raise KernelError("a tile takes one tile of indices, with ':' on every other "
                                  "axis (t[indices, :])")
            axis, picks = k, p
        if axis is None:
            raise KernelError("slicing a tile needs a tile of indices on one axis "
                              "(t[indices, :]); use tile_view() for ranges")
        return gather_rows(self, t, picks, axis)

    def value_subscript(self, base: Any, indices, node: ast.AST):
        if not isinstance(base, Tile):
            return super().value_subscript(base, indices, node)
        idx = self.tile_indices(base, indices)
        if len(idx) > base.ndim:
            raise KernelError(f"too many indices ({len(idx)}) for a {base.ndim}-d tile")
        if len(idx) < base.ndim:
            # `t[i]` of a 2-d tile: the row, a view with a run-time offset is not kept, so
            # the row is copied.
            row = tv.new_tile(self.b, base.dtype, base.shape[len(idx):])
            with tv.loop_nest(self.b, row.shape) as rest:
                tv.store(self.b, row, rest, tv.load(self.b, base, [*idx, *rest]))
            return row
        return Val(tv.load(self.b, base, idx))

    def assign_component(self, base, indices, value: Val, target: ast.AST) -> None:
        if not isinstance(base, Tile):
            return super().assign_component(base, indices, value, target)
        if len(indices) != base.ndim:
            raise KernelError(f"a {base.ndim}-d tile needs {base.ndim} indices, "
                              f"got {len(indices)}")
        value = self.coerce(value, base.dtype) if value.weak else value
        if value.type != base.dtype:
            raise KernelError(f"cannot store a {value.type!r} value in a tile of {base.dtype!r}")
        tv.store(self.b, base, self.tile_indices(base, indices), value.value)

    def tile_indices(self, tile: Tile, indices) -> list:
        """The indices as int32; a constant one out of range is an error, and in debug mode
        a run-time one is checked (each dimension, not just the flat position)."""
        b = self.b
        out = [b.cast(i.value, T.int32) for i in indices]
        for axis, (i, k, n) in enumerate(zip(indices, out, tile.shape)):
            if i.const is not None:
                if not 0 <= i.const < n:
                    raise KernelError(f"index {i.const} out of range for axis {axis} of a "
                                      f"{tile!r}")
                continue
            ok = b.op(OpCode.BITAND, (b.op(OpCode.GE, (k, tv.const(b, 0)), T.bool_),
                                      b.op(OpCode.LT, (k, tv.const(b, n)), T.bool_)), T.bool_)
            b.append(ir.Assert(b.loc, ok, f"tile index {axis} within 0..{n - 1}"))
        return out

    def value_attribute(self, base: Any, attr: str, node: ast.AST):
        if isinstance(base, Tile):
            if attr == "shape":
                return self.from_python(base.shape, node)
            if attr == "dtype":
                return PyObj(base.dtype)
            raise WarpCodegenAttributeError(f"a tile has no attribute '{attr}'")
        return super().value_attribute(base, attr, node)

    # ---- assignment -------------------------------------------------------------------------

    def assign_tile_name(self, name: str, value: Any, node: ast.AST) -> None:
        """`name = value` where either side is a tile."""
        bound = self.names.get(name)
        if not isinstance(value, Tile):
            raise KernelError(f"'{name}' holds a {bound!r}; it cannot become "
                              f"{_describe(value)}")
        homes = self.tile_homes  # name -> the block its tile was first bound in
        here = self.b.current_block()
        if isinstance(bound, Tile):
            if value == bound:
                return
            if not self.tile_in_place and homes.get(name) is here:
                # Straight-line code: the name now means the new tile, as in Warp; views
                # taken of the old one keep its values.
                self.names[name] = value
                return
            # In a loop or branch the variable keeps its storage, so the next iteration
            # (or the code after the branch) reads the new values; `t += u` is in place.
            if value.shape != bound.shape or value.dtype != bound.dtype:
                raise KernelError(f"'{name}' holds a {bound!r}; inside a loop or branch, or "
                                  f"with an augmented assignment, it can only take a tile of "
                                  f"the same shape and type, not a {value!r}")
            if value.slot == bound.slot:  # e.g. `t = tile_transpose(t)`: copy via a temporary
                value = tv.materialise(self.b, value)
            tv.copy(self.b, bound, value)
            return
        if bound is not None:
            raise KernelError(f"'{name}' does not hold a tile; it cannot become one")
        self.names[name] = value
        homes[name] = here

    def visit_AugAssign(self, node: ast.AugAssign):
        self.tile_in_place = True  # `t += u` updates t's storage (views of t see it)
        try:
            return super().visit_AugAssign(node)
        finally:
            self.tile_in_place = False

    def as_val(self, v: Any, node: ast.AST | None) -> Val:
        if isinstance(v, Tile):
            raise KernelError(f"a {v!r} cannot be used as a single value here; index it "
                              f"(t[i]) or pass it to a tile operation (tiles cannot be "
                              f"passed to or returned from funcs)")
        return super().as_val(v, node)


def _describe(v: Any) -> str:
    if isinstance(v, Val):
        return f"a {v.type!r}"
    if isinstance(v, PyObj):
        return repr(v.obj)
    return type(v).__name__

