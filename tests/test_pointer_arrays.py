"""`a.ptr` and `kc.array(ptr=..., shape=..., dtype=...)` inside kernels: an array's
address, and an array over an address (another view of an argument, a local array seen
with another element type), against NumPy with poisoned outputs."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import nonzero, poisoned


@kc.kernel
def as_pairs(x: kc.array(dtype=float), out: kc.array2d(dtype=kc.vec2)):
    t = kc.tid()
    buf = kc.zeros(shape=(8,), dtype=float)
    for i in range(8):
        buf[i] = x[t] * float(i)
    pairs = kc.array(ptr=buf.ptr, shape=(4,), dtype=kc.vec2)  # the same bytes, as vec2
    for i in range(4):
        out[t, i] = pairs[i]


def test_a_local_array_seen_with_another_element_type():
    x = nonzero(np.random.default_rng(11), 13, np.float32)
    out = kc.array(np.full((13, 4, 2), np.nan, np.float32), dtype=kc.vec2)
    kc.launch(as_pairs, dim=13, inputs=[kc.array(x), out])
    want = (x[:, None] * np.arange(8, dtype=np.float32)).reshape(13, 4, 2)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


@kc.kernel
def reshaped(a: kc.array(dtype=float), rows: int, out: kc.array2d(dtype=float)):
    i, j = kc.tid()
    g = kc.array(ptr=a.ptr, shape=(rows, a.shape[0] // rows), dtype=float)
    flat = kc.array(ptr=out.ptr, shape=(out.shape[0] * out.shape[1],), dtype=float)
    flat[i * out.shape[1] + j] = g[i, j] * 2.0 + float(g.shape[1])  # lands in `out`


def test_an_argument_seen_with_another_shape():
    a = nonzero(np.random.default_rng(12), 12, np.float32)
    out = poisoned((3, 4), np.float32)
    kc.launch(reshaped, dim=(3, 4), inputs=[kc.array(a), 3, out])
    np.testing.assert_allclose(out.numpy(), a.reshape(3, 4) * 2.0 + 4.0, rtol=1e-6)


@kc.kernel
def addresses(a: kc.array(dtype=kc.int64), out: kc.array(dtype=kc.uint64)):
    out[0] = a.ptr
    out[1] = a[2:].ptr  # a view's first element


def test_ptr_is_the_address_of_the_first_element():
    a, out = kc.zeros(5, dtype=kc.int64), kc.zeros(2, dtype=kc.uint64)
    kc.launch(addresses, dim=1, inputs=[a, out])
    assert out.numpy().tolist() == [a.ptr, a.ptr + 16]


@kc.kernel
def from_argument(p: kc.uint64, n: int, value: float):
    arr = kc.array(ptr=p, shape=(n,), dtype=float)
    arr[kc.tid()] = value


def test_an_address_passed_as_an_argument():
    a = kc.zeros(6, dtype=float)
    kc.launch(from_argument, dim=6, inputs=[a.ptr, 6, 2.5])
    np.testing.assert_array_equal(a.numpy(), np.full(6, 2.5, np.float32))


def test_array_from_a_float_is_a_clear_error():
    @kc.kernel
    def bad(a: kc.array(dtype=float), p: float):
        b = kc.array(ptr=p, shape=(2,), dtype=float)
        b[0] = a[0]

    with pytest.raises(kc.KernelError, match="ptr= is an address"):
        kc.launch(bad, dim=1, inputs=[kc.zeros(1, dtype=float), 1.0])


def test_array_needs_ptr_shape_and_dtype():
    @kc.kernel
    def bad(a: kc.array(dtype=float)):
        b = kc.array(ptr=a.ptr, shape=(2,))
        b[0] = 1.0

    with pytest.raises(kc.KernelError, match="needs dtype"):
        kc.launch(bad, dim=1, inputs=[kc.zeros(1, dtype=float)])


@pytest.mark.parametrize("kernel", [as_pairs, reshaped, addresses, from_argument],
                         ids=lambda k: k.__name__)
def test_nvrtc_compiles_pointer_kernels(kernel):
    pytest.importorskip("cuda.bindings.nvrtc")
    assert kc.compile(kernel, target="cuda", arch=80).binary


def test_deleter_runs_once_no_view_is_left(rng):
    import gc

    host = nonzero(rng, 16, np.float32)
    calls = []
    a = kc.array(ptr=host.ctypes.data, dtype=kc.float32, shape=16,
                 deleter=lambda ptr, size: calls.append((ptr, size)))
    view = a[4:8]
    assert a.deleter is not None and view.deleter is None and kc.zeros(2).deleter is None
    np.testing.assert_array_equal(view.numpy(), host[4:8])
    del a
    gc.collect()
    assert calls == []  # the view still uses the memory
    del view
    gc.collect()
    assert calls == [(host.ctypes.data, 64)]
