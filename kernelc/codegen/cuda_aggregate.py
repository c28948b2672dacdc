"""CUDA-C for the aggregate ops: BUILD, INSERT, the dynamic-index forms, aggregate zero
constants, and component-wise atomics on arrays of vectors and matrices.

Aggregates are the C structs of `cuda_types.py`, holding their components and fields in
memory form, so building converts each value to memory form (`to_storage`) and reading
converts back (`from_storage`, done by EXTRACT in `cuda_ops.py`). Ops that need statements
(a copy that is then modified, one atomic per component) write them before the op's own line
and return the name of the temporary they filled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelc import types as T
from kernelc.codegen import cuda_ops
from kernelc.codegen.cuda_ops import from_storage, to_storage
from kernelc.codegen.cuda_types import (
    AGGREGATES,
    UnsupportedError,
    aggregate_name,
    array_type,
    element_type,
    member,
    storage_type,
)
from kernelc.ir import nodes as ir
from kernelc.ir.analysis import atomic_parts, atomic_target
from kernelc.ir.nodes import OpCode

if TYPE_CHECKING:
    from kernelc.codegen.cuda import FunctionEmitter


def braced(t: T.Type, elements: list[str]) -> str:
    """A value of aggregate `t` from its elements in memory form (C aggregate init)."""
    inner = ", ".join(elements)
    if isinstance(t, T.StructType):
        return f"{aggregate_name(t)}{{{inner}}}"
    return f"{aggregate_name(t)}{{{{{inner}}}}}"


def _build(em: FunctionEmitter, op: ir.Op) -> str:
    t = op.result.type
    return braced(t, [to_storage(em.name(a), element_type(t, k)) for k, a in enumerate(op.args)])


def _const(em: FunctionEmitter, op: ir.Op) -> str:
    """CONST: scalars as literals; an aggregate result (attr None) is all zeros."""
    t = op.result.type
    if isinstance(t, T.ArrayType) and op.attr is None:  # a null array (autodiff's zero)
        return f"{array_type(t)}{{}}"
    if isinstance(t, AGGREGATES):
        if op.attr is not None:
            raise UnsupportedError(f"a constant {t!r} other than zero")
        return f"{aggregate_name(t)}{{}}"
    return cuda_ops.OP_EMITTERS[OpCode.CONST](em, op)


def _copy(em: FunctionEmitter, op: ir.Op) -> str:
    """A mutable copy of the op's aggregate operand; returns its name."""
    agg = op.args[0]
    temp = f"kc_c{op.result.id}"
    em.line(f"{aggregate_name(agg.type)} {temp} = {em.name(agg)};")
    return temp


def _insert(em: FunctionEmitter, op: ir.Op) -> str:
    agg, value = op.args
    temp = _copy(em, op)
    stored = to_storage(em.name(value), element_type(agg.type, op.attr))
    em.line(f"{temp}{member(agg.type, op.attr)} = {stored};")
    return temp


def _in_range(index: str, count: int) -> str:
    return f"(kc_uint64)(kc_int64){index} < {count}u"


def _extract_dyn(em: FunctionEmitter, op: ir.Op) -> str:
    agg, index = op.args
    a, i = em.name(agg), em.name(index)
    count = agg.type.count
    return from_storage(f"({_in_range(i, count)} ? {a}.v[{i}] : {a}.v[0])", agg.type.dtype)


def _insert_dyn(em: FunctionEmitter, op: ir.Op) -> str:
    agg, index, value = op.args
    temp = _copy(em, op)
    i = em.name(index)
    stored = to_storage(em.name(value), agg.type.dtype)
    em.line(f"if ({_in_range(i, agg.type.count)}) {temp}.v[{i}] = {stored};")
    return temp


def _atomic(em: FunctionEmitter, op: ir.Op) -> str:
    """An atomic on an array of vectors/matrices: one independent atomic per component; the
    result gathers the components' old values. Scalars go to the scalar lowering."""
    _, _, operands = atomic_parts(op)
    kind, _, dtype = atomic_target(op)
    if not isinstance(dtype, (T.VectorType, T.MatrixType)):
        return cuda_ops.OP_EMITTERS[OpCode.ATOMIC](em, op)
    address = cuda_ops.atomic_address(em, op)
    pointer, old = f"kc_p{op.result.id}", f"kc_o{op.result.id}"
    suffix = cuda_ops.ATOMIC_SUFFIX.get(dtype.dtype.name, "")
    em.line(f"{storage_type(dtype)}* const {pointer} = {address};")
    em.line(f"{aggregate_name(dtype)} {old};")
    names = [em.name(v) for v in operands]
    for k in range(dtype.count):
        parts = "".join(f", {from_storage(f'{v}.v[{k}]', dtype.dtype)}" for v in names)
        result = cuda_ops.atomic_call(f"{kind}{suffix}", f"&{pointer}->v[{k}]", parts)
        em.line(f"{old}.v[{k}] = {to_storage(result, dtype.dtype)};")
    return old


OPS = {
    OpCode.CONST: _const, OpCode.BUILD: _build, OpCode.INSERT: _insert,
    OpCode.EXTRACT_DYN: _extract_dyn, OpCode.INSERT_DYN: _insert_dyn, OpCode.ATOMIC: _atomic,
}
