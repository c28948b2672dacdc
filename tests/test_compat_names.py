"""Warp's smaller public names: `Float` / `Int` / `Scalar` generic annotations, the
`WarpCodegen*Error` classes, `DeviceLike`, the CUDA version and diagnostics queries,
`get_suggested_block_size`, the CUDA profiler calls, and peer / memory-pool access switches.
The CPU answers are checked here (and against Warp where it is installed); the CUDA side
runs in the tests marked `cuda`."""

import types
import typing

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import poisoned

# ---- Float, Int, Scalar ---------------------------------------------------------------------


@kc.func
def square(x: kc.Float):
    return x * x


@kc.func
def double(x: kc.Scalar):
    return x + x


@kc.func
def total(a: kc.array(dtype=kc.Float)):
    return a[0] + a[1]


def _float_kernel(dtype):
    @kc.kernel
    def k(a: kc.array(dtype=dtype), out: kc.array(dtype=dtype), s: kc.array(dtype=dtype)):
        i = kc.tid()
        out[i] = square(a[i]) + double(a[i])
        if i == 0:
            s[0] = total(a)

    return k


@pytest.mark.parametrize("dtype", [kc.float16, kc.float32, kc.float64], ids=repr)
def test_float_and_scalar_funcs_specialise_per_float_type(rng, dtype):
    npt = dtype.np_dtype
    x = rng.uniform(0.5, 2.0, 16).astype(npt)
    out, s = poisoned(16, npt), poisoned(1, npt)
    kc.launch(_float_kernel(dtype), 16, inputs=[kc.array(x, dtype=dtype), out, s])
    want = x.astype(np.float64) ** 2 + 2 * x.astype(np.float64)
    rtol = 2e-3 if dtype is kc.float16 else 1e-6
    np.testing.assert_allclose(out.numpy().astype(np.float64), want, rtol=rtol)
    np.testing.assert_allclose(float(s.numpy()[0]), float(x[0]) + float(x[1]), rtol=rtol)


@kc.func
def twice_int(x: kc.Int):
    return x + x


def _int_kernel(dtype):
    @kc.kernel
    def k(a: kc.array(dtype=dtype), out: kc.array(dtype=dtype)):
        i = kc.tid()
        out[i] = twice_int(a[i]) + double(a[i])

    return k


@pytest.mark.parametrize("dtype", [kc.int8, kc.uint16, kc.int32, kc.int64, kc.uint64], ids=repr)
def test_int_and_scalar_funcs_specialise_per_int_type(rng, dtype):
    npt = dtype.np_dtype
    x = rng.integers(1, 30, 16).astype(npt)
    out = poisoned(16, npt)
    kc.launch(_int_kernel(dtype), 16, inputs=[kc.array(x, dtype=dtype), out])
    np.testing.assert_array_equal(out.numpy(), (4 * x.astype(np.int64)).astype(npt))


@kc.kernel
def float_given_int(a: kc.array(dtype=int)):
    a[0] = square(a[0])


@kc.kernel
def int_given_float(a: kc.array(dtype=float)):
    a[0] = twice_int(a[0])


@kc.kernel
def scalar_given_vector(a: kc.array(dtype=kc.vec3)):
    a[0] = double(a[0])


@kc.kernel
def scalar_given_bool(a: kc.array(dtype=kc.bool)):
    a[0] = double(a[0])


@pytest.mark.parametrize("kernel, array, expected", [
    (float_given_int, kc.zeros(1, dtype=int), "argument 'x' of 'square' expects Float"),
    (int_given_float, kc.zeros(1), "argument 'x' of 'twice_int' expects Int"),
    (scalar_given_vector, kc.zeros(1, dtype=kc.vec3), "of 'double' expects Scalar"),
    (scalar_given_bool, kc.zeros(1, dtype=kc.bool), "of 'double' expects Scalar"),
], ids=["float-int", "int-float", "scalar-vec3", "scalar-bool"])
def test_a_mismatching_argument_is_a_kernel_error_at_the_call(kernel, array, expected):
    with pytest.raises(kc.KernelError, match=expected) as err:
        kc.launch(kernel, 1, inputs=[array])
    line = kernel.func.__code__.co_firstlineno + 2  # the call in the kernel's body
    assert f"test_compat_names.py:{line}:" in str(err.value)
    assert "got" in str(err.value)


@kc.kernel
def scale_any_float(x: kc.array(dtype=kc.Float), s: kc.Float):
    i = kc.tid()
    x[i] = x[i] * s


def test_kernels_with_float_parameters_specialise_per_launch():
    x64 = kc.array(np.array([1.0, 2.0]), dtype=kc.float64)
    kc.launch(scale_any_float, 2, inputs=[x64, np.float64(3.0)])
    np.testing.assert_array_equal(x64.numpy(), [3.0, 6.0])
    x32 = kc.array(np.array([1.0, 2.0], np.float32))
    kc.launch(scale_any_float, 2, inputs=[x32, 0.5])  # a Python float is float32, as in Warp
    np.testing.assert_array_equal(x32.numpy(), [0.5, 1.0])
    host = np.array([2.0, 4.0], np.float32)
    kc.launch(scale_any_float, 2, inputs=[host, 0.25], device="cpu")  # NumPy, in place
    np.testing.assert_array_equal(host, [0.5, 1.0])
    with pytest.raises(kc.KernelError, match="float64 and float32"):
        kc.launch(scale_any_float, 2, inputs=[x64, 3.0])  # Warp rejects this mix too
    with pytest.raises(kc.KernelError, match="argument 's': expected Float"):
        kc.launch(scale_any_float, 2, inputs=[x32, 3])
    with pytest.raises(kc.KernelError, match="argument 'x'"):
        kc.launch(scale_any_float, 2, inputs=[kc.zeros(2, dtype=int), 3.0])
    with pytest.raises(kc.KernelError, match="is generic: give arg_types"):
        kc.compile(scale_any_float)
    compiled = kc.compile(scale_any_float, arg_types=[kc.array(dtype=kc.float64), kc.float64])
    assert compiled.format == "obj" and compiled.binary


def test_load_module_skips_kernels_with_float_parameters():
    module = types.ModuleType("float_kernels")
    module.scale_any_float, module.k_add = scale_any_float, k_add
    k_add.compiled.clear()
    kc.load_module(module)  # would fail if it compiled scale_any_float unspecialised
    assert k_add.compiled


def test_float_int_scalar_are_warps_type_variables():
    for var, python_types in ((kc.Float, (float,)), (kc.Int, (int,)),
                              (kc.Scalar, (int, float))):
        assert isinstance(var, typing.TypeVar)
        assert set(python_types) <= set(var.__constraints__)
    assert kc.float64 in kc.Float.__constraints__ and kc.int8 in kc.Int.__constraints__
    assert kc.bool not in kc.Scalar.__constraints__
    with pytest.raises(TypeError):
        kc.zeros(4, dtype=kc.Float)  # an annotation, not the type of a value
    warp = pytest.importorskip("warp")
    for ours, theirs in ((kc.Float, warp.Float), (kc.Int, warp.Int),
                         (kc.Scalar, warp.Scalar)):
        assert repr(ours) == repr(theirs)
        assert {getattr(t, "__name__", repr(t)) for t in ours.__constraints__} <= {
            getattr(t, "__name__", repr(t)) for t in theirs.__constraints__}


# ---- errors -------------------------------------------------------------------------------


@kc.kernel
def undefined_name(a: kc.array(dtype=float)):
    a[0] = not_defined_anywhere  # noqa: F821


def test_compile_errors_are_warp_codegen_errors():
    with pytest.raises(kc.WarpCodegenError) as err:
        kc.launch(undefined_name, 1, inputs=[kc.zeros(1)])
    assert isinstance(err.value, kc.KernelError)
    assert isinstance(err.value, RuntimeError) and isinstance(err.value, TypeError)
    assert "not_defined_anywhere" in str(err.value)


@pytest.mark.parametrize("name, builtin", [
    ("WarpCodegenTypeError", TypeError), ("WarpCodegenAttributeError", AttributeError),
    ("WarpCodegenIndexError", IndexError), ("WarpCodegenKeyError", KeyError),
    ("WarpCodegenValueError", ValueError)])
def test_specific_codegen_errors(name, builtin):
    cls = getattr(kc, name)
    assert issubclass(cls, builtin) and issubclass(cls, kc.KernelError)
    assert issubclass(cls, kc.WarpCodegenError) and issubclass(kc.WarpCodegenError, RuntimeError)
    err = cls("something is wrong")
    assert str(err) == "something is wrong"  # not quoted, even for the KeyError
    located = err.with_context(kc.errors.Loc("k.py", 12, 4), "k")
    assert type(located) is cls and str(located).startswith("k.py:12:5: in kernel 'k'")
    try:
        raise cls("caught as the built-in")
    except builtin as caught:
        assert caught.message == "caught as the built-in"
    warp = pytest.importorskip("warp")
    assert issubclass(getattr(warp, name), builtin)  # the same built-in base as Warp's


@kc.struct
class _Body:
    mass: float


@kc.kernel
def unknown_vector_axis(a: kc.array(dtype=kc.vec3)):
    v = a[0]
    a[0] = kc.vec3(v.w, 0.0, 0.0)


@kc.kernel
def unknown_struct_field(a: kc.array(dtype=_Body)):
    b = a[0]
    b.speed = 1.0


@kc.kernel
def unknown_module_function(a: kc.array(dtype=float)):
    a[0] = kc.no_such_function(1.0)


@kc.kernel
def type_changing_assignment(a: kc.array(dtype=float), n: kc.array(dtype=int)):
    x = a[0]
    x = n[0]
    a[0] = x


@pytest.mark.parametrize("kernel, dtypes, cls, builtin, where", [
    (undefined_name, (float,), kc.WarpCodegenKeyError, KeyError, "not_defined_anywhere"),
    (unknown_vector_axis, (kc.vec3,), kc.WarpCodegenAttributeError, AttributeError, "v.w"),
    (unknown_struct_field, (_Body,), kc.WarpCodegenAttributeError, AttributeError, "b.speed"),
    (unknown_module_function, (float,), kc.WarpCodegenAttributeError, AttributeError,
     "kc.no_such_function"),
    (type_changing_assignment, (float, int), kc.WarpCodegenTypeError, TypeError, "x = n[0]"),
])
def test_codegen_errors_raise_warps_specific_classes(kernel, dtypes, cls, builtin, where):
    # The class Warp raises for the same mistake, so `except KeyError:` (say) still catches
    # it; the message keeps its place in the source.
    with pytest.raises(cls) as err:
        kc.launch(kernel, 1, inputs=[kc.zeros(1, dtype=t) for t in dtypes])
    assert isinstance(err.value, builtin) and isinstance(err.value, kc.KernelError)
    text = str(err.value)
    assert "test_compat_names.py:" in text and where in text and "^" in text


def test_determinism_error_is_warps_kind():
    assert issubclass(kc.WarpDeterminismError, RuntimeError)
    assert not issubclass(kc.WarpDeterminismError, kc.KernelError)


def test_device_like():
    assert set(typing.get_args(kc.DeviceLike)) == {kc.Device, str, type(None)}


# ---- CUDA versions and diagnostics ---------------------------------------------------------


def _nvrtc_available() -> bool:
    try:
        from kernelc.codegen.nvrtc import nvrtc_version

        nvrtc_version()
    except Exception:
        return False
    return True


def test_cuda_versions():
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
        has_driver = True
    except OSError:
        has_driver = False
    driver = kc.get_cuda_driver_version()
    if has_driver:
        assert isinstance(driver, tuple) and driver[0] >= 11
    else:
        assert driver is None  # as in Warp without a driver
    archs = kc.get_cuda_supported_archs()
    if _nvrtc_available():
        from kernelc.codegen.nvrtc import nvrtc_version

        assert kc.get_cuda_toolkit_version() == tuple(nvrtc_version())
        assert archs == sorted(archs) and {75, 90} <= set(archs)
    else:
        assert kc.get_cuda_toolkit_version() is None and archs == []


def test_print_diagnostics(capsys):
    info = kc.print_diagnostics()
    out = capsys.readouterr().out
    for section in ("Software", "CUDA", "CPU", "Devices"):
        assert f"\n{section}\n" in f"\n{out}"
    assert info["kernelc"] == kc.__version__ and info["numpy"] == np.__version__
    assert info["devices"][0]["alias"] == "cpu"
    assert len(info["devices"]) == 1 + kc.get_cuda_device_count()
    assert info["cuda_enabled"] == _nvrtc_available()
    assert info["cuda_driver"] == (None if kc.get_cuda_driver_version() is None else
                                   "{}.{}".format(*kc.get_cuda_driver_version()))
    assert info["cpu_name"] and info["cpu_name"] in out
    warp = pytest.importorskip("warp")
    shared = {"numpy", "python", "platform", "cuda_enabled", "cuda_toolkit", "cuda_driver",
              "nvrtc", "cpu_name", "cpu_features", "devices"}
    warp.config.log_level = warp.LOG_ERROR
    try:
        theirs = warp.print_diagnostics()
    finally:
        warp.config.log_level = warp.LOG_INFO
        capsys.readouterr()
    assert shared <= set(info) and shared <= set(theirs)  # Warp's keys mean the same here
    assert type(info["cpu_features"]) is type(theirs["cpu_features"]) is list


@kc.kernel
def k_add(a: kc.array(dtype=float), b: kc.array(dtype=float)):
    i = kc.tid()
    b[i] = a[i] + 1.0


def test_suggested_block_size_and_profiler_on_the_cpu():
    assert kc.get_suggested_block_size(k_add, "cpu") == (1, 1)
    with pytest.raises(TypeError, match="expects a kernel"):
        kc.get_suggested_block_size(lambda: None, "cpu")
    kc.cuda_profiler_start("cpu")  # no-ops on the CPU, as in Warp
    kc.cuda_profiler_stop("cpu")
    with kc.ScopedCudaProfiler("cpu") as scope:
        assert scope.device == "cpu"
    with pytest.raises(ValueError, match="inside"):
        with kc.ScopedCudaProfiler("cpu"):
            raise ValueError("inside")


# ---- memory-pool and peer access ------------------------------------------------------------


def test_access_switches_on_the_cpu():
    for query in (kc.is_mempool_access_supported, kc.is_mempool_access_enabled,
                  kc.is_peer_access_supported, kc.is_peer_access_enabled):
        assert query("cpu", "cpu") is False
    kc.set_mempool_access_enabled("cpu", "cpu", False)  # turning off nothing is allowed
    kc.set_peer_access_enabled("cpu", "cpu", False)
    kc.set_mempool_enabled("cpu", False)
    with pytest.raises(ValueError, match="Memory pool access is only supported between CUDA"):
        kc.set_mempool_access_enabled("cpu", "cpu", True)
    with pytest.raises(ValueError, match="Peer access is only supported between CUDA"):
        kc.set_peer_access_enabled("cpu", "cpu", True)
    with kc.ScopedMempool("cpu", False), kc.ScopedPeerAccess("cpu", "cpu", False), \
            kc.ScopedMempoolAccess("cpu", "cpu", False):
        pass
    for scope in (lambda: kc.ScopedMempool("cpu", True),
                  lambda: kc.ScopedPeerAccess("cpu", "cpu", True),
                  lambda: kc.ScopedMempoolAccess("cpu", "cpu", True)):
        with pytest.raises(ValueError, match="only supported"):
            with scope():
                pass


def test_access_switches_match_warp_on_the_cpu():
    warp = pytest.importorskip("warp")
    warp.config.log_level = warp.LOG_ERROR
    try:
        for name in ("is_mempool_access_supported", "is_mempool_access_enabled",
                     "is_peer_access_supported", "is_peer_access_enabled"):
            assert getattr(kc, name)("cpu", "cpu") == getattr(warp, name)("cpu", "cpu")
        for name, args in (("set_mempool_access_enabled", ("cpu", "cpu")),
                           ("set_peer_access_enabled", ("cpu", "cpu")),
                           ("set_mempool_enabled", ("cpu",))):
            assert getattr(kc, name)(*args, False) is getattr(warp, name)(*args, False) is None
            with pytest.raises(ValueError) as theirs:
                getattr(warp, name)(*args, True)
            with pytest.raises(ValueError) as ours:
                getattr(kc, name)(*args, True)
            assert str(ours.value) == str(theirs.value)
    finally:
        warp.config.log_level = warp.LOG_INFO


# ---- on a GPU --------------------------------------------------------------------------------


def _gpu():
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    return kc.get_cuda_device(0)


@pytest.mark.cuda
def test_suggested_block_size_on_cuda():
    dev = _gpu()
    block, min_grid = kc.get_suggested_block_size(k_add, dev)
    assert 32 <= block <= 1024 and block % 32 == 0 and min_grid >= 1
    a = kc.array(np.arange(5000, dtype=np.float32), device=dev)
    b = kc.zeros(5000, device=dev)
    kc.launch(k_add, 5000, inputs=[a, b], device=dev, block_dim=block)
    np.testing.assert_array_equal(b.numpy(), np.arange(5000, dtype=np.float32) + 1.0)
    with pytest.raises(RuntimeError, match="generic"):
        kc.get_suggested_block_size(scale_any_float, dev)


@pytest.mark.cuda
def test_profiler_and_access_switches_on_cuda():
    dev = _gpu()
    kc.cuda_profiler_start(dev)
    kc.cuda_profiler_stop(dev)
    with kc.ScopedCudaProfiler(dev):
        kc.zeros(16, device=dev)
    assert kc.is_peer_access_enabled(dev, dev) and kc.is_peer_access_supported(dev, dev)
    assert kc.is_mempool_access_enabled(dev, dev) == kc.is_mempool_supported(dev)
    assert kc.is_mempool_access_supported(dev, dev) == kc.is_mempool_supported(dev)
    assert kc.is_mempool_access_enabled(dev, "cpu") is False
    kc.set_peer_access_enabled(dev, dev, True)  # a device always reaches itself
    kc.set_mempool_access_enabled(dev, dev, True)
    if kc.is_mempool_supported(dev):
        with kc.ScopedMempool(dev, False):
            assert not kc.is_mempool_enabled(dev)
            a = kc.full(100, 1.0, device=dev)
        assert kc.is_mempool_enabled(dev)
        np.testing.assert_array_equal(a.numpy(), 1.0)
    for other in kc.get_cuda_devices()[1:]:  # several GPUs: the real switches
        if kc.is_peer_access_supported(dev, other):
            with kc.ScopedPeerAccess(dev, other, True):
                assert kc.is_peer_access_enabled(dev, other)
            assert not kc.is_peer_access_enabled(dev, other)
        if kc.is_mempool_access_supported(dev, other):
            with kc.ScopedMempoolAccess(dev, other, True):
                assert kc.is_mempool_access_enabled(dev, other)
            assert not kc.is_mempool_access_enabled(dev, other)


# ---- handle -----------------------------------------------------------------------------------


@kc.struct
class MeshRef:
    mesh: kc.handle
    scale: float


@kc.kernel
def closest_through_handles(refs: kc.array(dtype=MeshRef), ids: kc.array(dtype=kc.handle),
                            p: kc.array(dtype=kc.vec3), out: kc.array2d(dtype=float)):
    i = kc.tid()
    q = kc.mesh_query_point(refs[0].mesh, p[i], 100.0)
    r = kc.mesh_query_point(ids[0], p[i], 100.0)
    out[i, 0] = float(q.face) * refs[0].scale
    out[i, 1] = float(r.face) * refs[0].scale


def test_handle_is_warps_uint64_for_object_ids():
    assert kc.handle is kc.uint64 and np.dtype(kc.dtype_to_numpy(kc.handle)) == np.uint64
    points = kc.array(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], np.float32),
                      dtype=kc.vec3)
    mesh = kc.Mesh(points, kc.array(np.array([0, 1, 2, 1, 3, 2], np.int32)))
    ref = MeshRef()
    ref.mesh = mesh.id
    ref.scale = 2.0
    refs = kc.array([ref], dtype=MeshRef)
    ids = kc.array([mesh.id], dtype=kc.handle)
    p = kc.array(np.array([[0.1, 0.1, 1.0], [0.9, 0.9, -1.0]], np.float32), dtype=kc.vec3)
    out = poisoned((2, 2), np.float32)
    kc.launch(closest_through_handles, 2, [refs, ids, p, out])
    np.testing.assert_array_equal(out.numpy(), [[0.0, 0.0], [2.0, 2.0]])


def test_every_warp_setting_can_be_read_and_set():
    warp_config = pytest.importorskip("warp.config")
    names = [n for n in dir(warp_config) if not n.startswith("_")
             and not callable(getattr(warp_config, n))
             and not isinstance(getattr(warp_config, n), types.ModuleType)]
    # (an enum of Warp's own launch checks, with no counterpart)
    missing = [n for n in names if not hasattr(kc.config, n)
               and n != "launch_array_access_mode"]
    assert missing == []
    saved = kc.config.default_grid_stride
    kc.config.default_grid_stride = False
    assert kc.config.default_grid_stride is False
    kc.config.default_grid_stride = saved
