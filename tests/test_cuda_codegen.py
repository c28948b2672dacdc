"""The CUDA-C emitter and NVRTC compilation (no GPU needed)."""

from __future__ import annotations

import math
import struct
import sys

import pytest
from cuda_harness import kernels as K

import kernelc.builtins
from kernelc import types as T
from kernelc.codegen import nvrtc
from kernelc.codegen.cuda import CudaOptions, emit_cuda
from kernelc.codegen.cuda_builtins import MATH
from kernelc.codegen.cuda_layout import ArrayArg
from kernelc.codegen.cuda_ops import c_string, literal
from kernelc.errors import KernelError
from kernelc.ir.passes import run_pipeline

ARCHS = (75, 80, 90)


def _ids(spec) -> str:
    kernel, types = spec
    suffix = "" if types is None else "_" + "_".join(
        repr(t.dtype) for t in types if isinstance(t, T.ArrayType)
    )[:20]
    return kernel.__name__ + suffix


def _elf_symbols(image: bytes) -> set[str]:
    """Names in the ELF's symbol string tables (enough to find the entry point)."""
    assert image[:4] == b"\x7fELF" and image[4] == 2  # 64-bit ELF
    shoff, = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", image, 0x3A)
    names: set[str] = set()
    for k in range(shnum):
        base = shoff + k * shentsize
        sh_type, = struct.unpack_from("<I", image, base + 4)
        if sh_type == 3:  # SHT_STRTAB
            offset, size = struct.unpack_from("<QQ", image, base + 0x18)
            names.update(s.decode() for s in image[offset:offset + size].split(b"\0") if s)
    return names


@pytest.mark.parametrize("spec", K.SPECIALISATIONS, ids=_ids)
def test_nvrtc_compiles_cubin(spec):
    kernel, types = spec
    module = K.get_ir(kernel, types)
    for arch in ARCHS:
        source = emit_cuda(module, CudaOptions())
        image, fmt = nvrtc.compile_cuda(source.text, arch, name=source.kernel)
        assert fmt == "cubin"
        assert source.entry in _elf_symbols(image)
    debug = emit_cuda(module, CudaOptions(debug=True, lineinfo=True))
    image, fmt = nvrtc.compile_cuda(debug.text, 90, lineinfo=True, name=debug.kernel)
    assert fmt == "cubin" and debug.entry in _elf_symbols(image)


def test_every_primitive_builtin_has_a_cuda_lowering():
    assert kernelc.builtins.primitive_keys() <= set(MATH)


def test_nvrtc_error_carries_the_log():
    broken = 'extern "C" __global__ void broken_kernel(int* x) { x[0] = undefined_name; }'
    with pytest.raises(KernelError) as err:
        nvrtc.compile_cuda(broken, 90, name="broken")
    text = str(err.value)
    assert "broken" in text and "undefined_name" in text and "sm_90" in text


def test_missing_nvrtc_is_reported(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", None)
    with pytest.raises(KernelError, match=r"kernelc\[cuda\]"):
        nvrtc.compile_cuda("", 90)


def test_ptx_fallback_and_unsupported_arch():
    assert nvrtc.choose_target(90) == ("cubin", "sm_90")
    newest = max(nvrtc.supported_archs())
    assert nvrtc.choose_target(newest + 10) == ("ptx", f"compute_{newest}")
    source = emit_cuda(K.saxpy.get_ir())
    image, fmt = nvrtc.compile_cuda(source.text, newest + 10, name="saxpy")
    assert fmt == "ptx" and b".entry saxpy_kernel" in image
    with pytest.raises(KernelError, match="sm_50"):
        nvrtc.choose_target(50)


SAXPY_GOLDEN = """
static __device__ __forceinline__ void kc_body_saxpy(kc_thread& kc_t, kc_array<float, 1> v1, \
kc_array<float, 1> v2, float v3) {
    const kc_int32 v4 = kc_tid_leading(kc_t);
    const float v12 = *kc_addr(v1, v4);
    const float v13 = (v3 * v12);
    const float v20 = *kc_addr(v2, v4);
    const float v21 = (v13 + v20);
    *kc_addr(v2, v4) = v21;
}

extern "C" __global__ void saxpy_kernel(kc_launch kc_launch_args, kc_array<float, 1> p_x, \
kc_array<float, 1> p_y, float p_alpha) {
    const kc_int64 kc_stride = (kc_int64)blockDim.x * gridDim.x;
    for (kc_int64 kc_tid = (kc_int64)blockIdx.x * blockDim.x + threadIdx.x;
         kc_tid < kc_launch_args.size; kc_tid += kc_stride) {
        kc_thread kc_t = {kc_launch_args, kc_tid, false};
        kc_body_saxpy(kc_t, p_x, p_y, p_alpha);
    }
}
"""


def test_saxpy_text_and_layout():
    # the IR as compiled: after the passes (slot forwarding, and the negative-index test of
    # `x[i]` dropped since i is the thread index)
    source = emit_cuda(run_pipeline(K.saxpy.get_ir()))
    assert source.entry == "saxpy_kernel"
    assert source.text.split("end of prelude")[1].split("\n", 1)[1] == SAXPY_GOLDEN
    layout = source.params
    assert [(f.name, f.kind, f.size, f.align, f.offset) for f in layout.fields] == [
        ("launch", "launch", 48, 8, 0),
        ("x", "array", 24, 8, 48),
        ("y", "array", 24, 8, 72),
        ("alpha", "scalar", 4, 4, 96),
    ]
    assert layout.size == 104
    packed = layout.pack((10,), 0x1234, [ArrayArg(0x1000, (10,), (4,)),
                                         ArrayArg(0x2000, (10,), (8,)), 2.5])
    assert struct.unpack_from("<4qqQ", packed, 0) == (10, 1, 1, 1, 10, 0x1234)
    assert struct.unpack_from("<Qqq", packed, 72) == (0x2000, 10, 8)
    assert struct.unpack_from("<f", packed, 96) == (2.5,)


def test_release_mode_has_no_checks_debug_mode_lists_them():
    module = K.debug_checks.get_ir()
    release = emit_cuda(module, CudaOptions())
    assert "kc_check_" not in release.text.split("end of prelude")[1]
    assert release.check_locs == ()
    debug = emit_cuda(module, CudaOptions(debug=True))
    body = debug.text.split("end of prelude")[1]
    assert body.count("kc_check_") == len(debug.check_locs) > 0
    assert all(loc.file.endswith("kernels.py") for loc in debug.check_locs)


def test_line_directives_follow_lineinfo():
    module = K.saxpy.get_ir()
    line = K.saxpy.func.__code__.co_firstlineno
    with_lines = emit_cuda(module, CudaOptions(lineinfo=True)).text
    assert f'#line {line + 2} "{K.__file__}"' in with_lines
    assert "#line" not in emit_cuda(module, CudaOptions()).text
    assert "#line" not in emit_cuda(module, CudaOptions(lineinfo=True,
                                                        line_directives=False)).text


@pytest.mark.parametrize(("value", "t", "text"), [
    (-(2**31), T.int32, "(-2147483647 - 1)"),
    (-(2**63), T.int64, "(-9223372036854775807LL - 1)"),
    (2**64 - 1, T.uint64, "18446744073709551615ull"),
    (7, T.uint32, "7u"),
    (-3, T.int8, "-3"),
    (0.1, T.float32, "0.1f"),
    (3.0, T.float32, "3.0f"),
    (0.1, T.float64, "0.1"),
    (0.1, T.float16, "0.0999755859375f"),
    (math.inf, T.float32, "__int_as_float(2139095040)"),
    (-math.inf, T.float64, "__longlong_as_double(-4503599627370496LL)"),
    (True, T.bool_, "true"),
])
def test_literals(value, t, text):
    assert literal(value, t) == text


def test_nan_literal_is_a_nan_bit_pattern():
    assert literal(math.nan, T.float32) == "__int_as_float(2143289344)"


def test_c_string_escapes():
    assert c_string('a"b\\c\n%d ??=') == '"a\\"b\\\\c\\n%d \\077\\077="'


def test_unsupported_type_names_the_kernel():
    module = K.saxpy.get_ir()
    pair = T.TupleType((T.float32, T.int32))
    bad_param = type(module.kernel.params[0])(99, T.ArrayType(pair, 1))
    kernel = module.kernel
    broken = type(module)(type(kernel)(
        kernel.name, (bad_param,), ("v",), (), (), (), True, kernel.loc))
    with pytest.raises(KernelError, match=r"saxpy.*tuple|tuple.*saxpy"):
        emit_cuda(broken)
