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
from kernelc.frontend import tile_structs, tile_subscripts
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
        if isinstance(v, Val):  # perhaps a local assigned one constant, once
            items = (self.local_constant(node, v),)
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

    def local_constant(self, node: ast.AST, v: Any) -> Any:
        """`v`, the value of `node`; when `node` names a local assigned a constant exactly
        once (`n = 3`), that constant, as Warp sees it (for shapes and bounds)."""
        if isinstance(v, Val) and v.const is None and isinstance(node, ast.Name):
            from kernelc.frontend.special import _constant_locals

            known = _constant_locals(self)
            if node.id in known:
                return PyObj(known[node.id])
        return v

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
            if self.tile_element_update is node:  # `t[i] += x`: struct elements, field-wise
                return self.element_binary(op, a, b, node)
            return super().binary(op, a, b, node)
        for x in (a, b):
            if not isinstance(x, Tile):
                self.as_val(x, node)  # a clear error for tuples and the like
        if op in (OpCode.MUL, OpCode.DIV):
            _check_scaling(op, a, b)
        with self.b.collective_code():
            return self.elementwise([a, b], lambda x, y: self.element_binary(op, x, y, node),
                                    node)

    def element_binary(self, op: OpCode, x: Any, y: Any, node: ast.AST) -> Val:
        """`x op y` for two elements of tiles: struct elements combine field by field."""
        if any(isinstance(v, Val) and tile_structs.is_struct(v.type) for v in (x, y)):
            return tile_structs.binary(self, op, self.as_val(x, node), self.as_val(y, node),
                                       node)
        return super().binary(op, x, y, node)

    def unary(self, op: ast.unaryop, v: Any, node: ast.AST):
        if not isinstance(v, Tile):
            return super().unary(op, v, node)
        tile_structs.reject("Tile unary operators", v.dtype)
        if not isinstance(op, (ast.USub, ast.UAdd)):
            raise KernelError("only unary '-' and '+' apply to tiles")
        if isinstance(op, ast.UAdd):
            return v
        with self.b.collective_code():
            return self.elementwise([v], lambda x: super(TileLowering, self).unary(op, x, node),
                                    node)

    # ---- element access ---------------------------------------------------------------------

    def subscript(self, base: Any, node: ast.Subscript):
        if isinstance(base, Tile):
            return tile_subscripts.read(self, base, node)
        return super().subscript(base, node)

    def value_subscript(self, base: Any, indices, node: ast.AST):
        if not isinstance(base, Tile):
            return super().value_subscript(base, indices, node)
        parts = [tile_subscripts.int_index(self, v, node, "tile indices") for v in indices]
        if len(parts) > base.ndim:
            raise KernelError(f"too many indices ({len(parts)}) for a {base.ndim}-d tile")
        if len(parts) < base.ndim:
            return tile_subscripts.view(self, base, parts)
        return Val(tv.load(self.b, base, tile_subscripts.element_indices(self, base, parts)))

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
        """`name = value` where either side is a tile: a block's work, as tiles are."""
        with self.b.collective_code():
            self._assign_tile_name(name, value, node)

    def _assign_tile_name(self, name: str, value: Any, node: ast.AST) -> None:
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
                self.names[name] = self.movable(value)
                return
            # In a loop or branch the variable keeps its storage, so the next iteration
            # (or the code after the branch) reads the new values; `t += u` is in place.
            if value.shape != bound.shape or value.dtype != bound.dtype:
                raise KernelError(f"'{name}' holds a {bound!r}; inside a loop or branch, or "
                                  f"with an augmented assignment, it can only take a tile of "
                                  f"the same shape and type, not a {value!r}")
            if (not self.tile_in_place and bound.shift is not None and value.slot == bound.slot
                    and value.strides == bound.strides):
                # `row = t[i]` again: a view is re-aimed (its shift moves), not written to
                b = self.b
                pos = tv.const(b, value.offset - bound.offset)
                if value.shift is not None:
                    pos = b.op(OpCode.ADD, (pos, b.load(value.shift)), T.int32)
                b.store(bound.shift, pos)
                return
            if value.slot == bound.slot:  # e.g. `t = tile_transpose(t)`: copy via a temporary
                value = tv.materialise(self.b, value)
            tv.copy(self.b, bound, value)
            return
        if bound is not None:
            raise KernelError(f"'{name}' does not hold a tile; it cannot become one")
        self.names[name] = self.movable(value)
        homes[name] = here

    def movable(self, value: Tile) -> Tile:
        """A view of another named tile's storage gets a run-time shift (zero for now), so
        rebinding the name to another view inside a loop or branch can re-aim it."""
        if value.shift is None and any(isinstance(v, Tile) and v.slot == value.slot
                                       for v in self.names.values()):
            return tv.shifted(self.b, value, tv.const(self.b, 0))
        return value

    def assign(self, target: ast.expr, value, node: ast.AST) -> None:
        if isinstance(target, ast.Subscript):
            base = self.tile_target(target)
            if base is not None:
                if isinstance(value, Tile):  # a tile into a view: the block's copy, once
                    with self.b.collective_code():
                        tile_subscripts.write(self, base, target, value)
                    return None
                tile_subscripts.write(self, base, target, value)
                if not self.tile_element_update:
                    self.b.barrier()  # every lane's write lands before any lane reads
                return None
        if isinstance(target, (ast.Subscript, ast.Attribute)) and \
                isinstance(target.value, ast.Subscript):
            holder = self.tile_target(target.value)
            if holder is not None:  # `t[i][1] = x`, `t[i].x = x`: part of one element
                return self.assign_element_part(holder, target, value, node)
        return super().assign(target, value, node)

    def tile_target(self, target: ast.Subscript) -> Tile | None:
        """The tile `target` indexes into, or None: the base is lowered only when its root
        name holds a tile, so other targets are lowered once, by the ordinary path."""
        root = target.value
        while isinstance(root, (ast.Subscript, ast.Attribute)):
            root = root.value
        if not (isinstance(root, ast.Name) and isinstance(self.names.get(root.id), Tile)):
            return None
        base = self.visit(target.value)
        return base if isinstance(base, Tile) else None

    def assign_element_part(self, t: Tile, target, value, node: ast.AST) -> None:
        """Writes a component (or field) of the element `target.value` of tile `t`: the
        element goes through a hidden local, which is updated and stored back."""
        element_node = target.value
        element = tile_subscripts.read(self, t, element_node)
        if isinstance(element, Tile):
            raise KernelError("assign to a view's elements one at a time, or assign a whole "
                              "tile to the view")
        name = f"__kc_tile_element_{id(target)}"
        self.assign_name(name, element, target)
        local = ast.copy_location(ast.Name(name, ast.Load()), element_node)
        part = ast.copy_location(
            ast.Subscript(local, target.slice, ast.Store()) if isinstance(target, ast.Subscript)
            else ast.Attribute(local, target.attr, ast.Store()), target)
        super().assign(part, value, node)
        tile_subscripts.write(self, t, element_node, self.read_name(name, element_node))

    def visit_AugAssign(self, node: ast.AugAssign):
        element = None
        if isinstance(node.target, ast.Subscript):
            base = self.tile_target(node.target)
            if base is not None:
                tile_subscripts.reject_compound(self, base, node.target)
                element = node
        self.tile_in_place = True  # `t += u` updates t's storage (views of t see it)
        self.tile_element_update = element
        try:
            result = super().visit_AugAssign(node)
        finally:
            self.tile_in_place = False
            self.tile_element_update = None
        if element is not None:
            self.b.barrier()  # every lane's update lands before any lane reads the tile
        return result

    def as_val(self, v: Any, node: ast.AST | None) -> Val:
        if isinstance(v, Tile):
            raise KernelError(f"a {v!r} cannot be used as a single value here; index it "
                              f"(t[i]) or pass it to a tile operation (tiles cannot be "
                              f"passed to or returned from funcs)")
        return super().as_val(v, node)


def _check_scaling(op: OpCode, a: Any, b: Any) -> None:
    """tile * x and tile / x need a scalar on one side, element by element (Warp's rule: a
    vector times a vector is ambiguous)."""
    types = [x.dtype if isinstance(x, Tile) else x.type for x in (a, b)]
    if any(isinstance(t, T.ScalarType) for t in types):
        return
    if isinstance(a, Tile) and isinstance(b, Tile):
        raise KernelError(f"tile {'*' if op == OpCode.MUL else '/'} tile: one tile's element "
                          f"type must be scalar, got tile<{types[0]!r}> and tile<{types[1]!r}>")
    names = [f"tile<{t!r}>" if isinstance(x, Tile) else repr(t) for x, t in zip((a, b), types)]
    verb = "multiply" if op == OpCode.MUL else "divide"
    raise KernelError(f"Cannot {verb} {names[0]} by {names[1]}: at least one operand must be a "
                      f"scalar type")


def _describe(v: Any) -> str:
    if isinstance(v, Val):
        return f"a {v.type!r}"
    if isinstance(v, PyObj):
        return repr(v.obj)
    return type(v).__name__

