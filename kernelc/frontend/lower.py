"""AST -> IR for one kernel or func: names, the error choke point, funcs calling funcs."""

from __future__ import annotations

import ast
import functools
import typing
from dataclasses import dataclass, field
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError, Loc, WarpCodegenKeyError, WarpCodegenTypeError
from kernelc.frontend import literal_locals, local_arrays, refs
from kernelc.frontend.builder import IRBuilder, StorageHandle, Val
from kernelc.frontend.construct import ConstructLowering
from kernelc.frontend.func_values import FunctionArg, FunctionValueType, function_arg
from kernelc.frontend.local_arrays import LocalArray
from kernelc.frontend.lower_aggregate import AggregateLowering
from kernelc.frontend.lower_expr import ArrayView, ExprLowering, PyObj, TupleVal
from kernelc.frontend.lower_stmt import StmtLowering
from kernelc.frontend.lower_tile import TileLowering
from kernelc.frontend.rebinding import RebindingLowering
from kernelc.frontend.source import Source
from kernelc.frontend.tile_value import Tile
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


@dataclass
class CompileContext:
    """State shared by the kernel and every func lowered for it."""

    kernel_name: str
    funcs: list[ir.Function] = field(default_factory=list)
    _done: dict[tuple, ir.Function] = field(default_factory=dict)
    _in_progress: list[tuple] = field(default_factory=list)
    _next_id: int = 0  # unique IR names, also for same-named funcs lowered inside each other
    autodiff: Any = None  # the adjoints made for `kc.grad(f)(...)` calls (autodiff.adjoint)
    # func name -> (its `@kc.func_grad` gradient lowered, the parameters it differentiates,
    # the array parameters whose gradient arrays it adds into)
    custom_adjoints: dict[str, tuple[ir.Function, tuple[int, ...], tuple[int, ...]]] = field(
        default_factory=dict)
    custom_replays: dict[str, str] = field(default_factory=dict)  # func -> its replay func
    lanes: int = 1  # lanes per block of a tile operation (more only in CPU blocks)

    def lower_func(self, func: Any, param_types: tuple[T.Type, ...], loc: Loc) -> ir.Function:
        key = (func, param_types)
        if key in self._done:
            return self._done[key]
        if any(k[0] is func for k in self._in_progress):
            raise KernelError(f"recursion is not supported (func '{func.__name__}' calls itself)")
        self._in_progress.append(key)
        try:
            name = f"{func.__name__}_{self._next_id}"
            self._next_id += 1
            lowerer = FunctionLowerer(self, func.source, param_types, is_kernel=False, name=name,
                                      return_annotation=func.return_annotation(),
                                      ref_outputs=refs.ref_outputs(func, param_types))
            native = getattr(func, "lower_ir", None)  # a @kc.func_native (native_funcs.py)
            fn = native(self, param_types, name) if native else lowerer.lower()
        finally:
            self._in_progress.pop()
        self._done[key] = fn
        self.funcs.append(fn)
        replay = getattr(func, "custom_replay", None)
        if (replay is not None or getattr(func, "custom_grad", None) is not None) and any(
                isinstance(t, FunctionValueType) for t in param_types):
            raise KernelError(f"func '{func.__name__}' takes Function parameters, which "
                              f"cannot be combined with custom gradients or replay functions",
                              loc, self.kernel_name)
        if replay is not None:  # a @kc.func_replay: lowered for the same argument types
            lowered = self.lower_func(replay, param_types, loc)
            if lowered.return_types != fn.return_types:
                raise KernelError(f"the replay '{replay.__name__}' of '{func.__name__}' must "
                                  f"return what it returns", loc, self.kernel_name)
            self.custom_replays[fn.name] = lowered.name
        grad = getattr(func, "custom_grad", None)
        if grad is not None and lowerer.ref_outputs:
            raise KernelError(f"func '{func.__name__}' has a custom gradient and kc.ref "
                              f"parameters of value types, which cannot be combined", loc,
                              self.kernel_name)
        if grad is not None:
            from kernelc.autodiff.custom import lower_custom_grad

            self.custom_adjoints[fn.name] = lower_custom_grad(self, grad, param_types,
                                                              fn.return_types, loc)
        return fn


@dataclass(frozen=True)
class TidRef:
    """`kc.tid()` before we know how many values it is unpacked into."""


class FunctionLowerer(TileLowering, AggregateLowering, ConstructLowering, ExprLowering,
                      StmtLowering, RebindingLowering, ast.NodeVisitor):
    def __init__(self, ctx: CompileContext, source: Source, param_types: tuple[T.Type, ...],
                 is_kernel: bool, name: str, return_annotation: Any = None,
                 ref_outputs: tuple[int, ...] = ()):
        self.ctx = ctx
        self.source = source
        self.param_types = param_types
        self.is_kernel = is_kernel
        self.name = name
        self.b = IRBuilder()
        self.names: dict[str, Any] = {}
        # The constant first value of each local (what `kc.static` may read, see special.py).
        self.first_consts: dict[str, Any] = {}
        # The literal (weak constant) first value of each local, and its type.
        self.first_literals: dict[str, tuple[Any, T.Type]] = {}
        # The current value of each variable of an unrolled loop (`kc.static(i)` reads it).
        self.unrolled_values: dict[str, int] = {}
        self.loop_depth = 0
        self.tile_homes: dict[str, list] = {}  # see TileLowering.assign_tile_name
        self.slot_blocks: dict[int, list] = {}  # the block each local's slot was made in
        self.binding_blocks: dict[str, list] = {}  # see rebinding.py
        self.tile_in_place = False
        self.tile_element_update = None  # the `t[i] op= x` on a tile element being lowered
        self.return_types = return_annotation
        # The `kc.ref[T]` parameters handed back to the caller after the results (refs.py),
        # and the slots holding them.
        self.ref_outputs = ref_outputs
        self.ref_slots: list[ir.Slot] = []

    def lower(self) -> ir.Function:
        tree = self.source.tree
        self.b.loc = self.source.loc(tree)
        params = self.bind_params(tree)
        for stmt in tree.body:
            self.visit(stmt)
        return_types = self.return_types or ()
        reaches_end = not self.always_returns(tree.body)
        if not self.is_kernel and return_types and reaches_end:
            raise KernelError(
                f"func '{tree.name}' can reach its end without returning a value",
                self.source.loc(tree), self.ctx.kernel_name,
            )
        if self.ref_slots:
            if reaches_end:
                self.b.append(ir.Return(self.b.loc, self.ref_values()))
            return_types = (*return_types, *(s.type for s in self.ref_slots))
        names = tuple(a.arg for a, t in zip(tree.args.args, self.param_types)
                      if not isinstance(t, FunctionValueType))
        return ir.Function(
            name=self.name, params=params, param_names=names,
            return_types=tuple(return_types), body=self.b.body(), slots=tuple(self.b.slots),
            is_kernel=self.is_kernel, loc=self.source.loc(tree),
        )

    def ref_values(self) -> tuple[ir.Value, ...]:
        """The current values of the reference parameters, returned after the results."""
        return tuple(self.b.load(s) for s in self.ref_slots)

    def bind_params(self, tree: ast.FunctionDef) -> tuple[ir.Value, ...]:
        assigned = {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        # A value passed to a call by name may be advanced in place (`randf(state)`,
        # `svd3(A, U, s, V)`), which is an assignment too, possibly inside a loop or branch.
        passed = {a.id for n in ast.walk(tree) if isinstance(n, ast.Call)
                  for a in n.args if isinstance(a, ast.Name)}
        # `q.x = v` and `v[0] = w` change a struct, vector or matrix parameter too.
        stored_into = set()
        for n in ast.walk(tree):
            if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, ast.Store):
                base = n.value
                while isinstance(base, (ast.Attribute, ast.Subscript)):
                    base = base.value
                if isinstance(base, ast.Name):
                    stored_into.add(base.id)
        params = []
        for k, (arg, t) in enumerate(zip(tree.args.args, self.param_types)):
            value = self.b.new_value(t)
            params.append(value)
            value_type = isinstance(t, (T.ScalarType, T.VectorType, T.MatrixType, T.StructType))
            in_place = value_type and (arg.arg in passed or arg.arg in stored_into)
            if isinstance(t, FunctionValueType):  # a func or builtin: nothing at run time
                params.pop()
                self.names[arg.arg] = PyObj(t.target)
            elif k in self.ref_outputs:  # handed back to the caller: always in a slot
                slot = self.b.new_slot(arg.arg, t)
                self.b.store(slot, value)
                self.names[arg.arg] = slot
                self.ref_slots.append(slot)
            elif isinstance(t, T.TupleType):  # a tuple argument: one parameter per item
                params.pop()
                items = [self.b.new_value(e) for e in t.elements]
                params += items
                self.names[arg.arg] = TupleVal(tuple(Val(v) for v in items))
            elif arg.arg in assigned or in_place:  # a parameter the body changes gets a slot
                slot = self.b.new_slot(arg.arg, t)
                self.b.store(slot, value)
                self.names[arg.arg] = slot
            else:
                self.names[arg.arg] = Val(value)
        return tuple(params)

    def always_returns(self, body: list[ast.stmt]) -> bool:
        for stmt in body:
            if isinstance(stmt, ast.Return):
                return True
            if isinstance(stmt, ast.If) and stmt.orelse:
                if self.always_returns(stmt.body) and self.always_returns(stmt.orelse):
                    return True
            if isinstance(stmt, ast.While) and _is_forever(stmt):
                return True  # only a return leaves `while True:` without a break
        return False

    # ---- the error choke point ------------------------------------------------------------

    def visit(self, node: ast.AST):
        previous = self.b.loc
        if hasattr(node, "lineno"):
            self.b.loc = self.source.loc(node)
        try:
            return super().visit(node)
        except KernelError as err:
            if err.loc is None:
                raise err.with_context(self.b.loc, self.ctx.kernel_name) from None
            raise
        except RecursionError:
            raise KernelError("expression nested too deeply", self.b.loc,
                              self.ctx.kernel_name) from None
        except Exception as err:
            raise KernelError(f"internal compiler error ({type(err).__name__}: {err})",
                              self.b.loc, self.ctx.kernel_name) from err
        finally:
            self.b.loc = previous

    def generic_visit(self, node: ast.AST):
        what = _CONSTRUCT_NAMES.get(type(node).__name__, f"'{type(node).__name__}'")
        raise KernelError(f"{what} is not supported in kernels")

    # ---- names ----------------------------------------------------------------------------

    def read_name(self, name: str, node: ast.AST):
        if name in self.names:
            bound = self.names[name]
            if isinstance(bound, ir.Slot):
                literal = self.first_literals.get(name)
                if literal is not None and name in self.literal_names:
                    # `x = 0.1` assigned nowhere else stays a literal, as in Warp:
                    # `kc.float64(x)` is 0.1 exactly and `v[:n]` takes `n = 2`.
                    c, t = literal
                    return Val(self.b.const(c, t), weak=True, const=c)
                return Val(self.b.load(bound))
            if isinstance(bound, TidRef):
                return Val(self.b.op(OpCode.TID, (), T.int32, (0, 0)))
            return bound
        found, value = self.source.lookup_global(name)
        if not found:
            raise WarpCodegenKeyError(f"name '{name}' is not defined")
        return self.from_python(value, node)

    def assign_name(self, name: str, value: Any, node: ast.AST) -> None:
        self.unrolled_values.pop(name, None)
        bound = self.names.get(name)
        if isinstance(value, Tile) or isinstance(bound, Tile):
            return self.assign_tile_name(name, value, node)
        if isinstance(value, TidRef):
            value = Val(self.b.op(OpCode.TID, (), T.int32, (0, 0)))
        if isinstance(bound, LocalArray):
            raise KernelError(f"local array '{name}' cannot be reassigned")
        bound, value = self.rebind(name, bound, value)
        if isinstance(value, ArrayView) and isinstance(bound, ir.Slot) and \
                isinstance(bound.type, T.ArrayType) and not self._rebinds_array(bound):
            value = self.view_value(name, value)  # stored in the array local, below
        # A view `v = a[i]` is bound as it is, like a tuple: it names the array and indices.
        if isinstance(value, (PyObj, TupleVal, StorageHandle, ArrayView)):
            if isinstance(bound, ir.Slot) and not (
                    isinstance(value, ArrayView) and self._rebinds_array(bound)):
                raise KernelError(f"'{name}' holds a {bound.type!r}; it cannot become a tuple "
                                  f"or an array view")
            self.names[name] = value
            self.note_binding(name, value)
            return
        value = self.as_val(value, node)
        if isinstance(bound, ir.Slot) and value.type != bound.type and \
                isinstance(value.type, T.ArrayType) and self._rebinds_array(bound):
            bound = None
        if isinstance(bound, ir.Slot):
            if value.type != bound.type:
                if not value.weak:
                    raise WarpCodegenTypeError(
                        f"assignment changes the type of '{name}' from {bound.type!r} to "
                        f"{value.type!r}; cast explicitly, e.g. {bound.type!r}(...)"
                    )
                value = self.coerce(value, bound.type)
            self.b.store(bound, value.value)
            return
        slot = self.b.new_slot(name, value.type)
        self.b.store(slot, value.value)
        self.names[name] = slot
        self.slot_blocks[slot.id] = self.b.current_block()
        if value.const is not None:
            self.first_consts[name] = value.const
            if value.weak:
                self.first_literals[name] = (value.const, value.type)

    @functools.cached_property
    def assigned_once(self) -> frozenset[str]:
        """The names stored to exactly once in the whole function."""
        return literal_locals.assigned_once(self.source.tree)

    @functools.cached_property
    def literal_names(self) -> frozenset[str]:
        """The locals that stay literals when first assigned one (see literal_locals.py)."""
        return literal_locals.literal_locals(self.source.tree, self.source)

    def _rebinds_array(self, bound: ir.Slot) -> bool:
        """Whether an array local may be rebound to a view of another type (`sub = a[:2]`
        then `sub = a[1]`), as Warp allows: only in the block that made it, so every later
        read sees one binding."""
        return isinstance(bound.type, T.ArrayType) and \
            self.slot_blocks.get(bound.id) is self.b.current_block()

    def eval_annotation(self, node: ast.expr) -> T.Type:
        value = self.visit(node)
        obj = value.obj if isinstance(value, PyObj) else None
        t = T.as_type(obj)
        if t is None:
            raise KernelError(f"'{ast.unparse(node)}' is not a kernelc type")
        return t

    def assign(self, target: ast.expr, value, node: ast.AST) -> None:
        if isinstance(value, TidRef) and isinstance(target, (ast.Tuple, ast.List)):
            n = len(target.elts)
            if not 1 <= n <= 4:
                raise KernelError("tid() can be unpacked into 1 to 4 indices")
            value = TupleVal(tuple(
                Val(self.b.op(OpCode.TID, (), T.int32, (axis, n))) for axis in range(n)
            ))
        super().assign(target, value, node)

    def as_val(self, v: Any, node: ast.AST | None) -> Val:
        if isinstance(v, TidRef):
            return Val(self.b.op(OpCode.TID, (), T.int32, (0, 0)))
        return super().as_val(v, node)

    # ---- calls to funcs and special forms -------------------------------------------------

    def special_form(self, obj: Any):
        from kernelc.frontend.special import lookup

        return lookup(obj)

    def call_other(self, obj: Any, node: ast.Call):
        from kernelc.frontend.decorators import Func, Kernel

        if isinstance(obj, Kernel):
            raise KernelError("kernels cannot call other kernels; make it a @kernelc.func")
        if not isinstance(obj, Func):
            return super().call_other(obj, node)
        from kernelc.frontend import tile_funcs

        if tile_funcs.takes_tiles(obj):  # lowered in place: tiles live in the caller
            return tile_funcs.call_inline(self, obj, node)
        if any(kw.arg is None for kw in node.keywords):
            raise KernelError("'**' unpacking is not supported in func calls")
        arg_nodes = list(node.args)
        kw_nodes = {kw.arg: kw.value for kw in node.keywords}
        targets = refs.RefTargets(self) if refs.has_refs(obj) else None
        if targets is not None:  # indices of referenced elements are evaluated once
            arg_nodes = [targets.prepare(a) for a in arg_nodes]
            kw_nodes = {k: targets.prepare(v) for k, v in kw_nodes.items()}
        try:
            args = [self.func_arg(self.visit(a), a) for a in arg_nodes]
            keywords = {k: self.func_arg(self.visit(v), v) for k, v in kw_nodes.items()}
            return self.call_func(obj, args, keywords,
                                  (arg_nodes, kw_nodes, targets) if targets else None)
        finally:
            if targets is not None:
                targets.release()

    def func_arg(self, value: Any, node: ast.AST) -> Val | TupleArg | FunctionArg:
        """A func argument: a value, a tuple (literals at their default types), which is
        passed as one argument per item (`bind_params`), or a func or builtin, which the
        callee is specialised for (func_values.py)."""
        if isinstance(value, PyObj):
            function = function_arg(value.obj, self.special_form)
            if function is not None:
                return function
        if not isinstance(value, TupleVal):
            return self.as_val(value, node)
        items = [self.as_val(v, node) for v in value.items]
        items = tuple(self.coerce(v, v.type) if v.weak else v for v in items)
        return TupleArg(items, T.TupleType(tuple(v.type for v in items)))

    def call_func(self, obj, args: list[Val], keywords: dict[str, Val] | None = None,
                  ref_call: tuple | None = None):
        """Calls the @func `obj` with lowered arguments (positional, then by keyword; missing
        ones take the parameter's default): a Val, a TupleVal, or PyObj(None).
        `ref_call` holds the argument expressions and their `RefTargets`, which receive
        the values of the func's `kc.ref[T]` parameters after the call."""

        def default(name: str, value: Any) -> Val | FunctionArg:
            function = function_arg(value, self.special_form)
            if function is not None:
                return function
            lowered = self.from_python(value, None)
            if not isinstance(lowered, Val):
                raise KernelError(f"the default value of parameter '{name}' of func "
                                  f"'{obj.__name__}' ({value!r}) cannot be used in a kernel")
            return lowered

        obj, args, param_types = obj.resolve(args, keywords, default)
        coerced = []
        for a, t in zip(args, param_types):
            if isinstance(a, TupleArg):
                coerced += [v.value for v in a.items]
            elif isinstance(a, FunctionArg):
                continue  # known when compiling: the callee is specialised for it
            else:
                coerced.append(self.coerce(a, t).value)
        coerced = tuple(coerced)
        outputs = refs.ref_outputs(obj, param_types)
        targets = self.ref_targets(obj, outputs, ref_call)
        callee = self.ctx.lower_func(obj, param_types, self.b.loc)
        results = callee.return_types
        if not results:
            self.b.op(OpCode.CALL_FUNC, coerced, T.void, callee.name)
            return PyObj(None)
        if len(results) == 1 and not outputs:
            return self.received(Val(self.b.op(OpCode.CALL_FUNC, coerced, results[0],
                                               callee.name)))
        if len(results) == 1:  # a func's only result is not a tuple
            values = [self.b.op(OpCode.CALL_FUNC, coerced, results[0], callee.name)]
        else:
            packed = self.b.op(OpCode.CALL_FUNC, coerced, T.TupleType(results), callee.name)
            values = [self.b.op(OpCode.EXTRACT, (packed,), t, i) for i, t in enumerate(results)]
        if outputs:
            values, handed_back = values[:-len(outputs)], values[-len(outputs):]
            for target, value in zip(targets, handed_back):
                ref_call[2].write_back(target, value)
            if not values:
                return PyObj(None)
            if len(values) == 1:
                return self.received(Val(values[0]))
        return TupleVal(tuple(self.received(Val(v)) for v in values))

    def ref_targets(self, obj: Any, outputs: tuple[int, ...], ref_call: tuple | None
                    ) -> list[ast.expr]:
        """The argument expressions receiving the func's reference parameters, checked."""
        if not outputs:
            return []
        if ref_call is None:
            raise KernelError(f"func '{obj.__name__}' takes kc.ref parameters and can only be "
                              f"called directly")
        arg_nodes, kw_nodes, targets = ref_call
        nodes = obj.bind(arg_nodes, kw_nodes, lambda name, value: None)
        found = []
        for i in outputs:
            name = obj.arg_names[i]
            if nodes[i] is None:
                raise KernelError(f"argument '{name}' of '{obj.__name__}' is a kc.ref "
                                       f"parameter and needs a variable, not its default")
            targets.check(nodes[i], name, obj.__name__)
            found.append(nodes[i])
        return found

    def received(self, value: Val) -> Val | LocalArray:
        """A func's result; a local array it returned becomes the caller's own copy."""
        if T.fixed_array_spec(value.type) is None:
            return value
        return local_arrays.received(self, value)


@dataclass(frozen=True)
class TupleArg:
    """A tuple passed to a func: its items, and the tuple type the func is specialised for
    (read by `Func.resolve` as an argument's `.type` and `.weak`)."""

    items: tuple[Val, ...]
    type: T.TupleType
    weak: bool = False


def lower_kernel(source: Source, param_types: tuple[T.Type, ...], name: str,
                 lanes: int = 1) -> ir.Module:
    """The IR module of a kernel specialised for `param_types`; with `lanes` > 1 (CPU
    blocks), one that runs once per block of that many lanes (see `ir/lanes.py`)."""
    ctx = CompileContext(kernel_name=source.name, lanes=lanes)
    lowerer = FunctionLowerer(ctx, source, param_types, is_kernel=True, name=name)
    kernel = lowerer.lower()
    b = lowerer.b
    if lanes > 1 and (b.collective or b.block_slots):  # else each thread runs on its own
        from kernelc.ir.lanes import split_lanes

        for fn in ctx.funcs:
            _check_lane_free(fn, source.name)
        try:
            kernel = split_lanes(kernel, b.collective, b.block_slots, lanes, b._next_id)
        except KernelError as err:
            raise err.with_context(err.loc, source.name) from None
    return ir.Module(kernel, tuple(ctx.funcs), tuple(ctx.custom_adjoints.items()),
                     tuple(ctx.custom_replays.items()))


def _check_lane_free(fn: ir.Function, kernel_name: str) -> None:
    """A func runs as one call of one lane: in blocks of several lanes, one that reads
    tid() or the lane (`tile(x)`, `untile`) would read the block's instead."""
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Op) and s.opcode in (OpCode.TID, OpCode.LANE):
            raise KernelError("with CPU blocks of several lanes, a func cannot call tid(), "
                              "tile(x) or untile(); call them in the kernel", s.loc,
                              kernel_name)


def is_generic(annotation: Any) -> bool:
    if annotation is typing.Any:
        return True
    t = T.as_type(annotation)
    return t is not None and T.is_generic(t)


_CONSTRUCT_NAMES = {
    "With": "'with'", "Try": "'try'", "Raise": "'raise'", "Lambda": "'lambda'",
    "ListComp": "a list comprehension", "DictComp": "a dict comprehension",
    "SetComp": "a set comprehension", "GeneratorExp": "a generator expression",
    "List": "a list", "Dict": "a dict", "Set": "a set", "FunctionDef": "a nested function",
    "ClassDef": "a class definition", "Import": "'import'", "ImportFrom": "'import'",
    "Delete": "'del'", "Yield": "'yield'", "Await": "'await'", "JoinedStr": "an f-string",
    "Starred": "'*' unpacking", "Slice": "slicing", "NamedExpr": "':='", "Match": "'match'",
}


def _is_forever(loop: ast.While) -> bool:
    """A `while True:` (any constant truthy test) with no `break` of its own."""
    if not (isinstance(loop.test, ast.Constant) and loop.test.value):
        return False
    pending = list(loop.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Break):
            return False
        if not isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))
        elif node.orelse if isinstance(node, (ast.For, ast.While)) else False:
            pending.extend(node.orelse)  # a break in a loop's else leaves the outer loop
    return True

