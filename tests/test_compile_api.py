"""`kc.compile`: ahead-of-time compilation for the CPU and for CUDA (no GPU needed)."""

from __future__ import annotations

import typing

import pytest

import kernelc as kc


@kc.kernel
def scale(x: kc.array(dtype=float), s: float):
    i = kc.tid()
    x[i] = x[i] * s


@kc.kernel
def generic_scale(x: kc.array(dtype=typing.Any), s: typing.Any):
    i = kc.tid()
    x[i] = x[i] * s


def test_compile_cpu_gives_llvm_ir_and_object_code():
    c = kc.compile(scale, target="cpu")
    assert c.format == "obj" and c.target == "cpu"
    assert "define" in c.source and c.entry in c.source
    assert c.binary[:4] == b"\x7fELF"
    assert len(c.hash) >= 16


def test_compile_cuda_gives_cuda_c_and_a_cubin():
    pytest.importorskip("cuda.bindings.nvrtc")
    c = kc.compile(scale, target="cuda", arch=90)
    assert c.format == "cubin" and c.target == "cuda:sm_90"
    assert '__global__' in c.source and c.entry in c.source
    assert c.binary[:4] == b"\x7fELF"
    assert c.entry.encode() in c.binary


def test_compile_generic_needs_arg_types():
    with pytest.raises(kc.KernelError, match="generic"):
        kc.compile(generic_scale, target="cpu")
    c64 = kc.compile(generic_scale, target="cpu",
                     arg_types=[kc.array(dtype=kc.float64), kc.float64])
    c32 = kc.compile(generic_scale, target="cpu", arg_types={"x": kc.array(dtype=float),
                                                               "s": float})
    assert c64.hash != c32.hash
    assert "double" in c64.source and "float" in c32.source


def test_compile_unknown_target():
    with pytest.raises(ValueError, match="unknown target"):
        kc.compile(scale, target="tpu")
