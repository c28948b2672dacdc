"""Funcs: calls between funcs, several results, generic specialisation, constants, static."""

from __future__ import annotations

import typing

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import nonzero, poisoned

SCALE = kc.constant(3.0)
OFFSET = 2  # a plain module-level constant
TABLE = (1, 4, 9, 16)


@kc.func
def square(x: float) -> float:
    return x * x


@kc.func
def sum_of_squares(x: float, y: float) -> float:
    return square(x) + square(y)


@kc.func
def divmod_int(a: int, b: int) -> tuple[int, int]:
    return a // b, a % b


@kc.func
def min_max(x: float, y: float):
    if x < y:
        return x, y
    return y, x


@kc.func
def twice(x: typing.Any):
    return x + x


@kc.func
def no_result(a: kc.array(dtype=float), i: int, v: float):
    a[i] = v


@kc.kernel
def use_funcs(a: kc.array(dtype=float), b: kc.array(dtype=float), q: kc.array(dtype=int),
              o: kc.array2d(dtype=float), oi: kc.array2d(dtype=int), o5: kc.array(dtype=float)):
    i = kc.tid()
    o[0, i] = sum_of_squares(a[i], b[i])
    lo, hi = min_max(a[i], b[i])
    o[1, i] = lo
    o[2, i] = hi
    d, m = divmod_int(q[i], 3)
    oi[0, i] = d
    oi[1, i] = m
    oi[2, i] = twice(q[i])
    o[3, i] = twice(a[i])
    o[4, i] = kc.float32(twice(kc.float64(a[i])))
    no_result(o5, i, SCALE * a[i] + float(OFFSET))


def test_funcs_calling_funcs_and_tuple_results(rng):
    n = 32
    a, b = nonzero(rng, n, np.float32), nonzero(rng, n, np.float32)
    q = rng.integers(-20, 20, n).astype(np.int32)
    o, oi, o5 = poisoned((5, n), np.float32), poisoned((3, n), np.int32), poisoned(n, np.float32)
    kc.launch(use_funcs, n, inputs=[kc.array(a, dtype=float), kc.array(b, dtype=float),
                                    kc.array(q, dtype=int), o, oi, o5])
    got = o.numpy()
    np.testing.assert_allclose(got[0], a * a + b * b, rtol=1e-6)
    np.testing.assert_array_equal(got[1], np.minimum(a, b))
    np.testing.assert_array_equal(got[2], np.maximum(a, b))
    np.testing.assert_array_equal(got[3], 2 * a)
    np.testing.assert_array_equal(got[4], 2 * a)
    np.testing.assert_allclose(o5.numpy(), 3 * a + 2, rtol=1e-6)
    np.testing.assert_array_equal(oi.numpy(), [q // 3, q - 3 * (np.trunc(q / 3)), 2 * q])


def test_generic_func_is_specialised_per_type():
    kernel_ir = use_funcs.get_ir()
    names = sorted(f.name for f in kernel_ir.funcs if f.name.startswith("twice"))
    assert len(names) == 3  # int32, float32 and float64


@kc.kernel
def generic_kernel(a: kc.array(dtype=typing.Any), o: kc.array(dtype=typing.Any)):
    i = kc.tid()
    o[i] = twice(a[i]) * a[i]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint16])
def test_generic_kernel_overloads(dtype, rng):
    t = kc.types.from_numpy_dtype(np.dtype(dtype))
    a = nonzero(rng, 16, dtype, 1, 9)
    out = poisoned(16, dtype)
    kc.launch(generic_kernel, 16, inputs=[kc.array(a, dtype=t), out])
    np.testing.assert_allclose(out.numpy(), (2 * a * a).astype(dtype), rtol=1e-6)


HALF64 = kc.float64(0.5)  # a host float64 scalar: keeps its type in kernels, as in Warp


@kc.kernel
def float64_globals(c: kc.array(dtype=int), out: kc.array(dtype=kc.float64)):
    one = HALF64 + HALF64
    out[0] = kc.where(c[0] > 0, one, -one) + kc.float64(1e-12)
    out[1] = HALF64 * kc.float64(c[0])


def test_host_float64_scalars_stay_float64():
    out = poisoned(2, np.float64)
    kc.launch(float64_globals, 1, inputs=[kc.array([3], dtype=int), out])
    assert out.numpy().tolist() == [1.0 + 1e-12, 1.5]  # 1e-12 survives only in float64


def test_each_specialisation_compiles_once(rng):
    @kc.kernel
    def negate(a: kc.array(dtype=typing.Any)):
        a[kc.tid()] = -a[kc.tid()]

    for dtype in (float, float, kc.float64, float, kc.float64):
        kc.launch(negate, 4, inputs=[kc.ones(4, dtype=dtype)])
    assert len(negate.compiled) == 2


def test_closure_constants_and_static_are_folded():
    factor = 5
    shift = 0.25

    @kc.kernel
    def closure(o: kc.array(dtype=float), oi: kc.array(dtype=int)):
        o[0] = float(factor) + shift
        oi[0] = TABLE[2] + kc.static(factor * OFFSET + len(TABLE))
        oi[1] = kc.static(sum(TABLE))

    o, oi = poisoned(1, np.float32), poisoned(2, np.int32)
    kc.launch(closure, 1, inputs=[o, oi])
    assert o.numpy()[0] == 5.25 and oi.numpy().tolist() == [9 + 14, 30]
    from kernelc.ir import nodes as ir
    from kernelc.runtime.compiler import optimized_ir

    module = optimized_ir(closure, closure.param_types)
    opcodes = {s.opcode for s in ir.walk(module.kernel.body) if isinstance(s, ir.Op)}
    assert opcodes <= {ir.OpCode.CONST}  # everything folded; only the stores remain


def test_return_annotation_converts_literals():
    @kc.func
    def half() -> kc.float64:
        return 0.5

    @kc.kernel
    def use(o: kc.array(dtype=kc.float64)):
        o[0] = half() + kc.float64(1.0)

    o = poisoned(1, np.float64)
    kc.launch(use, 1, inputs=[o])
    assert o.numpy()[0] == 1.5


@kc.func
def countdown(n: int) -> int:
    if n <= 0:
        return 0
    return countdown(n - 1) + 1


def test_recursion_is_a_compile_error():
    @kc.kernel
    def recursive(o: kc.array(dtype=int)):
        o[0] = countdown(3)

    with pytest.raises(kc.KernelError, match="recursion"):
        kc.launch(recursive, 1, inputs=[kc.zeros(1, dtype=int)])
    assert not recursive.compiled


def test_func_runs_on_the_host_as_python():
    assert square(3.0) == 9.0 and divmod_int(7, 2) == (3, 1)


def _make_inner_doubled():
    @kc.func
    def doubled(x: float) -> float:
        return x * 2.0

    return doubled


_inner_doubled = _make_inner_doubled()


@kc.func
def doubled(x: float) -> float:  # the same name as the func it calls
    return _inner_doubled(x) + 1.0


@kc.kernel
def k_same_named_funcs(a: kc.array(dtype=float)):
    i = kc.tid()
    a[i] = doubled(a[i])


def test_funcs_with_one_name_lowered_inside_each_other():
    a = kc.array(np.array([1.0, 2.5], np.float32))
    kc.launch(k_same_named_funcs, 2, [a])
    np.testing.assert_array_equal(a.numpy(), [3.0, 6.0])


@kc.struct
class Pair:
    x: int
    y: int


@kc.func
def bump_if(q: Pair, flag: bool) -> Pair:
    if flag:
        q.x += 1  # changes the parameter only on one path
    return q


@kc.kernel
def k_bump_if(flags: kc.array(dtype=kc.int32), out: kc.array2d(dtype=int)):
    i = kc.tid()
    s = Pair()
    s.x = 5
    s.y = 7
    r = bump_if(s, flags[i] != 0)
    out[i, 0] = r.x
    out[i, 1] = r.y


def test_parameter_changed_on_one_path_keeps_its_value_on_the_other():
    out = kc.full((2, 2), -1, dtype=int)
    kc.launch(k_bump_if, 2, [kc.array(np.array([0, 1], np.int32)), out])
    np.testing.assert_array_equal(out.numpy(), [[5, 7], [6, 7]])


@kc.func
def first_multiple_at_or_above(x: int, step: int) -> int:
    n = x
    while True:  # left only by a return, so the func cannot fall off its end
        if n % step == 0:
            return n
        n += 1


@kc.func
def first_multiple_pair(x: int, step: int) -> tuple[int, int]:
    n = x
    while 1:
        for k in range(3):
            if k == 2:
                break  # leaves the for, not the while
        if n % step == 0:
            return n, n // step
        n = n + 1


@kc.kernel
def use_forever_loops(q: kc.array(dtype=int), o: kc.array2d(dtype=int)):
    i = kc.tid()
    o[0, i] = first_multiple_at_or_above(q[i], 7)
    m, d = first_multiple_pair(q[i], 5)
    o[1, i] = m
    o[2, i] = d


def test_func_returning_only_from_while_true(rng):
    n = 64
    q = rng.integers(1, 500, n).astype(np.int32)
    o = poisoned((3, n), np.int32)
    kc.launch(use_forever_loops, n, inputs=[kc.array(q, dtype=int), o])
    up7, up5 = (q + 6) // 7 * 7, (q + 4) // 5 * 5
    np.testing.assert_array_equal(o.numpy(), np.stack([up7, up5, up5 // 5]))


@kc.func
def swapped(v: typing.Any):
    return type(v)(v[1], v[0])  # the argument's own vector type, whatever it is


@kc.func
def twice_any(x: typing.Any):
    return x + type(x)(x)


@kc.kernel
def use_type_of(a: kc.array(dtype=kc.vec2), b: kc.array(dtype=kc.vec2d),
                c: kc.array(dtype=kc.float64)):
    i = kc.tid()
    a[i] = swapped(a[i])
    b[i] = swapped(b[i])
    c[i] = twice_any(c[i])


def test_type_of_a_value_constructs_its_type(rng):
    an = nonzero(rng, (9, 2), np.float32)
    bn = nonzero(rng, (9, 2), np.float64)
    cn = nonzero(rng, 9, np.float64)
    a, b, c = kc.array(an, dtype=kc.vec2), kc.array(bn, dtype=kc.vec2d), kc.array(cn)
    kc.launch(use_type_of, 9, [a, b, c])
    np.testing.assert_array_equal(a.numpy(), an[:, ::-1])
    np.testing.assert_array_equal(b.numpy(), bn[:, ::-1])
    np.testing.assert_array_equal(c.numpy(), 2 * cn)


@kc.func(name="scaled_by_three", module="unique", inline=True)
def triple(x: float):
    return 3.0 * x


@kc.func(inline=False)
def triple(x: int):  # noqa: F811  (an overload, as with a bare @kc.func)
    return 3 * x


@kc.kernel
def use_keyword_funcs(values: kc.array(dtype=float), counts: kc.array(dtype=int)):
    i = kc.tid()
    values[i] = triple(values[i])
    counts[i] = triple(counts[i])


def test_func_decorator_keywords(rng):
    values = nonzero(rng, 8, np.float32)
    counts = rng.integers(1, 100, 8).astype(np.int32)
    out_values, out_counts = kc.array(values, dtype=float), kc.array(counts, dtype=int)
    kc.launch(use_keyword_funcs, 8, [out_values, out_counts])
    np.testing.assert_allclose(out_values.numpy(), 3.0 * values, rtol=1e-6)
    np.testing.assert_array_equal(out_counts.numpy(), 3 * counts)
    assert triple.__name__ == "scaled_by_three"
    with pytest.raises(TypeError, match="inline must be a bool or None"):
        kc.func(inline="yes")
    # both forms are typed for static checkers (the bare decorator and the keyword one)
    assert len(typing.get_overloads(kc.func)) == 2
