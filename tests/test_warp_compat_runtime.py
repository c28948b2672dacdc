"""Warp's host array API on strided arrays: kc.copy ranges, fills, allocation with strides,
fill-value dtypes, and the argument errors Warp programs catch as RuntimeError."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc


def nonzero(rng, shape, np_dtype) -> np.ndarray:
    if np.dtype(np_dtype).kind in "iu":
        return rng.integers(1, 100, shape).astype(np_dtype)
    return (rng.standard_normal(shape) + 3.0).astype(np_dtype)


def strided_view(values: np.ndarray, step: int, poison) -> tuple[kc.array, np.ndarray]:
    """A 1-d kc.array view of every `step`-th element of a buffer, the gaps poisoned."""
    base = np.full(values.size * step, poison, dtype=values.dtype)
    base[::step] = values
    return kc.array(base)[::step], base


# ---- kc.copy with offsets on strided arrays ----------------------------------------------


@pytest.mark.parametrize("src_step,dest_step", [(1, 2), (2, 1), (2, 3), (3, 3)])
@pytest.mark.parametrize("src_offset,dest_offset,count", [(0, 0, 10), (2, 0, 5), (0, 3, 4),
                                                          (1, 4, 3), (9, 9, 1)])
def test_copy_ranges_between_strided_1d_arrays(rng, src_step, dest_step, src_offset,
                                               dest_offset, count):
    src_values = nonzero(rng, 10, np.int32)
    src, _ = strided_view(src_values, src_step, -1)
    dest, dest_base = strided_view(np.full(10, -7, np.int32), dest_step, -9)
    kc.copy(dest, src, dest_offset=dest_offset, src_offset=src_offset, count=count)
    expected = np.full(10, -7, np.int32)
    expected[dest_offset:dest_offset + count] = src_values[src_offset:src_offset + count]
    np.testing.assert_array_equal(dest.numpy(), expected)
    if dest_step > 1:  # the gaps between the view's elements are untouched
        np.testing.assert_array_equal(dest_base.reshape(-1, dest_step)[:, 1:], -9)


def test_copy_into_a_column_and_whole_strided_blocks(rng):
    grid = kc.full((5, 3), -1.0)
    values = nonzero(rng, 6, np.float32)
    kc.copy(grid[:, 2], kc.array(values), dest_offset=1, src_offset=2, count=3)
    expected = np.full((5, 3), -1.0, np.float32)
    expected[1:4, 2] = values[2:5]
    np.testing.assert_array_equal(grid.numpy(), expected)
    # A whole 2-d strided block from another one of the same shape.
    a = nonzero(rng, (4, 6), np.float64)
    dest = kc.full((4, 6), np.float64(-5.0))
    kc.copy(dest[::2, 1::2], kc.array(a)[1::2, ::2])
    expected = np.full((4, 6), -5.0)
    expected[::2, 1::2] = a[1::2, ::2]
    np.testing.assert_array_equal(dest.numpy(), expected)


def test_copy_part_of_a_multidimensional_strided_destination_raises():
    dest = kc.zeros((4, 4))[::2, ::2]
    with pytest.raises(ValueError, match="only supported for 1-D non-contiguous") as err:
        kc.copy(dest, kc.ones(4), count=2)
    assert isinstance(err.value, RuntimeError)  # what Warp raises


@pytest.mark.parametrize("kwargs,message", [
    ({"src_offset": -1}, "Source offset must be non-negative"),
    ({"dest_offset": -1}, "Destination offset must be non-negative"),
    ({"count": -1}, "count must be non-negative"),
])
def test_copy_rejects_negative_ranges(kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        kc.copy(kc.zeros(4), kc.ones(4), **kwargs)
    assert isinstance(err.value, RuntimeError)


def test_copy_rejects_non_integer_ranges_other_dtypes_and_non_arrays():
    src = kc.ones(4)
    with pytest.raises(TypeError, match="must be integers") as err:
        kc.copy(kc.zeros(4), src, count=2.0)
    assert isinstance(err.value, RuntimeError)
    with pytest.raises(TypeError, match="destination dtype=float64, source dtype=float32"):
        kc.copy(kc.zeros(4, dtype=kc.float64), src)
    with pytest.raises(TypeError, match="the destination must be an array, got ndarray"):
        kc.copy(np.zeros(4, np.float32), src)
    with pytest.raises(ValueError, match=r"source elements \[0, 5\) are out of range"):
        kc.copy(kc.zeros(8), src[::2], count=5)


def test_fill_zero_and_assign_on_strided_views(rng):
    a = kc.array(nonzero(rng, (4, 6), np.float32))
    expected = a.numpy().copy()
    a[:, 1].fill_(7.0)
    expected[:, 1] = 7.0
    a[1::2, ::3].zero_()
    expected[1::2, ::3] = 0.0
    column = nonzero(rng, 4, np.float32)
    a[:, 4].assign(column)
    expected[:, 4] = column
    np.testing.assert_array_equal(a.numpy(), expected)


# ---- allocation ----------------------------------------------------------------------------


def test_constructors_take_n_and_strides():
    assert kc.zeros(n=3).shape == (3,) and kc.empty(n=2).shape == (2,)
    np.testing.assert_array_equal(kc.ones(n=2, dtype=kc.int32).numpy(), [1, 1])
    np.testing.assert_array_equal(kc.full(n=2, value=3).numpy(), [3, 3])
    assert kc.zeros(None).shape == (0,)
    transposed = kc.ones((2, 3), dtype=kc.int32, strides=(4, 8))
    assert transposed.strides == (4, 8) and not transposed.is_contiguous
    assert transposed.capacity == 24
    np.testing.assert_array_equal(transposed.numpy(), np.ones((2, 3), np.int32))
    gapped = kc.full((3, 3), 5, dtype=kc.int32, strides=(16, 4))
    assert gapped.capacity == 4 + 2 * 16 + 2 * 4
    np.testing.assert_array_equal(gapped.numpy(), np.full((3, 3), 5, np.int32))
    gapped.assign(np.arange(9, dtype=np.int32).reshape(3, 3))
    np.testing.assert_array_equal(gapped.numpy(), np.arange(9).reshape(3, 3))


def test_kernels_read_and_write_arrays_allocated_with_strides(rng):
    @kc.kernel
    def double(a: kc.array2d(dtype=float), out: kc.array2d(dtype=float)):
        i, j = kc.tid()
        out[i, j] = a[i, j] * 2.0

    values = nonzero(rng, (3, 4), np.float32)
    a = kc.empty((3, 4), strides=(4, 12))  # column-major
    a.assign(values)
    out = kc.full((3, 4), np.nan, strides=(32, 4))  # gapped rows, poisoned
    kc.launch(double, dim=(3, 4), inputs=[a, out])
    np.testing.assert_array_equal(out.numpy(), values * 2.0)


def test_allocation_stride_errors():
    with pytest.raises(ValueError, match="expected 2 strides, got 1"):
        kc.empty((0, 3), dtype=kc.int32, strides=(4,))
    with pytest.raises(NotImplementedError, match="Negative strides"):
        kc.empty((3, 3), dtype=kc.int32, strides=(16, -4))


def test_shape_given_as_a_numpy_array():
    a = kc.zeros(np.array([4, 3, 2], dtype=np.int32))
    assert a.shape == (4, 3, 2) and all(type(n) is int for n in a.shape)


def test_full_infers_vector_and_matrix_dtypes_from_values():
    assert kc.full(2, kc.vec3(1.0, 2.0, 3.0)).dtype == kc.vec3
    ints = kc.full(2, [1, 2])
    assert ints.dtype == kc.types.vector(2, kc.int64)
    np.testing.assert_array_equal(ints.numpy(), [[1, 2], [1, 2]])
    assert kc.full(2, (1.5, 2.5, 3.5)).dtype == kc.vec3d
    assert kc.full(1, [[1.0, 2.0], [3.0, 4.0]]).dtype == kc.mat22d
    with pytest.raises(TypeError, match="cannot infer an element type"):
        kc.full(2, "text")


def test_vector_arrays_from_components_flat_along_the_last_axis(rng):
    values = nonzero(rng, (2, 6), np.float32)
    v = kc.array(values, dtype=kc.vec3)
    assert v.shape == (2, 2)
    np.testing.assert_array_equal(v.numpy(), values.reshape(2, 2, 3))
    m = kc.array(values.reshape(3, 4), dtype=kc.mat22)
    assert m.shape == (3,)
    np.testing.assert_array_equal(m.numpy(), values.reshape(3, 2, 2))
    with pytest.raises(ValueError, match="does not end in the element shape"):
        kc.array(values.reshape(3, 4), dtype=kc.vec3)
