"""Lowering of vectors, matrices, quaternions, transforms and structs (a FunctionLowerer mixin).

Reads become EXTRACT (constant index or field) or EXTRACT_DYN (index known at run time);
writes to a component (`v.x = 1.0`, `m[i, j] = a`, `s.field = b`) build a new aggregate with
INSERT / INSERT_DYN and assign it back to the variable (or array element, or outer field)
the target names, so aggregates stay plain SSA values in the IR.
"""

from __future__ import annotations

import ast
import enum
from typing import Any

from kernelc import types as T
from kernelc.builtins import BUILTINS
from kernelc.errors import KernelError, WarpCodegenAttributeError, WarpCodegenValueError
from kernelc.frontend.builder import Val
from kernelc.frontend.lower_expr import _OP_SYMBOL, PyObj, TupleVal
from kernelc.ir.nodes import OpCode, Value
from kernelc.types_vec import quaternion, vector

_AXES = {"x": 0, "y": 1, "z": 2, "w": 3}
_OPERATORS = {OpCode.ADD: "add", OpCode.SUB: "sub", OpCode.MUL: "mul", OpCode.DIV: "div",
              OpCode.MOD: "mod", OpCode.BITAND: "bit_and", OpCode.BITOR: "bit_or",
              OpCode.BITXOR: "bit_xor", OpCode.SHL: "lshift", OpCode.SHR: "rshift"}


def _aggregate(t: T.Type) -> bool:
    return isinstance(t, (T.VectorType, T.MatrixType))


class AggregateLowering:
    """Hooks of ExprLowering / StmtLowering for non-scalar values."""

    # ---- operators ------------------------------------------------------------------------

    def visit_BinOp(self, node: ast.BinOp):
        if isinstance(node.op, ast.MatMult):
            a, b = self.visit(node.left), self.visit(node.right)
            return self.apply_typed("mul", [a, b], "operator '@'", node)
        return super().visit_BinOp(node)

    def apply_typed(self, name: str, args: list, what: str, node: ast.AST) -> Val:
        """Applies builtin `name`; a type error is reported as being about `what`."""
        vals = [self.as_val(a, node) for a in args]
        overload = BUILTINS[name].overload_for(len(vals))
        try:
            params, result = overload.rule(tuple(v.type for v in vals),
                                           tuple(v.weak for v in vals))
        except TypeError as err:
            raise KernelError(f"{what}: {err}") from None
        coerced = [self.coerce(v, p).value for v, p in zip(vals, params)]
        if overload.expand is None:
            return Val(self.b.op(OpCode.CALL, coerced, result, overload.key))
        return Val(overload.expand(self.b, *coerced))

    def nonscalar_binary(self, op: OpCode, a: Val, b: Val, node: ast.AST) -> Val:
        name = _OPERATORS.get(op)
        if name is None:
            return super().nonscalar_binary(op, a, b, node)
        return self.apply_typed(name, [a, b], f"operator '{_OP_SYMBOL[op]}'", node)

    def nonscalar_unary(self, op: ast.unaryop, v: Val, node: ast.AST) -> Val:
        if isinstance(op, ast.USub):
            return self.apply_typed("neg", [v], "unary '-'", node)
        if isinstance(op, ast.Invert):
            return self.apply_typed("invert", [v], "unary '~'", node)
        return super().nonscalar_unary(op, v, node)

    def nonscalar_compare(self, op: OpCode, a: Val, b: Val, node: ast.AST) -> Val:
        if op not in (OpCode.EQ, OpCode.NE) or a.type != b.type or not _aggregate(a.type):
            return super().nonscalar_compare(op, a, b, node)
        equal = self.b.const(True, T.bool_) if a.type.count == 0 else None  # 0-vectors
        for i in range(a.type.count):
            x, y = self.component(a.value, i), self.component(b.value, i)
            same = self.b.op(OpCode.EQ, (x, y), T.bool_)
            equal = same if i == 0 else self.b.op(OpCode.BITAND, (equal, same), T.bool_)
        if op == OpCode.NE:
            equal = self.b.op(OpCode.NOT, (equal,), T.bool_)
        return Val(equal)

    # ---- reads ----------------------------------------------------------------------------

    def component(self, agg: Value, index: int) -> Value:
        t = agg.type
        elem = t.fields[index][1] if isinstance(t, T.StructType) else t.dtype
        return self.b.op(OpCode.EXTRACT, (agg,), elem, index)

    def value_attribute(self, base: Any, attr: str, node: ast.AST):
        t = base.type if isinstance(base, Val) else None
        if isinstance(t, T.StructType):
            return Val(self.component(base.value, self.field_index(t, attr)))
        if isinstance(base, Val) and isinstance(base.const, enum.Enum) and attr == "value":
            return self.from_python(base.const.value, node)  # `MyIntEnum.B.value`
        if isinstance(t, (T.VectorType, T.MatrixType)) and attr == "dtype":
            return PyObj(t.dtype)  # `v.dtype(0.5)`: Warp's generic code builds scalars so
        if isinstance(t, T.VectorType) and attr == "length":
            return self.from_python(t.length, node)  # a compile-time int, as in Warp
        if isinstance(t, T.MatrixType) and attr == "shape":
            return self.from_python(tuple(t.shape), node)
        if isinstance(t, T.VectorType):
            if t.kind == "transform" and attr in ("p", "q"):
                first, n = (0, 3) if attr == "p" else (3, 4)
                out = vector(3, t.dtype) if attr == "p" else quaternion(t.dtype)
                parts = [self.component(base.value, first + i) for i in range(n)]
                return Val(self.b.op(OpCode.BUILD, parts, out))
            index = self.axis(t, attr)
            return Val(self.component(base.value, index))
        return super().value_attribute(base, attr, node)

    def field_index(self, t: T.StructType, attr: str) -> int:
        try:
            return t.field_index(attr)
        except KeyError:
            names = ", ".join(n for n, _ in t.fields)
            raise WarpCodegenAttributeError(f"struct '{t.name}' has no field '{attr}' (fields: {names})"
                              ) from None

    def axis(self, t: T.VectorType, attr: str) -> int:
        index = _AXES.get(attr)
        if index is None or t.kind == "transform" or index >= t.length:
            raise WarpCodegenAttributeError(f"{t!r} has no attribute '{attr}'")
        return index

    def value_subscript(self, base: Any, indices: tuple[Val, ...], node: ast.AST):
        t = base.type if isinstance(base, Val) else None
        if isinstance(t, T.VectorType):
            if len(indices) != 1:
                raise KernelError(f"{t!r} takes one index, got {len(indices)}")
            return Val(self.read_flat(base.value, self.flat_index(t, indices, node)))
        if isinstance(t, T.MatrixType):
            if len(indices) == 2:
                return Val(self.read_flat(base.value, self.flat_index(t, indices, node)))
            if len(indices) != 1:
                raise KernelError(f"{t!r} takes one or two indices, got {len(indices)}")
            row = vector(t.shape[1], t.dtype)
            parts = [self.read_flat(base.value, index) for index in self.row_indices(t, indices[0])]
            return Val(self.b.op(OpCode.BUILD, parts, row))
        return super().value_subscript(base, indices, node)

    def read_flat(self, agg: Value, index: int | Value) -> Value:
        if isinstance(index, int):
            return self.component(agg, index)
        return self.b.op(OpCode.EXTRACT_DYN, (agg, index), agg.type.dtype)

    def checked_index(self, index: Val, n: int, what: str) -> int | Value:
        """A constant index (range-checked, negative counts from the end) or an int32 value."""
        if isinstance(index.const, int):
            i = index.const
            if not -n <= i < n:
                raise KernelError(f"{what} index {i} out of range for length {n}")
            return i % n
        return self.b.cast(index.value, T.int32)

    def flat_index(self, t: T.Type, indices: tuple[Val, ...], node: ast.AST) -> int | Value:
        if isinstance(t, T.VectorType):
            return self.checked_index(indices[0], t.length, f"{t!r}")
        rows, cols = t.shape
        i = self.checked_index(indices[0], rows, f"{t!r} row")
        j = self.checked_index(indices[1], cols, f"{t!r} column")
        if isinstance(i, int) and isinstance(j, int):
            return i * cols + j
        i = i if not isinstance(i, int) else self.b.const(i, T.int32)
        j = j if not isinstance(j, int) else self.b.const(j, T.int32)
        scaled = self.b.op(OpCode.MUL, (i, self.b.const(cols, T.int32)), T.int32)
        return self.b.op(OpCode.ADD, (scaled, j), T.int32)

    def row_indices(self, t: T.MatrixType, index: Val) -> list[int | Value]:
        rows, cols = t.shape
        i = self.checked_index(index, rows, f"{t!r} row")
        if isinstance(i, int):
            return [i * cols + c for c in range(cols)]
        start = self.b.op(OpCode.MUL, (i, self.b.const(cols, T.int32)), T.int32)
        return [self.b.op(OpCode.ADD, (start, self.b.const(c, T.int32)), T.int32)
                for c in range(cols)]

    # ---- writes ---------------------------------------------------------------------------

    def write_flat(self, agg: Value, index: int | Value, value: Value) -> Value:
        if isinstance(index, int):
            return self.b.op(OpCode.INSERT, (agg, value), agg.type, index)
        return self.b.op(OpCode.INSERT_DYN, (agg, index, value), agg.type)

    def assign_slice(self, base: Val, index_nodes: list[ast.expr], value: Val,
                     target: ast.Subscript) -> None:
        """`v[1:] = w`, `m[0, :2] = r`: the picked components replaced by `value`'s."""
        from kernelc.frontend.array_views import slice_positions

        flat, part = slice_positions(self, base.type, index_nodes)
        if value.type != part:  # a ValueError, as Warp raises for this mistake
            raise WarpCodegenValueError(f"cannot assign a {value.type!r} to a slice of a "
                                        f"{base.type!r}: expected a {part!r}")
        new = base.value
        for k, position in enumerate(flat):
            new = self.write_flat(new, position, self.component(value.value, k))
        self.assign(target.value, Val(new), target)

    def assign_component(self, base, indices, value: Val, target: ast.AST) -> None:
        t = base.type if isinstance(base, Val) else None
        if not _aggregate(t):
            return super().assign_component(base, indices, value, target)
        if isinstance(t, T.MatrixType) and len(indices) == 1:
            row = self.coerce(value, vector(t.shape[1], t.dtype)).value
            new = base.value
            for c, index in enumerate(self.row_indices(t, indices[0])):
                new = self.write_flat(new, index, self.component(row, c))
        else:
            want = 1 if isinstance(t, T.VectorType) else 2
            if len(indices) != want:
                raise KernelError(f"{t!r} takes {want} indices here, got {len(indices)}")
            index = self.flat_index(t, indices, target)
            new = self.write_flat(base.value, index, self.coerce(value, t.dtype).value)
        self.assign(target.value, Val(new), target)

    def assign_attribute(self, target: ast.Attribute, value: Val) -> None:
        base = self.as_val(self.visit(target.value), target.value)
        t = base.type
        if isinstance(t, T.StructType):
            index = self.field_index(t, target.attr)
            field_type = t.fields[index][1]
            new = self.b.op(OpCode.INSERT, (base.value, self.coerce(value, field_type).value), t,
                            index)
        elif isinstance(t, T.VectorType) and t.kind == "transform" and target.attr in ("p", "q"):
            first, part = (0, vector(3, t.dtype)) if target.attr == "p" else (3, quaternion(t.dtype))
            v = self.coerce(value, part).value
            new = base.value
            for i in range(part.length):
                new = self.write_flat(new, first + i, self.component(v, i))
        elif isinstance(t, T.VectorType):
            index = self.axis(t, target.attr)
            new = self.write_flat(base.value, index, self.coerce(value, t.dtype).value)
        else:
            return super().assign_attribute(target, value)
        self.assign(target.value, Val(new), target)

    # ---- printing, len --------------------------------------------------------------------

    def format_value(self, v: Val, args: list) -> str:
        from kernelc.frontend.special import _PRINTF_CODES

        if not _aggregate(v.type):
            raise KernelError(f"print() cannot format a {v.type!r}")
        code = _PRINTF_CODES[v.type.dtype.name]
        for i in range(v.type.count):
            args.append(self.component(v.value, i))
        t = v.type
        # Warp's layouts: a vector `1 2 3 `, a matrix one such row per line, a quaternion
        # `0 0 0 1`, a transform `(1 2 3) (0 0 0 1)`.
        if isinstance(t, T.MatrixType):
            rows, cols = t.shape
            return "\n".join([(code + " ") * cols] * rows)
        if t.kind == "quat":
            return " ".join([code] * 4)
        if t.kind == "transform":
            return "(" + " ".join([code] * 3) + ") (" + " ".join([code] * 4) + ")"
        return (code + " ") * t.length

    def length_of(self, v: Val) -> Val:
        if isinstance(v.type, T.VectorType):
            n = v.type.length
        elif isinstance(v.type, T.MatrixType):
            n = v.type.shape[0]
        else:
            raise KernelError(f"len() is not defined for {v.type!r}")
        return Val(self.b.const(n, T.int32), const=n)

    def tuple_item(self, base: TupleVal, index: Val) -> Val:
        """`t[i]` with `i` known only at run time: a select over the items, which must then
        share one type (an index out of range reads the first item)."""
        items = [self.as_val(v, None) for v in base.items]
        items = [self.coerce(v, v.type) if v.weak else v for v in items]
        if not items or any(v.type != items[0].type for v in items):
            raise KernelError("a tuple indexed by a run-time value must hold items of one "
                              "type")
        if not (isinstance(index.type, T.ScalarType) and index.type.is_int):
            raise KernelError(f"a tuple index must be an integer, got {index.type!r}")
        out = items[0].value
        for k in range(1, len(items)):
            hit = self.b.op(OpCode.EQ, (index.value, self.b.const(k, index.type)), T.bool_)
            out = self.b.op(OpCode.SELECT, (hit, items[k].value, out), items[0].type)
        return Val(out)
