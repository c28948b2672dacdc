"""Arrays and addresses inside a kernel: `a.ptr` (the address of an array's first
element, a uint64) and `kc.array(ptr=..., shape=..., dtype=...)` (a contiguous array over
an address), as in Warp, e.g. to see a local array of floats as one of vec2.

Nothing is known of such an array's memory: it may be any other array's, so alias
analysis gives its accesses no scope, and its stores are not replayed for gradients. Such
an array has no gradient, except where kernelc's own library funcs give the address of
one (`_grad_ptr=`, e.g. a mesh's points in `mesh_get`).
"""

from __future__ import annotations

import ast

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.builder import Val
from kernelc.ir.nodes import OpCode

_PARAMS = ("ptr", "shape", "dtype")
_INTERNAL = ("_grad_ptr",)  # for kernelc's library funcs


def address(lowerer, array: Val) -> Val:
    """`a.ptr`: where the array's (or view's) first element is."""
    if not isinstance(array.type, T.ArrayType):
        raise KernelError(f"'.ptr' is the address of an array's data; {array.type!r} has none")
    return Val(lowerer.b.op(OpCode.ARRAY_ADDRESS, (array.value,), T.uint64))


def array_at(lowerer, node: ast.Call) -> Val:
    """`kc.array(ptr=p, shape=(n, m), dtype=T)`: a contiguous array of T at address p."""
    if len(node.args) > len(_PARAMS):
        raise KernelError("array() in a kernel takes ptr=, shape= and dtype=")
    given = dict(zip(_PARAMS, node.args))
    for kw in node.keywords:
        if kw.arg not in _PARAMS + _INTERNAL or kw.arg in given:
            raise KernelError(f"array() in a kernel takes ptr=, shape= and dtype=, got "
                              f"'{kw.arg}'")
        given[kw.arg] = kw.value
    missing = [p for p in _PARAMS if p not in given]
    if missing:
        raise KernelError(f"array() in a kernel needs {', '.join(missing)} (an array from an "
                          f"address: array(ptr=p, shape=(n,), dtype=float))")
    ptr = lowerer.as_val(lowerer.visit(given["ptr"]), given["ptr"])
    if not (isinstance(ptr.type, T.ScalarType) and ptr.type.is_int):
        raise KernelError(f"ptr= is an address (a uint64 such as `a.ptr`), not a {ptr.type!r}")
    b = lowerer.b
    shape = lowerer.visit(given["shape"])
    dims = shape.items if hasattr(shape, "items") else (shape,)
    if not 1 <= len(dims) <= 4:
        raise KernelError(f"an array has one to four dimensions, got {len(dims)}")
    sizes = []
    for d in dims:
        d = lowerer.as_val(d, given["shape"])
        if not (isinstance(d.type, T.ScalarType) and d.type.is_int):
            raise KernelError(f"the shape of an array is made of ints, not {d.type!r}")
        sizes.append(b.cast(d.value, T.int32))
    dtype = lowerer.eval_annotation(given["dtype"])
    if not isinstance(dtype, (T.ScalarType, T.VectorType, T.MatrixType, T.StructType)):
        raise KernelError(f"an array from an address holds scalars, vectors, matrices or "
                          f"structs, not {dtype!r}")
    t = T.ArrayType(dtype, len(sizes))
    address = b.cast(ptr.value, T.uint64)
    if "_grad_ptr" in given:
        grad = lowerer.as_val(lowerer.visit(given["_grad_ptr"]), given["_grad_ptr"])
        return Val(b.op(OpCode.ARRAY_AT, (address, b.cast(grad.value, T.uint64), *sizes), t,
                        "grad"))
    return Val(b.op(OpCode.ARRAY_AT, (address, *sizes), t))
