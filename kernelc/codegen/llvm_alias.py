"""Alias scopes for array arguments, so that LLVM may reorder and vectorise across arrays.

Array arguments may alias: a launch can pass one array as input and output, or two views
of the same memory. LLVM must then assume that a store to one array changes what a load
from another reads, and it leaves a loop scalar whenever it cannot bound the addresses to
check them at run time (gathers through clamped or computed indices: a stencil).

The variant of a kernel compiled for launches whose array arguments share no memory
(`LlvmOptions.disjoint_arrays`: the launcher checks the arrays' byte ranges and compiles
the variant without when they overlap) gives every load and store of an array argument
scoped alias metadata: `!alias.scope` names its argument, `!noalias` all the others.
An indexed array argument's data and index arrays count as that argument (the launcher
checks their ranges too). Accesses whose array cannot be traced to one
argument (an array field of a struct, a local that holds different arrays, raw addresses,
atomics) carry none, which LLVM treats as
possibly aliasing anything, so the only promises made are between argument arrays. Funcs
are inlined, so a func that takes arrays gets a copy per combination of arguments its
array parameters are bound to.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir as ll

from kernelc import types as T
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

Origins = tuple[int | None, ...]  # per parameter of a function: the kernel argument it is


@dataclass(frozen=True)
class AliasPlan:
    """Which kernel arguments get a scope, and which of them the kernel stores into."""

    scoped: tuple[int, ...]  # positions of the array parameters with traced accesses
    written: tuple[int, ...]  # the subset with traced stores


def value_origins(fn: ir.Function, origins: Origins) -> dict[int, int]:
    """The kernel argument each array value of `fn` is, by value id, where it is one only.

    Parameters are bound by `origins`; a local that only ever holds one argument, and a
    select between two values of the same argument, are that argument too.
    """
    known = {p.id: o for p, o in zip(fn.params, origins) if o is not None}
    stores: dict[int, list[ir.Value]] = {}
    derived: list[tuple[ir.Value, tuple]] = []  # (result, the slot id or values it takes)
    for s in ir.walk(fn.body):
        if isinstance(s, ir.StoreSlot) and isinstance(s.slot.type, T.ArrayType):
            stores.setdefault(s.slot.id, []).append(s.value)
        elif isinstance(s, ir.Op) and s.result is not None \
                and isinstance(s.result.type, T.ArrayType):
            if s.opcode == OpCode.LOAD_SLOT:
                derived.append((s.result, ("slot", s.attr.id)))
            elif s.opcode == OpCode.SELECT:
                derived.append((s.result, ("values", s.args[1], s.args[2])))
            elif s.opcode == OpCode.ARRAY_VIEW:  # a view lies within its array's memory
                derived.append((s.result, ("values", s.args[0], s.args[0])))
            elif s.opcode == OpCode.EXTRACT and isinstance(s.args[0].type, T.IndexedArrayType):
                # An indexed argument's data and index arrays are that argument.
                derived.append((s.result, ("values", s.args[0], s.args[0])))
    slots: dict[int, int] = {}
    changed = True
    while changed:  # a fixed point: stores may come after the loads in a loop
        changed = False
        for sid, values in stores.items():
            found = {known.get(v.id) for v in values}
            if sid not in slots and len(found) == 1 and None not in found:
                slots[sid] = found.pop()
                changed = True
        for result, how in derived:
            if result.id in known:
                continue
            if how[0] == "slot":
                origin = slots.get(how[1])
            else:
                a, b = known.get(how[1].id), known.get(how[2].id)
                origin = a if a == b else None
            if origin is not None:
                known[result.id] = origin
                changed = True
    return known


def plan_aliasing(module: ir.Module) -> AliasPlan | None:
    """The arguments to scope, or None when scopes could not help: the kernel stores into
    no traced argument, or touches fewer than two."""
    funcs = {f.name: f for f in module.funcs}
    accessed: set[int] = set()
    written: set[int] = set()
    seen: set[tuple[str, Origins]] = set()

    def visit(fn: ir.Function, origins: Origins) -> None:
        if (fn.name, origins) in seen:
            return
        seen.add((fn.name, origins))
        where = value_origins(fn, origins)
        for s in ir.walk(fn.body):
            if isinstance(s, ir.ArrayStore) and s.array.id in where:
                accessed.add(where[s.array.id])
                written.add(where[s.array.id])
            elif isinstance(s, ir.Op) and s.opcode == OpCode.ARRAY_LOAD \
                    and s.args[0].id in where:
                accessed.add(where[s.args[0].id])
            elif isinstance(s, ir.Op) and s.opcode == OpCode.CALL_FUNC:
                visit(funcs[s.attr], tuple(where.get(a.id) for a in s.args))

    visit(module.kernel, kernel_origins(module.kernel))
    if not written or len(accessed) < 2:
        return None
    return AliasPlan(tuple(sorted(accessed)), tuple(sorted(written)))


def kernel_origins(kernel: ir.Function) -> Origins:
    return tuple(i if isinstance(p.type, (T.ArrayType, T.IndexedArrayType)) else None
                 for i, p in enumerate(kernel.params))


class AliasScopes:
    """The metadata of one module: a domain, a scope per argument, and the lists."""

    def __init__(self, llmod: ll.Module, entry: str, plan: AliasPlan):
        self.plan = plan
        domain = llmod.add_metadata([ll.MetaDataString(llmod, f"kc.args {entry}")])
        scope = {i: llmod.add_metadata([ll.MetaDataString(llmod, f"kc.arg{i} {entry}"), domain])
                 for i in plan.scoped}
        self._scope = {i: llmod.add_metadata([scope[i]]) for i in plan.scoped}
        self._others = {i: llmod.add_metadata([scope[j] for j in plan.scoped if j != i])
                        for i in plan.scoped}

    def tag(self, instruction: ll.Instruction, origin: int) -> None:
        if origin in self._scope:  # (an argument accessed only through atomics has none)
            instruction.set_metadata("alias.scope", self._scope[origin])
            instruction.set_metadata("noalias", self._others[origin])


def func_variant(state, fn: ir.Function, origins: Origins) -> ll.Function:
    """The copy of func `fn` whose array parameters are the kernel arguments `origins`
    (emitted on first use; a copy has the same signature as the plain func)."""
    key = (fn.name, origins)
    found = state.variants.get(key)
    if found is None:
        from kernelc.codegen.llvm import FunctionEmitter, func_type

        found = ll.Function(state.llmod, func_type(fn),
                            f"{state.entry}__{fn.name}.noalias{len(state.variants)}")
        found.linkage = "internal"
        found.attributes.add("alwaysinline")
        found.attributes.add("nounwind")
        state.variants[key] = found  # before emitting: a recursive call finds it
        emitter = FunctionEmitter(state, fn)
        emitter.origins = value_origins(fn, origins)
        emitter.emit_func(found)
    return found
