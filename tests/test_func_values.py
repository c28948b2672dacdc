"""Funcs and builtins passed to funcs (`kc.Function` parameters): calls, defaults,
forwarding, local aliases, overloads, gradients, host calls and errors."""

from __future__ import annotations

import importlib.util
import typing

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import kernel_in_file, nonzero, poisoned, run_warp


@kc.func
def double_it(x: float):
    return x * 2.0


@kc.func
def cube(x: float):
    return x * x * x


@kc.func
def apply(g: kc.Function, x: float):
    return g(x)


@kc.func
def apply_twice(g: kc.Function, x: float):
    return apply(g, apply(g, x))  # a Function parameter forwarded


@kc.func
def apply_binary(g: kc.Function, x: float, y: float):
    return g(x, y)


@kc.func
def apply_default(x: float, g: kc.Function = cube):
    return g(x)


@kc.func
def apply_any(g: typing.Any, x: typing.Any):
    h = g  # a local alias
    return h(x)


@kc.func
def store_applied(g: kc.Function, dst: kc.ref[float], x: float):
    dst = g(x)  # noqa: F841  (a reference: the caller sees it)


@kc.func
def pick(x: int):
    return float(x) + 0.5


@kc.func
def pick(g: kc.Function, x: float):  # noqa: F811  (an overload)
    return g(x) - 1.0


TARGETS = {"cube": cube}


@kc.kernel
def use_function_values(x: kc.array(dtype=float), out: kc.array2d(dtype=float)):
    i = kc.tid()
    v = x[i]
    out[0, i] = apply(double_it, v)
    out[1, i] = apply(kc.sin, v)
    out[2, i] = apply_twice(cube, v)
    out[3, i] = apply_binary(kc.min, v, 0.5)
    out[4, i] = apply_binary(kc.add, v, 2.0)
    out[5, i] = apply_default(v)
    out[6, i] = apply_default(v, double_it)
    out[7, i] = apply(g=kc.abs, x=v)
    out[8, i] = apply_any(double_it, v)
    f = double_it
    out[9, i] = apply(f, v) + f(v)
    out[10, i] = apply(kc.static(TARGETS["cube"]), v)
    out[11, i] = pick(cube, v) + pick(i)
    store_applied(kc.sqrt, out[12, i], kc.abs(v))


def test_function_arguments(rng):
    n = 40
    x_np = nonzero(rng, n, np.float32)
    out = poisoned((13, n), np.float32)
    kc.launch(use_function_values, n, [kc.array(x_np), out])
    got = out.numpy()
    f32 = np.float32
    c = x_np * x_np * x_np
    np.testing.assert_array_equal(got[0], x_np * f32(2))
    np.testing.assert_allclose(got[1], np.sin(x_np), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got[2], c * c * c, rtol=1e-5)
    np.testing.assert_array_equal(got[3], np.minimum(x_np, f32(0.5)))
    np.testing.assert_array_equal(got[4], x_np + f32(2))
    np.testing.assert_array_equal(got[5], c)
    np.testing.assert_array_equal(got[6], x_np * f32(2))
    np.testing.assert_array_equal(got[7], np.abs(x_np))
    np.testing.assert_array_equal(got[8], x_np * f32(2))
    np.testing.assert_array_equal(got[9], x_np * f32(4))
    np.testing.assert_array_equal(got[10], c)
    np.testing.assert_array_equal(got[11], (c - f32(1)) + (np.arange(n, dtype=f32) + f32(0.5)))
    np.testing.assert_allclose(got[12], np.sqrt(np.abs(x_np)), rtol=1e-6)


@kc.kernel
def function_gradients(x: kc.array(dtype=float), out: kc.array2d(dtype=float)):
    i = kc.tid()
    out[0, i] = kc.grad(apply)(cube, x[i])
    out[1, i] = kc.grad(apply)(kc.sin, x[i])


@kc.kernel
def through_function_values(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = apply_twice(cube, x[i]) + apply(kc.sin, x[i])


def test_gradients_through_function_arguments(rng):
    n = 16
    x_np = nonzero(rng, n, np.float32, -1.5, 1.5)
    out = poisoned((2, n), np.float32)
    kc.launch(function_gradients, n, [kc.array(x_np), out])
    np.testing.assert_allclose(out.numpy()[0], 3.0 * x_np ** 2, rtol=1e-5)
    np.testing.assert_allclose(out.numpy()[1], np.cos(x_np), rtol=1e-5)

    x = kc.array(x_np, requires_grad=True)
    y = kc.zeros(n, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(through_function_values, n, [x, y])
    tape.backward(grads={y: kc.ones(n, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), 9.0 * x_np ** 8 + np.cos(x_np), rtol=1e-4)


def test_host_calls_take_function_arguments():
    assert apply(cube, 3.0) == 27.0
    assert apply_default(2.0) == 8.0
    assert apply_twice(double_it, 1.5) == 6.0
    with pytest.raises(kc.WarpCodegenTypeError, match="must be a @kc.func or a builtin"):
        apply(lambda v: v, 3.0)

    def plain(v):
        return v

    # Warp's class (a RuntimeError) and wording, then the reason
    with pytest.raises(RuntimeError, match=r"^Error calling function 'apply', no overload "
                                           r"found for arguments \(<function .*plain.*, "
                                           r"3\.0\): argument 'g' must be a @kc.func"):
        apply(plain, 3.0)


@pytest.mark.parametrize("body, message", [
    ("a[0] = apply(kc.printf, 0.5)", "unsupported built-in function 'printf'"),
    ("a[0] = apply(lambda v: v, 0.5)", "'lambda' is not supported"),
    ("a[0] = apply(kc.Kernel, 0.5)", "cannot be used as a value"),
    ("a[0] = apply(a[1], 0.5)", "expects a kc.Function"),
    ("a[0] = double_it(double_it)", "expects float32, got Function"),
    ("a[0] = apply(k, 0.5)", "cannot be passed to a func"),
])
def test_bad_function_arguments(tmp_path, body, message):
    k = kernel_in_file(tmp_path, "bad_function_arg", "a: kc.array(dtype=float)", body,
                       "from tests.test_func_values import apply, double_it, pick")
    with pytest.raises(kc.KernelError, match=message) as err:
        kc.launch(k, 1, [kc.zeros(2, dtype=float)])
    assert "bad_function_arg.py:7:" in str(err.value) and "^" in str(err.value)


@kc.func
def apply_as_int(g: kc.Function, x: float) -> int:
    return g(x)  # g returns a float: not what the annotation says


def test_return_annotation_mismatch_is_reported(tmp_path):
    k = kernel_in_file(tmp_path, "bad_return_annotation", "a: kc.array(dtype=float)",
                       "a[0] = float(apply_as_int(double_it, 2.0))",
                       "from tests.test_func_values import apply_as_int, double_it")
    out = poisoned(1, np.float32)
    with pytest.raises(kc.WarpCodegenError, match=r"The function `apply_as_int` has its "
                                                  r"return type annotated as `int` but the "
                                                  r"code returns a value of type `float32`\.") \
            as err:
        kc.launch(k, 1, [out])
    assert "test_func_values.py:" in str(err.value) and "^" in str(err.value)
    assert np.isnan(out.numpy()[0])


@kc.func
def apply_with_custom_grad(g: kc.Function, x: float):
    return g(x)


@kc.func_grad(apply_with_custom_grad)
def adj_apply_with_custom_grad(g: kc.Function, x: float, adj_ret: float):
    kc.adjoint[x] += adj_ret


@kc.kernel
def custom_grad_with_function(a: kc.array(dtype=float)):
    a[0] = apply_with_custom_grad(double_it, a[0])


def test_function_parameters_refuse_custom_gradients():
    with pytest.raises(kc.KernelError, match="cannot be combined with custom gradients"):
        kc.launch(custom_grad_with_function, 1, [kc.zeros(1, dtype=float)])


def test_nvrtc_compiles_function_arguments():
    pytest.importorskip("cuda.bindings.nvrtc")
    assert kc.compile(use_function_values, target="cuda", arch=80).binary


PROGRAM = """
@wp.func
def halve(x: float):
    return x * 0.5


@wp.func
def apply(g: wp.Function, x: float):
    return g(x)


@wp.func
def apply_pair(g: wp.Function, x: float, y: float = 1.5):
    return g(x, y)


@wp.kernel
def k(x: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    out[0, i] = apply(halve, x[i])
    out[1, i] = apply(wp.exp, x[i])
    out[2, i] = apply_pair(wp.max, x[i])
    out[3, i] = apply_pair(g=wp.atan2, x=x[i], y=0.25)
"""


def test_matches_warp(tmp_path):
    x_np = nonzero(np.random.default_rng(3), 24, np.float32, -2.0, 2.0)
    script = PROGRAM + """
out = wp.zeros((4, 24), dtype=float)
wp.launch(k, 24, [wp.array(inputs["x"], dtype=float), out])
results["out"] = out.numpy()
"""
    warp = run_warp(script, tmp_path, x=x_np)
    path = tmp_path / "function_program.py"
    path.write_text("import kernelc as wp\n" + PROGRAM)
    spec = importlib.util.spec_from_file_location("function_program", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = poisoned((4, 24), np.float32)
    kc.launch(module.k, 24, [kc.array(x_np), out])
    np.testing.assert_array_equal(out.numpy(), warp["out"])
