"""LLVM lowering of scalar IR ops and primitive builtins (tables, one function per op)."""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir as ll

from kernelc import types as T
from kernelc.ir.nodes import OpCode
from kernelc.types_bf16 import QUIET_BIT, round_float32

I1 = ll.IntType(1)
I8 = ll.IntType(8)
I16 = ll.IntType(16)
I32 = ll.IntType(32)
I64 = ll.IntType(64)
PTR = ll.PointerType()


def llvm_type(t: T.Type, memory: bool = False) -> ll.Type:
    """The LLVM type of a value (`memory=True`: its in-memory form; bool is then one byte,
    bfloat16 its 16 bits)."""
    if isinstance(t, T.ScalarType):
        if t.is_bool:
            return I8 if memory else I1
        if t == T.bfloat16:  # computed in float (see `round_bf16`)
            return I16 if memory else ll.FloatType()
        if t.is_float:
            return {16: ll.HalfType(), 32: ll.FloatType(), 64: ll.DoubleType()}[t.bits]
        return ll.IntType(t.bits)
    if isinstance(t, T.ArrayType):
        shape = ll.ArrayType(I64, t.ndim)
        return ll.LiteralStructType([PTR, shape, shape])
    if isinstance(t, T.TupleType):
        return ll.LiteralStructType([llvm_type(e, memory) for e in t.elements])
    if isinstance(t, T.LocalArrayType):
        return ll.ArrayType(llvm_type(t.dtype, memory=True), t.length)
    if isinstance(t, (T.VectorType, T.MatrixType)):
        # Always the packed C layout (vec3 = 3 floats): registers and memory agree.
        return ll.ArrayType(llvm_type(t.dtype, memory=True), t.count)
    if isinstance(t, T.IndexedArrayType):  # a record of arrays and a mask, laid out as in C
        return ll.LiteralStructType([llvm_type(f, memory=True) for _, f in t.fields])
    if isinstance(t, T.StructType):
        if not t.fields:  # one padding byte, as in C++ (kernelc.types.StructType.size)
            return ll.LiteralStructType([ll.IntType(8)])
        return ll.LiteralStructType([llvm_type(f, memory=True) for _, f in t.fields])
    if isinstance(t, T.VoidType):
        return ll.VoidType()
    raise NotImplementedError(f"the CPU backend cannot represent {t!r} yet")


def like(x: ll.Value, t: ll.Type) -> ll.Type:
    """`t`, or a vector of `t` as wide as `x` when `x` is a vector (SIMD lanes)."""
    return ll.VectorType(t, x.type.count) if isinstance(x.type, ll.VectorType) else t


def mangled(t: ll.Type) -> str:
    """A type's suffix in an overloaded intrinsic's name (`f32`, `v16f32`, `i64`)."""
    if isinstance(t, ll.VectorType):
        return f"v{t.count}{mangled(t.element)}"
    if isinstance(t, ll.PointerType):
        return "p0"
    return {"half": "f16", "float": "f32", "double": "f64"}.get(str(t), str(t))


def declare(module: ll.Module, name: str, ret: ll.Type, params: list[ll.Type]) -> ll.Function:
    """The function `name` of `module`, declared with this signature on first use."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ll.Function(module, ll.FunctionType(ret, params), name)
    return fn


def const(t: T.Type, value) -> ll.Constant:
    if isinstance(t, T.ScalarType) and t.is_bool:
        return ll.Constant(I1, int(bool(value)))
    if t == T.bfloat16:
        return ll.Constant(ll.FloatType(), float(round_float32(value)))
    if isinstance(t, T.ScalarType) and t.is_int and value < 0:
        value &= (1 << t.bits) - 1  # llvmlite wants the bit pattern
    return ll.Constant(llvm_type(t), value)


def zero(t: T.Type) -> ll.Constant:
    return ll.Constant(llvm_type(t), None)


def to_memory(b: ll.IRBuilder, v: ll.Value, t: T.Type) -> ll.Value:
    if t == T.bfloat16:
        return bf16_bits(b, v)
    return b.zext(v, like(v, I8)) if t == T.bool_ else v


def from_memory(b: ll.IRBuilder, v: ll.Value, t: T.Type) -> ll.Value:
    if t == T.bfloat16:  # the upper half of a float32
        return b.bitcast(b.shl(b.zext(v, like(v, I32)), ll.Constant(like(v, I32), 16)),
                         like(v, ll.FloatType()))
    return b.icmp_unsigned("!=", v, ll.Constant(v.type, 0)) if t == T.bool_ else v


# ---- bfloat16: float registers holding bfloat16 values, 16 bits in memory -------------------
# Written with integer ops (the rule of kernelc.types_bf16): LLVM's own `bfloat` type needs
# runtime routines on CPUs without bfloat16 instructions, which the JIT does not resolve.


def bf16_bits(b: ll.IRBuilder, x: ll.Value) -> ll.Value:
    """The bfloat16 bits of the float (or float vector) `x`: round to nearest even, a NaN
    kept a NaN by setting its quiet bit."""
    i32 = like(x, I32)
    bits = b.bitcast(x, i32)
    lsb = b.and_(b.lshr(bits, ll.Constant(i32, 16)), ll.Constant(i32, 1))
    rounded = b.add(b.add(bits, ll.Constant(i32, 0x7FFF)), lsb)
    quiet = b.or_(bits, ll.Constant(i32, QUIET_BIT << 16))
    out = b.select(b.fcmp_unordered("uno", x, x), quiet, rounded)
    return b.trunc(b.lshr(out, ll.Constant(i32, 16)), like(x, I16))


def round_bf16(b: ll.IRBuilder, x: ll.Value) -> ll.Value:
    """The float `x` rounded to the nearest bfloat16 value (still a float)."""
    return from_memory(b, bf16_bits(b, x), T.bfloat16)


def fit(b: ll.IRBuilder, x: ll.Value, t: T.Type) -> ll.Value:
    """A float result computed for type `t`, rounded to `t` when that is bfloat16 (half and
    the wider types are exact in their LLVM types already)."""
    return round_bf16(b, x) if t == T.bfloat16 else x


# ---- integer arithmetic with defined results (never trap, never poison) --------------------


def _safe_divisor(b: ll.IRBuilder, x, y, t: T.ScalarType):
    """A divisor that cannot trap: 1 where y == 0, and where x == MIN and y == -1."""
    lt = y.type
    is_zero = b.icmp_unsigned("==", y, ll.Constant(lt, 0))
    bad = is_zero
    if t.kind == "int":
        is_min = b.icmp_unsigned("==", x, ll.Constant(lt, 1 << (t.bits - 1)))
        is_m1 = b.icmp_unsigned("==", y, ll.Constant(lt, (1 << t.bits) - 1))
        bad = b.or_(is_zero, b.and_(is_min, is_m1))
    return b.select(bad, ll.Constant(lt, 1), y), is_zero


def _int_div(b, x, y, t, in_double=False):
    if in_double:
        q, _, _, is_zero = _divmod_in_double(b, x, y, t)
    else:
        d, is_zero = _safe_divisor(b, x, y, t)
        q = b.sdiv(x, d) if t.kind == "int" else b.udiv(x, d)
    return b.select(is_zero, ll.Constant(q.type, 0), q)


def _int_mod(b, x, y, t, in_double=False):
    if in_double:
        _, r, _, is_zero = _divmod_in_double(b, x, y, t)
    else:
        d, is_zero = _safe_divisor(b, x, y, t)
        r = b.srem(x, d) if t.kind == "int" else b.urem(x, d)
    return b.select(is_zero, ll.Constant(r.type, 0), r)


def _int_floordiv(b, x, y, t, in_double=False):
    if t.kind == "uint":
        return _int_div(b, x, y, t, in_double)
    if in_double:
        q, r, d, is_zero = _divmod_in_double(b, x, y, t)
    else:
        d, is_zero = _safe_divisor(b, x, y, t)
        q = b.sdiv(x, d)
        r = b.srem(x, d)
    lt = q.type
    # Round toward -inf: step down when the remainder is non-zero and signs differ.
    adjust = b.and_(b.icmp_signed("!=", r, ll.Constant(lt, 0)),
                    b.icmp_signed("<", b.xor(r, d), ll.Constant(lt, 0)))
    q = b.sub(q, b.zext(adjust, lt))
    return b.select(is_zero, ll.Constant(lt, 0), q)


def _divides_in_double(y, t: T.ScalarType) -> bool:
    # A constant divisor becomes a multiply and shifts in LLVM: keep `sdiv` there.
    return t.bits <= 32 and not isinstance(y, ll.Constant)


_DIVISIONS = {OpCode.DIV: _int_div, OpCode.MOD: _int_mod, OpCode.FLOORDIV: _int_floordiv}


def _divmod_in_double(b, x, y, t: T.ScalarType):
    """Truncated quotient and remainder of ints of at most 32 bits, through one division
    in double precision; also the divisor used and whether `y` is zero.

    x86 has no SIMD integer division: a `sdiv` by a run-time value (`tid % width`) stays
    one scalar division per lane and LLVM leaves such loops scalar. `vdivpd` divides 8
    lanes at once; on a scalar dependency chain (a hash-grid walk) the conversions make it
    slower than `idiv`, hence only for loops LLVM may vectorise.

    Exact: the operands convert exactly, and for |x|, |y| <= 2**32 the rounded quotient
    never reaches the next integer (its distance 1/|y| exceeds half an ulp of the
    quotient), so truncating it gives C's quotient. MIN / -1 gives 2**31, which wraps to
    MIN in 32 bits with remainder 0, as the scalar path (divisor replaced by 1) does.
    """
    lt = y.type
    is_zero = b.icmp_unsigned("==", y, ll.Constant(lt, 0))
    d = b.select(is_zero, ll.Constant(lt, 1), y)
    to_double = b.sitofp if t.kind == "int" else b.uitofp
    f64 = like(y, ll.DoubleType())
    quotient = b.fdiv(to_double(x, f64), to_double(d, f64))
    q = b.trunc(b.fptosi(quotient, like(y, I64)), lt)  # |quotient| <= 2**32 fits in 64 bits
    r = b.sub(x, b.mul(q, d))
    return q, r, d, is_zero


def _shift(b, x, y, t, shift):
    # C (and Warp) promotes 8- and 16-bit operands to 32 bits: shift there, then truncate.
    if t.bits >= 32:
        return shift(x, b.and_(y, ll.Constant(y.type, t.bits - 1)))
    widen = b.sext if t.kind == "int" else b.zext
    n = b.zext(b.and_(y, ll.Constant(y.type, 31)), like(y, I32))
    return b.trunc(shift(widen(x, like(x, I32)), n), x.type)


def _shl(b, x, y, t):
    return _shift(b, x, y, t, b.shl)


def _shr(b, x, y, t):
    return _shift(b, x, y, t, b.ashr if t.kind == "int" else b.lshr)


_INT_BINARY: dict[OpCode, Callable] = {
    OpCode.ADD: lambda b, x, y, t: b.add(x, y),
    OpCode.SUB: lambda b, x, y, t: b.sub(x, y),
    OpCode.MUL: lambda b, x, y, t: b.mul(x, y),
    OpCode.BITAND: lambda b, x, y, t: b.and_(x, y),
    OpCode.BITOR: lambda b, x, y, t: b.or_(x, y),
    OpCode.BITXOR: lambda b, x, y, t: b.xor(x, y),
    OpCode.SHL: _shl,
    OpCode.SHR: _shr,
}


def _float_floordiv(b, x, y, t):
    return intrinsic(b, "llvm.floor", [b.fdiv(x, y)])


_FLOAT_BINARY: dict[OpCode, Callable] = {
    OpCode.ADD: lambda b, x, y, t: b.fadd(x, y),
    OpCode.SUB: lambda b, x, y, t: b.fsub(x, y),
    OpCode.MUL: lambda b, x, y, t: b.fmul(x, y),
    OpCode.DIV: lambda b, x, y, t: b.fdiv(x, y),
    OpCode.FLOORDIV: _float_floordiv,
    OpCode.MOD: lambda b, x, y, t: b.frem(x, y),
    OpCode.POW: lambda b, x, y, t: intrinsic(b, "llvm.pow", [x, y]),
}


def binary(b: ll.IRBuilder, op: OpCode, x, y, t: T.ScalarType, vector_division: bool = False):
    """`x op y` of scalar type `t`. `vector_division`: divide ints of up to 32 bits by a
    non-constant divisor in double precision, for a loop LLVM may vectorise (see
    `_divmod_in_double`); in a scalar loop `idiv` is quicker."""
    if t == T.bfloat16:  # computed in float, rounded after each op (the quotient too, as
        # Warp's floordiv floors its bfloat16 quotient)
        if op == OpCode.FLOORDIV:
            return intrinsic(b, "llvm.floor", [round_bf16(b, b.fdiv(x, y))])
        return round_bf16(b, _FLOAT_BINARY[op](b, x, y, t))
    if t.is_float:
        return _FLOAT_BINARY[op](b, x, y, t)
    if op in _DIVISIONS:
        return _DIVISIONS[op](b, x, y, t, vector_division and _divides_in_double(y, t))
    return _INT_BINARY[op](b, x, y, t)


_ICMP = {OpCode.EQ: "==", OpCode.NE: "!=", OpCode.LT: "<", OpCode.LE: "<=", OpCode.GT: ">",
         OpCode.GE: ">="}


def compare(b: ll.IRBuilder, op: OpCode, x, y, t: T.ScalarType):
    if t.is_float:
        # NE is unordered (true for NaN) as C's !=; the others are ordered.
        return (b.fcmp_unordered if op == OpCode.NE else b.fcmp_ordered)(_ICMP[op], x, y)
    if t.kind == "int":
        return b.icmp_signed(_ICMP[op], x, y)
    return b.icmp_unsigned(_ICMP[op], x, y)


def unary(b: ll.IRBuilder, op: OpCode, x, t: T.ScalarType):
    if op == OpCode.NEG:
        return b.fneg(x) if t.is_float else b.neg(x)
    if op == OpCode.NOT:
        return b.xor(x, ll.Constant(x.type, 1))
    return b.xor(x, ll.Constant(x.type, -1))  # INVERT


def cast(b: ll.IRBuilder, x, src: T.ScalarType, dst: T.ScalarType):
    if src == dst:
        return x
    if src == T.bfloat16:  # a float holding the value
        return cast(b, x, T.float32, dst)
    if dst == T.bfloat16:  # through float32, as Warp converts (a double is rounded twice)
        return round_bf16(b, cast(b, x, src, T.float32))
    target = like(x, llvm_type(dst))
    if dst.is_bool:
        if src.is_float:
            return b.fcmp_unordered("!=", x, ll.Constant(x.type, 0.0))
        return b.icmp_unsigned("!=", x, ll.Constant(x.type, 0))
    if dst == T.float16 and src.bits > 16:
        # Through float32, as the CUDA backend converts: x86 has no instruction from double
        # or 64-bit ints to half, and MCJIT does not resolve the runtime routine it would call.
        x, src = cast(b, x, src, T.float32), T.float32
    if src.is_bool:
        return b.uitofp(x, target) if dst.is_float else b.zext(x, target)
    if src.is_float and dst.is_float:
        return b.fptrunc(x, target) if dst.bits < src.bits else b.fpext(x, target)
    if src.is_float:  # saturating, NaN -> 0: defined for every input
        if src.bits < 32:  # a half is exact in float32, where the bounds are too
            x = b.fpext(x, like(x, ll.FloatType()))
        return _float_to_int(b, x, dst, target)
    if dst.is_float:
        return b.sitofp(x, target) if src.kind == "int" else b.uitofp(x, target)
    if dst.bits < src.bits:
        return b.trunc(x, target)
    if dst.bits > src.bits:
        return b.sext(x, target) if src.kind == "int" else b.zext(x, target)
    return x  # same width, other signedness: same bits


def _float_to_int(b: ll.IRBuilder, x: ll.Value, dst: T.ScalarType, target: ll.Type):
    """`llvm.fpto[su]i.sat` (saturating, NaN -> 0) spelt as a plain conversion and three
    selects, which LLVM's loop vectoriser takes where it leaves the intrinsic scalar. The
    bounds are powers of two, exact in float32 and float64; out of range, the plain
    conversion's (poison) result is never selected."""
    signed = dst.kind == "int"
    top = 2 ** (dst.bits - 1) if signed else 2 ** dst.bits
    low, low_f = (-top, float(-top)) if signed else (0, -1.0)
    raw = b.fptosi(x, target) if signed else b.fptoui(x, target)
    out = b.select(b.fcmp_ordered(">=", x, ll.Constant(x.type, float(top))),
                   ll.Constant(target, top - 1), raw)
    below = b.fcmp_ordered("<" if signed else "<=", x, ll.Constant(x.type, low_f))
    out = b.select(below, ll.Constant(target, low), out)
    return b.select(b.fcmp_unordered("uno", x, x), ll.Constant(target, 0), out)


def intrinsic(b: ll.IRBuilder, name: str, args: list[ll.Value]):
    t = args[0].type  # (llvmlite's declare_intrinsic does not mangle vector types)
    return b.call(declare(b.module, f"{name}.{mangled(t)}", t, [t] * len(args)), args)


def libm(b: ll.IRBuilder, name: str, args: list[ll.Value]):
    """A C math library function: `sinf` for float32, `sin` for float64."""
    t = args[0].type
    if isinstance(t, ll.HalfType):
        wide = [b.fpext(a, ll.FloatType()) for a in args]
        return b.fptrunc(libm(b, name, wide), t)
    symbol = name + ("f" if isinstance(t, ll.FloatType) else "")
    fn = b.module.globals.get(symbol)
    if fn is None:
        fn = ll.Function(b.module, ll.FunctionType(t, [t] * len(args)), symbol)
    return b.call(fn, args)


def _frac(b, x):
    return b.fsub(x, intrinsic(b, "llvm.trunc", [x]))


_INTRINSIC_BUILTINS = {
    "sqrt": "llvm.sqrt", "exp": "llvm.exp", "log": "llvm.log", "log2": "llvm.log2",
    "log10": "llvm.log10", "sin": "llvm.sin", "cos": "llvm.cos", "floor": "llvm.floor",
    "ceil": "llvm.ceil", "round": "llvm.round", "rint": "llvm.rint", "trunc": "llvm.trunc",
    "fabs": "llvm.fabs",
}
LIBM_BUILTINS = ("cbrt", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "atan2", "erf",
                  "erfc")


def _copysign(b, x, y):
    return intrinsic(b, "llvm.copysign", [x, y])


def _fma(b, x, y, z):
    return intrinsic(b, "llvm.fma", [x, y, z])


def _popcount(b, x):
    # The builtin hands over an unsigned 64-bit value (narrower ints zero-extended).
    return b.trunc(intrinsic(b, "llvm.ctpop", [x]), like(x, I32))


def _builtin_table() -> dict[str, Callable]:
    table: dict[str, Callable] = {}
    for key, name in _INTRINSIC_BUILTINS.items():
        table[key] = lambda b, args, _n=name: intrinsic(b, _n, args)
    for key in LIBM_BUILTINS:
        table[key] = lambda b, args, _n=key: libm(b, _n, args)
    table["frac"] = lambda b, args: _frac(b, args[0])
    table["copysign"] = lambda b, args: _copysign(b, *args)
    table["popcount"] = lambda b, args: _popcount(b, args[0])
    table["fma"] = lambda b, args: _fma(b, *args)
    return table


BUILTIN_LOWERING: dict[str, Callable] = _builtin_table()


def bitcast(e, x: ll.Value, src: T.Type, dst: T.Type) -> ll.Value:
    """The bits of `x` (of type `src`) as a value of type `dst`, the same size (`kc.cast`).

    Scalars are bit-cast in registers; aggregates go through a stack slot of the function's
    entry block (so a cast in a loop does not grow the stack).
    """
    b = e.b
    mem = to_memory(b, x, src)
    target = llvm_type(dst, memory=True)
    if isinstance(src, T.ScalarType) and isinstance(dst, T.ScalarType):
        return from_memory(b, b.bitcast(mem, target), dst)
    with b.goto_block(e.entry_block):
        b.position_at_start(e.entry_block)
        slot = b.alloca(mem.type)
    b.store(mem, slot)
    return from_memory(b, b.load(slot, typ=target), dst)


# Lowerings that need the IR types and the function emitter: f(e, args, arg_types, result).
TYPED_LOWERING: dict[str, Callable] = {
    "bitcast": lambda e, args, types, result: bitcast(e, args[0], types[0], result),
}
