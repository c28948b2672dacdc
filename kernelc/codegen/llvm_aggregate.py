"""LLVM lowering of the aggregate ops: BUILD, EXTRACT, INSERT and their dynamic-index forms,
and component-wise atomics on arrays of vectors and matrices.

Vectors and matrices are LLVM arrays of their components, structs literal structs of their
fields, both in memory form (bool as i8), so a value is stored and loaded as a whole and the
layout equals the C layout the runtime packs.
"""

from __future__ import annotations

from llvmlite import ir as ll

from kernelc import types as T
from kernelc.codegen import llvm_ops as ops
from kernelc.codegen.llvm_ops import I32, llvm_type
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


def _element_type(agg: T.Type, index: int) -> T.Type:
    if isinstance(agg, (T.StructType, T.IndexedArrayType)):
        return agg.fields[index][1]
    if isinstance(agg, T.TupleType):
        return agg.elements[index]
    return agg.dtype


def _is_memory_form(agg: T.Type) -> bool:
    # Tuples (a func's several results) hold register-form values; the others memory form.
    return not isinstance(agg, T.TupleType)


def op_build(e, s: ir.Op):
    b = e.b
    agg = ll.Constant(llvm_type(s.result.type), None)
    for i, a in enumerate(s.args):
        agg = b.insert_value(agg, ops.to_memory(b, e.v(a), a.type), i)
    return agg


def op_extract(e, s: ir.Op):
    (src,) = s.args
    value = e.b.extract_value(e.v(src), s.attr)
    if _is_memory_form(src.type):
        value = ops.from_memory(e.b, value, _element_type(src.type, s.attr))
    return value


def op_insert(e, s: ir.Op):
    agg, value = s.args
    return e.b.insert_value(e.v(agg), ops.to_memory(e.b, e.v(value), value.type), s.attr)


def extract_dyn(b: ll.IRBuilder, whole, i, agg: T.Type):
    """Component `i` of `whole` (component 0 when out of range): a select chain over the
    components, which stays in registers. Works lane-wise too (vector leaves, and `i`
    a vector or one index for all lanes)."""
    out = b.extract_value(whole, 0)
    for k in range(1, agg.count):
        hit = b.icmp_signed("==", i, ll.Constant(i.type, k))
        out = b.select(hit, b.extract_value(whole, k), out)
    return ops.from_memory(b, out, agg.dtype)


def insert_dyn(b: ll.IRBuilder, whole, i, value, value_type: T.Type, agg: T.Type):
    """`whole` with component `i` replaced by `value` (unchanged when out of range)."""
    new = ops.to_memory(b, value, value_type)
    for k in range(agg.count):
        hit = b.icmp_signed("==", i, ll.Constant(i.type, k))
        whole = b.insert_value(whole, b.select(hit, new, b.extract_value(whole, k)), k)
    return whole


def op_extract_dyn(e, s: ir.Op):
    agg, index = s.args
    return extract_dyn(e.b, e.v(agg), e.v(index), agg.type)


def op_insert_dyn(e, s: ir.Op):
    agg, index, value = s.args
    return insert_dyn(e.b, e.v(agg), e.v(index), e.v(value), value.type, agg.type)


def atomic_components(e, kind: str, ptr, dtype, operands: list, update):
    """An atomic on a vector/matrix at `ptr`: one atomic per component (`update`, the
    scalar lowering, given the component's pointer and operands as values); the result
    gathers the components' old values."""
    b = e.b
    agg_type = llvm_type(dtype)
    scalar = dtype.dtype
    old = ll.Constant(agg_type, None)
    for k in range(dtype.count):
        comp_ptr = b.gep(ptr, [I32(0), I32(k)], source_etype=agg_type)
        parts = [ops.from_memory(b, b.extract_value(whole, k), scalar) for whole in operands]
        result = update(e, kind, comp_ptr, scalar, parts)
        old = b.insert_value(old, ops.to_memory(b, result, scalar), k)
    return old


OPS = {
    OpCode.BUILD: op_build, OpCode.EXTRACT: op_extract, OpCode.INSERT: op_insert,
    OpCode.EXTRACT_DYN: op_extract_dyn, OpCode.INSERT_DYN: op_insert_dyn,
}
