"""Backward kernels through the CUDA backend (no GPU needed).

The backward kernels of several programs of `tests/autodiff_programs.py` compile to cubins
with NVRTC (`kc.compile(..., target="cuda")`), and a few run as CUDA-C in the host harness
(g++): their gradients must equal those of the same backward kernel launched on the CPU.
"""

from __future__ import annotations

import shutil

import cuda_harness
import numpy as np
import pytest

import kernelc as kc
from kernelc import types as T
from kernelc.autodiff.kernel import adjoint_kernel
from kernelc.codegen.cuda import CudaOptions, emit_cuda
from kernelc.codegen.cuda_layout import ArrayArg
from tests import autodiff_cases as C
from tests import autodiff_programs as P

F32, F64 = kc.array(dtype=kc.float32), kc.array(dtype=kc.float64)
F32_2D = kc.array2d(dtype=kc.float32)

# name -> (kernel, primal parameter types for generic kernels, else None)
NVRTC = {
    "unary_float32": (P.k_unary, [F32_2D, F32_2D, F32]),
    "binary_float64": (P.k_binary, [kc.array2d(dtype=kc.float64)] * 4 + [F64]),
    "vec3": (P.k_vec3, None),
    "mat33": (P.k_mat33, None),
    "mat24": (P.k_mat24, None),
    "quat": (P.k_quat, None),
    "transform": (P.k_transform, None),
    "struct": (P.k_struct, None),
    "struct_built": (P.k_struct_built, None),
    "struct_fields": (P.k_struct_fields, None),
    "store_through": (P.k_store_through, None),
    "funcs": (P.k_funcs, None),
    "branches": (P.k_branches, None),
    "loops": (P.k_loops, None),
    "dyn_sin_float64": (P.k_dyn_sin, [F64, F64, kc.int32, F64]),
    "while_float32": (P.k_while, [F32, F32, kc.int32, F32]),
    "break_continue_float64": (P.k_break_continue, [F64, F64, F64, kc.int32, F64]),
    "atomics": (P.k_atomics, None),
    "atomic_nan": (P.k_atomic_nan, None),
    "atomic_vec": (P.k_atomic_vec, None),
    "grid2d": (P.k_grid, None),
    "write_then_read": (P.k_write_read, None),
    "linalg_float64": (P.k_linalg, [kc.array(dtype=kc.vec3d), kc.array(dtype=kc.mat33d),
                                    kc.array(dtype=kc.quatd), F64]),
}


def adjoint_types(kernel, primal):
    """The backward kernel's parameter types: the primal's, their adjoints, the mask."""
    primal = kernel.param_types if primal is None else kernel.specialize(tuple(
        T.as_type(t) for t in primal))
    return [*primal, *primal, kc.uint64]


@pytest.mark.parametrize("name", list(NVRTC))
def test_backward_kernel_compiles_with_nvrtc(name):
    pytest.importorskip("cuda.bindings.nvrtc")
    kernel, primal = NVRTC[name]
    c = kc.compile(adjoint_kernel(kernel), target="cuda", arch=90,
                   arg_types=adjoint_types(kernel, primal))
    assert c.format == "cubin" and c.target == "cuda:sm_90"
    assert c.binary[:4] == b"\x7fELF" and c.entry.encode() in c.binary
    assert "__global__" in c.source


# ---- the host harness ------------------------------------------------------------------


def _inputs(rng, name):
    """Primal arrays, adjoint arrays (the loss's seeded with 1) and scalar arguments."""
    n = P.N
    if name == "dyn_sin":
        x, a = C.uniform(rng, n, dtype=np.float64), C.uniform(rng, 6, 0.5, 1.5, np.float64)
        primal = [kc.array(x, dtype=kc.float64), kc.array(a, dtype=kc.float64), 5,
                  kc.zeros(1, dtype=kc.float64)]
    elif name == "quat":
        primal = [kc.array(C.uniform(rng, (n, k)), dtype=t) for k, t in
                  ((4, kc.quat), (4, kc.quat), (3, kc.vec3), (3, kc.vec3))]
        primal += [kc.array(C.uniform(rng, n), dtype=kc.float32), kc.zeros(1, dtype=kc.float32)]
    elif name == "branches":
        primal = [kc.array(C.uniform(rng, n, -3, 3), dtype=kc.float32),
                  kc.array(C.uniform(rng, n, -3, 3), dtype=kc.float32),
                  kc.zeros(1, dtype=kc.float32)]
    elif name == "struct_array":  # one atomic add per float field of the element
        bodies = kc.zeros(n, dtype=P.Body).numpy()
        bodies["pos"] = C.uniform(rng, (n, 3))
        bodies["mass"] = C.uniform(rng, n, 0.5, 2.0)
        primal = [kc.array(bodies, dtype=P.Body), kc.zeros(1, dtype=kc.float32)]
        adjoint = [kc.zeros(n, dtype=P.Body), kc.array([1.5], dtype=kc.float32)]
        return primal, adjoint
    else:  # atomics: min/max and add/sub losses
        primal = [kc.array(C.uniform(rng, n), dtype=kc.float32),
                  kc.array(C.uniform(rng, n), dtype=kc.float32),
                  kc.zeros(1, dtype=kc.float32), kc.array([-1.5], dtype=kc.float32),
                  kc.array([1.5], dtype=kc.float32)]
    adjoint = [kc.array(C.uniform(rng, a.numpy().shape, 0.5, 2, a.numpy().dtype), dtype=a.dtype)
               if isinstance(a, kc.array) else 0 for a in primal]
    return primal, adjoint


HARNESS = {"dyn_sin": P.k_dyn_sin, "quat": P.k_quat, "branches": P.k_branches,
           "atomics": P.k_atomics, "struct_array": P.k_struct_array}


@pytest.mark.skipif(shutil.which(cuda_harness.CXX) is None, reason="needs g++")
@pytest.mark.parametrize("name", list(HARNESS))
def test_backward_kernel_in_harness_matches_cpu(name):
    kernel = HARNESS[name]
    backward = adjoint_kernel(kernel)
    primal, adjoint = _inputs(np.random.default_rng(7), name)
    args = [*primal, *adjoint, 0]
    types = [T.ArrayType(a.dtype, a.ndim) if isinstance(a, kc.array) else
             (kc.int32 if isinstance(a, int) and i < len(args) - 1 else kc.uint64)
             for i, a in enumerate(args)]
    host, values = [], []
    for a in args:  # host copies, before the CPU launch changes any of them
        if isinstance(a, kc.array):
            data = np.array(a.numpy(), copy=True)
            values.append(ArrayArg(data.ctypes.data, a.shape, data.strides[:a.ndim]))
            host.append(data)
        else:
            values.append(a)
            host.append(None)
    source = emit_cuda(backward.get_ir(tuple(types)), CudaOptions())
    error = cuda_harness.build(source).launch(P.N, values, block_dim=4, max_blocks=2)
    assert error is None
    kc.launch(backward, P.N, inputs=args)
    n = len(primal)
    for k, (a, data) in enumerate(zip(args, host)):
        if data is None:
            continue
        what = f"{name}: {'adj_' if n <= k < 2 * n else ''}{backward.primal.arg_names[k % n]}"
        got = a.numpy()
        for field in data.dtype.names or (None,):  # structs: field by field
            want, have = (data, got) if field is None else (data[field], got[field])
            tol = 1e-12 if want.dtype == np.float64 else 1e-5
            np.testing.assert_allclose(want, have, rtol=tol, atol=tol, err_msg=what)
    assert any(np.any(h.view(np.uint8) != 0) for h in host[n:2 * n] if h is not None)


# ---- on a GPU ----------------------------------------------------------------------------

GPU_CASES = ["unary_float32", "binary_float64", "vec3", "mat33", "quat", "loops",
             "nested_float64", "atomics", "grid2d", "chain_with_copy", "zero_and_backward_twice"]


@pytest.mark.cuda
@pytest.mark.parametrize("name", GPU_CASES)
def test_tape_on_gpu_matches_cpu(name):
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    want = C.run_case(name)
    with kc.ScopedDevice("cuda:0"):
        have = C.run_case(name)
    assert set(have) == set(want)
    for field, expected in want.items():
        rtol = 1e-10 if expected.dtype == np.float64 else 1e-4
        scale = float(np.max(np.abs(expected), initial=0.0))
        np.testing.assert_allclose(have[field], expected, rtol=rtol, atol=rtol * scale,
                                   err_msg=f"{name}: {field}")
