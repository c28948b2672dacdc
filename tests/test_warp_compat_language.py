"""Warp kernel forms: array truth values, `wp.float(x)` casts, host structs and constant
locals in `kc.static`, statics evaluated at declaration and in unrolled loops, and
constant bools as range bounds."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import kernel_in_file


@kc.kernel
def _truth(a: kc.array(dtype=float), b: kc.array2d(dtype=float), out: kc.array(dtype=int)):
    r = 0
    if a:
        r += 1
    if not a:
        r += 10
    if b:
        r += 100
    if not b:
        r += 1000
    out[0] = r
    out[1] = kc.where(a and b, 1, 2)
    n = 0
    while not a and n < 3:
        n += 1
    out[2] = n


@pytest.mark.parametrize("a,b,expected", [
    (None, None, [1010, 2, 3]),
    ("full", "full", [101, 1, 0]),
    ("empty", "empty", [1010, 2, 3]),  # (3, 0): one zero dimension is enough
    ("full", None, [1001, 2, 0]),
])
def test_array_truth_is_whether_it_has_elements(a, b, expected):
    arrays = {None: None, "full": (kc.ones(4), kc.ones((2, 2))),
              "empty": (kc.zeros(0), kc.zeros((3, 0)))}
    first = None if a is None else arrays[a][0]
    second = None if b is None else arrays[b][1]
    out = kc.full(3, -7, dtype=int)  # poisoned
    kc.launch(_truth, dim=1, inputs=[first, second, out])
    np.testing.assert_array_equal(out.numpy(), expected)


def test_module_spelled_casts(rng):
    @kc.kernel
    def casts(x: kc.array(dtype=float), out: kc.array(dtype=float), ints: kc.array(dtype=int)):
        i = kc.tid()
        out[i] = kc.float(kc.int(x[i])) * 2.0
        ints[i] = kc.int(kc.bool(kc.int(x[i])))

    values = (rng.standard_normal(16) * 5.0).astype(np.float32)
    out = kc.full(16, np.nan)
    ints = kc.full(16, -1, dtype=int)
    kc.launch(casts, dim=16, inputs=[kc.array(values), out, ints])
    truncated = np.trunc(values)
    np.testing.assert_array_equal(out.numpy(), truncated * 2.0)
    np.testing.assert_array_equal(ints.numpy(), (truncated != 0).astype(np.int32))


@kc.struct
class _Inner:
    q: kc.quat
    h: kc.float16


@kc.struct
class _Params:
    m: kc.mat22
    v: kc.vec3
    i: int
    d: kc.float64
    inner: _Inner


def _make_params(k: int) -> _Params:
    p = _Params()
    p.m = kc.mat22(1.0, 2.0, 3.0, 4.0)
    p.v = kc.vec3(5.0, 6.0, 7.0 + k)
    p.i = 8 + k
    p.d = kc.float64(0.1)
    p.inner = _Inner()
    p.inner.q = kc.quat(0.0, 0.0, 0.6, 0.8)
    p.inner.h = kc.float16(1.5)
    return p


def test_static_struct_instance_is_a_constant():
    @kc.kernel
    def store(out: kc.array(dtype=_Params), f: kc.array(dtype=kc.float64)):
        p = kc.static(_make_params(1))
        out[0] = p
        f[0] = kc.float64(p.v[2] + float(p.i) + p.inner.q[3] + float(p.inner.h)) + p.d

    out = kc.empty(1, dtype=_Params)
    f = kc.full(1, np.float64(np.nan))
    kc.launch(store, dim=1, inputs=[out, f])
    got = out.numpy()[0]
    np.testing.assert_array_equal(got["m"], [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(got["v"], [5.0, 6.0, 8.0])
    assert got["i"] == 9 and got["d"] == 0.1
    np.testing.assert_array_equal(got["inner"]["q"], np.float32([0.0, 0.0, 0.6, 0.8]))
    assert got["inner"]["h"] == 1.5
    expected = np.float64(np.float32(8.0) + np.float32(9.0) + np.float32(0.8) + np.float32(1.5))
    np.testing.assert_allclose(f.numpy()[0], expected + 0.1, rtol=1e-7)


_G = 10


def test_static_sees_constant_locals_and_bool_range_bounds():
    @kc.kernel
    def k(out: kc.array(dtype=int)):
        c = 3
        f = 0.5
        out[0] = kc.static(_G * c + int(f * 4.0))
        n = 0
        for _ in range(kc.static(True)):
            n += 1
        for _ in range(kc.static(False)):
            n += 100
        out[1] = n

    out = kc.full(2, -1, dtype=int)
    kc.launch(k, dim=1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [32, 1])


def test_static_does_not_see_reassigned_locals():
    @kc.kernel
    def k(out: kc.array(dtype=int)):
        c = 3
        c = 4
        out[0] = kc.static(c)

    with pytest.raises(kc.KernelError, match="name 'c' is not defined") as err:
        kc.launch(k, dim=1, inputs=[kc.zeros(1, dtype=int)])
    assert "test_warp_compat_language.py" in str(err.value) and "^" in str(err.value)


_ANSWER = 1


def test_static_is_evaluated_where_the_kernel_is_declared():
    global _ANSWER
    kernels, calls = [], []

    def scale(c):
        calls.append(c)
        return float(c) * 2.0

    for c in range(3):  # each kernel keeps the `c` it was declared with
        @kc.kernel(module="unique")
        def k(out: kc.array(dtype=float)):
            doubled = kc.static(scale(c) + kc.static(0.5))  # noqa: B023 (read at declaration)
            out[0] = doubled + float(kc.static(_ANSWER))

        kernels.append(k)
    assert calls == [0, 1, 2]  # once each, at declaration (the nested static within)
    _ANSWER = 100  # too late for them
    try:
        for c, k in enumerate(kernels):
            out = kc.full(1, np.nan)
            kc.launch(k, dim=1, inputs=[out])
            assert out.numpy()[0] == 2.0 * c + 0.5 + 1.0
        assert calls == [0, 1, 2]
        kernels[0].module.mark_modified()  # evaluates them again, with the new global
        out = kc.full(1, np.nan)
        kc.launch(kernels[0], dim=1, inputs=[out])
        assert out.numpy()[0] == 2.0 * 2 + 0.5 + 100.0  # (`c` is 2 by now)
    finally:
        _ANSWER = 1


_IDX = 999  # a global of the same name as the loop variables below


@kc.func
def _times_ten(x: int):
    return x * 10


@kc.func
def _plus_one(x: int):
    return x + 1


_STEPS = (_times_ten, _plus_one)


def test_static_reads_the_variables_of_unrolled_loops(rng):
    @kc.kernel
    def k(x: kc.array(dtype=int), out: kc.array(dtype=int)):
        for _IDX in range(3):  # noqa: F402 (the loop variable hides the global)
            out[_IDX] = kc.static(_IDX * 2 + 1)
        for _IDX in reversed(range(2)):
            out[3 + _IDX] = kc.static(_STEPS[_IDX])(x[_IDX])
        for j in range(2):
            for _IDX in range(4):
                pass
            out[5 + j] = kc.static(_IDX)  # the inner loop's last value, as in Python

    x = rng.integers(-50, 50, 2).astype(np.int32)
    out = kc.full(7, -7, dtype=int)
    kc.launch(k, dim=1, inputs=[kc.array(x), out])
    np.testing.assert_array_equal(out.numpy(), [1, 3, 5, x[0] * 10, x[1] + 1, 3, 3])


@pytest.mark.parametrize("body, message", [
    ("for i in range(n):\n        out[0] = kc.static(i)", "range is not known"),
    ("for i in range(3):\n        if i == 1:\n            continue\n"
     "        out[i] = kc.static(i)", "cannot break or continue"),
    ("for i in range(5000):\n        out[0] = kc.static(i)", "at most 4096"),
    ("kc.static(print('x'))", "None is returned"),
    ("kc.static(kc.zeros(3))", "an array cannot be created"),
    ("out[0] = kc.static(1 // 0)", "Error evaluating static expression: integer division"),
])
def test_static_errors(tmp_path, body, message):
    k = kernel_in_file(tmp_path, "static_errors", "out: kc.array(dtype=int), n: int", body)
    with pytest.raises(kc.KernelError, match=message) as err:
        kc.launch(k, dim=1, inputs=[kc.zeros(1, dtype=int), 3])
    assert "static_errors.py:" in str(err.value) and "^" in str(err.value)


@kc.struct
class _Item:
    value: float
    v: kc.vec3


@kc.func
def _counted(counter: kc.array(dtype=int), i: int):
    kc.atomic_add(counter, 0, 1)
    return i


def test_augmented_assignment_evaluates_index_calls_once(rng):
    @kc.kernel
    def k(counter: kc.array(dtype=int), data: kc.array(dtype=_Item),
          vs: kc.array(dtype=kc.vec3), x: kc.array(dtype=float)):
        i = kc.tid()
        data[_counted(counter, i)].value += x[i]
        data[_counted(counter, i)].v[_counted(counter, 1)] *= x[i]
        vs[_counted(counter, i)][_counted(counter, 2)] += x[i]

    n = 8
    x = (rng.standard_normal(n) + 3.0).astype(np.float32)
    values = (rng.standard_normal((n, 3)) + 3.0).astype(np.float32)
    item = _Item()
    item.value = 10.0
    item.v = kc.vec3(1.0, 2.0, 3.0)
    data = kc.full(n, item, dtype=_Item)
    vs = kc.array(values, dtype=kc.vec3)
    counter = kc.full(1, 0, dtype=int)
    kc.launch(k, dim=n, inputs=[counter, data, vs, kc.array(x)])
    assert counter.numpy()[0] == 5 * n  # one call per index expression
    got = data.numpy()
    np.testing.assert_allclose(got["value"], np.float32(10.0) + x, rtol=1e-6)
    np.testing.assert_allclose(got["v"][:, 1], np.float32(2.0) * x, rtol=1e-6)
    np.testing.assert_array_equal(got["v"][:, [0, 2]], np.tile([1.0, 3.0], (n, 1)))
    expected = values.copy()
    expected[:, 2] += x
    np.testing.assert_allclose(vs.numpy(), expected, rtol=1e-6)


@kc.kernel
def _bare_builtins(a: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    expect_eq(i, i)  # noqa: F821  (builtins resolve without `kc.`, as in Warp)
    out[i] = sqrt(a[i]) + clamp(a[i], 0.25, 0.5)  # noqa: F821


def test_builtins_without_the_module_prefix(rng):
    a = kc.array(rng.uniform(0.1, 2.0, 16).astype(np.float32))
    out = kc.full(16, np.nan, dtype=float)
    kc.launch(_bare_builtins, dim=16, inputs=[a, out])
    x = a.numpy()
    np.testing.assert_allclose(out.numpy(), np.sqrt(x) + np.clip(x, 0.25, 0.5), rtol=1e-6)
