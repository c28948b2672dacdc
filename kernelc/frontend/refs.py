"""Calls of funcs with `kc.ref[T]` parameters, on the caller's side.

A reference parameter of a value type (scalar, vector, matrix, struct) is passed in and
handed back: the callee returns its final value after its own results, and the caller
stores it into the expression it passed (a variable, an array element, a struct field or a
component), as if the func had written through a pointer. The indices in that expression
are evaluated once, before the call, so the value is stored where it was read.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.builder import Val
from kernelc.ir import nodes as ir
from kernelc.types_ref import is_ref, passes_back


def has_refs(func: Any) -> bool:
    """Whether any overload of the func `func` takes a `kc.ref[T]` parameter."""
    return any(is_ref(ann) for v in func.variants for ann in v.annotations.values())


def ref_outputs(func: Any, param_types: tuple[T.Type, ...]) -> tuple[int, ...]:
    """The positions of the parameters the func `func`, specialised for `param_types`,
    hands back to its caller, in the order it returns them after its own results."""
    return tuple(i for i, (name, t) in enumerate(zip(func.arg_names, param_types))
                 if is_ref(func.annotations.get(name)) and passes_back(t))


class RefTargets:
    """The argument expressions of one call, with the indices of each subscript evaluated
    once (bound to hidden names), so that what is read before the call is what is written
    after it."""

    def __init__(self, lowerer: Any):
        self.lowerer = lowerer
        self.hidden: list[str] = []

    def prepare(self, node: ast.expr) -> ast.expr:
        """`node` with the index expressions of its subscript chain evaluated now."""
        if not isinstance(node, (ast.Subscript, ast.Attribute)):
            return node
        node = copy.copy(node)
        node.value = self.prepare(node.value)
        if isinstance(node, ast.Subscript):
            node.slice = self._hoist(node.slice)
        return node

    def _hoist(self, index: ast.expr) -> ast.expr:
        if isinstance(index, ast.Tuple):
            out = copy.copy(index)
            out.elts = [self._hoist(e) for e in index.elts]
            return out
        if isinstance(index, (ast.Constant, ast.Slice)):
            return index
        name = f"#ref{len(self.hidden)}"
        self.lowerer.names[name] = self.lowerer.visit(index)
        self.hidden.append(name)
        return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), index)

    def release(self) -> None:
        for name in self.hidden:
            self.lowerer.names.pop(name, None)

    def check(self, node: ast.expr, param: str, func_name: str) -> None:
        """Raises unless `node` names storage a reference can write to."""
        lowerer = self.lowerer
        what = f"argument '{param}' of '{func_name}' is a kc.ref parameter, which"
        root = node
        while isinstance(root, (ast.Subscript, ast.Attribute)):
            if isinstance(root, ast.Subscript) and any(
                    isinstance(i, ast.Slice) for i in _index_nodes(root)):
                raise KernelError(f"{what} cannot take a slice")
            root = root.value
        if not isinstance(root, ast.Name):
            raise KernelError(
                f"{what} needs storage to write to (a variable, an array element, a struct "
                f"field or a component), not the temporary value of "
                f"'{ast.unparse(node)}'")
        bound = lowerer.names.get(root.id)
        if root is node and not isinstance(bound, ir.Slot):
            raise KernelError(f"{what} needs a variable, but '{root.id}' is a constant")
        if root is node:
            refuse_constant_local(lowerer, root.id, f"{what} needs a variable")

    def write_back(self, node: ast.expr, value: ir.Value) -> None:
        """Stores a reference's final value into the expression the caller passed."""
        self.lowerer.assign(node, Val(value), node)


def refuse_constant_local(lowerer: Any, name: str, what: str) -> None:
    """Raises if local `name` is a constant local: assigned a literal (`x = 0`) and nothing
    else, which Warp folds into a constant, so neither a reference nor an address can be
    taken (its message suggests the typed spelling that makes it a variable)."""
    literal = lowerer.first_literals.get(name)
    if literal is None or name not in lowerer.assigned_once:
        return
    value, t = literal
    spelling = f"{_kernelc_alias(lowerer)}.{t!r}({value!r})"
    raise KernelError(f"{what}, but '{name}' is a constant local (it is only ever assigned a "
                      f"literal); to declare a variable, write {name} = {spelling}")


def _kernelc_alias(lowerer: Any) -> str:
    """The name the function's module imported kernelc under (`kc`, or `wp` in a ported
    Warp program), so that a suggested fix reads as the user's code does."""
    import kernelc

    aliases = [name for name, value in lowerer.source.globals.items() if value is kernelc]
    used = {n.id for stmt in lowerer.source.tree.body for n in ast.walk(stmt)
            if isinstance(n, ast.Name)}
    return next((a for a in aliases if a in used), aliases[0] if aliases else "kc")


def _index_nodes(node: ast.Subscript) -> list[ast.expr]:
    return node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
