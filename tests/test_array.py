"""kc.array on the CPU: construction, views, copies, fills and activity reporting."""

from __future__ import annotations

import typing

import numpy as np
import pytest

import kernelc as kc
from kernelc import types as T
from kernelc.runtime import memory
from kernelc.runtime.context import get_runtime
from kernelc.timing.flags import TIMING_ALL, TIMING_MEMCPY, TIMING_MEMSET

VEC3 = T.VectorType(3, T.float32)
MAT22 = T.MatrixType((2, 2), T.float64)
# The types whose values NumPy holds as they are (bfloat16 has tests of its own:
# test_bfloat16.py, as NumPy holds its bits).
NUMPY_SCALARS = [t for t in T.SCALAR_TYPES if t != T.bfloat16]


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def random_values(rng, shape, np_dtype) -> np.ndarray:
    """Random non-zero values of `np_dtype`."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np_dtype.kind in "iu":
        return rng.integers(1, 100, shape).astype(np_dtype)
    return (rng.standard_normal(shape) + 3.0).astype(np_dtype)


# ---- construction ------------------------------------------------------------------------


@pytest.mark.parametrize("scalar", NUMPY_SCALARS, ids=lambda t: t.name)
def test_each_scalar_dtype_from_numpy(rng, scalar):
    values = random_values(rng, (7, 3), scalar.np_dtype)
    a = kc.array(values, dtype=scalar)
    assert a.dtype == scalar and a.shape == (7, 3) and a.ndim == 2 and a.size == 21
    assert a.strides == (3 * scalar.size, scalar.size)
    assert a.numpy().dtype == scalar.np_dtype
    np.testing.assert_array_equal(a.numpy(), values)
    assert a.device == "cpu" and a.ptr % 64 == 0


@pytest.mark.parametrize("scalar", NUMPY_SCALARS, ids=lambda t: t.name)
def test_each_scalar_dtype_from_list(rng, scalar):
    values = random_values(rng, 9, scalar.np_dtype)
    a = kc.array(values.tolist(), dtype=scalar)
    assert a.dtype == scalar
    np.testing.assert_array_equal(a.numpy(), values)


def test_dtype_inference_follows_numpy():
    assert kc.array([1.5, 2.5]).dtype == T.float64
    assert kc.array([1, 2]).dtype == T.int64
    assert kc.array([True, False]).dtype == T.bool_
    assert kc.array(np.ones(3, np.float16)).dtype == T.float16
    assert kc.array(np.ones(3, np.uint8)).dtype == T.uint8
    assert kc.array((1, 2, 3), dtype=float).dtype == T.float32
    assert kc.array([1, 2], dtype=int).dtype == T.int32
    assert kc.array([1, 2], dtype=np.float64).dtype == T.float64
    assert kc.array([1, 2], dtype="int16").dtype == T.int16


def test_dtype_conversion(rng):
    values = random_values(rng, 10, np.float64)
    a = kc.array(values, dtype=float)
    assert a.dtype == T.float32
    np.testing.assert_allclose(a.numpy(), values.astype(np.float32))


def test_bad_data():
    with pytest.raises(TypeError, match="unsupported input data dtype"):
        kc.array(["a", "b"])
    with pytest.raises(TypeError, match="no kernelc equivalent"):
        kc.array(np.ones(3, np.complex64))
    with pytest.raises(ValueError, match="cannot convert"):
        kc.array([[1, 2], [3]])
    with pytest.raises(ValueError, match="sequence or array"):
        kc.array(5.0)
    with pytest.raises(TypeError, match="arrays hold"):
        kc.array([1, 2], dtype=str)
    with pytest.raises(ValueError, match="data= or ptr="):
        kc.array([1.0], ptr=1234, dtype=float, shape=1)


@pytest.mark.parametrize("shape", [(6,), (3, 4), (2, 3, 4), (2, 3, 2, 5)])
def test_shapes_1_to_4_dims(rng, shape):
    values = random_values(rng, shape, np.float32)
    a = kc.array(values)
    assert a.shape == shape and a.ndim == len(shape) and len(a) == shape[0]
    assert a.strides == values.strides and a.is_contiguous
    assert a.capacity == values.nbytes
    assert a._kc_type == T.ArrayType(T.float32, len(shape))
    np.testing.assert_array_equal(a.numpy(), values)
    z = kc.zeros(shape, dtype=kc.int16)
    assert z.shape == shape and z.strides == np.zeros(shape, np.int16).strides


def test_shape_errors():
    with pytest.raises(ValueError, match="1 to 4 dimensions"):
        kc.zeros((1, 2, 3, 4, 5))
    with pytest.raises(ValueError, match="1 to 4 dimensions"):
        kc.array(np.ones((1, 1, 1, 1, 2)))
    with pytest.raises(ValueError, match="non-negative, got -2 in dimension 1"):
        kc.empty((3, -2))
    with pytest.raises(TypeError, match="a shape is an int"):
        kc.zeros(2.5)
    with pytest.raises(ValueError, match="does not match"):
        kc.array(np.ones((2, 3)), ndim=1)
    with pytest.raises(ValueError, match="does not fit shape"):
        kc.array(np.ones(6), shape=(4, 2))


def test_shape_argument_reshapes_data(rng):
    values = random_values(rng, 12, np.int32)
    a = kc.array(values, shape=(3, 4))
    np.testing.assert_array_equal(a.numpy(), values.reshape(3, 4))
    assert kc.array2d(values.reshape(3, 4)).ndim == 2
    assert kc.array3d(values.reshape(2, 3, 2)).shape == (2, 3, 2)
    assert kc.array4d(values.reshape(1, 2, 3, 2)).ndim == 4


def test_from_array_and_clone(rng):
    values = random_values(rng, (4, 5), np.float32)
    a = kc.array(values)
    b = kc.array(a)
    assert b.ptr != a.ptr
    np.testing.assert_array_equal(b.numpy(), values)
    alias = kc.array(a, copy=False)
    assert alias.ptr == a.ptr
    as_int = kc.array(a, dtype=kc.int32)
    np.testing.assert_array_equal(as_int.numpy(), values.astype(np.int32))
    c = kc.clone(a[:, 1:4])
    assert c.is_contiguous and c.shape == (4, 3)
    np.testing.assert_array_equal(c.numpy(), values[:, 1:4])


def test_wrap_foreign_pointer(rng):
    values = random_values(rng, (3, 4), np.float64)
    a = kc.array(ptr=values.ctypes.data, dtype=kc.float64, shape=(4, 3), strides=(8, 32))
    np.testing.assert_array_equal(a.numpy(), values.T)
    with pytest.raises(ValueError, match="needs dtype= and shape="):
        kc.array(ptr=values.ctypes.data, shape=3)


# ---- zero-copy and NumPy interchange -----------------------------------------------------


def test_numpy_view_is_zero_copy(rng):
    a = kc.array(random_values(rng, (3, 4), np.float32))
    view = a.numpy()
    assert view.ctypes.data == a.ptr and a.numpy() is view
    view[1, 2] = -7.0
    assert a.numpy()[1, 2] == -7.0 and a[1, 2] == -7.0
    assert np.shares_memory(np.asarray(a), view)


def test_copy_false_aliases_numpy_memory(rng):
    values = random_values(rng, (4, 6), np.float32)
    a = kc.array(values, copy=False)
    assert a.ptr == values.ctypes.data
    values[2, 3] = 42.0
    assert a.numpy()[2, 3] == 42.0
    a.numpy()[0, 0] = -1.0
    assert values[0, 0] == -1.0


def test_copy_false_keeps_numpy_strides(rng):
    values = random_values(rng, (6, 8), np.float32)
    view = values[::2, 1::3]
    a = kc.array(view, copy=False)
    assert a.strides == view.strides and a.ptr == view.ctypes.data and not a.is_contiguous
    np.testing.assert_array_equal(a.numpy(), view)
    a.fill_(9.0)
    assert (values[::2, 1::3] == 9.0).all() and (values[1::2] != 9.0).all()


def test_copy_false_copies_what_it_cannot_alias(rng):
    values = random_values(rng, (5, 3), np.float32)
    reversed_rows = values[::-1]
    a = kc.array(reversed_rows, copy=False)  # negative strides: copied, as Warp does for dtypes
    assert all(s > 0 for s in a.strides) and a.ptr != values.ctypes.data
    np.testing.assert_array_equal(a.numpy(), reversed_rows)
    b = kc.array(values.astype(np.float64), dtype=float, copy=False)
    assert b.dtype == T.float32
    # Read-only (here broadcast) memory is shared as it is, as Warp shares it.
    read_only = np.broadcast_to(np.float32(2.0), (4,))
    c = kc.array(read_only, copy=False)
    assert c.ptr == read_only.ctypes.data and c.strides == (0,)
    np.testing.assert_array_equal(c.numpy(), read_only)


def test_array_interface_and_dlpack(rng):
    values = random_values(rng, (3, 5), np.int64)
    a = kc.array(values)
    interface = a.__array_interface__
    assert interface["data"] == (a.ptr, False) and interface["shape"] == (3, 5)
    assert interface["strides"] == (40, 8) and interface["typestr"] == np.dtype(np.int64).str
    assert a.__dlpack_device__() == (1, 0)
    exported = np.from_dlpack(a)
    assert exported.ctypes.data == a.ptr
    np.testing.assert_array_equal(exported, values)
    imported = kc.from_dlpack(values)
    assert imported.ptr == values.ctypes.data and imported.dtype == T.int64
    with pytest.raises(AttributeError):
        _ = a.__cuda_array_interface__


def test_from_numpy(rng):
    values = random_values(rng, (4, 3), np.float32)
    a = kc.from_numpy(values)
    assert a.dtype == T.float32 and a.shape == (4, 3) and a.ptr != values.ctypes.data
    v = kc.from_numpy(values, dtype=VEC3)
    assert v.dtype == VEC3 and v.shape == (4,)
    flat = kc.from_numpy(values.ravel(), shape=(2, 6))
    np.testing.assert_array_equal(flat.numpy(), values.reshape(2, 6))


# ---- vector and matrix elements ----------------------------------------------------------


def test_vector_dtype(rng):
    values = random_values(rng, (5, 3), np.float32)
    a = kc.array(values, dtype=VEC3)
    assert a.shape == (5,) and a.ndim == 1 and a.strides == (12,) and a.size == 5
    assert a._kc_type == T.ArrayType(VEC3, 1) and a.capacity == 60
    assert a.numpy().shape == (5, 3)
    np.testing.assert_array_equal(a.numpy(), values)
    np.testing.assert_array_equal(a[2], values[2])
    assert a.list() == values.tolist()
    assert all(isinstance(v, kc.vec3) and v.x == row[0] for v, row in zip(a.list(), values))
    flat = kc.array(values.ravel().tolist(), dtype=VEC3)
    np.testing.assert_array_equal(flat.numpy(), values)
    single = kc.array([1.0, 2.0, 3.0], dtype=VEC3)
    assert single.shape == (1,)
    with pytest.raises(ValueError, match="element shape"):
        kc.array(np.ones((4, 2), np.float32), dtype=VEC3)


def test_vector_fill_and_zero(rng):
    a = kc.full(4, (1.0, 2.0, 3.0), dtype=VEC3)
    np.testing.assert_array_equal(a.numpy(), np.tile(np.float32([1, 2, 3]), (4, 1)))
    a.fill_(5.0)
    assert (a.numpy() == 5.0).all()
    a.zero_()
    assert (a.numpy() == 0.0).all()
    with pytest.raises(ValueError, match="shape"):
        a.fill_([1.0, 2.0])


def test_matrix_dtype(rng):
    values = random_values(rng, (3, 2, 2), np.float64)
    m = kc.array(values, dtype=MAT22)
    assert m.shape == (3,) and m.strides == (32,) and m.numpy().shape == (3, 2, 2)
    np.testing.assert_array_equal(m.numpy(), values)
    np.testing.assert_array_equal(m[1:].numpy(), values[1:])


def test_struct_dtype(rng):
    particle = T.StructType("Particle", (("pos", VEC3), ("mass", T.float64), ("id", T.int8)))
    a = kc.zeros(4, dtype=particle)
    host = a.numpy()
    assert a.strides == (particle.size,) and host.dtype.itemsize == particle.size
    assert host.dtype.fields["mass"][1] == particle.offsets[1]
    values = np.zeros(4, host.dtype)
    values["pos"] = random_values(rng, (4, 3), np.float32)
    values["mass"] = random_values(rng, 4, np.float64)
    values["id"] = np.arange(1, 5)
    a.assign(values)
    np.testing.assert_array_equal(a.numpy()["pos"], values["pos"])
    np.testing.assert_array_equal(a.numpy()["mass"], values["mass"])
    a.zero_()
    assert not a.numpy()["id"].any()


# ---- views -------------------------------------------------------------------------------


def test_slices_keep_strides(rng):
    values = random_values(rng, (6, 8), np.float32)
    a = kc.array(values)
    for key in [(1,), (slice(1, 5, 2),), (slice(None), 3), (slice(2, 6), slice(1, None, 3)),
                (-1, slice(None, None, 2)), (Ellipsis, 2), (slice(4, 2),)]:
        view = a[key]
        expected = values[key]
        assert view.shape == expected.shape and view.strides == expected.strides
        np.testing.assert_array_equal(view.numpy(), expected)
    assert a[2, 5] == values[2, 5] and a[-1, -1] == values[-1, -1]
    inner = a[1:5, 2:6]
    inner.fill_(0.5)
    assert (a.numpy()[1:5, 2:6] == 0.5).all() and a.numpy()[0, 0] == values[0, 0]


def test_index_errors(rng):
    a = kc.array(random_values(rng, (3, 4), np.float32))
    with pytest.raises(IndexError, match="index 3 is out of range for axis 0 with size 3"):
        a[3]
    with pytest.raises(IndexError, match="too many indices"):
        a[0, 0, 0]
    with pytest.raises(ValueError, match="positive step"):
        a[::-1]
    with pytest.raises(TypeError, match="ints and slices"):
        a[1.5]
    with pytest.raises(TypeError, match="ints and slices"):
        a[None]


def test_transpose_and_contiguous(rng):
    values = random_values(rng, (2, 3, 4), np.float32)
    a = kc.array(values)
    t = a.transpose()
    assert t.shape == (4, 3, 2) and t.strides == values.T.strides and not t.is_contiguous
    np.testing.assert_array_equal(t.numpy(), values.T)
    p = a.transpose((1, 0, 2))
    np.testing.assert_array_equal(p.numpy(), values.transpose(1, 0, 2))
    c = p.contiguous()
    assert c.is_contiguous and c.ptr != a.ptr
    np.testing.assert_array_equal(c.numpy(), values.transpose(1, 0, 2))
    assert a.contiguous() is a
    with pytest.raises(ValueError, match="permutation"):
        a.transpose((0, 0, 1))


def test_reshape_and_flatten(rng):
    values = random_values(rng, (3, 4), np.int32)
    a = kc.array(values)
    r = a.reshape((2, -1))
    assert r.shape == (2, 6) and r.ptr == a.ptr
    np.testing.assert_array_equal(r.numpy(), values.reshape(2, 6))
    f = a.flatten()
    assert f.shape == (12,) and f.ptr == a.ptr
    ft = a.transpose().flatten()
    assert ft.ptr != a.ptr
    np.testing.assert_array_equal(ft.numpy(), values.T.ravel())
    with pytest.raises(RuntimeError, match="non-contiguous"):
        a.transpose().reshape(12)
    with pytest.raises(ValueError, match="cannot reshape"):
        a.reshape((5, -1))
    with pytest.raises(RuntimeError, match=r"cannot reshape array of shape \(3, 4\) \(size 12\) "
                       r"into shape \(5, 2\) \(size 10\)"):  # Warp's class and wording
        a.reshape((5, 2))


def test_repr_str_and_list(rng):
    values = random_values(rng, 4, np.float32)
    a = kc.array(values)
    assert repr(a) == "array(shape=(4,), dtype=float32)"
    assert str(a) == str(values)
    assert a.list() == values.tolist()
    assert [float(x) for x in a] == values.tolist()


# ---- fills, copies and *_like ------------------------------------------------------------


def test_constructors():
    assert (kc.zeros(5).numpy() == 0).all() and kc.zeros(5).dtype == T.float32
    assert (kc.ones((2, 3), dtype=kc.int8).numpy() == 1).all()
    assert kc.empty(4).dtype == T.float32 and kc.empty(4).ptr % 64 == 0
    assert kc.zeros(0).size == 0 and kc.zeros(0).shape == (0,)
    assert kc.full(3, 2).dtype == T.int32 and kc.full(3, 2.0).dtype == T.float32
    assert kc.full(3, True).dtype == T.bool_
    assert kc.full(3, np.float64(2.5)).dtype == T.float64
    np.testing.assert_array_equal(kc.full((2, 2), 7, dtype=kc.uint16).numpy(),
                                  np.full((2, 2), 7, np.uint16))
    assert kc.full(3, [1.0, 2.0, 3.0]).dtype == kc.vec3d  # Warp's rule for sequences
    with pytest.raises(TypeError, match="pass dtype="):
        kc.full(3, [[[1.0]]])
    assert kc.zeros._kc_special == "zeros"


def test_fill_and_zero(rng):
    values = random_values(rng, (4, 4), np.float64)
    a = kc.array(values)
    a.fill_(3.25)
    np.testing.assert_array_equal(a.numpy(), np.full((4, 4), 3.25))
    a.zero_()
    assert not a.numpy().any()


def test_like_functions(rng):
    values = random_values(rng, (3, 2), np.int16)
    src = kc.array(values)
    for result, expected in [(kc.zeros_like(src), 0), (kc.ones_like(src), 1),
                             (kc.full_like(src, 9), 9)]:
        assert result.shape == src.shape and result.dtype == src.dtype
        assert result.device == src.device and result.ptr != src.ptr
        assert (result.numpy() == expected).all()
    e = kc.empty_like(src, device="cpu")
    assert e.shape == (3, 2) and e.dtype == T.int16
    np.testing.assert_array_equal(src.numpy(), values)


def test_assign(rng):
    values = random_values(rng, (3, 3), np.float32)
    a = kc.zeros((3, 3))
    a.assign(values)
    np.testing.assert_array_equal(a.numpy(), values)
    b = kc.zeros((3, 3))
    b.assign(a.transpose())
    np.testing.assert_array_equal(b.numpy(), values.T)
    with pytest.raises(ValueError, match="shape"):
        b.assign(kc.zeros(9))
    with pytest.raises(TypeError, match="cannot assign"):
        b.assign(kc.zeros((3, 3), dtype=kc.float64))


def test_to_same_device_is_identity(rng):
    a = kc.array(random_values(rng, 3, np.float32))
    assert a.to("cpu") is a and a.to(kc.get_device("cpu")) is a


def test_copy_whole_and_with_offsets(rng):
    src_values = random_values(rng, 8, np.float32)
    src = kc.array(src_values)
    dest = kc.zeros(10)
    kc.copy(dest, src, dest_offset=2)
    expected = np.zeros(10, np.float32)
    expected[2:10] = src_values
    np.testing.assert_array_equal(dest.numpy(), expected)
    kc.copy(dest, src, dest_offset=0, src_offset=5, count=3)
    expected[0:3] = src_values[5:8]
    np.testing.assert_array_equal(dest.numpy(), expected)
    grid = kc.zeros((2, 5))  # offsets index the flattened array
    kc.copy(grid, src, dest_offset=1, count=4)
    np.testing.assert_array_equal(grid.numpy().ravel()[1:5], src_values[:4])


def test_copy_overlapping_same_array(rng):
    values = random_values(rng, 10, np.int32)
    a = kc.array(values)
    kc.copy(a, a, dest_offset=2, src_offset=0, count=8)
    expected = values.copy()
    expected[2:10] = values[0:8]
    np.testing.assert_array_equal(a.numpy(), expected)


def test_copy_strided(rng):
    values = random_values(rng, (4, 6), np.float64)
    a = kc.array(values)
    dest = kc.zeros((6, 4), dtype=kc.float64)
    kc.copy(dest, a.transpose())
    np.testing.assert_array_equal(dest.numpy(), values.T)
    column = kc.zeros(10, dtype=kc.float64)
    kc.copy(column, a[:, 1], dest_offset=3)
    np.testing.assert_array_equal(column.numpy()[3:7], values[:, 1])
    strided_dest = kc.full((4, 6), np.float64(np.nan))
    kc.copy(strided_dest.transpose(), a.transpose().contiguous())
    np.testing.assert_array_equal(strided_dest.numpy(), values)
    with pytest.raises(ValueError, match="non-contiguous") as err:
        kc.copy(strided_dest.transpose(), a, dest_offset=1, count=2)
    assert isinstance(err.value, RuntimeError)
    # Element-by-element copies need one shape, as in Warp: no implicit reshape.
    with pytest.raises(ValueError, match=r"destination shape=\(6, 4\), source shape=\(24,\)"):
        kc.copy(strided_dest.transpose(), a.transpose().contiguous().flatten())
    # A count on a multi-dimensional non-contiguous source is refused too.
    with pytest.raises(ValueError, match="only supported for 1-D non-contiguous"):
        kc.copy(kc.zeros(24, dtype=kc.float64), a.transpose(), count=2)


def test_copy_bounds_errors():
    src, dest = kc.ones(4), kc.zeros(10)
    with pytest.raises(ValueError, match=r"destination elements \[8, 12\) are out of range "
                                         r"for an array of 10 elements"):
        kc.copy(dest, src, dest_offset=8)
    with pytest.raises(ValueError, match=r"source elements \[1, 5\) are out of range "
                                         r"for an array of 4 elements"):
        kc.copy(dest, src, src_offset=1)
    with pytest.raises(ValueError, match="non-negative"):
        kc.copy(dest, src, count=-1)
    with pytest.raises(TypeError, match="one dtype"):
        kc.copy(kc.zeros(4, dtype=kc.int16), src)
    kc.copy(dest, kc.zeros(0))  # nothing to copy


# ---- annotations -------------------------------------------------------------------------


def test_annotation_mode():
    ann = kc.array(dtype=float, ndim=2)
    assert ann._kc_type == T.ArrayType(T.float32, 2)
    assert T.as_type(ann) == T.ArrayType(T.float32, 2)
    assert kc.array(dtype=kc.float64)._kc_type == T.ArrayType(T.float64, 1)
    assert kc.array(dtype=typing.Any, ndim=3)._kc_type == T.ArrayType(None, 3)
    assert kc.array2d(dtype=kc.int32)._kc_type == T.ArrayType(T.int32, 2)
    assert kc.array3d(dtype=VEC3)._kc_type == T.ArrayType(VEC3, 3)
    assert kc.array4d(dtype=float)._kc_type.ndim == 4
    assert ann.ptr is None and repr(ann) == "array(dtype=float32, ndim=2)"
    with pytest.raises(ValueError, match="1 to 4"):
        kc.array(dtype=float, ndim=5)


@pytest.mark.parametrize("use", [
    lambda a: a.numpy(), lambda a: a.fill_(1), lambda a: len(a), lambda a: a[0],
    lambda a: kc.zeros_like(a), lambda a: kc.copy(a, kc.zeros(1)), lambda a: a.to("cpu"),
    lambda a: np.asarray(a),
])
def test_annotation_has_no_memory(use):
    with pytest.raises(TypeError, match="is a type annotation"):
        use(kc.array(dtype=float))


# ---- activity reporting ------------------------------------------------------------------


class FakeRecorder:
    def __init__(self, mask: int = TIMING_ALL):
        self.mask = mask
        self.begun: list[tuple[object, str, int]] = []
        self.ended: list[int] = []

    def wants(self, kind: int) -> bool:
        return bool(kind & self.mask)

    def begin(self, device, name, kind):
        self.begun.append((device, name, kind))
        return len(self.begun)

    def end(self, token):
        self.ended.append(token)


@pytest.fixture
def recorder():
    runtime = get_runtime()
    saved = runtime.recorder
    runtime.recorder = FakeRecorder()
    yield runtime.recorder
    runtime.recorder = saved


def test_memset_and_memcpy_are_reported(recorder, rng):
    cpu = kc.get_device("cpu")
    memset = (cpu, "memset", TIMING_MEMSET)
    memcpy = (cpu, "memcpy HtoH", TIMING_MEMCPY)
    cases = [
        (lambda: kc.zeros(4), [memset]),
        (lambda: kc.full(4, 2.0), [memset]),
        (lambda: kc.array(random_values(rng, 4, np.float32)), [memcpy]),
    ]
    a = kc.zeros(8)
    b = kc.zeros(8)
    cases += [
        (lambda: a.fill_(1.0), [memset]),
        (lambda: a.zero_(), [memset]),
        (lambda: kc.copy(b, a), [memcpy]),
        (lambda: kc.copy(b, a, dest_offset=1, count=2), [memcpy]),
        (lambda: b.assign(a), [memcpy]),
        (lambda: kc.clone(a), [memcpy]),
        (lambda: a.numpy(), []),  # a zero-copy view on the CPU
        (lambda: a.to("cpu"), []),
    ]
    for action, expected in cases:
        recorder.begun.clear()
        recorder.ended.clear()
        action()
        assert recorder.begun == expected
        assert recorder.ended == list(range(1, len(expected) + 1))


def test_only_wanted_kinds_are_reported(recorder):
    recorder.mask = TIMING_MEMCPY
    a = kc.zeros(4)
    kc.copy(kc.empty(4), a)
    assert [name for _, name, _ in recorder.begun] == ["memcpy HtoH"]


def test_nothing_is_reported_without_a_recorder(recorder):
    runtime = get_runtime()
    runtime.recorder = None
    a = kc.zeros(4)
    kc.copy(kc.zeros(4), a)
    a.fill_(2.0)
    assert recorder.begun == [] and runtime.recorder is None


def test_a_failed_operation_still_ends_its_activity(recorder, monkeypatch):
    a = kc.zeros(3)
    recorder.begun.clear()

    def broken_fill(self, dest, value):
        raise MemoryError("device lost")

    monkeypatch.setattr(memory.CpuBackend, "fill", broken_fill)
    with pytest.raises(MemoryError):
        a.fill_(1.0)
    assert recorder.begun == [(kc.get_device("cpu"), "memset", TIMING_MEMSET)]
    assert recorder.ended == [1, 1]
