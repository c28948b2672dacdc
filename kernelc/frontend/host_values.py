"""Host values folded into kernels as constants, the truth value of an array, and the
runtime arrays a kernel may not fold in.

Globals, closures and `kc.static(...)` results that are vectors, matrices or struct
instances become BUILDs of constants; `if arr:` becomes a test of the array's shape.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.errors import KernelError, WarpCodegenTypeError
from kernelc.frontend.builder import IRBuilder
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode
from kernelc.types_bf16 import number_dtype


def constant_aggregate(b: IRBuilder, t: T.VectorType | T.MatrixType,
                       value: np.ndarray) -> ir.Value:
    """A host vector/matrix value: a BUILD of its components as constants."""
    parts = [b.const(c, t.dtype) for c in np.asarray(value).reshape(-1).tolist()]
    return b.op(OpCode.BUILD, parts, t)


def constant_struct(b: IRBuilder, t: T.StructType, value: Any) -> ir.Value:
    """A host struct instance (e.g. what `kc.static(make_s())` returns): a BUILD of its
    fields as constants. Array fields have no constant form."""
    fields = []
    for name, field in t.fields:
        v = getattr(value, name)
        if isinstance(field, T.StructType):
            fields.append(constant_struct(b, field, v))
        elif isinstance(field, (T.VectorType, T.MatrixType)):
            fields.append(constant_aggregate(b, field, np.asarray(v)))
        elif isinstance(field, T.ScalarType):
            fields.append(b.const(np.asarray(v, number_dtype(field)).item(), field))
        else:
            raise KernelError(f"a {t!r} value cannot be folded into a kernel as a constant: "
                              f"its field '{name}' is a {field!r}")
    return b.op(OpCode.BUILD, fields, t)


def array_truth(b: IRBuilder, arr: ir.Value, ndim: int) -> ir.Value:
    """`if arr:` — Warp tests the data pointer. Null arrays (None) and Warp's arrays of no
    elements (allocated without memory) are exactly those with a zero dimension, so the
    test reads the shape, which the IR has (it has no pointer value)."""
    zero = b.const(0, T.int32)
    result = None
    for axis in range(ndim):
        size = b.op(OpCode.ARRAY_SHAPE, (arr,), T.int32, axis)
        nonzero = b.op(OpCode.NE, (size, zero), T.bool_)
        result = nonzero if result is None else b.op(OpCode.BITAND, (result, nonzero),
                                                     T.bool_)
    return result


def refuse_outside_array(value: Any, node: ast.AST) -> None:
    """Raises for a runtime array met as a global or closure value: folding it in while
    compiling would bake in its contents at that moment (Warp refuses it too)."""
    if isinstance(getattr(value, "_kc_type", None), (T.ArrayType, T.IndexedArrayType)) \
            and getattr(value, "shape", None) is not None:
        raise WarpCodegenTypeError(
            f"'{ast.unparse(node)}' is an array from outside the kernel; arrays reach a "
            f"kernel only as launch arguments (add a parameter for it)")


def is_array_class(obj: Any, *names: str) -> bool:
    """Whether `obj` is one of kernelc's runtime array classes named `names`."""
    return isinstance(obj, type) and obj.__module__.startswith("kernelc.runtime") and \
        obj.__name__ in names


def refuse_array_class(obj: Any) -> None:
    """Raises for a call of an array class that has no in-kernel form (`indexedarray`)."""
    if is_array_class(obj, "indexedarray"):
        raise KernelError(f"kernelc cannot make an {obj.__name__} inside a kernel; pass it "
                          f"as a launch argument")
