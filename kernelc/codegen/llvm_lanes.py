"""Values with one lane per thread: LLVM vector types for the SIMD lowering (llvm_simd.py).

A varying value of a scalar type is an LLVM vector (`<16 x float>`); a varying aggregate
keeps its shape with vectors at the leaves (a vec3 is `[3 x <16 x float>]`, an array
`{<16 x ptr>, [n x <16 x i64>], ...}`), so `extractvalue`/`insertvalue` work unchanged and
each leaf is one SIMD register. These helpers widen types, broadcast uniform values, move
single lanes in and out, and load and store through vectors of addresses.
"""

from __future__ import annotations

from llvmlite import ir as ll

from kernelc.codegen.llvm_ops import I1, I32, I64, PTR, declare, mangled

_LEAVES = (ll.IntType, ll.FloatType, ll.DoubleType, ll.HalfType, ll.PointerType)


def wide(t: ll.Type, width: int) -> ll.Type:
    """The lane-wise form of `t`: vectors at the leaves."""
    if isinstance(t, _LEAVES):
        return ll.VectorType(t, width)
    if isinstance(t, ll.ArrayType):
        return ll.ArrayType(wide(t.element, width), t.count)
    if isinstance(t, ll.LiteralStructType):
        return ll.LiteralStructType([wide(e, width) for e in t.elements])
    raise NotImplementedError(f"no lane-wise form of {t}")


def _parts(t: ll.Type) -> list[tuple[int, ll.Type]]:
    if isinstance(t, ll.ArrayType):
        return [(k, t.element) for k in range(t.count)]
    return list(enumerate(t.elements))


def splat(b: ll.IRBuilder, x: ll.Value, width: int) -> ll.Value:
    """`x` (a uniform value) in every lane."""
    t = x.type
    constant = _splat_constant(x, width)
    if constant is not None:
        return constant
    if isinstance(t, _LEAVES):
        vt = ll.VectorType(t, width)
        undef = ll.Constant(vt, ll.Undefined)
        one = b.insert_element(undef, x, I32(0))
        return b.shuffle_vector(one, undef, ll.Constant(ll.VectorType(I32, width), None))
    out = ll.Constant(wide(t, width), ll.Undefined)
    for k, _ in _parts(t):
        out = b.insert_value(out, splat(b, b.extract_value(x, k), width), k)
    return out


def _splat_constant(x: ll.Value, width: int) -> ll.Constant | None:
    """`splat` of a constant, as a constant (None where `x` is not one)."""
    if type(x) is not ll.Constant:
        return None
    t, c = x.type, x.constant
    if c is None:  # zeroinitializer
        return ll.Constant(wide(t, width), None)
    if isinstance(t, ll.PointerType):
        return None
    if isinstance(t, _LEAVES):
        return ll.Constant(ll.VectorType(t, width), c)
    if not isinstance(c, list):
        return None
    parts = [_splat_constant(e, width) for e in c]
    return None if any(p is None for p in parts) else ll.Constant(wide(t, width), parts)


def lane(b: ll.IRBuilder, x: ll.Value, k: ll.Value) -> ll.Value:
    """Lane `k` (an i32, possibly not constant) of the lane-wise value `x`."""
    if isinstance(x.type, ll.VectorType):
        return b.extract_element(x, k)
    out = ll.Constant(narrow(x.type), ll.Undefined)
    for i, _ in _parts(x.type):
        out = b.insert_value(out, lane(b, b.extract_value(x, i), k), i)
    return out


def with_lane(b: ll.IRBuilder, x: ll.Value, value: ll.Value, k: ll.Value) -> ll.Value:
    """`x` with lane `k` replaced by the scalar-form `value`."""
    if isinstance(x.type, ll.VectorType):
        return b.insert_element(x, value, k)
    for i, _ in _parts(x.type):
        x = b.insert_value(x, with_lane(b, b.extract_value(x, i), b.extract_value(value, i), k), i)
    return x


def narrow(t: ll.Type) -> ll.Type:
    """The scalar form of the lane-wise type `t`."""
    if isinstance(t, ll.VectorType):
        return t.element
    if isinstance(t, ll.ArrayType):
        return ll.ArrayType(narrow(t.element), t.count)
    return ll.LiteralStructType([narrow(e) for e in t.elements])


def select(b: ll.IRBuilder, mask: ll.Value, x: ll.Value, y: ll.Value) -> ll.Value:
    """Lane-wise `mask ? x : y` of two lane-wise values of one type."""
    if isinstance(x.type, ll.VectorType):
        return b.select(mask, x, y)
    out = x
    for k, _ in _parts(x.type):
        out = b.insert_value(out, select(b, mask, b.extract_value(x, k), b.extract_value(y, k)), k)
    return out


def divmod_by(b: ll.IRBuilder, x: ll.Value, d: ll.Value) -> tuple[ll.Value, ll.Value]:
    """(x // d, x % d) lane-wise for `x` a vector of non-negative i32 and `d` a positive
    uniform i32. x86 has no SIMD integer division (LLVM would divide lane by lane): the
    quotient comes from a double multiply by 1/d, off by at most one, then corrected."""
    vt = x.type
    dvec = splat(b, d, vt.count)
    f64 = ll.VectorType(ll.DoubleType(), vt.count)
    inverse = b.fdiv(ll.Constant(ll.DoubleType(), 1.0), b.sitofp(d, ll.DoubleType()))
    q = b.fptosi(b.fmul(b.sitofp(x, f64), splat(b, inverse, vt.count)), vt)
    r = b.sub(x, b.mul(q, dvec))
    one = ll.Constant(vt, 1)
    low = b.icmp_signed("<", r, ll.Constant(vt, 0))
    q, r = b.select(low, b.sub(q, one), q), b.select(low, b.add(r, dvec), r)
    high = b.icmp_signed(">=", r, dvec)
    return b.select(high, b.add(q, one), q), b.select(high, b.sub(r, dvec), r)


def any_lane(b: ll.IRBuilder, mask: ll.Value) -> ll.Value:
    bits = b.bitcast(mask, ll.IntType(mask.type.count))
    return b.icmp_unsigned("!=", bits, ll.Constant(bits.type, 0))


def iota(width: int, t: ll.IntType = I32) -> ll.Constant:
    return ll.Constant(ll.VectorType(t, width), list(range(width)))


def all_true(width: int) -> ll.Constant:
    return ll.Constant(ll.VectorType(I1, width), [1] * width)


def addresses(b: ll.IRBuilder, base: ll.Value, offset: ll.Value, width: int) -> ll.Value:
    """`base` (a pointer, or a vector of them) plus the byte offsets `offset` (a vector of
    i64), as a vector of pointers."""
    if not isinstance(base.type, ll.VectorType):
        base = splat(b, base, width)
    at = b.add(b.ptrtoint(base, ll.VectorType(I64, width)), offset)
    return b.inttoptr(at, ll.VectorType(PTR, width))


def gather(b: ll.IRBuilder, ptrs: ll.Value, mask: ll.Value, element: ll.Type) -> ll.Value:
    """The `element` at each active lane's pointer (zero in the other lanes)."""
    vt = ll.VectorType(element, ptrs.type.count)
    name = f"llvm.masked.gather.{mangled(vt)}.{mangled(ptrs.type)}"
    fn = declare(b.module, name, vt, [ptrs.type, I32, mask.type, vt])
    return b.call(fn, [ptrs, I32(_align(element)), mask, ll.Constant(vt, None)])


def scatter(b: ll.IRBuilder, values: ll.Value, ptrs: ll.Value, mask: ll.Value) -> None:
    """Stores each active lane's value at its pointer (lanes in order: the last one wins)."""
    name = f"llvm.masked.scatter.{mangled(values.type)}.{mangled(ptrs.type)}"
    fn = declare(b.module, name, ll.VoidType(), [values.type, ptrs.type, I32, mask.type])
    b.call(fn, [values, ptrs, I32(_align(values.type.element)), mask])


def load_lanes(b: ll.IRBuilder, ptr: ll.Value, mask: ll.Value, element: ll.Type) -> ll.Value:
    """Consecutive elements from `ptr`, one per active lane."""
    vt = ll.VectorType(element, mask.type.count)
    name = f"llvm.masked.load.{mangled(vt)}.p0"
    fn = declare(b.module, name, vt, [PTR, I32, mask.type, vt])
    return b.call(fn, [ptr, I32(_align(element)), mask, ll.Constant(vt, None)])


def store_lanes(b: ll.IRBuilder, values: ll.Value, ptr: ll.Value, mask: ll.Value) -> None:
    name = f"llvm.masked.store.{mangled(values.type)}.p0"
    fn = declare(b.module, name, ll.VoidType(), [values.type, PTR, I32, mask.type])
    b.call(fn, [values, ptr, I32(_align(values.type.element)), mask])


def _align(t: ll.Type) -> int:
    if isinstance(t, ll.IntType):
        return max(1, t.width // 8)
    return {"half": 2, "float": 4, "double": 8}.get(str(t), 8)
