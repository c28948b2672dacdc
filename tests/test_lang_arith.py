"""Operators on every scalar type: results against kernelc.ir.semantics, NumPy and Warp."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import kernelc as kc
from kernelc import types as T
from kernelc.ir import semantics
from kernelc.ir.nodes import OpCode
from tests.conftest import nonzero, poisoned, run_warp

INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_TYPES = ["float16", "float32", "float64"]

# Rows of the integer kernel's output, with the op each computes (None: unary ~, "neg": -x).
INT_ROWS = [OpCode.FLOORDIV, OpCode.MOD, OpCode.ADD, OpCode.SUB, OpCode.MUL, OpCode.SHL,
            OpCode.SHR, OpCode.BITAND, OpCode.BITOR, OpCode.BITXOR, "invert", OpCode.DIV, "neg",
            "pos"]


@kc.kernel
def int_ops(a: kc.array(dtype=Any), b: kc.array(dtype=Any), s: kc.array(dtype=Any),
            o: kc.array2d(dtype=Any)):
    i = kc.tid()
    x = a[i]
    y = b[i]
    o[0, i] = x // y
    o[1, i] = x % y
    o[2, i] = x + y
    o[3, i] = x - y
    o[4, i] = x * y
    o[5, i] = x << s[i]
    o[6, i] = x >> s[i]
    o[7, i] = x & y
    o[8, i] = x | y
    o[9, i] = x ^ y
    o[10, i] = ~x
    o[11, i] = x / y
    o[12, i] = -x
    o[13, i] = +x


def int_inputs(name: str, rng, shift_limit_factor: int = 2, traps: bool = True):
    dtype = np.dtype(name)
    info = np.iinfo(dtype)
    n = 48
    a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    lo = -9 if info.min < 0 else 1
    a[:24] = rng.integers(-60 if info.min < 0 else 0, 60, 24).astype(dtype)
    b[:24] = rng.integers(lo, 10, 24).astype(dtype)
    b[b == 0] = 3
    if info.min < 0:  # negative operands of // and % in every sign combination
        a[1:5] = np.array([-7, 7, -7, 7], dtype=dtype)
        b[1:5] = np.array([2, -2, -2, 2], dtype=dtype)
    if traps:
        b[5] = 0  # division by zero is defined (0), never a trap
        if info.min < 0:
            a[6], b[6] = info.min, -1  # MIN // -1 wraps
    s = rng.integers(0, dtype.itemsize * 8 * shift_limit_factor, n).astype(dtype)
    return a, b, s


def run_int_ops(name: str, a, b, s) -> np.ndarray:
    t = getattr(kc, name)
    out = poisoned((len(INT_ROWS), len(a)), a.dtype)
    kc.launch(int_ops, len(a), inputs=[kc.array(a, dtype=t), kc.array(b, dtype=t),
                                       kc.array(s, dtype=t), out])
    return out.numpy()


def reference(op, x: int, y: int, shift: int, t: T.ScalarType) -> int:
    if op == "invert":
        return semantics.eval_unary(OpCode.INVERT, x, t)
    if op == "neg":
        return semantics.eval_unary(OpCode.NEG, x, t)
    if op == "pos":
        return x
    if op in (OpCode.SHL, OpCode.SHR):
        return semantics.eval_binary(op, x, shift, t)
    return semantics.eval_binary(op, x, y, t)


@pytest.mark.parametrize("name", INT_TYPES)
def test_integer_operators_match_semantics(name, rng):
    a, b, s = int_inputs(name, rng)
    got = run_int_ops(name, a, b, s)
    t = getattr(T, name)
    for row, op in enumerate(INT_ROWS):
        want = [reference(op, int(x), int(y), int(z), t) for x, y, z in zip(a, b, s)]
        assert [int(v) for v in got[row]] == want, f"{name} {op}"


def test_integer_division_never_traps():
    @kc.kernel
    def divide(a: kc.array(dtype=int), b: kc.array(dtype=int), o: kc.array(dtype=int)):
        i = kc.tid()
        o[i] = a[i] // b[i] + a[i] % b[i] + a[i] / b[i]

    a = kc.array(np.array([5, -(2**31), 7], dtype=np.int32), dtype=int)
    b = kc.array(np.array([0, -1, 0], dtype=np.int32), dtype=int)
    out = poisoned(3, np.int32)
    kc.launch(divide, 3, inputs=[a, b, out])
    assert out.numpy()[0] == 0 and out.numpy()[2] == 0
    # MIN // -1 == MIN (wraps), MIN % -1 == 0, MIN / -1 == MIN: the sum wraps to 0.
    assert out.numpy()[1] == semantics.wrap(2 * -(2**31), T.int32)


_WARP_INT_SCRIPT = """
for name in INT_TYPES:
    T = getattr(wp, name)

    @wp.kernel(module="unique")
    def k(a: wp.array(dtype=T), b: wp.array(dtype=T), s: wp.array(dtype=T),
          o: wp.array2d(dtype=T)):
        i = wp.tid()
        x = a[i]
        y = b[i]
        o[0, i] = x // y
        o[1, i] = x % y
        o[2, i] = x + y
        o[3, i] = x - y
        o[4, i] = x * y
        o[5, i] = x << s[i]
        o[6, i] = x >> s[i]
        o[7, i] = x & y
        o[8, i] = x | y
        o[9, i] = x ^ y
        o[10, i] = ~x
        o[11, i] = x / y

    a, b, s = (wp.array(inputs[name + key], dtype=T) for key in ("_a", "_b", "_s"))
    o = wp.zeros((12, a.shape[0]), dtype=T)
    wp.launch(k, a.shape[0], inputs=[a, b, s, o])
    results[name] = o.numpy()
"""


@pytest.fixture(scope="module")
def warp_int_results(tmp_path_factory):
    rng = np.random.default_rng(99)
    arrays = {}
    for name in INT_TYPES:
        # Warp (C) traps on x // 0 and MIN // -1 on the CPU: those cases are kernelc-only.
        # Shift counts reach twice the width: 8- and 16-bit operands are promoted as in C.
        a, b, s = int_inputs(name, rng, shift_limit_factor=2, traps=False)
        if name in ("int32", "int64", "uint32", "uint64"):
            s %= np.dtype(name).itemsize * 8  # beyond the width C leaves the result undefined
        arrays.update({name + "_a": a, name + "_b": b, name + "_s": s})
    script = f"INT_TYPES = {INT_TYPES!r}\n" + _WARP_INT_SCRIPT
    return arrays, run_warp(script, tmp_path_factory.mktemp("warp_int"), **arrays)


@pytest.mark.parametrize("name", INT_TYPES)
def test_integer_operators_match_warp_bit_for_bit(name, warp_int_results):
    arrays, warp = warp_int_results
    a, b, s = (arrays[name + k] for k in ("_a", "_b", "_s"))
    got = run_int_ops(name, a, b, s)
    np.testing.assert_array_equal(got[:12], warp[name])


@kc.kernel
def float_ops(a: kc.array(dtype=Any), b: kc.array(dtype=Any), o: kc.array2d(dtype=Any)):
    i = kc.tid()
    x = a[i]
    y = b[i]
    o[0, i] = x + y
    o[1, i] = x - y
    o[2, i] = x * y
    o[3, i] = x / y
    o[4, i] = x // y
    o[5, i] = x % y
    o[6, i] = kc.abs(x) ** y
    o[7, i] = -x
    o[8, i] = +x


@pytest.mark.parametrize("name", FLOAT_TYPES)
def test_float_operators_match_numpy(name, rng):
    n = 64
    dtype = np.dtype(name)
    a, b = nonzero(rng, n, dtype), nonzero(rng, n, dtype)
    t = getattr(kc, name)
    out = poisoned((9, n), dtype)
    kc.launch(float_ops, n, inputs=[kc.array(a, dtype=t), kc.array(b, dtype=t), out])
    x, y = a.astype(np.float64), b.astype(np.float64)
    want = [x + y, x - y, x * y, x / y, np.floor(x / y), np.fmod(x, y), np.abs(x) ** y, -x, x]
    rtol = {"float16": 4e-3, "float32": 2e-6, "float64": 1e-14}[name]
    got = out.numpy().astype(np.float64)
    for row, w in enumerate(want):
        w = w.astype(dtype).astype(np.float64)
        if row == 4:  # floor of a quotient that rounds onto an integer may differ by one
            assert np.mean(got[row] == w) > 0.9
            continue
        np.testing.assert_allclose(got[row], w, rtol=rtol, atol=rtol, err_msg=f"row {row}")


@kc.kernel
def compare_ops(a: kc.array(dtype=Any), b: kc.array(dtype=Any), c: kc.array(dtype=Any),
                o: kc.array2d(dtype=bool)):
    i = kc.tid()
    x = a[i]
    y = b[i]
    o[0, i] = x == y
    o[1, i] = x != y
    o[2, i] = x < y
    o[3, i] = x <= y
    o[4, i] = x > y
    o[5, i] = x >= y
    o[6, i] = x < y < c[i]
    o[7, i] = x <= y > c[i] != x


@pytest.mark.parametrize("name", INT_TYPES + FLOAT_TYPES)
def test_comparisons_including_chained(name, rng):
    n = 64
    dtype = np.dtype(name)
    a, b, c = (nonzero(rng, n, dtype, 1, 6) for _ in range(3))
    t = getattr(kc, name)
    out = poisoned((8, n), np.bool_)
    kc.launch(compare_ops, n, inputs=[kc.array(v, dtype=t) for v in (a, b, c)] + [out])
    want = [a == b, a != b, a < b, a <= b, a > b, a >= b, (a < b) & (b < c),
            (a <= b) & (b > c) & (c != a)]
    np.testing.assert_array_equal(out.numpy(), np.array(want))


def test_nan_comparisons():
    @kc.kernel
    def nan_cmp(a: kc.array(dtype=float), o: kc.array(dtype=int)):
        x = a[0]
        o[0] = int(x == x)
        o[1] = int(x != x)
        o[2] = int(x < 1.0)
        o[3] = int(x >= 1.0)

    out = poisoned(4, np.int32)
    kc.launch(nan_cmp, 1, inputs=[kc.array(np.array([np.nan], np.float32), dtype=float), out])
    assert out.numpy().tolist() == [0, 1, 0, 0]


@kc.kernel
def guarded(a: kc.array(dtype=float), n: int, hits: kc.array(dtype=int),
            o: kc.array(dtype=int)):
    i = kc.tid()
    if i < n and a[i] > 0.0:
        o[i] = 1
    elif not (i >= n or a[i] <= 0.0):
        o[i] = 2  # never reached: the same condition, negated twice
    else:
        o[i] = 0
    # the right side has an effect: it must run only when the left side does not decide
    if a[0] < 0.0 and kc.atomic_add(hits, 0, 1) >= 0:
        o[i] = 7
    if a[0] > 0.0 or kc.atomic_add(hits, 1, 1) >= 0:
        o[i] += 0


def test_and_or_short_circuit(rng, debug_mode):
    n = 6
    a = np.abs(nonzero(rng, n, np.float32)) * np.array([1, -1, 1, -1, 1, 1], np.float32)
    out = poisoned(n + 4, np.int32)
    hits = kc.zeros(2, dtype=int)
    # threads i >= n would read a[i] out of bounds if `and`/`or` evaluated both sides
    kc.launch(guarded, n + 4, inputs=[kc.array(a, dtype=float), n, hits, out])
    assert out.numpy().tolist() == [1, 0, 1, 0, 1, 1, 0, 0, 0, 0]
    assert hits.numpy().tolist() == [0, 0]


def test_not_and_bool_ops():
    @kc.kernel
    def logic(a: kc.array(dtype=int), o: kc.array2d(dtype=bool)):
        i = kc.tid()
        x = a[i]
        o[0, i] = not x
        o[1, i] = x > 1 and x < 4
        o[2, i] = x < 1 or x > 4 or x == 3
        o[3, i] = (x > 2) & (x < 5)
        o[4, i] = (x > 2) ^ (x < 5)
        o[5, i] = bool(x)

    x = np.array([0, 1, 2, 3, 4, 5, -1], np.int32)
    out = poisoned((6, len(x)), np.bool_)
    kc.launch(logic, len(x), inputs=[kc.array(x, dtype=int), out])
    want = [x == 0, (x > 1) & (x < 4), (x < 1) | (x > 4) | (x == 3), (x > 2) & (x < 5),
            (x > 2) ^ (x < 5), x != 0]
    np.testing.assert_array_equal(out.numpy(), np.array(want))


@kc.kernel
def weak_literals(x64: kc.array(dtype=kc.float64), i8: kc.array(dtype=kc.int8),
                  o64: kc.array(dtype=kc.float64), o8: kc.array(dtype=kc.int8)):
    i = kc.tid()
    o64[i] = x64[i] * 2 + 0.1  # float64: a float32 would lose the digits of 0.1
    o8[i] = i8[i] * 3 - 1  # int8, wrapping


def test_bare_literals_take_the_other_operands_type(rng):
    x = nonzero(rng, 16, np.float64)
    y = rng.integers(-128, 127, 16).astype(np.int8)
    o64, o8 = poisoned(16, np.float64), poisoned(16, np.int8)
    kc.launch(weak_literals, 16, inputs=[kc.array(x, dtype=kc.float64),
                                         kc.array(y, dtype=kc.int8), o64, o8])
    np.testing.assert_array_equal(o64.numpy(), x * 2 + 0.1)
    np.testing.assert_array_equal(o8.numpy(), (y.astype(np.int64) * 3 - 1).astype(np.int8))


def test_float_literal_with_int_operand_is_an_error():
    @kc.kernel
    def bad(a: kc.array(dtype=int)):
        i = kc.tid()
        a[i] = a[i] + 2.5

    with pytest.raises(kc.KernelError, match="float literal"):
        kc.launch(bad, 1, inputs=[kc.zeros(1, dtype=int)])


def test_fixed_width_overflow_wraps():
    @kc.kernel
    def overflow(a: kc.array(dtype=kc.uint8), b: kc.array(dtype=kc.int16),
                 c: kc.array(dtype=int)):
        a[0] = a[0] + kc.uint8(10)
        b[0] = b[0] * kc.int16(2)
        c[0] = c[0] + 1

    a = kc.array(np.array([250], np.uint8), dtype=kc.uint8)
    b = kc.array(np.array([20000], np.int16), dtype=kc.int16)
    c = kc.array(np.array([2**31 - 1], np.int32), dtype=int)
    kc.launch(overflow, 1, inputs=[a, b, c])
    assert a.numpy()[0] == 4 and b.numpy()[0] == -25536 and c.numpy()[0] == -(2**31)


def test_constant_folding_matches_runtime_results():
    @kc.kernel
    def folded(o: kc.array(dtype=int)):
        o[0] = -7 // 2
        o[1] = -7 % 2
        o[2] = 7 // -2
        o[3] = 1 << 33
        o[4] = 2147483647 + 1

    @kc.kernel
    def computed(v: kc.array(dtype=int), o: kc.array(dtype=int)):
        o[0] = v[0] // v[1]
        o[1] = v[0] % v[1]
        o[2] = v[2] // v[3]
        o[3] = v[4] << v[5]
        o[4] = v[6] + v[4]

    a, b = poisoned(5, np.int32), poisoned(5, np.int32)
    v = kc.array(np.array([-7, 2, 7, -2, 1, 33, 2**31 - 1], np.int32), dtype=int)
    kc.launch(folded, 1, inputs=[a])
    kc.launch(computed, 1, inputs=[v, b])
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.numpy().tolist()[:3] == [-4, -1, -4]  # floor division, C remainder


@kc.kernel
def literal_widths(o: kc.array(dtype=kc.int64)):
    o[0] = kc.min(1, 3000000000) + 3000000000
    o[1] = 1 + 3000000000


def test_literals_of_different_int_widths_meet_in_the_wider():
    o = kc.full(2, -1, dtype=kc.int64)
    kc.launch(literal_widths, 1, [o])
    assert o.numpy().tolist() == [3000000001, 3000000001]
