"""Mistakes in kernels and launches: each a KernelError pinned to file:line:col with a caret,
raised before anything compiles; debug-mode bounds errors at run time."""

from __future__ import annotations

import inspect
import math
import re
import typing

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import poisoned


@kc.kernel
def helper_kernel(a: kc.array(dtype=float)):
    a[0] = 1.0


@kc.func
def takes_float(x: float) -> float:
    return x


@kc.func
def pair() -> tuple[int, int]:
    return 1, 2


@kc.func
def loops_forever(n: int) -> int:
    return loops_forever(n)  # E


@kc.func
def falls_out_after_break(n: int) -> int:  # E
    while True:
        if n > 3:
            break
        return n


# Each kernel below holds one mistake on the line marked `# E`; CASES names the text the
# reported column points at and a pattern of the message.


@kc.kernel
def e_with(a: kc.array(dtype=float)):
    with open("x"):  # E
        pass


@kc.kernel
def e_try(a: kc.array(dtype=float)):
    try:  # E
        a[0] = 1.0
    except Exception:
        pass


@kc.kernel
def e_lambda(a: kc.array(dtype=float)):
    f = lambda x: x  # E  # noqa: E731, F841


@kc.kernel
def e_list(a: kc.array(dtype=float)):
    x = [1, 2]  # E  # noqa: F841


@kc.kernel
def e_dict(a: kc.array(dtype=float)):
    x = {1: 2}  # E  # noqa: F841


@kc.kernel
def e_listcomp(a: kc.array(dtype=float)):
    x = [i for i in range(3)]  # E  # noqa: F841


@kc.kernel
def e_fstring(a: kc.array(dtype=float)):
    print(f"{a[0]}")  # E


@kc.kernel
def e_nested_def(a: kc.array(dtype=float)):
    def inner():  # E
        pass


@kc.kernel
def e_import(a: kc.array(dtype=float)):
    import math  # E  # noqa: F401


@kc.kernel
def e_slice(a: kc.array(dtype=float)):
    b = kc.vec3(1.0)[1:len(a)]  # E  # noqa: F841


@kc.kernel
def e_undefined(a: kc.array(dtype=float)):
    a[0] = not_defined_anywhere  # E  # noqa: F821


@kc.kernel
def e_mixed_types(a: kc.array(dtype=float), n: int):
    a[0] = a[0] + n  # E


@kc.kernel
def e_retype(a: kc.array(dtype=float)):
    x = 1
    x = a[0]  # E  # noqa: F841


@kc.kernel
def e_arity(a: kc.array(dtype=float)):
    a[0] = kc.sin(a[0], a[1])  # E


@kc.kernel
def e_arg_type(a: kc.array(dtype=float), n: int):
    a[0] = kc.sqrt(n)  # E


@kc.kernel
def e_call_kernel(a: kc.array(dtype=float)):
    helper_kernel(a)  # E


@kc.kernel
def e_recursion(a: kc.array(dtype=int)):
    a[0] = loops_forever(3)  # E


@kc.kernel
def e_no_return_after_break(a: kc.array(dtype=int)):
    a[0] = falls_out_after_break(a[1])


@kc.kernel
def e_return_value(a: kc.array(dtype=float)):
    return a[0]  # E


@kc.kernel
def e_keyword(a: kc.array(dtype=float)):
    a[0] = kc.sin(y=a[0])  # E  (Warp's keyword is x)


@kc.kernel
def e_set(a: kc.array(dtype=float)):
    x = {1, 2}  # E  # noqa: F841


@kc.kernel
def e_range_float(a: kc.array(dtype=float)):
    for i in range(a[0]):  # E  # noqa: B007
        pass


@kc.kernel
def e_unpack(a: kc.array(dtype=int)):
    x, y, z = pair()  # E


@kc.kernel
def e_index_scalar(a: kc.array(dtype=float), n: int):
    a[0] = n[0]  # E


@kc.kernel
def e_too_many_indices(a: kc.array(dtype=float)):
    a[0] = a[0, 1]  # E


@kc.kernel
def e_store_float64(a: kc.array(dtype=float), b: kc.array(dtype=kc.float64)):
    a[0] = b[0]  # E


@kc.kernel
def e_unknown_attribute(a: kc.array(dtype=float)):
    a[0] = kc.no_such_builtin(a[0])  # E


@kc.kernel
def e_func_arg_type(a: kc.array(dtype=float), b: kc.array(dtype=kc.float64)):
    a[0] = takes_float(b[0])  # E


@kc.kernel
def e_int_pow(a: kc.array(dtype=int)):
    a[0] = a[0] ** a[1]  # E


@kc.kernel
def e_float_bitand(a: kc.array(dtype=float)):
    a[0] = a[0] & a[1]  # E


@kc.kernel
def e_invert_float(a: kc.array(dtype=float)):
    a[0] = ~a[0]  # E


@kc.kernel
def e_loop_tuple(a: kc.array(dtype=float)):
    for x in (1, 2):  # E  # noqa: B007
        pass


@kc.kernel
def e_is(a: kc.array(dtype=float)):
    if a[0] is a[1]:  # E
        pass


@kc.kernel
def e_while_else(a: kc.array(dtype=float)):
    while a[0] > 0.0:  # E
        pass
    else:
        pass


@kc.kernel
def e_global(a: kc.array(dtype=float)):
    global SOMETHING  # E


@kc.kernel
def e_tid_five(a: kc.array(dtype=float)):
    i, j, k, m, n = kc.tid()  # E


@kc.kernel
def e_range_step_zero(a: kc.array(dtype=float)):
    for i in range(0, 4, 0):  # E  # noqa: B007
        pass


@kc.kernel
def e_raise(a: kc.array(dtype=float)):
    raise ValueError("no")  # E


@kc.kernel
def e_walrus(a: kc.array(dtype=float)):
    if (x := a[0]) > 0.0:  # E  # noqa: F841
        pass


@kc.kernel
def e_attr_of_value(a: kc.array(dtype=float)):
    a[0] = a[0].real  # E


@kc.kernel
def e_starred(a: kc.array(dtype=float)):
    a[0] = kc.max(*a)  # E


@kc.kernel
def e_rebind_func(a: kc.array(dtype=float)):
    f = kc.sin
    if a[0] > 0.0:
        f = kc.cos  # E
    a[1] = f(a[0])


@kc.kernel
def e_rebind_tuple(a: kc.array(dtype=float)):
    best = (a[0], 0)
    for i in range(3):
        best = (a[i], i)  # E
    a[1] = best[0]


GLOBAL_ARRAY = kc.array([1.0, 2.0], dtype=float)


@kc.kernel
def e_global_array(a: kc.array(dtype=float)):
    a[0] = GLOBAL_ARRAY[1]  # E


@kc.kernel
def e_array_from_ptr(a: kc.array(dtype=float), p: kc.float32):
    b = kc.array(ptr=p, shape=(2,), dtype=float)  # E
    b[0] = a[0]


CASES = [
    (e_with, "with open", "'with' is not supported"),
    (e_try, "try:", "'try' is not supported"),
    (e_lambda, "lambda", "'lambda' is not supported"),
    (e_list, "[1, 2]", "a list is not supported"),
    (e_dict, "{1: 2}", "a dict is not supported"),
    (e_listcomp, "[i for", "list comprehension is not supported"),
    (e_fstring, 'f"', "f-string is not supported"),
    (e_nested_def, "def inner", "nested function is not supported"),
    (e_import, "import math", "'import' is not supported"),
    (e_slice, "len(a)", "slice bound of a vector or matrix must be a constant integer"),
    (e_undefined, "not_defined_anywhere", "name 'not_defined_anywhere' is not defined"),
    (e_mixed_types, "a[0] + n", r"different types \(float32 and int32\)"),
    (e_retype, "x = a[0]", "changes the type of 'x'"),
    (e_arity, "kc.sin(", r"sin\(\) takes 1 argument \(2 given\)"),
    (e_arg_type, "kc.sqrt(", r"sqrt\(\): expected a float, got int32"),
    (e_call_kernel, "helper_kernel(", "kernels cannot call other kernels"),
    (e_recursion, "loops_forever(n)", "recursion is not supported", loops_forever),
    (e_return_value, "return", "kernels cannot return a value"),
    (e_no_return_after_break, "def", "can reach its end without returning",
     falls_out_after_break),
    (e_keyword, "kc.sin(", "sin\\(\\) got an unexpected keyword argument 'y'"),
    (e_set, "{1, 2}", "a set is not supported"),
    (e_range_float, "for i", r"range\(\) needs integers, got float32"),
    (e_unpack, "x, y, z", "cannot unpack 2 values into 3 targets"),
    (e_index_scalar, "n[0]", "cannot be indexed"),
    (e_too_many_indices, "a[0, 1]", r"too many indices \(2\) for a 1-d array"),
    (e_store_float64, "a[0] = b[0]", "cannot store a float64 value in an array of float32"),
    (e_unknown_attribute, "kc.no_such_builtin", "has no attribute 'no_such_builtin'"),
    (e_func_arg_type, "takes_float(", "argument 'x' of 'takes_float' expects float32, got float64"),
    (e_int_pow, "a[0] ** a[1]", r"'\*\*' needs float operands"),
    (e_float_bitand, "a[0] & a[1]", "'&' needs integers"),
    (e_invert_float, "~a[0]", "'~' needs an integer"),
    (e_loop_tuple, "for x", r"can only loop over range\(...\)"),
    (e_is, "a[0] is a[1]", "comparison 'Is' is not supported"),
    (e_while_else, "while", "while ... else is not supported"),
    (e_global, "global", "'global' is not supported"),
    (e_tid_five, "i, j, k, m, n", "tid"),
    (e_range_step_zero, "for i", "step must not be zero"),
    (e_raise, "raise", "'raise' is not supported"),
    (e_walrus, "x := a[0]", "':=' is not supported"),
    (e_attr_of_value, "a[0].real", "has no attribute 'real'"),
    (e_starred, "*a", "Starred expressions are only supported for"),
    (e_rebind_func, "f = kc.cos", "'f' names the function 'sin', bound outside this branch"),
    (e_rebind_tuple, "best = (a[i]", "'best' is a tuple bound outside this branch or loop"),
    (e_global_array, "GLOBAL_ARRAY", "'GLOBAL_ARRAY' is an array from outside the kernel"),
    (e_array_from_ptr, "kc.array(ptr", "ptr= is an address"),
]


def expected_position(fn, at: str) -> tuple[str, int, int]:
    """The file, line and 1-based column of `at` on the line of `fn` marked `# E`."""
    lines, first = inspect.getsourcelines(fn.func)
    offset = next(k for k, text in enumerate(lines) if "# E" in text)
    text = lines[offset]
    return inspect.getsourcefile(fn.func), first + offset, text.index(at) + 1


@pytest.mark.parametrize("case", CASES, ids=[c[0].__name__ for c in CASES])
def test_compile_error_position(case):
    kernel, at, message = case[:3]
    where = case[3] if len(case) > 3 else kernel  # the mistake may sit in a func it calls
    with pytest.raises(kc.KernelError) as info:
        kc.compile(kernel)
    err = info.value
    assert isinstance(err, TypeError)
    text = str(err)
    file, line, col = expected_position(where, at)
    assert f"{file}:{line}:{col}:" in text, text
    assert f"in kernel '{kernel.__name__}'" in text
    assert re.search(message, text), text
    source_line, caret_line = text.splitlines()[-2:]
    lines, first = inspect.getsourcelines(where.func)
    assert source_line.strip() == lines[line - first].strip()
    assert caret_line.index("^") - 4 == col - 1  # the caret sits under the column
    assert not kernel.compiled


def test_there_are_at_least_30_distinct_compile_mistakes():
    assert len({c[2] for c in CASES}) >= 30


# ---- annotations ---------------------------------------------------------------------------


def test_missing_annotation_points_at_the_parameter():
    @kc.kernel
    def no_annotation(a: kc.array(dtype=float), n):
        a[0] = 1.0

    with pytest.raises(kc.KernelError, match="parameter 'n' needs a type annotation") as info:
        kc.launch(no_annotation, 1, inputs=[kc.zeros(1, dtype=float), 1])
    lines, first = inspect.getsourcelines(no_annotation.func)
    assert f":{first + 1}:{lines[1].index('n)') + 1}:" in str(info.value)


def test_non_kernelc_annotation():
    @kc.kernel
    def bad_annotation(a: kc.array(dtype=float), s: str):
        a[0] = 1.0

    with pytest.raises(kc.KernelError, match="parameter 's' is not a kernelc type") as info:
        kc.launch(bad_annotation, 1, inputs=[kc.zeros(1, dtype=float), "x"])
    lines, first = inspect.getsourcelines(bad_annotation.func)
    assert f":{first + 1}:{lines[1].index('s: str') + 1}:" in str(info.value)


# ---- bad launches: checked before any compile ---------------------------------------------


@kc.kernel
def target(a: kc.array(dtype=float), m: kc.array2d(dtype=int), n: int):
    a[kc.tid()] = float(n)


def _good():
    return [kc.zeros(4, dtype=float), kc.zeros((2, 2), dtype=int), 3]


LAUNCH_CASES = [
    ("too few arguments", 4, lambda g: g[:2], None, r"takes 3 arguments \(a, m, n\), 2 given"),
    ("too many arguments", 4, lambda g: g + [1], None, "3 arguments"),
    ("wrong dtype", 4, lambda g: [kc.zeros(4, dtype=kc.float64), g[1], g[2]], "a",
     "expected an array of float32, got an array of float64"),
    ("wrong ndim", 4, lambda g: [g[0], kc.zeros(4, dtype=int), g[2]], "m",
     "expected a 2-d array, got a 1-d array"),
    ("numpy array of another dtype", 4, lambda g: [np.zeros(4, np.float64), g[1], g[2]], "a",
     "expected an array of float32, got a NumPy array of float64"),
    ("numpy array of another ndim", 4, lambda g: [g[0], np.zeros(4, np.int32), g[2]], "m",
     "expected a 2-d array, got a 1-d NumPy array"),
    ("float for int", 4, lambda g: [g[0], g[1], 2.5], "n", "expected int32, got float"),
    ("string for int", 4, lambda g: [g[0], g[1], "3"], "n", "expected int32, got str"),
    ("negative dim", -1, lambda g: g, None, "must not be negative"),
    ("five dims", (1, 1, 1, 1, 1), lambda g: g, None, "1 to 4 dimensions"),
    ("float dim", 2.0, lambda g: g, None, "an int or a tuple of ints"),
    ("tuple with float", (2, 1.5), lambda g: g, None, "an int or a tuple of ints"),
]


@pytest.mark.parametrize("what,dim,args,param,message", LAUNCH_CASES,
                         ids=[c[0] for c in LAUNCH_CASES])
def test_bad_launch_raises_before_compiling(what, dim, args, param, message):
    with pytest.raises(kc.KernelError, match=message) as info:
        kc.launch(target, dim, inputs=args(_good()))
    text = str(info.value)
    assert "target" in text
    if param is not None:
        assert f"argument '{param}'" in text
        lines, first = inspect.getsourcelines(target.func)
        assert f":{first + 1}:{lines[1].index(param + ':') + 1}:" in text
    assert not target.compiled


def test_array_on_another_device():
    if not kc.is_cuda_available():
        pytest.skip("needs a CUDA device")
    args = _good()
    args[0] = kc.zeros(4, dtype=float, device="cuda")
    with pytest.raises(kc.KernelError, match="device"):
        kc.launch(target, 4, inputs=args, device="cpu")
    assert not target.compiled


# ---- run-time errors in debug mode -----------------------------------------------------------


@kc.kernel
def oob_read(a: kc.array(dtype=float), o: kc.array(dtype=float)):
    i = kc.tid()
    o[i] = a[i + 2]


@kc.kernel
def oob_write(a: kc.array2d(dtype=float)):
    i = kc.tid()
    a[i, 3] = 1.0


@kc.kernel
def oob_atomic(a: kc.array(dtype=float)):
    kc.atomic_add(a, kc.tid() * 2, 1.0)


@kc.kernel
def oob_local(n: int, o: kc.array(dtype=float)):
    tmp = kc.zeros(shape=4, dtype=float)
    tmp[n] = 1.0
    o[0] = tmp[0]


def _line_of(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel.func)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("kernel,dim,args,source,what", [
    (oob_read, 4, lambda: [kc.zeros(4, dtype=float), kc.zeros(4, dtype=float)], "a[i + 2]",
     r"index \(4,\) out of bounds for shape \(4,\)"),
    (oob_write, 2, lambda: [kc.zeros((2, 3), dtype=float)], "a[i, 3] = 1.0",
     r"index \(0, 3\) out of bounds for shape \(2, 3\)"),
    (oob_atomic, 3, lambda: [kc.zeros(4, dtype=float)], "atomic_add",
     r"index \(4,\) out of bounds for shape \(4,\)"),
    (oob_local, 1, lambda: [5, kc.zeros(1, dtype=float)], "tmp[n] = 1.0",
     "local array index 5 out of bounds for length 4"),
], ids=["read", "write", "atomic", "local"])
def test_debug_mode_out_of_bounds(kernel, dim, args, source, what, debug_mode):
    with pytest.raises(kc.KernelRuntimeError, match=what) as info:
        kc.launch(kernel, dim, inputs=args())
    text = str(info.value)
    assert f"in kernel '{kernel.__name__}'" in text
    assert f":{_line_of(kernel, source)}:" in text and source in text


def test_release_mode_division_by_zero_and_overflow_do_not_crash():
    @kc.kernel
    def divide(a: kc.array(dtype=kc.int64), b: kc.array(dtype=kc.int64),
               o: kc.array(dtype=kc.int64)):
        i = kc.tid()
        o[i] = a[i] // b[i] + a[i] % b[i] + a[i] / b[i]

    lo = -(2**63)
    a = kc.array(np.array([7, lo, lo], np.int64), dtype=kc.int64)
    b = kc.array(np.array([0, -1, 0], np.int64), dtype=kc.int64)
    out = poisoned(3, np.int64)
    kc.launch(divide, 3, inputs=[a, b, out])
    assert out.numpy().tolist() == [0, 0, 0]  # MIN + 0 + MIN wraps to 0


def test_no_annotation_for_generic_func_argument_is_fine():
    @kc.func
    def ident(x: typing.Any):
        return x

    @kc.kernel
    def use(o: kc.array(dtype=float)):
        o[0] = ident(math.pi)

    o = poisoned(1, np.float32)
    kc.launch(use, 1, inputs=[o])
    assert o.numpy()[0] == np.float32(math.pi)
