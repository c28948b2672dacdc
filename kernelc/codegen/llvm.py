"""IR -> LLVM IR for the CPU (through llvmlite's IRBuilder).

A kernel becomes `void entry(ptr args, i64 start, i64 end)` running thread indices
[start, end) in a loop; the loop body is the kernel, so LLVM's loop vectoriser turns
simple kernels into SIMD code across threads. `args` points at a struct laid out as
`{[4 x i64] dims, ptr error, param0, param1, ...}` (C layout, bool as one byte, arrays
as `{ptr data, [n x i64] shape, [n x i64] byte strides}`); the runtime packs the same
layout with ctypes. Funcs become internal always-inline functions that take the args
pointer and the 32-bit linear thread index as two hidden leading parameters. The thread
loop is built by llvm_loops.py; in the variant for launches whose arrays share no memory,
loads and stores of array arguments carry alias scopes (llvm_alias.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir as ll

from kernelc import types as T
from kernelc.codegen import llvm_aggregate, llvm_alias, llvm_loops, llvm_memory, llvm_native
from kernelc.codegen import llvm_ops as ops
from kernelc.codegen.llvm_ops import I1, I8, I32, I64, PTR, llvm_type
from kernelc.errors import Loc
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

ERROR_STRUCT = ll.LiteralStructType([I32, I32, I32, I32, ll.ArrayType(I64, 4), ll.ArrayType(I64, 4)])
ERROR_OUT_OF_BOUNDS = 1
ERROR_ASSERT = 2
ERROR_LOCAL_OUT_OF_BOUNDS = 3


@dataclass(frozen=True)
class LlvmOptions:
    debug: bool = False  # bounds checks and asserts
    vector_width: int = 512  # the "prefer-vector-width" attribute of the entry function
    # No two array arguments share memory (the launcher checks, and compiles the variant
    # without this promise when they do): atomics on arrays only ever touched at the
    # thread's own index become plain read-modify-writes, and array accesses get alias
    # scopes.
    disjoint_arrays: bool = True
    # The kernel runs with per-worker copies of its reduction targets (ReduceMode.Expand):
    # atomics on them are plain read-modify-writes too, since one worker owns a copy.
    expanded: bool = False
    # Alias scopes per array argument (see llvm_alias.py), used with `disjoint_arrays`.
    noalias: bool = True
    # Threads as SIMD lanes (llvm_simd.py): "auto" (kernels with loops, when it pays),
    # "all" or "off".
    simd: str = "auto"
    # The launch has more dimensions than some tid() of the kernel unpacks (a scalar tid()
    # in a 2-d launch): every tid() is then read from the launch's whole shape (a scalar
    # one is the leading index, as in Warp) and no thread owns an array element.
    wide_launch: bool = False


@dataclass(frozen=True)
class LlvmSource:
    text: str
    entry: str
    check_locs: tuple[Loc, ...]  # indexed by the error record's check_id
    has_print: bool


def args_struct(params: tuple[T.Type, ...]) -> ll.LiteralStructType:
    fields = [ll.ArrayType(I64, 4), PTR] + [llvm_type(t, memory=True) for t in params]
    return ll.LiteralStructType(fields)


def emit_llvm(module: ir.Module, entry: str, options: LlvmOptions) -> LlvmSource:
    """LLVM IR text for `module`; the kernel's entry function is named `entry`."""
    llmod = ll.Module(name=entry)
    state = _ModuleState(llmod, options, entry, args_struct(tuple(p.type for p in module.kernel.params)))
    state.vector_division = llvm_loops.threads_innermost(module)
    state.func_ir = {fn.name: fn for fn in module.funcs}
    scoped = options.noalias and options.disjoint_arrays
    plan = llvm_alias.plan_aliasing(module) if scoped else None
    if plan is not None:
        state.alias = llvm_alias.AliasScopes(llmod, entry, plan)
    from kernelc.codegen.llvm_simd_choice import lane_analysis

    lanes = lane_analysis(module, options)
    if lanes is not None:
        from kernelc.codegen.llvm_simd import SimdEmitter

        SimdEmitter(state, module.kernel, lanes, options.vector_width // 32).emit_kernel()
    else:
        FunctionEmitter(state, module.kernel).emit_kernel()
    state.emit_called_funcs()
    text = _add_entry_attributes(str(llmod), entry, options)
    return LlvmSource(text, entry, tuple(state.check_locs), state.has_print)


def _add_entry_attributes(text: str, entry: str, options: LlvmOptions) -> str:
    # llvmlite only knows enum attributes; string attributes go into the text.
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("define") and (f'@"{entry}"(' in line or f"@{entry}(" in line):
            lines[i] = line + " #0"
            break
    attrs = f'attributes #0 = {{ nounwind "prefer-vector-width"="{options.vector_width}" }}'
    return "\n".join(lines) + "\n" + attrs + "\n"


class _ModuleState:
    def __init__(self, llmod: ll.Module, options: LlvmOptions, entry: str, args_type):
        self.llmod = llmod
        self.options = options
        self.entry = entry
        self.args_type = args_type
        self.funcs: dict[str, ll.Function] = {}
        self.func_ir: dict[str, ir.Function] = {}
        self.check_locs: list[Loc] = []
        self.has_print = False
        self.vector_division = False  # integer division as SIMD can do it (llvm_ops.binary)
        self.alias: llvm_alias.AliasScopes | None = None
        # funcs copied per array arguments (llvm_alias) and lane-wise forms (llvm_simd)
        self.variants: dict[tuple, ll.Function] = {}
        self._strings: dict[str, ll.GlobalVariable] = {}
        self._unemitted: list[ir.Function] = []

    def func(self, name: str) -> ll.Function:
        """The scalar form of func `name`, declared on first use and emitted by
        `emit_called_funcs` (lane code calls other forms: a func it never calls scalar
        costs nothing)."""
        f = self.funcs.get(name)
        if f is None:
            fn = self.func_ir[name]
            f = ll.Function(self.llmod, func_type(fn), f"{self.entry}__{fn.name}")
            f.linkage = "internal"
            f.attributes.add("alwaysinline")
            f.attributes.add("nounwind")
            self.funcs[name] = f
            self._unemitted.append(fn)
        return f

    def emit_called_funcs(self) -> None:
        while self._unemitted:  # (emitting one may call more)
            FunctionEmitter(self, self._unemitted.pop()).emit_func()

    def check_id(self, loc: Loc) -> int:
        self.check_locs.append(loc)
        return len(self.check_locs) - 1

    def string(self, text: str) -> ll.GlobalVariable:
        if text not in self._strings:
            data = bytearray(text.encode("utf-8")) + b"\0"
            arr = ll.ArrayType(I8, len(data))
            g = ll.GlobalVariable(self.llmod, arr, f"str.{len(self._strings)}")
            g.linkage = "private"
            g.global_constant = True
            g.initializer = ll.Constant(arr, data)
            self._strings[text] = g
        return self._strings[text]


def func_type(fn: ir.Function) -> ll.FunctionType:
    """A func's scalar form: (context, thread index, its parameters) -> its results."""
    params = [PTR, I32] + [llvm_type(p.type) for p in fn.params]
    return ll.FunctionType(_return_type(fn), params)


def _return_type(fn: ir.Function) -> ll.Type:
    if not fn.return_types:
        return ll.VoidType()
    if len(fn.return_types) == 1:
        return llvm_type(fn.return_types[0])
    return llvm_type(T.TupleType(fn.return_types))


class FunctionEmitter:
    """Emits one IR function; statements and ops dispatch through tables."""

    def __init__(self, state: _ModuleState, fn: ir.Function):
        self.state = state
        self.fn = fn
        self.values: dict[int, ll.Value] = {}
        self.consts: dict[int, object] = {}
        self.slots: dict[int, ll.Value] = {}
        self.loops: list[tuple[ll.Block, ll.Block]] = []
        self.debug = state.options.debug
        self.private: frozenset[int] = frozenset()
        # atomic result id -> (sum, address, type) of a uniform update (ir/uniform.py)
        self.accumulators: dict[int, tuple[ll.Value, ll.Value, T.Type]] = {}
        # value id -> kernel argument, for the accesses that get alias scopes
        self.origins: dict[int, int] | None = None

    # ---- function shells ------------------------------------------------------------------

    def emit_kernel(self) -> None:
        if self.state.options.disjoint_arrays and not self.state.options.wide_launch:
            from kernelc.ir.analysis import thread_private_params

            self.private = thread_private_params(self.fn)
        if self.state.options.expanded:
            from kernelc.ir.analysis import reduction_targets

            self.private |= frozenset(reduction_targets(self.fn))
        fnty = ll.FunctionType(ll.VoidType(), [PTR, I64, I64])
        f = ll.Function(self.state.llmod, fnty, self.state.entry)
        args, start, end = f.args
        self.llfn = f
        self.entry_block = f.append_basic_block("entry")
        b = self.b = ll.IRBuilder(self.entry_block)
        self.ctx = args
        for i, p in enumerate(self.fn.params):
            ptr = b.gep(args, [I32(0), I32(2 + i)], source_etype=self.state.args_type)
            mem = b.load(ptr, typ=llvm_type(p.type, memory=True))
            self.values[p.id] = ops.from_memory(b, mem, p.type)
        self.alloc_slots()
        if self.state.options.disjoint_arrays:  # (else a read may alias a summed array)
            from kernelc.ir.uniform import uniform_updates

            llvm_memory.make_accumulators(self, uniform_updates(self.fn))
        self.emit_thread_loops(start, end)
        llvm_memory.flush_accumulators(self)
        self.b.ret_void()

    def emit_thread_loops(self, start: ll.Value, end: ll.Value) -> None:
        """The loops over threads [start, end) around the kernel's body."""
        if self.state.alias is not None:
            self.origins = llvm_alias.value_origins(self.fn, llvm_alias.kernel_origins(self.fn))
        llvm_loops.emit_loops(self, start, end)

    def emit_func(self, f: ll.Function | None = None) -> None:
        f = f or self.state.func(self.fn.name)
        self.llfn = f
        self.entry_block = f.append_basic_block("entry")
        self.b = ll.IRBuilder(self.entry_block)
        self.ctx, self.tid = f.args[0], f.args[1]
        self.tid_parts = None
        for p, a in zip(self.fn.params, f.args[2:]):
            self.values[p.id] = a
        self.thread_exit = None
        self.alloc_slots()
        self.zero_slots()
        self.emit_block(self.fn.body)
        if not self.b.block.is_terminated:
            self.return_zero()

    def alloc_slots(self) -> None:
        for s in self.fn.slots:
            mem = isinstance(s.type, T.LocalArrayType)
            self.slots[s.id] = self.b.alloca(llvm_type(s.type, memory=mem), name=s.name)

    def zero_slots(self) -> None:
        for s in self.fn.slots:
            if not isinstance(s.type, T.LocalArrayType):  # local arrays are zeroed where declared
                self.b.store(ops.zero(s.type), self.slots[s.id])

    def return_zero(self) -> None:
        ret = self.llfn.function_type.return_type
        if isinstance(ret, ll.VoidType):
            self.b.ret_void()
        else:
            self.b.ret(ll.Constant(ret, None))

    # ---- statements -----------------------------------------------------------------------

    def emit_block(self, block: ir.Block) -> None:
        for stmt in block:
            if self.b.block.is_terminated:  # code after break/continue/return: unreachable
                self.b.position_at_end(self.llfn.append_basic_block("dead"))
            _STMT[type(stmt)](self, stmt)

    def emit_op(self, s: ir.Op) -> None:
        if s.opcode == OpCode.CONST:
            self.consts[s.result.id] = s.attr
        v = _OPS[s.opcode](self, s)
        if s.result is not None:
            self.values[s.result.id] = v

    def v(self, value: ir.Value) -> ll.Value:
        return self.values[value.id]

    def emit_store_slot(self, s: ir.StoreSlot) -> None:
        self.b.store(self.v(s.value), self.slots[s.slot.id])

    def emit_if(self, s: ir.If) -> None:
        with self.b.if_else(self.v(s.cond)) as (then, other):
            with then:
                self.emit_block(s.then_body)
            with other:
                self.emit_block(s.else_body)

    def emit_for(self, s: ir.For) -> None:
        b = self.b
        start, stop, step = self.v(s.start), self.v(s.stop), self.v(s.step)
        pre = b.block
        cond_bb = self.llfn.append_basic_block("for.cond")
        body_bb = self.llfn.append_basic_block("for.body")
        latch_bb = self.llfn.append_basic_block("for.next")
        exit_bb = self.llfn.append_basic_block("for.end")
        b.branch(cond_bb)
        b.position_at_end(cond_bb)
        i = b.phi(start.type)
        i.add_incoming(start, pre)
        b.cbranch(self._range_test(s, i, stop, step), body_bb, exit_bb)
        b.position_at_end(body_bb)
        self.values[s.var.id] = i
        self.loops.append((latch_bb, exit_bb))
        self.emit_block(s.body)
        self.loops.pop()
        if not b.block.is_terminated:
            b.branch(latch_bb)
        b.position_at_end(latch_bb)
        i.add_incoming(b.add(i, step), latch_bb)
        b.branch(cond_bb)
        b.position_at_end(exit_bb)

    def _range_test(self, s: ir.For, i, stop, step):
        b = self.b
        signed = s.var.type.kind == "int"
        cmp = b.icmp_signed if signed else b.icmp_unsigned
        known = self.consts.get(s.step.id)
        if known is not None:
            return cmp("<" if known > 0 else ">", i, stop)
        up = cmp(">", step, ll.Constant(step.type, 0))
        return b.select(up, cmp("<", i, stop), cmp(">", i, stop))

    def emit_while(self, s: ir.While) -> None:
        b = self.b
        cond_bb = self.llfn.append_basic_block("while.cond")
        body_bb = self.llfn.append_basic_block("while.body")
        exit_bb = self.llfn.append_basic_block("while.end")
        b.branch(cond_bb)
        b.position_at_end(cond_bb)
        self.emit_block(s.cond_body)
        b.cbranch(self.v(s.cond), body_bb, exit_bb)
        b.position_at_end(body_bb)
        self.loops.append((cond_bb, exit_bb))
        self.emit_block(s.body)
        self.loops.pop()
        if not b.block.is_terminated:
            b.branch(cond_bb)
        b.position_at_end(exit_bb)

    def emit_break(self, s: ir.Break) -> None:
        self.b.branch(self.loops[-1][1])

    def emit_continue(self, s: ir.Continue) -> None:
        self.b.branch(self.loops[-1][0])

    def emit_return(self, s: ir.Return) -> None:
        if self.fn.is_kernel:
            self.b.branch(self.thread_exit)
        elif not s.values:
            self.b.ret_void()
        elif len(s.values) == 1:
            self.b.ret(self.v(s.values[0]))
        else:
            agg = ll.Constant(self.llfn.function_type.return_type, None)
            for i, val in enumerate(s.values):
                agg = self.b.insert_value(agg, self.v(val), i)
            self.b.ret(agg)

    def emit_array_store(self, s: ir.ArrayStore) -> None:
        arr_t = s.array.type
        ptr = self.element_ptr(s.array, s.indices, s.loc)
        self.tag(self.b.store(ops.to_memory(self.b, self.v(s.value), arr_t.dtype), ptr), s.array)

    def emit_local_store(self, s: ir.LocalStore) -> None:
        ptr, ok = self.local_ptr(s.slot, s.index, s.loc)
        with self.b.if_then(ok, likely=True):
            self.b.store(ops.to_memory(self.b, self.v(s.value), s.slot.type.dtype), ptr)

    def emit_print(self, s: ir.Print) -> None:
        self.state.has_print = True
        printf = self.state.llmod.globals.get("printf")
        if printf is None:
            printf = ll.Function(self.state.llmod, ll.FunctionType(I32, [PTR], var_arg=True),
                                 "printf")
        args = [self.state.string(s.fmt)]
        for a in s.args:
            val, t = self.v(a), a.type
            if t.is_float:
                val = self.b.fpext(val, ll.DoubleType()) if t.bits < 64 else val
            elif t.bits < 32:
                val = (self.b.sext if t.kind == "int" else self.b.zext)(val, I32)
            args.append(val)
        self.b.call(printf, args)

    def emit_assert(self, s: ir.Assert) -> None:
        if self.debug:
            self.check(self.v(s.cond), ERROR_ASSERT, s.loc, (), ())

    # ---- memory ---------------------------------------------------------------------------

    def element_ptr(self, array: ir.Value, indices, loc: Loc) -> ll.Value:
        b = self.b
        arr = self.v(array)
        t: T.ArrayType = array.type
        elem = llvm_type(t.dtype, memory=True)
        idx64 = [b.sext(self.v(i), I64) if i.type.bits < 64 else self.v(i) for i in indices]
        shapes = [b.extract_value(arr, [1, k]) for k in range(t.ndim)]
        if self.debug:
            ok = None
            for i, n in zip(idx64, shapes):
                inb = b.icmp_unsigned("<", i, n)
                ok = inb if ok is None else b.and_(ok, inb)
            self.check(ok, ERROR_OUT_OF_BOUNDS, loc, idx64, shapes)
        size = I64(t.dtype.size)
        offset = None
        for k, i in enumerate(idx64):
            # Strides arrive in bytes; in elements LLVM can version loops on unit stride.
            stride = b.sdiv(b.extract_value(arr, [2, k]), size, flags=["exact"])
            term = b.mul(i, stride)
            offset = term if offset is None else b.add(offset, term)
        return b.gep(b.extract_value(arr, 0), [offset], source_etype=elem)

    def tag(self, instruction: ll.Instruction, array: ir.Value) -> ll.Instruction:
        """Gives a load or store of `array` its alias scopes, if it has any."""
        if self.origins is not None and array.id in self.origins:
            self.state.alias.tag(instruction, self.origins[array.id])
        return instruction

    def local_ptr(self, slot: ir.Slot, index: ir.Value, loc: Loc):
        b = self.b
        t: T.LocalArrayType = slot.type
        i = self.v(index)
        i64 = b.sext(i, I64) if index.type.bits < 64 else i
        ok = b.icmp_unsigned("<", i64, I64(t.length))
        if self.debug:
            self.check(ok, ERROR_LOCAL_OUT_OF_BOUNDS, loc, [i64], [I64(t.length)])
        safe = b.select(ok, i64, I64(0))
        base = self.slots[slot.id]
        # Given `source_etype`, llvmlite types a GEP like its base pointer ([N x T]* for a
        # typed alloca, which stores then reject): there, let it derive the element type.
        etype = llvm_type(t, memory=True) if base.type.is_opaque else None
        ptr = b.gep(base, [I64(0), safe], source_etype=etype)
        return ptr, ok

    def check(self, ok, code: int, loc: Loc, index, shape) -> None:
        """Debug check: on failure record the first error and leave the kernel."""
        b = self.b
        check_id = self.state.check_id(loc)
        fail_bb = self.llfn.append_basic_block("check.fail")
        cont_bb = self.llfn.append_basic_block("check.ok")
        b.cbranch(ok, cont_bb, fail_bb)
        b.position_at_end(fail_bb)
        err = b.load(b.gep(self.ctx, [I32(0), I32(1)], source_etype=self.state.args_type), typ=PTR)
        code_ptr = b.gep(err, [I32(0), I32(0)], source_etype=ERROR_STRUCT)
        won = b.extract_value(b.cmpxchg(code_ptr, I32(0), I32(code), "monotonic", "monotonic"), 1)
        with b.if_then(won):
            b.store(I32(check_id), b.gep(err, [I32(0), I32(1)], source_etype=ERROR_STRUCT))
            b.store(I32(len(index)), b.gep(err, [I32(0), I32(2)], source_etype=ERROR_STRUCT))
            for k, (i, n) in enumerate(zip(index, shape)):
                b.store(i, b.gep(err, [I32(0), I32(4), I32(k)], source_etype=ERROR_STRUCT))
                b.store(n, b.gep(err, [I32(0), I32(5), I32(k)], source_etype=ERROR_STRUCT))
        if self.fn.is_kernel:
            b.ret_void()
        else:
            self.return_zero()  # the caller sees the error code and leaves too
        b.position_at_end(cont_bb)

    def after_call_check(self) -> None:
        b = self.b
        err = b.load(b.gep(self.ctx, [I32(0), I32(1)], source_etype=self.state.args_type), typ=PTR)
        code = b.load(b.gep(err, [I32(0), I32(0)], source_etype=ERROR_STRUCT), typ=I32)
        failed = b.icmp_unsigned("!=", code, I32(0))
        with b.if_then(failed, likely=False):
            if self.fn.is_kernel:
                b.ret_void()
            else:
                self.return_zero()


# ---- op lowering table ----------------------------------------------------------------------


def _op_const(e: FunctionEmitter, s: ir.Op):
    return ops.const(s.result.type, s.attr)


def _op_binary(e: FunctionEmitter, s: ir.Op):
    a, b = s.args
    return ops.binary(e.b, s.opcode, e.v(a), e.v(b), a.type, e.state.vector_division)


def _op_compare(e: FunctionEmitter, s: ir.Op):
    a, b = s.args
    return ops.compare(e.b, s.opcode, e.v(a), e.v(b), a.type)


def _op_unary(e: FunctionEmitter, s: ir.Op):
    return ops.unary(e.b, s.opcode, e.v(s.args[0]), s.args[0].type)


def _op_cast(e: FunctionEmitter, s: ir.Op):
    return ops.cast(e.b, e.v(s.args[0]), s.args[0].type, s.result.type)


def _op_select(e: FunctionEmitter, s: ir.Op):
    c, a, b = (e.v(x) for x in s.args)
    return e.b.select(c, a, b)


def _op_load_slot(e: FunctionEmitter, s: ir.Op):
    return e.b.load(e.slots[s.attr.id], typ=llvm_type(s.result.type))


def _op_tid(e: FunctionEmitter, s: ir.Op):
    b = e.b
    axis, ndim = s.attr
    linear = e.tid
    if e.state.options.wide_launch:  # components of the launch's whole (4-d) shape
        ndim = 4
    elif ndim > 0 and e.tid_parts is not None and len(e.tid_parts) == ndim:
        return e.tid_parts[axis]
    if ndim > 0:
        linear = b.zext(linear, I64)
        dims = llvm_loops.launch_dims(e, ndim)
        stride = I64(1)
        for d in dims[axis + 1:]:
            stride = b.mul(stride, d)
        index = b.udiv(linear, stride)
        linear = b.trunc(index if axis == 0 else b.urem(index, dims[axis]), I32)
    return linear


def _op_local_load(e: FunctionEmitter, s: ir.Op):
    ptr, ok = e.local_ptr(s.attr, s.args[0], s.loc)
    dtype = s.attr.type.dtype
    val = ops.from_memory(e.b, e.b.load(ptr, typ=llvm_type(dtype, memory=True)), dtype)
    return e.b.select(ok, val, ops.zero(dtype))


def _op_call(e: FunctionEmitter, s: ir.Op):
    args = [e.v(a) for a in s.args]
    typed = ops.TYPED_LOWERING.get(s.attr)
    if typed is not None:
        return typed(e, args, [a.type for a in s.args], s.result.type)
    return ops.fit(e.b, ops.BUILTIN_LOWERING[s.attr](e.b, args), s.result.type)


def _op_call_func(e: FunctionEmitter, s: ir.Op):
    origins = tuple(e.origins.get(a.id) for a in s.args) if e.origins is not None else ()
    if any(o is not None for o in origins):  # the func's copy for the arrays it gets here
        callee = llvm_alias.func_variant(e.state, e.state.func_ir[s.attr], origins)
    else:
        callee = e.state.func(s.attr)
    result = e.b.call(callee, [e.ctx, e.tid] + [e.v(a) for a in s.args])
    if e.debug:
        e.after_call_check()
    return result


def _op_extract(e: FunctionEmitter, s: ir.Op):
    return e.b.extract_value(e.v(s.args[0]), s.attr)


_OPS = {
    OpCode.CONST: _op_const, OpCode.CAST: _op_cast, OpCode.SELECT: _op_select,
    OpCode.LOAD_SLOT: _op_load_slot, OpCode.TID: _op_tid, OpCode.LOCAL_LOAD: _op_local_load,
    OpCode.TID_AT: llvm_loops.op_tid_at, OpCode.LAUNCH_SIZE: llvm_loops.op_launch_size,
    OpCode.CALL: _op_call, OpCode.CALL_FUNC: _op_call_func, OpCode.EXTRACT: _op_extract,
}
_OPS.update(llvm_memory.OPS)  # array loads, shapes and atomics; raw address loads
_OPS.update(llvm_aggregate.OPS)  # BUILD / EXTRACT / INSERT (+ dynamic index) on aggregates
_OPS.update(llvm_native.OPS)  # calls of @kc.func_native snippets
_OPS.update({op: _op_binary for op in ir.BINARY_OPS})
_OPS.update({op: _op_compare for op in ir.COMPARE_OPS})
_OPS.update({op: _op_unary for op in ir.UNARY_OPS})

_STMT = {
    ir.Op: FunctionEmitter.emit_op, ir.StoreSlot: FunctionEmitter.emit_store_slot,
    ir.If: FunctionEmitter.emit_if, ir.For: FunctionEmitter.emit_for,
    ir.While: FunctionEmitter.emit_while, ir.Break: FunctionEmitter.emit_break,
    ir.Continue: FunctionEmitter.emit_continue, ir.Return: FunctionEmitter.emit_return,
    ir.ArrayStore: FunctionEmitter.emit_array_store,
    ir.LocalStore: FunctionEmitter.emit_local_store, ir.Print: FunctionEmitter.emit_print,
    ir.Assert: FunctionEmitter.emit_assert,
}

__all__ = ["LlvmOptions", "LlvmSource", "emit_llvm", "args_struct", "ERROR_STRUCT", "I1"]
