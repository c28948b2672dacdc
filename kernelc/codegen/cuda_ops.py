"""CUDA-C for IR types and for each op code: one small function per op, in a table.

Every function takes the function emitter (for value names, constants and debug checks)
and the `ir.Op`, and returns the C expression of the op's result. The integer helpers
(`kc_sdiv`, `kc_f2i`, ...) are defined in the prelude (`cuda_prelude.py`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from kernelc import types as T
from kernelc.codegen.cuda_builtins import lower_math
from kernelc.codegen.cuda_types import (
    STORAGE_C,
    VALUE_C,
    UnsupportedError,
    array_type,
    element_type,
    member,
    storage_type,
)
from kernelc.ir import nodes as ir
from kernelc.ir.analysis import atomic_parts, atomic_target
from kernelc.ir.nodes import OpCode
from kernelc.types_bf16 import round_float32

if TYPE_CHECKING:
    from kernelc.codegen.cuda import FunctionEmitter

_VALUE_C = VALUE_C

# The 16-bit float types: values in float registers, bits in memory (see the prelude).
_TO_FLOAT = {"float16": "kc_half_to_float", "bfloat16": "kc_bf16_to_float"}
_FROM_FLOAT = {"float16": "kc_float_to_half", "bfloat16": "kc_float_to_bf16"}
_ROUND = {"float16": "kc_round_half", "bfloat16": "kc_round_bf16"}
# The suffix of the prelude's atomics on their elements.
ATOMIC_SUFFIX = {"float16": "_f16", "bfloat16": "_bf16"}


def rounded(expr: str, t: T.ScalarType) -> str:
    """`expr`, computed in float for type `t`, rounded to `t` where that is a 16-bit float."""
    fn = _ROUND.get(t.name)
    return f"{fn}({expr})" if fn else expr


def from_storage(expr: str, t: T.Type) -> str:
    """A value of type `t` read from memory holding `expr`."""
    if t == T.bool_:
        return f"({expr} != 0)"
    if isinstance(t, T.ScalarType) and t.name in _TO_FLOAT:
        return f"{_TO_FLOAT[t.name]}({expr})"
    return expr


def to_storage(expr: str, t: T.Type) -> str:
    """The memory representation of the value `expr` of type `t`."""
    if t == T.bool_:
        return f"(kc_uint8){expr}"
    if isinstance(t, T.ScalarType) and t.name in _FROM_FLOAT:
        return f"{_FROM_FLOAT[t.name]}({expr})"
    return expr


def _wide_unsigned(t: T.ScalarType) -> str:
    """The unsigned type integer arithmetic on `t` is done in (no signed overflow, no
    promotion of narrow types to signed int)."""
    return "kc_uint64" if t.bits == 64 else "kc_uint32"


# ---- constants ---------------------------------------------------------------------------


def literal(value: object, t: T.Type) -> str:
    """A C literal of `value` with exactly the value of type `t`."""
    if not isinstance(t, T.ScalarType):
        raise UnsupportedError(f"constants of type {t!r}")
    if t.is_bool:
        return "true" if value else "false"
    if t.is_float:
        return _float_literal(float(value), t)
    v = int(value)
    if t.kind == "uint":
        return f"{v}u" if t.bits <= 32 else f"{v}ull"
    if t.bits == 64:
        return "(-9223372036854775807LL - 1)" if v == -(2**63) else f"{v}LL"
    return "(-2147483647 - 1)" if v == -(2**31) else str(v)


def _float_literal(v: float, t: T.ScalarType) -> str:
    if not math.isfinite(v):
        # Exact bit patterns: inf, -inf and NaN (sign and payload kept) as the hardware has them.
        if t.bits == 64:
            bits = struct.unpack("<q", struct.pack("<d", v))[0]
            return f"__longlong_as_double({bits}LL)"
        bits = struct.unpack("<i", struct.pack("<f", v))[0]
        return f"__int_as_float({bits})"
    if t.bits == 64:
        return repr(v)
    if t == T.bfloat16:
        return repr(float(round_float32(v))) + "f"  # the bfloat16 value, written exactly
    if t.bits == 16:
        return repr(float(np.float16(v))) + "f"  # the half value, written exactly
    return str(np.float32(v)) + "f"  # shortest text that reads back as this float32


# ---- op emitters -------------------------------------------------------------------------

OpEmitter = Callable[["FunctionEmitter", ir.Op], str]


def _scalar(v: ir.Value) -> T.ScalarType:
    if not isinstance(v.type, T.ScalarType):
        raise UnsupportedError(f"an operand of type {v.type!r}")
    return v.type


def _const(em: FunctionEmitter, op: ir.Op) -> str:
    em.consts[op.result.id] = op.attr
    return literal(op.attr, op.result.type)


def cast_expr(x: str, src: T.ScalarType, dst: T.ScalarType) -> str:
    """C conversion of `x` from `src` to `dst` with the IR's CAST semantics."""
    if src == dst:
        return x
    if dst.is_bool:
        return f"({x} != 0)"
    if dst.is_float:
        if dst.name in _ROUND and not src.is_bool:
            # Through float: exact for every int that does not overflow half anyway; a
            # float64 is rounded twice (a tie can differ from one correct rounding), as
            # Warp's conversions to half and bfloat16 do.
            return rounded(f"(float){x}", dst)
        return f"({_VALUE_C[dst.name]}){x}"
    if src.is_float:
        return f"kc_f2i<{_VALUE_C[dst.name]}>({x})"
    return f"({_VALUE_C[dst.name]}){x}"


def _cast(em: FunctionEmitter, op: ir.Op) -> str:
    (x,) = op.args
    return cast_expr(em.name(x), _scalar(x), _scalar(op.result))


def _neg(em: FunctionEmitter, op: ir.Op) -> str:
    (x,) = op.args
    t = _scalar(x)
    if t.is_float:
        return f"(-{em.name(x)})"
    return f"({_VALUE_C[t.name]})(0 - ({_wide_unsigned(t)}){em.name(x)})"


def _not(em: FunctionEmitter, op: ir.Op) -> str:
    return f"(!{em.name(op.args[0])})"


def _invert(em: FunctionEmitter, op: ir.Op) -> str:
    (x,) = op.args
    return f"({_VALUE_C[_scalar(x).name]})(~{em.name(x)})"


_C_BINARY = {
    OpCode.ADD: "+", OpCode.SUB: "-", OpCode.MUL: "*", OpCode.DIV: "/",
    OpCode.BITAND: "&", OpCode.BITOR: "|", OpCode.BITXOR: "^",
}
_INT_HELPERS = {  # (signed, unsigned) helper per op, see the prelude
    OpCode.DIV: ("kc_sdiv", "kc_udiv"),
    OpCode.MOD: ("kc_smod", "kc_umod"),
    OpCode.FLOORDIV: ("kc_sfloordiv", "kc_udiv"),
}


def _binary(em: FunctionEmitter, op: ir.Op) -> str:
    a_val, b_val = op.args
    t = _scalar(a_val)
    a, b = em.name(a_val), em.name(b_val)
    if t.is_float:
        return _float_binary(op.opcode, a, b, t)
    ct = _VALUE_C[t.name]
    code = op.opcode
    if code in _INT_HELPERS:
        signed, unsigned = _INT_HELPERS[code]
        return f"{signed if t.kind == 'int' else unsigned}({a}, {b})"
    if code in (OpCode.ADD, OpCode.SUB, OpCode.MUL):
        if t.kind == "uint" and t.bits >= 32:
            return f"({a} {_C_BINARY[code]} {b})"
        u = _wide_unsigned(t)
        return f"({ct})(({u}){a} {_C_BINARY[code]} ({u}){b})"
    if code in (OpCode.BITAND, OpCode.BITOR, OpCode.BITXOR):
        return f"({ct})({a} {_C_BINARY[code]} {b})"
    # Shift counts wrap at the width the operand is promoted to (C: 8/16-bit -> 32).
    mask = max(t.bits, 32) - 1
    if code == OpCode.SHL:
        return f"({ct})(({_wide_unsigned(t)}){a} << ({b} & {mask}))"
    if code == OpCode.SHR:  # arithmetic for signed types (C++20, and every CUDA compiler)
        return f"({ct})({a} >> ({b} & {mask}))"
    raise UnsupportedError(f"'{code.value}' on {t!r}")


def _float_binary(code: OpCode, a: str, b: str, t: T.ScalarType) -> str:
    suffix = "" if t.bits == 64 else "f"
    if code == OpCode.FLOORDIV:
        return f"floor{suffix}({rounded(f'({a} / {b})', t)})"
    if code == OpCode.MOD:
        return f"fmod{suffix}({a}, {b})"  # exact, so no half rounding needed
    if code == OpCode.POW:
        expr = f"pow{suffix}({a}, {b})"
    elif code in (OpCode.ADD, OpCode.SUB, OpCode.MUL, OpCode.DIV):
        expr = f"({a} {_C_BINARY[code]} {b})"
    else:
        raise UnsupportedError(f"'{code.value}' on {t!r}")
    return rounded(expr, t)


_C_COMPARE = {
    OpCode.EQ: "==", OpCode.NE: "!=", OpCode.LT: "<", OpCode.LE: "<=", OpCode.GT: ">",
    OpCode.GE: ">=",
}


def _compare(em: FunctionEmitter, op: ir.Op) -> str:
    a, b = op.args
    return f"({em.name(a)} {_C_COMPARE[op.opcode]} {em.name(b)})"


def _select(em: FunctionEmitter, op: ir.Op) -> str:
    c, a, b = (em.name(v) for v in op.args)
    return f"({c} ? {a} : {b})"


def _load_slot(em: FunctionEmitter, op: ir.Op) -> str:
    return em.slot_name(op.attr)


def _tid(em: FunctionEmitter, op: ir.Op) -> str:
    axis, ndim = op.attr
    if ndim == 0:
        return "kc_tid_leading(kc_t)"
    return f"kc_tid_axis(kc_t, {axis})"


def array_access(em: FunctionEmitter, op: ir.Op, indices: tuple[ir.Value, ...]) -> str:
    """`kc_addr(a, i, ...)`, preceded in debug mode by a bounds check of the indices."""
    array = op.args[0]
    names = ", ".join(em.name(i) for i in indices)
    em.check_array_index(em.name(array), names, op.loc)
    return f"kc_addr({em.name(array)}, {names})"


def _array_load(em: FunctionEmitter, op: ir.Op) -> str:
    address = array_access(em, op, op.args[1:])
    return from_storage(f"*{address}", op.result.type)


def _array_shape(em: FunctionEmitter, op: ir.Op) -> str:
    return f"(kc_int32){em.name(op.args[0])}.shape[{op.attr}]"


def _array_view(em: FunctionEmitter, op: ir.Op) -> str:
    """A view (see `OpCode.ARRAY_VIEW`) as an aggregate of the moved data pointer and the
    kept axes' counts and scaled strides."""
    source = em.name(op.args[0])
    operands = [f"(kc_int64){em.name(v)}" for v in op.args[1:]]
    offset, shapes, strides, k = [], [], [], 0
    for axis, kind in enumerate(op.attr):
        offset.append(f"{operands[k]} * {source}.strides[{axis}]")
        if kind == "s":
            shapes.append(operands[k + 2])
            strides.append(f"{source}.strides[{axis}] * {operands[k + 1]}")
        k += 1 if kind == "i" else 3
    data = f"(decltype({source}.data))((char*){source}.data + {' + '.join(offset)})"
    return (f"{array_type(op.result.type)}{{{data}, {{{', '.join(shapes)}}}, "
            f"{{{', '.join(strides)}}}}}")


def atomic_address(em: FunctionEmitter, op: ir.Op) -> str:
    """The address an ATOMIC op updates: the element, or one field of it (see
    `atomic_target`)."""
    array, indices, _ = atomic_parts(op)
    address = array_access(em, op, indices)
    _, path, _ = atomic_target(op)
    if not path:
        return address
    t, fields = array.type.dtype, ""
    for k in path:
        fields += member(t, k)
        t = t.fields[k][1]
    return f"&((*{address}){fields})"


def _atomic(em: FunctionEmitter, op: ir.Op) -> str:
    _, _, operands = atomic_parts(op)
    kind, _, dtype = atomic_target(op)
    if dtype == T.bool_ or not isinstance(dtype, T.ScalarType):
        raise UnsupportedError(f"atomic_{kind} on an array of {dtype!r}")
    address = atomic_address(em, op)
    pointer = f"kc_p{op.result.id}"
    em.line(f"auto* const {pointer} = {address};")
    suffix = ATOMIC_SUFFIX.get(dtype.name, "")
    return atomic_call(kind + suffix, pointer, "".join(f", {em.name(v)}" for v in operands))


def atomic_call(name: str, pointer: str, values: str) -> str:
    """The atomic `kc_atomic_<name>` on `pointer`, or its plain form where the pointer is
    into a local array (GPUs have no atomics on local memory)."""
    return (f"(kc_is_local({pointer}) ? kc_local_{name}({pointer}{values}) : "
            f"kc_atomic_{name}({pointer}{values}))")


def _load_address(em: FunctionEmitter, op: ir.Op) -> str:
    address, index = (em.name(a) for a in op.args)
    stored = STORAGE_C[op.result.type.name]
    return from_storage(f"((const {stored}*)({address}))[{index}]", op.result.type)


def _local_load(em: FunctionEmitter, op: ir.Op) -> str:
    slot: ir.Slot = op.attr
    index = em.name(op.args[0])
    length, dtype = slot.type.length, slot.type.dtype
    element = from_storage(f"{em.slot_name(slot)}[{index}]", dtype)
    if em.check_local_index(index, length, op.loc):
        return element
    # A local array of structs (a struct tile) reads a zeroed struct out of range.
    zero = literal(0, dtype) if isinstance(dtype, T.ScalarType) else f"{storage_type(dtype)}{{}}"
    return f"((kc_uint64)(kc_int64){index} < {length}u ? {element} : {zero})"


def _local_array(em: FunctionEmitter, op: ir.Op) -> str:
    """A contiguous array over a local array's storage (declared in its storage type)."""
    slot, shape = op.attr
    t = op.result.type
    dims = ", ".join(f"{n}" for n in shape)
    steps = ", ".join(f"{n}" for n in T.contiguous_strides(shape, t.dtype.size))
    return f"{array_type(t)}{{{em.slot_name(slot)}, {{{dims}}}, {{{steps}}}}}"


def _array_address(em: FunctionEmitter, op: ir.Op) -> str:
    return f"(kc_uint64){em.name(op.args[0])}.data"


def _array_at(em: FunctionEmitter, op: ir.Op) -> str:
    """A contiguous array at an address: row-major byte strides from the dims."""
    t = op.result.type
    dims = [f"(kc_int64){em.name(d)}" for d in op.args[2 if op.attr == "grad" else 1:]]
    strides, step = [], f"(kc_int64){t.dtype.size}"
    for d in reversed(dims):
        strides.insert(0, step)
        step = f"{step} * {d}"
    data = f"({storage_type(t.dtype)}*){em.name(op.args[0])}"
    return f"{array_type(t)}{{{data}, {{{', '.join(dims)}}}, {{{', '.join(strides)}}}}}"


def _call(em: FunctionEmitter, op: ir.Op) -> str:
    try:
        return lower_math(op.attr, [em.name(a) for a in op.args], op.result.type,
                          [a.type for a in op.args])
    except (KeyError, TypeError):
        raise UnsupportedError(f"builtin '{op.attr}' on {op.result.type!r}") from None


def _call_func(em: FunctionEmitter, op: ir.Op) -> str:
    args = "".join(f", {em.name(a)}" for a in op.args)
    return f"{func_symbol(op.attr)}(kc_t{args})"


def _extract(em: FunctionEmitter, op: ir.Op) -> str:
    agg = op.args[0]
    expr = f"{em.name(agg)}{member(agg.type, op.attr)}"
    if isinstance(agg.type, T.TupleType):  # a func's results: already values
        return expr
    return from_storage(expr, element_type(agg.type, op.attr))


def func_symbol(name: str) -> str:
    """The C name of the func `name` (prefixed so it never meets a C library name)."""
    return f"kc_f_{name}"


def return_struct(name: str) -> str:
    """The C struct a func returning several values returns."""
    return f"kc_ret_{name}"


OP_EMITTERS: dict[OpCode, OpEmitter] = {
    OpCode.CONST: _const,
    OpCode.CAST: _cast,
    OpCode.NEG: _neg,
    OpCode.NOT: _not,
    OpCode.INVERT: _invert,
    **{code: _binary for code in ir.BINARY_OPS},
    **{code: _compare for code in ir.COMPARE_OPS},
    OpCode.SELECT: _select,
    OpCode.LOAD_SLOT: _load_slot,
    OpCode.TID: _tid,
    OpCode.ARRAY_LOAD: _array_load,
    OpCode.ARRAY_SHAPE: _array_shape,
    OpCode.ARRAY_VIEW: _array_view,
    OpCode.ATOMIC: _atomic,
    OpCode.LOCAL_LOAD: _local_load,
    OpCode.LOCAL_ARRAY: _local_array,
    OpCode.ARRAY_ADDRESS: _array_address,
    OpCode.ARRAY_AT: _array_at,
    OpCode.LOAD_ADDRESS: _load_address,
    OpCode.CALL: _call,
    OpCode.CALL_FUNC: _call_func,
    OpCode.EXTRACT: _extract,
}


# ---- printf ------------------------------------------------------------------------------


def printf_arg(expr: str, t: T.Type) -> str:
    """`expr` promoted as C varargs promote it, with 64-bit ints as (unsigned) long long."""
    if not isinstance(t, T.ScalarType):
        raise UnsupportedError(f"printing a {t!r}")
    if t.is_float:
        return f"(double){expr}"
    if t.bits < 32 or t.is_bool:
        return f"(int){expr}"
    if t.bits == 64:
        return f"(unsigned long long){expr}" if t.kind == "uint" else f"(long long){expr}"
    return expr


def c_string(text: str) -> str:
    """`text` as a C string literal (UTF-8, non-printable bytes as octal escapes)."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif 32 <= byte < 127 and ch != "?":  # '?' escaped so no trigraph can form
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'
