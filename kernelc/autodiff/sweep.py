"""The reverse sweep of one function: its forward replay, then its statements reversed.

See `adjoint.py` for the whole transform. `FunctionAD` builds the body of a backward kernel
or of an adjoint func; `rules.py` holds what each op contributes.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelc import types as T
from kernelc.autodiff import deferred, native, rules
from kernelc.autodiff.exits import is_tail_break, max_id
from kernelc.autodiff.local_arrays import check_call, local_backed
from kernelc.autodiff.loop_slots import later_writes, needs_carried, read_before_written
from kernelc.autodiff.origins import parameter_bits
from kernelc.autodiff.values import add, differentiable, has_arrays, zero
from kernelc.errors import KernelError
from kernelc.frontend.builder import IRBuilder
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


@dataclass
class LoopInfo:
    counter: ir.Slot
    snapshots: list[tuple[ir.Slot, ir.Slot]]  # (carried slot, its copy before the loop)
    replay_all: bool
    # (slot, its copy at loop entry) for slots the loop reads that later code changes:
    # restored before the loop is reversed, which runs after that later code.
    entry: list[tuple[ir.Slot, ir.Slot]]


class FunctionAD:
    """Builds the body of one backward kernel or adjoint func."""

    def __init__(self, mad, fn: ir.Function):
        self.mad = mad
        self.fn = fn
        self.b = IRBuilder()
        self.b._next_id = max_id(fn)
        self.b.slots = list(fn.slots)
        self.env: dict[int, ir.Value] = {}
        self.shadow: dict[int, ir.Value] = {}
        self.param_bit: dict[int, int] = {}
        self._array_bits: dict[int, int] | None = None  # see store_bit
        self.mask: ir.Value | None = None
        # Known at launch (a backward kernel specialised on its launch's AdjointFacts):
        # the store mask, and the shadows known to be non-empty or empty arrays.
        self.known_mask: int | None = None
        self.nonempty: set[int] = set()
        self.empty: set[int] = set()  # shadows known to be missing or empty arrays
        self.in_if: set[int] = set()
        self._mark_in_if(fn.body, False)
        # Slots read somewhere: only those need their stores differentiated.
        self.loaded = {s.attr.id for s in ir.walk(fn.body) if isinstance(s, ir.Op)
                       and s.opcode in (OpCode.LOAD_SLOT, OpCode.LOCAL_LOAD)}
        self.local_backed = local_backed(fn)  # arrays whose stores a replay redoes
        self.stash: dict[int, ir.Slot] = {}
        self.stash_shadow: dict[int, ir.Slot] = {}
        self.shadow_slots: dict[int, ir.Slot] = {}
        self.adj_values: dict[int, ir.Slot] = {}
        self.adj_elements: dict[tuple[int, int], ir.Slot] = {}
        self.adj_slots: dict[int, ir.Slot] = {}
        self.loops: dict[int, LoopInfo] = {}
        self.returned: tuple[ir.Value, ...] = ()
        self.deferred: list[deferred.DeferredReads | None] = []  # per loop reversed
        self.later_writes: dict[int, frozenset[int]] = {}
        later_writes(fn.body, frozenset(), self.later_writes)
        self.native_results: set[int] = set()  # NATIVE outputs not replayed (native.py)

    # -- bookkeeping ------------------------------------------------------------------------

    def _mark_in_if(self, block: ir.Block, inside: bool) -> None:
        for s in block:
            if isinstance(s, ir.Op) and s.result is not None and inside:
                self.in_if.add(s.result.id)
            elif isinstance(s, ir.If):
                self._mark_in_if(s.then_body, True)
                self._mark_in_if(s.else_body, True)
            elif isinstance(s, ir.For):
                self._mark_in_if(s.body, False)
            elif isinstance(s, ir.While):
                self._mark_in_if(s.cond_body, False)
                self._mark_in_if(s.body, False)

    def new_slot(self, name: str, t: T.Type) -> ir.Slot:
        return self.b.new_slot(name, t)

    def val(self, v: ir.Value) -> ir.Value:
        """The current replayed value of primal value `v`."""
        slot = self.stash.get(v.id)
        if slot is not None:
            return self.b.load(slot)
        found = self.env.get(v.id)
        if found is None:
            raise KernelError(f"internal error: {v!r} has no replayed value",
                              self.fn.loc, self.fn.name)
        return found

    def sh(self, v: ir.Value) -> ir.Value | None:
        """The gradient counterpart (shadow) of an array or array-holding struct value."""
        slot = self.stash_shadow.get(v.id)
        if slot is not None:
            return self.b.load(slot)
        return self.shadow.get(v.id)

    def adj_value_slot(self, v: ir.Value) -> ir.Slot:
        slot = self.adj_values.get(v.id)
        if slot is None:
            slot = self.adj_values[v.id] = self.new_slot(f"adj{v.id}", v.type)
        return slot

    def adj_slot(self, slot: ir.Slot) -> ir.Slot:
        found = self.adj_slots.get(slot.id)
        if found is None:
            found = self.adj_slots[slot.id] = self.new_slot(f"adj_{slot.name}", slot.type)
        return found

    def acc(self, v: ir.Value, delta: ir.Value) -> None:
        """adj(v) += delta."""
        if not differentiable(v.type):
            return
        slot = self.adj_value_slot(v)
        self.b.store(slot, add(self.b, self.b.load(slot), delta))

    def acc_element(self, v: ir.Value, k: int, delta: ir.Value) -> None:
        """adj(v)[k] += delta for element k of a func's tuple of results."""
        key = (v.id, k)
        slot = self.adj_elements.get(key)
        if slot is None:
            slot = self.adj_elements[key] = self.new_slot(f"adj{v.id}_{k}", delta.type)
        self.b.store(slot, add(self.b, self.b.load(slot), delta))

    def defer_read(self, read: ir.Op, g: ir.Value) -> bool:
        """See `deferred.defer_read`."""
        return deferred.defer_read(self, read, g)

    def store_bit(self, array: ir.Value) -> int | None:
        """The mask bit of the kernel parameter an array comes from: the parameter itself,
        an array field of a struct parameter, a view of either, or a local holding only
        those (None for other arrays)."""
        if self._array_bits is None:
            self._array_bits = parameter_bits(self.fn, self.param_bit)
        return self._array_bits.get(array.id)

    # -- the whole body ---------------------------------------------------------------------

    def run(self, seeds: dict[int, ir.Value] | None = None,
            returns: list[ir.Value] | None = None) -> tuple[ir.Stmt, ...]:
        b = self.b
        b.loc = self.fn.loc
        with b.region() as forward:
            self.fwd_block(self.fn.body)
        with b.region() as reverse:
            b.loc = self.fn.loc
            for k, seed in (seeds or {}).items():
                self.acc(self.returned[k], seed)
            self.rev_block(self.fn.body)
            if returns is not None:
                values = []
                for p in returns:
                    slot = self.adj_values.get(p.id)
                    values.append(b.load(slot) if slot is not None else zero(b, p.type))
                b.append(ir.Return(self.fn.loc, tuple(values)))
        with b.region() as init:  # every adjoint starts at zero
            b.loc = self.fn.loc
            for slot in [*self.adj_values.values(), *self.adj_elements.values(),
                         *self.adj_slots.values()]:
                self.zero_slot(slot)
        return (*init, *forward, *reverse)

    def zero_slot(self, slot: ir.Slot) -> None:
        b = self.b
        if isinstance(slot.type, T.LocalArrayType):
            self.fill_local(slot, None)
        else:
            b.store(slot, zero(b, slot.type))

    def fill_local(self, dest: ir.Slot, src: ir.Slot | None) -> None:
        """dest[:] = src[:] (or 0) for local arrays, as a loop."""
        b = self.b
        i = b.new_value(T.int32)
        with b.region() as body:
            x = zero(b, dest.type.dtype) if src is None else \
                b.op(OpCode.LOCAL_LOAD, (i,), src.type.dtype, src)
            b.append(ir.LocalStore(b.loc, dest, i, x))
        b.append(ir.For(b.loc, i, b.const(0, T.int32), b.const(dest.type.length, T.int32),
                        b.const(1, T.int32), tuple(body)))

    def copy_slot(self, dest: ir.Slot, src: ir.Slot) -> None:
        if isinstance(src.type, T.LocalArrayType):
            self.fill_local(dest, src)
        else:
            self.b.store(dest, self.b.load(src))

    # -- forward replay ---------------------------------------------------------------------

    def fwd_block(self, block: ir.Block, skip_tail: bool = False) -> None:
        for s in block:
            if skip_tail and is_tail_break(s):
                continue
            self.fwd_stmt(s)

    def fwd_stmt(self, s: ir.Stmt) -> None:
        b = self.b
        b.loc = s.loc
        if isinstance(s, ir.Op):
            self.fwd_op(s)
        elif isinstance(s, ir.StoreSlot):
            b.store(s.slot, self.val(s.value))
            if has_arrays(s.slot.type):
                shadow = self.sh(s.value)
                if shadow is not None:
                    b.store(self.shadow_slot(s.slot), shadow)
        elif isinstance(s, ir.LocalStore):
            b.append(ir.LocalStore(s.loc, s.slot, self.val(s.index), self.val(s.value)))
        elif isinstance(s, ir.If):
            cond = self.val(s.cond)
            with b.region() as then_body:
                self.fwd_block(s.then_body)
            with b.region() as else_body:
                self.fwd_block(s.else_body)
            b.append(ir.If(s.loc, cond, tuple(then_body), tuple(else_body)))
        elif isinstance(s, ir.For):
            self.fwd_for(s)
        elif isinstance(s, ir.While):
            self.fwd_while(s)
        elif isinstance(s, ir.Break):
            b.append(ir.Break(s.loc))
        elif isinstance(s, ir.Return):
            self.returned = s.values
        elif isinstance(s, ir.ArrayStore) and s.array.id in self.local_backed:
            b.append(ir.ArrayStore(s.loc, self.val(s.array),
                                   tuple(self.val(i) for i in s.indices), self.val(s.value)))
        # Other array stores, prints and asserts happened in the forward launch.

    def shadow_slot(self, slot: ir.Slot) -> ir.Slot:
        found = self.shadow_slots.get(slot.id)
        if found is None:
            found = self.shadow_slots[slot.id] = self.new_slot(f"grad_{slot.name}", slot.type)
        return found

    def fwd_op(self, s: ir.Op) -> None:
        if native.skip_forward(self, s):
            return
        b = self.b
        args = [self.val(a) for a in s.args]
        rtype = s.result.type if s.result is not None else T.void
        if s.opcode is OpCode.ATOMIC and s.args[0].id in self.local_backed:
            new = b.op(OpCode.ATOMIC, args, rtype, s.attr)
        elif s.opcode is OpCode.ATOMIC:
            if s.result is None:
                return
            nd = s.args[0].type.ndim
            dtype = s.args[0].type.dtype
            new = b.op(OpCode.ARRAY_LOAD, args[:1 + nd], dtype)
            for k in () if isinstance(s.attr, str) else s.attr[1]:  # one field of a struct
                dtype = dtype.fields[k][1]
                new = b.op(OpCode.EXTRACT, (new,), dtype, k)
        elif s.opcode is OpCode.CALL_FUNC:
            if s.attr in self.mad.primal:
                check_call(s, self.mad.primal[s.attr], self.mad.primal, self.local_backed,
                           self.fn.name)
            new = b.op(OpCode.CALL_FUNC, args, rtype, self.mad.replay_name(s.attr))
        else:
            new = b.op(s.opcode, args, rtype, s.attr)
        if s.result is None:
            return
        rid = s.result.id
        self.env[rid] = new
        shadow = self.fwd_shadow(s) if has_arrays(rtype) else None
        if shadow is not None:
            self.shadow[rid] = shadow
        if rid in self.in_if and not isinstance(rtype, (T.TupleType, T.LocalArrayType)):
            slot = self.stash.get(rid) or self.new_slot(f"stash{rid}", rtype)
            b.store(slot, new)
            self.stash[rid] = slot
            if shadow is not None:
                sslot = self.stash_shadow.get(rid) or self.new_slot(f"stash_grad{rid}", rtype)
                b.store(sslot, shadow)
                self.stash_shadow[rid] = sslot

    def fwd_shadow(self, s: ir.Op) -> ir.Value | None:
        """The shadow of an array-valued op's result, computed alongside it."""
        b = self.b
        op = s.opcode
        t = s.result.type
        if op is OpCode.LOAD_SLOT:
            found = self.shadow_slots.get(s.attr.id)
            return b.load(found) if found is not None else None
        if op is OpCode.CONST:  # `S()`: its arrays are empty, and so are their gradients
            return b.op(OpCode.CONST, (), t, s.attr)
        if op is OpCode.CALL_FUNC:  # a func that returns arrays (a struct holding them)
            return self.call_shadow(s)
        if op is OpCode.EXTRACT and has_arrays(s.args[0].type):
            src = self.sh(s.args[0])
            return None if src is None else b.op(OpCode.EXTRACT, (src,), t, s.attr)
        if op is OpCode.SELECT:
            x, y = self.sh(s.args[1]), self.sh(s.args[2])
            if x is None or y is None:
                return None
            return b.op(OpCode.SELECT, (self.val(s.args[0]), x, y), t)
        if op is OpCode.ARRAY_AT and s.attr == "grad":  # an array whose gradient is known
            grad, dims = self.val(s.args[1]), [self.val(d) for d in s.args[2:]]
            present = b.op(OpCode.NE, (grad, b.const(0, T.uint64)), T.bool_)
            none = b.const(0, T.int32)  # a missing gradient array is empty (rules.py)
            dims[0] = b.op(OpCode.SELECT, (present, dims[0], none), T.int32)
            return b.op(OpCode.ARRAY_AT, (grad, *dims), t)
        if op is OpCode.ARRAY_VIEW:  # the same part of the gradient array
            src = self.sh(s.args[0])
            if src is None:
                return None
            return b.op(op, (src, *(self.val(a) for a in s.args[1:])), t, s.attr)
        if op in (OpCode.BUILD, OpCode.INSERT):
            parts = []
            for a in s.args:
                if has_arrays(a.type):
                    shadow = self.sh(a)
                    if shadow is None:
                        return None
                    parts.append(shadow)
                else:
                    parts.append(self.val(a))
            return b.op(op, parts, t, s.attr)
        return None

    def call_shadow(self, s: ir.Op) -> ir.Value | None:
        """The shadow of what func call `s` returns: the func's shadow twin, called with the
        arguments and the shadows of those holding arrays."""
        if self.mad.is_gradient(s.attr):
            return None
        twin = self.mad.shadow_func(s.attr)
        if twin is None:
            return None
        name, shadowed = twin
        args = [self.val(a) for a in s.args]
        for k in shadowed:
            shadow = self.sh(s.args[k])
            if shadow is None:
                return None
            args.append(shadow)
        return self.b.op(OpCode.CALL_FUNC, args, s.result.type, name)

    def loop_info(self, s: ir.For | ir.While) -> LoopInfo:
        found = self.loops.get(id(s))
        if found is not None:
            return found
        blocks = (s.body,) if isinstance(s, ir.For) else (s.cond_body, s.body)
        stored = {x.slot.id: x.slot for blk in blocks for x in ir.walk(blk)
                  if isinstance(x, (ir.StoreSlot, ir.LocalStore))}
        if isinstance(s, ir.While):
            carried, replay_all = set(stored), True
        else:
            carried = read_before_written(s.body) & set(stored)
            replay_all = bool(carried) and needs_carried(s.body, carried)
        snapshots = self._copies([stored[sid] for sid in sorted(carried)]) if replay_all else []
        reads = {x.attr.id: x.attr for blk in blocks for x in ir.walk(blk)
                 if isinstance(x, ir.Op) and x.opcode in (OpCode.LOAD_SLOT, OpCode.LOCAL_LOAD)}
        changed_later = set(reads) & self.later_writes.get(id(s), frozenset())
        if replay_all:
            changed_later -= carried
        entry = self._copies([reads[sid] for sid in sorted(changed_later)
                              if any(needs_carried(blk, {sid}) for blk in blocks)])
        info = LoopInfo(self.new_slot("trips", T.int32), snapshots, replay_all, entry)
        self.loops[id(s)] = info
        return info

    def _copies(self, slots: list[ir.Slot]) -> list[tuple[ir.Slot, ir.Slot]]:
        """(slot, a new slot to copy it into) for each slot and its array shadow."""
        out = []
        for slot in slots:
            out.append((slot, self.new_slot(f"before_{slot.name}", slot.type)))
            if has_arrays(slot.type):
                shadow = self.shadow_slot(slot)
                out.append((shadow, self.new_slot(f"before_{shadow.name}", shadow.type)))
        return out

    def fwd_for(self, s: ir.For) -> None:
        b = self.b
        info = self.loop_info(s)
        b.store(info.counter, b.const(0, T.int32))
        for slot, copy in (*info.snapshots, *info.entry):
            self.copy_slot(copy, slot)
        start, stop, step = self.val(s.start), self.val(s.stop), self.val(s.step)
        var = b.new_value(s.var.type)
        with b.region() as body:
            self.env[s.var.id] = var
            self._count(info)
            self.fwd_block(s.body)
        b.append(ir.For(s.loc, var, start, stop, step, tuple(body)))

    def fwd_while(self, s: ir.While) -> None:
        b = self.b
        info = self.loop_info(s)
        b.store(info.counter, b.const(0, T.int32))
        for slot, copy in (*info.snapshots, *info.entry):
            self.copy_slot(copy, slot)
        with b.region() as cond_body:
            self.fwd_block(s.cond_body)
        cond = self.val(s.cond)
        with b.region() as body:
            self._count(info)
            self.fwd_block(s.body)
        b.append(ir.While(s.loc, tuple(cond_body), cond, tuple(body)))

    def _count(self, info: LoopInfo) -> None:
        b = self.b
        n = b.load(info.counter)
        b.store(info.counter, b.op(OpCode.ADD, (n, b.const(1, T.int32)), T.int32))

    # -- reverse sweep ----------------------------------------------------------------------

    def rev_block(self, block: ir.Block) -> None:
        for s in reversed(block):
            self.rev_stmt(s)

    def rev_stmt(self, s: ir.Stmt) -> None:
        b = self.b
        b.loc = s.loc
        if isinstance(s, ir.Op):
            self.rev_op(s)
        elif isinstance(s, ir.StoreSlot):
            if differentiable(s.slot.type) and s.slot.id in self.loaded:
                adj = self.adj_slot(s.slot)
                self.acc(s.value, b.load(adj))
                b.store(adj, zero(b, s.slot.type))
        elif isinstance(s, ir.LocalStore):
            if differentiable(s.slot.type.dtype) and s.slot.id in self.loaded:
                adj = self.adj_slot(s.slot)
                index = self.val(s.index)
                self.acc(s.value, b.op(OpCode.LOCAL_LOAD, (index,), s.slot.type.dtype, adj))
                b.append(ir.LocalStore(s.loc, adj, index, zero(b, s.slot.type.dtype)))
        elif isinstance(s, ir.ArrayStore):
            rules.array_store(self, s)
        elif isinstance(s, ir.If):
            cond = self.val(s.cond)
            with b.region() as then_body:
                self.rev_block(s.then_body)
            with b.region() as else_body:
                self.rev_block(s.else_body)
            if then_body or else_body:
                b.append(ir.If(s.loc, cond, tuple(then_body), tuple(else_body)))
        elif isinstance(s, (ir.For, ir.While)):
            self.rev_loop(s)

    def rev_op(self, s: ir.Op) -> None:
        if s.opcode is OpCode.NATIVE:
            native.reverse(self, s)
            return
        if s.opcode is OpCode.CALL_FUNC:
            self.rev_call(s)
            return
        if s.opcode is OpCode.ATOMIC:
            rules.atomic(self, s)
            return
        r = s.result
        if r is None or r.id not in self.adj_values:
            return  # no gradient reached this value
        slot = self.adj_values[r.id]
        g = self.b.load(slot)
        rules.apply(self, s, g)
        self.b.store(slot, zero(self.b, r.type))  # ready for the next iteration of a loop

    def rev_call(self, s: ir.Op) -> None:
        if self.mad.is_gradient(s.attr):
            return
        fn = self.mad.primal[s.attr]
        if s.attr not in self.mad.custom and not any(
                differentiable(t) for t in fn.return_types) and not any(
                has_arrays(p.type) for p in fn.params) and not self.mad.reads_own_gradients(
                s.attr):
            return  # no gradient can flow through it: do not even build its adjoint
        b = self.b
        info = self.mad.adjoint_func(s.attr)
        r = s.result
        if isinstance(r.type if r is not None else None, T.TupleType):
            keys = [(r.id, k) for k in info.diff_results]
            reached = any(k in self.adj_elements for k in keys)
        else:
            reached = r is not None and r.id in self.adj_values
        if not info.shadow_params and not (reached and (
                info.diff_params or self.mad.reads_own_gradients(s.attr))):
            return
        args = [self.val(a) for a in s.args]
        for k in info.shadow_params:
            shadow = self.sh(s.args[k])
            if shadow is None:
                raise KernelError(f"cannot differentiate the call of '{s.attr}': the "
                                  f"gradient of its argument {fn.param_names[k]!r} is not "
                                  f"known here", s.loc, self.fn.name)
            args.append(shadow)
        for k in info.diff_results:
            t = fn.return_types[k]
            if isinstance(r.type, T.TupleType):
                slot = self.adj_elements.get((r.id, k))
            else:
                slot = self.adj_values.get(r.id)
            args.append(b.load(slot) if slot is not None else zero(b, t))
        out_types = [s.args[k].type for k in info.diff_params]
        rtype = T.void if not out_types else out_types[0] if len(out_types) == 1 \
            else T.TupleType(tuple(out_types))
        grads = b.op(OpCode.CALL_FUNC, args, rtype, info.name)
        for j, k in enumerate(info.diff_params):
            g = grads if len(out_types) == 1 else \
                b.op(OpCode.EXTRACT, (grads,), out_types[j], j)
            self.acc(s.args[k], g)
        if r is not None and isinstance(r.type, T.TupleType):
            for k in info.diff_results:
                slot = self.adj_elements.get((r.id, k))
                if slot is not None:
                    b.store(slot, zero(b, slot.type))
        elif r is not None and r.id in self.adj_values:
            b.store(self.adj_values[r.id], zero(b, r.type))

    def rev_loop(self, s: ir.For | ir.While) -> None:
        """Iterations backwards, each recomputed (after replaying the ones before it from
        the snapshot, when they carry state it needs) and then reversed."""
        b = self.b
        info = self.loop_info(s)
        is_for = isinstance(s, ir.For)
        for slot, copy in info.entry:
            self.copy_slot(slot, copy)
        n = b.load(info.counter)
        one = b.const(1, T.int32)
        rev = b.new_value(T.int32)
        frame = deferred.deferrable_reads(s)
        self.deferred.append(frame)
        with b.region() as body:
            last = b.op(OpCode.SUB, (n, one), T.int32)
            t = b.op(OpCode.SUB, (last, rev), T.int32)
            if info.replay_all:
                for slot, copy in info.snapshots:
                    self.copy_slot(slot, copy)
                m = b.new_value(T.int32)
                with b.region() as replay:
                    self.recompute(s, m)
                b.append(ir.For(s.loc, m, b.const(0, T.int32), t, one, tuple(replay)))
            self.recompute(s, t)
            self.rev_block(s.body)
            if not is_for:
                self.rev_block(s.cond_body)
        self.deferred.pop()
        b.append(ir.For(s.loc, rev, b.const(0, T.int32), n, one, tuple(body)))
        for read, slot in frame.sums.values() if frame is not None else ():
            deferred.flush_read(self, frame, read, slot)

    def recompute(self, s: ir.For | ir.While, index: ir.Value) -> None:
        """The forward of iteration `index` (counted from 0) of loop `s`."""
        b = self.b
        if isinstance(s, ir.For):
            vt = s.var.type
            k = b.cast(index, vt)
            self.env[s.var.id] = b.op(
                OpCode.ADD, (self.val(s.start),
                             b.op(OpCode.MUL, (k, self.val(s.step)), vt)), vt)
        else:
            self.fwd_block(s.cond_body)
        self.fwd_block(s.body, skip_tail=True)

