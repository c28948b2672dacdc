"""Gradients of loop-invariant array reads, summed while a loop runs backwards.

A loop that reads `x[i]` at an index it does not change (and writes no arrays) would add
the read's gradient into `x.grad[i]` once per iteration: a chain through memory, and an
atomic. `FunctionAD.rev_loop` instead opens a `DeferredReads` frame; `rules.array_load`
asks `defer_read` to add the gradient to the frame's sum for that read, and after the loop
`flush_read` adds each non-zero sum into the gradient array once (or into the enclosing
loop's sum, when that loop does not change the read either).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelc.autodiff import rules
from kernelc.autodiff.values import add, has_arrays, nonzero, zero
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


@dataclass
class DeferredReads:
    """The gradients of array reads at indices a loop does not change, summed in a slot
    while the loop is reversed and added into the gradient array once after it: a
    per-iteration add into the same element is a chain through memory (and an atomic)."""

    variant: set[int]  # values that may differ between iterations
    defs: dict[int, ir.Op]  # the loop's other values (same in every iteration), by id
    sums: dict[tuple[int, ...], tuple[ir.Op, ir.Slot]]  # (array, indices) -> the read, its sum


def defer_read(ad, read: ir.Op, g: ir.Value) -> bool:
    """Adds `g`, the gradient of array read `read`, to the innermost reversed loop's
    sum for it when the loop changes neither the array nor the indices (see
    `DeferredReads`); False when it must go to the gradient array now."""
    frame = ad.deferred[-1] if ad.deferred else None
    if frame is None or any(a.id in frame.variant for a in read.args):
        return False
    key = tuple(a.id for a in read.args)
    found = frame.sums.get(key)
    if found is None:
        found = frame.sums[key] = (read, ad.new_slot(f"sum_adj{read.result.id}", g.type))
    slot = found[1]
    ad.b.store(slot, add(ad.b, ad.b.load(slot), g))
    return True


def flush_read(ad, frame: DeferredReads, read: ir.Op, slot: ir.Slot) -> None:
    """After the reversed loop: its sum for `read` goes into the gradient array (or into
    an outer loop's sum). Only a non-zero sum does, so a read the loop never reached
    touches nothing; its indices are computed again, as the loop's were."""
    b = ad.b
    total = b.load(slot)
    with b.region() as flush:
        for a in read.args:
            rematerialize(ad, frame, a)
        rules.array_load(ad, read, total)
    b.append(ir.If(b.loc, nonzero(b, total), tuple(flush)))
    b.store(slot, zero(b, slot.type))


def rematerialize(ad, frame: DeferredReads, v: ir.Value) -> None:
    """Emits again the loop's computation of the loop-invariant value `v` (a loop's
    values are not visible after it)."""
    op = frame.defs.get(v.id)
    if op is None or v.id in ad.stash:
        return
    for a in op.args:
        rematerialize(ad, frame, a)
    ad.env[v.id] = ad.b.op(op.opcode, [ad.val(a) for a in op.args], v.type, op.attr)


def deferrable_reads(s: ir.For | ir.While) -> DeferredReads | None:
    """The deferred-read frame of loop `s`, or None when its body writes arrays (a store's
    or an atomic's gradient reads the gradient array, which must then be up to date) or
    passes arrays to funcs (which may write them)."""
    blocks = (s.body,) if isinstance(s, ir.For) else (s.cond_body, s.body)
    stmts = [x for blk in blocks for x in ir.walk(blk)]
    stored = {x.slot.id for x in stmts if isinstance(x, (ir.StoreSlot, ir.LocalStore))}
    variant = {s.var.id} if isinstance(s, ir.For) else set()
    defs: dict[int, ir.Op] = {}
    for x in stmts:
        if isinstance(x, ir.ArrayStore):
            return None
        if isinstance(x, ir.For):
            variant.add(x.var.id)
        if not isinstance(x, ir.Op):
            continue
        if x.opcode is OpCode.ATOMIC or (x.opcode is OpCode.CALL_FUNC and any(
                has_arrays(a.type) for a in x.args)):
            return None
        if x.result is None:
            continue
        if x.opcode in _NOT_REMATERIALIZED or any(a.id in variant for a in x.args) or (
                x.opcode in (OpCode.LOAD_SLOT, OpCode.LOCAL_LOAD) and x.attr.id in stored):
            variant.add(x.result.id)
        else:
            defs[x.result.id] = x
    return DeferredReads(variant, defs, {})


# Ops whose result is taken as different in every iteration: calls (builtins may draw
# random numbers), reads of run-time structures.
_NOT_REMATERIALIZED = frozenset({OpCode.CALL, OpCode.CALL_FUNC, OpCode.ATOMIC,
                                 OpCode.LOAD_ADDRESS})
