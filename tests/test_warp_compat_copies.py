"""Warp's rules for kc.copy between non-contiguous arrays and between dtypes of one byte size,
empty-array strides and contiguity, matrix fills from flat components, host scalars
(`.value`, no-argument zero), struct array fields read back by `list()`, and device
attributes."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from kernelc import logger


def nonzero(rng, shape, np_dtype) -> np.ndarray:
    if np.dtype(np_dtype).kind in "iu":
        return rng.integers(1, 100, shape).astype(np_dtype)
    return (rng.standard_normal(shape) + 3.0).astype(np_dtype)


# ---- kc.copy -------------------------------------------------------------------------------


def test_non_contiguous_copies_need_one_shape(rng):
    values = nonzero(rng, (6, 3), np.float32)
    src = kc.array(values)[::3, :]  # (2, 3), non-contiguous
    dest = kc.full((6, 2), np.float32(np.nan))[::2, :]  # (3, 2), non-contiguous
    with pytest.raises(ValueError, match=r"destination shape=\(3, 2\), source shape=\(2, 3\)") \
            as err:
        kc.copy(dest, src)
    assert isinstance(err.value, RuntimeError)  # what Warp raises
    assert np.isnan(dest.numpy()).all()  # nothing was written
    # One contiguous side does not allow a reshape either.
    with pytest.raises(ValueError, match=r"destination shape=\(6,\), source shape=\(2, 3\)"):
        kc.copy(kc.zeros(6), src)
    # Equal shapes copy element by element.
    same = kc.full((2, 3), np.float32(np.nan))
    kc.copy(same, src)
    np.testing.assert_array_equal(same.numpy(), values[::3, :])


def test_offsets_and_counts_need_1d_non_contiguous_arrays(rng):
    grid = kc.array(nonzero(rng, (10, 10), np.float32))[1::2, 1::2]
    with pytest.raises(ValueError, match="only supported for 1-D non-contiguous") as err:
        kc.copy(kc.zeros_like(grid), grid, count=2)
    assert isinstance(err.value, RuntimeError)
    with pytest.raises(ValueError, match="only supported for 1-D non-contiguous"):
        kc.copy(kc.zeros(30), grid, dest_offset=1)
    # A contiguous 2-d destination with a 1-d strided source is not 1-d on both sides.
    with pytest.raises(ValueError, match="only supported for 1-D non-contiguous"):
        kc.copy(kc.zeros((2, 2)), kc.zeros(8)[::2], count=2)
    # Between 1-d arrays, offsets index the views.
    column = kc.array(nonzero(rng, (5, 3), np.float32))
    dest = kc.full(7, np.float32(np.nan))
    kc.copy(dest, column[:, 2], dest_offset=2, src_offset=1, count=4)
    np.testing.assert_array_equal(dest.numpy()[2:6], column.numpy()[1:5, 2])
    assert np.isnan(dest.numpy()[[0, 1, 6]]).all()


def test_indexed_arrays_refuse_offsets_as_a_runtime_error():
    base = kc.array(np.arange(10, 16, dtype=np.int32))
    src = base[kc.array([0, 2, 4], dtype=kc.int32)]
    with pytest.raises(ValueError, match="not supported with indexed arrays") as err:
        kc.copy(kc.zeros(3, dtype=kc.int32), src, src_offset=1, count=1)
    assert isinstance(err.value, RuntimeError)


@pytest.mark.parametrize("strided", [False, True])
def test_dtypes_of_one_byte_size_copy_as_bytes(rng, strided):
    values = nonzero(rng, 8, np.float32)
    src = kc.array(values)
    dest = kc.full(16 if strided else 8, -999, dtype=kc.int32)
    if strided:
        dest = dest[::2]
    kc.copy(dest, src)
    np.testing.assert_array_equal(dest.numpy(), values.view(np.int32))
    vec4 = kc.array(nonzero(rng, (3, 4), np.float32), dtype=kc.vec4)
    mat = kc.full(3, np.float32(np.nan), dtype=kc.mat22)
    kc.copy(mat, vec4)
    np.testing.assert_array_equal(mat.numpy().reshape(3, 4), vec4.numpy())
    with pytest.raises(TypeError, match="destination dtype=float64, source dtype=float32") \
            as err:
        kc.copy(kc.zeros(8, dtype=kc.float64), src)
    assert isinstance(err.value, RuntimeError)


@pytest.fixture
def fresh_once_warnings():
    """The copy-adjoint warning is given once per process: forget earlier ones."""
    seen = logger._state()["seen"]
    saved = set(seen)
    seen.clear()
    yield
    seen.update(saved)


def test_reinterpreting_copy_on_a_tape_copies_gradient_bytes_back(rng, fresh_once_warnings):
    n = 4
    a = kc.array(nonzero(rng, n, np.float32), requires_grad=True)
    b = kc.zeros(n, dtype=kc.int32, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.copy(b, a)
    np.testing.assert_array_equal(b.numpy(), a.numpy().view(np.int32))
    seed = np.arange(1, n + 1, dtype=np.int32)
    b.grad.assign(seed)
    with pytest.warns(UserWarning, match=r"cannot yet be fully tracked \(copy between "
                      r"unsupported gradient dtypes\)"):
        tape.backward()
    np.testing.assert_array_equal(a.grad.numpy(), seed.view(np.float32))
    np.testing.assert_array_equal(b.grad.numpy(), seed)  # not consumed


def test_overlapping_copy_on_a_tape_names_the_reason(fresh_once_warnings):
    y = kc.array(np.arange(1.0, 5.0, dtype=np.float32), requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.copy(y, y, dest_offset=1, src_offset=0, count=3)
    np.testing.assert_array_equal(y.numpy(), [1.0, 1.0, 2.0, 3.0])
    y.grad.assign(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    with pytest.warns(UserWarning, match=r"\(overlapping copy\)"):
        tape.backward()
    # The overwrite fallback: src grad [0:3] = dest grad [1:4].
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 3.0, 4.0, 4.0])


# ---- layouts --------------------------------------------------------------------------------


def test_empty_arrays_have_warps_strides():
    a = kc.zeros((1, 0), dtype=kc.vec2)
    assert a.strides == (0, 8) and a.size == 0 and a.is_contiguous
    view = np.asarray(a)
    assert view.shape == (1, 0, 2) and view.strides == (0, 8, 4)
    b = kc.zeros((2, 0, 3))
    assert b.strides == (0, 12, 4)
    assert kc.clone(b).strides == (0, 12, 4) and b.flatten().shape == (0,)
    assert kc.zeros((3, 4)).strides == (16, 4)  # non-empty shapes are unchanged


def test_contiguity_is_warps_exact_stride_rule():
    two = kc.array(np.arange(2, dtype=np.int32))
    assert not two[::2].is_contiguous  # one element, but a stride of two
    row = kc.zeros((1, 5))
    assert row.is_contiguous and not row.transpose().is_contiguous
    assert kc.zeros((4, 3))[1:2].is_contiguous


# ---- fills and host values ----------------------------------------------------------------


@pytest.mark.parametrize("np_dtype,kc_type", [(np.int32, kc.int32), (np.float64, kc.float64),
                                              (np.bool_, kc.bool)])
def test_matrix_fills_take_flat_components(rng, np_dtype, kc_type):
    mat = kc.types.matrix((2, 3), kc_type)
    flat = (rng.integers(0, 2, 6) if np_dtype is np.bool_ else nonzero(rng, 6, np_dtype)
            ).astype(np_dtype)
    a = kc.empty((4, 2), dtype=mat)
    a.fill_(flat)
    np.testing.assert_array_equal(a.numpy(), np.broadcast_to(flat.reshape(2, 3), (4, 2, 2, 3)))
    a.zero_()
    a.fill_(list(flat))
    np.testing.assert_array_equal(a.numpy()[3, 1], flat.reshape(2, 3))
    full = kc.full(3, flat, dtype=mat)
    np.testing.assert_array_equal(full.numpy(), np.broadcast_to(flat.reshape(2, 3), (3, 2, 3)))
    with pytest.raises(ValueError, match="with a value of shape"):
        a.fill_(flat[:5])
    with pytest.raises(ValueError, match="with a value of shape"):
        kc.zeros(2, dtype=kc.vec3).fill_(np.ones(6, np.float32))  # vectors take no rows


def test_host_scalars_have_value_and_a_zero_default():
    assert kc.int8(3).value == 3 and type(kc.int8(3).value) is int
    assert kc.float16(2.5).value == 2.5 and type(kc.float16(2.5).value) is float
    assert kc.uint64(2**63).value == 2**63
    assert kc.bfloat16(1.5).value == 1.5
    assert kc.float32() == 0.0 and kc.int64() == 0 and kc.bool() is np.False_
    a = kc.full(3, kc.int16(17))
    assert a.dtype == kc.int16
    np.testing.assert_array_equal(a.numpy(), np.full(3, kc.int16(17).value, np.int16))


@kc.struct
class Holder:
    scale: float
    values: kc.array(dtype=kc.int32)
    grid: kc.array2d(dtype=float)


def test_struct_array_fields_read_back_as_type_only_arrays():
    s = Holder()
    s.scale = 2.5
    s.values = kc.array(np.arange(3, dtype=np.int32))
    s.grid = kc.zeros((2, 2))
    items = kc.full(2, s, dtype=Holder)
    back = items.list()
    assert back[1].scale == 2.5
    assert back[1].values.dtype == kc.int32 and back[1].values.ndim == 1
    assert back[1].grid.dtype == kc.float32 and back[1].grid.ndim == 2
    assert back[1].values.ptr is None  # no view of memory the list could outlive
    # They pack as null arrays, as in Warp.
    again = kc.array(back, dtype=Holder)
    record = again.numpy()[0]
    assert record["scale"] == 2.5
    assert bytes(record["values"]) == bytes(len(bytes(record["values"])))


def test_cpu_device_attributes_are_zero():
    cpu = kc.get_device("cpu")
    assert cpu.sm_count == 0 and cpu.max_shared_memory_per_block == 0


def test_dimensions_beyond_int32_are_refused():
    big = np.broadcast_to(np.zeros(1, np.int8), (2**31,))  # no memory behind it
    for make in (lambda: kc.zeros(2**31, dtype=kc.int8), lambda: kc.array(big, dtype=kc.int8)):
        with pytest.raises(ValueError, match="signed 32-bit integer, got 2147483648"):
            make()
