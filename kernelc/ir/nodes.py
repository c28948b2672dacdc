"""IR nodes: frozen dataclasses, each statement carrying its source location.

A function body is a Block (a tuple of statements). Values are typed SSA results of `Op`
statements (or function parameters); a value is visible in the block that defines it and in
the blocks nested inside. Anything that must cross a region boundary or change over time
(a Python local assigned in a loop or a branch) lives in an explicit `Slot`. Control flow
is structured: If / For / While regions with Break / Continue / Return, so a backend can
lower a region under an execution mask (SIMD) or as plain C.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from kernelc.errors import Loc
from kernelc.types import Type

# The attr of a SELECT that is min / max (`a <= b ? a : other`): its gradient goes to `a` only
# where a != other, so a tie sends it to `b`, as Warp's adj_min / adj_max do.
TIES_TO_OTHER = "ties_to_other"


class OpCode(enum.Enum):
    CONST = "const"  # attr: the Python value
    CAST = "cast"  # args: (x,); result type is the target
    NEG = "neg"
    NOT = "not"  # logical not of a bool
    INVERT = "invert"  # bitwise not of an int
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"  # true division for floats, truncating for ints (C, as Warp)
    FLOORDIV = "floordiv"
    MOD = "mod"  # truncated remainder (C fmod / %)
    POW = "pow"
    BITAND = "bitand"
    BITOR = "bitor"
    BITXOR = "bitxor"
    SHL = "shl"
    SHR = "shr"
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    SELECT = "select"  # args: (cond, a, b); attr: None or TIES_TO_OTHER
    LOAD_SLOT = "load_slot"  # attr: Slot
    TID = "tid"  # attr: (axis, ndim); ndim 0 = a scalar tid(), the launch's leading index
    ARRAY_LOAD = "array_load"  # args: (array, *indices)
    ARRAY_SHAPE = "array_shape"  # args: (array,); attr: axis
    # A view of part of an array (`a[i]` of a 2-d array, `a[1:n:2]`): args (array,
    # *operands); attr: per axis of the array "i" (one int32 operand: the index; the axis
    # goes) or "s" (three int32 operands: first index, step, element count; the axis stays).
    ARRAY_VIEW = "array_view"
    # args: (array, *indices, *operands), operands (value,) or (compare, value) for "cas";
    # attr: add|sub|min|max|and|or|xor|cas|exch; the result is the old value. The attr
    # (kind, path) updates the struct field at `path` (field indices) of the element.
    ATOMIC = "atomic"
    LOCAL_LOAD = "local_load"  # args: (index,); attr: Slot of a LocalArrayType
    # A contiguous array over a local array's storage (a view, a func argument): args ();
    # attr: (Slot of a LocalArrayType, shape); the result is an ArrayType of len(shape) dims.
    LOCAL_ARRAY = "local_array"
    ARRAY_ADDRESS = "array_address"  # args: (array,); the uint64 address of its data
    # A contiguous array at an address: args (uint64 address, *int32 dims); attr None. With
    # attr "grad", args (address, uint64 address of its gradient array or 0, *dims): the
    # backward pass accumulates into that gradient (a mesh's points, see mesh_arrays_lang).
    ARRAY_AT = "array_at"
    CALL = "call"  # attr: builtin key (see kernelc.builtins)
    CALL_FUNC = "call_func"  # attr: the callee Function's name
    EXTRACT = "extract"  # args: (aggregate,); attr: element index (tuple, flat component, field)
    # Vectors, matrices (row-major, flat component index r * cols + c) and structs:
    BUILD = "build"  # args: every component / field in order; result: the aggregate
    INSERT = "insert"  # args: (aggregate, value); attr: index; a copy with one element replaced
    EXTRACT_DYN = "extract_dyn"  # args: (aggregate, int index); index out of range -> element 0
    INSERT_DYN = "insert_dyn"  # args: (aggregate, int index, value); out of range -> unchanged
    # Runtime data structures (hash grids) that kernels receive as a uint64 id:
    LOAD_ADDRESS = "load_address"  # args: (uint64 address, int index); element `index` of a scalar
    # A `@kc.func_native` C++/CUDA snippet (frontend/native_funcs.py): attr a NativeCall.
    # "forward" / "replay": args the func's parameters; result its return value, then the
    # final values of its kc.ref parameters (a tuple when more than one, None when none).
    # "adjoint": args the parameters, one adjoint per parameter (the gradient array of an
    # array), then the adjoint of the return value; result the final adjoints of the
    # parameters listed in `NativeCall.spec.adjoint_outputs`.
    NATIVE = "native"
    # `kc.address_of(x)`: the uint64 address of storage, for native snippets. The slot's
    # (attr: (Slot, path)) or an array element's (args: (array, *indices); attr: path), the
    # path the EXTRACT indices (flat component, field) down to the addressed part.
    SLOT_ADDRESS = "slot_address"
    ELEMENT_ADDRESS = "element_address"
    # CPU blocks of several lanes (`config.enable_cpu_blocks`, see `ir/lanes.py`): LANE is
    # the lane's index in its block (the front end's; the lane pass replaces it). After
    # that pass a kernel runs once per block: TID then gives the block's index, TID_AT
    # (args (linear thread index,); attr (axis, ndim) as TID's) a thread's tid() component
    # and LAUNCH_SIZE the launch's thread count (int32).
    LANE = "lane"
    TID_AT = "tid_at"
    LAUNCH_SIZE = "launch_size"


BINARY_OPS = frozenset(
    {
        OpCode.ADD, OpCode.SUB, OpCode.MUL, OpCode.DIV, OpCode.FLOORDIV, OpCode.MOD,
        OpCode.POW, OpCode.BITAND, OpCode.BITOR, OpCode.BITXOR, OpCode.SHL, OpCode.SHR,
    }
)
COMPARE_OPS = frozenset({OpCode.EQ, OpCode.NE, OpCode.LT, OpCode.LE, OpCode.GT, OpCode.GE})
UNARY_OPS = frozenset({OpCode.NEG, OpCode.NOT, OpCode.INVERT})
# Ops with effects beyond their result: never removed or merged by passes.
EFFECT_OPS = frozenset({OpCode.ATOMIC, OpCode.CALL_FUNC, OpCode.NATIVE})


@dataclass(frozen=True, slots=True)
class Value:
    """A typed SSA value, unique within its function by `id`."""

    id: int
    type: Type

    def __repr__(self) -> str:
        return f"%{self.id}"


@dataclass(frozen=True, slots=True)
class Slot:
    """A mutable local variable (or a local fixed-size array)."""

    id: int
    name: str
    type: Type

    def __repr__(self) -> str:
        return f"${self.name}.{self.id}"


@dataclass(frozen=True, slots=True)
class Stmt:
    loc: Loc


@dataclass(frozen=True, slots=True)
class Op(Stmt):
    """Computes `result` (None for effect-only calls) from `args`."""

    result: Value | None
    opcode: OpCode
    args: tuple[Value, ...] = ()
    attr: Any = None


@dataclass(frozen=True, slots=True)
class StoreSlot(Stmt):
    slot: Slot
    value: Value


@dataclass(frozen=True, slots=True)
class LocalStore(Stmt):
    """`slot[index] = value` for a local fixed-size array."""

    slot: Slot
    index: Value
    value: Value


@dataclass(frozen=True, slots=True)
class ArrayStore(Stmt):
    array: Value
    indices: tuple[Value, ...]
    value: Value


@dataclass(frozen=True, slots=True)
class If(Stmt):
    cond: Value
    then_body: tuple[Stmt, ...]
    else_body: tuple[Stmt, ...] = ()


@dataclass(frozen=True, slots=True)
class For(Stmt):
    """`for var in range(start, stop, step)`; `var` is defined anew in each iteration."""

    var: Value
    start: Value
    stop: Value
    step: Value
    body: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class While(Stmt):
    """Runs `cond_body` and tests `cond` before each iteration of `body`."""

    cond_body: tuple[Stmt, ...]
    cond: Value
    body: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class Break(Stmt):
    pass


@dataclass(frozen=True, slots=True)
class Continue(Stmt):
    pass


@dataclass(frozen=True, slots=True)
class Return(Stmt):
    """Leaves a func with `values`; in a kernel, ends the current thread."""

    values: tuple[Value, ...] = ()


@dataclass(frozen=True, slots=True)
class Print(Stmt):
    """C printf; the backend promotes args as C varargs do (float -> double)."""

    fmt: str
    args: tuple[Value, ...] = ()


@dataclass(frozen=True, slots=True)
class Assert(Stmt):
    """Checked in debug mode only; `message` is the source text of the condition."""

    cond: Value
    message: str


Block = tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class Function:
    """A kernel (`is_kernel`, returns nothing, one call per thread) or a func."""

    name: str
    params: tuple[Value, ...]
    param_names: tuple[str, ...]
    return_types: tuple[Type, ...]
    body: Block
    slots: tuple[Slot, ...]
    is_kernel: bool
    loc: Loc
    lanes: int = 1  # a kernel run once per CPU block of this many lanes (ir/lanes.py)


@dataclass(frozen=True, slots=True)
class Module:
    """A kernel together with every func it reaches, callees first."""

    kernel: Function
    funcs: tuple[Function, ...] = field(default=())
    # (func name, (its custom gradient func, the indices of the parameters it returns the
    # gradients of, those of the arrays whose gradient arrays it adds into)) for funcs with
    # a `@kc.func_grad`; only backward kernels use them.
    custom_adjoints: tuple[tuple[str, tuple[Function, tuple[int, ...], tuple[int, ...]]], ...] = \
        field(default=())
    # (func name, name of its `@kc.func_replay` func, also in `funcs`)
    custom_replays: tuple[tuple[str, str], ...] = field(default=())

    def func(self, name: str) -> Function:
        for f in self.funcs:
            if f.name == name:
                return f
        raise KeyError(name)


def walk(block: Block):
    """Every statement of `block` and of the regions nested in it, in order."""
    for stmt in block:
        yield stmt
        if isinstance(stmt, If):
            yield from walk(stmt.then_body)
            yield from walk(stmt.else_body)
        elif isinstance(stmt, For):
            yield from walk(stmt.body)
        elif isinstance(stmt, While):
            yield from walk(stmt.cond_body)
            yield from walk(stmt.body)
