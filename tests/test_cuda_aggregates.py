"""Vectors, matrices, quaternions, transforms and structs through the CUDA backend.

Each kernel is emitted as CUDA-C, compiled by NVRTC for every target architecture, and run
in the host harness on random non-zero inputs with poisoned outputs; the results must equal
those of the same kernel launched on the CPU backend (or a NumPy reference).
"""

from __future__ import annotations

import shutil
import typing

import cuda_harness
import numpy as np
import pytest
import test_generic as G
import test_quat_transform as Q
import test_struct as S
import test_vec_mat as V
from test_cuda_codegen import ARCHS, _elf_symbols

import kernelc as kc
from kernelc import types as T
from kernelc.codegen import nvrtc
from kernelc.codegen.cuda import CudaOptions, emit_cuda
from kernelc.codegen.cuda_layout import ArrayArg

Any = typing.Any
needs_cxx = pytest.mark.skipif(shutil.which(cuda_harness.CXX) is None, reason="needs g++")


# ---- kernels of this file ----------------------------------------------------------------


@kc.func
def swap_xy(v: kc.vec3) -> kc.vec3:
    return kc.vec3(v.y, v.x, v.z)


@kc.kernel
def k_dynamic(a: kc.array(dtype=kc.vec3), m: kc.array(dtype=kc.mat33),
              idx: kc.array(dtype=kc.int32), out: kc.array(dtype=float),
              vout: kc.array(dtype=kc.vec3), mout: kc.array(dtype=kc.mat33)):
    i = kc.tid()
    k = idx[i]
    v = a[i]
    out[i] = v[k] + m[i][k, 1]
    v[k] = 10.0
    vout[i] = swap_xy(v)
    w = m[i]
    w[k, 2] = -1.0
    mout[i] = w


@kc.kernel
def k_atomics(acc: kc.array(dtype=Any), src: kc.array(dtype=Any), old: kc.array(dtype=Any)):
    i = kc.tid()
    kc.atomic_add(acc, i % 3, src[i])
    old[i] = kc.atomic_max(acc, 3, src[i]) * 0.0


@kc.struct
class Particle:
    pos: kc.vec3
    alive: bool
    q: kc.quat


@kc.kernel
def k_struct_local(ps: kc.array(dtype=Particle), xf: kc.transform,
                   out: kc.array(dtype=Particle), moved: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    p = ps[i]
    local = Particle()
    local.pos = kc.transform_point(xf, p.pos)
    local.alive = not p.alive
    local.q = p.q * xf.q if p.alive else p.q
    out[i] = local
    moved[i] = kc.quat_rotate(p.q, p.pos) + local.pos


# ---- running a kernel on both backends -----------------------------------------------------


def _ir_types(args: list) -> tuple:
    return tuple(T.ArrayType(a.dtype, a.ndim) if isinstance(a, kc.array) else t
                 for a, t in args)


def _harness_args(args: list) -> tuple[list, list]:
    """Harness arguments (host copies of the arrays) and the copies to read back."""
    values, copies = [], []
    for a, _ in args:
        if isinstance(a, kc.array):
            data = np.array(a.numpy(), copy=True)
            values.append(ArrayArg(data.ctypes.data, a.shape, data.strides[:a.ndim]))
            copies.append(data)
        else:
            values.append(a)
            copies.append(None)
    return values, copies


def _assert_same(cpu: np.ndarray, host: np.ndarray, name: str) -> None:
    if cpu.dtype.names:
        for field in cpu.dtype.names:
            _assert_same(cpu[field], host[field], f"{name}.{field}")
        return
    if cpu.dtype.kind == "f":
        tol = 1e-5 if cpu.dtype.itemsize <= 4 else 1e-12
        np.testing.assert_allclose(host, cpu, rtol=tol, atol=tol, err_msg=name)
    else:
        np.testing.assert_array_equal(host, cpu, err_msg=name)


def run_both(kernel, n: int, make_args) -> list:
    """Launches `kernel` on the CPU and in the harness on equal inputs from `make_args()`
    (a list of (value, type or None)), compares every array, and returns the host copies."""
    cpu_args = make_args()
    host_args = make_args()
    source = emit_cuda(kernel.get_ir(_ir_types(host_args)), CudaOptions())
    values, copies = _harness_args(host_args)
    assert cuda_harness.build(source).launch(n, values, block_dim=8, max_blocks=2) is None
    kc.launch(kernel, n, inputs=[a for a, _ in cpu_args])
    for (a, _), host in zip(cpu_args, copies):
        if host is not None:
            _assert_same(a.numpy(), host, f"{kernel.__name__}: {a.dtype!r}")
    return copies


# ---- inputs --------------------------------------------------------------------------------

N = 37


def _vecs(rng, t: T.Type, n: int = N) -> kc.array:
    shape = (n, t.length) if isinstance(t, T.VectorType) else (n, *t.shape)
    return kc.array(V.random(rng, shape, t.dtype.np_dtype), dtype=t)


def _poison(t: T.Type, n: int = N) -> kc.array:
    if isinstance(t, T.ScalarType):
        return kc.array(np.full(n, np.nan, t.np_dtype), dtype=t)
    shape = (n, t.length) if isinstance(t, T.VectorType) else (n, *t.shape)
    return kc.array(np.full(shape, np.nan, t.dtype.np_dtype), dtype=t)


def _quats(rng, scalar: T.ScalarType, n: int = N) -> kc.array:
    return kc.array(Q.random_unit_quats(rng, n, scalar.np_dtype), dtype=kc.types.quaternion(scalar))


def _transforms(rng, scalar: T.ScalarType, n: int = N) -> kc.array:
    p = V.random(rng, (n, 3), scalar.np_dtype)
    data = np.concatenate([p, Q.random_unit_quats(rng, n, scalar.np_dtype)], axis=1)
    return kc.array(data, dtype=kc.types.transformation(scalar))


def _seeded(build):
    """make_args for run_both: the same random inputs on every call."""
    return lambda: build(np.random.default_rng(7))


f32, f64 = kc.float32, kc.float64
vec3 = kc.types.vector(3, f32)
CASES = {
    "add_vec3": (V.k_add, lambda r: [(_vecs(r, vec3), None), (_vecs(r, vec3), None),
                                     (_poison(vec3), None)]),
    "sub_neg_vec4d": (V.k_sub_neg, lambda r: [(_vecs(r, kc.vec4d), None),
                                              (_vecs(r, kc.vec4d), None),
                                              (_poison(kc.vec4d), None)]),
    "scale_vec2": (V.k_scale, lambda r: [(_vecs(r, kc.vec2), None),
                                         (kc.array(V.random(r, N, np.float32)), None),
                                         (_poison(kc.vec2), None)]),
    "matmul_mat33_vec3": (V.k_matmul, lambda r: [(_vecs(r, kc.mat33), None),
                                                 (_vecs(r, vec3), None), (_poison(vec3), None)]),
    "matmul_mat44d": (V.k_matmul, lambda r: [(_vecs(r, kc.mat44d), None),
                                             (_vecs(r, kc.mat44d), None),
                                             (_poison(kc.mat44d), None)]),
    "mul_vec3_mat33": (V.k_mul, lambda r: [(_vecs(r, vec3), None), (_vecs(r, kc.mat33), None),
                                           (_poison(vec3), None)]),
    "vector_builtins": (V.k_binary, lambda r: [
        (_vecs(r, vec3), None), (_vecs(r, vec3), None), (_poison(f32), None),
        (_poison(vec3), None), (_poison(vec3), None), (_poison(kc.mat33), None)]),
    "unary_vec3d": (V.k_unary_vec, lambda r: [
        (_vecs(r, kc.vec3d), None), (_poison(f64), None), (_poison(kc.vec3d), None),
        (_poison(kc.mat33d), None), (_poison(kc.mat33d), None)]),
    "matrix_builtins_mat33": (V.k_unary_mat, lambda r: [
        (_vecs(r, kc.mat33), None), (_poison(kc.mat33), None), (_poison(kc.mat33), None),
        (_poison(f32), None)]),
    "matrix_builtins_mat44d": (V.k_unary_mat, lambda r: [
        (_vecs(r, kc.mat44d), None), (_poison(kc.mat44d), None), (_poison(kc.mat44d), None),
        (_poison(f64), None)]),
    "quat": (Q.k_quat, lambda r: [
        (_quats(r, f32), None), (_quats(r, f32), None), (_vecs(r, vec3), None),
        (_poison(vec3), None), (_poison(vec3), None), (_poison(kc.mat33), None),
        (_poison(kc.quat), None), (_poison(kc.quat), None)]),
    "transform_d": (Q.k_transform, lambda r: [
        (_transforms(r, f64), None), (_transforms(r, f64), None), (_vecs(r, kc.vec3d), None),
        (_poison(kc.vec3d), None), (_poison(kc.vec3d), None), (_poison(kc.vec3d), None),
        (_poison(kc.transformd), None)]),
    "generic_scale_vec3": (G.scale, lambda r: [(_vecs(r, vec3), None), (2.5, f32)]),
    "generic_scale_mat22d": (G.scale, lambda r: [(_vecs(r, kc.mat22d), None),
                                                 (kc.float64(-1.5), f64)]),
    "dynamic_index": (k_dynamic, lambda r: [
        (_vecs(r, vec3), None), (_vecs(r, kc.mat33), None),
        (kc.array(r.integers(-2, 5, N).astype(np.int32)), None), (_poison(f32), None),
        (_poison(vec3), None), (_poison(kc.mat33), None)]),
}


@pytest.mark.parametrize("case", CASES)
def test_nvrtc_compiles_aggregate_kernels(case):
    kernel, build = CASES[case]
    module = kernel.get_ir(_ir_types(_seeded(build)()))
    for arch in ARCHS:
        source = emit_cuda(module)
        image, fmt = nvrtc.compile_cuda(source.text, arch, name=source.kernel)
        assert fmt == "cubin" and source.entry in _elf_symbols(image)
    debug = emit_cuda(module, CudaOptions(debug=True, lineinfo=True))
    image, _ = nvrtc.compile_cuda(debug.text, 90, lineinfo=True, name=debug.kernel)
    assert debug.entry in _elf_symbols(image)


@needs_cxx
@pytest.mark.parametrize("case", CASES)
def test_harness_matches_cpu(case):
    kernel, build = CASES[case]
    run_both(kernel, N, _seeded(build))
