"""Generic kernels and funcs (typing.Any), kc.overload, func overloads, and the errors of
misused vectors, matrices and structs pinned to file:line:col."""

from __future__ import annotations

import typing

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import assert_compile_error_at

Any = typing.Any


@kc.kernel
def scale(a: kc.array(dtype=Any), s: Any):
    i = kc.tid()
    a[i] = a[i] * s


@pytest.mark.parametrize("dtype,np_dtype,s", [
    (kc.float32, np.float32, 2.0), (kc.float64, np.float64, kc.float64(2.0)),
    (kc.int32, np.int32, 2), (kc.vec3, np.float32, 2.0), (kc.mat22d, np.float64,
                                                          kc.float64(2.0))])
def test_generic_kernel_specialises_per_dtype(dtype, np_dtype, s):
    data = (np.arange(12) % 5 + 1).astype(np_dtype)
    a = kc.array(data.reshape((-1,) + kc.zeros(1, dtype=dtype).numpy().shape[1:]), dtype=dtype)
    before = a.numpy().copy()
    kc.launch(scale, a.shape[0], inputs=[a, s])
    np.testing.assert_array_equal(a.numpy(), before * 2)


def test_one_specialisation_per_argument_types():
    @kc.kernel
    def add_one(a: kc.array(dtype=Any)):
        i = kc.tid()
        a[i] = a[i] + a[i]

    for _ in range(3):
        for dtype in (kc.float32, kc.float64, kc.vec2):
            kc.launch(add_one, 2, inputs=[kc.ones(2, dtype=dtype)])
    assert len(add_one._ir) == 3


def test_overload_declares_specialisations():
    @kc.kernel
    def axpy(x: kc.array(dtype=Any), y: kc.array(dtype=Any), a: Any):
        i = kc.tid()
        y[i] = a * x[i] + y[i]

    kc.overload(axpy, [kc.array(dtype=kc.float64), kc.array(dtype=kc.float64), kc.float64])
    kc.overload(axpy, {"x": kc.array(dtype=kc.vec3), "y": kc.array(dtype=kc.vec3), "a": float})
    assert len(axpy._ir) == 2
    with pytest.raises(kc.KernelError, match="parameter 'a' needs a concrete type"):
        kc.overload(axpy, [kc.array(dtype=float), kc.array(dtype=float), None])
    y = kc.ones(3, dtype=kc.vec3)
    kc.launch(axpy, 3, inputs=[kc.ones(3, dtype=kc.vec3), y, 2.0])
    assert (y.numpy() == 3).all()


@kc.kernel
def stub_target(a: kc.array(dtype=Any)):
    a[0] = a[0] + a[0]


@kc.overload
def stub_target(a: kc.array(dtype=kc.float16)):  # noqa: F811
    ...


def test_overload_as_decorator_on_a_stub():
    assert isinstance(stub_target, kc.kernel(lambda: None).__class__)
    assert len(stub_target._ir) == 1


@kc.func
def describe(x: float) -> float:
    return x + 1.0


@kc.func
def describe(x: kc.vec3) -> float:  # noqa: F811
    return x[0] + 10.0


@kc.func
def describe(x: kc.float64) -> float:  # noqa: F811
    return float(x) + 100.0


@kc.func
def twice(x: Any):
    return x + x


def test_func_overloads_resolve_by_argument_types():
    @kc.kernel
    def k(out: kc.array(dtype=float)):
        out[0] = describe(1.0)
        out[1] = describe(kc.vec3(1.0))
        out[2] = describe(kc.float64(1.0))
        out[3] = twice(kc.vec2(1.0, 2.0))[1] + twice(3.0)

    out = kc.zeros(4)
    kc.launch(k, 1, inputs=[out])
    assert out.numpy().tolist() == [2.0, 11.0, 101.0, 10.0]


# ---- errors pinned to file:line:col --------------------------------------------------------


@kc.kernel
def e_add_sizes(out: kc.array(dtype=kc.vec3)):
    out[0] = kc.vec3(1.0) + kc.vec4(1.0)  # E


@kc.kernel
def e_mat_vec(out: kc.array(dtype=kc.vec3)):
    out[0] = kc.mat33(1.0) * kc.vec4(1.0)  # E


@kc.kernel
def e_cross2(out: kc.array(dtype=float)):
    out[0] = kc.cross(kc.vec2(1.0), kc.vec2(2.0))[0]  # E


@kc.kernel
def e_attribute(out: kc.array(dtype=float)):
    v = kc.vec2(1.0, 2.0)
    out[0] = v.z  # E


@kc.kernel
def e_index(out: kc.array(dtype=float)):
    v = kc.vec3(1.0, 2.0, 3.0)
    out[0] = v[3]  # E


@kc.kernel
def e_vec_times_vec(out: kc.array(dtype=kc.vec3)):
    out[0] = kc.vec3(1.0) * kc.vec3(2.0)  # E


@kc.kernel
def e_components(out: kc.array(dtype=kc.vec3)):
    out[0] = kc.vec3(1.0, 2.0)  # E


@kc.kernel
def e_matrix_from_vectors(out: kc.array(dtype=kc.mat22)):
    out[0] = kc.mat22(kc.vec2(1.0), kc.vec2(2.0))  # E


@kc.kernel
def e_write_index(out: kc.array(dtype=kc.mat22)):
    m = kc.mat22(1.0)
    m[2, 0] = 1.0  # E
    out[0] = m


ERROR_CASES = [
    (e_add_sizes, "kc.vec3(1.0) + kc.vec4(1.0)", r"operator '\+'.*vec3 and vec4"),
    (e_mat_vec, "kc.mat33(1.0) * kc.vec4(1.0)", r"cannot multiply mat33 and vec4"),
    (e_cross2, "kc.cross(", r"cross\(\) needs 3-component vectors"),
    (e_attribute, "v.z", r"vec2 has no attribute 'z'"),
    (e_index, "v[3]", r"index 3 out of range"),
    (e_vec_times_vec, "kc.vec3(1.0) * kc.vec3(2.0)", r"use dot, cw_mul or outer"),
    (e_components, "kc.vec3(1.0, 2.0)", r"takes 3 components"),
    (e_matrix_from_vectors, "kc.mat22(", r"matrix_from_rows"),
    (e_write_index, "m[2, 0]", r"row index 2 out of range"),
]


@pytest.mark.parametrize("kernel,at,message", ERROR_CASES, ids=[c[0].__name__ for c in ERROR_CASES])
def test_misuse_is_a_kernel_error_at_the_right_column(kernel, at, message):
    assert_compile_error_at(kernel, at, message)


@kc.kernel
def scale_by_literal(a: kc.array(dtype=Any), out: kc.array(dtype=Any)):
    i = kc.tid()
    out[i] = a[i] * a.dtype(2.5) + out.dtype(1)


def test_array_dtype_converts_in_generic_kernels(rng):
    for dtype in (kc.float32, kc.float64, kc.int32):
        data = rng.uniform(1, 9, 5).astype(kc.types.dtype_to_numpy(dtype))
        a = kc.array(data, dtype=dtype)
        out = kc.full(5, 77, dtype=dtype)
        kc.launch(scale_by_literal, 5, [a, out])
        if dtype == kc.int32:  # int32(2.5) truncates to 2
            np.testing.assert_array_equal(out.numpy(), data * 2 + 1)
        else:
            np.testing.assert_allclose(out.numpy(), data * 2.5 + 1, rtol=1e-6)
