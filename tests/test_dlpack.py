"""`kc.from_dlpack` / `kc.to_dlpack`: capsules (as torch and CuPy's `to_dlpack` give
them) and `__dlpack__` objects, shared memory, Warp's dtype reinterpretations and errors."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import nonzero

pytestmark = pytest.mark.usefixtures("jax_on_the_cpu")


@kc.kernel
def double(a: kc.array(dtype=float)):
    i = kc.tid()
    a[i] = a[i] * 2.0


def test_capsules_round_trip_sharing_memory(rng):
    values = nonzero(rng, 8, np.float32)
    a = kc.array(values)
    b = kc.from_dlpack(kc.to_dlpack(a))
    assert b.ptr == a.ptr and b.dtype == kc.float32 and b.shape == (8,)
    kc.launch(double, 8, [b])
    np.testing.assert_array_equal(a.numpy(), values * np.float32(2))
    v = kc.from_dlpack(kc.to_dlpack(kc.array(np.ones((4, 3), np.float32))), dtype=kc.vec3)
    assert v.dtype == kc.vec3 and v.shape == (4,)


def test_reinterpretations_share_memory_and_others_raise():
    flags = kc.array(np.array([True, False, True]), dtype=kc.bool)
    for dtype in (kc.int8, kc.uint8):
        seen = kc.from_dlpack(kc.to_dlpack(flags), dtype=dtype)
        assert seen.ptr == flags.ptr and seen.dtype == dtype
        np.testing.assert_array_equal(seen.numpy(), [1, 0, 1])
    ints = kc.array(np.array([-1, 2], np.int32))
    unsigned = kc.from_dlpack(kc.to_dlpack(ints), dtype=kc.uint32)
    assert unsigned.ptr == ints.ptr and unsigned.numpy().tolist() == [2**32 - 1, 2]
    with pytest.raises(RuntimeError, match="Incompatible data types: DLPack bool8 and "
                                           "kernelc float32"):
        kc.from_dlpack(kc.to_dlpack(flags), dtype=kc.float32)
    with pytest.raises(RuntimeError, match="DLPack float32 and kernelc int32"):
        kc.from_dlpack(np.zeros(2, np.float32), dtype=kc.int32)


def test_torch_capsules():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32)
    a = kc.from_dlpack(torch.utils.dlpack.to_dlpack(t))
    assert a.ptr == t.data_ptr()
    kc.launch(double, 6, [a])
    assert t.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]


def test_jax_arrays_are_shared():
    jnp = pytest.importorskip("jax.numpy")
    j = jnp.arange(5, dtype=jnp.float32)
    a = kc.from_dlpack(j)
    assert a.ptr == j.unsafe_buffer_pointer()  # as Warp: no copy (JAX's is read-only)
    np.testing.assert_array_equal(a.numpy(), [0, 1, 2, 3, 4])


def test_bad_sources_raise():
    class Elsewhere:
        def __dlpack_device__(self):
            return (123, 7)

        def __dlpack__(self, stream=None):
            raise AssertionError("not called for an unknown device")

    class NotACapsule:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None):
            return object()

    with pytest.raises(TypeError, match="Unsupported source device for DLPack: "
                                        "device_type=123, device_id=7"):
        kc.from_dlpack(Elsewhere())
    with pytest.raises(TypeError, match="Expected a valid DLPack capsule, got object"):
        kc.from_dlpack(NotACapsule())
    capsule = kc.to_dlpack(kc.zeros(2, dtype=float))
    kc.from_dlpack(capsule)
    with pytest.raises(ValueError, match="consumed already"):
        kc.from_dlpack(capsule)  # a capsule is used once


def test_cpu_export_takes_only_the_cpu_streams():
    a = kc.array(np.arange(4, dtype=np.int64))
    for stream in (None, -1):
        np.testing.assert_array_equal(np.from_dlpack(_Exporter(a, stream)), [0, 1, 2, 3])
    for stream in (0, 1, 2, -2, "nope"):
        with pytest.raises(TypeError, match="DLPack stream must be None or -1 for CPU"):
            a.__dlpack__(stream=stream)


class _Exporter:
    """Hands `a.__dlpack__(stream=...)` to a consumer that asks for no stream itself."""

    def __init__(self, a, stream):
        self.a, self.stream = a, stream

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()

    def __dlpack__(self, **_):
        return self.a.__dlpack__(stream=self.stream)


@kc.kernel
def bf16_to_f32(src: kc.array(dtype=kc.bfloat16), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = kc.float32(src[i])


def test_bfloat16_crosses_as_bfloat16(rng):
    values = nonzero(rng, 6, np.float32)
    a = kc.array(values, dtype=kc.bfloat16)
    b = kc.from_dlpack(kc.to_dlpack(a))
    assert b.dtype == kc.bfloat16 and b.ptr == a.ptr and b.shape == (6,)
    out = kc.full(6, np.nan, dtype=float)
    kc.launch(bf16_to_f32, 6, [b, out])
    np.testing.assert_allclose(out.numpy(), values, rtol=1e-2)
    with pytest.raises(RuntimeError, match="DLPack bfloat16 and kernelc uint16"):
        kc.from_dlpack(kc.to_dlpack(a), dtype=kc.uint16)
    with pytest.raises(RuntimeError, match="DLPack uint16 and kernelc bfloat16"):
        kc.from_dlpack(np.zeros(2, np.uint16), dtype=kc.bfloat16)


def test_bfloat16_with_torch(rng):
    torch = pytest.importorskip("torch")
    values = nonzero(rng, 5, np.float32)
    a = kc.array(values, dtype=kc.bfloat16)
    t = torch.from_dlpack(a)
    assert t.dtype == torch.bfloat16 and t.data_ptr() == a.ptr
    np.testing.assert_allclose(t.float().numpy(), values, rtol=1e-2)
    source = torch.tensor(values).to(torch.bfloat16)
    for given in (source, torch.utils.dlpack.to_dlpack(source)):
        b = kc.from_dlpack(given)
        assert b.dtype == kc.bfloat16 and b.ptr == source.data_ptr()
        out = kc.full(5, np.nan, dtype=float)
        kc.launch(bf16_to_f32, 5, [b, out])
        np.testing.assert_array_equal(out.numpy(), source.float().numpy())


def test_numpy_views_of_jax_arrays_are_shared_both_ways():
    jax = pytest.importorskip("jax")
    x = np.asarray(jax.numpy.arange(8, dtype=jax.numpy.float32))  # read-only
    a = kc.array(x, dtype=kc.float32, copy=False)
    assert a.ptr == x.ctypes.data  # as Warp: copy=False shares read-only memory too
    j = jax.dlpack.from_dlpack(a, copy=False)
    assert j.unsafe_buffer_pointer() == a.ptr
    np.testing.assert_array_equal(np.asarray(j), np.arange(8))
