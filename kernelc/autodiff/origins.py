"""Which kernel parameter an array value comes from, so that a store through it consumes
the gradient it overwrites exactly as a store into the parameter does (`rules.py`)."""

from __future__ import annotations

from kernelc.autodiff.values import has_arrays
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


def parameter_bits(fn: ir.Function, seeds: dict[int, int]) -> dict[int, int]:
    """The parameter bit of each array-valued value of `fn` that comes from exactly one
    parameter (`seeds`: the parameters' own bits), through field reads, views and slots."""
    bits = dict(seeds)
    stores: dict[int, list[int]] = {}
    ops = []
    for s in ir.walk(fn.body):
        if isinstance(s, ir.StoreSlot) and has_arrays(s.slot.type):
            stores.setdefault(s.slot.id, []).append(s.value.id)
        elif isinstance(s, ir.Op) and s.result is not None and has_arrays(s.result.type) \
                and s.opcode in (OpCode.EXTRACT, OpCode.ARRAY_VIEW, OpCode.LOAD_SLOT):
            ops.append(s)
    changed = True
    while changed:  # values only gain bits, so this ends
        changed = False
        for s in ops:
            if s.opcode is OpCode.LOAD_SLOT:
                found = {bits.get(v) for v in stores.get(s.attr.id, [None])}
                bit = found.pop() if len(found) == 1 else None
            else:
                bit = bits.get(s.args[0].id)
            if bit is not None and bits.get(s.result.id) != bit:
                bits[s.result.id] = bit
                changed = True
    return bits
