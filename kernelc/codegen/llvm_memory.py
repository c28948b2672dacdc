"""LLVM lowering of the ops that touch memory: array loads and shapes, atomics, and loads
from a raw address (runtime data structures such as a hash grid's descriptor)."""

from __future__ import annotations

from typing import Any

from kernelc import types as T
from kernelc.codegen import llvm_aggregate
from kernelc.codegen import llvm_ops as ops
from kernelc.codegen.llvm_ops import I32, I64, PTR, llvm_type
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

Emitter = Any  # kernelc.codegen.llvm.FunctionEmitter (which imports this module)


def _op_array_load(e: Emitter, s: ir.Op):
    ptr = e.element_ptr(s.args[0], s.args[1:], s.loc)
    dtype = s.args[0].type.dtype
    return ops.from_memory(e.b, e.b.load(ptr, typ=llvm_type(dtype, memory=True)), dtype)


def _op_load_address(e: Emitter, s: ir.Op):
    address, index = (e.v(a) for a in s.args)
    t = s.result.type
    element = llvm_type(t, memory=True)
    base = e.b.inttoptr(address, PTR)
    if s.args[1].type.bits < 64:
        index = (e.b.zext if s.args[1].type.kind == "uint" else e.b.sext)(index, I64)
    ptr = e.b.gep(base, [index], source_etype=element)
    return ops.from_memory(e.b, e.b.load(ptr, typ=element), t)


def _op_array_shape(e: Emitter, s: ir.Op):
    return e.b.trunc(e.b.extract_value(e.v(s.args[0]), [1, s.attr]), I32)


_ATOMIC_OPS = {
    ("add", "int"): "add", ("sub", "int"): "sub", ("min", "int"): "min", ("max", "int"): "max",
    ("add", "uint"): "add", ("sub", "uint"): "sub", ("min", "uint"): "umin",
    ("max", "uint"): "umax", ("add", "float"): "fadd", ("sub", "float"): "fsub",
    ("min", "float"): "fmin", ("max", "float"): "fmax",
}


def _op_atomic(e: Emitter, s: ir.Op):
    arr, *indices, value = s.args
    dtype = arr.type.dtype
    if isinstance(dtype, (T.VectorType, T.MatrixType)):  # component-wise, as in Warp
        return llvm_aggregate.atomic_components(e, s, _ATOMIC_OPS[(s.attr, dtype.dtype.kind)])
    ptr = e.element_ptr(arr, indices, s.loc)
    if arr.id in e.private:  # no other thread can touch this element
        old = e.b.load(ptr, typ=llvm_type(dtype))
        new = _PRIVATE_RMW[s.attr](e.b, old, e.v(value), dtype)
        e.b.store(new, ptr)
        return old
    op = _ATOMIC_OPS[(s.attr, dtype.kind)]
    return e.b.atomic_rmw(op, ptr, e.v(value), "monotonic")


def _rmw_minmax(pick_new_if: str):
    def rmw(b, old, new, t):
        take = ops.compare(b, OpCode.LT if pick_new_if == "<" else OpCode.GT, new, old, t)
        return b.select(take, new, old)

    return rmw


_PRIVATE_RMW = {
    "add": lambda b, old, v, t: ops.binary(b, OpCode.ADD, old, v, t),
    "sub": lambda b, old, v, t: ops.binary(b, OpCode.SUB, old, v, t),
    "min": _rmw_minmax("<"),
    "max": _rmw_minmax(">"),
}


OPS = {
    OpCode.ARRAY_LOAD: _op_array_load, OpCode.LOAD_ADDRESS: _op_load_address,
    OpCode.ARRAY_SHAPE: _op_array_shape, OpCode.ATOMIC: _op_atomic,
}
