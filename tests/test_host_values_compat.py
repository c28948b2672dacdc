"""Host-side (Python scope) values and calls as Warp programs use them: scalar operators with
vectors, matrices and arrays, out-of-range integer scalars, the classes of host values
(`type(v)`), transform constructor errors, host calls of builtins and overloaded funcs, and
kernel names and overload stubs. Results against NumPy on random non-zero data.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from kernelc.errors import KernelError

RNG = np.random.default_rng(41)


# ---- scalar operators with composites and arrays --------------------------------------------


@pytest.mark.parametrize("dtype", [kc.float16, kc.float32, kc.float64, kc.int8, kc.uint16,
                                   kc.int64], ids=repr)
def test_kernelc_scalar_times_vector_is_a_vector(dtype):
    vec3 = kc.types.vector(3, dtype)
    data = RNG.integers(1, 9, 3)
    v, s = vec3(*data), dtype(2)
    for result in (s * v, v * s):
        assert type(result) is type(v)
        np.testing.assert_array_equal(np.asarray(result), (data * 2).astype(dtype.np_dtype))
    if dtype.is_float:
        np.testing.assert_allclose(np.asarray(dtype(24) / v), 24 / data, rtol=2e-3)


def test_kernelc_scalar_with_matrix_and_array():
    m = kc.mat22(*RNG.uniform(0.5, 2.0, 4))
    scaled = kc.float32(3) * m
    assert kc.types.types_equal(type(scaled), kc.mat22)
    np.testing.assert_allclose(np.asarray(scaled), 3 * np.asarray(m), rtol=1e-6)
    data = RNG.integers(1, 50, 8).astype(np.int16)
    a = kc.array(data, dtype=kc.int16)
    for result, want in ((kc.int16(5) + a, 5 + data), (kc.int16(5) - a, 5 - data),
                         (kc.int16(3) * a, 3 * data), (kc.int16(7) % a, 7 % data)):
        assert isinstance(result, kc.array)
        np.testing.assert_array_equal(result.numpy(), want.astype(np.int16))
    # NumPy's own scalars keep NumPy's meaning: an element-wise ndarray
    assert type(np.float32(2) * kc.vec3(1.0, 2.0, 3.0)) is np.ndarray


@pytest.mark.parametrize("dtype, value, want", [
    (kc.int8, 128, -128), (kc.uint8, -1, 255), (kc.uint8, 300, 44), (kc.int16, 32768, -32768),
    (kc.uint32, -2, 2**32 - 2), (kc.int64, 2**63, -(2**63)), (kc.uint64, -1, 2**64 - 1),
])
def test_out_of_range_int_scalars_wrap(dtype, value, want):
    x = dtype(value)
    assert int(x) == want and isinstance(x, dtype)
    assert kc.bit_count(x) == bin(want & ((1 << dtype.bits) - 1)).count("1")


@pytest.mark.parametrize("value", [kc.float32(1.0), kc.float64(2.0), True, kc.vec2i(1, 2)],
                         ids=lambda v: type(v).__name__)
def test_host_builtin_with_wrong_types_raises_runtime_and_type_error(value):
    with pytest.raises(RuntimeError, match="bit_count"):
        kc.bit_count(value)
    with pytest.raises(TypeError):
        kc.bit_count(value)


def test_host_operator_with_mismatched_dtypes_raises_runtime_error():
    with pytest.raises(RuntimeError, match="mat22 and mat22d"):
        kc.mat22f(1.0, 2.0, 3.0, 4.0) * kc.mat22d(1.0, 2.0, 3.0, 4.0)


# ---- classes of host values -----------------------------------------------------------------


def test_type_of_a_host_value_stands_for_its_kernelc_type():
    t, q = kc.transform_identity(), kc.quat_identity()
    assert kc.types.types_equal(type(t), kc.transformf)
    assert kc.types.types_equal(type(q), kc.quatf)
    assert type(t).__name__ == "transformf" and type(kc.vec3d(1.0)).__name__ == "vec3d"
    v = kc.vec3(*RNG.uniform(1, 2, 3))
    again = type(v)(4.0, 5.0, 6.0)  # `type(x)(...)` constructs, as Warp's classes do
    assert type(again) is type(v) and list(again) == [4.0, 5.0, 6.0]
    assert kc.types.type_is_vector(type(v)) and kc.types.type_size(type(v)) == 3
    # a row or a slice has the class of what it is
    row = kc.types.matrix((2, 3), kc.float32)(*range(1, 7))[1]
    assert kc.types.types_equal(type(row), kc.vec3) and list(row) == [4.0, 5.0, 6.0]
    assert kc.types.types_equal(type(v[1:]), kc.vec2)
    # transform_set_translation writes into the value itself
    kc.transform_set_translation(t, kc.vec3(1.0, 2.0, 3.0))
    assert list(t[:3]) == [1.0, 2.0, 3.0]


def test_empty_matrix_types_and_slices():
    mat00 = kc.types.matrix((0, 0), float)
    assert np.asarray(mat00()).shape == (0, 0)
    m = kc.mat44(*range(16))
    assert m[123:] == mat00() and m[:, 9:] == mat00()
    with pytest.raises(TypeError, match="non-negative"):
        kc.types.matrix((-1, 2), float)


# ---- transform constructors -----------------------------------------------------------------


@pytest.mark.parametrize("transform", [kc.transformh, kc.transformf, kc.transformd],
                         ids=repr)
def test_transform_constructor_errors_name_the_culprit(transform):
    comps = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    with pytest.raises(TypeError, match="expected a scalar value, got object"):
        transform(object())
    with pytest.raises(TypeError, match="^multiple values for argument 'q'$"):
        transform(*comps, q=(0.0, 0.0, 0.0, 1.0))
    with pytest.raises(TypeError, match="^got an unexpected keyword argument 'pos'$"):
        transform(*comps, pos=(1.0, 2.0, 3.0))
    with pytest.raises(TypeError, match="'q' in transformation constructor"):
        transform((1.0, 2.0, 3.0), 1.0)
    for fill in (np.float16(1.5), np.float64(1.5), kc.float32(1.5)):
        assert list(transform(fill)) == [1.5] * 7
    assert list(transform(p=(1.0, 2.0, 3.0), q=(4.0, 5.0, 6.0, 7.0))) == comps


# ---- funcs called on the host, kernel names, overload stubs ---------------------------------


@kc.func
def bump(x: int):
    return x + 1


@kc.func
def bump(x: float):  # noqa: F811  (an overload, as in Warp)
    return x + 1.0


@kc.func
def bump(x: kc.vec3):  # noqa: F811
    return x + kc.vec3(1.0, 0.0, 0.0)


def test_overloaded_func_called_on_the_host_picks_by_argument_type():
    assert bump(1) == 2 and isinstance(bump(1), int)
    assert bump(1.5) == 2.5
    v = kc.vec3(*RNG.uniform(1, 2, 3))
    np.testing.assert_allclose(np.asarray(bump(v)), np.asarray(v) + [1.0, 0.0, 0.0])
    with pytest.raises(RuntimeError, match="no overload of func 'bump'"):
        bump(kc.vec2(1.0, 2.0))


def test_kernel_name_sets_its_key_and_must_be_an_identifier():
    def body(x: float):
        pass

    assert kc.kernel(name="named_body")(body).key == "named_body"
    with pytest.raises(ValueError, match="C\\+\\+ identifier"):
        kc.kernel(name="1invalid")(body)


@kc.kernel
def stubbed(x: kc.types.vector(3, kc.Float)):
    pass


def test_overload_stub_with_a_return_annotation_is_refused():
    def stubbed(x: kc.vec3d) -> float: ...

    with pytest.raises(TypeError, match="return annotation"):
        kc.overload(stubbed)


def test_host_builtin_error_is_a_kernel_error_without_location():
    with pytest.raises(KernelError) as info:
        kc.bit_count(kc.float32(3.0))
    assert str(info.value).startswith("kernelc.bit_count():")
