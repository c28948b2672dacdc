"""Custom allocators: `Device.default_allocator`, `Device.get_allocator()`,
`kc.set_device_allocator`, `kc.ScopedAllocator`, the allocator protocol, and errors."""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import poisoned

import kernelc as kc
from kernelc.runtime import alloc_tracker, allocators, memory
from kernelc.runtime.context import get_runtime

ROOT = Path(__file__).resolve().parents[1]


@kc.kernel
def saxpy(x: kc.array(dtype=float), y: kc.array(dtype=float), out: kc.array(dtype=float),
          alpha: float):
    i = kc.tid()
    out[i] = alpha * x[i] + y[i]


class LoggingAllocator:
    """Wraps another allocator and logs every call with its size and pointer."""

    def __init__(self, inner):
        self.inner = inner
        self.log: list[tuple[str, int, int]] = []

    def allocate(self, size_in_bytes: int) -> int:
        ptr = self.inner.allocate(size_in_bytes)
        self.log.append(("allocate", size_in_bytes, ptr))
        return ptr

    def deallocate(self, ptr: int, size_in_bytes: int) -> None:
        self.log.append(("deallocate", size_in_bytes, ptr))
        self.inner.deallocate(ptr, size_in_bytes)

    def live(self) -> dict[int, int]:
        """ptr -> size of the blocks allocated and not yet deallocated (checked pairwise)."""
        blocks: dict[int, int] = {}
        for op, size, ptr in self.log:
            if op == "allocate":
                assert ptr not in blocks
                blocks[ptr] = size
            else:
                assert blocks.pop(ptr) == size  # freed with the size it was allocated with
        return blocks


@pytest.fixture
def cpu():
    dev = kc.get_device("cpu")
    yield dev
    kc.set_device_allocator(dev, None)


@pytest.fixture
def gpu():
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    dev = kc.get_device("cuda:0")
    yield dev
    kc.set_device_allocator(dev, None)


# ---- the built-in allocators ---------------------------------------------------------------


def test_builtin_cpu_allocators(cpu):
    default = cpu.default_allocator
    assert isinstance(default, allocators.CpuDefaultAllocator)
    assert isinstance(default, kc.Allocator)
    assert cpu.default_allocator is default  # one object per device
    assert cpu.get_allocator() is default and kc.get_device_allocator("cpu") is default
    assert isinstance(cpu.get_allocator(pinned=True), allocators.CpuPinnedAllocator)
    assert cpu.mempool_allocator is None
    ptr = default.allocate(1000)
    assert ptr % 64 == 0
    ctypes.memset(ptr, 7, 1000)  # the memory is usable
    assert ctypes.string_at(ptr + 990, 10) == b"\x07" * 10
    default.deallocate(ptr, 1000)
    with pytest.raises(ValueError, match="was not allocated by this allocator"):
        default.deallocate(ptr, 1000)  # a double free is caught


# ---- custom allocators on the CPU (Warp: CUDA only) ----------------------------------------


def test_arrays_come_from_and_go_back_to_the_allocator(cpu):
    log = LoggingAllocator(cpu.default_allocator)
    kc.set_device_allocator(cpu, log)
    assert cpu.get_allocator() is log and kc.get_device_allocator(cpu) is log
    a = kc.zeros(1000, dtype=kc.float32, device="cpu")
    b = kc.ones((5, 7), dtype=kc.vec3, device="cpu")
    c = kc.array(np.arange(10, dtype=np.float64), device="cpu")
    d = kc.clone(a)
    assert [(op, size) for op, size, _ in log.log] == [
        ("allocate", 4000), ("allocate", 5 * 7 * 12), ("allocate", 80), ("allocate", 4000)]
    assert [ptr for _, _, ptr in log.log] == [a.ptr, b.ptr, c.ptr, d.ptr]
    np.testing.assert_array_equal(b.numpy(), 1.0)
    np.testing.assert_array_equal(c.numpy(), np.arange(10))
    view = a[10:20]
    del a
    assert len(log.live()) == 4  # the view keeps a's memory
    del view, b
    assert sorted(log.live().values()) == [80, 4000]
    del c, d
    assert log.live() == {}
    assert [op for op, _, _ in log.log].count("deallocate") == 4


def test_kernels_run_on_custom_memory(cpu, rng):
    log = LoggingAllocator(cpu.default_allocator)
    n = 4096
    x0 = rng.standard_normal(n).astype(np.float32)
    y0 = rng.standard_normal(n).astype(np.float32)
    with kc.ScopedDevice("cpu"), kc.ScopedAllocator(cpu, log):
        x, y = kc.array(x0), kc.array(y0)
        out = poisoned(n, np.float32)
    assert {ptr for _, _, ptr in log.log} >= {x.ptr, y.ptr, out.ptr}
    kc.launch(saxpy, n, inputs=[x, y, out, 3.0], device="cpu")
    np.testing.assert_allclose(out.numpy(), 3.0 * x0 + y0, rtol=1e-6)
    del x, y, out
    # The launcher keeps its last launch's arguments for reuse; another launch drops them.
    other = kc.zeros(1, device="cpu")
    kc.launch(saxpy, 1, inputs=[other, other, other, 1.0], device="cpu")
    assert log.live() == {}


def test_scoped_allocator_restores_and_none_means_builtin(cpu):
    outer, inner = LoggingAllocator(cpu.default_allocator), LoggingAllocator(cpu.default_allocator)
    kc.set_device_allocator(cpu, outer)
    with kc.ScopedAllocator(cpu, None) as scope:
        assert isinstance(scope, kc.ScopedAllocator)
        assert cpu.get_allocator() is cpu.default_allocator
        plain = kc.zeros(100, device="cpu")
        with kc.ScopedAllocator("cpu", inner):
            mine = kc.zeros(3, device="cpu")
        assert cpu.get_allocator() is cpu.default_allocator
    assert cpu.get_allocator() is outer
    assert outer.log == [] and [e[:2] for e in inner.log] == [("allocate", 12)]
    kc.set_device_allocator(cpu, None)
    del mine, plain  # freed through the allocator it came from, though no longer installed
    assert [e[:2] for e in inner.log] == [("allocate", 12), ("deallocate", 12)]


def test_arrays_keep_their_allocator_after_a_switch(cpu):
    first, second = LoggingAllocator(cpu.default_allocator), LoggingAllocator(cpu.default_allocator)
    kc.set_device_allocator(cpu, first)
    a = kc.zeros(16, device="cpu")
    kc.set_device_allocator(cpu, second)
    b = kc.zeros(32, device="cpu")
    del a, b
    assert [e[:2] for e in first.log] == [("allocate", 64), ("deallocate", 64)]
    assert [e[:2] for e in second.log] == [("allocate", 128), ("deallocate", 128)]


def test_pinned_and_empty_arrays_skip_the_custom_allocator(cpu):
    log = LoggingAllocator(cpu.default_allocator)
    kc.set_device_allocator(cpu, log)
    assert cpu.get_allocator(pinned=True) is cpu.pinned_allocator
    pinned = kc.zeros(10, device="cpu", pinned=True)
    empty = kc.zeros(0, device="cpu")
    assert log.log == [] and pinned.numpy().sum() == 0 and empty.size == 0


def test_tracking_counts_custom_allocations_once(cpu):
    log = LoggingAllocator(cpu.default_allocator)
    with kc.ScopedMemoryTracker("t", print=False) as tracker, kc.ScopedAllocator(cpu, log):
        tracker.clear()
        a = kc.zeros(250, dtype=kc.float32, device="cpu")
        assert alloc_tracker.get_total_alloc_count() == 1
        assert tracker.current_bytes == 1000
        del a
        assert tracker.live_count == 0 and log.live() == {}


# ---- errors --------------------------------------------------------------------------------


class NoDeallocate:
    def allocate(self, size_in_bytes):
        return 0


class NotCallable:
    allocate = 42

    def deallocate(self, ptr, size_in_bytes):
        pass


@pytest.mark.parametrize("bad, message", [
    (NoDeallocate(), r"NoDeallocate object is not an allocator: deallocate\(\) is missing"),
    (NotCallable(), r"NotCallable object is not an allocator: allocate\(\) is missing or not "
                    r"callable"),
    (object(), r"allocate\(\) and deallocate\(\) are missing"),
    (LoggingAllocator, r"got the class LoggingAllocator; pass an instance"),
])
def test_bad_allocator_objects_are_refused(cpu, bad, message):
    with pytest.raises(TypeError, match=message):
        kc.set_device_allocator(cpu, bad)
    with pytest.raises(TypeError, match=message):
        kc.ScopedAllocator(cpu, bad)
    assert cpu.get_allocator() is cpu.default_allocator  # nothing was installed


class ReturnsWhat:
    def __init__(self, value):
        self.value = value
        self.freed = []

    def allocate(self, size_in_bytes):
        if isinstance(self.value, Exception):
            raise self.value
        return self.value

    def deallocate(self, ptr, size_in_bytes):
        self.freed.append(ptr)


def test_bad_allocate_results_raise_clear_errors(cpu):
    with kc.ScopedAllocator(cpu, ReturnsWhat("0x1000")):
        with pytest.raises(TypeError, match=r"ReturnsWhat.allocate\(400\) returned '0x1000'; "
                                            r"an allocator must return the address"):
            kc.zeros(100, device="cpu")
    with kc.ScopedAllocator(cpu, ReturnsWhat(4096.0)):
        with pytest.raises(TypeError, match=r"returned 4096.0; an allocator must return"):
            kc.zeros(100, device="cpu")
    with kc.ScopedAllocator(cpu, ReturnsWhat(0)):
        with pytest.raises(RuntimeError, match=r"returned the null or invalid address 0"):
            kc.empty(100, device="cpu")
    failing = ReturnsWhat(MemoryError("out of arena"))
    with kc.ScopedAllocator(cpu, failing):
        with pytest.raises(MemoryError, match="out of arena"):
            kc.empty(100, device="cpu")
    gc.collect()
    assert failing.freed == []  # nothing was allocated, so nothing is freed


class Handle:
    """An address object with `__int__` only, like cuda-python's `CUdeviceptr`."""

    def __init__(self, value):
        self.value = value

    def __int__(self):
        return self.value


class HandleAllocator(LoggingAllocator):
    def allocate(self, size_in_bytes):
        return Handle(super().allocate(size_in_bytes))


def test_int_like_handles_are_accepted(cpu):
    log = HandleAllocator(cpu.default_allocator)
    with kc.ScopedAllocator(cpu, log):
        a = kc.full(4, 7, dtype=kc.int32, device="cpu")
    assert a.ptr == log.log[0][2] and a.numpy().tolist() == [7] * 4
    del a
    assert log.live() == {}


@pytest.mark.skipif(kc.is_cuda_available(), reason="checks the no-GPU error path")
def test_set_cuda_allocator_without_a_gpu():
    with pytest.raises(RuntimeError, match="no CUDA device"):
        kc.set_cuda_allocator(LoggingAllocator(None))
    with pytest.raises(TypeError, match="not an allocator"):
        kc.set_cuda_allocator(object())


# ---- memory kinds and the managed allocator -------------------------------------------------


def test_memory_kind_values_and_host_arrays(cpu):
    assert [int(k) for k in kc.MemoryKind] == [0, 1, 2, 3, 4, 5]  # Warp's numbering
    assert kc.MemoryKind(5) is kc.MemoryKind.CUDA_MANAGED
    a = kc.empty(4, dtype=kc.float32, device=cpu)
    assert a.memory_kind is kc.MemoryKind.HOST
    assert a[1:].memory_kind is kc.MemoryKind.HOST  # a view answers for its memory
    assert kc.empty(0, device=cpu).memory_kind is kc.MemoryKind.HOST
    assert kc.empty(4, device=cpu, pinned=True).memory_kind is kc.MemoryKind.PINNED
    host = np.empty(4, dtype=np.float32)
    wrapped = kc.array(host, dtype=kc.float32, device=cpu, copy=False)
    assert wrapped.ptr == host.ctypes.data and wrapped.memory_kind is kc.MemoryKind.HOST
    assert kc.array(dtype=kc.float32).memory_kind is kc.MemoryKind.UNKNOWN  # an annotation
    indexed = kc.indexedarray(a, kc.array([0, 1], dtype=kc.int32, device=cpu))
    assert not hasattr(indexed, "memory_kind")


def test_managed_allocator_without_a_gpu(cpu):
    managed = kc.CudaManagedAllocator()
    assert isinstance(managed, kc.Allocator)
    assert managed.memory_kind is kc.MemoryKind.CUDA_MANAGED
    managed.deallocate(0, 64)  # a null pointer is nothing to free
    if not kc.is_cuda_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            managed.allocate(64)


@pytest.mark.cuda
def test_memory_kinds_of_cuda_arrays(gpu, rng):
    plain = kc.zeros(16, device=gpu)
    pooled = kc.is_mempool_enabled(gpu)
    assert plain.memory_kind is (kc.MemoryKind.CUDA_MEMPOOL if pooled
                                 else kc.MemoryKind.CUDA_DEVICE)
    with kc.ScopedAllocator(gpu, gpu.default_allocator):
        assert kc.zeros(16, device=gpu).memory_kind is kc.MemoryKind.CUDA_DEVICE
    x0 = rng.uniform(1.0, 2.0, 1000).astype(np.float32)
    with kc.ScopedAllocator(gpu, kc.CudaManagedAllocator()):
        x = kc.array(x0, device=gpu)
        out = kc.full(1000, np.nan, dtype=kc.float32, device=gpu)
    assert x.memory_kind is kc.MemoryKind.CUDA_MANAGED
    assert x[10:].memory_kind is kc.MemoryKind.CUDA_MANAGED
    kc.launch(saxpy, 1000, inputs=[x, x, out, 2.0], device=gpu)
    np.testing.assert_allclose(out.numpy(), 3.0 * x0, rtol=1e-6)
    del x, out
    kc.synchronize()


# ---- CUDA paths without a GPU: host memory posing as two GPUs ------------------------------


@pytest.fixture
def fake_gpus(monkeypatch):
    """A stand-in CUDA runtime module with two devices whose memory is host memory."""
    runtime = get_runtime()
    saved_table, saved_current = runtime.extras.pop("devices", None), runtime.current_device
    runtime.current_device = None
    module = types.ModuleType("kernelc.runtime.cuda")
    module.enumerate_devices = lambda: [{"ordinal": i, "name": f"Fake {i}", "arch": 90}
                                        for i in range(2)]
    module.synchronize = lambda ordinal: None
    module.memory_backend = lambda: memory.CpuBackend()
    module.infos = [SimpleNamespace(capturing=0, deferred_frees=[]) for _ in range(2)]
    module.device_info = lambda device: module.infos[device.ordinal]
    monkeypatch.setitem(sys.modules, "kernelc.runtime.cuda", module)
    yield module
    runtime.extras.pop("devices", None)
    if saved_table is not None:
        runtime.extras["devices"] = saved_table
    runtime.current_device = saved_current


def test_cuda_allocation_path_and_capture_deferral(fake_gpus):
    host = kc.get_device("cpu").default_allocator
    log = LoggingAllocator(host)
    kc.set_cuda_allocator(log)
    gpus = kc.get_cuda_devices()
    assert [d.get_allocator() for d in gpus] == [log, log]
    a = kc.full(10, 2.0, dtype=kc.float64, device="cuda:1")
    assert [e[:2] for e in log.log] == [("allocate", 80)] and a.ptr == log.log[0][2]
    assert np.all(a.numpy() == 2.0)
    fake_gpus.infos[1].capturing = 1  # a graph capture is open on cuda:1
    with pytest.raises(RuntimeError, match="cannot allocate memory on cuda:1 during a graph"):
        kc.zeros(4, device="cuda:1")
    del a  # a free would join the graph: it waits for the capture's end
    assert len(log.log) == 1 and len(fake_gpus.infos[1].deferred_frees) == 1
    fake_gpus.infos[1].capturing = 0
    fake_gpus.infos[1].deferred_frees.pop()()  # what cuda.end_capture does
    assert [e[:2] for e in log.log] == [("allocate", 80), ("deallocate", 80)]
    kc.set_cuda_allocator(None)
    assert kc.get_device("cpu").get_allocator() is host


def test_memory_kind_asks_the_driver_about_device_memory(fake_gpus):
    class CudaError(RuntimeError):
        pass

    answers: dict[str, object] = {}

    def get_attribute(attribute, ptr):  # the driver's (CUresult, value) convention
        value = answers[attribute]
        return (1,) if isinstance(value, Exception) else (0, value)

    def call(function, *args):
        result = function(*args)
        if result[0] != 0:
            raise CudaError("driver call failed")
        return result[1]

    fake_gpus.CudaError, fake_gpus.call = CudaError, call
    fake_gpus.cu = SimpleNamespace(
        cuPointerGetAttribute=get_attribute,
        CUpointer_attribute=SimpleNamespace(CU_POINTER_ATTRIBUTE_IS_MANAGED="managed",
                                            CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE="pool"))
    a = kc.zeros(8, device="cuda:0")
    for managed, pool, kind in [(True, 0, "CUDA_MANAGED"), (False, 0x42, "CUDA_MEMPOOL"),
                                (False, 0, "CUDA_DEVICE"), (False, CudaError(), "CUDA_DEVICE"),
                                (CudaError(), 0, "UNKNOWN")]:
        answers.update(managed=managed, pool=pool)
        assert a.memory_kind is kc.MemoryKind[kind]
        assert a[2:].memory_kind is kc.MemoryKind[kind]


# ---- CUDA ----------------------------------------------------------------------------------


@pytest.mark.cuda
def test_builtin_cuda_allocators(gpu):
    assert isinstance(gpu.default_allocator, allocators.CudaDefaultAllocator)
    assert gpu.get_allocator(pinned=True) is gpu.get_allocator()
    if kc.is_mempool_supported(gpu):
        assert gpu.get_allocator() is gpu.mempool_allocator
        kc.set_mempool_enabled(gpu, False)
        try:
            assert gpu.get_allocator() is gpu.default_allocator
        finally:
            kc.set_mempool_enabled(gpu, True)
    for allocator in (gpu.default_allocator, gpu.mempool_allocator):
        if allocator is None:
            continue
        ptr = allocator.allocate(1 << 20)
        assert ptr > 0 and ptr % 16 == 0
        wrapped = kc.array(ptr=ptr, dtype=kc.float32, shape=1 << 18, device=gpu)
        wrapped.fill_(2.5)
        assert float(wrapped.numpy().sum()) == 2.5 * (1 << 18)
        del wrapped
        allocator.deallocate(ptr, 1 << 20)
    kc.synchronize()


@pytest.mark.cuda
def test_custom_allocator_on_cuda(gpu, rng):
    log = LoggingAllocator(gpu.default_allocator)
    kc.set_device_allocator(gpu, log)
    assert kc.get_device_allocator(gpu) is log
    n = 1 << 16
    x0 = rng.standard_normal(n).astype(np.float32)
    y0 = rng.standard_normal(n).astype(np.float32)
    x, y = kc.array(x0, device=gpu), kc.array(y0, device=gpu)
    out = kc.full(n, np.nan, dtype=kc.float32, device=gpu)
    with kc.ScopedAllocator(gpu, None):
        plain = kc.zeros(10, device=gpu)
    assert [(op, size) for op, size, _ in log.log] == [("allocate", 4 * n)] * 3
    assert [ptr for _, _, ptr in log.log] == [x.ptr, y.ptr, out.ptr]
    kc.launch(saxpy, n, inputs=[x, y, out, 0.5], device=gpu)
    np.testing.assert_allclose(out.numpy(), 0.5 * x0 + y0, rtol=1e-6)
    kc.set_device_allocator(gpu, None)
    del x, y, out
    kc.launch(saxpy, 1, inputs=[plain, plain, plain, 1.0], device=gpu)  # drops the last args
    del plain
    kc.synchronize()
    assert log.live() == {}


@pytest.mark.cuda
def test_set_cuda_allocator_sets_every_gpu(gpu):
    log = LoggingAllocator(gpu.default_allocator)
    kc.set_cuda_allocator(log)
    try:
        assert all(d.get_allocator() is log for d in kc.get_cuda_devices())
        assert kc.get_device("cpu").get_allocator() is not log
    finally:
        kc.set_cuda_allocator(None)


@pytest.mark.cuda
def test_custom_free_in_a_graph_capture_waits(gpu):
    log = LoggingAllocator(gpu.default_allocator)
    with kc.ScopedAllocator(gpu, log):
        a = kc.zeros(64, device=gpu)
        with kc.ScopedCapture(device=gpu):
            with pytest.raises(RuntimeError, match="during a graph capture"):
                kc.zeros(8, device=gpu)
            del a  # cuMemFree is illegal while capturing: deferred to the capture's end
            assert [op for op, _, _ in log.log] == ["allocate"]
    assert log.live() == {}


# ---- Warp's example ------------------------------------------------------------------------


def test_warp_custom_allocator_example(tmp_path, kernel_cache_dir):
    """Warp's example_custom_allocator.py, with `import kernelc as wp`, on the CPU."""
    try:
        import warp
    except Exception:
        pytest.skip("warp-lang is not installed")
    source = Path(warp.__file__).parent / "examples" / "core" / "example_custom_allocator.py"
    if not source.exists():
        pytest.skip("Warp's example_custom_allocator.py is not installed")
    script = tmp_path / source.name
    script.write_text(source.read_text().replace("import warp as wp\n", "import kernelc as wp\n"))
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="",
               KERNELC_CACHE_DIR=str(kernel_cache_dir))
    proc = subprocess.run([sys.executable, str(script), "--device", "cpu"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    allocs = [line.split() for line in lines if line.strip().startswith("[alloc]")]
    frees = [line.split() for line in lines if line.strip().startswith("[dealloc]")]
    assert [a[1] for a in allocs] == ["4000", "2000"]  # zeros(1000) and ones(500), float32
    assert [f[1] for f in frees] == ["4000", "2000"]
    assert [a[4] for a in allocs] == [f[3] for f in frees]  # "ptr=0x...": the same pointers
    assert "Total allocated:   6000 bytes" in lines
    assert "Total deallocated: 6000 bytes" in lines
    assert lines[-1] == "Restored default allocator."
