"""Atomic updates that every thread of a launch applies to one and the same element.

Backward kernels are full of them: the gradient of a read such as `params[0]` or
`mesh.pos[0]` is an atomic add at an index that does not depend on the thread. Done one
atomic at a time, every thread of every worker contends for one cache line. A worker can
instead add its threads' contributions in a register and apply one atomic at the end of
its range of threads (`kernelc.codegen.llvm_memory`).

That is only invisible when nothing in the launch reads the element meanwhile, so an update
qualifies when:

- it is an atomic add or sub, in the kernel's own body, whose old value is never used;
- its array and indices are *uniform*: computed from the kernel's parameters and constants
  by pure operations only (never from `tid()`, a memory load, a local variable or a call);
- the array is a parameter, or a field of a struct parameter, that the kernel only ever
  updates this way or asks the shape of: no load, store, view, other atomic, or call that
  receives it (or the struct holding it).
"""

from __future__ import annotations

from kernelc import types as T
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

_PURE = ir.BINARY_OPS | ir.COMPARE_OPS | ir.UNARY_OPS | frozenset({
    OpCode.CONST, OpCode.CAST, OpCode.SELECT, OpCode.EXTRACT, OpCode.BUILD, OpCode.INSERT,
    OpCode.ARRAY_SHAPE})
_KINDS = frozenset({"add", "sub"})

Root = tuple[int, tuple[int, ...]]  # (parameter id, field path)


def uniform_updates(fn: ir.Function) -> frozenset[int]:
    """The result ids of the kernel's atomics that qualify (see the module's docstring)."""
    uniform = {p.id for p in fn.params}
    roots: dict[int, Root] = {p.id: (p.id, ()) for p in fn.params}
    used: set[int] = set()
    candidates: list[ir.Op] = []
    for s in ir.walk(fn.body):
        used.update(a.id for a in _operands(s))
        if not isinstance(s, ir.Op) or s.result is None:
            continue
        if s.opcode in _PURE and all(a.id in uniform for a in s.args):
            uniform.add(s.result.id)
        if s.opcode == OpCode.EXTRACT and s.args[0].id in roots:
            param, path = roots[s.args[0].id]
            roots[s.result.id] = (param, (*path, s.attr))
        if s.opcode == OpCode.ATOMIC and isinstance(s.attr, str) and s.attr in _KINDS:
            array, rest = s.args[0], s.args[1:1 + s.args[0].type.ndim]
            if array.id in roots and all(a.id in uniform for a in (array, *rest)):
                candidates.append(s)
    candidates = [s for s in candidates if s.result.id not in used]
    chosen = {s.result.id for s in candidates}
    spoiled = _spoiled_roots(fn, roots, chosen)
    return frozenset(s.result.id for s in candidates
                     if not any(_within(roots[s.args[0].id], r) for r in spoiled))


def _spoiled_roots(fn: ir.Function, roots: dict[int, Root], chosen: set[int]) -> set[Root]:
    """Roots used other than by a chosen atomic, a shape query or a field extraction."""
    spoiled: set[Root] = set()
    for s in ir.walk(fn.body):
        for k, v in enumerate(_operands(s)):
            root = roots.get(v.id)
            if root is None or not T.holds_arrays(v.type):
                continue
            if isinstance(s, ir.Op) and (
                    s.opcode in (OpCode.EXTRACT, OpCode.ARRAY_SHAPE)
                    or (s.opcode == OpCode.ATOMIC and k == 0 and s.result.id in chosen)):
                continue
            spoiled.add(root)
    return spoiled


def _within(root: Root, outer: Root) -> bool:
    """Whether `root` is `outer` or a field (of a field...) of it."""
    return root[0] == outer[0] and root[1][:len(outer[1])] == outer[1]


def _operands(s: ir.Stmt) -> tuple[ir.Value, ...]:
    from kernelc.ir.passes.rewrite import operands

    return tuple(operands(s))
