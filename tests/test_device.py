"""Devices: parsing, the current device, CUDA discovery (with a stand-in CUDA module)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import kernelc as kc
from kernelc.runtime import memory
from kernelc.runtime.context import get_runtime

CUDA_MODULE = "kernelc.runtime.cuda"


@pytest.fixture
def fresh_devices(monkeypatch):
    """Forgets discovered devices and the current device, restoring both afterwards."""
    runtime = get_runtime()
    saved_table = runtime.extras.pop("devices", None)
    saved_current = runtime.current_device
    runtime.current_device = None
    monkeypatch.delenv("KERNELC_DEVICE", raising=False)  # the suite's own choice
    yield monkeypatch
    runtime.extras.pop("devices", None)
    if saved_table is not None:
        runtime.extras["devices"] = saved_table
    runtime.current_device = saved_current


class FakeGpuMemory(memory.CpuBackend):
    """Host memory posing as GPU memory, to exercise the backend interface.

    The CPU backend reads arrays through `memory.host_view`, which works for any memory the
    host can address, so its methods serve the stand-in GPU unchanged.
    """


def fake_cuda(count: int = 2, reason: str = "", with_memory: bool = False):
    module = types.ModuleType(CUDA_MODULE)
    module.synced = []
    module.enumerate_devices = lambda: [
        {"ordinal": i, "name": f"Fake GPU {i}", "arch": "sm_90"} for i in range(count)
    ]
    module.unavailable_reason = lambda: reason
    module.synchronize = module.synced.append
    if with_memory:
        backend = FakeGpuMemory()
        module.memory_backend = lambda: backend
    return module


def install(monkeypatch, module) -> None:
    monkeypatch.setitem(sys.modules, CUDA_MODULE, module)


# ---- the CPU and parsing -----------------------------------------------------------------


def test_cpu_device_attributes():
    cpu = kc.get_device("cpu")
    assert cpu.alias == "cpu" and str(cpu) == "cpu"
    assert cpu.ordinal == -1 and cpu.arch is None
    assert cpu.is_cpu and not cpu.is_cuda
    assert isinstance(cpu.name, str) and cpu.name
    assert kc.get_device(cpu) is cpu
    assert kc.get_devices()[0] is cpu


def test_device_equality_and_hash():
    cpu = kc.get_device("cpu")
    assert cpu == "cpu" and cpu != "cuda:0"
    assert cpu == kc.Device("cpu", -1, "another name")
    assert len({cpu, kc.get_device("cpu")}) == 1
    assert {cpu: 1}[kc.Device("cpu", -1, "x")] == 1


@pytest.mark.parametrize("ident", ["gpu", "cuda:x", "cuda:", "CPU", "cuda0", "cuda:1.5", ""])
def test_malformed_identifiers(ident):
    with pytest.raises(ValueError, match="invalid device"):
        kc.get_device(ident)


def test_negative_ordinal():
    with pytest.raises(ValueError, match="must be 0 or more"):
        kc.get_device("cuda:-1")


def test_non_string_identifier():
    with pytest.raises(TypeError, match="not int"):
        kc.get_device(0)


def test_set_device_and_scoped_device(fresh_devices):
    install(fresh_devices, None)  # no CUDA: the default is the CPU
    assert kc.get_device() == "cpu"
    with kc.ScopedDevice("cpu") as device:
        assert device is kc.get_device("cpu") and kc.get_device() is device
    kc.set_device("cpu")
    assert kc.get_device() == "cpu"
    assert get_runtime().current_device is kc.get_device("cpu")


def test_synchronize_on_cpu_is_a_no_op(fresh_devices):
    install(fresh_devices, None)
    kc.synchronize()
    kc.synchronize_device()
    kc.synchronize_device("cpu")


# ---- CUDA unavailable --------------------------------------------------------------------


def test_cuda_unavailable_without_backend(fresh_devices):
    install(fresh_devices, None)  # `import kernelc.runtime.cuda` fails
    assert not kc.is_cuda_available()
    assert kc.get_cuda_device_count() == 0
    assert kc.get_cuda_devices() == []
    assert kc.get_devices() == [kc.get_device("cpu")]
    for ident in ("cuda", "cuda:0", "cuda:3"):
        with pytest.raises(RuntimeError, match="kernelc's CUDA runtime is not available: "
                                               "this kernelc installation has no CUDA backend"):
            kc.get_device(ident)
    with pytest.raises(RuntimeError, match="not available"):
        kc.zeros(4, device="cuda")


def test_cuda_unavailable_reason_comes_from_the_backend(fresh_devices):
    install(fresh_devices, fake_cuda(count=0, reason="no CUDA driver found"))
    assert not kc.is_cuda_available()
    with pytest.raises(RuntimeError) as err:
        kc.get_device("cuda")
    assert str(err.value) == "kernelc's CUDA runtime is not available: no CUDA driver found"


def test_cuda_enumeration_failure_is_reported(fresh_devices):
    module = fake_cuda()

    def broken():
        raise OSError("libcuda.so: cannot open shared object file")

    module.enumerate_devices = broken
    install(fresh_devices, module)
    assert kc.get_devices() == ["cpu"]
    with pytest.raises(RuntimeError, match="libcuda.so"):
        kc.get_device("cuda:0")


def test_real_cuda_state_is_consistent():
    # Whatever this machine has, the answers must agree with each other.
    count = kc.get_cuda_device_count()
    assert kc.is_cuda_available() == (count > 0)
    assert len(kc.get_devices()) == count + 1
    if count == 0:
        with pytest.raises(RuntimeError, match="^kernelc's CUDA runtime is not available: "):
            kc.get_device("cuda")


# ---- CUDA present (stand-in module) ------------------------------------------------------


def test_cuda_devices_are_discovered(fresh_devices):
    install(fresh_devices, fake_cuda(count=2))
    assert kc.is_cuda_available() and kc.get_cuda_device_count() == 2
    gpu0, gpu1 = kc.get_cuda_devices()
    assert (gpu0.alias, gpu0.ordinal, gpu0.name, gpu0.arch) == ("cuda:0", 0, "Fake GPU 0", 90)
    assert gpu1.is_cuda and not gpu1.is_cpu and str(gpu1) == "cuda:1"
    assert kc.get_devices() == ["cpu", "cuda:0", "cuda:1"]
    assert kc.get_device("cuda:1") is gpu1


def test_default_device_is_cuda0_when_available(fresh_devices):
    install(fresh_devices, fake_cuda(count=2))
    assert kc.get_device() == "cuda:0"
    assert kc.get_device("cuda") == "cuda:0"


@pytest.mark.parametrize("chosen", ["cpu", "cuda:1"])
def test_kernelc_device_chooses_the_first_current_device(fresh_devices, chosen):
    install(fresh_devices, fake_cuda(count=2))
    fresh_devices.setenv("KERNELC_DEVICE", chosen)
    assert kc.get_device() == chosen
    kc.set_device("cuda:0")  # only the first choice comes from the environment
    assert kc.get_device() == "cuda:0"


def test_kernelc_device_must_name_a_device(fresh_devices):
    install(fresh_devices, fake_cuda(count=1))
    fresh_devices.setenv("KERNELC_DEVICE", "cuda:3")
    with pytest.raises(ValueError, match="cuda:3"):
        kc.get_device()


def test_cuda_alias_follows_the_current_cuda_device(fresh_devices):
    install(fresh_devices, fake_cuda(count=2))
    with kc.ScopedDevice("cuda:1"):
        assert kc.get_device("cuda") == "cuda:1"
        with kc.ScopedDevice("cpu"):
            assert kc.get_device() == "cpu"
            assert kc.get_device("cuda") == "cuda:0"
        assert kc.get_device() == "cuda:1"
    assert kc.get_device() == "cuda:0"


def test_missing_ordinal(fresh_devices):
    install(fresh_devices, fake_cuda(count=2))
    with pytest.raises(ValueError, match=r"'cuda:2': 2 CUDA device\(s\) found"):
        kc.get_device("cuda:2")


def test_synchronize_reaches_the_cuda_runtime(fresh_devices):
    module = fake_cuda(count=2)
    install(fresh_devices, module)
    kc.synchronize()
    assert module.synced == [0, 1]
    kc.synchronize_device("cuda:1")
    kc.synchronize_device("cpu")
    assert module.synced == [0, 1, 1]
    kc.synchronize_device()  # current = cuda:0
    assert module.synced == [0, 1, 1, 0]


def test_cuda_arrays_need_a_memory_backend(fresh_devices):
    install(fresh_devices, fake_cuda(count=1))
    with pytest.raises(RuntimeError, match="kernelc's CUDA runtime is not available"):
        kc.zeros(8, device="cuda:0")


def test_memory_backend_plugs_in(fresh_devices):
    install(fresh_devices, fake_cuda(count=1, with_memory=True))
    rng = np.random.default_rng(7)
    values = rng.standard_normal((5, 3)).astype(np.float32) + 2.0
    a = kc.array(values, device="cuda:0")
    assert a.device == "cuda:0" and a.ptr % 64 == 0
    assert a.__dlpack_device__() == (2, 0)
    np.testing.assert_array_equal(a.numpy(), values)
    back = a.to("cpu")
    assert back.device == "cpu"
    np.testing.assert_array_equal(back.numpy(), values)
    twin = kc.clone(a)
    twin.fill_(4.0)
    np.testing.assert_array_equal(twin.numpy(), np.full((5, 3), 4.0, np.float32))
    np.testing.assert_array_equal(a[1:3].numpy(), values[1:3])
    assert a[4, 2] == values[4, 2]
    with pytest.raises(AttributeError):
        _ = a.__array_interface__
    assert a.__cuda_array_interface__["data"] == (a.ptr, False)


@kc.kernel
def doubled(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = 2.0 * x[i]


def test_is_capturing_follows_graph_captures(fresh_devices):
    cpu = kc.get_device("cpu")
    x0 = np.random.default_rng(5).uniform(1.0, 2.0, 8).astype(np.float32)
    x, y = kc.array(x0, device=cpu), kc.full(8, np.nan, dtype=float, device=cpu)
    assert cpu.is_capturing is False and kc.get_stream(cpu).is_capturing is False
    with kc.ScopedCapture(device=cpu) as capture:
        assert cpu.is_capturing is True and kc.get_stream(cpu).is_capturing is True
        kc.launch(doubled, 8, inputs=[x, y], device=cpu)
    assert cpu.is_capturing is False
    assert np.isnan(y.numpy()).all()  # recorded, not run
    kc.capture_launch(capture.graph)
    np.testing.assert_array_equal(y.numpy(), 2.0 * x0)
    module = fake_cuda(count=1)
    info = types.SimpleNamespace(capturing=0)
    module.device_info = lambda device: info
    install(fresh_devices, module)
    gpu = kc.get_device("cuda:0")
    assert gpu.is_capturing is False
    info.capturing = 1  # what an open kc.ScopedCapture on the GPU counts
    assert gpu.is_capturing is True and cpu.is_capturing is False
