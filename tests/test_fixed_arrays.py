"""Local fixed-size arrays used as arrays: several dimensions, vector and struct elements,
views and slices, passed to funcs, returned by funcs (Warp's `fixedarray`), on the CPU, on
the CUDA-C run on the host, and through NVRTC; against NumPy with poisoned outputs."""

from __future__ import annotations

import shutil

import cuda_harness
import numpy as np
import pytest

import kernelc as kc
from kernelc import types as T
from kernelc.codegen.cuda import CudaOptions, emit_cuda
from tests.conftest import nonzero, poisoned


@kc.func
def fill_rows(arr: kc.array2d(dtype=float), x: float):
    for i in range(arr.shape[0]):
        for j in range(arr.shape[1]):
            arr[i][j] = x * float(i * arr.shape[1] + j + 1)


@kc.func
def row_sum(row: kc.array(dtype=float)) -> float:
    total = float(0.0)
    for j in range(row.shape[0]):
        total += row[j]
    return total


@kc.kernel
def grids(x: kc.array(dtype=float), out: kc.array2d(dtype=float)):
    t = kc.tid()
    g = kc.zeros(shape=(2, 3), dtype=float)
    fill_rows(g, x[t])
    r1 = g[1]
    s = g[:2, 1:]  # columns 1 and 2
    out[t, 0] = g[0, 2]
    out[t, 1] = r1[1]
    out[t, 2] = s[1, 1]
    out[t, 3] = row_sum(g[0])
    out[t, 4] = float(g.shape[0] * 10 + g.shape[1])
    out[t, 5] = float(r1.shape[0] * 10 + r1.shape[1])  # Warp's shapes read 0 past the rank
    out[t, 6] = float(len(g))
    g[1, 0] += 0.5
    out[t, 7] = r1[0]  # a view sees stores made through the array


def grids_reference(x: np.ndarray) -> np.ndarray:
    g = x[:, None, None] * np.arange(1, 7, dtype=np.float32).reshape(1, 2, 3)
    return np.stack([g[:, 0, 2], g[:, 1, 1], g[:, 1, 2], g[:, 0].sum(1),
                     np.full_like(x, 23), np.full_like(x, 30), np.full_like(x, 2),
                     g[:, 1, 0] + 0.5], axis=1)


def test_a_two_dimensional_local_array_is_an_array():
    rng = np.random.default_rng(3)
    x = nonzero(rng, 37, np.float32)
    out = poisoned((37, 8), np.float32)
    kc.launch(grids, dim=37, inputs=[kc.array(x), out])
    np.testing.assert_allclose(out.numpy(), grids_reference(x), rtol=1e-6)


@kc.struct
class Particle:
    offset: int
    dist: float


@kc.kernel
def elements(x: kc.array(dtype=float), vecs: kc.array(dtype=kc.vec3), ints: kc.array2d(dtype=int),
             dists: kc.array(dtype=float)):
    t = kc.tid()
    v = kc.zeros(shape=3, dtype=kc.vec3)
    v[1] = kc.vec3(1.0, x[t], 2.0)
    v[2][0] = x[t] * 3.0  # a component of an element
    vecs[t] = v[0] + v[1] + v[2]
    p = kc.zeros(shape=(2, 2), dtype=Particle)
    for i in range(2):
        for j in range(2):
            p[i][j].offset = i * 2 + j + t
            p[i, j].dist = float(p[i][j].offset) * x[t]
    ints[t, 0] = p[1][0].offset
    ints[t, 1] = p[0, 1].offset
    dists[t] = p[1][1].dist
    counts = kc.zeros(shape=4, dtype=int)
    kc.atomic_add(counts, t % 4, 5)  # an atomic on a local array
    counts[(t + 1) % 4] = 2  # and a store in place
    ints[t, 2] = counts[t % 4] * 10 + counts[(t + 1) % 4]


def test_vector_and_struct_elements_and_atomics():
    rng = np.random.default_rng(4)
    n = 19
    x = nonzero(rng, n, np.float32)
    ints, dists = poisoned((n, 3), np.int32), poisoned(n, np.float32)
    vecs = kc.array(np.full((n, 3), np.nan, np.float32), dtype=kc.vec3)
    kc.launch(elements, dim=n, inputs=[kc.array(x), vecs, ints, dists])
    t = np.arange(n)
    np.testing.assert_allclose(vecs.numpy(), np.stack([1.0 + 3.0 * x, x, np.full(n, 2.0)], 1),
                               rtol=1e-6)
    np.testing.assert_array_equal(ints.numpy(), np.stack([2 + t, 1 + t, np.full(n, 52)], 1))
    np.testing.assert_allclose(dists.numpy(), (3 + t) * x, rtol=1e-6)


@kc.func
def ramp(x: float) -> kc.fixedarray(shape=(2, 3), dtype=float):
    a = kc.zeros(shape=(2, 3), dtype=float)
    for i in range(2):
        for j in range(3):
            a[i, j] = x + float(i * 3 + j)
    return a


@kc.func
def scaled(x: float):  # no annotation: the returned type is inferred
    a = kc.zeros(shape=4, dtype=int)
    for i in range(4):
        a[i] = int(x) * (i + 1)
    return a


@kc.kernel
def returned(x: kc.array(dtype=float), out: kc.array2d(dtype=float)):
    t = kc.tid()
    a = ramp(x[t])
    b = ramp(x[t] * 2.0)  # a second, independent copy
    a[0, 0] = -1.0  # the caller's own copy: b is untouched
    c = scaled(x[t] * 10.0)
    out[t, 0] = a[0, 0]
    out[t, 1] = a[1, 2]
    out[t, 2] = b[0, 0]
    out[t, 3] = b[1, 1]
    out[t, 4] = float(c[3])
    out[t, 5] = float(len(c))


def test_funcs_return_local_arrays_by_value():
    rng = np.random.default_rng(5)
    n = 23
    x = nonzero(rng, n, np.float32)
    out = poisoned((n, 6), np.float32)
    kc.launch(returned, dim=n, inputs=[kc.array(x), out])
    c3 = (x * np.float32(10.0)).astype(np.int32) * 4
    want = np.stack([np.full(n, -1.0), x + 5.0, 2.0 * x, 2.0 * x + 4.0, c3, np.full(n, 4.0)], 1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


@kc.kernel
def fresh(x: kc.array(dtype=float), out: kc.array2d(dtype=float)):
    t = kc.tid()
    for r in range(3):
        m = kc.zeros(shape=(2, 2), dtype=float)  # zero again on every iteration
        m[r % 2, 1] += x[t] * float(r + 1)
        out[t, r] = m[0, 1] + m[1, 1]


def test_a_local_array_declared_in_a_loop_starts_at_zero_each_time():
    x = nonzero(np.random.default_rng(6), 11, np.float32)
    out = poisoned((11, 3), np.float32)
    kc.launch(fresh, dim=11, inputs=[kc.array(x), out])
    np.testing.assert_allclose(out.numpy(), x[:, None] * np.array([1.0, 2.0, 3.0]), rtol=1e-6)


@pytest.mark.parametrize("simd", ["off", "all"])
def test_kernels_viewing_local_arrays_run_without_lanes(simd):
    # Lanes would need an address per lane: such kernels run thread by thread.
    previous = kc.config.cpu_simd
    kc.config.cpu_simd = simd
    try:
        x = nonzero(np.random.default_rng(7), 37, np.float32)
        out = poisoned((37, 8), np.float32)
        kc.launch(grids, dim=37, inputs=[kc.array(x), out])
        np.testing.assert_allclose(out.numpy(), grids_reference(x), rtol=1e-6)
    finally:
        kc.config.cpu_simd = previous


def test_out_of_bounds_index_of_a_local_array_is_reported(debug_mode):
    @kc.kernel
    def overrun(out: kc.array(dtype=float)):
        g = kc.zeros(shape=(2, 3), dtype=float)
        k = kc.tid() + 2
        out[0] = g[k, 0]

    with pytest.raises(kc.KernelRuntimeError, match="out of bounds") as info:
        kc.launch(overrun, dim=1, inputs=[kc.zeros(1, dtype=float)])
    assert "g[k, 0]" in str(info.value)


# ---- gradients ------------------------------------------------------------------------------


@kc.kernel
def through_local(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    t = kc.tid()
    a = kc.zeros(shape=(2, 2), dtype=float)
    a[0, 1] = x[t] * 2.0
    d = kc.zeros(shape=3, dtype=float)
    d[1] = x[t] * 3.0
    y[t] = a[0, 1] * x[t] + d[1]


def test_backward_replays_local_array_stores():
    # As in Warp 1.19 (the same program gives these gradients there): the replay sees what
    # was stored (a[0, 1] = 2x), gradients flow through a one-dimensional local array of
    # scalars indexed in place (d) but not through one used as an array (a).
    x = kc.array(nonzero(np.random.default_rng(8), 9, np.float32), requires_grad=True)
    y = kc.zeros(9, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(through_local, dim=9, inputs=[x, y])
    tape.backward(grads={y: kc.ones(9, dtype=float)})
    xs = x.numpy()
    np.testing.assert_allclose(y.numpy(), 2 * xs * xs + 3 * xs, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 2 * xs + 3, rtol=1e-6)


@kc.func
def half_of(x: float) -> kc.fixedarray(shape=(2,), dtype=kc.vec2):
    a = kc.zeros(shape=(2,), dtype=kc.vec2)
    a[1] = kc.vec2(x, x * 0.5)
    return a


@kc.kernel
def through_func(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    t = kc.tid()
    a = half_of(x[t])
    y[t] = a[1][1] * x[t]


def test_backward_through_a_func_returning_a_local_array():
    x = kc.array(nonzero(np.random.default_rng(9), 7, np.float32), requires_grad=True)
    y = kc.zeros(7, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(through_func, dim=7, inputs=[x, y])
    tape.backward(grads={y: kc.ones(7, dtype=float)})
    xs = x.numpy()
    np.testing.assert_allclose(y.numpy(), 0.5 * xs * xs, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 0.5 * xs, rtol=1e-6)


def test_backward_refuses_a_func_filling_a_local_array():
    x = kc.array(np.ones(3, np.float32), requires_grad=True)
    y = kc.zeros(3, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(grids_grad, dim=3, inputs=[x, y])
    with pytest.raises(kc.KernelError, match="writes into a local array passed to it"):
        tape.backward(grads={y: kc.ones(3, dtype=float)})


@kc.kernel
def grids_grad(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    t = kc.tid()
    g = kc.zeros(shape=(2, 3), dtype=float)
    fill_rows(g, x[t])
    y[t] = g[1, 1] * x[t]


# ---- errors ---------------------------------------------------------------------------------


def test_a_shape_known_only_at_run_time_is_refused():
    @kc.kernel
    def dynamic(out: kc.array(dtype=int)):
        t = kc.tid()
        a = kc.zeros(shape=(t, 2), dtype=int)
        out[t] = a[0, 0]

    with pytest.raises(kc.KernelError, match="shape of a local array must be a constant"):
        kc.launch(dynamic, dim=1, inputs=[kc.zeros(1, dtype=int)])


def test_a_local_array_returned_under_an_array_annotation_is_refused():
    @kc.func
    def make() -> kc.array2d(dtype=int):
        a = kc.zeros(shape=(2, 3), dtype=int)
        return a

    @kc.kernel
    def use(out: kc.array(dtype=int)):
        a = make()
        out[0] = a[0, 0]

    with pytest.raises(kc.KernelError, match=r"annotate it kc.fixedarray\(shape=\(2, 3\)"):
        kc.launch(use, dim=1, inputs=[kc.zeros(1, dtype=int)])


@kc.struct
class Holder:
    data: kc.array(dtype=float)


def test_a_local_array_of_arrays_is_refused():
    @kc.kernel
    def nested(out: kc.array(dtype=int)):
        a = kc.zeros(shape=2, dtype=Holder)
        out[0] = len(a)

    with pytest.raises(kc.KernelError, match="holds scalars, vectors, matrices or structs"):
        kc.launch(nested, dim=1, inputs=[kc.zeros(1, dtype=int)])


def test_fixedarray_needs_a_shape_and_a_dtype():
    assert kc.fixedarray(shape=(2, 3), dtype=float) == kc.fixedarray(dtype=kc.float32,
                                                                     shape=[2, 3])
    with pytest.raises(TypeError, match="needs a shape"):
        kc.fixedarray(dtype=float)
    with pytest.raises(TypeError, match="concrete dtype"):
        kc.fixedarray(shape=3)
    with pytest.raises(TypeError, match="positive dimensions"):
        kc.fixedarray(shape=(2, 0), dtype=int)


# ---- the CUDA backend -----------------------------------------------------------------------


@pytest.mark.skipif(shutil.which(cuda_harness.CXX) is None, reason="needs g++")
def test_cuda_c_of_local_arrays_runs_on_the_host():
    x = nonzero(np.random.default_rng(10), 37, np.float32)
    out = np.full((37, 8), np.nan, np.float32)
    ir = grids.get_ir((T.ArrayType(T.float32, 1), T.ArrayType(T.float32, 2)))
    cuda_harness.build(emit_cuda(ir, CudaOptions())).launch(37, [x, out])
    np.testing.assert_allclose(out, grids_reference(x), rtol=1e-6)
    out = np.full((23, 6), np.nan, np.float32)
    x = x[:23].copy()
    ir = returned.get_ir((T.ArrayType(T.float32, 1), T.ArrayType(T.float32, 2)))
    cuda_harness.build(emit_cuda(ir, CudaOptions())).launch(23, [x, out])
    np.testing.assert_allclose(out[:, 1], x + 5.0, rtol=1e-6)
    np.testing.assert_allclose(out[:, 3], 2.0 * x + 4.0, rtol=1e-6)


@pytest.mark.parametrize("kernel", [grids, elements, returned, fresh, through_local,
                                    through_func], ids=lambda k: k.__name__)
def test_nvrtc_compiles_local_array_kernels(kernel):
    pytest.importorskip("cuda.bindings.nvrtc")
    assert kc.compile(kernel, target="cuda", arch=80).binary


@pytest.mark.cuda
def test_local_array_atomics_on_a_gpu_match_the_cpu():
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    rng = np.random.default_rng(5)
    n = 300
    x = nonzero(rng, n, np.float32)
    results = {}
    for device in ("cpu", "cuda:0"):
        ints = kc.array(np.full((n, 3), -7, np.int32), device=device)
        dists = kc.full(n, np.nan, dtype=float, device=device)
        vecs = kc.full(n, kc.vec3(np.nan, np.nan, np.nan), dtype=kc.vec3, device=device)
        kc.launch(elements, dim=n, inputs=[kc.array(x, device=device), vecs, ints, dists],
                  device=device)
        results[device] = (vecs.numpy(), ints.numpy(), dists.numpy())
    for cpu, gpu in zip(results["cpu"], results["cuda:0"]):
        np.testing.assert_allclose(gpu, cpu, rtol=1e-6)
