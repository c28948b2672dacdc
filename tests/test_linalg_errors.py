"""Mistakes in calls of svd3, svd2, qr3, eig3 and intersect_tri_tri: each error points at
the offending argument and says what was expected."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import assert_compile_error_at


@kc.kernel
def e_expression(a: kc.array(dtype=kc.mat33), out: kc.array(dtype=kc.mat33)):
    s = kc.vec3()
    v = kc.mat33()
    kc.svd3(a[0], out[0], s, v)  # E


@kc.kernel
def e_undeclared(a: kc.array(dtype=kc.mat33)):
    q = kc.mat33()
    kc.qr3(a[0], q, R)  # E  # noqa: F821


@kc.kernel
def e_output_type(a: kc.array(dtype=kc.mat33)):
    u = kc.mat33()
    s = kc.vec3d()
    v = kc.mat33()
    kc.svd3(a[0], u, s, v)  # E


@kc.kernel
def e_input_type(a: kc.array(dtype=kc.mat44)):
    q, d = kc.eig3(a[0])  # E


@kc.kernel
def e_int_matrix(a: kc.array(dtype=kc.types.matrix((2, 2), kc.int32))):
    u, s, v = kc.svd2(a[0])  # E


@kc.kernel
def e_arity(a: kc.array(dtype=kc.mat33)):
    u = kc.mat33()
    kc.svd3(a[0], u)  # E


@kc.kernel
def e_tri_types(a: kc.array(dtype=kc.vec3), b: kc.array(dtype=kc.vec3d),
                out: kc.array(dtype=int)):
    out[0] = kc.intersect_tri_tri(a[0], a[1], a[2], b[0], b[1], b[2])  # E


ERROR_CASES = [
    (e_expression, "out[0]", r"svd3\(\) stores U into its argument in place: pass a variable"),
    (e_undeclared, "R)", r"'R', which is not a local variable; declare it first, e\.g\. R = "),
    (e_output_type, "s, v)", r"stores a vec3 into sigma, but 's' is a vec3d"),
    (e_input_type, "a[0]", r"eig3\(\) needs a 3x3 float matrix .*got mat44"),
    (e_int_matrix, "a[0]", r"svd2\(\) needs a 2x2 float matrix"),
    (e_arity, "kc.svd3(", r"svd3\(\) takes 1 or 4 arguments: svd3\(A\) or svd3\(A, U, sigma, V"),
    (e_tri_types, "kc.intersect_tri_tri(", r"no overload of func 'intersect_tri_tri'"),
]


@pytest.mark.parametrize("kernel, at, message", ERROR_CASES,
                         ids=[c[0].__name__ for c in ERROR_CASES])
def test_errors_point_at_the_argument(kernel, at, message):
    assert_compile_error_at(kernel, at, message)


def test_host_calls_explain_themselves():
    with pytest.raises(RuntimeError, match="compatible with the arguments 'ndarray'"):
        kc.svd3(np.eye(3))  # a plain NumPy array, not a kernelc matrix
