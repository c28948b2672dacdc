"""Lowering of Python expressions to typed IR values."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.builtins import BUILTINS, Builtin, Expansion, array_index, indexed_array
from kernelc.builtins.registry import unify
from kernelc.errors import KernelError, WarpCodegenAttributeError, WarpCodegenTypeError
from kernelc.frontend import host_values, local_arrays, pointer_arrays
from kernelc.frontend.builder import Val
from kernelc.frontend.local_arrays import LocalArray
from kernelc.ir import semantics
from kernelc.ir.nodes import BINARY_OPS, OpCode

BINOPS = {
    ast.Add: OpCode.ADD, ast.Sub: OpCode.SUB, ast.Mult: OpCode.MUL, ast.Div: OpCode.DIV,
    ast.FloorDiv: OpCode.FLOORDIV, ast.Mod: OpCode.MOD, ast.Pow: OpCode.POW,
    ast.BitAnd: OpCode.BITAND, ast.BitOr: OpCode.BITOR, ast.BitXor: OpCode.BITXOR,
    ast.LShift: OpCode.SHL, ast.RShift: OpCode.SHR,
}
CMPOPS = {
    ast.Eq: OpCode.EQ, ast.NotEq: OpCode.NE, ast.Lt: OpCode.LT, ast.LtE: OpCode.LE,
    ast.Gt: OpCode.GT, ast.GtE: OpCode.GE,
}
# Names Warp's kernels spell `wp.float(x)`, `wp.print(x)`, ... that its module does not have
_CAST_NAMES = {"float": float, "int": int, "bool": bool, "print": print}
_INT_ONLY = {OpCode.BITAND, OpCode.BITOR, OpCode.BITXOR, OpCode.SHL, OpCode.SHR}
_PY_BUILTIN_ALIASES = {min: "min", max: "max", abs: "abs", pow: "pow", round: "round"}


@dataclass(frozen=True)
class PyObj:
    """A compile-time Python object (a module, a builtin, a type, a func, a constant)."""

    obj: Any


@dataclass(frozen=True)
class TupleVal:
    items: tuple[Any, ...]


@dataclass(frozen=True)
class ArrayView:
    """An array indexed with fewer indices than it has dimensions (`a[i]` of a 2-d array)."""

    array: Val
    indices: tuple[Val, ...]


@dataclass(frozen=True)
class ShapeRef:
    """`a.shape` (of a view `a[i]`: `skip` is how many leading dimensions it indexes)."""

    array: Val
    skip: int = 0


# Values that take `a[i, ...]`, `a.shape` and atomics: arrays and indexed arrays.
ARRAY_TYPES = (T.ArrayType, T.IndexedArrayType)


class ExprLowering:
    """Mixin of FunctionLowerer: one visit_X per supported expression node."""

    # ---- leaves ---------------------------------------------------------------------------

    def visit_Lowered(self, node: Any):
        return node.value  # an argument lowered already (`unpack.Lowered`)

    def visit_Constant(self, node: ast.Constant):
        return self.from_python(node.value, node)

    def visit_Name(self, node: ast.Name):
        return self.read_name(node.id, node)

    def visit_Tuple(self, node: ast.Tuple):
        return TupleVal(tuple(self.visit(e) for e in node.elts))

    def from_python(self, value: Any, node: ast.AST):
        """A Python value met in a kernel: literals become (weak) constants."""
        if isinstance(value, np.generic) and not isinstance(value, np.void):
            # First: np.float64 (what `kc.float64(1.0)` gives on the host) is also a Python
            # float, but keeps its own type, as Warp's float64 scalars do.
            t = T.number_type(value)
            return Val(self.b.const(value.item(), t), const=value.item())
        if isinstance(value, bool):
            return Val(self.b.const(value, T.bool_), const=value)
        if isinstance(value, int):
            t = T.int32 if -(2**31) <= value < 2**31 else T.int64
            return Val(self.b.const(value, t), weak=True, const=value)
        if isinstance(value, float):
            return Val(self.b.const(value, T.float32), weak=True, const=value)
        if isinstance(value, tuple):
            return TupleVal(tuple(self.from_python(v, node) for v in value))
        if isinstance(value, np.ndarray):
            kc_type = getattr(value, "_kc_type", None)  # a host vector, matrix, quat, ...
            if isinstance(kc_type, (T.VectorType, T.MatrixType)):
                return Val(self.constant_aggregate(kc_type, value))
        host_values.refuse_outside_array(value, node)
        return PyObj(value)

    def constant_aggregate(self, t: T.VectorType | T.MatrixType, value: np.ndarray):
        """A host vector/matrix value (a global, `kc.constant` or closure) folded in."""
        return host_values.constant_aggregate(self.b, t, value)

    # ---- attributes and subscripts --------------------------------------------------------

    def visit_Attribute(self, node: ast.Attribute):
        base = self.visit(node.value)
        if isinstance(base, LocalArray):
            base = local_arrays.as_array(self, base)
        if isinstance(base, PyObj):
            if getattr(base.obj, "__name__", None) == "kernelc" and node.attr in _CAST_NAMES:
                # Warp's kernels also spell the `float(x)`, `int(x)`, `bool(x)` casts
                # `wp.float(x)`, ... (names its module does not have outside kernels).
                return PyObj(_CAST_NAMES[node.attr])
            if not hasattr(base.obj, node.attr):
                raise WarpCodegenAttributeError(f"{_describe(base.obj)} has no attribute '{node.attr}'")
            return self.from_python(getattr(base.obj, node.attr), node)
        view = ArrayView(base, ()) if isinstance(base, Val) and \
            isinstance(base.type, ARRAY_TYPES) else base  # `a`, or a view `a[i]`
        if isinstance(view, ArrayView) and node.attr == "ptr":
            return pointer_arrays.address(self, self.as_val(view, node))
        if isinstance(view, ArrayView) and node.attr in ("shape", "dtype", "ndim"):
            if node.attr == "dtype":  # `a.dtype(x)` converts, as in Warp's generic code
                return PyObj(view.array.type.dtype)
            if node.attr == "ndim":
                ndim = view.array.type.ndim - len(view.indices)
                return Val(self.b.const(ndim, T.int32), const=ndim)
            return ShapeRef(view.array, len(view.indices))
        return self.value_attribute(base, node.attr, node)

    def value_attribute(self, base: Any, attr: str, node: ast.AST):
        t = base.type if isinstance(base, Val) else type(base).__name__
        raise WarpCodegenAttributeError(f"a value of type {t!r} has no attribute '{attr}'")

    def visit_Subscript(self, node: ast.Subscript):
        return self.subscript(self.visit(node.value), node)

    def subscript(self, base: Any, node: ast.Subscript):
        """`base[...]` with `base` (node.value) already lowered."""
        index_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if isinstance(base, PyObj):  # a Python container of constants, indexed at compile time
            key = self.visit(node.slice)
            if isinstance(key, PyObj):
                key = key.obj
            elif isinstance(key, Val) and key.const is not None:
                key = key.const
            else:
                raise KernelError("a Python object can only be indexed by a constant")
            try:
                return self.from_python(base.obj[key], node)
            except (KeyError, IndexError, TypeError) as err:
                raise KernelError(f"indexing {_describe(base.obj)} failed: {err!r}") from None
        if isinstance(base, TupleVal) and len(index_nodes) == 1:
            index = self.visit(index_nodes[0])
            if not (isinstance(index, Val) and isinstance(index.const, int)):
                return self.tuple_item(base, self.as_val(index, index_nodes[0]))
        if isinstance(base, (ShapeRef, TupleVal)):
            items = base if isinstance(base, TupleVal) else None
            axis = self.static_int(index_nodes[0], "index")
            if items is not None:
                if not -len(items.items) <= axis < len(items.items):
                    raise KernelError(f"tuple index {axis} out of range")
                return items.items[axis]
            from kernelc.frontend.array_views import shape_entry

            return shape_entry(self, base, axis)
        if isinstance(base, LocalArray):
            if base.direct and len(index_nodes) == 1 and not isinstance(index_nodes[0], ast.Slice):
                return local_arrays.load(self, base, self.index_value(index_nodes[0]))
            base = local_arrays.as_array(self, base)
        if any(isinstance(n, ast.Slice) for n in index_nodes):
            return self.sliced(base, index_nodes)
        indices = tuple(self.index_value(n) for n in index_nodes)
        if isinstance(base, Val) and isinstance(base.type, ARRAY_TYPES):
            base = ArrayView(base, ())
        if isinstance(base, ArrayView):
            return self.index_array(base, indices)
        return self.value_subscript(base, indices, node)

    def sliced(self, base: Any, index_nodes: list[ast.expr]) -> Val:
        """`a[1:n]`, `a[i, ::2]`: a view of an array (`array_views.py`)."""
        from kernelc.frontend.array_views import array_view, composite_slice

        if isinstance(base, Val) and isinstance(base.type, (T.VectorType, T.MatrixType)):
            return composite_slice(self, base, index_nodes)
        if isinstance(base, Val) and isinstance(base.type, ARRAY_TYPES):
            base = ArrayView(base, ())
        if not isinstance(base, ArrayView):
            raise KernelError("only arrays, vectors and matrices can be sliced in kernels")
        parts = [n if isinstance(n, ast.Slice) else self.index_value(n) for n in index_nodes]
        return array_view(self, base.array, [*base.indices, *parts])

    def value_subscript(self, base: Any, indices: tuple[Val, ...], node: ast.AST):
        t = base.type if isinstance(base, Val) else type(base).__name__
        raise KernelError(f"a value of type {t!r} cannot be indexed")

    def index_array(self, view: ArrayView, indices: tuple[Val, ...]):
        full = view.indices + indices
        ndim = view.array.type.ndim
        if len(full) > ndim:
            raise KernelError(f"too many indices ({len(full)}) for a {ndim}-d array")
        if len(full) < ndim:
            return ArrayView(view.array, full)
        data, where = self.element_address(view.array, full)
        return Val(self.b.op(OpCode.ARRAY_LOAD, (data, *where), view.array.type.dtype))

    def element_address(self, arr: Val, indices: tuple[Val, ...]):
        """(plain array, its indices) of element `arr[indices]`: an indexed array's element
        is looked up through its index arrays (`builtins/indexed_array.py`)."""
        if isinstance(arr.type, T.IndexedArrayType):
            return indexed_array.element(self.b, arr.value, tuple(i.value for i in indices))
        return arr.value, array_index.wrapped(self.b, arr.value, [i.value for i in indices])

    def array_dim(self, arr: Val, axis: int):
        """The int32 size of dimension `axis` of an array or indexed array."""
        if isinstance(arr.type, T.IndexedArrayType):
            return indexed_array.dim_size(self.b, arr.value, axis)
        return self.b.op(OpCode.ARRAY_SHAPE, (arr.value,), T.int32, axis)

    def index_value(self, node: ast.AST) -> Val:
        v = self.as_val(self.visit(node), node)
        if not (isinstance(v.type, T.ScalarType) and v.type.is_int):
            raise KernelError(f"indices must be integers, got {v.type!r}")
        return v

    def static_int(self, node: ast.AST, what: str) -> int:
        v = self.visit(node)
        if isinstance(v, Val) and v.const is not None and isinstance(v.const, int):
            return v.const
        raise KernelError(f"the {what} must be a constant integer here")

    # ---- operators ------------------------------------------------------------------------

    def visit_BinOp(self, node: ast.BinOp):
        op = BINOPS.get(type(node.op))
        if op is None:
            raise KernelError(f"operator {type(node.op).__name__} is not supported in kernels")
        a = self.visit(node.left)
        b = self.visit(node.right)
        return self.binary(op, a, b, node)

    def binary(self, op: OpCode, a: Any, b: Any, node: ast.AST) -> Val:
        a, b = self.as_val(a, node), self.as_val(b, node)
        if not (isinstance(a.type, T.ScalarType) and isinstance(b.type, T.ScalarType)):
            return self.nonscalar_binary(op, a, b, node)
        t = self.common_type(a, b)
        if op in _INT_ONLY and t.is_float:
            raise KernelError(f"operator '{_OP_SYMBOL[op]}' needs integers, got {t!r}")
        if t.is_bool and op not in (OpCode.BITAND, OpCode.BITOR, OpCode.BITXOR):
            raise KernelError(f"operator '{_OP_SYMBOL[op]}' is not defined for bool")
        if op == OpCode.POW and not t.is_float:
            raise KernelError("'**' needs float operands; cast with float(x)")
        if a.const is not None and b.const is not None and a.weak and b.weak:
            folded = semantics.eval_binary(op, semantics.to_type(a.const, t),
                                           semantics.to_type(b.const, t), t)
            return Val(self.b.const(folded, t), weak=True, const=folded)
        result = self.b.op(op, (self.coerce(a, t).value, self.coerce(b, t).value), t)
        return Val(result, weak=a.weak and b.weak)

    def nonscalar_binary(self, op: OpCode, a: Val, b: Val, node: ast.AST) -> Val:
        raise KernelError(
            f"operator '{_OP_SYMBOL[op]}' is not defined for {a.type!r} and {b.type!r}"
        )

    def common_type(self, a: Val, b: Val) -> T.ScalarType:
        """The type two operands meet in; the rule is the builtin table's `unify`."""
        try:
            return unify((a.type, b.type), (a.weak, b.weak))
        except TypeError as err:
            raise KernelError(str(err)) from None

    def coerce(self, v: Val, t: T.Type) -> Val:
        """`v` as type `t`: literals convert silently; typed values must already match."""
        if v.type == t:
            return v
        if not v.weak or (isinstance(v.type, T.ScalarType) and not isinstance(t, T.ScalarType)):
            raise KernelError(f"expected a value of type {t!r}, got {v.type!r}")
        if v.const is not None and isinstance(t, T.ScalarType):
            c = semantics.to_type(v.const, t)
            return Val(self.b.const(c, t), weak=True, const=c)
        return Val(self.b.cast(v.value, t), weak=True)

    def visit_UnaryOp(self, node: ast.UnaryOp):
        return self.unary(node.op, self.visit(node.operand), node)

    def unary(self, op: ast.unaryop, v: Any, node: ast.AST):
        """Unary operator `op` applied to the lowered operand `v`."""
        v = self.as_val(v, node)
        if isinstance(op, ast.Not):
            return Val(self.b.op(OpCode.NOT, (self.truth(v, node).value,), T.bool_))
        if isinstance(op, ast.UAdd):
            return v
        if not isinstance(v.type, T.ScalarType):
            return self.nonscalar_unary(op, v, node)
        if isinstance(op, ast.USub):
            if v.type.is_bool:
                raise KernelError("unary '-' is not defined for bool")
            opcode = OpCode.NEG
        else:
            if not v.type.is_int:
                raise KernelError(f"'~' needs an integer, got {v.type!r}")
            opcode = OpCode.INVERT
        if v.const is not None:
            if v.weak and isinstance(v.const, float) and opcode == OpCode.NEG:
                # A negative literal keeps Python's precision until it meets a type, as
                # in Warp: `float64(-0.1)` is exactly -0.1.
                return Val(self.b.const(-v.const, v.type), weak=True, const=-v.const)
            folded = semantics.eval_unary(opcode, v.const, v.type)
            return Val(self.b.const(folded, v.type), weak=v.weak, const=folded)
        if opcode == OpCode.NEG and v.type.is_float:
            # Warp negates a float as 0 - x, so -(+0.0) is +0.0, not -0.0.
            zero = self.b.const(0.0, v.type)
            return Val(self.b.op(OpCode.SUB, (zero, v.value), v.type), weak=v.weak)
        return Val(self.b.op(opcode, (v.value,), v.type), weak=v.weak)

    def nonscalar_unary(self, op: ast.unaryop, v: Val, node: ast.AST) -> Val:
        raise KernelError(f"unary operator is not defined for {v.type!r}")

    def truth(self, v: Any, node: ast.AST) -> Val:
        v = self.as_val(v, node)
        if v.type == T.bool_:
            return v
        if isinstance(v.type, T.ArrayType):
            return Val(host_values.array_truth(self.b, v.value, v.type.ndim))
        if not isinstance(v.type, T.ScalarType):
            raise KernelError(f"a value of type {v.type!r} cannot be used as a condition")
        if v.const is not None:
            return Val(self.b.const(bool(v.const), T.bool_), const=bool(v.const))
        zero = self.b.const(0, v.type)
        return Val(self.b.op(OpCode.NE, (v.value, zero), T.bool_))

    def visit_Compare(self, node: ast.Compare):
        left = self.visit(node.left)
        pairs = list(zip(node.ops, node.comparators))
        first_op, first_right = pairs[0]
        right = self.visit(first_right)
        result = self.compare(first_op, left, right, node)
        if len(pairs) == 1:
            return result
        # a < b < c: later comparisons run only while earlier ones hold; b is evaluated once.
        flag = self.b.new_slot("cmp", T.bool_)
        self.b.store(flag, result.value)
        self.chain_compare(flag, result, right, pairs[1:], node)
        return Val(self.b.load(flag))

    def chain_compare(self, flag, cond: Val, left, pairs, node) -> None:
        from kernelc.ir.nodes import If

        with self.b.region() as then:
            op, right_node = pairs[0]
            right = self.visit(right_node)
            c = self.compare(op, left, right, node)
            self.b.store(flag, c.value)
            if len(pairs) > 1:
                self.chain_compare(flag, c, right, pairs[1:], node)
        self.b.append(If(self.b.loc, cond.value, tuple(then)))

    def compare(self, op: ast.cmpop, a: Any, b: Any, node: ast.AST) -> Val:
        opcode = CMPOPS.get(type(op))
        if opcode is None:
            raise KernelError(f"comparison '{type(op).__name__}' is not supported in kernels")
        a, b = self.as_val(a, node), self.as_val(b, node)
        if not (isinstance(a.type, T.ScalarType) and isinstance(b.type, T.ScalarType)):
            return self.nonscalar_compare(opcode, a, b, node)
        if a.weak or b.weak or a.type == b.type:
            t = self.common_type(a, b)
            args = (self.coerce(a, t).value, self.coerce(b, t).value)
        elif T.bfloat16 in (a.type, b.type):  # (Warp's C++ finds such a comparison ambiguous)
            raise KernelError(f"cannot compare {a.type!r} with {b.type!r}; cast one to the "
                              f"other's type first, e.g. {a.type!r}(x)")
        else:
            # Two typed scalars of different types compare as in C++ (Warp compiles the
            # comparison as written): float beats int, wider beats narrower, unsigned wins
            # a tie of width. The comparison itself cannot overflow, so this mixing is safe.
            t = comparison_type(a.type, b.type)
            args = tuple(x.value if x.type == t else self.b.cast(x.value, t) for x in (a, b))
        return Val(self.b.op(opcode, args, T.bool_))

    def nonscalar_compare(self, op: OpCode, a: Val, b: Val, node: ast.AST) -> Val:
        raise KernelError(f"cannot compare {a.type!r} and {b.type!r}")

    def visit_BoolOp(self, node: ast.BoolOp):
        from kernelc.ir.nodes import If

        is_and = isinstance(node.op, ast.And)
        flag = self.b.new_slot("and" if is_and else "or", T.bool_)
        first = self.truth(self.visit(node.values[0]), node.values[0])
        self.b.store(flag, first.value)

        def rest(cond: Val, values: list[ast.expr]) -> None:
            with self.b.region() as region:
                v = self.truth(self.visit(values[0]), values[0])
                self.b.store(flag, v.value)
                if len(values) > 1:
                    rest(v, values[1:])
            body = tuple(region)
            stmt = If(self.b.loc, cond.value, body) if is_and else If(self.b.loc, cond.value, (), body)
            self.b.append(stmt)

        rest(first, node.values[1:])
        return Val(self.b.load(flag))

    def visit_IfExp(self, node: ast.IfExp):
        from kernelc.ir.nodes import If

        cond = self.truth(self.visit(node.test), node.test)
        if cond.const is not None:  # a compile-time condition picks one side only
            return self.visit(node.body if cond.const else node.orelse)
        with self.b.region() as then:
            a = self.as_val(self.visit(node.body), node.body)
        with self.b.region() as other:
            b = self.as_val(self.visit(node.orelse), node.orelse)
        if isinstance(a.type, T.ScalarType) and isinstance(b.type, T.ScalarType):
            t = self.common_type(a, b)
        elif a.type == b.type:
            t = a.type
        else:
            raise WarpCodegenTypeError(f"the two sides have different types ({a.type!r}, {b.type!r})")
        slot = self.b.new_slot("ifexp", t)
        for region, v in ((then, a), (other, b)):
            with self.b.reopen(region):
                self.b.store(slot, self.coerce(v, t).value)
        self.b.append(If(self.b.loc, cond.value, tuple(then), tuple(other)))
        return Val(self.b.load(slot), weak=a.weak and b.weak)

    # ---- calls ----------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call):
        if any(isinstance(a, ast.Starred) for a in node.args):
            from kernelc.frontend.unpack import expand_starred

            node = expand_starred(self, node)
        callee = self.visit(node.func)
        if not isinstance(callee, PyObj):
            raise KernelError("this value is not callable")
        obj = callee.obj
        special = self.special_form(obj)
        if special is not None:
            return special(self, node)
        if any(k.arg is None for k in node.keywords):
            raise KernelError("'**' unpacking is not supported in kernels")
        if obj in _PY_BUILTIN_ALIASES and not node.keywords:
            obj = BUILTINS[_PY_BUILTIN_ALIASES[obj]]
        if isinstance(obj, Builtin):
            try:
                arg_nodes = obj.bind(node.args, {k.arg: k.value for k in node.keywords})
            except TypeError as err:
                raise KernelError(str(err)) from None
            return self.call_builtin(obj, arg_nodes, node)
        target = T.as_type(obj)
        if target is not None and not isinstance(target, T.ArrayType):
            if node.keywords and not isinstance(target, T.StructType) and not (
                    isinstance(target, T.VectorType) and target.kind == "transform"):
                raise KernelError(f"keyword arguments are not supported when calling "
                                  f"{_describe(obj)}")
            return self.construct(target, node)
        return self.call_other(obj, node)

    def call_other(self, obj: Any, node: ast.Call):
        """Calls of anything else: @func calls (FunctionLowerer) may pass keywords."""
        if host_values.is_array_class(obj, "array"):
            return pointer_arrays.array_at(self, node)
        host_values.refuse_array_class(obj)
        raise KernelError(f"calling {_describe(obj)} is not supported in kernels")

    def construct(self, target: T.Type, node: ast.Call):
        if not isinstance(target, T.ScalarType):
            raise KernelError(f"cannot construct {target!r} here")
        if len(node.args) != 1:
            raise KernelError(f"{target!r}() takes exactly one argument")
        v = self.as_val(self.visit(node.args[0]), node.args[0])
        return self.cast(v, target)

    def cast(self, v: Val, t: T.ScalarType) -> Val:
        if not isinstance(v.type, T.ScalarType):
            raise KernelError(f"cannot convert {v.type!r} to {t!r}")
        if v.const is not None:
            c = semantics.to_type(v.const, t)
            return Val(self.b.const(c, t), const=c)
        if t.is_bool:
            return self.truth(v, None)
        return Val(self.b.cast(v.value, t))

    def call_builtin(self, builtin: Builtin, arg_nodes: list[ast.expr], node: ast.AST) -> Any:
        args = [self.visit(a) for a in arg_nodes]
        return self.apply_builtin(builtin, args, arg_nodes, node)

    def apply_builtin(self, builtin: Builtin, args: list, arg_nodes: list, node: ast.AST):
        overload = builtin.overload_for(len(args))
        if overload is None:
            sigs = " or ".join(builtin.signatures())
            raise KernelError(
                f"{builtin.name}() takes {_plural(builtin)} ({len(args)} given): {sigs}"
            )
        vals = [self.as_val(a, n) for a, n in zip(args, arg_nodes or [node] * len(args))]
        try:
            params, result = overload.rule(tuple(v.type for v in vals), tuple(v.weak for v in vals))
        except TypeError as err:
            raise KernelError(f"{builtin.name}(): {err}") from None
        coerced = [self.coerce(v, p).value for v, p in zip(vals, params)]
        if overload.expand is None:
            return Val(self.b.op(OpCode.CALL, coerced, result, overload.key))
        out = overload.expand(self.b, *coerced)
        if isinstance(out, Expansion):
            for position, new_value in out.writeback.items():
                self.write_back(arg_nodes[position] if arg_nodes else None, new_value, builtin)
            out = out.value
        if out is None:
            return PyObj(None)
        if isinstance(out, tuple):  # several results (transform_decompose, ...): unpack them
            return TupleVal(tuple(Val(v) for v in out))
        return Val(out, weak=all(v.weak for v in vals) and bool(vals) and result == vals[0].type)

    def write_back(self, node: ast.AST | None, value, builtin: Builtin) -> None:
        if not isinstance(node, ast.Name):
            raise KernelError(f"{builtin.name}() needs a variable as its state argument")
        self.assign_name(node.id, Val(value), node)

    # ---- helpers --------------------------------------------------------------------------

    def as_val(self, v: Any, node: ast.AST | None) -> Val:
        if isinstance(v, Val):
            return v
        if isinstance(v, PyObj):
            if v.obj is None:
                raise KernelError("this expression has no value")
            kc_type = getattr(v.obj, "_kc_type", None)
            if isinstance(kc_type, T.StructType) and not isinstance(v.obj, type):
                # A host struct instance used whole (`s = kc.static(make_s())`): a constant.
                return Val(host_values.constant_struct(self.b, kc_type, v.obj))
            raise KernelError(f"{_describe(v.obj)} cannot be used as a value in a kernel")
        if isinstance(v, ArrayView) and isinstance(v.array.type, T.ArrayType):
            from kernelc.frontend.array_views import array_view

            return array_view(self, v.array, list(v.indices))  # `a[i]` of a 2-d array: a row
        if isinstance(v, ArrayView):
            raise KernelError(
                f"a {v.array.type.ndim}-d array needs {v.array.type.ndim} indices here, "
                f"got {len(v.indices)}"
            )
        if isinstance(v, TupleVal):
            raise KernelError("a tuple cannot be used as a single value; unpack it")
        if isinstance(v, ShapeRef):
            raise KernelError("use a.shape[k] to read one dimension")
        if isinstance(v, LocalArray):
            return local_arrays.as_array(self, v)
        raise KernelError(f"unexpected value {v!r}")


_OP_SYMBOL = {
    OpCode.ADD: "+", OpCode.SUB: "-", OpCode.MUL: "*", OpCode.DIV: "/", OpCode.FLOORDIV: "//",
    OpCode.MOD: "%", OpCode.POW: "**", OpCode.BITAND: "&", OpCode.BITOR: "|",
    OpCode.BITXOR: "^", OpCode.SHL: "<<", OpCode.SHR: ">>", OpCode.EQ: "==", OpCode.NE: "!=",
    OpCode.LT: "<", OpCode.LE: "<=", OpCode.GT: ">", OpCode.GE: ">=",
}
assert set(BINARY_OPS) <= set(_OP_SYMBOL)


def _describe(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if name:
        return f"'{name}'"
    return f"a {type(obj).__name__} object"


def _plural(builtin: Builtin) -> str:
    counts = sorted({len(o.params) for o in builtin.overloads})
    text = " or ".join(str(c) for c in counts)
    return f"{text} argument" + ("" if counts == [1] else "s")


def comparison_type(a: T.ScalarType, b: T.ScalarType) -> T.ScalarType:
    """The type C++'s usual arithmetic conversions give `a < b` (float16 counts as float32,
    as Warp's half converts to float)."""
    if a.is_float or b.is_float:
        floats = [t for t in (a, b) if t.is_float]
        return max(floats + [T.float32], key=lambda t: t.bits)

    def promoted(t: T.ScalarType) -> T.ScalarType:
        return T.int32 if t.bits < 32 else t  # bool, 8- and 16-bit ints become int

    a, b = promoted(a), promoted(b)
    if a == b:
        return a
    if a.is_signed == b.is_signed:
        return max(a, b, key=lambda t: t.bits)
    signed, unsigned = (a, b) if a.is_signed else (b, a)
    if unsigned.bits >= signed.bits:
        return unsigned
    return signed  # int64 holds every uint32

