"""Warp's smaller runtime functions: capture_begin/capture_end, memory-pool and device
queries (their CPU answers here; the CUDA side runs in the cuda-marked tests)."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc


@kc.kernel
def k_add_one(a: kc.array[float]):
    i = kc.tid()
    a[i] = a[i] + 1.0


def test_capture_begin_end_on_the_cpu():
    a = kc.zeros(10)
    kc.capture_begin(device="cpu")
    kc.launch(k_add_one, 10, [a])
    kc.launch(k_add_one, 10, [a])
    graph = kc.capture_end(device="cpu")
    np.testing.assert_array_equal(a.numpy(), 0.0)  # captured, not run
    for _ in range(3):
        kc.capture_launch(graph)
    np.testing.assert_array_equal(a.numpy(), 6.0)


def test_capture_begin_end_misuse():
    with pytest.raises(RuntimeError, match="no capture is open"):
        kc.capture_end(device="cpu")
    kc.capture_begin(device="cpu")
    try:
        with pytest.raises(RuntimeError, match="already open"):
            kc.capture_begin(device="cpu")
    finally:
        kc.capture_end(device="cpu")


def test_memory_pool_queries_on_the_cpu():
    assert kc.is_mempool_supported("cpu") is False
    assert kc.is_mempool_enabled("cpu") is False
    assert kc.is_peer_access_supported("cpu", "cpu") is False
    for setter in (lambda: kc.set_mempool_enabled("cpu", True),
                   lambda: kc.set_mempool_release_threshold("cpu", 0),
                   lambda: kc.get_mempool_release_threshold("cpu"),
                   lambda: kc.get_mempool_used_mem_current("cpu")):
        with pytest.raises(ValueError, match="only supported on CUDA devices"):
            setter()


def test_device_availability():
    assert kc.is_device_available("cpu")
    assert kc.is_device_available("cuda") == kc.is_cuda_available()
    assert not kc.is_device_available("tpu:0")
    if not kc.is_cuda_available():
        with pytest.raises(RuntimeError):
            kc.get_cuda_device()


@pytest.mark.cuda
def test_memory_pool_switch_on_cuda():
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    dev = kc.get_cuda_device(0)
    assert kc.is_mempool_supported(dev) and kc.is_mempool_enabled(dev)
    try:
        kc.set_mempool_enabled(dev, False)
        a = kc.full(1000, 2.0, device=dev)  # allocated outside the pool
        kc.launch(k_add_one, 1000, [a], device=dev)
        np.testing.assert_array_equal(a.numpy(), 3.0)
        del a
    finally:
        kc.set_mempool_enabled(dev, True)
    b = kc.zeros(1 << 20, device=dev)
    kc.synchronize()
    assert kc.get_mempool_used_mem_current(dev) >= b.capacity
    assert kc.get_mempool_used_mem_high(dev) >= kc.get_mempool_used_mem_current(dev)
    kc.set_mempool_release_threshold(dev, 1 << 30)
    assert kc.get_mempool_release_threshold(dev) == 1 << 30
    kc.set_mempool_release_threshold(dev, 2**64 - 1)  # kernelc's default: keep everything


@kc.kernel
def k_scale(a: kc.array[float], out: kc.array[float], s: float, k: int):
    i = kc.tid()
    out[i] = a[i] * s + float(k)


def test_changing_python_numbers_between_launches():
    a = kc.array(np.arange(4, dtype=np.float32))
    out = kc.zeros(4)
    for step in range(5):  # same arrays, new numbers each time (a substep's time, say)
        kc.launch(k_scale, 4, [a, out, 0.5 * step, step])
        np.testing.assert_array_equal(out.numpy(), np.arange(4) * 0.5 * step + step)
    with pytest.raises(kc.KernelError):
        kc.launch(k_scale, 4, [a, out, 1.0, 2.5])  # still checked: a float for the int
    kc.launch(k_scale, 4, [a, out, 2, 1])  # an int for the float parameter
    np.testing.assert_array_equal(out.numpy(), np.arange(4) * 2 + 1)


def test_a_captured_launch_keeps_its_numbers():
    a = kc.array(np.ones(4, dtype=np.float32))
    out = kc.zeros(4)
    kc.launch(k_scale, 4, [a, out, 1.0, 0])
    with kc.ScopedCapture(device="cpu") as capture:
        kc.launch(k_scale, 4, [a, out, 2.0, 0])
    kc.launch(k_scale, 4, [a, out, 3.0, 0])  # must not change the captured launch
    np.testing.assert_array_equal(out.numpy(), 3.0)
    kc.capture_launch(capture.graph)
    np.testing.assert_array_equal(out.numpy(), 2.0)


def test_type_unions_in_host_annotations():
    import typing

    def helper(v: kc.vec2 | None = None, x: None | kc.float32 = None) -> kc.vec3 | kc.vec3d:
        return v

    assert typing.get_type_hints(helper)["v"] == typing.Optional[kc.vec2]  # noqa: UP045
    assert kc.vec3 | kc.vec3d == typing.Union[kc.vec3, kc.vec3d]  # noqa: UP007


def test_graphs_have_no_conditional_nodes():
    assert kc.is_conditional_graph_supported() is False
