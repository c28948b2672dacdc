"""Kernel-language forms Warp programs use: bitwise operators on integer vectors and matrices,
casting constructors `vector(v, dtype=)` / `matrix(m, dtype=)`, empty matrix slices, enum
members' `.value`, locals bound once to a literal, and the errors for slice assignments of
the wrong type and for kernels that declare a return value. Results against NumPy on random
non-zero data, outputs poisoned first; the bitwise kernel also runs as CUDA-C on the host.
"""

from __future__ import annotations

import enum
import shutil
import typing

import numpy as np
import pytest

import kernelc as kc
from kernelc.errors import KernelError, WarpCodegenTypeError, WarpCodegenValueError
from tests.conftest import poisoned

RNG = np.random.default_rng(77)
vec3ui = kc.types.vector(3, kc.uint32)
mat22i = kc.types.matrix((2, 2), kc.int32)


# ---- bitwise operators on integer vectors and matrices --------------------------------------


@kc.kernel
def bitwise_vectors(a: kc.array(dtype=typing.Any), b: kc.array(dtype=typing.Any),
                    shift: kc.array(dtype=typing.Any), out: kc.array(dtype=typing.Any, ndim=2)):
    i = kc.tid()
    out[i, 0] = a[i] & b[i]
    out[i, 1] = a[i] | b[i]
    out[i, 2] = a[i] ^ b[i]
    out[i, 3] = a[i] << shift[i]
    out[i, 4] = a[i] >> shift[i]
    out[i, 5] = ~a[i]


def _bitwise_reference(a, b, s):
    return np.stack([a & b, a | b, a ^ b, a << s, a >> s, ~a], axis=1)


@pytest.mark.parametrize("t, np_dtype, shape", [(vec3ui, np.uint32, (3,)),
                                                 (mat22i, np.int32, (2, 2))], ids=["vec", "mat"])
def test_bitwise_operators_on_integer_composites(t, np_dtype, shape):
    n = 64
    info = np.iinfo(np_dtype)
    a = RNG.integers(info.min, info.max, (n, *shape), dtype=np_dtype, endpoint=True)
    b = RNG.integers(info.min, info.max, (n, *shape), dtype=np_dtype, endpoint=True)
    s = RNG.integers(1, 31, (n, *shape)).astype(np_dtype)
    out = kc.array(np.full((n, 6, *shape), 0x5A, np_dtype), dtype=t)
    kc.launch(bitwise_vectors, n, inputs=[kc.array(a, dtype=t), kc.array(b, dtype=t),
                                          kc.array(s, dtype=t), out])
    np.testing.assert_array_equal(out.numpy(), _bitwise_reference(a, b, s))


def test_bitwise_operators_refuse_floats_and_mixed_types():
    @kc.kernel
    def float_and(a: kc.array(dtype=kc.vec3)):
        a[0] = a[0] & a[1]

    with pytest.raises(KernelError, match="operator '&'.*integer"):
        kc.launch(float_and, 1, inputs=[kc.zeros(2, dtype=kc.vec3)])


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_bitwise_operators_in_cuda_c():
    import cuda_harness  # tests/ is on the path (conftest)

    from kernelc.codegen.cuda import CudaOptions, emit_cuda
    from kernelc.codegen.cuda_layout import ArrayArg

    types = (kc.types.ArrayType(vec3ui, 1),) * 3 + (kc.types.ArrayType(vec3ui, 2),)
    kernel = cuda_harness.build(emit_cuda(bitwise_vectors.get_ir(types), CudaOptions()))
    n = 16
    a = RNG.integers(0, 2**32, (n, 3), dtype=np.uint32)
    b = RNG.integers(0, 2**32, (n, 3), dtype=np.uint32)
    s = RNG.integers(1, 31, (n, 3)).astype(np.uint32)
    out = np.full((n, 6, 3), 0x5A, np.uint32)
    args = [ArrayArg(x.ctypes.data, x.shape[:1], x.strides[:1]) for x in (a, b, s)]
    args.append(ArrayArg(out.ctypes.data, out.shape[:2], out.strides[:2]))
    assert kernel.launch(n, args, block_dim=8, max_blocks=2) is None
    np.testing.assert_array_equal(out, _bitwise_reference(a, b, s))


# ---- casting constructors, empty slices, enums --------------------------------------------


@kc.kernel
def casts(a: kc.array(dtype=kc.vec3), m: kc.array(dtype=kc.mat22),
          v_out: kc.array(dtype=kc.vec3d), m_out: kc.array(dtype=kc.mat22h)):
    i = kc.tid()
    v_out[i] = kc.types.vector(a[i], dtype=kc.float64)
    m_out[i] = kc.types.matrix(m[i], dtype=kc.float16)


def test_vector_and_matrix_casting_constructors():
    n = 8
    a = RNG.uniform(-3, 3, (n, 3)).astype(np.float32)
    m = RNG.uniform(-3, 3, (n, 2, 2)).astype(np.float32)
    v_out = kc.array(np.full((n, 3), np.nan), dtype=kc.vec3d)
    m_out = kc.array(np.full((n, 2, 2), np.nan, np.float16), dtype=kc.mat22h)
    kc.launch(casts, n, inputs=[kc.array(a, dtype=kc.vec3), kc.array(m, dtype=kc.mat22),
                                v_out, m_out])
    np.testing.assert_array_equal(v_out.numpy(), a.astype(np.float64))
    np.testing.assert_array_equal(m_out.numpy(), m.astype(np.float16))


class Mode(enum.IntEnum):
    A = 1
    B = 2


mat00 = kc.types.matrix((0, 0), float)


@kc.kernel
def enums_and_empty_slices(out: kc.array(dtype=int)):
    m = kc.mat44(1.0)
    out[0] = Mode.B.value + int(Mode.A)
    out[1] = int(m[123:] == mat00()) + int(m[1:1, 2:] == mat00())


def test_enum_value_and_empty_matrix_slices():
    out = poisoned(2, np.int32)
    kc.launch(enums_and_empty_slices, 1, outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [3, 2])


# ---- locals bound once to a literal --------------------------------------------------------


@kc.kernel
def literal_locals(a: kc.array(dtype=kc.float64), v: kc.array(dtype=kc.vec3),
                   out: kc.array(dtype=kc.float64), counts: kc.array(dtype=int)):
    x = 0.1  # bound once: a literal wherever it is used
    n = 2
    out[0] = kc.float64(x)
    out[1] = x * a[0]
    part = v[0][0:n]
    counts[0] = n
    counts[1] = int(part[1])
    y = 0.5  # bound twice: a float32 variable
    y = y + 0.25
    out[2] = kc.float64(y)


def test_locals_bound_once_to_a_literal_stay_literals():
    a = float(RNG.uniform(1.0, 2.0))
    out, counts = poisoned(3, np.float64), poisoned(2, np.int32)
    kc.launch(literal_locals, 1, inputs=[kc.array([a], dtype=kc.float64),
                                         kc.array([[4.0, 5.0, 6.0]], dtype=kc.vec3)],
              outputs=[out, counts])
    np.testing.assert_array_equal(out.numpy(), [0.1, 0.1 * a, 0.75])
    np.testing.assert_array_equal(counts.numpy(), [2, 5])


@kc.kernel
def literal_written_back(q: kc.array(dtype=kc.quat), out: kc.array(dtype=float)):
    angle = 0.0  # bound once, but written by the call: a variable
    axis = kc.vec3()
    kc.quat_to_axis_angle(q[0], axis, angle)
    out[0] = angle


def test_a_literal_local_written_by_a_call_is_a_variable():
    theta = float(RNG.uniform(0.2, 1.2))
    q = kc.quat_from_axis_angle(kc.vec3(0.0, 0.0, 1.0), theta)
    out = poisoned(1, np.float32)
    kc.launch(literal_written_back, 1, inputs=[kc.array([q], dtype=kc.quat)], outputs=[out])
    np.testing.assert_allclose(out.numpy(), [theta], rtol=1e-5)


# ---- errors -----------------------------------------------------------------------------------


def test_slice_assignment_of_the_wrong_type_is_a_value_error():
    @kc.kernel
    def bad_slice(out: kc.array(dtype=kc.vec4)):
        v = kc.vec4(1.0, 2.0, 3.0, 4.0)
        v[1:] = kc.vec3d(5.0, 6.0, 7.0)
        out[0] = v

    with pytest.raises(WarpCodegenValueError) as info:
        kc.launch(bad_slice, 1, inputs=[kc.zeros(1, dtype=kc.vec4)])
    assert isinstance(info.value, ValueError)
    assert "test_lang_compat_kernels.py:183:9" in str(info.value)
    assert "expected a vec3" in str(info.value)


def test_kernel_with_a_return_annotation_is_refused():
    @kc.kernel
    def annotated(x: float) -> float:
        return

    with pytest.raises(WarpCodegenTypeError, match="cannot return a value") as info:
        kc.launch(annotated, 1, inputs=[1.0])
    assert "test_lang_compat_kernels.py:195:32" in str(info.value)


# ---- literals passed on ------------------------------------------------------------------------


@kc.func
def twice_of(v: float) -> float:
    return 2.0 * v


@kc.kernel
def literal_passed_on(a: kc.array(dtype=float), out: kc.array(dtype=kc.float64),
                      counts: kc.array(dtype=int)):
    x = 0.1  # passed to a func (a copy) and to tile operations: still a literal
    n = 3
    t = kc.tile_arange(n, dtype=float)
    kc.tile_store(a, t)
    kc.tile_store(a, kc.tile_load(a, shape=n))
    out[0] = kc.float64(twice_of(x))
    out[1] = kc.float64(x)
    part = kc.vec4(1.0, 2.0, 3.0, 4.0)[0:n]  # a slice bound: a constant
    counts[0] = int(part[2])
    counts[1] = n


def test_literals_passed_to_funcs_and_tile_operations_stay_literals():
    a, out, counts = poisoned(3, np.float32), poisoned(2, np.float64), poisoned(2, np.int32)
    kc.launch(literal_passed_on, 1, inputs=[a], outputs=[out, counts])
    np.testing.assert_array_equal(a.numpy(), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(out.numpy(), [np.float32(0.2), 0.1])
    np.testing.assert_array_equal(counts.numpy(), [3, 3])
