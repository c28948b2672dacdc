"""Textures: samples and gradients against a NumPy reference and against Warp, the host API,
error messages, and the CUDA-C of a sampling kernel (NVRTC, and run on the host).

The programs are in `tests/texture_kernels.py` (run here and in a Warp subprocess), the
reference in `tests/texture_reference.py`; outputs start as NaN (poison).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import cuda_harness
import numpy as np
import pytest

import kernelc as kc
from kernelc.codegen import nvrtc
from kernelc.codegen.cuda import CudaOptions, emit_cuda
from kernelc.codegen.cuda_layout import ArrayArg
from tests import texture_kernels as K
from tests import texture_reference as R
from tests.conftest import run_python, run_warp

ROOT = Path(__file__).resolve().parents[1]
COUNT = 30  # random configurations per dimension

_WARP_DRIVER = f"""
import os
import sys

os.environ["KERNELC_TEXTURE_MODULE"] = "warp"
sys.path.insert(0, {str(ROOT)!r})
from tests import texture_kernels

results.update(texture_kernels.run_all({COUNT}))
"""


@pytest.fixture(scope="module")
def results() -> dict[str, np.ndarray]:
    return K.run_all(COUNT)


def close(have: np.ndarray, want: np.ndarray, rtol: float, what: str) -> None:
    """Equal to `rtol`, elementwise and relative to the largest magnitude of `want`."""
    scale = float(np.nanmax(np.abs(want), initial=0.0))
    np.testing.assert_allclose(have, want, rtol=rtol, atol=rtol * scale, err_msg=what)


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_samples_and_gradients_match_numpy(results, ndim):
    for k, cfg in enumerate(K.configs(ndim, COUNT, 100 + ndim)):
        got = {name: results[f"{ndim}d_{k}/{name}"] for name in
               ("sample", "total", "coord_grad", "lod_grad")}
        pts, lod = K.coordinates(cfg, K.N)
        value, dcoord, dlod, smooth = R.sample(cfg, K.texels(cfg), pts, lod)
        weight = np.random.default_rng(cfg["seed"] + 2).uniform(0.5, 2.0, (K.N, 4))
        weight = weight.astype(np.float32)
        what = f"{ndim}-d config {k}: {cfg}"
        close(got["sample"], value, 1e-5, what)
        close(got["total"], np.einsum("nc,nc->n", value, weight), 1e-5, what)
        coord = np.einsum("nac,nc->na", dcoord, weight)  # where the slope is defined
        close(got["coord_grad"].reshape(K.N, ndim)[smooth], coord[smooth], 1e-4, what)
        close(got["lod_grad"], np.einsum("nc,nc->n", dlod, weight), 1e-4, what)


def test_results_match_warp(results, tmp_path):
    """Every sample bit for bit or to rounding, every gradient to rounding."""
    want = run_warp(_WARP_DRIVER, tmp_path)
    assert set(want) == set(results)
    for name, expected in want.items():
        rtol = 1e-5 if name.endswith("_grad") else 1e-6
        if expected.dtype.kind == "f":
            close(results[name], expected, rtol, name)
        else:
            np.testing.assert_array_equal(results[name], expected, err_msg=name)


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_call_forms(ndim):
    """Scalar and vector coordinates, float and vec2 results, positional and keyword
    arguments, the default LOD."""
    kernel = (K.forms_1d, K.forms_2d, K.forms_3d)[ndim - 1]
    for cfg in K.configs(ndim, 6, 200 + ndim):
        pts, lod = K.coordinates(cfg, K.N)
        out1 = kc.array(np.full(K.N, np.nan, np.float32))
        out2 = kc.array(np.full((K.N, 2), np.nan, np.float32), dtype=kc.vec2)
        points = pts[:, 0] if ndim == 1 else kc.array(pts, dtype=(kc.vec2, kc.vec3)[ndim - 2])
        kc.launch(kernel, K.N, [K.make_texture(cfg), points, lod, out1, out2])
        base = R.sample(cfg, K.texels(cfg), pts, np.full(K.N, -1.0, np.float32))[0]
        lodded = R.sample(cfg, K.texels(cfg), pts, lod)[0]
        # forms_3d reads channel 0 at lod and two channels at the base level; the others
        # the other way round
        first, second = (lodded, base) if ndim == 3 else (base, lodded)
        close(out1.numpy(), first[:, 0], 1e-5, f"{ndim}-d {cfg}")
        close(out2.numpy(), second[:, :2], 1e-5, f"{ndim}-d {cfg}")


def test_struct_fields_arrays_and_sizes(results):
    data = [np.random.default_rng(s).uniform(0.5, 2.0, (3 + s, 4 + s)).astype(np.float32)
            for s in range(3)]
    uv = np.random.default_rng(7).uniform(-0.2, 1.2, (12, 2)).astype(np.float32)
    cfg = {"ndim": 2, "filter": 1, "modes": [1, 1], "normalized": True, "levels": 1,
           "mip_filter": 1, "channels": 1}
    no_lod = np.full(12, -1.0, np.float32)
    samples = [R.sample(cfg, d, uv, no_lod)[0][:, 0] for d in data]
    want = np.array([(2.0 * samples[2][i], -1.0 * samples[1][i], 0.0)[i % 3] + samples[i % 3][i]
                     for i in range(12)])
    close(results["aggregates/shade"], want, 1e-5, "shade")
    assert results["aggregates/sizes"].tolist() == [5, 5, 4, 4, 3, 2]


def test_host_properties_and_defaults():
    tex = kc.Texture2D(np.zeros((3, 5, 4), np.uint8), address_mode=(kc.TextureAddressMode.WRAP,),
                       address_mode_v=kc.TextureAddressMode.BORDER)
    assert (tex.ndim, tex.width, tex.height, tex.depth, tex.num_channels) == (2, 5, 3, 1, 4)
    assert tex.dtype is kc.uint8 and tex.filter_mode == kc.TextureFilterMode.LINEAR
    assert (tex.address_mode_u, tex.address_mode_v, tex.address_mode_w) == (
        kc.TextureAddressMode.WRAP, kc.TextureAddressMode.BORDER, kc.TextureAddressMode.CLAMP)
    assert tex.normalized_coords and tex.num_mip_levels == 1 and not tex.is_mipmapped
    assert tex.id == tex._buffer.ptr and tex.device == kc.get_device("cpu")
    ints = kc.Texture1D(np.arange(1, 9, dtype=np.int32), num_mip_levels=0)
    assert ints.filter_mode == ints.mip_filter_mode == kc.TextureFilterMode.CLOSEST
    assert ints.num_mip_levels == 4 and ints.is_mipmapped
    vec = kc.Texture3D(kc.zeros((2, 3, 4), dtype=kc.vec2h))
    assert (vec.width, vec.height, vec.depth, vec.num_channels, vec.dtype) == (4, 3, 2, 2,
                                                                               kc.float16)
    empty = kc.Texture2D(width=7, height=2, num_channels=2, dtype=float)
    assert (empty.width, empty.height, empty.dtype) == (7, 2, kc.float32)
    with pytest.raises(RuntimeError, match="software"):
        _ = tex.cuda_texture


def test_copy_in_and_out():
    rng = np.random.default_rng(3)
    data = rng.integers(-30000, 30000, (4, 6, 2)).astype(np.int16)
    tex = kc.Texture2D(width=6, height=4, num_channels=2, dtype=kc.int16)
    tex.copy_from(data)
    out = np.zeros_like(data)
    tex.copy_to(out)
    np.testing.assert_array_equal(out, data)
    other = kc.Texture2D(np.zeros_like(data))
    other.copy_from(tex)
    arr = kc.zeros((4, 6), dtype=kc.types.vector(2, kc.int16))
    other.copy_to(arr)
    np.testing.assert_array_equal(arr.numpy(), data)
    tex.copy_from(kc.array(data[::-1].copy()))
    tex.copy_to(out)
    np.testing.assert_array_equal(out, data[::-1])


@pytest.mark.parametrize("make, error, message", [
    (lambda: kc.Texture2D(np.ones((2, 2))), ValueError, "unsupported texture dtype float64"),
    (lambda: kc.Texture2D(np.ones((2, 2, 3), np.float32)), ValueError, "1, 2 or 4"),
    (lambda: kc.Texture2D(np.ones(4, np.float32)), ValueError, "2 or 3 dimensions"),
    (lambda: kc.Texture1D(np.ones(4, np.float32), width=5), ValueError, "width 5"),
    (lambda: kc.Texture1D([1.0, 2.0]), ValueError, "NumPy array"),
    (lambda: kc.Texture2D(width=0, height=2, num_channels=1), ValueError, "width"),
    (lambda: kc.Texture1D(np.ones(4, np.int32), filter_mode=kc.TextureFilterMode.LINEAR),
     ValueError, "CLOSEST"),
    (lambda: kc.Texture1D(width=8, num_channels=1, num_mip_levels=2), ValueError, "data"),
    (lambda: kc.Texture1D(np.ones(8, np.float32), num_mip_levels=5), ValueError, "(4)"),
    (lambda: kc.Texture1D(np.ones(4, np.float32), address_mode=7), ValueError, "address"),
    (lambda: kc.Texture1D(np.ones(4, np.float32), filter_mode=3), ValueError, "filter"),
    (lambda: kc.Texture1D(np.ones(4, np.float32), surface_access=True), NotImplementedError,
     "software"),
    (lambda: kc.GLTextureResource(1, 2), NotImplementedError, "OpenGL"),
    (lambda: kc.Texture1D(np.ones(8, np.float32), num_mip_levels=0).copy_to(np.ones(8)),
     RuntimeError, "mipmapped"),
    (lambda: kc.Texture1D(np.ones(8, np.float32)).copy_from(np.ones(9, np.float32)),
     ValueError, "incompatible array"),
    (lambda: kc.Texture1D(np.ones(4, np.float32)).copy_to(np.ones(8, np.float32)[::2]),
     ValueError, "contiguous"),
])
def test_construction_and_copy_errors(make, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_launch_with_the_wrong_texture():
    tex = kc.Texture2D(np.ones((2, 2), np.float32))
    with pytest.raises(kc.KernelError, match="argument 'tex': expected Texture1D, got "
                                             "Texture2D"):
        kc.launch(K.forms_1d, 1, [tex, kc.zeros(1), kc.zeros(1), kc.zeros(1),
                                  kc.zeros(1, dtype=kc.vec2)])


def test_kernel_errors_point_at_the_source():
    import texture_bad_kernels as B

    t1, t2 = kc.Texture1D(np.ones(4, np.float32)), kc.Texture2D(np.ones((4, 4), np.float32))
    t3 = kc.Texture3D(np.ones((2, 2, 2), np.float32))
    out, out3 = kc.zeros(1), kc.zeros(1, dtype=kc.vec3)
    for kernel, args, where, message in (
            (B.vec3_for_2d, [t2, out], ":9:37", "'uv' of texture_sample() on a 2-d texture "
                                                "must be a vec2f, got vec3"),
            (B.int_coordinate, [t1, out], ":15:37", "'u' of texture_sample() must be a "
                                                    "float32, got int32"),
            (B.double_coordinates, [t2, out], ":20:37", "must be a vec2f, got vec2d"),
            (B.vec3_result, [t3, out3], ":25:58", "unsupported dtype 'wp.vec3'"),
            (B.not_a_texture, [0, out], ":30:32", "takes a kc.Texture1D, Texture2D or "
                                                  "Texture3D first, got uint64"),
            (B.missing_dtype, [t1, out], ":35:14", "is missing argument 'dtype'"),
            (B.unknown_keyword, [t2, out], ":40:14", "unexpected keyword argument 'level'"),
            (B.double_lod, [t1, out], ":45:59", "'lod' of texture_sample() must be a "
                                                "float32, got float64")):
        with pytest.raises(kc.KernelError) as info:
            kc.launch(kernel, 1, args)
        text = str(info.value)
        assert f"texture_bad_kernels.py{where}" in text, text
        assert message in text and "^" in text, text


def test_cuda_c_compiles_with_nvrtc():
    source = emit_cuda(K.sample_2d.get_ir(None), CudaOptions())
    image, fmt = nvrtc.compile_cuda(source.text, 90, name=source.kernel)
    assert fmt == "cubin" and len(image) > 0


@pytest.mark.skipif(shutil.which(cuda_harness.CXX) is None, reason="needs g++")
def test_cuda_c_runs_on_the_host_like_the_cpu_backend(results):
    """The CUDA-C of `sample_2d`, run by the host harness, samples every format as the
    CPU backend does."""
    host = cuda_harness.build(emit_cuda(K.sample_2d.get_ir(None), CudaOptions()))

    def vectors(a: np.ndarray) -> ArrayArg:
        return ArrayArg(a.ctypes.data, (a.shape[0],), (a.strides[0],))

    for k, cfg in enumerate(K.configs(2, 12, 102)):
        pts, lod = K.coordinates(cfg, K.N)
        weight = np.ones((K.N, 4), np.float32)
        out = np.full((K.N, 4), np.nan, np.float32)
        total = np.full(K.N, np.nan, np.float32)
        args = [K.make_texture(cfg), vectors(pts), lod, vectors(weight), vectors(out), total]
        assert host.launch(K.N, args) is None
        close(out, results[f"2d_{k}/sample"], 1e-6, f"config {k}: {cfg}")


@pytest.mark.cuda
def test_software_sampling_on_the_gpu_matches_the_cpu(results):
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    for k, cfg in enumerate(K.configs(3, 12, 103)):
        pts, lod = K.coordinates(cfg, K.N)
        weight = kc.ones(K.N, dtype=kc.vec4, device="cuda:0")
        out = kc.array(np.full((K.N, 4), np.nan, np.float32), dtype=kc.vec4, device="cuda:0")
        total = kc.zeros(K.N, device="cuda:0")
        kc.launch(K.sample_3d, K.N, [K.make_texture(cfg, "cuda:0"),
                                     kc.array(pts, dtype=kc.vec3, device="cuda:0"),
                                     kc.array(lod, device="cuda:0"), weight, out, total],
                  device="cuda:0")
        close(out.numpy(), results[f"3d_{k}/sample"], 1e-6, f"config {k}: {cfg}")


def test_importing_kernelc_loads_no_texture_code():
    done = run_python("import sys, kernelc as kc\n"
                      "assert 'kernelc.spatial.texture_lang' not in sys.modules\n"
                      "assert kc.TextureFilterMode.LINEAR == 1 and kc.Texture2D\n"
                      "assert kc.texture_sample.__name__ == 'texture_sample'\n")
    assert done.returncode == 0, done.stderr
