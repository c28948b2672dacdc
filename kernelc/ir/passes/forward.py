"""Slot forwarding: a slot load after a store in the same region reads the stored value.

Python locals are slots in the IR. Forwarding their stores to later loads lets constant
propagation and value numbering see through variables, and a slot that is never loaded
afterwards loses its stores. Regions are handled conservatively: a branch or loop that
may store a slot forgets what was known about it (a loop forgets it before its body too,
since the store may come from the previous iteration).
"""

from __future__ import annotations

import dataclasses

from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode
from kernelc.ir.passes.rewrite import map_block, substitute


def slot_forwarding(fn: ir.Function) -> ir.Function:
    subst: dict[ir.Value, ir.Value] = {}
    # Slots whose address is taken (`kc.address_of`): native code may write them anywhere.
    escaped = {s.attr[0].id for s in ir.walk(fn.body)
               if isinstance(s, ir.Op) and s.opcode == OpCode.SLOT_ADDRESS}

    def block(b: ir.Block, known: dict[int, ir.Value]) -> ir.Block:
        known = dict(known)
        out: list[ir.Stmt] = []
        for s in b:
            s = substitute(s, subst)
            if isinstance(s, ir.Op) and s.opcode == OpCode.LOAD_SLOT and s.attr.id in known:
                subst[s.result] = known[s.attr.id]
                continue
            if isinstance(s, ir.StoreSlot) and s.slot.id not in escaped:
                known[s.slot.id] = s.value
            elif isinstance(s, ir.If):
                s = ir.If(s.loc, s.cond, block(s.then_body, known), block(s.else_body, known))
                _forget(known, s)
            elif isinstance(s, ir.For):
                _forget(known, s)
                s = ir.For(s.loc, s.var, s.start, s.stop, s.step, block(s.body, known))
            elif isinstance(s, ir.While):
                _forget(known, s)
                s = ir.While(s.loc, block(s.cond_body, known), subst.get(s.cond, s.cond),
                             block(s.body, known))
            out.append(s)
        return tuple(out)

    body = block(fn.body, {})
    loaded = escaped | {s.attr.id for s in ir.walk(body)
                        if isinstance(s, ir.Op) and s.opcode == OpCode.LOAD_SLOT}
    body = map_block(body, lambda s: None if isinstance(s, ir.StoreSlot)
                     and s.slot.id not in loaded else s)
    used = loaded | {s.slot.id for s in ir.walk(body) if isinstance(s, (ir.StoreSlot,
                                                                        ir.LocalStore))}
    used |= {s.attr[0].id for s in ir.walk(body)  # a local array stored into as an array
             if isinstance(s, ir.Op) and s.opcode == OpCode.LOCAL_ARRAY}
    return dataclasses.replace(fn, body=body, slots=tuple(s for s in fn.slots if s.id in used))


def _forget(known: dict[int, ir.Value], region: ir.Stmt) -> None:
    for s in ir.walk((region,)):
        if isinstance(s, ir.StoreSlot):
            known.pop(s.slot.id, None)
