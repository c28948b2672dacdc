"""DLPack for CUDA memory (kernelc/runtime/dlpack_cuda.py).

Without a GPU: capsules built for a CUDA layout over host memory, parsed back field by
field, their owner released exactly once, and read by NumPy and Torch where they claim the
CPU. With one (`cuda` marker): round trips with Torch, JAX and kernelc itself."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import kernelc as kc
from kernelc.runtime import dlpack_capsule as dl
from kernelc.runtime import dlpack_cuda as dc
from tests.conftest import nonzero

F32 = (2, 32, 1)  # DLPack float32: (code, bits, lanes)


class Owner:
    """Stands for the exported array: counts its own deallocations."""

    released = 0

    def __del__(self):
        Owner.released += 1


def _fake_cuda_capsule(buffer: np.ndarray, versioned: bool, owner, copied=False):
    """A capsule describing `buffer`'s memory as if it were on cuda:0."""
    return dc.build_capsule(buffer.ctypes.data, buffer.shape, buffer.strides, F32, (2, 0),
                            owner, versioned=versioned, copied=copied)


# ---- without a GPU ------------------------------------------------------------------------


@pytest.mark.parametrize("versioned", [False, True])
def test_built_capsules_parse_back_field_by_field(rng, versioned):
    base = nonzero(rng, 60, np.float32).reshape(5, 4, 3)
    buffer = base[1:, ::2].transpose(1, 0, 2)  # shape (2, 4, 3), strides (24, 48, 4)
    capsule = _fake_cuda_capsule(buffer, versioned, Owner(), copied=True)
    name = dl._get_name(capsule)
    assert name == (b"dltensor_versioned" if versioned else b"dltensor")
    view = dc.parse_capsule(capsule)
    assert view.ptr == buffer.ctypes.data and view.device == (2, 0)
    assert view.shape == (2, 4, 3) and view.strides == buffer.strides == (24, 48, 4)
    assert view.dtype == F32 and view.versioned == versioned and view.deleter != 0
    tensor = dl.tensor_of(capsule)  # DLPack strides count elements, byte_offset is 0
    assert [tensor.strides[i] for i in range(3)] == [6, 12, 1] and tensor.byte_offset == 0
    assert (tensor.device.device_type, tensor.device.device_id, tensor.ndim) == (2, 0, 3)
    if versioned:
        head = dl.VersionedHead.from_address(view.managed)
        assert (head.major, head.flags) == (1, 2)  # DLPACK_FLAG_BITMASK_IS_COPIED
    elem, shape, strides = dc.array_layout(view, kc.vec3)
    assert (elem, shape, strides) == (kc.vec3, (2, 4), (24, 48))
    assert dc.array_layout(view) == (kc.float32, (2, 4, 3), (24, 48, 4))
    dc.consume(capsule, view).release()


@pytest.mark.parametrize("versioned", [False, True])
def test_owner_is_released_once_consumed_or_not(versioned):
    buffer = np.ones((3, 2), np.float32)
    Owner.released = 0
    capsule = _fake_cuda_capsule(buffer, versioned, Owner())
    del capsule  # dropped unconsumed: its destructor calls the deleter
    gc.collect()
    assert Owner.released == 1
    capsule = _fake_cuda_capsule(buffer, versioned, Owner())
    view = dc.parse_capsule(capsule)
    holder = dc.consume(capsule, view)
    assert dl._get_name(capsule) == (b"used_dltensor_versioned" if versioned
                                     else b"used_dltensor")
    with pytest.raises(ValueError, match="consumed already"):
        dc.parse_capsule(capsule)
    del capsule  # consumed: the capsule leaves the tensor to its consumer
    gc.collect()
    assert Owner.released == 1
    holder.release()
    assert Owner.released == 2
    holder.release()  # a second release (then __del__) calls the deleter no more
    del holder
    gc.collect()
    assert Owner.released == 2


def test_the_description_matches_the_cpu_export(rng):
    data = nonzero(rng, 24, np.float32).reshape(2, 4, 3)
    a = kc.array(data, dtype=kc.vec3, device="cpu")[:, 1:3]  # strided rows of vec3
    host = np.from_dlpack(a)  # the CPU export, through NumPy
    ptr, shape, strides, dtype = dc.describe(a)
    assert (ptr, shape, strides) == (host.ctypes.data, host.shape, host.strides)
    assert dtype == F32
    m = kc.zeros(3, dtype=kc.mat22d, device="cpu")
    assert dc.describe(m)[1:] == ((3, 2, 2), (32, 16, 8), (2, 64, 1))
    expected = {kc.bool: (6, 8, 1), kc.int8: (0, 8, 1), kc.uint16: (1, 16, 1),
                kc.int64: (0, 64, 1), kc.float16: (2, 16, 1), kc.bfloat16: (4, 16, 1)}
    for scalar, code in expected.items():
        assert dc.describe(kc.zeros(2, dtype=scalar, device="cpu"))[3] == code
        elem, _, _ = dc.array_layout(_view((2,), (code[1] // 8,), code))
        assert elem == scalar


def test_structs_are_not_exported():
    @kc.struct
    class Pair:
        a: float
        b: int

    with pytest.raises(RuntimeError, match="Cannot convert arrays of structs to DLPack"):
        dc.describe(kc.zeros(2, dtype=Pair, device="cpu"))


def _view(shape, strides, dtype=F32, ptr=0x1000):
    return dc.TensorView(ptr=ptr, shape=shape, strides=strides, dtype=dtype, device=(2, 0),
                         managed=0, deleter=0, versioned=False)


def test_layouts_kernels_cannot_read_raise():
    ints = _view((4,), (4,), (0, 32, 1))
    assert dc.array_layout(ints, kc.uint32)[0] == kc.uint32  # same-size ints: shared
    assert dc.array_layout(_view((2,), (1,), (6, 8, 1)), kc.uint8)[0] == kc.uint8
    with pytest.raises(RuntimeError, match="Incompatible data types: DLPack float32 and "
                                           "kernelc int32"):
        dc.array_layout(_view((4,), (4,)), kc.int32)
    with pytest.raises(RuntimeError, match="DLPack bfloat16 and kernelc uint16"):
        dc.array_layout(_view((4,), (2,), (4, 16, 1)), kc.uint16)
    with pytest.raises(RuntimeError, match="trailing shape must be"):
        dc.array_layout(_view((4, 2), (8, 4)), kc.vec3)
    with pytest.raises(RuntimeError, match="not dense"):
        dc.array_layout(_view((4, 3), (4, 16)), kc.vec3)
    with pytest.raises(RuntimeError, match="negative strides"):
        dc.array_layout(_view((4,), (-4,)))
    with pytest.raises(RuntimeError, match="not aligned"):
        dc.array_layout(_view((4,), (4,), ptr=0x1002))
    with pytest.raises(RuntimeError, match="complex"):
        dc.array_layout(_view((4,), (8,), (5, 64, 1)))
    with pytest.raises(RuntimeError, match="bit-packed"):
        buffer = np.zeros(4, np.uint8)
        dc.parse_capsule(dc.build_capsule(buffer.ctypes.data, (4,), (1,), (1, 1, 8), (2, 0),
                                          None))
    assert dc.array_layout(_view((), ())) == (kc.float32, (1,), (4,))  # 0-d: one element


def test_lanes_are_a_trailing_dimension():
    buffer = np.arange(8, dtype=np.float32)
    capsule = dc.build_capsule(buffer.ctypes.data, (2,), (16,), (2, 32, 4), (2, 0), None)
    view = dc.parse_capsule(capsule)
    assert (view.shape, view.strides, view.dtype) == ((2, 4), (16, 4), F32)
    assert dc.array_layout(view, kc.vec4)[1:] == ((2,), (16,))
    dc.consume(capsule, view).release()


def test_stream_arguments():
    assert dc.consumer_stream(None) == 1  # DLPack: the legacy default stream
    assert dc.consumer_stream(-1) is None
    assert dc.consumer_stream(2) == 2 and dc.consumer_stream(0x7F00) == 0x7F00
    for bad in (-2, "1", 1.0, True):
        with pytest.raises(TypeError, match="DLPack stream must be None or an integer"):
            dc.consumer_stream(bad)


def test_numpy_and_torch_read_built_capsules(rng):
    data = nonzero(rng, 12, np.float32).reshape(3, 4)
    strided = data.T  # (4, 3), strides (4, 16)
    owner = Owner()
    capsule = dc.build_capsule(strided.ctypes.data, strided.shape, strided.strides, F32,
                               (1, 0), owner, versioned=True)
    np.testing.assert_array_equal(np.from_dlpack(dl.CapsuleSource(capsule)), strided)
    torch = pytest.importorskip("torch")
    Owner.released = 0
    tracker = weakref.ref(owner)
    t = torch.from_dlpack(dc.build_capsule(strided.ctypes.data, strided.shape,
                                           strided.strides, F32, (1, 0), owner))
    del owner
    assert t.stride() == (1, 4) and t.data_ptr() == strided.ctypes.data
    np.testing.assert_array_equal(t.numpy(), strided)
    del capsule
    gc.collect()
    assert tracker() is not None  # the tensor still holds it
    del t
    gc.collect()
    assert tracker() is None and Owner.released == 1


def test_a_pending_exception_survives_an_unconsumed_capsule():
    # The capsule dies while IndexError propagates; its destructor must not replace it.
    buffer = np.zeros(2, np.float32)
    with pytest.raises(IndexError):
        [_fake_cuda_capsule(buffer, False, Owner())][5]


# ---- on a GPU -----------------------------------------------------------------------------


@kc.kernel
def scale(a: kc.array2d(dtype=float), s: float):
    i, j = kc.tid()
    a[i, j] = a[i, j] * s


@kc.kernel
def add_index(a: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    a[i] = a[i] + kc.vec3(float(i), 0.0, 1.0)


@pytest.fixture
def gpu():
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    return kc.get_device("cuda:0")


@pytest.fixture
def torch_cuda(gpu):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("Torch has no CUDA")
    return torch


@pytest.mark.cuda
def test_torch_reads_and_writes_kernelc_arrays(torch_cuda, gpu, rng):
    torch = torch_cuda
    data = nonzero(rng, 12, np.float32).reshape(3, 4)
    a = kc.array(data, device=gpu)
    kc.launch(scale, a.shape, [a, 2.0], device=gpu)  # queued: DLPack orders Torch after it
    t = torch.from_dlpack(a)
    assert t.device == torch.device("cuda:0") and t.data_ptr() == a.ptr
    assert tuple(t.shape) == (3, 4) and t.stride() == (4, 1)
    np.testing.assert_array_equal(t.cpu().numpy(), data * 2)
    t.add_(1.0)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(a.numpy(), data * 2 + 1)
    view = a[:, 1:3]  # strided: strides in elements
    tv = torch.from_dlpack(view)
    assert tv.stride() == (4, 1) and tv.data_ptr() == view.ptr
    np.testing.assert_array_equal(tv.cpu().numpy(), (data * 2 + 1)[:, 1:3])
    del a, view
    gc.collect()  # the tensors hold the array's memory
    np.testing.assert_array_equal(t.cpu().numpy(), data * 2 + 1)


@pytest.mark.cuda
def test_kernelc_reads_and_writes_torch_tensors(torch_cuda, gpu, rng):
    torch = torch_cuda
    data = nonzero(rng, 12, np.float32).reshape(3, 4)
    t = torch.tensor(data, device="cuda:0")
    tt = t.T  # (4, 3), strides (1, 4)
    for given in (tt, torch.utils.dlpack.to_dlpack(tt)):
        a = kc.from_dlpack(given)
        assert a.device == gpu and a.ptr == tt.data_ptr() and a.dtype == kc.float32
        assert a.shape == (4, 3) and a.strides == (4, 16)
        np.testing.assert_array_equal(a.numpy(), data.T)
    a = kc.from_dlpack(tt)
    kc.launch(scale, a.shape, [a, 3.0], device=gpu)
    kc.synchronize_device(gpu)
    np.testing.assert_array_equal(t.cpu().numpy(), data * 3)
    del t, tt
    gc.collect()  # the array holds the tensor's memory
    np.testing.assert_array_equal(a.numpy(), data.T * 3)


@pytest.mark.cuda
def test_vec3_arrays_cross_as_trailing_axes(torch_cuda, gpu, rng):
    torch = torch_cuda
    data = nonzero(rng, 15, np.float32).reshape(5, 3)
    a = kc.array(data, dtype=kc.vec3, device=gpu)
    t = torch.from_dlpack(a)
    assert tuple(t.shape) == (5, 3) and t.stride() == (3, 1)
    np.testing.assert_array_equal(t.cpu().numpy(), data)
    b = kc.from_dlpack(t, dtype=kc.vec3)
    assert b.shape == (5,) and b.dtype == kc.vec3 and b.ptr == a.ptr
    kc.launch(add_index, 5, [b], device=gpu)
    kc.synchronize_device(gpu)
    expected = data + np.stack([np.arange(5), np.zeros(5), np.ones(5)], 1).astype(np.float32)
    np.testing.assert_array_equal(t.cpu().numpy(), expected)
    with pytest.raises(RuntimeError, match="not dense"):
        kc.from_dlpack(torch.zeros(4, 6, device="cuda:0")[:, ::2], dtype=kc.vec3)


@pytest.mark.cuda
def test_bfloat16_and_ints_with_torch(torch_cuda, gpu, rng):
    torch = torch_cuda
    values = nonzero(rng, 6, np.float32)
    a = kc.array(values, dtype=kc.bfloat16, device=gpu)
    t = torch.from_dlpack(a)
    assert t.dtype == torch.bfloat16
    np.testing.assert_allclose(t.float().cpu().numpy(), values, rtol=1e-2)
    ints = torch.tensor([-1, 2, 3], dtype=torch.int32, device="cuda:0")
    u = kc.from_dlpack(ints, dtype=kc.uint32)
    assert u.dtype == kc.uint32 and u.numpy().tolist() == [2**32 - 1, 2, 3]
    with pytest.raises(RuntimeError, match="Incompatible data types"):
        kc.from_dlpack(ints, dtype=kc.float32)


@pytest.mark.cuda
def test_kernelc_to_kernelc(gpu, rng):
    data = nonzero(rng, 8, np.float32).reshape(2, 4)
    a = kc.array(data, device=gpu)
    for given in (a, kc.to_dlpack(a)):
        b = kc.from_dlpack(given)
        assert b.ptr == a.ptr and b.device == gpu and b.shape == (2, 4)
        np.testing.assert_array_equal(b.numpy(), data)
    tracker = weakref.ref(a)
    del a
    gc.collect()
    assert tracker() is not None  # b's deleter has not run: it keeps a alive
    kc.launch(scale, b.shape, [b, -1.0], device=gpu)
    np.testing.assert_array_equal(b.numpy(), -data)
    del b
    gc.collect()
    assert tracker() is None


@pytest.mark.cuda
def test_consumer_streams_wait_for_kernelc_streams(torch_cuda, gpu, rng):
    torch = torch_cuda
    data = nonzero(rng, 1 << 20, np.float32).reshape(1024, 1024)
    a = kc.array(data, device=gpu)
    stream = kc.Stream(gpu)
    with kc.ScopedStream(stream):
        for _ in range(20):  # long enough to still run when Torch reads
            kc.launch(scale, a.shape, [a, -1.0], device=gpu)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            t = torch.from_dlpack(a)  # waits on `side`, through its handle
            total = t.sum()
        side.synchronize()
    np.testing.assert_allclose(total.item(), data.sum(dtype=np.float64), rtol=1e-4)
    for handle in (-1, 1, 2, stream.cuda_stream):  # none, legacy, per-thread, a handle
        b = kc.from_dlpack(a.__dlpack__(stream=handle))
        assert b.ptr == a.ptr and b.device == gpu
    np.testing.assert_array_equal(b.numpy(), data)
    with pytest.raises(TypeError, match="DLPack stream must be None or an integer"):
        a.__dlpack__(stream="default")
    with pytest.raises(BufferError, match="only to that device"):
        a.__dlpack__(dl_device=(1, 0))
    copy = torch.from_dlpack(a, copy=True)
    assert copy.data_ptr() != a.ptr
    np.testing.assert_array_equal(copy.cpu().numpy(), data)


def _jax_gpu():
    jax = pytest.importorskip("jax")
    try:
        jax.devices("gpu")
    except RuntimeError:
        pytest.skip("JAX has no GPU")
    return jax


@pytest.mark.cuda
def test_jax_gpu_arrays(gpu, rng):
    jax = _jax_gpu()
    from kernelc.interop.jax import from_jax, to_jax

    data = nonzero(rng, 12, np.float32).reshape(4, 3)
    a = kc.array(data, dtype=kc.vec3, device=gpu)
    for j in (jax.dlpack.from_dlpack(a), to_jax(a)):
        assert j.shape == (4, 3) and j.devices() == {jax.devices("gpu")[0]}
        np.testing.assert_array_equal(np.asarray(j), data)
    source = jax.device_put(jax.numpy.asarray(data), jax.devices("gpu")[0])
    for b in (kc.from_dlpack(source, dtype=kc.vec3), from_jax(source, dtype=kc.vec3)):
        assert b.device == gpu and b.shape == (4,) and b.ptr == source.unsafe_buffer_pointer()
        np.testing.assert_array_equal(b.numpy(), data)
    with pytest.raises(TypeError, match="element shape"):
        from_jax(source, dtype=kc.vec4)
