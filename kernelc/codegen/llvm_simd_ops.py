"""Lane-wise lowering of the IR ops whose result varies between threads (llvm_simd.py).

Each function returns the op's lane-wise value, or None when it has no lane-wise form for
this case; the emitter then runs the scalar lowering once per active lane. Arithmetic,
comparisons, casts and the math builtins reuse `llvm_ops`, whose code derives its types
from its operands and so works on vectors as on scalars.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir as ll

from kernelc import types as T
from kernelc.codegen import llvm_aggregate
from kernelc.codegen import llvm_lanes as lanes
from kernelc.codegen import llvm_ops as ops
from kernelc.codegen.llvm_ops import I32, I64, PTR, llvm_type
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

Emitter = Any  # kernelc.codegen.llvm_simd.SimdEmitter (which imports this module)

_LIBM = frozenset(ops.LIBM_BUILTINS)


def _cast(e: Emitter, s: ir.Op):
    (x,) = s.args
    if not isinstance(x.type, T.ScalarType) or not isinstance(s.result.type, T.ScalarType):
        return None
    src, dst = x.type, s.result.type
    base = e.affine.get(x.id)
    if base is not None and src.is_int and dst.is_int and dst.bits >= src.bits:
        e.affine[s.result.id] = ops.cast(e.b, base, src, dst)
    return ops.cast(e.b, e.vec(x), src, dst)


def _binary(e: Emitter, s: ir.Op):
    x, y = s.args
    if not isinstance(x.type, T.ScalarType):
        return None
    if s.opcode in (OpCode.ADD, OpCode.SUB) and x.type.is_int:
        _track_affine(e, s)
    return ops.binary(e.b, s.opcode, e.vec(x), e.vec(y), x.type, vector_division=True)


def _track_affine(e: Emitter, s: ir.Op) -> None:
    """`u + lane` plus or minus a uniform value is still of that form (a contiguous index)."""
    x, y = s.args
    if x.id in e.affine and not e.varies(y):
        op = e.b.add if s.opcode == OpCode.ADD else e.b.sub
        e.affine[s.result.id] = op(e.affine[x.id], e.values[y.id])
    elif s.opcode == OpCode.ADD and y.id in e.affine and not e.varies(x):
        e.affine[s.result.id] = e.b.add(e.values[x.id], e.affine[y.id])


def _compare(e: Emitter, s: ir.Op):
    x, y = s.args
    if not isinstance(x.type, T.ScalarType):
        return None
    return ops.compare(e.b, s.opcode, e.vec(x), e.vec(y), x.type)


def _unary(e: Emitter, s: ir.Op):
    (x,) = s.args
    if not isinstance(x.type, T.ScalarType):
        return None
    return ops.unary(e.b, s.opcode, e.vec(x), x.type)


def _select(e: Emitter, s: ir.Op):
    c, x, y = s.args
    if e.varies(c):
        return lanes.select(e.b, e.values[c.id], e.vec(x), e.vec(y))
    return e.b.select(e.values[c.id], e.vec(x), e.vec(y))


def _load_slot(e: Emitter, s: ir.Op):
    return e.b.load(e.slots[s.attr.id], typ=e.wide(s.result.type))


def _tid(e: Emitter, s: ir.Op):
    axis, ndim = s.attr
    if ndim <= 1:
        e.affine[s.result.id] = e.tid_base
        return e.tid_vec
    if e.tid_parts is not None and len(e.tid_parts) == ndim:
        return e.tid_parts[axis]
    return e.tid_components(ndim)[axis]  # (tid() unpacked to another rank elsewhere)


def _call(e: Emitter, s: ir.Op):
    if s.attr in ops.TYPED_LOWERING or s.attr not in ops.BUILTIN_LOWERING:
        return None
    lower = ops.BUILTIN_LOWERING[s.attr]
    args = [e.vec(a) for a in s.args]
    if s.attr not in _LIBM:
        return ops.fit(e.b, lower(e.b, args), s.result.type)
    # A C library function: one call per lane (pure, so every lane may run it).
    b = e.b
    out = ll.Constant(e.wide(s.result.type), None)
    for k in range(e.width):
        out = b.insert_element(out, lower(b, [b.extract_element(a, I32(k)) for a in args]),
                               I32(k))
    return ops.fit(b, out, s.result.type)


def _build(e: Emitter, s: ir.Op):
    b = e.b
    agg = ll.Constant(e.wide(s.result.type), None)
    for i, a in enumerate(s.args):
        agg = b.insert_value(agg, ops.to_memory(b, e.vec(a), a.type), i)
    return agg


def _insert(e: Emitter, s: ir.Op):
    agg, value = s.args
    return e.b.insert_value(e.vec(agg), ops.to_memory(e.b, e.vec(value), value.type), s.attr)


def _extract_dyn(e: Emitter, s: ir.Op):
    agg, index = s.args
    return llvm_aggregate.extract_dyn(e.b, e.vec(agg), e.values[index.id], agg.type)


def _insert_dyn(e: Emitter, s: ir.Op):
    agg, index, value = s.args
    return llvm_aggregate.insert_dyn(e.b, e.vec(agg), e.values[index.id], e.vec(value),
                                     value.type, agg.type)


def _array_shape(e: Emitter, s: ir.Op):
    shape = e.b.extract_value(e.values[s.args[0].id], [1, s.attr])
    return e.b.trunc(shape, ll.VectorType(I32, e.width))


# ---- memory ---------------------------------------------------------------------------------


def lane_wise(s: ir.Op, info) -> bool:
    """Whether the varying op `s` has a lane-wise lowering (else it runs lane by lane)."""
    if s.opcode not in OPS:
        return False
    args = s.args
    if s.opcode in (OpCode.CAST, *ir.BINARY_OPS, *ir.COMPARE_OPS, *ir.UNARY_OPS):
        return isinstance(args[0].type, T.ScalarType)
    if s.opcode == OpCode.CALL:
        return s.attr in ops.BUILTIN_LOWERING and s.attr not in ops.TYPED_LOWERING
    if s.opcode == OpCode.ARRAY_LOAD:
        return plain_array(args[0].type)
    if s.opcode == OpCode.LOCAL_LOAD:
        return s.attr.id not in info.slots
    return True


def plain_array(t: T.Type) -> bool:
    """An array whose elements the lane-wise code can load and store: scalars, vectors and
    matrices (other element types, and other array kinds, go one lane at a time)."""
    return type(t) is T.ArrayType and isinstance(t.dtype, (T.ScalarType, T.VectorType,
                                                            T.MatrixType))


def _components(dtype: T.Type) -> tuple[T.ScalarType, int]:
    if isinstance(dtype, T.ScalarType):
        return dtype, 1
    return dtype.dtype, dtype.count


def _offset(e: Emitter, array: ir.Value, indices) -> ll.Value:
    """The byte offset of the element at `indices`, lane-wise or uniform."""
    b = e.b
    arr = e.values[array.id]
    offset = None
    for k, index in enumerate(indices):
        i = e.values[index.id]
        if index.type.bits < 64:
            i = b.sext(i, ops.like(i, I64))
        term = b.mul(*_alike(e, i, b.extract_value(arr, [2, k])))
        offset = term if offset is None else b.add(*_alike(e, offset, term))
    return offset


def _alike(e: Emitter, x: ll.Value, y: ll.Value) -> tuple[ll.Value, ll.Value]:
    """`x` and `y` both lane-wise when either is (the other broadcast), else both uniform."""
    if isinstance(x.type, ll.VectorType) == isinstance(y.type, ll.VectorType):
        return x, y
    return tuple(v if isinstance(v.type, ll.VectorType) else lanes.splat(e.b, v, e.width)
                 for v in (x, y))


def _component(b: ll.IRBuilder, ptrs: ll.Value, byte_offset: int) -> ll.Value:
    """The pointers `ptrs` moved by `byte_offset` (a component of each lane's element)."""
    wide64 = ll.VectorType(I64, ptrs.type.count)
    return b.inttoptr(b.add(b.ptrtoint(ptrs, wide64), ll.Constant(wide64, byte_offset)),
                      ptrs.type)


def _addresses(e: Emitter, array: ir.Value, indices) -> ll.Value:
    b = e.b
    offset = _offset(e, array, indices)
    if not isinstance(offset.type, ll.VectorType):
        offset = lanes.splat(b, offset, e.width)
    return lanes.addresses(b, b.extract_value(e.values[array.id], 0), offset, e.width)


def _contiguous(e: Emitter, array: ir.Value, indices) -> ll.Value | None:
    """The first lane's element pointer when lane l reads element `first + l` of the last
    axis (uniform array and other indices); None when not of that form."""
    if e.varies(array) or any(e.varies(i) for i in indices[:-1]):
        return None
    first = e.affine.get(indices[-1].id)
    if first is None:
        return None
    b = e.b
    arr = e.values[array.id]
    offset = I64(0)
    for k, index in enumerate(indices):
        i = first if k == len(indices) - 1 else e.values[index.id]
        if index.type.bits < 64:
            i = b.sext(i, I64)
        offset = b.add(offset, b.mul(i, b.extract_value(arr, [2, k])))
    return b.gep(b.extract_value(arr, 0), [offset], source_etype=ll.IntType(8))


def _unit_stride(e: Emitter, array: ir.Value) -> ll.Value:
    arr = e.values[array.id]
    stride = e.b.extract_value(arr, [2, array.type.ndim - 1])
    return e.b.icmp_signed("==", stride, I64(array.type.dtype.size))


def _array_load(e: Emitter, s: ir.Op):
    array, indices = s.args[0], s.args[1:]
    if not plain_array(array.type):
        return None
    b, dtype = e.b, array.type.dtype
    scalar, count = _components(dtype)
    element = llvm_type(scalar, memory=True)
    mask = e.mask()
    single = isinstance(dtype, T.ScalarType)  # (a vec1 / mat11 keeps its array form)
    first = _contiguous(e, array, indices) if single else None
    if first is not None:  # one vector load where the array is contiguous, else a gather
        with b.if_else(_unit_stride(e, array), likely=True) as (dense, sparse):
            with dense:
                v_dense = lanes.load_lanes(b, first, mask, element)
                dense_bb = b.block
            with sparse:
                v_sparse = lanes.gather(b, _addresses(e, array, indices), mask, element)
                sparse_bb = b.block
        value = b.phi(v_dense.type)
        value.add_incoming(v_dense, dense_bb)
        value.add_incoming(v_sparse, sparse_bb)
        return ops.from_memory(b, value, scalar)
    ptrs = _addresses(e, array, indices)
    if single:
        return ops.from_memory(b, lanes.gather(b, ptrs, mask, element), scalar)
    out = ll.Constant(e.wide(dtype), None)
    for k in range(count):
        out = b.insert_value(out, lanes.gather(b, _component(b, ptrs, k * scalar.size), mask,
                                               element), k)
    return out


def store(e: Emitter, s: ir.ArrayStore) -> bool:
    """A lane-wise array store (True), or False when it must go one lane at a time."""
    if not plain_array(s.array.type):
        return False
    b, dtype = e.b, s.array.type.dtype
    scalar, count = _components(dtype)
    value = ops.to_memory(b, e.vec(s.value), dtype)
    mask = e.mask()
    single = isinstance(dtype, T.ScalarType)
    first = _contiguous(e, s.array, s.indices) if single else None
    if first is not None:
        with b.if_else(_unit_stride(e, s.array), likely=True) as (dense, sparse):
            with dense:
                lanes.store_lanes(b, value, first, mask)
            with sparse:
                lanes.scatter(b, value, _addresses(e, s.array, s.indices), mask)
        return True
    ptrs = _addresses(e, s.array, s.indices)
    if single:
        lanes.scatter(b, value, ptrs, mask)
        return True
    for k in range(count):
        lanes.scatter(b, b.extract_value(value, k), _component(b, ptrs, k * scalar.size), mask)
    return True


def _local_load(e: Emitter, s: ir.Op):
    """A uniform local array read at varying indices: a gather from its one copy."""
    slot, (index,) = s.attr, s.args
    if slot.id in e.info.slots:
        return None
    b, t = e.b, slot.type
    i = e.vec(index)
    i64 = b.sext(i, ll.VectorType(I64, e.width)) if index.type.bits < 64 else i
    ok = b.icmp_unsigned("<", i64, ll.Constant(i64.type, t.length))
    safe = b.select(ok, i64, ll.Constant(i64.type, 0))
    element = llvm_type(t.dtype, memory=True)
    offset = b.mul(safe, ll.Constant(i64.type, t.dtype.size))
    ptrs = lanes.addresses(b, e.slots[slot.id], offset, e.width)
    value = ops.from_memory(b, lanes.gather(b, ptrs, b.and_(e.mask(), ok), element), t.dtype)
    return b.select(ok, value, ll.Constant(value.type, None))


def _load_address(e: Emitter, s: ir.Op):
    """A read of runtime structures (hash grids) at varying addresses or indices: a
    gather, masked so that lanes outside the mask read nothing."""
    address, index = s.args
    t = s.result.type
    b = e.b
    wide64 = ll.VectorType(I64, e.width)
    i = e.vec(index)
    if index.type.bits < 64:
        i = (b.zext if index.type.kind == "uint" else b.sext)(i, wide64)
    offset = b.mul(i, ll.Constant(wide64, t.size))
    ptrs = b.inttoptr(b.add(e.vec(address), offset), ll.VectorType(PTR, e.width))
    element = llvm_type(t, memory=True)
    return ops.from_memory(b, lanes.gather(b, ptrs, e.mask(), element), t)


OPS = {
    OpCode.CAST: _cast, OpCode.SELECT: _select, OpCode.LOAD_SLOT: _load_slot,
    OpCode.TID: _tid, OpCode.CALL: _call, OpCode.BUILD: _build,
    OpCode.EXTRACT: llvm_aggregate.op_extract, OpCode.INSERT: _insert,
    OpCode.EXTRACT_DYN: _extract_dyn, OpCode.INSERT_DYN: _insert_dyn,
    OpCode.ARRAY_SHAPE: _array_shape, OpCode.ARRAY_LOAD: _array_load,
    OpCode.LOCAL_LOAD: _local_load, OpCode.LOAD_ADDRESS: _load_address,
}
OPS.update({op: _binary for op in ir.BINARY_OPS})
OPS.update({op: _compare for op in ir.COMPARE_OPS})
OPS.update({op: _unary for op in ir.UNARY_OPS})
