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
    old[i] = kc.atomic_add(acc, i % 3, src[i])
    kc.atomic_max(acc, 3, src[i])
    kc.atomic_min(acc, 4, src[i])
    acc[5] += src[i]


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


def _ir_types(kernel, args: list) -> tuple:
    """The specialisation for `args`: arrays by their dtype, others as given or declared."""
    return tuple(T.ArrayType(a.dtype, a.ndim) if isinstance(a, kc.array) else t or declared
                 for (a, t), declared in zip(args, kernel.param_types))


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
    source = emit_cuda(kernel.get_ir(_ir_types(kernel, host_args)), CudaOptions())
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
    module = kernel.get_ir(_ir_types(kernel, _seeded(build)()))
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


def _body(rng) -> S.Body:
    b = S.Body()
    b.mass = 1.5
    b.inner.flag = -5
    b.inner.v = kc.vec3(*rng.uniform(1, 2, 3))
    b.m = kc.mat22(*rng.uniform(1, 2, 4))
    b.big = 1e300
    b.data = kc.array(rng.uniform(1, 2, 3).astype(np.float32))
    return b


@needs_cxx
def test_struct_param_with_nested_struct_and_array_field():
    holders: list[S.Body] = []

    def make():
        holders.append(_body(np.random.default_rng(3)))
        return [(holders[-1], None), (_poison(f32, 8), None)]

    (_, out) = run_both(S.k_body, 1, make)
    cpu, host = holders
    assert np.isfinite(out[[0, 1, 2, 3, 4, 5, 7]]).all() and out[6] == np.inf
    assert out[3] == -5 and out[2] == 7
    assert host.data.numpy()[0] == 42 and cpu.data.numpy().tolist() == host.data.numpy().tolist()


@needs_cxx
def test_arrays_of_structs():
    def make():
        rng = np.random.default_rng(4)
        data = np.zeros(N, dtype=S.Inner.numpy_dtype())
        data["flag"] = rng.integers(-100, 100, N)
        data["v"] = V.random(rng, (N, 3), np.float32)
        out = np.zeros(N, dtype=S.Inner.numpy_dtype())
        out["flag"] = 99
        out["v"] = np.nan
        return [(kc.array(data, dtype=S.Inner), None), (kc.array(out, dtype=S.Inner), None)]

    _, out = run_both(S.k_struct_array, N, make)
    assert (out["v"][:, 2] == 5).all()


@needs_cxx
def test_struct_locals_bool_fields_and_transform_param():
    def make():
        rng = np.random.default_rng(5)
        ps = np.zeros(N, dtype=Particle.numpy_dtype())
        ps["pos"] = V.random(rng, (N, 3), np.float32)
        ps["alive"] = rng.integers(0, 2, N).astype(bool)
        ps["q"] = Q.random_unit_quats(rng, N, np.float32)
        out = np.zeros(N, dtype=Particle.numpy_dtype())
        out["pos"] = out["q"] = np.nan
        xf = kc.transform(*V.random(rng, 3, np.float32), *Q.random_unit_quats(rng, 1, np.float32))
        return [(kc.array(ps, dtype=Particle), None), (xf, None),
                (kc.array(out, dtype=Particle), None), (_poison(vec3), None)]

    ps, _, out, moved = run_both(k_struct_local, N, make)
    assert (out["alive"] == ~ps["alive"]).all() and np.isfinite(moved).all()


@needs_cxx
@pytest.mark.parametrize("vec", [kc.vec3, kc.vec3d, kc.vec3i, kc.vec3h], ids=repr)
def test_atomics_on_vector_arrays(vec):
    n = 100
    src = ((np.arange(3 * n).reshape(n, 3) % 7) - 3).astype(vec.dtype.np_dtype)
    acc = np.zeros((6, 3), vec.dtype.np_dtype)
    acc[4] = 100
    old = np.full((n, 3), 1000, vec.dtype.np_dtype)
    t = T.ArrayType(vec, 1)
    source = emit_cuda(k_atomics.get_ir((t, t, t)))
    for arch in ARCHS:
        image, _ = nvrtc.compile_cuda(source.text, arch, name=source.kernel)
        assert source.entry in _elf_symbols(image)
    debug = emit_cuda(k_atomics.get_ir((t, t, t)), CudaOptions(debug=True))
    image, _ = nvrtc.compile_cuda(debug.text, 90, name=debug.kernel)
    assert debug.entry in _elf_symbols(image)
    args = [ArrayArg(a.ctypes.data, (len(a),), a.strides[:1]) for a in (acc, src, old)]
    assert cuda_harness.build(source).launch(n, args, block_dim=16, max_blocks=3,
                                             workers=3) is None
    want = np.stack([src[0::3].sum(0), src[1::3].sum(0), src[2::3].sum(0),
                     np.maximum(src.max(0), 0), np.minimum(src.min(0), 100), src.sum(0)])
    np.testing.assert_array_equal(acc, want)
    # each old value is the slot's component before this thread's add: never the poison,
    # and the per-component old values of one slot are that component's partial sums
    assert (old != 1000).all()
    for k in range(3):
        for c in range(3):
            got = sorted(old[k::3, c].tolist())
            assert min(got) >= min(0, src[k::3, c].clip(max=0).sum())
            assert max(got) <= src[k::3, c].clip(min=0).sum()
