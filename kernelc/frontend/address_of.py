"""`kc.address_of(x)`: the uint64 address of a variable, array element, struct field or
component, for `@kc.func_native` snippets that write through pointers (Warp's
`wp.address_of`).

A variable whose address is taken keeps its storage for the whole kernel: slot forwarding
leaves it alone (passes/forward.py), so what a snippet writes through the address is what
later reads see.
"""

from __future__ import annotations

import ast
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.builder import Val
from kernelc.frontend.lower_expr import ArrayView
from kernelc.frontend.refs import refuse_constant_local
from kernelc.frontend.special import special
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

__all__ = ["address_of"]

_COMPONENTS = {"x": 0, "y": 1, "z": 2, "w": 3}


@special("address_of")
def address_of(x: Any) -> int:
    """The address (a `kc.uint64`) of the storage `x` names: a local variable, an array
    element (`a[i]`), a struct field (`s.f`, `a[i].f`), a vector, matrix or quaternion
    component, or a `kc.ref` parameter. Only in kernels and funcs, typically for a
    `@kc.func_native` snippet taking a `kc.uint64` pointer."""
    raise RuntimeError("kc.address_of() takes the address of kernel storage: call it in a "
                       "kernel or func (on the host, use array.ptr)")


def _lower(lowerer: Any, node: ast.Call) -> Val:
    if len(node.args) != 1 or node.keywords:
        raise KernelError("address_of() takes one argument: the storage to address")
    target = node.args[0]
    chain: list[ast.expr] = []
    root = target
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        chain.append(root)
        root = root.value
    chain.reverse()
    if not isinstance(root, ast.Name):
        raise KernelError(f"address_of() needs storage (a variable, an array element, a field "
                          f"or a component), not the temporary value of "
                          f"'{ast.unparse(target)}'")
    b = lowerer.b
    bound = lowerer.names.get(root.id)
    if isinstance(bound, ir.Slot):
        if not chain:  # `x = 0` only: Warp's constant local, which has no storage
            refuse_constant_local(lowerer, root.id, "address_of() needs a variable")
        path = _path(lowerer, bound.type, chain)
        if not path and not _addressable(bound.type):
            raise KernelError(f"address_of() of a {bound.type!r} variable is not supported "
                              f"(in a kernel it is not held as in memory)")
        return Val(b.op(OpCode.SLOT_ADDRESS, (), T.uint64, (bound, path)))
    base = lowerer.visit(root)
    if isinstance(base, ArrayView):
        array, indices = base.array, list(base.indices)
    elif isinstance(base, Val) and isinstance(base.type, T.ArrayType):
        array, indices = base, []
    else:
        raise KernelError(f"address_of() needs storage, but '{root.id}' is not a variable "
                          f"or an array")
    rest = list(chain)
    while len(indices) < array.type.ndim:
        if not rest or not isinstance(rest[0], ast.Subscript):
            raise KernelError(f"address_of() of a {array.type.ndim}-d array needs an element: "
                              f"give {array.type.ndim} indices")
        step = rest.pop(0)
        items = step.slice.elts if isinstance(step.slice, ast.Tuple) else [step.slice]
        if any(isinstance(i, ast.Slice) for i in items):
            raise KernelError("address_of() needs an element, not a slice")
        indices += [lowerer.index_value(i) for i in items]
    if len(indices) > array.type.ndim:
        raise KernelError(f"a {array.type.ndim}-d array needs {array.type.ndim} indices, "
                          f"got {len(indices)}")
    data, wrapped = lowerer.element_address(array, tuple(indices))
    path = _path(lowerer, array.type.dtype, rest)
    return Val(b.op(OpCode.ELEMENT_ADDRESS, (data, *wrapped), T.uint64, path))


def _addressable(t: T.Type) -> bool:
    """Types whose register form is their memory form (not bool, not bfloat16)."""
    if isinstance(t, T.ScalarType):
        return not t.is_bool and t != T.bfloat16
    return isinstance(t, (T.VectorType, T.MatrixType, T.StructType))


def _path(lowerer: Any, t: T.Type, chain: list[ast.expr]) -> tuple[int, ...]:
    """The EXTRACT indices that `chain` (fields, components) takes into a value of `t`."""
    path: list[int] = []
    row = None  # the row `m[r]` of a matrix, waiting for its column
    for step in chain:
        if isinstance(t, T.StructType) and isinstance(step, ast.Attribute):
            names = [n for n, _ in t.fields]
            if step.attr not in names:
                raise KernelError(f"struct '{t.name}' has no field '{step.attr}'")
            k = names.index(step.attr)
            path.append(k)
            t = t.fields[k][1]
            continue
        if isinstance(t, T.VectorType) and isinstance(step, ast.Attribute) and \
                step.attr in _COMPONENTS and _COMPONENTS[step.attr] < t.length:
            path.append(_COMPONENTS[step.attr])
            t = t.dtype
            continue
        if isinstance(t, (T.VectorType, T.MatrixType)) and isinstance(step, ast.Subscript):
            items = step.slice.elts if isinstance(step.slice, ast.Tuple) else [step.slice]
            consts = [_constant(lowerer, i) for i in items]
            if isinstance(t, T.VectorType) and len(consts) == 1:
                path.append(consts[0] % t.length)
                t = t.dtype
                continue
            if isinstance(t, T.MatrixType) and row is None and len(consts) in (1, 2):
                r = consts[0] % t.shape[0]
                if len(consts) == 1:
                    row = r
                    continue
                path.append(r * t.shape[1] + consts[1] % t.shape[1])
                t = t.dtype
                continue
            if isinstance(t, T.MatrixType) and row is not None and len(consts) == 1:
                path.append(row * t.shape[1] + consts[0] % t.shape[1])
                row, t = None, t.dtype
                continue
        raise KernelError(f"address_of() cannot address '{ast.unparse(step)}' of a {t!r}")
    if row is not None:
        raise KernelError("address_of() of a matrix row: address one of its components")
    return tuple(path)


def _constant(lowerer: Any, node: ast.expr) -> int:
    value = lowerer.visit(node)
    if isinstance(value, Val) and isinstance(value.const, int):
        return value.const
    raise KernelError("address_of() of a component needs a constant index")


SPECIAL_FORMS = {"address_of": _lower}
