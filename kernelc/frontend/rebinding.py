"""Names bound at compile time (a func, a tuple, an array view) and rebound later.

Such a name is bound to what it stands for, not to a slot, so code lowered after a
rebinding sees the new binding and code lowered before it the old one, in the order of the
program text. That order is the order of execution only where the rebinding runs whenever
the code after it does: in the block that made the binding. A rebinding inside a branch
or a loop that the binding encloses needs a value that exists at run time:

- an array view (`row = a[0]`, then `row = a[1]` in a branch or loop) becomes an array
  value in a slot, as Warp's views are, the old view stored where it was bound;
- a func, a type or a tuple has no run-time value (Warp has no function pointers, and a
  tuple is a group of values): rebinding it there is a `KernelError`.

Loops are scanned before their body is lowered, since the body's reads of a name come
before its rebinding in the text but after it in the next iteration.
"""

from __future__ import annotations

import ast
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.array_views import array_view
from kernelc.frontend.builder import Val
from kernelc.frontend.lower_expr import ArrayView, PyObj, TupleVal
from kernelc.ir import nodes as ir

COMPILE_TIME = (PyObj, TupleVal, ArrayView)


class RebindingLowering:
    """Mixin of FunctionLowerer: where compile-time bindings are made and rebound."""

    def note_binding(self, name: str, value: Any) -> None:
        """Records the block that binds `name` to a compile-time value."""
        if isinstance(value, COMPILE_TIME):
            self.binding_blocks[name] = self.b.current_block()

    def rebind(self, name: str, bound: Any, value: Any) -> tuple[Any, Any]:
        """The binding and value `assign_name` goes on with, once a compile-time binding
        rebound under a branch or loop is made a slot; raises where it cannot be."""
        block = self.binding_blocks.get(name, self.b.root_block())
        if not isinstance(bound, COMPILE_TIME) or block is self.b.current_block() or \
                not self.b.is_open(block):
            return bound, value
        if isinstance(bound, PyObj) and isinstance(value, PyObj) and bound.obj is value.obj:
            return bound, value
        if isinstance(bound, ArrayView):
            with self.b.reopen(block):
                bound = self.view_slot(name, bound)
            return bound, value
        if isinstance(bound, TupleVal):
            raise KernelError(
                f"'{name}' is a tuple bound outside this branch or loop and cannot be rebound "
                f"inside it (a tuple is not one run-time value); use a vector or separate "
                f"variables")
        raise KernelError(
            f"'{name}' names {_describe(bound.obj)}, bound outside this branch or loop, and "
            f"cannot be rebound inside it: kernels have no function or type values, so what "
            f"'{name}' names cannot depend on a branch or an iteration")

    def view_value(self, name: str, view: ArrayView) -> Val:
        """The array value of the view `name` is bound to."""
        if not isinstance(view.array.type, T.ArrayType):
            raise KernelError(f"'{name}' is a view of a {view.array.type!r}, which cannot "
                              f"be rebound in a branch or loop")
        return array_view(self, view.array, list(view.indices))

    def view_slot(self, name: str, view: ArrayView) -> ir.Slot:
        """A slot holding the view `name` is bound to, made in the current block."""
        value = self.view_value(name, view)
        slot = self.b.new_slot(name, value.type)
        self.b.store(slot, value.value)
        self.names[name] = slot
        self.slot_blocks[slot.id] = self.b.current_block()
        return slot

    def prepare_loop(self, body: list[ast.stmt]) -> None:
        """Before lowering a loop body: a view the body rebinds becomes a slot now, and a
        func or tuple it rebinds counts as bound here, so that rebinding is refused."""
        stored = {n.id for stmt in body for n in ast.walk(stmt)
                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for name in sorted(stored):
            bound = self.names.get(name)
            # A binding made in a block already closed (an earlier loop's body) is not one
            # this loop can see change; the body's own binding replaces it.
            if not isinstance(bound, COMPILE_TIME) or not self.b.is_open(
                    self.binding_blocks.get(name, self.b.root_block())):
                continue
            if isinstance(bound, ArrayView):
                self.view_slot(name, bound)
            else:
                self.binding_blocks[name] = self.b.current_block()


def _describe(obj: Any) -> str:
    name = next((getattr(obj, a) for a in ("__name__", "key", "name")
                 if isinstance(getattr(obj, a, None), str)), None)
    if isinstance(obj, (T.Type, type)) or T.as_type(obj) is not None:
        return f"the type {obj!r}"
    if callable(obj):
        return f"the function '{name}'" if name else "a function"
    if obj is None:
        return "None"
    return f"the compile-time value {name or repr(obj)}"
