"""`kc.map` (Warp's `wp.map`): the programs of tests/map_programs.py give Warp's results
and NumPy's; broadcasting, outputs, kernels, the cache, gradients, CUDA, and errors."""

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
from kernelc.utils.map_kernel import map_cache
from tests import map_programs
from tests.conftest import nonzero, poisoned, run_warp

ROOT = Path(__file__).resolve().parents[1]
SCALE = 2.0  # a module-level constant read by a lambda (see test_module_constants_are_keys)


@pytest.fixture(scope="module")
def inputs():
    return map_programs.make_inputs(np.random.default_rng(20261101))


@pytest.fixture(scope="module")
def kernelc_results(inputs):
    return map_programs.run(kc, inputs)


def test_programs_give_warps_results(inputs, kernelc_results, tmp_path):
    driver = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from tests import map_programs
results.update(map_programs.run(wp, inputs))
"""
    expected = run_warp(driver, tmp_path, **inputs)
    assert set(kernelc_results) == set(expected)
    for name, want in expected.items():
        have = kernelc_results[name]
        assert have.shape == want.shape and have.dtype == want.dtype, name
        np.testing.assert_allclose(have, want, rtol=2e-6, atol=1e-6, err_msg=name)


def numpy_results(x: dict) -> dict:
    """NumPy (float64 where it matters) for the programs' results."""
    u, v = x["u"].astype(np.float64), x["v"].astype(np.float64)
    vecs, d = x["vecs"].astype(np.float64), np.array([0.5, -1.0, 2.0])
    f32 = np.float32
    sq = 3.0 * u * u
    b = x["x35"][:, :1].astype(np.float64)
    return {
        "doc_lambda": np.array([2.0, 4.0, 6.0]), "doc_clamp": np.array([-0.5, 0.0, 0.5]),
        "b314_54": x["x314"] * x["x54"] + 1.0, "b5_35": x["x5"] * x["x35"] + 1.0,
        "b2131_415": x["x2131"] * x["x415"] + 1.0, "b1_5": x["x1"] * x["x5"] + 1.0,
        "b3_mixed": (x["x314"] * x["x54"]).astype(f32).astype(np.float64) - x["x5"][:4],
        "axpy32": 2.0 * u + v, "axpy64": -3.0 * u + v, "pair_sum": u + v,
        "pair_product": u * v, "plain": np.where(u > v, u - v, 2.0 * v),
        "clamp": np.clip(u, -0.5, 0.75), "lerp": u + 0.25 * (v - u),
        "closure": np.sin(u) * 1.5, "ints": x["ints"] * 3 + 1,
        "length": np.linalg.norm(vecs, axis=1),
        "normalize": vecs / np.linalg.norm(vecs, axis=1, keepdims=True),
        "dot": vecs @ d, "matvec": vecs @ x["mat"].astype(np.float64).T,
        "cross": 2.0 * np.cross(vecs, d),
        "split_first": vecs[:, 0] + vecs[:, 1], "split_second": 2.0 * vecs,
        "into": np.abs(u), "inplace": np.maximum(u, 0.0), "launched": 3.0 * u - 1.0,
        "requires_grad": np.array([True, False, False, True]),
        "grad_value": np.sin(sq)[None, :] * b,
        "grad_a": (b.sum() * np.cos(sq) * 6.0 * u), "grad_b": np.sin(sq).sum() + 0.0 * b,
    }


def test_programs_give_numpys_results(inputs, kernelc_results):
    expected = numpy_results(inputs)
    assert set(expected) == set(kernelc_results) - {"doc_transform"}
    for name, want in expected.items():
        have = kernelc_results[name]
        assert have.shape == np.shape(want), name
        np.testing.assert_allclose(have, want, rtol=2e-5, atol=2e-5, err_msg=name)
    assert kernelc_results["ints"].dtype == np.int32
    assert kernelc_results["b3_mixed"].dtype == np.float64


def test_transform_point_matches_the_host_builtin():
    tf = kc.transform((1.0, 2.0, 3.0), kc.quat_rpy(0.2, -0.6, 0.1))
    points = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [-1.0, 0.5, 2.0]], np.float32)
    got = kc.map(kc.transform_point, tf, kc.array(points, dtype=kc.vec3))
    assert got.dtype == kc.vec3
    for p, q in zip(points, got.numpy()):
        np.testing.assert_allclose(q, np.asarray(kc.transform_point(tf, kc.vec3(*p))),
                                   rtol=1e-6)


# ---- outputs, kernels, devices -----------------------------------------------------------

def test_out_is_written_in_full(rng):
    a = kc.array(rng.integers(-9, 9, (4, 6)).astype(np.int32))
    b = kc.array(rng.integers(-9, 9, 6).astype(np.int32))
    out = poisoned((4, 6), np.int32)
    assert kc.map(lambda x, y: x * y - 3, a, b, out=out) is out
    np.testing.assert_array_equal(out.numpy(), a.numpy() * b.numpy() - 3)
    pair = [poisoned((4, 6), np.float32), poisoned((4, 6), np.int32)]
    assert kc.map(lambda x: (kc.float32(x) * 0.5, x + 1), a, out=pair) is not None
    np.testing.assert_array_equal(pair[0].numpy(), a.numpy() * 0.5)
    np.testing.assert_array_equal(pair[1].numpy(), a.numpy() + 1)
    single = [poisoned((4, 6), np.int32)]  # a list of one array for one result is accepted
    assert kc.map(abs, a, out=single) is single[0]
    np.testing.assert_array_equal(single[0].numpy(), np.abs(a.numpy()))


def test_returned_kernel_is_a_typed_kernel(rng):
    x = kc.array(rng.uniform(1, 2, (3, 4)).astype(np.float32))
    row = kc.array(rng.uniform(1, 2, (1, 4)).astype(np.float32))
    kernel = kc.map(lambda p, q, s: p - q * s, x, row, 0.5, return_kernel=True)
    assert isinstance(kernel, kc.Kernel) and kernel.__name__ == "map_kernel"
    assert not kernel.is_generic
    assert kernel.arg_names == ("p_array", "q_array", "s", "out_0")
    out = poisoned((3, 4), np.float32)
    kc.launch(kernel, dim=(3, 4), inputs=[x, row, 0.5], outputs=[out])
    np.testing.assert_allclose(out.numpy(), x.numpy() - row.numpy() * 0.5, rtol=1e-6)
    assert "map_kernel" in kc.compile(kernel).source


def test_returned_kernel_compiles_for_cuda():
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs the NVRTC bindings")
    vecs = kc.array(np.ones((4, 3), np.float32), dtype=kc.vec3)
    kernel = kc.map(kc.transform_point, kc.transform_identity(), vecs, return_kernel=True)
    compiled = kc.compile(kernel, target="cuda", arch=90)
    assert compiled.format == "cubin" and "map_kernel" in compiled.source


def test_values_kinds_and_callables(rng):
    @kc.struct
    class Line:
        k: float
        b: float

    line = Line()
    line.k, line.b = 2.0, -1.0
    a = kc.array(rng.uniform(-2, 2, 7).astype(np.float32))
    ints = kc.array(rng.integers(-5, 5, 7).astype(np.int32))
    np.testing.assert_allclose(kc.map(lambda x, p: p.k * x + p.b, a, line).numpy(),
                               2.0 * a.numpy() - 1.0, rtol=1e-6)
    wide = kc.map(kc.float64, a)  # a kernelc type converts
    assert wide.dtype == kc.float64
    np.testing.assert_array_equal(wide.numpy(), a.numpy().astype(np.float64))
    np.testing.assert_array_equal(kc.map(float, ints).numpy(), ints.numpy().astype(np.float32))
    built = kc.map(kc.vec3, a, 1.0, a)  # a vector type builds vectors
    assert built.dtype == kc.vec3
    np.testing.assert_array_equal(built.numpy()[:, 1], 1.0)
    np.testing.assert_array_equal(kc.map(max, a, 0.25).numpy(), np.maximum(a.numpy(), 0.25))
    q = kc.map(lambda x, s: x * s, a, np.float32(3.0))
    assert q.dtype == kc.float32 and kc.map(lambda x, s: x * s, ints, 2).dtype == kc.int32
    np.testing.assert_array_equal(kc.utils.map(kc.sqrt, kc.array([4.0, 9.0])).numpy(), [2, 3])


@pytest.mark.skipif(sys.version_info < (3, 11), reason="columns of code positions: 3.11+")
def test_lambdas_sharing_a_line_are_told_apart(rng):
    a = kc.array(rng.uniform(1, 2, 5).astype(np.float32))
    f, g = lambda x: x * 2.0, lambda x: x + (lambda y: y * 10.0)(x)  # noqa: E731
    np.testing.assert_allclose(kc.map(f, a).numpy(), a.numpy() * 2.0, rtol=1e-6)
    h = (lambda x:  # noqa: E731
         x * 3.0
         + 1.0)
    np.testing.assert_allclose(kc.map(h, a).numpy(), a.numpy() * 3.0 + 1.0, rtol=1e-6)
    with pytest.raises(kc.KernelError, match="'lambda' is not supported"):  # g, not f
        kc.map(g, a)


def test_device_argument(rng):
    a = kc.array(rng.uniform(1, 2, 5).astype(np.float32))
    out = kc.map(lambda x: x + 1.0, a, device="cpu")
    assert out.device == kc.get_device("cpu")


@pytest.mark.cuda
def test_map_on_cuda(rng):
    if not kc.is_cuda_available():
        pytest.skip("needs a CUDA device")
    x = rng.uniform(-1, 1, (64, 33)).astype(np.float32)
    y = rng.uniform(-1, 1, 33).astype(np.float32)
    a, b = kc.array(x, device="cuda"), kc.array(y, device="cuda")
    s, p = kc.map(lambda u, v: (u + v, u * v), a, b)
    assert s.device == a.device
    np.testing.assert_allclose(s.numpy(), x + y, rtol=1e-6)
    np.testing.assert_allclose(p.numpy(), x * y, rtol=1e-6)
    out = kc.zeros((64, 33), dtype=kc.float32, device="cuda")
    kc.map(kc.clamp, a, -0.5, 0.5, out=out, block_dim=64)
    np.testing.assert_array_equal(out.numpy(), np.clip(x, -0.5, 0.5))


def test_kernel_runs_through_the_cuda_harness(rng):
    """The generated kernel's CUDA-C, run on the host (tests/cuda_harness)."""
    cuda_harness = pytest.importorskip("cuda_harness")
    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    from kernelc.codegen.cuda import CudaOptions, emit_cuda

    x = rng.uniform(-1, 1, (5, 1, 7)).astype(np.float32)
    y = rng.uniform(-1, 1, (3, 7)).astype(np.float32)
    kernel = kc.map(lambda u, v, w: (u * w + v, u - v), kc.array(x), kc.array(y), 0.5,
                    return_kernel=True)
    host = cuda_harness.build(emit_cuda(kernel.get_ir(kernel.param_types), CudaOptions()))
    first, second = np.full((5, 3, 7), np.nan, np.float32), np.full((5, 3, 7), np.nan, np.float32)
    assert host.launch((5, 3, 7), [x, y, 0.5, first, second], block_dim=32, workers=2) is None
    np.testing.assert_allclose(first, x * 0.5 + y, rtol=1e-6)
    np.testing.assert_allclose(second, x - y, rtol=1e-6)


# ---- the cache ---------------------------------------------------------------------------

def test_second_map_compiles_nothing(rng):
    a = kc.array(rng.uniform(1, 2, 100).astype(np.float32))
    kernels = []
    with kc.scoped_set_flag(kc.JitFlag.KernelHistory):
        kc.kernel_history()
        for _ in range(3):  # a new lambda object each time, the same code
            kernels.append(kc.map(lambda x: x * 7.0 - 1.0, a, return_kernel=True))
            kc.map(lambda x: x * 7.0 - 1.0, a)
        history = kc.kernel_history()
    assert kernels[0] is kernels[1] is kernels[2]
    assert [h["name"] for h in history] == ["map_kernel"] * 3
    assert history[0]["cache"] in ("miss", "disk")
    assert [h["cache"] for h in history[1:]] == ["memory", "memory"]


def test_captured_values_are_part_of_the_key(rng):
    a = kc.array(rng.uniform(1, 2, 10).astype(np.float32))
    for s in (2.0, 3.0, 2.0):
        # The lambda runs at once, so binding the loop variable late is what is meant.
        np.testing.assert_allclose(kc.map(lambda x: x * s, a).numpy(), a.numpy() * s)  # noqa: B023
    for v in (kc.vec2(1.0, 2.0), kc.vec2(3.0, 4.0)):
        got = kc.map(lambda x: x * v[1], a)  # noqa: B023
        np.testing.assert_allclose(got.numpy(), a.numpy() * v[1])


def test_module_constants_are_keys(rng):
    global SCALE
    a = kc.array(rng.uniform(1, 2, 10).astype(np.float32))
    try:
        for value in (2.0, 5.0):
            SCALE = value
            got = kc.map(lambda x: x * SCALE, a)  # noqa: B023
            np.testing.assert_allclose(got.numpy(), a.numpy() * value)
    finally:
        SCALE = 2.0


def test_the_cache_lives_on_the_runtime():
    kc.map(kc.abs, kc.array([-1.0, 2.0], dtype=kc.float32))
    assert map_cache() is map_cache() and map_cache().kernels
    assert kc.map is kc.utils.map


# ---- errors ------------------------------------------------------------------------------

def _line_of(text: str) -> tuple[int, int]:
    """The line (1-based) and column (1-based) of `text` in this file."""
    for number, line in enumerate(Path(__file__).read_text().splitlines(), 1):
        if text in line and "_line_of" not in line:
            return number, line.index(text) + 1
    raise AssertionError(text)


def test_error_in_a_lambda_points_at_it():
    a = kc.array([1.0, 2.0], dtype=kc.float32)
    with pytest.raises(kc.KernelError) as info:
        kc.map(lambda x: [x, x * 2.0], a)
    line, col = _line_of("[x, x * 2.0]")
    assert f"test_map.py:{line}:{col}:" in str(info.value)
    assert "a list is not supported" in str(info.value)
    assert "^~~~" in str(info.value)


def _takes_attribute(x):
    return x.missing_field


def test_error_in_a_function_points_at_it():
    with pytest.raises(kc.KernelError) as info:
        kc.map(_takes_attribute, kc.array([1.0], dtype=kc.float32))
    line, col = _line_of("x.missing_field")
    assert f"test_map.py:{line}:{col}:" in str(info.value)


@kc.func
def _scaled(x: float, s: float):
    return x * s


@kc.func
def _nothing(x: float):
    y = x  # noqa: F841


def test_call_errors():
    a = kc.array([1.0, 2.0], dtype=kc.float32)
    with pytest.raises(kc.KernelError, match=r"^Function _scaled does not support the "
                                             r"provided argument types vec3, float32: "):
        kc.map(_scaled, kc.array(np.ones((2, 3), np.float32), dtype=kc.vec3), 1.0)
    with pytest.raises(TypeError, match=r"^Number of input arguments \(1\) does not match "
                                        r"expected number of function arguments \(2\)$"):
        kc.map(_scaled, a)
    with pytest.raises(TypeError, match="takes 3 arguments, 2 inputs"):
        kc.map(kc.clamp, a, 1.0)
    with pytest.raises(TypeError, match="^The provided function must return a value$"):
        kc.map(_nothing, a)
    with pytest.raises(TypeError, match="callable"):
        kc.map(3, a)
    with pytest.raises(TypeError, match="not kernels"):
        kc.map(kc.Kernel(_takes_attribute), a)
    with pytest.raises(TypeError, match="input 'y' is a list"):
        kc.map(lambda x, y: x, a, [1.0, 2.0])
    namespace = {}
    exec("f = lambda x: x\ndef g(x):\n    return x\n", namespace)  # noqa: S102  (no file)
    for name in "fg":
        with pytest.raises(kc.KernelError, match="cannot read the source"):
            kc.map(namespace[name], a)


def test_shape_and_output_errors():
    a = kc.array(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="^map requires at least one kc.array input$"):
        kc.map(lambda x: x, 1.0)
    with pytest.raises(ValueError, match=r"^Shapes \(3,\) and \(4,\) are not broadcastable$"):
        kc.map(lambda x, y: x + y, a, kc.zeros(4))
    with pytest.raises(TypeError, match=r"^Output array shape \(4,\) does not match expected "
                                        r"shape \(3,\)$"):
        kc.map(lambda x: x, a, out=kc.zeros(4))
    with pytest.raises(TypeError, match="^Output array dtype float64 does not match expected "
                                        "dtype float32$"):
        kc.map(lambda x: x, a, out=kc.zeros(3, dtype=kc.float64))
    with pytest.raises(TypeError, match=r"^Invalid output provided, expected 2 kernelc arrays "
                                        r"with shape \(3,\) and dtypes \(float32, float32\)$"):
        kc.map(lambda x: (x, x), a, out=kc.zeros(3))
    with pytest.raises(TypeError, match=r"^Number of provided output arrays \(1\) does not "
                                        r"match expected number of function outputs \(2\)$"):
        kc.map(lambda x: (x, x), a, out=[kc.zeros(3)])
    with pytest.raises(TypeError, match="must be a kc.array"):
        kc.map(lambda x: x, a, out=np.zeros(3, np.float32))


def test_indexed_array_inputs_and_outputs():
    rng = np.random.default_rng(7)
    data_np = nonzero(rng, 12, np.float32).reshape(4, 3)
    data = kc.array(data_np, dtype=kc.float32)
    rows = kc.array([3, 0, 2], dtype=kc.int32)
    view = kc.indexedarray2d(data, [rows])
    b_np = nonzero(rng, 3, np.float32)
    b = kc.array(b_np, dtype=kc.float32)
    expected = data_np[[3, 0, 2]] * 2.0 - b_np  # (3, 3) with (3,) broadcast
    # into a new array
    result = kc.map(lambda x, y: x * 2.0 - y, view, b)
    assert isinstance(result, kc.array) and result.shape == (3, 3)
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-6)
    # into a given (poisoned) array, and into an indexed view of another one
    out = poisoned((3, 3), np.float32)
    kc.map(lambda x, y: x * 2.0 - y, view, b, out=out)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    target_np = np.full((5, 3), -999.0, np.float32)
    target = kc.array(target_np, dtype=kc.float32)
    target_view = kc.indexedarray2d(target, [kc.array([4, 1, 0], dtype=kc.int32)])
    assert kc.map(lambda x, y: x * 2.0 - y, view, b, out=target_view) is target_view
    target_np[[4, 1, 0]] = expected
    np.testing.assert_allclose(target.numpy(), target_np, rtol=1e-6)
    # in place: the view is read and written by the same thread
    kc.map(lambda x: x + 1.0, view, out=view)
    data_np[[3, 0, 2]] += 1.0
    np.testing.assert_allclose(data.numpy(), data_np, rtol=1e-6)
    with pytest.raises(TypeError, match=r"^Output array dtype float32 does not match "
                                        r"expected dtype int32$"):
        kc.map(lambda x: int(x), view, out=view)
