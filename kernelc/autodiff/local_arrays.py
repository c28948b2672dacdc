"""Local arrays used as arrays (`OpCode.LOCAL_ARRAY`) in backward kernels.

Their contents live in the thread's frame, not in memory the forward launch left behind,
so a forward replay redoes their stores and atomics (those into arguments it skips).
Gradients do not flow through them: as with Warp's fixed-size arrays, they have none.
"""

from __future__ import annotations

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.ir import nodes as ir
from kernelc.ir.access import array_access
from kernelc.ir.nodes import OpCode


def local_backed(fn: ir.Function) -> frozenset[int]:
    """Ids of `fn`'s array values over its own local arrays: the arrays themselves, views of
    them, and locals and selects that only ever hold them."""
    backed: set[int] = set()
    stores: dict[int, list[int]] = {}
    derived: list[ir.Op] = []
    for s in ir.walk(fn.body):
        if isinstance(s, ir.StoreSlot) and isinstance(s.slot.type, T.ArrayType):
            stores.setdefault(s.slot.id, []).append(s.value.id)
        elif isinstance(s, ir.Op) and s.opcode is OpCode.LOCAL_ARRAY:
            backed.add(s.result.id)
        elif isinstance(s, ir.Op) and s.opcode in (OpCode.ARRAY_VIEW, OpCode.SELECT,
                                                   OpCode.LOAD_SLOT) \
                and isinstance(s.result.type, T.ArrayType):
            derived.append(s)
    if not backed:
        return frozenset()
    changed = True
    while changed:  # a fixed point: a local's stores may follow its loads in a loop
        changed = False
        for s in derived:
            if s.result.id in backed:
                continue
            if s.opcode is OpCode.LOAD_SLOT:
                sources = stores.get(s.attr.id, [])
            else:
                sources = [a.id for a in (s.args[:1] if s.opcode is OpCode.ARRAY_VIEW
                                          else s.args[1:])]
            if sources and all(v in backed for v in sources):
                backed.add(s.result.id)
                changed = True
    return frozenset(backed)


def check_call(s: ir.Op, callee: ir.Function, funcs: dict[str, ir.Function],
               backed: frozenset[int], kernel_name: str) -> None:
    """Refuses to replay a call that writes into a local array passed to it: the func's
    replay skips its array stores, so the local array would be left without them."""
    if not any(a.id in backed for a in s.args):
        return
    module = ir.Module(callee, tuple(funcs.values()))
    for a, access in zip(s.args, array_access(module)):
        if a.id in backed and access.written:
            name = callee.name.rsplit("_", 1)[0]  # (the IR name has a numeric suffix)
            raise KernelError(
                f"cannot differentiate a call of '{name}' that writes into a local array "
                f"passed to it: the backward pass replays the func without its array "
                f"stores; fill the local array in the caller instead", s.loc, kernel_name)
