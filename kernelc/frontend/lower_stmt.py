"""Lowering of Python statements to structured IR."""

from __future__ import annotations

import ast
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError, WarpCodegenAttributeError, WarpCodegenTypeError
from kernelc.frontend import local_arrays
from kernelc.frontend.builder import Val
from kernelc.frontend.local_arrays import LocalArray
from kernelc.frontend.lower_expr import ARRAY_TYPES, BINOPS, ArrayView, PyObj, TupleVal
from kernelc.frontend.static_eval import is_static_call
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode
from kernelc.typevars import Constraint

KERNEL_RETURNS = ("kernels cannot return a value: write results to output arrays, and omit "
                  "the return annotation or write `-> None`")


class StmtLowering:
    """Mixin of FunctionLowerer: one visit_X per supported statement node."""

    def lower_block(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self.visit(stmt)

    def visit_Expr(self, node: ast.Expr):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.visit(node.value)

    def visit_Pass(self, node: ast.Pass):
        pass

    # ---- assignment -----------------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign):
        value = self.visit(node.value)
        for target in node.targets:
            self.assign(target, value, node)

    def visit_AnnAssign(self, node: ast.AnnAssign):
        if node.value is None:
            raise KernelError("a variable declaration needs a value")
        annotation = self.eval_annotation(node.annotation)
        value = self.as_val(self.visit(node.value), node.value)
        if isinstance(annotation, T.ScalarType) and isinstance(value.type, T.ScalarType):
            value = self.coerce(value, annotation) if value.weak else value
        if value.type != annotation:
            raise KernelError(f"value of type {value.type!r} assigned to a {annotation!r} variable")
        self.assign(node.target, value, node)

    def assign(self, target: ast.expr, value, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.assign_name(target.id, value, target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, TupleVal):
                raise KernelError("only tuples (a func's results, tid()) can be unpacked")
            if len(value.items) != len(target.elts):
                raise KernelError(
                    f"cannot unpack {len(value.items)} values into {len(target.elts)} targets"
                )
            for t, v in zip(target.elts, value.items):
                self.assign(t, v, node)
        elif isinstance(target, ast.Subscript):
            self.assign_subscript(target, self.as_val(value, node))
        elif isinstance(target, ast.Attribute):
            self.assign_attribute(target, self.as_val(value, node))
        else:
            raise KernelError(f"cannot assign to {type(target).__name__}")

    def assign_subscript(self, target: ast.Subscript, value: Val) -> None:
        base = self.visit(target.value)
        index_nodes = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        if (any(isinstance(n, ast.Slice) for n in index_nodes) and isinstance(base, Val)
                and isinstance(base.type, (T.VectorType, T.MatrixType))):
            return self.assign_slice(base, index_nodes, value, target)
        indices = tuple(self.index_value(n) for n in index_nodes)
        if isinstance(base, LocalArray):
            if base.direct and len(indices) == 1:
                return local_arrays.store(self, base, indices[0], value)
            base = local_arrays.as_array(self, base)
        if isinstance(base, Val) and isinstance(base.type, ARRAY_TYPES):
            base = ArrayView(base, ())
        if isinstance(base, ArrayView):
            full = base.indices + indices
            arr = base.array
            if len(full) != arr.type.ndim:
                raise KernelError(
                    f"a {arr.type.ndim}-d array needs {arr.type.ndim} indices, got {len(full)}"
                )
            value = self.coerce_store(value, arr.type.dtype)
            data, where = self.element_address(arr, full)
            self.b.append(ir.ArrayStore(self.b.loc, data, where, value.value))
            return
        self.assign_component(base, indices, value, target)

    def coerce_store(self, value: Val, dtype: T.Type) -> Val:
        if value.type != dtype and not value.weak:
            raise KernelError(f"cannot store a {value.type!r} value in an array of {dtype!r}")
        return self.coerce(value, dtype)

    def assign_component(self, base, indices, value: Val, target: ast.AST) -> None:
        raise KernelError("only arrays and local arrays support item assignment")

    def assign_attribute(self, target: ast.Attribute, value: Val) -> None:
        raise WarpCodegenAttributeError(f"cannot assign to attribute '{target.attr}'")

    def visit_AugAssign(self, node: ast.AugAssign):
        op = BINOPS.get(type(node.op))
        if op is None:
            raise KernelError(f"operator {type(node.op).__name__} is not supported in kernels")
        target = self.hoist_calls(node.target)
        if isinstance(target, ast.Subscript) and op in (OpCode.ADD, OpCode.SUB):
            base = self.visit(target.value)
            if isinstance(base, (ArrayView, Val)) and (
                isinstance(base, ArrayView) or isinstance(base.type, ARRAY_TYPES)
            ):
                self.atomic_update(base, target, op, node)
                return
        current = self.visit(target)
        result = self.binary(op, current, self.visit(node.value), node)
        self.assign(target, result, node)

    def hoist_calls(self, target: ast.expr) -> ast.expr:
        """`target` with each index that calls something evaluated once, into a hidden
        local: `a[f(i)].x += v` reads and writes the element, and must call `f` once (as
        Python and Warp do), not once per access."""
        if isinstance(target, ast.Attribute):
            inner = self.hoist_calls(target.value)
            return target if inner is target.value else ast.copy_location(
                ast.Attribute(inner, target.attr, target.ctx), target)
        if not isinstance(target, ast.Subscript):
            return target
        value = self.hoist_calls(target.value)
        parts = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        hoisted = []
        for part in parts:
            if any(isinstance(n, ast.Call) for n in ast.walk(part)):
                name = f"__kc_index_{id(part)}"
                self.assign_name(name, self.visit(part), part)
                part = ast.copy_location(ast.Name(name, ast.Load()), part)
            hoisted.append(part)
        index = (ast.copy_location(ast.Tuple(hoisted, ast.Load()), target.slice)
                 if isinstance(target.slice, ast.Tuple) else hoisted[0])
        return ast.copy_location(ast.Subscript(value, index, target.ctx), target)

    def atomic_update(self, base, target: ast.Subscript, op: OpCode, node: ast.AugAssign):
        """`a[i] += x` on an array is an atomic add, as in Warp."""
        view = base if isinstance(base, ArrayView) else ArrayView(base, ())
        index_nodes = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        indices = view.indices + tuple(self.index_value(n) for n in index_nodes)
        arr = view.array
        if len(indices) != arr.type.ndim:
            raise KernelError(
                f"a {arr.type.ndim}-d array needs {arr.type.ndim} indices, got {len(indices)}"
            )
        value = self.coerce_store(self.as_val(self.visit(node.value), node.value), arr.type.dtype)
        kind = "add" if op == OpCode.ADD else "sub"
        self.atomic(arr, indices, value, kind)

    def atomic(self, arr: Val, indices, value: Val, kind: str) -> Val:
        data, where = self.element_address(arr, tuple(indices))
        return Val(self.b.op(OpCode.ATOMIC, (data, *where, value.value), arr.type.dtype, kind))

    # ---- control flow ---------------------------------------------------------------------

    def visit_If(self, node: ast.If):
        cond = self.truth(self.visit(node.test), node.test)
        if cond.const is not None:  # e.g. `if kc.static(DEBUG):` or a module constant
            self.lower_block(node.body if cond.const else node.orelse)
            return
        with self.b.region() as then:
            self.lower_block(node.body)
        with self.b.region() as other:
            self.lower_block(node.orelse)
        self.b.loc = self.source.loc(node)
        self.b.append(ir.If(self.b.loc, cond.value, tuple(then), tuple(other)))

    def visit_For(self, node: ast.For):
        if node.orelse:
            raise KernelError("for ... else is not supported in kernels")
        call = node.iter
        reverse = self.reversed_range(call)
        if reverse is not None:
            call = reverse
        if self.is_query_loop(call):
            from kernelc.frontend.hash_grid_forms import lower_query_loop

            return lower_query_loop(self, node)
        if not (isinstance(call, ast.Call) and self.is_range(call.func)):
            from kernelc.frontend.mesh_forms import loop_lowering  # only for such loops

            lower_loop = loop_lowering(self, call)
            if lower_loop is not None:
                return lower_loop(self, node)
            raise KernelError("kernels can only loop over range(...) or a hash-grid, mesh or "
                              "BVH query")
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise KernelError("range() takes 1 to 3 positional arguments")
        bounds = [self.as_val(self.visit(a), a) for a in call.args]
        # A constant bool (`range(kc.static(flag))`) counts as the int literal 0 or 1, as in
        # Warp (and Python).
        bounds = [Val(self.b.const(int(b.const), T.int32), weak=True, const=int(b.const))
                  if b.type == T.bool_ and b.const is not None else b for b in bounds]
        for b in bounds:
            if not (isinstance(b.type, T.ScalarType) and b.type.is_int):
                raise KernelError(f"range() needs integers, got {b.type!r}")
        strong = {b.type for b in bounds if not b.weak}
        if len(strong) > 1:
            raise KernelError(f"range() arguments have different types: {sorted(map(repr, strong))}")
        t = strong.pop() if strong else max((b.type for b in bounds), key=lambda x: x.bits)
        vals = [self.coerce(b, t) for b in bounds]
        if len(vals) == 1:
            start, stop, step = Val(self.b.const(0, t), const=0), vals[0], \
                Val(self.b.const(1, t), const=1)
        elif len(vals) == 2:
            start, stop, step = vals[0], vals[1], Val(self.b.const(1, t), const=1)
        else:
            start, stop, step = vals
        if step.const == 0:
            raise KernelError("range() step must not be zero")
        if isinstance(node.target, ast.Name) and _static_reads(self.source.tree,
                                                               node.target.id):
            return self.unrolled_for(node, (start, stop, step), t, reverse is not None)
        if reverse is not None:
            start, stop, step = self.reversed_bounds(start, stop, step, t)
        var = self.b.new_value(t)
        self.prepare_loop(node.body)
        self.loop_depth += 1
        with self.b.region() as body:
            self.assign(node.target, Val(var), node.target)
            self.lower_block(node.body)
        self.loop_depth -= 1
        self.b.loc = self.source.loc(node)
        self.b.append(ir.For(self.b.loc, var, start.value, stop.value, step.value, tuple(body)))

    def unrolled_for(self, node: ast.For, bounds: tuple[Val, Val, Val], t: T.Type,
                     reverse: bool) -> None:
        """A loop whose variable `kc.static` reads: unrolled, as Warp unrolls it, so that
        each copy of the body sees the variable as a constant."""
        name = node.target.id
        known = tuple(b.const for b in bounds)
        if any(not isinstance(b, int) for b in known):
            raise KernelError(f"static() reads the loop variable '{name}', so the loop is "
                              f"unrolled, but its range is not known when compiling")
        values = range(*known)
        if reverse:
            values = values[::-1]
        if len(values) > _MAX_UNROLLED:
            raise KernelError(f"static() reads the loop variable '{name}', so the loop is "
                              f"unrolled, but it runs {len(values)} times (at most "
                              f"{_MAX_UNROLLED} can be unrolled)")
        if _exits(node.body):
            raise KernelError(f"static() reads the loop variable '{name}', so the loop is "
                              f"unrolled, and an unrolled loop cannot break or continue")
        for v in values:
            self.b.loc = self.source.loc(node.target)
            self.assign(node.target, Val(self.b.const(v, t), const=v), node.target)
            self.unrolled_values[name] = v
            self.lower_block(node.body)

    def visit_While(self, node: ast.While):
        if node.orelse:
            raise KernelError("while ... else is not supported in kernels")
        self.prepare_loop([*node.body, ast.Expr(node.test)])
        with self.b.region() as cond_body:
            cond = self.truth(self.visit(node.test), node.test)
        self.loop_depth += 1
        with self.b.region() as body:
            self.lower_block(node.body)
        self.loop_depth -= 1
        self.b.loc = self.source.loc(node)
        self.b.append(ir.While(self.b.loc, tuple(cond_body), cond.value, tuple(body)))

    def visit_Break(self, node: ast.Break):
        if self.loop_depth == 0:
            raise KernelError("'break' outside a loop")
        self.b.append(ir.Break(self.b.loc))

    def visit_Continue(self, node: ast.Continue):
        if self.loop_depth == 0:
            raise KernelError("'continue' outside a loop")
        self.b.append(ir.Continue(self.b.loc))

    def visit_Return(self, node: ast.Return):
        if self.is_kernel:
            if node.value is not None:
                raise WarpCodegenTypeError(KERNEL_RETURNS)
            self.b.append(ir.Return(self.b.loc))
            return
        values = () if node.value is None else self.visit(node.value)
        items = values.items if isinstance(values, TupleVal) else (
            () if values == () else (values,)
        )
        vals = [self.returned_value(v, k, node) for k, v in enumerate(items)]
        if self.return_types is None:
            self.return_types = tuple(
                (v.type if not v.weak else self.coerce(v, v.type).type) for v in vals
            )
        if len(vals) != len(self.return_types):
            raise KernelError(
                f"returns {len(vals)} values here but {len(self.return_types)} elsewhere"
            )
        if any(isinstance(t, Constraint) for t in self.return_types):
            # `-> kc.Float` (or a generic vector): the first return fixes the concrete type
            self.return_types = tuple(self.concrete_return(v, t)
                                      for v, t in zip(vals, self.return_types))
        out = []
        for v, t in zip(vals, self.return_types):
            if v.type != t and not v.weak:
                raise KernelError(self.return_mismatch(v.type, t))
            out.append(self.coerce(v, t).value)
        self.b.append(ir.Return(self.b.loc, (*out, *self.ref_values())))

    def return_mismatch(self, got: T.Type, expected: T.Type) -> str:
        """Why a returned `got` is refused: against the return annotation in Warp's
        words, else against an earlier `return`."""
        annotation = self.source.tree.returns
        if annotation is None or isinstance(annotation, ast.Tuple):
            return f"returns {got!r} here but {expected!r} elsewhere"
        written = ast.unparse(annotation) if isinstance(annotation, ast.Name) else repr(expected)
        return (f"The function `{self.source.tree.name}` has its return type annotated as "
                f"`{written}` but the code returns a value of type `{got!r}`.")

    def returned_value(self, v: Any, k: int, node: ast.Return) -> Val:
        """The `k`-th returned value; a local array is returned by value, as a fixedarray."""
        if not isinstance(v, LocalArray):
            return self.as_val(v, node)
        declared = self.return_types[k] if self.return_types and k < len(self.return_types) \
            else None
        value = local_arrays.returned(self, v)
        if declared is not None and declared != value.type and not isinstance(declared, Constraint):
            raise KernelError(f"returns a local array, which a func returns by value, but its "
                              f"return annotation is {declared!r}; annotate it "
                              f"kc.fixedarray(shape={v.shape}, dtype=...)")
        return value

    def concrete_return(self, v: Val, t: T.Type) -> T.Type:
        if not isinstance(t, Constraint):
            return t
        got = self.coerce(v, v.type).type if v.weak else v.type
        if v.weak and not t.admits(got) and t.admits(T.float32):
            got = T.float32  # a bare literal returned as `-> kc.Float`
        if not t.admits(got):
            raise KernelError(f"returns {got!r} but the return annotation is {t!r}")
        return got

    def visit_Assert(self, node: ast.Assert):
        cond = self.truth(self.visit(node.test), node.test)
        text = ast.unparse(node.test)
        self.b.append(ir.Assert(self.b.loc, cond.value, text))

    def visit_Global(self, node: ast.Global):
        raise KernelError("'global' is not supported in kernels")

    def visit_Nonlocal(self, node: ast.Nonlocal):
        raise KernelError("'nonlocal' is not supported in kernels")

    def reversed_range(self, iterable: ast.expr) -> ast.Call | None:
        """The `range(...)` call of `reversed(range(...))`, else None."""
        if not (isinstance(iterable, ast.Call) and len(iterable.args) == 1
                and not iterable.keywords and isinstance(iterable.args[0], ast.Call)):
            return None
        callee = self.visit(iterable.func)
        if not (isinstance(callee, PyObj) and callee.obj is reversed):
            return None
        if not self.is_range(iterable.args[0].func):
            raise KernelError("kernels can only loop over reversed(range(...))")
        return iterable.args[0]

    def reversed_bounds(self, start: Val, stop: Val, step: Val, t: T.ScalarType
                        ) -> tuple[Val, Val, Val]:
        """The bounds of `range(start, stop, step)` backwards: from its last element down
        to `start` (`range(last, start - step, -step)`), empty when the range is."""
        b = self.b

        def op(code: OpCode, *args: Any, rt: T.Type = t) -> Any:
            return b.op(code, args, rt)

        zero, one = b.const(0, t), b.const(1, t)
        up = op(OpCode.GT, step.value, zero, rt=T.bool_)
        # The element count, for either sign of the step: ceil(span / |step|) when the
        # span has the step's sign, else 0.
        span = op(OpCode.SELECT, up, op(OpCode.SUB, stop.value, start.value),
                  op(OpCode.SUB, start.value, stop.value), rt=t)
        size = op(OpCode.SELECT, up, step.value, op(OpCode.NEG, step.value), rt=t)
        count = op(OpCode.DIV, op(OpCode.SUB, op(OpCode.ADD, span, size), one), size)
        count = op(OpCode.SELECT, op(OpCode.GT, span, zero, rt=T.bool_), count, zero, rt=t)
        last = op(OpCode.ADD, start.value, op(OpCode.MUL, op(OpCode.SUB, count, one), step.value))
        return (Val(last), Val(op(OpCode.SUB, start.value, step.value)),
                Val(op(OpCode.NEG, step.value)))

    def is_range(self, func_node: ast.expr) -> bool:
        callee = self.visit(func_node)
        return isinstance(callee, PyObj) and callee.obj is range

    def is_query_loop(self, iterable: ast.expr) -> bool:
        """`for i in hash_grid_query(...)`, or `for i in q` with `q` a query variable."""
        if isinstance(iterable, ast.Call):
            callee = self.visit(iterable.func)
            return isinstance(callee, PyObj) and getattr(
                callee.obj, "_kc_special", None) == "hash_grid_query"
        if isinstance(iterable, ast.Name) and iterable.id in self.names:
            from kernelc.frontend.hash_grid_forms import query_slot

            return query_slot(self, iterable) is not None
        return False


_MAX_UNROLLED = 4096


def _static_reads(tree: ast.AST, name: str) -> bool:
    """Whether a `static(...)` expression in `tree` reads the variable `name`."""
    for node in ast.walk(tree):
        if is_static_call(node) and node.args:
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.args[0])):
                return True
    return False


def _exits(body: list[ast.stmt]) -> bool:
    """Whether `body` breaks or continues its own loop (not a loop nested in it)."""
    for stmt in body:
        for node in _walk_same_loop(stmt):
            if isinstance(node, (ast.Break, ast.Continue)):
                return True
    return False


def _walk_same_loop(node: ast.AST):
    yield node
    if isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
        return
    for child in ast.iter_child_nodes(node):
        yield from _walk_same_loop(child)
