"""Indexed arrays through the CUDA backend, without a GPU: every kernel of
tests/indexedarray_kernels.py (and the library's gather / scatter / fill kernels) is compiled
by NVRTC, and run in the host harness on the same random inputs as a CPU launch; every
array both touched must come out equal. Debug-mode checks report out-of-range indices.
"""

from __future__ import annotations

import shutil

import cuda_harness
import indexedarray_kernels as K
import numpy as np
import pytest
from test_cuda_codegen import ARCHS, _elf_symbols

import kernelc as wp
from kernelc import types as T
from kernelc.codegen import nvrtc
from kernelc.codegen.cuda import CudaOptions, emit_cuda
from kernelc.codegen.cuda_layout import ArrayArg
from kernelc.lib import indexed_kernels as L
from kernelc.runtime.compiler import optimized_ir
from kernelc.runtime.launch import arg_type

needs_cxx = pytest.mark.skipif(shutil.which(cuda_harness.CXX) is None, reason="needs g++")
CPU = wp.get_device("cpu")


def _ints(values) -> wp.array:
    return wp.array(np.asarray(values, dtype=np.int32), dtype=wp.int32)


def _types(kernel, args) -> tuple[T.Type, ...]:
    """The specialisation a CPU launch with `args` compiles."""
    return tuple(arg_type(kernel, n, w, v, CPU)
                 for n, w, v in zip(kernel.arg_names, kernel.param_types, args))


def _arrays(value) -> list[wp.array]:
    """The memory an argument reaches: an array, an indexed array's data, a struct's (and
    those of the structs in an array of structs, which it keeps alive)."""
    if isinstance(value, wp.array):
        return [value] + [a for held in getattr(value, "_field_refs", []) for a in _arrays(held)]
    if isinstance(value, wp.indexedarray):
        return [value.data]
    st = getattr(value, "_kc_type", None)
    if isinstance(st, T.StructType):
        return [a for name, _ in st.fields for a in _arrays(getattr(value, name))]
    return []


def run_both(kernel, dim, make, *, debug: bool = False):
    """Launches `kernel` on the CPU and in the host harness on equal inputs from `make()`,
    and checks that every array comes out the same. Returns the harness's error record."""
    cpu_args, host_args = make(), make()
    source = emit_cuda(optimized_ir(kernel, _types(kernel, host_args)), CudaOptions(debug=debug))
    values = [ArrayArg(v.ptr, v.shape, v.strides) if isinstance(v, wp.array) else v
              for v in host_args]
    error = cuda_harness.build(source).launch(dim, values, block_dim=8, max_blocks=2)
    if error is not None:
        return error
    wp.launch(kernel, dim=dim, inputs=cpu_args)
    for cpu, host in zip(cpu_args, host_args):
        for a, b in zip(_arrays(cpu), _arrays(host)):
            if isinstance(a.dtype, T.StructType):  # the fields, not the (different) addresses
                x, y = a.numpy(), b.numpy()
                for name, field in a.dtype.fields:
                    if not isinstance(field, (T.ArrayType, T.IndexedArrayType)):
                        np.testing.assert_array_equal(y[name], x[name], err_msg=kernel.key)
            elif a.dtype == wp.float32:
                np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, err_msg=kernel.key)
            else:
                np.testing.assert_array_equal(b.numpy(), a.numpy(), err_msg=kernel.key)
    return None


def _floats(seed: int, shape) -> wp.array:
    return wp.array(np.random.default_rng(seed).uniform(1, 2, shape).astype(np.float32))


def _holder(seed: int, scale: float = 1.5) -> K.Holder:
    h = K.Holder()
    h.scale, h.iarr = scale, _floats(seed, 8)[_ints([6, 2, 3])]
    return h


def _rw_case(nd: int):
    shape = (5, 4, 6, 3)[:nd]
    keys = [[4, 0, 2, 3], None, [5, 1, 3], [2, 0]][:nd]

    def make():
        a = wp.indexedarray(_floats(nd, shape), [None if k is None else _ints(k) for k in keys])
        return [a, wp.array(np.full(a.shape, np.nan, np.float32))]

    return K.RW[nd], (4, 4, 3, 2)[:nd], make


def _outer():
    o = K.Outer()
    o.inner = _holder(3)
    o.grid = wp.array(np.arange(12, dtype=np.int32).reshape(4, 3))[_ints([3, 0]), :]
    return o


def _vecs():
    data = wp.array(np.random.default_rng(4).uniform(1, 2, (4, 5, 3)).astype(np.float32),
                    dtype=wp.vec3)
    return data[_ints([3, 0]), _ints([4, 1, 2])]


CASES = {
    **{f"rw_{nd}d": _rw_case(nd) for nd in (1, 2, 3, 4)},
    "accumulate": (K.accumulate, 300, lambda: [
        wp.zeros(6, dtype=wp.int32)[_ints([4, 1, 2])], wp.zeros(2, dtype=wp.int32)[_ints([1])],
        wp.array(np.random.default_rng(5).integers(1, 50, 300).astype(np.int32)), 3]),
    "vec_ops": (K.vec_ops, (2, 3), lambda: [_vecs(), wp.zeros((2, 3))]),
    "from_end": (K.from_end, (3, 4), lambda: [
        wp.array(np.arange(30, dtype=np.int32).reshape(5, 6))[_ints([4, 1, 0]),
                                                               _ints([5, 0, 2, 3])],
        wp.zeros((3, 4), dtype=wp.int32)]),
    "shapes_3d": (K.shapes_3d, 1, lambda: [
        wp.zeros((4, 5, 6))[_ints([1, 2]), :, _ints([0, 1, 2])], wp.zeros(7, dtype=wp.int32)]),
    "view_rows": (K.view_rows, 3, lambda: [_floats(6, (4, 6))[_ints([2, 0, 3]), 1:5],
                                           wp.zeros((3, 4))]),
    "inc_any": (K.inc_any, (2, 3), lambda: [
        wp.array(np.arange(30, dtype=np.int32).reshape(5, 6))[_ints([4, 1]), _ints([5, 0, 2])]]),
    "scale_generic_f64": (K.scale_generic, 2, lambda: [
        wp.array(np.arange(1, 6, dtype=np.float64))[_ints([4, 1])], wp.float64(3)]),
    "through_func": (K.through_func, 2, lambda: [_floats(7, 5)[_ints([4, 1])], wp.zeros(2)]),
    "struct_field": (K.struct_field, 3, lambda: [_holder(8), wp.zeros(3)]),
    "nested_struct": (K.nested_struct, 2, lambda: [_outer(), wp.zeros(2)]),
    "struct_array": (K.struct_array, 3, lambda: [
        wp.array([_holder(9, 2.0), _holder(10, 3.0)], dtype=K.Holder), wp.zeros(3)]),
    "gather_2d": (L.gather_2d, (2, 3), lambda: [_vecs(), wp.zeros((2, 3), dtype=wp.vec3)]),
    "scatter_3d": (L.scatter_3d, (2, 5, 2), lambda: [
        wp.zeros((4, 5, 3), dtype=wp.float64)[_ints([3, 1]), :, _ints([2, 0])],
        wp.array(np.arange(20, dtype=np.float64).reshape(2, 5, 2))]),
    "fill_1d": (L.fill_1d, 3, lambda: [wp.zeros(5, dtype=K.Holder)[_ints([4, 0, 2])],
                                       wp.array([_holder(11, 4.0)], dtype=K.Holder)]),
}


@pytest.mark.parametrize("case", CASES)
def test_nvrtc_compiles(case):
    kernel, _, make = CASES[case]
    module = optimized_ir(kernel, _types(kernel, make()))
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
    kernel, dim, make = CASES[case]
    assert run_both(kernel, dim, make) is None


@needs_cxx
def test_harness_debug_checks():
    data = _floats(12, 10)

    def make(offset, index):
        return lambda: [data[_ints(index)], wp.zeros(3), offset]

    error = run_both(K.read_at, 3, make(1, [9, 3, 5]), debug=True)
    assert error is not None and error.code == 1
    assert (error.index, error.shape) == ((3,), (3,))  # past the indexed dimension
    error = run_both(K.read_at, 3, make(0, [9, 30, 5]), debug=True)
    assert (error.index, error.shape) == ((30,), (10,))  # an entry past the data
    assert run_both(K.read_at, 3, make(-3, [9, 3, 5]), debug=True) is None


def test_compile_api_and_layout():
    """`kc.compile` takes indexedarray annotations; the entry's parameter is the record
    `kernelc.types.IndexedArrayType` describes (static_asserts check it in the source)."""
    compiled = wp.compile(K.rw_2d, target="cuda", arch=90)
    assert compiled.format == "cubin"
    t = T.IndexedArrayType(T.float32, 2)
    assert "kc_indexed_2d_" in compiled.source and "m_indices1" in compiled.source
    assert "sizeof(kc_indexed_2d_" in compiled.source and str(t.size) in compiled.source
    generic = wp.compile(K.scale_generic, target="cuda", arch=80,
                         arg_types=[wp.indexedarray(dtype=wp.float64), wp.float64])
    assert generic.format == "cubin"
