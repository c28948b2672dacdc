"""What an access through an indexed array means, written as IR (Warp's `indexedarray`).

An `IndexedArrayType` value is a record (see `kernelc.types.IndexedArrayType`): the data
array, one int32 index array per dimension (its shape is that dimension's size) and a bit
mask of the dimensions that are indexed. Element `a[i, j]` is `data[I(i), J(j)]` where a
dimension's index goes through its index array if it is indexed and is used as it is if
not; as in Warp, a negative index counts from the end of its dimension first.

The front end (and atomics) expand accesses with these helpers, so both backends see only
plain array loads, stores and atomics, and the debug-mode bounds checks of those cover
indexed arrays too: an index past a dimension fails on the index array (or, for a dimension
that is not indexed, on the data array), an index array entry past the data on the data.
"""

from __future__ import annotations

from kernelc import types as T
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

_INDEX_ARRAY = T.ArrayType(T.int32, 1)


def data_array(em, arr: ir.Value) -> ir.Value:
    """The array an indexed array reads and writes."""
    t: T.IndexedArrayType = arr.type
    return em.op(OpCode.EXTRACT, (arr,), T.ArrayType(t.dtype, t.ndim), 0)


def dim_size(em, arr: ir.Value, axis: int) -> ir.Value:
    """The int32 size of dimension `axis` (the length of its index array if indexed)."""
    index = em.op(OpCode.EXTRACT, (arr,), _INDEX_ARRAY, 1 + axis)
    return em.op(OpCode.ARRAY_SHAPE, (index,), T.int32, 0)


def element(em, arr: ir.Value, indices) -> tuple[ir.Value, tuple[ir.Value, ...]]:
    """(data array, indices into it) of element `arr[indices]` (one index per dimension)."""
    t: T.IndexedArrayType = arr.type
    mask = em.op(OpCode.EXTRACT, (arr,), T.int32, 1 + t.ndim)
    mapped = tuple(_dimension(em, arr, mask, axis, i) for axis, i in enumerate(indices))
    return data_array(em, arr), mapped


def _dimension(em, arr: ir.Value, mask: ir.Value, axis: int, i: ir.Value) -> ir.Value:
    # 64-bit indices stay 64-bit; the rest compute in int32, as Warp's `int` indices.
    it = T.int64 if i.type in (T.int64, T.uint32, T.uint64) else T.int32
    i = em.cast(i, it)
    index = em.op(OpCode.EXTRACT, (arr,), _INDEX_ARRAY, 1 + axis)
    size = em.cast(em.op(OpCode.ARRAY_SHAPE, (index,), T.int32, 0), it)
    negative = em.op(OpCode.LT, (i, em.const(0, it)), T.bool_)
    i = em.op(OpCode.SELECT, (negative, em.op(OpCode.ADD, (i, size), it), i), it)
    bit = em.op(OpCode.BITAND, (mask, em.const(1 << axis, T.int32)), T.int32)
    indexed = em.op(OpCode.NE, (bit, em.const(0, T.int32)), T.bool_)
    # The index array is read only where it exists: a branch, not a select.
    slot = em.new_slot(f"indexed{axis}", it)
    em.store(slot, i)
    with em.region() as then:
        em.store(slot, em.cast(em.op(OpCode.ARRAY_LOAD, (index, i), T.int32), it))
    em.append(ir.If(em.loc, indexed, tuple(then)))
    return em.load(slot)
