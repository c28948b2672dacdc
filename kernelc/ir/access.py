"""Which array parameters a kernel reads and writes (for `verify_autograd_array_access`).

An array parameter is read by a load, written by a store or an atomic, through the
parameter itself, a local it was assigned to, a view of it, or a func it was passed to.
A parameter written after a read, in the order of the source, is reported with the
location of that write: the backward pass would replay the read with the new contents.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelc import types as T
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


@dataclass(frozen=True)
class ParamAccess:
    """How a function uses one array parameter."""

    read: bool = False
    written: bool = False
    written_after_read: ir.Loc | None = None  # the first write that follows a read


def array_access(module: ir.Module, fn: ir.Function | None = None) -> tuple[ParamAccess, ...]:
    """The access of each parameter of `fn` (the kernel by default); non-array parameters
    (and arrays inside structs) are reported as neither read nor written."""
    return _Analysis(module).of(module.kernel if fn is None else fn)


class _Analysis:
    def __init__(self, module: ir.Module):
        self.module = module
        self.done: dict[str, tuple[ParamAccess, ...]] = {}

    def of(self, fn: ir.Function) -> tuple[ParamAccess, ...]:
        found = self.done.get(fn.name)
        if found is None:
            found = self.done[fn.name] = self._analyse(fn)
        return found

    def _analyse(self, fn: ir.Function) -> tuple[ParamAccess, ...]:
        origin = {p.id: k for k, p in enumerate(fn.params) if isinstance(p.type, T.ArrayType)}
        slot_origin: dict[int, int] = {}
        read: set[int] = set()
        written: set[int] = set()
        after_read: dict[int, ir.Loc] = {}

        def write(k: int, loc: ir.Loc) -> None:
            written.add(k)
            if k in read:
                after_read.setdefault(k, loc)

        for s in ir.walk(fn.body):
            if isinstance(s, ir.StoreSlot) and s.value.id in origin:
                slot_origin[s.slot.id] = origin[s.value.id]
            elif isinstance(s, ir.ArrayStore) and s.array.id in origin:
                write(origin[s.array.id], s.loc)
            elif isinstance(s, ir.Op):
                self._op(s, origin, slot_origin, read, write)
        return tuple(ParamAccess(k in read, k in written, after_read.get(k))
                     for k in range(len(fn.params)))

    def _op(self, s: ir.Op, origin, slot_origin, read: set[int], write) -> None:
        if s.opcode is OpCode.LOAD_SLOT:
            if s.attr.id in slot_origin:
                origin[s.result.id] = slot_origin[s.attr.id]
        elif s.opcode is OpCode.ARRAY_LOAD:
            if s.args[0].id in origin:
                read.add(origin[s.args[0].id])
        elif s.opcode is OpCode.ATOMIC:
            if s.args[0].id in origin:
                write(origin[s.args[0].id], s.loc)
        elif s.opcode is OpCode.CALL_FUNC:
            callee = self.module.func(s.attr)
            for a, access in zip(s.args, self.of(callee)):
                k = origin.get(a.id)
                if k is None:
                    continue
                if access.written_after_read is not None:  # reported where the func writes
                    read.add(k)
                    write(k, access.written_after_read)
                    continue
                if access.written:
                    write(k, s.loc)
                if access.read:
                    read.add(k)
        elif s.result is not None and isinstance(s.result.type, T.ArrayType):
            # A view of a parameter, or a choice between arrays: it stands for them.
            for a in s.args:
                if a.id in origin:
                    origin[s.result.id] = origin[a.id]
