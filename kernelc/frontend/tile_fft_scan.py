"""Tile FFTs, prefix scans and sorts (special forms; see `tile_forms`), with Warp's names
and semantics.

Like the rest of the tile library these are plain loops over local storage, so they run
on both backends and differentiate through the ordinary autodiff transform: the adjoint
of the (unnormalised) FFT comes out as the unnormalised inverse FFT, as in Warp.
"""

from __future__ import annotations

import math

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend import tile_value as tv
from kernelc.frontend.lower_expr import PyObj
from kernelc.frontend.tile_forms import form_table
from kernelc.frontend.tile_value import Tile
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

form = form_table(globals())

MAX_DFT_SIZE = 4096  # Warp's CPU limit for transform lengths that are not powers of two


def _int(b, x: ir.Value, code: OpCode, y: ir.Value | int) -> ir.Value:
    return b.op(code, (x, tv.const(b, y) if isinstance(y, int) else y), T.int32)


# ---- FFT ----------------------------------------------------------------------------------

def _complex_tile(lowerer, args, what: str) -> Tile:
    t = lowerer.tile_operand(args["inout"], what)
    d = t.dtype
    if not (isinstance(d, T.VectorType) and d.length == 2 and d.dtype in (T.float32, T.float64)):
        raise KernelError(f"{what} needs a tile of vec2f or vec2d (complex numbers: x the "
                          f"real part, y the imaginary part), got {d!r}")
    if t.ndim < 2:
        raise KernelError(f"{what} needs a tile of at least 2 dimensions (batches, then the "
                          f"transform length), got shape {t.shape}")
    n = t.shape[-1]
    if n & (n - 1) and n > MAX_DFT_SIZE:
        raise KernelError(f"{what}: a transform length that is not a power of two may be at "
                          f"most {MAX_DFT_SIZE}, got {n}")
    return t


class _Complex:
    """Complex arithmetic on (real, imaginary) pairs of scalar IR values."""

    def __init__(self, b, scalar: T.ScalarType, vec: T.Type):
        self.b, self.scalar, self.vec = b, scalar, vec

    def split(self, v: ir.Value) -> tuple[ir.Value, ir.Value]:
        return (self.b.op(OpCode.EXTRACT, (v,), self.scalar, 0),
                self.b.op(OpCode.EXTRACT, (v,), self.scalar, 1))

    def join(self, re: ir.Value, im: ir.Value) -> ir.Value:
        return self.b.op(OpCode.BUILD, (re, im), self.vec)

    def arith(self, code: OpCode, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.b.op(code, (x, y), self.scalar)

    def mul(self, w: tuple, v: tuple) -> tuple[ir.Value, ir.Value]:
        m, a = OpCode.MUL, self.arith
        return (a(OpCode.SUB, a(m, w[0], v[0]), a(m, w[1], v[1])),
                a(OpCode.ADD, a(m, w[0], v[1]), a(m, w[1], v[0])))


def _twiddles(b, c: _Complex, count: int, n: int, sign: int) -> tuple[Tile, Tile]:
    """cos and sin of sign * 2 pi m / n for m < count, in the element precision. The angle
    is reduced to the first octant with exact integer arithmetic (in units of pi / 2n: a
    quarter turn is n units), so every twiddle is as accurate as cos and sin near zero."""
    cos_t, sin_t = (tv.new_tile(b, c.scalar, (count,), name) for name in ("tw_re", "tw_im"))
    unit = b.const(math.pi / (2 * n), c.scalar)

    def pick(cond: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
        return b.op(OpCode.SELECT, (cond, x, y), x.type)

    def above(x: ir.Value, limit: int) -> ir.Value:
        return b.op(OpCode.GT, (x, tv.const(b, limit)), T.bool_)

    with tv.counted_loop(b, 0, count) as m:
        u = _int(b, m, OpCode.MUL, 4)  # the angle in units; a full turn is 4n
        lower_half = above(u, 2 * n)  # theta in (pi, 2 pi): the mirror image, sin negated
        u = pick(lower_half, _int(b, tv.const(b, 4 * n), OpCode.SUB, u), u)
        second = above(u, n)  # theta = pi / 2 + phi
        v = pick(second, _int(b, u, OpCode.SUB, n), u)
        swap = above(_int(b, v, OpCode.MUL, 2), n)  # phi = pi / 2 - psi
        v = pick(swap, _int(b, tv.const(b, n), OpCode.SUB, v), v)
        angle = c.arith(OpCode.MUL, b.cast(v, c.scalar), unit)
        cos_v, sin_v = b.call("cos", [angle]), b.call("sin", [angle])
        cos_phi, sin_phi = pick(swap, sin_v, cos_v), pick(swap, cos_v, sin_v)
        cos_theta = pick(second, b.op(OpCode.NEG, (sin_phi,), c.scalar), cos_phi)
        sin_theta = pick(second, cos_phi, sin_phi)
        negate = lower_half if sign > 0 else b.op(OpCode.NOT, (lower_half,), T.bool_)
        tv.store(b, cos_t, [m], cos_theta)
        tv.store(b, sin_t, [m], pick(negate, b.op(OpCode.NEG, (sin_theta,), c.scalar),
                                     sin_theta))
    return cos_t, sin_t


def _bit_reversed(b, i: ir.Value, bits: int) -> ir.Value:
    """i with its low `bits` bits in reverse order (straight-line code, no loop)."""
    r = tv.const(b, 0)
    for k in range(bits):
        bit = _int(b, _int(b, i, OpCode.SHR, k), OpCode.BITAND, 1)
        r = _int(b, r, OpCode.BITOR, _int(b, bit, OpCode.SHL, bits - 1 - k))
    return r


def _radix2(b, c: _Complex, t: Tile, outer: list, tw: tuple[Tile, Tile],
            buffers: tuple[Tile, Tile]) -> None:
    """Iterative radix-2 FFT of the row t[outer]: gathered in bit-reversed order, then one
    loop of n/2 butterflies per stage. Each stage reads one buffer and writes the other,
    so no loop updates what it reads and the reverse sweep needs no replays."""
    n = t.shape[-1]
    bits = n.bit_length() - 1
    src, dst = buffers
    with tv.counted_loop(b, 0, n) as i:
        tv.store(b, src, [i], tv.load(b, t, [*outer, _bit_reversed(b, i, bits)]))
    for stage in range(1, bits + 1):
        half = 1 << (stage - 1)
        with tv.counted_loop(b, 0, n // 2) as k:
            j = _int(b, k, OpCode.BITAND, half - 1)
            p = _int(b, _int(b, _int(b, k, OpCode.SHR, stage - 1), OpCode.SHL, stage),
                     OpCode.ADD, j)
            q = _int(b, p, OpCode.ADD, half)
            m = _int(b, j, OpCode.SHL, bits - stage)  # twiddle exp(+-2 pi i j / 2^stage)
            w = (tv.load(b, tw[0], [m]), tv.load(b, tw[1], [m]))
            u = c.split(tv.load(b, src, [p]))
            v = c.mul(w, c.split(tv.load(b, src, [q])))
            tv.store(b, dst, [p], c.join(c.arith(OpCode.ADD, u[0], v[0]),
                                         c.arith(OpCode.ADD, u[1], v[1])))
            tv.store(b, dst, [q], c.join(c.arith(OpCode.SUB, u[0], v[0]),
                                         c.arith(OpCode.SUB, u[1], v[1])))
        src, dst = dst, src
    with tv.counted_loop(b, 0, n) as i:
        tv.store(b, t, [*outer, i], tv.load(b, src, [i]))


def _dft(b, c: _Complex, t: Tile, outer: list, tw: tuple[Tile, Tile], scratch: Tile) -> None:
    """The O(n^2) transform of the row t[outer] for lengths that are not powers of two;
    the twiddle index (k * j) mod n keeps every angle below 2 pi."""
    n = t.shape[-1]
    re, im = b.new_slot("dft_re", c.scalar), b.new_slot("dft_im", c.scalar)
    with tv.counted_loop(b, 0, n) as k:
        b.store(re, b.const(0, c.scalar))
        b.store(im, b.const(0, c.scalar))
        with tv.counted_loop(b, 0, n) as j:
            m = _int(b, _int(b, k, OpCode.MUL, j), OpCode.MOD, n)
            w = (tv.load(b, tw[0], [m]), tv.load(b, tw[1], [m]))
            v = c.mul(w, c.split(tv.load(b, t, [*outer, j])))
            b.store(re, c.arith(OpCode.ADD, b.load(re), v[0]))
            b.store(im, c.arith(OpCode.ADD, b.load(im), v[1]))
        tv.store(b, scratch, [k], c.join(b.load(re), b.load(im)))
    with tv.counted_loop(b, 0, n) as k:
        tv.store(b, t, [*outer, k], tv.load(b, scratch, [k]))


def _fft(lowerer, args, name: str, sign: int):
    t = _complex_tile(lowerer, args, f"{name}()")
    b = lowerer.b
    n = t.shape[-1]
    c = _Complex(b, t.dtype.dtype, t.dtype)
    power_of_two = n & (n - 1) == 0
    tw = _twiddles(b, c, max(n // 2, 1) if power_of_two else n, n, sign)
    # Radix-2 ping-pongs between two rows of scratch, the direct sum needs one.
    buffers = tuple(tv.new_tile(b, t.dtype, (n,), name)
                    for name in ("fft_a", "fft_b")[:2 if power_of_two else 1])
    with tv.loop_nest(b, t.shape[:-1]) as outer:
        if power_of_two:
            _radix2(b, c, t, outer, tw, buffers)
        else:
            _dft(b, c, t, outer, tw, buffers[0])
    return PyObj(None)


@form("tile_fft", "inout",
      "The forward FFT along the last dimension of a tile of vec2f or vec2d (x real, y "
      "imaginary; at least 2-d, leading dimensions are batches), in place and unnormalised: "
      "X[k] = sum_n x[n] exp(-2 pi i k n / N), as numpy.fft.fft. Any length: powers of two "
      "by radix-2, others (up to 4096) by the direct sum.")
def _tile_fft(lowerer, args, node):
    return _fft(lowerer, args, "tile_fft", -1)


@form("tile_ifft", "inout",
      "The inverse FFT along the last dimension, in place and unnormalised (no division by "
      "N): x[n] = sum_k X[k] exp(+2 pi i k n / N); otherwise as tile_fft().")
def _tile_ifft(lowerer, args, node):
    return _fft(lowerer, args, "tile_ifft", 1)


# ---- prefix scans -------------------------------------------------------------------------

def _scan(lowerer, node, what: str, combine, exclusive: bool = False) -> Tile:
    """Scans the tile's row-major sequence with `combine(acc, x)`; a new tile of the same
    shape. `combine` None is a sum that starts from zero, as Warp's does."""
    t = lowerer.tile_operand(node, what)
    if not isinstance(t.dtype, T.ScalarType) or t.dtype == T.bool_:
        raise KernelError(f"{what} needs a tile of numbers, got {t.dtype!r}")
    b = lowerer.b
    src = tv.flat(b, t)
    out = tv.new_tile(b, t.dtype, t.shape, "scan")
    flat_out = out.view((t.size,), (1,))
    acc = b.new_slot("scan_acc", t.dtype)
    zero = tv.const(b, 0)
    start = 0
    if combine is None:
        b.store(acc, b.const(0, t.dtype))
    else:  # fmin/fmax ignore NaN, so the first element is the identity Warp starts from
        b.store(acc, tv.load(b, src, [zero]))
        tv.store(b, flat_out, [zero], b.load(acc))
        start = 1
    with tv.counted_loop(b, start, t.size) as i:
        x = tv.load(b, src, [i])
        if exclusive:
            tv.store(b, flat_out, [i], b.load(acc))
        total = b.op(OpCode.ADD, (b.load(acc), x), t.dtype) if combine is None \
            else combine(b.load(acc), x)
        b.store(acc, total)
        if not exclusive:
            tv.store(b, flat_out, [i], total)
    return out


@form("tile_scan_inclusive", "a",
      "Inclusive prefix sums of a tile's row-major sequence: element i is the sum of "
      "elements 0 to i; a new tile of the same shape and type.")
def _tile_scan_inclusive(lowerer, args, node):
    return _scan(lowerer, args["a"], "tile_scan_inclusive()", None)


@form("tile_scan_exclusive", "a",
      "Exclusive prefix sums of a tile's row-major sequence: element i is the sum of "
      "elements 0 to i - 1 (element 0 is zero); a new tile of the same shape and type.")
def _tile_scan_exclusive(lowerer, args, node):
    return _scan(lowerer, args["a"], "tile_scan_exclusive()", None, exclusive=True)


@form("tile_scan_max_inclusive", "a",
      "Inclusive prefix maxima of a tile's row-major sequence (NaN ignored, as C's fmax); "
      "a new tile of the same shape and type.")
def _tile_scan_max_inclusive(lowerer, args, node):
    return _scan(lowerer, args["a"], "tile_scan_max_inclusive()",
                 lambda acc, x: lowerer.b.call("max", [acc, x]))


@form("tile_scan_min_inclusive", "a",
      "Inclusive prefix minima of a tile's row-major sequence (NaN ignored, as C's fmin); "
      "a new tile of the same shape and type.")
def _tile_scan_min_inclusive(lowerer, args, node):
    return _scan(lowerer, args["a"], "tile_scan_min_inclusive()",
                 lambda acc, x: lowerer.b.call("min", [acc, x]))


# ---- sorting ------------------------------------------------------------------------------

def _merge_pass(b, width: int, n: int, src: tuple[Tile, Tile], dst: tuple[Tile, Tile]) -> None:
    """Merges each pair of sorted runs of `width` from src into dst, the left run first
    among equal keys (so the sort is stable)."""
    i_slot, j_slot = b.new_slot("merge_i", T.int32), b.new_slot("merge_j", T.int32)
    last = tv.const(b, n - 1)
    with tv.counted_loop(b, 0, n, 2 * width) as start:
        mid = b.call("min", [_int(b, start, OpCode.ADD, width), tv.const(b, n)])
        end = b.call("min", [_int(b, start, OpCode.ADD, 2 * width), tv.const(b, n)])
        b.store(i_slot, start)
        b.store(j_slot, mid)
        with tv.counted_loop(b, start, end) as out:
            i, j = b.load(i_slot), b.load(j_slot)
            # Read clamped positions: a finished run's pointer sits one past its end.
            left = tv.load(b, src[0], [b.call("min", [i, last])])
            right = tv.load(b, src[0], [b.call("min", [j, last])])
            right_first = b.op(OpCode.BITOR, (b.op(OpCode.GE, (i, mid), T.bool_),
                                              b.op(OpCode.BITAND, (
                                                  b.op(OpCode.LT, (j, end), T.bool_),
                                                  b.op(OpCode.LT, (right, left), T.bool_)),
                                                  T.bool_)), T.bool_)
            pick = b.op(OpCode.SELECT, (right_first, j, i), T.int32)
            tv.store(b, dst[0], [out], tv.load(b, src[0], [pick]))
            tv.store(b, dst[1], [out], tv.load(b, src[1], [pick]))
            step = b.op(OpCode.SELECT, (right_first, tv.const(b, 1), tv.const(b, 0)), T.int32)
            b.store(j_slot, _int(b, j, OpCode.ADD, step))
            b.store(i_slot, _int(b, _int(b, i, OpCode.ADD, 1), OpCode.SUB, step))


@form("tile_sort", "keys, values",
      "Sorts keys in ascending order in place, permuting values (a tile of the same shape, "
      "any element type) along with them; multi-dimensional tiles are sorted as their "
      "row-major sequence. Warp leaves the order of equal keys unspecified; kernelc keeps "
      "it (a stable merge sort).")
def _tile_sort(lowerer, args, node):
    keys = lowerer.tile_operand(args["keys"], "tile_sort()")
    values = lowerer.tile_operand(args["values"], "tile_sort()")
    if not isinstance(keys.dtype, T.ScalarType) or keys.dtype == T.bool_:
        raise KernelError(f"tile_sort() keys must be numbers, got {keys.dtype!r}")
    if values.shape != keys.shape:
        raise KernelError(f"tile_sort(): keys of shape {keys.shape} and values of shape "
                          f"{values.shape}; they must match")
    b = lowerer.b
    n = keys.size
    # Work on private copies, ping-ponging between two buffers, then write back.
    src = (tv.materialise(b, keys, "sort_keys").view((n,), (1,)),
           tv.materialise(b, values, "sort_values").view((n,), (1,)))
    dst = (tv.new_tile(b, keys.dtype, (n,), "sort_keys"),
           tv.new_tile(b, values.dtype, (n,), "sort_values"))
    width = 1
    while width < n:
        _merge_pass(b, width, n, src, dst)
        src, dst = dst, src
        width *= 2
    for target, result in zip((keys, values), src):
        tv.copy(b, target, result.view(target.shape, tv.row_major(target.shape)))
    return PyObj(None)

