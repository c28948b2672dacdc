"""Which slots a loop's iterations carry, for the backward pass of loops (`sweep.py`)."""

from __future__ import annotations

from kernelc.autodiff import rules
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


def stored_slots(block: ir.Block) -> set[int]:
    """Slots (and local arrays) stored in `block`."""
    return {x.slot.id for x in ir.walk(block) if isinstance(x, (ir.StoreSlot, ir.LocalStore))}


def later_writes(block: ir.Block, after: frozenset[int], out: dict[int, frozenset[int]]
                 ) -> None:
    """For each loop in `block` (by id), the slots stored after it starts by code outside
    it: later statements of its block and of every enclosing block (`after`)."""
    pending = set(after)
    for stmt in reversed(block):
        later = frozenset(pending)
        if isinstance(stmt, ir.If):
            later_writes(stmt.then_body, later, out)
            later_writes(stmt.else_body, later, out)
        elif isinstance(stmt, ir.For):
            out[id(stmt)] = later
            later_writes(stmt.body, later, out)
        elif isinstance(stmt, ir.While):
            out[id(stmt)] = later
            later_writes(stmt.cond_body, later | stored_slots(stmt.body), out)
            later_writes(stmt.body, later, out)
        pending |= stored_slots((stmt,))


def read_before_written(body: ir.Block) -> set[int]:
    """Slots an iteration may read before it writes them (the loop-carried ones)."""
    killed: set[int] = set()
    read: set[int] = set()
    for s in body:
        for x in ir.walk((s,)):
            if isinstance(x, ir.Op) and x.opcode in (OpCode.LOAD_SLOT, OpCode.LOCAL_LOAD) \
                    and x.attr.id not in killed:
                read.add(x.attr.id)
        if isinstance(s, ir.StoreSlot):
            killed.add(s.slot.id)
    return read


def needs_carried(body: ir.Block, carried: set[int]) -> bool:
    """Whether the reverse of an iteration uses a value computed from carried slots."""
    tainted_slots = set(carried)
    tainted: set[int] = set()
    stmts = list(ir.walk(body))
    changed = True
    while changed:
        changed = False
        for s in stmts:
            if isinstance(s, ir.Op) and s.result is not None and s.result.id not in tainted:
                if (s.opcode in (OpCode.LOAD_SLOT, OpCode.LOCAL_LOAD)
                        and s.attr.id in tainted_slots) or any(a.id in tainted for a in s.args):
                    tainted.add(s.result.id)
                    changed = True
            elif isinstance(s, (ir.StoreSlot, ir.LocalStore)) and s.value.id in tainted \
                    and s.slot.id not in tainted_slots:
                tainted_slots.add(s.slot.id)
                changed = True
    for s in stmts:
        for v in rules.needed(s):
            if v.id in tainted:
                return True
    return False
