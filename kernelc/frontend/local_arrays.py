"""Local fixed-size arrays: `kc.zeros(shape=..., dtype=...)` in a kernel or func.

A local array is storage in the thread's frame (a slot of `LocalArrayType`), bound to its
name as a `LocalArray` handle. A one-dimensional array of scalars read or written at one
index is accessed in place (LOCAL_LOAD, LocalStore), the path that SIMD lanes and
gradients follow. Any other use (several dimensions, vector, matrix or struct elements, a
view `a[i]` or a slice, `a.shape`, an atomic, passing it to a func) sees it as an ordinary
contiguous array over that storage (`OpCode.LOCAL_ARRAY`), so every array operation applies
to it, as Warp's fixed-size arrays are arrays.

A func returns its local array by value: a record of the elements (`types.fixedarray`) that
the caller copies into a local array of its own, since the func's storage ends with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.builder import StorageHandle, Val
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode, Slot


@dataclass(frozen=True)
class LocalArray(StorageHandle):
    """A local array's storage and shape."""

    slot: Slot
    shape: tuple[int, ...]

    @property
    def direct(self) -> bool:
        """Whether it is accessed in place: one dimension of scalars."""
        return len(self.shape) == 1 and isinstance(self.slot.type.dtype, T.ScalarType)


MAX_LENGTH = 65536
# Returning copies every element through registers, unrolled: a bound on the code it makes.
MAX_RETURNED = 1024


def element_type(dtype: T.Type | None, what: str) -> T.Type:
    """`dtype` if a local array may hold it: what an array holds, but no arrays."""
    if isinstance(dtype, (T.ScalarType, T.VectorType, T.MatrixType)):
        return dtype
    if isinstance(dtype, T.StructType) and T.fixed_array_spec(dtype) is None \
            and not T.holds_arrays(dtype):
        return dtype
    raise KernelError(f"{what} holds scalars, vectors, matrices or structs without arrays, "
                      f"not {dtype!r}")


def declare(lowerer, dtype: T.Type, shape: tuple[int, ...]) -> LocalArray:
    """A new local array, zeroed here (not once at entry, so that one declared in a loop
    starts fresh each iteration)."""
    length = math.prod(shape)
    if not 0 < length <= MAX_LENGTH or len(shape) > 4 or min(shape) <= 0:
        raise KernelError(f"a local array has one to four positive dimensions and at most "
                          f"{MAX_LENGTH} elements, got shape {shape}")
    b = lowerer.b
    handle = LocalArray(b.new_slot("local", T.LocalArrayType(dtype, length)), shape)
    flat = None if handle.direct else \
        b.op(OpCode.LOCAL_ARRAY, (), T.ArrayType(dtype, 1), (handle.slot, (length,)))
    i = b.new_value(T.int32)
    with b.region() as body:
        zero = _zero(b, dtype)
        if flat is None:
            b.append(ir.LocalStore(b.loc, handle.slot, i, zero))
        else:
            b.append(ir.ArrayStore(b.loc, flat, (i,), zero))
    b.append(ir.For(b.loc, i, b.const(0, T.int32), b.const(length, T.int32),
                    b.const(1, T.int32), tuple(body)))
    return handle


def as_array(lowerer, handle: LocalArray) -> Val:
    """The local array as a contiguous array value over its storage."""
    t = T.ArrayType(handle.slot.type.dtype, len(handle.shape))
    return Val(lowerer.b.op(OpCode.LOCAL_ARRAY, (), t, (handle.slot, handle.shape)))


def load(lowerer, handle: LocalArray, index: Val) -> Val:
    dtype = handle.slot.type.dtype
    return Val(lowerer.b.op(OpCode.LOCAL_LOAD, (index.value,), dtype, handle.slot))


def store(lowerer, handle: LocalArray, index: Val, value: Val) -> None:
    value = lowerer.coerce(value, handle.slot.type.dtype)
    lowerer.b.append(ir.LocalStore(lowerer.b.loc, handle.slot, index.value, value.value))


def returned(lowerer, handle: LocalArray) -> Val:
    """What `return a` gives for a local array `a`: its elements, as a `fixedarray`."""
    t = T.fixedarray(handle.slot.type.dtype, handle.shape)
    length = handle.slot.type.length
    if length > MAX_RETURNED:
        raise KernelError(f"a func returns a local array of at most {MAX_RETURNED} elements, "
                          f"this one has {length}")
    b = lowerer.b
    flat = _flat(b, handle)
    elements = [b.op(OpCode.ARRAY_LOAD, (flat, b.const(k, T.int32)), handle.slot.type.dtype)
                for k in range(length)]
    return Val(b.op(OpCode.BUILD, elements, t))


def received(lowerer, value: Val) -> LocalArray:
    """The caller's own copy of a local array a func returned (`value`, a fixedarray)."""
    spec = T.fixed_array_spec(value.type)
    handle = declare_uninitialised(lowerer, spec.dtype, spec.shape)
    b = lowerer.b
    flat = _flat(b, handle)
    for k in range(spec.length):
        element = b.op(OpCode.EXTRACT, (value.value,), spec.dtype, k)
        b.append(ir.ArrayStore(b.loc, flat, (b.const(k, T.int32),), element))
    return handle


def declare_uninitialised(lowerer, dtype: T.Type, shape: tuple[int, ...]) -> LocalArray:
    slot = lowerer.b.new_slot("local", T.LocalArrayType(dtype, math.prod(shape)))
    return LocalArray(slot, shape)


def _flat(b, handle: LocalArray) -> ir.Value:
    t = handle.slot.type
    return b.op(OpCode.LOCAL_ARRAY, (), T.ArrayType(t.dtype, 1), (handle.slot, (t.length,)))


def _zero(b, t: T.Type) -> ir.Value:
    if isinstance(t, T.ScalarType):
        return b.const(0, t)
    if isinstance(t, T.StructType):
        return b.op(OpCode.BUILD, [_zero(b, f) for _, f in t.fields], t)
    return b.op(OpCode.BUILD, [b.const(0, t.dtype)] * t.count, t)
