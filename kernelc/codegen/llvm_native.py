"""LLVM lowering of NATIVE ops: calls of `@kc.func_native` snippets' entry points.

The entry points live in a shared library (`runtime/native_snippets.py`) and are declared
here as external functions with the ABI of `codegen/native_cpp.py`: each operand is
stored in a stack slot in kernelc's memory layout, and the call gets an array of pointers
to them (and a slot for the result). Reference parameters and adjoints are read back from
their slots after the call.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir as ll

from kernelc import types as T
from kernelc.codegen import llvm_ops as ops
from kernelc.codegen.llvm_ops import I32, PTR, llvm_type
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


def _entry_point(e: Any, name: str, n_pointers: int) -> ll.Function:
    found = e.state.llmod.globals.get(name)
    if found is None:
        fnty = ll.FunctionType(ll.VoidType(), [PTR] * n_pointers)
        found = ll.Function(e.state.llmod, fnty, name)
    return found


def _alloca(e: Any, t: ll.Type) -> ll.Value:
    # A NATIVE op is the whole body of its func (straight-line code in the entry block),
    # so its slots are static allocas, which inlining moves to the caller's entry block.
    return e.b.alloca(t)


def _spill(e: Any, value: ir.Value) -> ll.Value:
    """A stack slot holding `value` in memory form."""
    slot = _alloca(e, llvm_type(value.type, memory=True))
    e.b.store(ops.to_memory(e.b, e.v(value), value.type), slot)
    return slot


def _pointers(e: Any, slots: list[ll.Value]) -> ll.Value:
    array_type = ll.ArrayType(PTR, max(1, len(slots)))
    array = _alloca(e, array_type)
    for k, slot in enumerate(slots):
        e.b.store(slot, e.b.gep(array, [I32(0), I32(k)]))
    return array


def _read(e: Any, slot: ll.Value, t: T.Type) -> ll.Value:
    return ops.from_memory(e.b, e.b.load(slot, typ=llvm_type(t, memory=True)), t)


def _op_native(e: Any, s: ir.Op):
    call = s.attr
    spec = call.spec
    b = e.b
    n = len(spec.params)
    slots = [_spill(e, a) for a in s.args]
    if call.kind == "adjoint":
        fn = _entry_point(e, spec.symbol(call.kind), 3)
        adj_ret = slots[2 * n] if len(slots) > 2 * n else ll.Constant(PTR, None)
        b.call(fn, [_pointers(e, slots[:n]), _pointers(e, slots[n:2 * n]), adj_ret])
        outputs = [(slots[n + k], spec.params[k].type) for k in spec.adjoint_outputs]
    else:
        fn = _entry_point(e, spec.symbol(call.kind), 2)
        ret = _alloca(e, llvm_type(spec.result, memory=True)) if spec.result is not None \
            else ll.Constant(PTR, None)
        b.call(fn, [_pointers(e, slots), ret])
        outputs = [(ret, spec.result)] if spec.result is not None else []
        outputs += [(slots[k], spec.params[k].type) for k in spec.ref_outputs]
    values = [_read(e, slot, t) for slot, t in outputs]
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    packed = ll.Constant(llvm_type(s.result.type), None)
    for k, v in enumerate(values):
        packed = b.insert_value(packed, v, k)
    return packed


OPS = {OpCode.NATIVE: _op_native}


def _part_address(e: Any, base: ll.Value, t: T.Type, path: tuple[int, ...]) -> ll.Value:
    """The uint64 address of the part at `path` (EXTRACT indices) of the `t` at `base`."""
    if path:
        base = e.b.gep(base, [I32(0), *(I32(k) for k in path)],
                       source_etype=llvm_type(t, memory=True))
    return e.b.ptrtoint(base, ops.I64)


def _op_slot_address(e: Any, s: ir.Op):
    slot, path = s.attr
    return _part_address(e, e.slots[slot.id], slot.type, path)


def _op_element_address(e: Any, s: ir.Op):
    ptr = e.element_ptr(s.args[0], s.args[1:], s.loc)
    return _part_address(e, ptr, s.args[0].type.dtype, s.attr)


OPS[OpCode.SLOT_ADDRESS] = _op_slot_address
OPS[OpCode.ELEMENT_ADDRESS] = _op_element_address
