"""A kernel's threads as SIMD lanes: each lane of a vector is one thread (ISPC/Dr.Jit style).

LLVM vectorises the loop over threads only when it is the innermost loop. A kernel with a
loop of its own (an N-body sum over `j`, a quadrature loop) therefore ran one thread at a
time. Here the kernel body is emitted once for a *packet* of W consecutive threads:

- uniform values (`kernelc.ir.varying`) stay scalar; varying ones are vectors;
- control flow that varies between lanes runs under an execution mask: both sides of an
  `if`, a loop while any lane is still in it; `return`, `break` and `continue` take the
  lanes that run them out of the mask (`ret`, and the loop's `brk`/`cont`);
- loads and stores become masked gathers and scatters (one vector load when the index is
  the thread index plus a uniform offset and the array is contiguous), and so do reads of
  runtime structures (hash grids, meshes, volumes) through their raw addresses;
- a func called with varying arguments, or that depends on the thread, is called in a
  lane-wise form (vectors and the execution mask in, vectors out), one per pattern of
  varying arguments; with uniform arguments, in its scalar form, once;
- anything else (atomics, views, local arrays of varying content, prints) runs the
  scalar lowering once per active lane.

The packet loop takes W consecutive threads at a time (by linear index, whatever the
launch's dimensions); the last packet masks the threads past `end`.
"""

from __future__ import annotations

from llvmlite import ir as ll

from kernelc import types as T
from kernelc.codegen import llvm_lanes as lanes
from kernelc.codegen import llvm_loops, llvm_simd_ops
from kernelc.codegen import llvm_ops as ops
from kernelc.codegen.llvm import _OPS, FunctionEmitter, _ModuleState
from kernelc.codegen.llvm_ops import I1, I32, PTR, llvm_type
from kernelc.codegen.llvm_simd_choice import callee_info
from kernelc.ir import nodes as ir
from kernelc.ir import varying
from kernelc.ir.nodes import OpCode


class _Loop:
    def __init__(self, latch: ll.Block, exit_: ll.Block, brk=None, cont=None):
        self.latch, self.exit, self.brk, self.cont = latch, exit_, brk, cont


class SimdEmitter(FunctionEmitter):
    """Emits the kernel of a module as a loop over packets of `width` threads."""

    def __init__(self, state: _ModuleState, kernel: ir.Function, info: varying.Varying,
                 width: int):
        super().__init__(state, kernel)
        self.width = width
        self.mask_type = ll.VectorType(I1, width)
        self.info = info
        self.lane: ll.Value | None = None  # the lane whose scalar code is being emitted
        self.affine: dict[int, ll.Value] = {}  # value id -> u where value = u + lane index
        self.frames: list[_Loop] = []
        self.skip: list[ll.Block] = []  # where a region goes when no lane is left in it
        self.divergent = 0  # depth of varying ifs and masked loops around the emitted code
        self.results: list[ll.Value] = []  # a lane-wise func's result slots

    # ---- values -----------------------------------------------------------------------

    def varies(self, value: ir.Value) -> bool:
        return value.id in self.info.values

    def v(self, value: ir.Value) -> ll.Value:
        x = self.values[value.id]
        if self.lane is not None and value.id in self.info.values:
            return lanes.lane(self.b, x, self.lane)
        return x

    def vec(self, value: ir.Value) -> ll.Value:
        """`value` lane-wise (a uniform one broadcast)."""
        x = self.values[value.id]
        return x if value.id in self.info.values else lanes.splat(self.b, x, self.width)

    def wide(self, t: T.Type, memory: bool = False) -> ll.Type:
        return lanes.wide(llvm_type(t, memory), self.width)

    # ---- masks ------------------------------------------------------------------------

    def mask(self) -> ll.Value:
        """The lanes that run the code being emitted."""
        b = self.b
        m = b.and_(self.base, b.not_(b.load(self.ret, typ=self.mask_type)))
        frame = self.frames[-1] if self.frames else None
        if frame is not None and frame.brk is not None:
            left = b.or_(b.load(frame.brk, typ=self.mask_type), b.load(frame.cont, typ=self.mask_type))
            m = b.and_(m, b.not_(left))
        return m

    def mask_slot(self, name: str) -> ll.Value:
        return self.entry_alloca(self.mask_type, name)

    def entry_alloca(self, t: ll.Type, name: str) -> ll.Value:
        with self.b.goto_block(self.entry_block):
            self.b.position_at_start(self.entry_block)
            return self.b.alloca(t, name=name)

    def add_to(self, slot: ll.Value, m: ll.Value) -> None:
        self.b.store(self.b.or_(self.b.load(slot, typ=self.mask_type), m), slot)

    def guard(self, stmt: ir.Stmt) -> None:
        """After `stmt`: leaves the current region when no lane is left in it (a `return`,
        `break` or `continue` inside may have taken the last ones)."""
        if self.b.block.is_terminated or not _has_exit(stmt):
            return
        go = self.llfn.append_basic_block("lanes.left")
        self.b.cbranch(lanes.any_lane(self.b, self.mask()), go, self.skip[-1])
        self.b.position_at_end(go)

    # ---- the kernel shell -------------------------------------------------------------

    def emit_thread_loops(self, start: ll.Value, end: ll.Value) -> None:
        b = self.b
        self.ret = b.alloca(self.mask_type, name="ret")
        self.packets(llvm_loops.non_negative(b, b.trunc(start, I32)), b.trunc(end, I32))

    def slot_type(self, slot: ir.Slot) -> ll.Type:
        t = llvm_type(slot.type, memory=isinstance(slot.type, T.LocalArrayType))
        if slot.id not in self.info.slots:
            return t
        # A local array of varying content: one copy per lane, lane after lane.
        local = isinstance(slot.type, T.LocalArrayType)
        return ll.ArrayType(t, self.width) if local else lanes.wide(t, self.width)

    def alloc_slots(self) -> None:
        for s in self.fn.slots:
            self.slots[s.id] = self.b.alloca(self.slot_type(s), name=s.name)

    def zero_slots(self) -> None:
        for s in self.fn.slots:
            if not isinstance(s.type, T.LocalArrayType):
                slot = self.slots[s.id]
                self.b.store(ll.Constant(slot.allocated_type, None), slot)

    def packets(self, first: ll.Value, stop: ll.Value) -> None:
        """Packets of `width` consecutive threads over [first, stop).

        A multi-dimensional launch is packed by linear thread index too, its tid()
        components divided out lane-wise, so that a short last dimension (fem's one dof
        per node) still fills the packets."""
        b, width = self.b, self.width

        def body(t: ll.Value, latch: ll.Block) -> None:
            self.tid_vec = b.add(lanes.splat(b, t, width), lanes.iota(width), flags=["nsw"])
            self.tid_base = t
            b.store(b.icmp_signed(">=", self.tid_vec, lanes.splat(b, stop, width)), self.ret)
            ndim = llvm_loops.launch_ndim(self.fn)
            self.tid_parts = self.tid_components(ndim) if ndim >= 2 else None
            self.tid = I32(0)  # (for calls of funcs that never read it: see emit_op)
            self.base = lanes.all_true(width)
            self.return_to = latch
            self.skip = [latch]
            self.zero_slots()
            self.emit_block(self.fn.body)

        llvm_loops.counted_loop(self, first, stop, width, "packet", body)

    def tid_components(self, ndim: int) -> list[ll.Value]:
        """tid()'s components for the packet's lanes (row-major over the launch dims)."""
        b = self.b
        dims = [b.trunc(d, I32) for d in llvm_loops.launch_dims(self, ndim)]
        parts, rest = [], self.tid_vec
        for d in reversed(dims[1:]):
            rest, part = lanes.divmod_by(b, rest, d)
            parts.insert(0, part)
        return [rest, *parts]

    # ---- statements -------------------------------------------------------------------

    def emit_block(self, block: ir.Block) -> None:
        for stmt in block:
            if self.b.block.is_terminated:
                return  # after a return/break/continue that every lane of the region ran
            kind = type(stmt)
            if kind is ir.Op:
                self.emit_op(stmt)
            else:
                _SIMD_STMT[kind](self, stmt)

    def emit_op(self, s: ir.Op) -> None:
        if s.opcode == OpCode.CONST:
            self.consts[s.result.id] = s.attr
        if s.opcode == OpCode.CALL_FUNC and (s.attr in self.info.lane_funcs or any(
                a.id in self.info.values for a in s.args)):  # (void funcs too)
            value = self.call_lanes(s)
            if s.result is not None:
                self.values[s.result.id] = value
        elif s.result is not None and s.result.id in self.info.values:
            lowering = llvm_simd_ops.OPS.get(s.opcode)
            value = lowering(self, s) if lowering is not None else None
            if value is None:  # no lane-wise lowering for this case: one lane at a time
                value = self.per_lane(lambda: _OPS[s.opcode](self, s), s.result.type)
            self.values[s.result.id] = value
        else:
            value = _OPS[s.opcode](self, s)  # uniform: the scalar lowering, once
            if s.result is not None:
                self.values[s.result.id] = value

    def per_lane(self, emit, result: T.Type | None = None) -> ll.Value | None:
        """Runs `emit` (scalar code reading the current lane through `v`) once for each
        active lane, lowest first; gathers its results lane-wise."""
        b, f = self.b, self.llfn
        bits_t = ll.IntType(self.width)
        out = None
        if result is not None:
            out_t = self.wide(result)
            out = self.entry_alloca(out_t, "lanes.out")
            b.store(ll.Constant(out_t, None), out)
        before = b.block
        bits0 = b.bitcast(self.mask(), bits_t)
        loop_bb = f.append_basic_block("lane.loop")
        body_bb = f.append_basic_block("lane.body")
        done_bb = f.append_basic_block("lane.done")
        b.branch(loop_bb)
        b.position_at_end(loop_bb)
        bits = b.phi(bits_t)
        bits.add_incoming(bits0, before)
        b.cbranch(b.icmp_unsigned("!=", bits, ll.Constant(bits_t, 0)), body_bb, done_bb)
        b.position_at_end(body_bb)
        cttz = ops.declare(b.module, f"llvm.cttz.i{self.width}", bits_t, [bits_t, I1])
        k = b.call(cttz, [bits, ll.Constant(I1, 1)])
        k = b.zext(k, I32) if self.width < 32 else b.trunc(k, I32) if self.width > 32 else k
        saved = self.lane, self.tid, self.tid_parts
        # (the scalar tid() lowering divides the lane's linear index itself)
        self.lane, self.tid, self.tid_parts = k, b.extract_element(self.tid_vec, k), None
        value = emit()
        if out is not None:
            b.store(lanes.with_lane(b, b.load(out, typ=out_t), value, k), out)
        self.lane, self.tid, self.tid_parts = saved
        bits.add_incoming(b.and_(bits, b.sub(bits, ll.Constant(bits_t, 1))), b.block)
        b.branch(loop_bb)
        b.position_at_end(done_bb)
        return b.load(out, typ=out_t) if out is not None else None

    def emit_store_slot(self, s: ir.StoreSlot) -> None:
        slot = self.slots[s.slot.id]
        if s.slot.id not in self.info.slots:
            self.b.store(self.values[s.value.id], slot)
            return
        value = self.vec(s.value)
        if self.divergent:
            value = lanes.select(self.b, self.mask(), value, self.b.load(slot, typ=value.type))
        self.b.store(value, slot)

    def emit_if(self, s: ir.If) -> None:
        if not self.varies(s.cond):
            b = self.b
            then_bb = self.llfn.append_basic_block("if.then")
            else_bb = self.llfn.append_basic_block("if.else")
            end_bb = self.llfn.append_basic_block("if.end")
            b.cbranch(self.values[s.cond.id], then_bb, else_bb)
            for bb, body in ((then_bb, s.then_body), (else_bb, s.else_body)):
                b.position_at_end(bb)
                self.skip.append(end_bb)
                self.emit_block(body)
                self.skip.pop()
                if not b.block.is_terminated:
                    b.branch(end_bb)
            b.position_at_end(end_bb)
            self.guard(s)
            return
        m, c = self.mask(), self.values[s.cond.id]
        self.divergent += 1
        self._masked(self.b.and_(m, c), s.then_body)
        self._masked(self.b.and_(m, self.b.not_(c)), s.else_body)
        self.divergent -= 1
        self.guard(s)

    def _masked(self, m: ll.Value, body: ir.Block) -> None:
        """`body` for the lanes of `m`, skipped when there are none."""
        if not body:
            return
        b = self.b
        body_bb = self.llfn.append_basic_block("lanes.then")
        end_bb = self.llfn.append_basic_block("lanes.end")
        b.cbranch(lanes.any_lane(b, m), body_bb, end_bb)
        b.position_at_end(body_bb)
        saved, self.base = self.base, m
        self.skip.append(end_bb)
        self.emit_block(body)
        self.skip.pop()
        self.base = saved
        if not b.block.is_terminated:
            b.branch(end_bb)
        b.position_at_end(end_bb)

    def emit_for(self, s: ir.For) -> None:
        masked = id(s) in self.info.loops
        b, f = self.b, self.llfn
        cond_bb = f.append_basic_block("for.cond")
        body_bb = f.append_basic_block("for.body")
        latch_bb = f.append_basic_block("for.next")
        exit_bb = f.append_basic_block("for.end")
        entry = self.mask()
        var_varies = self.varies(s.var)
        if var_varies:
            start, stop, step = self.vec(s.start), self.vec(s.stop), self.vec(s.step)
            counter_t = start.type
            counter = self.entry_alloca(counter_t, "for.i")
            b.store(start, counter)
        else:
            start, stop, step = (self.values[x.id] for x in (s.start, s.stop, s.step))
        frame = _Loop(latch_bb, exit_bb)
        if masked:
            frame.brk, frame.cont = self.mask_slot("brk"), self.mask_slot("cont")
            b.store(ll.Constant(self.mask_type, None), frame.brk)
        pre = b.block
        b.branch(cond_bb)
        b.position_at_end(cond_bb)
        if var_varies:
            i = b.load(counter, typ=counter_t)
        else:
            i = b.phi(start.type)
            i.add_incoming(start, pre)
        go = self._range_test(s, i, stop, step)
        saved, self.base = self.base, entry  # (lanes gone from outer loops stay out)
        self.frames.append(frame)
        if masked:
            b.store(ll.Constant(self.mask_type, None), frame.cont)
            active = self.mask()
            if var_varies:
                active = b.and_(active, go)
            self.base = active
            left = lanes.any_lane(b, active)
            go = left if var_varies else b.and_(go, left)
        b.cbranch(go, body_bb, exit_bb)
        b.position_at_end(body_bb)
        self.values[s.var.id] = i
        self.skip.append(latch_bb if masked else exit_bb)
        self.divergent += masked
        self.emit_block(s.body)
        self.divergent -= masked
        self.skip.pop()
        self.frames.pop()
        if not b.block.is_terminated:
            b.branch(latch_bb)
        b.position_at_end(latch_bb)
        if var_varies:
            b.store(b.add(b.load(counter, typ=counter_t), step), counter)
        else:
            i.add_incoming(b.add(i, step), latch_bb)
        b.branch(cond_bb)
        b.position_at_end(exit_bb)
        self.base = saved
        self.guard(s)

    def emit_while(self, s: ir.While) -> None:
        masked = id(s) in self.info.loops
        b, f = self.b, self.llfn
        cond_bb = f.append_basic_block("while.cond")
        body_bb = f.append_basic_block("while.body")
        exit_bb = f.append_basic_block("while.end")
        entry = self.mask()
        frame = _Loop(cond_bb, exit_bb)
        if masked:
            frame.brk, frame.cont = self.mask_slot("brk"), self.mask_slot("cont")
            b.store(ll.Constant(self.mask_type, None), frame.brk)
        saved, self.base = self.base, entry  # (lanes gone from outer loops stay out)
        b.branch(cond_bb)
        b.position_at_end(cond_bb)
        self.frames.append(frame)
        self.skip.append(exit_bb)
        self.divergent += masked
        if masked:
            b.store(ll.Constant(self.mask_type, None), frame.cont)
            self.base = self.mask()
        self.emit_block(s.cond_body)
        if masked:
            c = self.vec(s.cond)
            active = self.mask()
            self.add_to(frame.brk, b.and_(active, b.not_(c)))  # these lanes are done
            self.base = b.and_(active, c)
            go = lanes.any_lane(b, self.base)
        else:
            go = self.values[s.cond.id]
        if not b.block.is_terminated:
            b.cbranch(go, body_bb, exit_bb)
        self.skip[-1] = cond_bb if masked else exit_bb
        b.position_at_end(body_bb)
        self.emit_block(s.body)
        if not b.block.is_terminated:
            b.branch(cond_bb)
        self.divergent -= masked
        self.skip.pop()
        self.frames.pop()
        b.position_at_end(exit_bb)
        self.base = saved
        self.guard(s)

    def emit_break(self, s: ir.Break) -> None:
        frame = self.frames[-1]
        if frame.brk is None:  # every lane in the region leaves the loop together
            self.b.branch(frame.exit)
            return
        self.add_to(frame.brk, self.mask())
        self.b.branch(self.skip[-1])

    def emit_continue(self, s: ir.Continue) -> None:
        frame = self.frames[-1]
        if frame.cont is None:
            self.b.branch(frame.latch)
            return
        self.add_to(frame.cont, self.mask())
        self.b.branch(self.skip[-1])

    def emit_return(self, s: ir.Return) -> None:
        m = self.mask() if self.divergent or self.results else None
        for value, slot in zip(s.values, self.results):  # (a lane-wise func's results)
            # (masked: lanes that returned earlier keep their results)
            new = lanes.select(self.b, m, self.vec(value), self.b.load(slot, typ=slot.allocated_type))
            self.b.store(new, slot)
        if not self.divergent:  # every lane still in the function leaves
            self.b.branch(self.return_to)
            return
        self.add_to(self.ret, m)
        self.b.branch(self.skip[-1])

    def call_lanes(self, s: ir.Op) -> ll.Value | None:
        """A func called with varying arguments (or one that depends on the thread): a
        call of its lane-wise form for this pattern of varying (and affine) arguments,
        emitted once per module."""
        varies = tuple(a.id in self.info.values for a in s.args)
        affine = tuple(a.id in self.affine for a in s.args)
        key = ("lanes", s.attr, varies, affine)
        f = self.state.variants.get(key)
        args = [self.values[a.id] for a in s.args]
        extra = [self.affine[a.id] for a in s.args if a.id in self.affine]
        if f is None:
            callee = self.state.func_ir[s.attr]
            ret = [self.wide(t) for t in callee.return_types]
            ret_t = (ll.VoidType() if not ret else ret[0] if len(ret) == 1
                     else ll.LiteralStructType(ret))
            params = [PTR, self.tid_vec.type, self.mask_type]
            fnty = ll.FunctionType(ret_t, params + [a.type for a in args + extra])
            name = f"{self.state.entry}__{callee.name}.lanes{len(self.state.variants)}"
            f = ll.Function(self.state.llmod, fnty, name)
            f.linkage = "internal"
            f.attributes.add("nounwind")
            self.state.variants[key] = f
            info = callee_info(callee, s, self.info)
            SimdEmitter(self.state, callee, info, self.width).emit_lane_func(f, affine)
        return self.b.call(f, [self.ctx, self.tid_vec, self.mask(), *args, *extra])

    def emit_lane_func(self, f: ll.Function, affine: tuple[bool, ...]) -> None:
        """The body of a func's lane-wise form (`call_lanes`): it runs for the lanes of its
        mask argument; a lane's `return` takes it out of the mask, as in a loop's `break`."""
        self.llfn = f
        self.entry_block = f.append_basic_block("entry")
        b = self.b = ll.IRBuilder(self.entry_block)
        self.ctx, self.tid_vec, self.base = f.args[:3]
        self.tid, self.tid_base = I32(0), b.extract_element(self.tid_vec, I32(0))
        ndim = llvm_loops.launch_ndim(self.fn)  # (funcs that call tid() themselves)
        self.tid_parts = self.tid_components(ndim) if ndim >= 2 else None
        params = self.fn.params
        for p, a in zip(params, f.args[3:]):
            self.values[p.id] = a
        bases = iter(f.args[3 + len(params):])
        for p, is_affine in zip(params, affine):
            if is_affine:
                self.affine[p.id] = next(bases)
        self.ret = b.alloca(self.mask_type, name="returned")
        b.store(ll.Constant(self.mask_type, None), self.ret)
        self.results = []
        for t in self.fn.return_types:  # (lanes that never return get zeros, as scalars do)
            slot = b.alloca(self.wide(t), name="result")
            b.store(ll.Constant(slot.allocated_type, None), slot)
            self.results.append(slot)
        end_bb = f.append_basic_block("end")
        self.return_to, self.skip = end_bb, [end_bb]
        self.alloc_slots()
        self.zero_slots()
        self.emit_block(self.fn.body)
        if not b.block.is_terminated:
            b.branch(end_bb)
        b.position_at_end(end_bb)
        loaded = [b.load(r, typ=r.allocated_type) for r in self.results]
        if not loaded:
            b.ret_void()
        elif len(loaded) == 1:
            b.ret(loaded[0])
        else:
            out = ll.Constant(f.function_type.return_type, None)
            for k, v in enumerate(loaded):
                out = b.insert_value(out, v, k)
            b.ret(out)

    def emit_array_store(self, s: ir.ArrayStore) -> None:
        if not any(self.varies(x) for x in (s.array, *s.indices, s.value)):
            FunctionEmitter.emit_array_store(self, s)  # the same store from every lane
        elif not llvm_simd_ops.store(self, s):
            self.per_lane(lambda: FunctionEmitter.emit_array_store(self, s))

    def emit_local_store(self, s: ir.LocalStore) -> None:
        if s.slot.id in self.info.slots:
            self.per_lane(lambda: FunctionEmitter.emit_local_store(self, s))
        else:
            FunctionEmitter.emit_local_store(self, s)

    def local_ptr(self, slot: ir.Slot, index: ir.Value, loc):
        if slot.id not in self.info.slots:
            return FunctionEmitter.local_ptr(self, slot, index, loc)
        base = self.slots[slot.id]
        saved = base
        # (no source_etype: llvmlite then types the lane's pointer as its copy's)
        self.slots[slot.id] = self.b.gep(base, [I32(0), self.lane])
        try:
            return FunctionEmitter.local_ptr(self, slot, index, loc)
        finally:
            self.slots[slot.id] = saved

    def emit_print(self, s: ir.Print) -> None:
        self.per_lane(lambda: FunctionEmitter.emit_print(self, s))


def _has_exit(stmt: ir.Stmt) -> bool:
    body = ([stmt] if isinstance(stmt, ir.Op) else list(ir.walk((stmt,))))
    return any(isinstance(x, (ir.Return, ir.Break, ir.Continue)) for x in body)


_SIMD_STMT = {
    ir.StoreSlot: SimdEmitter.emit_store_slot, ir.If: SimdEmitter.emit_if,
    ir.For: SimdEmitter.emit_for, ir.While: SimdEmitter.emit_while,
    ir.Break: SimdEmitter.emit_break, ir.Continue: SimdEmitter.emit_continue,
    ir.Return: SimdEmitter.emit_return, ir.ArrayStore: SimdEmitter.emit_array_store,
    ir.LocalStore: SimdEmitter.emit_local_store, ir.Print: SimdEmitter.emit_print,
    ir.Assert: lambda e, s: None,  # checked in debug mode only, which runs scalar code
}
