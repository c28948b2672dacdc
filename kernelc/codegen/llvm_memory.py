"""LLVM lowering of the ops that touch memory: array loads, shapes and views, atomics, loads
from a raw address (runtime data structures such as a hash grid's descriptor), and arrays
over a local array's storage or an address."""

from __future__ import annotations

from typing import Any

from llvmlite import ir as ll

from kernelc import types as T
from kernelc.codegen import llvm_aggregate
from kernelc.codegen import llvm_ops as ops
from kernelc.codegen.llvm_ops import I32, I64, PTR, llvm_type
from kernelc.ir import nodes as ir
from kernelc.ir.analysis import atomic_parts, atomic_target
from kernelc.ir.nodes import OpCode

Emitter = Any  # kernelc.codegen.llvm.FunctionEmitter (which imports this module)


def _op_array_load(e: Emitter, s: ir.Op):
    ptr = e.element_ptr(s.args[0], s.args[1:], s.loc)
    dtype = s.args[0].type.dtype
    value = e.tag(e.b.load(ptr, typ=llvm_type(dtype, memory=True)), s.args[0])
    return ops.from_memory(e.b, value, dtype)


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


def _op_array_view(e: Emitter, s: ir.Op):
    """A view (see `OpCode.ARRAY_VIEW`): the data pointer moves by the byte offset of the
    first element; kept axes take the slice's count and the stride times the step."""
    b = e.b
    source = e.v(s.args[0])
    operands = [b.sext(e.v(v), I64) for v in s.args[1:]]
    offset, shapes, strides, k = I64(0), [], [], 0
    for axis, kind in enumerate(s.attr):
        stride = b.extract_value(source, [2, axis])
        offset = b.add(offset, b.mul(operands[k], stride))
        if kind == "s":
            shapes.append(operands[k + 2])
            strides.append(b.mul(stride, operands[k + 1]))
        k += 1 if kind == "i" else 3
    view = ll.Constant(llvm_type(s.result.type), ll.Undefined)
    data = b.gep(b.extract_value(source, 0), [offset], source_etype=ll.IntType(8))
    view = b.insert_value(view, data, 0)
    for axis, (shape, stride) in enumerate(zip(shapes, strides)):
        view = b.insert_value(view, shape, [1, axis])
        view = b.insert_value(view, stride, [2, axis])
    return view


def _op_local_array(e: Emitter, s: ir.Op):
    """A contiguous array over a local array's storage: its address, shape, byte strides."""
    slot, shape = s.attr
    t = s.result.type
    strides = T.contiguous_strides(shape, t.dtype.size)
    array = ll.Constant(llvm_type(t), ll.Undefined)
    data = e.slots[slot.id]
    if not data.type.is_opaque:  # (llvmlite with typed pointers)
        data = e.b.bitcast(data, PTR)
    array = e.b.insert_value(array, data, 0)
    for axis, (n, stride) in enumerate(zip(shape, strides)):
        array = e.b.insert_value(array, I64(n), [1, axis])
        array = e.b.insert_value(array, I64(stride), [2, axis])
    return array


def _op_array_address(e: Emitter, s: ir.Op):
    return e.b.ptrtoint(e.b.extract_value(e.v(s.args[0]), 0), I64)


def _op_array_at(e: Emitter, s: ir.Op):
    """A contiguous array at an address: row-major byte strides from the dims."""
    b = e.b
    t = s.result.type
    dims = [b.sext(e.v(d), I64) for d in s.args[2 if s.attr == "grad" else 1:]]
    array = ll.Constant(llvm_type(t), ll.Undefined)
    array = b.insert_value(array, b.inttoptr(e.v(s.args[0]), PTR), 0)
    stride = I64(t.dtype.size)
    for axis in reversed(range(t.ndim)):
        array = b.insert_value(array, dims[axis], [1, axis])
        array = b.insert_value(array, stride, [2, axis])
        stride = b.mul(stride, dims[axis])
    return array


_RMW_OPS = {
    ("add", "int"): "add", ("sub", "int"): "sub", ("min", "int"): "min", ("max", "int"): "max",
    ("add", "uint"): "add", ("sub", "uint"): "sub", ("min", "uint"): "umin",
    ("max", "uint"): "umax", ("add", "float"): "fadd", ("sub", "float"): "fsub",
    ("min", "float"): "fmin", ("max", "float"): "fmax",
    **{(kind, k): kind for kind in ("and", "or", "xor") for k in ("int", "uint")},
    **{("exch", k): "xchg" for k in ("int", "uint", "float")},
}
# Exchange and compare-and-swap build locks and hand-offs: they order the plain loads and
# stores around them (free on x86, where these instructions are full barriers anyway).
_ORDERING = {"exch": "seq_cst", "cas": "seq_cst"}


def atomic_update(e: Emitter, kind: str, ptr, dtype: T.ScalarType, operands: list):
    """One atomic `kind` on the scalar of type `dtype` at `ptr`; returns the old value."""
    ordering = _ORDERING.get(kind, "monotonic")
    if dtype == T.bfloat16:
        return _bf16_update(e, kind, ptr, operands)
    if kind == "cas":
        compare, value = operands
        if dtype.is_float:
            return _cas_by_value(e, ptr, dtype, compare, value)
        return e.b.extract_value(e.b.cmpxchg(ptr, compare, value, ordering, ordering), 0)
    return e.b.atomic_rmw(_RMW_OPS[(kind, dtype.kind)], ptr, operands[0], ordering)


def _cas_by_value(e: Emitter, ptr, dtype: T.ScalarType, compare, value):
    """Float compare-and-swap comparing values as `==` does (-0.0 equals 0.0, NaN equals
    nothing): a cmpxchg loop on the bits, which LLVM's cmpxchg compares."""
    b = e.b
    bits = ll.IntType(dtype.bits)
    first = b.load_atomic(ptr, "monotonic", dtype.bits // 8, typ=bits)
    before = b.block
    loop = e.llfn.append_basic_block("cas.loop")
    attempt = e.llfn.append_basic_block("cas.try")
    done = e.llfn.append_basic_block("cas.done")
    b.branch(loop)
    b.position_at_end(loop)
    seen = b.phi(bits)
    seen.add_incoming(first, before)
    old = b.bitcast(seen, llvm_type(dtype))
    b.cbranch(b.fcmp_ordered("==", old, compare), attempt, done)
    b.position_at_end(attempt)
    pair = b.cmpxchg(ptr, seen, b.bitcast(value, bits), "seq_cst", "seq_cst")
    seen.add_incoming(b.extract_value(pair, 0), attempt)
    b.cbranch(b.extract_value(pair, 1), done, loop)
    b.position_at_end(done)
    return old


def _bf16_update(e: Emitter, kind: str, ptr, operands: list):
    """An atomic on a bfloat16 element: a compare-and-swap loop on its 16 bits, the update
    computed in float and rounded, as Warp's software bfloat16 atomics do."""
    b = e.b
    bits = llvm_type(T.bfloat16, memory=True)
    first = b.load_atomic(ptr, "monotonic", 2, typ=bits)
    before = b.block
    loop = e.llfn.append_basic_block("bf16.loop")
    done = e.llfn.append_basic_block("bf16.done")
    b.branch(loop)
    b.position_at_end(loop)
    seen = b.phi(bits)
    seen.add_incoming(first, before)
    old = ops.from_memory(b, seen, T.bfloat16)
    new = ops.to_memory(b, _PRIVATE_RMW[kind](b, old, operands, T.bfloat16), T.bfloat16)
    pair = b.cmpxchg(ptr, seen, new, "monotonic", "monotonic")
    seen.add_incoming(b.extract_value(pair, 0), b.block)
    b.cbranch(b.extract_value(pair, 1), done, loop)
    b.position_at_end(done)
    return old


def _op_atomic(e: Emitter, s: ir.Op):
    arr, indices, operands = atomic_parts(s)
    kind, path, dtype = atomic_target(s)
    values = [e.v(v) for v in operands]
    if s.result.id in e.accumulators:
        return _accumulate(e, s.result.id, kind, e.element_ptr(arr, indices, s.loc), dtype,
                           values[0])
    update = _private_update if arr.id in e.private else atomic_update
    ptr = e.element_ptr(arr, indices, s.loc)
    outer = arr.type.dtype
    for k in path:  # one field of an array-of-structs element
        ptr = e.b.gep(ptr, [I32(0), I32(k)], source_etype=llvm_type(outer, memory=True))
        outer = outer.fields[k][1]
    if isinstance(dtype, (T.VectorType, T.MatrixType)):  # component-wise, as in Warp
        return llvm_aggregate.atomic_components(e, kind, ptr, dtype, values, update)
    return update(e, kind, ptr, dtype, values)


# ---- uniform updates: summed per worker, one atomic at the end (kernelc.ir.uniform) -------


def make_accumulators(e: Emitter, updates: frozenset[int]) -> None:
    """A zeroed sum and a null address in the entry block for each uniform update."""
    if not updates:
        return
    b = e.b
    for s in ir.walk(e.fn.body):
        if isinstance(s, ir.Op) and s.opcode == OpCode.ATOMIC and s.result.id in updates:
            dtype = atomic_target(s)[2]
            t = llvm_type(dtype)
            total, address = b.alloca(t, name="uniform.sum"), b.alloca(PTR, name="uniform.at")
            b.store(ll.Constant(t, None), total)
            b.store(ll.Constant(PTR, None), address)
            e.accumulators[s.result.id] = (total, address, dtype)


def _accumulate(e: Emitter, key: int, kind: str, ptr, dtype: T.Type, value):
    """Adds (or subtracts) `value` into the update's sum and notes its (uniform) address;
    the old value it returns is never used."""
    b = e.b
    total, address, _ = e.accumulators[key]
    b.store(ptr, address)
    scalar = dtype.dtype if isinstance(dtype, (T.VectorType, T.MatrixType)) else dtype
    if scalar == T.bfloat16:  # rounded at each step, as the atomics one by one would be
        step = b.fadd if kind == "add" else b.fsub

        def combine(x, y):
            return ops.round_bf16(b, step(x, y))
    elif scalar.is_float:  # any order will do (atomics have none): lets LLVM vectorise the sum
        step = b.fadd if kind == "add" else b.fsub

        def combine(x, y):
            return step(x, y, flags=("reassoc", "nsz"))
    else:
        step = b.add if kind == "add" else b.sub

        def combine(x, y):
            return step(x, y)
    current = b.load(total, typ=llvm_type(dtype))
    if scalar is dtype:
        new = combine(current, value)
    else:
        new = current
        for k in range(dtype.count):  # (components in memory form: bfloat16 as bits)
            x, y = (ops.from_memory(b, b.extract_value(v, k), scalar) for v in (current, value))
            new = b.insert_value(new, ops.to_memory(b, combine(x, y), scalar), k)
    b.store(new, total)
    return ll.Constant(llvm_type(dtype), ll.Undefined)


def flush_accumulators(e: Emitter) -> None:
    """After the worker's threads: one atomic add of each sum, if its update ever ran (a
    subtraction was summed negated, so adding the sum applies it)."""
    b = e.b
    for total, address, dtype in e.accumulators.values():
        ptr = b.load(address, typ=PTR)
        with b.if_then(b.icmp_unsigned("!=", ptr, ll.Constant(PTR, None))):
            value = b.load(total, typ=llvm_type(dtype))
            if isinstance(dtype, (T.VectorType, T.MatrixType)):
                llvm_aggregate.atomic_components(e, "add", ptr, dtype, [value], atomic_update)
            else:
                atomic_update(e, "add", ptr, dtype, [value])


def _private_update(e: Emitter, kind: str, ptr, dtype: T.ScalarType, operands: list):
    """A plain read-modify-write: no other thread can touch this element."""
    b = e.b
    old = ops.from_memory(b, b.load(ptr, typ=llvm_type(dtype, memory=True)), dtype)
    b.store(ops.to_memory(b, _PRIVATE_RMW[kind](b, old, operands, dtype), dtype), ptr)
    return old


def _rmw_minmax(pick_new_if: str):
    def rmw(b, old, operands, t):
        (new,) = operands
        take = ops.compare(b, OpCode.LT if pick_new_if == "<" else OpCode.GT, new, old, t)
        if t.is_float:  # as fmin/fmax (and atomicrmw): a NaN in memory is replaced
            take = b.or_(take, b.fcmp_unordered("uno", old, old))
        return b.select(take, new, old)

    return rmw


def _rmw_binary(op: OpCode):
    return lambda b, old, operands, t: ops.binary(b, op, old, operands[0], t)


def _rmw_cas(b, old, operands, t):
    compare, value = operands
    return b.select(ops.compare(b, OpCode.EQ, old, compare, t), value, old)


_PRIVATE_RMW = {
    "add": _rmw_binary(OpCode.ADD),
    "sub": _rmw_binary(OpCode.SUB),
    "min": _rmw_minmax("<"),
    "max": _rmw_minmax(">"),
    "and": _rmw_binary(OpCode.BITAND),
    "or": _rmw_binary(OpCode.BITOR),
    "xor": _rmw_binary(OpCode.BITXOR),
    "exch": lambda b, old, operands, t: operands[0],
    "cas": _rmw_cas,
}


OPS = {
    OpCode.ARRAY_LOAD: _op_array_load, OpCode.LOAD_ADDRESS: _op_load_address,
    OpCode.ARRAY_SHAPE: _op_array_shape, OpCode.ATOMIC: _op_atomic,
    OpCode.ARRAY_VIEW: _op_array_view, OpCode.LOCAL_ARRAY: _op_local_array,
    OpCode.ARRAY_ADDRESS: _op_array_address, OpCode.ARRAY_AT: _op_array_at,
}
