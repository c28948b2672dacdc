"""Emits IR statements into nested blocks while the front end walks the AST."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kernelc import types as T
from kernelc.errors import Loc
from kernelc.ir import nodes as ir
from kernelc.types_bf16 import round_float32


class StorageHandle:
    """A name bound to storage the front end manages (a local array, a tile stack):
    assigning it binds the name; it is never a value itself."""


@dataclass(frozen=True, slots=True)
class Val:
    """A typed value during lowering. `weak` marks a bare Python literal (or an expression
    of literals only), which takes the type of the operand it meets; `const` holds a
    literal's Python value so it can be re-emitted in that type."""

    value: ir.Value
    weak: bool = False
    const: Any = None

    @property
    def type(self) -> T.Type:
        return self.value.type


class IRBuilder:
    """Owns the value/slot counters and the stack of open blocks of one function."""

    def __init__(self) -> None:
        self._next_id = 0
        self.slots: list[ir.Slot] = []
        self._blocks: list[list[ir.Stmt]] = [[]]
        self.loc: Loc = Loc("<unknown>", 0)
        # For blocks of several lanes (`ir/lanes.py`): the statements a tile operation
        # emitted, which run once per block (by id, read before any pass rebuilds them),
        # and the slots holding a block's shared storage (tiles), not one lane's.
        self.in_collective = False
        self.collective: dict[int, ir.Stmt] = {}  # (holding the statement keeps its id unique)
        self.block_slots: set[int] = set()

    def new_value(self, type: T.Type) -> ir.Value:
        self._next_id += 1
        return ir.Value(self._next_id, type)

    def new_slot(self, name: str, type: T.Type) -> ir.Slot:
        self._next_id += 1
        slot = ir.Slot(self._next_id, name, type)
        self.slots.append(slot)
        return slot

    def append(self, stmt: ir.Stmt) -> None:
        self._blocks[-1].append(stmt)
        if self.in_collective:
            self.collective[id(stmt)] = stmt

    @contextmanager
    def collective_code(self, on: bool = True) -> Iterator[None]:
        """Marks what is emitted inside the `with` as a block's collective work (tile
        operations), or with `on=False` as per-lane work within it (`tile(x)`)."""
        saved, self.in_collective = self.in_collective, on
        try:
            yield
        finally:
            self.in_collective = saved

    def barrier(self) -> None:
        """Where every lane of a block must have got to before any goes on (after lanes
        wrote a block's storage): an empty statement of collective work."""
        with self.collective_code():
            self.const(0, T.int32)

    def new_block_slot(self, name: str, type: T.Type) -> ir.Slot:
        """A slot shared by the lanes of a block (a tile's storage)."""
        slot = self.new_slot(name, type)
        self.block_slots.add(slot.id)
        return slot

    def current_block(self) -> list[ir.Stmt]:
        """The block statements are being emitted into (a loop body, a branch, ...)."""
        return self._blocks[-1]

    def root_block(self) -> list[ir.Stmt]:
        """The function body's block."""
        return self._blocks[0]

    def is_open(self, block: list[ir.Stmt]) -> bool:
        """Whether `block` is still being emitted into (it encloses the current block)."""
        return any(b is block for b in self._blocks)

    @contextmanager
    def region(self) -> Iterator[list[ir.Stmt]]:
        """Collects the statements emitted inside the `with` into a fresh list."""
        self._blocks.append([])
        try:
            yield self._blocks[-1]
        finally:
            self._blocks.pop()

    @contextmanager
    def reopen(self, block: list[ir.Stmt]) -> Iterator[None]:
        """Appends to a region collected earlier (to add conversions at its end)."""
        self._blocks.append(block)
        try:
            yield
        finally:
            self._blocks.pop()

    def body(self) -> tuple[ir.Stmt, ...]:
        return tuple(self._blocks[0])

    # -- the Emitter protocol used by builtin expansions -----------------------------------

    def op(self, opcode: ir.OpCode, args: Sequence[ir.Value], type: T.Type, attr: Any = None
           ) -> ir.Value:
        result = None if type == T.void else self.new_value(type)
        self.append(ir.Op(self.loc, result, opcode, tuple(args), attr))
        return result

    def call(self, name: str, args: Sequence[ir.Value]) -> ir.Value:
        """Another builtin, applied to typed values (used inside builtin expansions)."""
        from kernelc.builtins import BUILTINS, Expansion

        overload = BUILTINS[name].overload_for(len(args))
        params, result = overload.rule(tuple(a.type for a in args), (False,) * len(args))
        if overload.expand is None:
            return self.op(ir.OpCode.CALL, args, result, overload.key)
        out = overload.expand(self, *args)
        return out.value if isinstance(out, Expansion) else out

    def const(self, value: Any, type: T.Type) -> ir.Value:
        return self.op(ir.OpCode.CONST, (), type, normalize_const(value, type))

    def cast(self, value: ir.Value, type: T.Type) -> ir.Value:
        if value.type == type:
            return value
        return self.op(ir.OpCode.CAST, (value,), type)

    def load(self, slot: ir.Slot) -> ir.Value:
        return self.op(ir.OpCode.LOAD_SLOT, (), slot.type, slot)

    def store(self, slot: ir.Slot, value: ir.Value) -> None:
        self.append(ir.StoreSlot(self.loc, slot, value))


def normalize_const(value: Any, type: T.Type) -> Any:
    """A literal converted to `type`'s Python value, integers wrapped to the type's width."""
    if not isinstance(type, T.ScalarType):
        return value
    if type.is_bool:
        return bool(value)
    if type.is_float:
        if type == T.bfloat16:  # held rounded: no NumPy or backend type rounds it later
            return float(round_float32(float(value)))
        return float(value)
    v = int(value)
    mask = (1 << type.bits) - 1
    v &= mask
    if type.kind == "int" and v >> (type.bits - 1):
        v -= 1 << type.bits
    return v
