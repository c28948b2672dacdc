"""Tiles of `@kc.struct` elements: loads, stores, views, field reads and writes, field-wise
arithmetic (fields that cannot accumulate ride along), atomics, sorting, stacks, custom
reductions, gradients, the errors Warp raises, and the CUDA-C of every kernel (NVRTC, and
the host harness against the CPU backend)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import kernelc as kc
from kernelc import types as T
from kernelc.frontend.decorators import Kernel
from tests.conftest import nonzero

M = 8


@kc.struct
class Particle:
    mass: kc.float32
    vel: kc.vec3
    tag: kc.int8  # no atomic add for int8: carried, never accumulated
    count: kc.int32


@kc.struct
class Body:
    part: Particle
    weight: kc.float64


@kc.struct
class KeyValue:
    key: kc.int32
    value: kc.float32


@kc.func
def kick(p: Particle) -> Particle:
    out = p
    out.mass = p.mass * 2.0
    out.vel = p.vel + kc.vec3(1.0, 2.0, 3.0)
    return out


@kc.func
def energy(p: Particle) -> float:
    return p.mass * kc.dot(p.vel, p.vel)


@kc.func
def kv_max(a: KeyValue, b: KeyValue) -> KeyValue:
    return kc.where(a.value < b.value, b, a)


@kc.kernel
def k_arith(src: kc.array[Particle], added: kc.array[Particle], diff: kc.array[Particle],
            total: kc.array[Particle], rows: kc.array[Particle], mapped: kc.array[Particle],
            edited: kc.array[Particle]):
    i = kc.tid()
    t = kc.tile_load(src, shape=M, offset=i * M)
    kc.tile_store(added, t + t, offset=i * M)
    kc.tile_store(diff, (t + t) - t, offset=i * M)
    kc.tile_store(total, kc.tile_sum(t), offset=i)
    kc.tile_store(rows, kc.tile_sum(kc.tile_reshape(t, shape=(2, 4)), axis=1), offset=i * 2)
    kc.tile_store(mapped, kc.tile_map(kick, t), offset=i * M)
    u = kc.tile_zeros(M, dtype=Particle)
    u[2] = t[5]
    u[3].mass = t[1].mass * 3.0
    u[3].vel[1] = t[1].vel[2]
    u[4] += t[6]
    u[4] -= t[0]
    u += t
    kc.tile_store(edited, u, offset=i * M)


@kc.kernel
def k_nested(src: kc.array[Body], total: kc.array[Body], edited: kc.array[Body]):
    t = kc.tile_load(src, shape=M)
    kc.tile_store(total, kc.tile_sum(t))
    t[1].part.mass = kc.float32(t[0].weight)
    t[2].weight = kc.float64(t[3].part.vel[0])
    kc.tile_store(edited, t)


@kc.kernel
def k_memory(src: kc.array[Particle], idx: kc.array[int], keys: kc.array[int],
             acc: kc.array[Particle], old: kc.array[Particle], gathered: kc.array[Particle],
             scattered: kc.array[Particle], ordered: kc.array[Particle],
             flipped: kc.array2d[Particle]):
    t = kc.tile_load(src, shape=M)
    kc.tile_store(old, kc.tile_atomic_add(acc, t))
    kc.tile_atomic_add_indexed(acc, indices=kc.tile_load(idx, shape=M), t=t, axis=0)
    order = kc.tile_load(idx, shape=M)
    kc.tile_store(gathered, kc.tile_load_indexed(src, indices=order, shape=(M,), axis=0))
    kc.tile_store_indexed(scattered, indices=order, t=t, axis=0)
    k = kc.tile_load(keys, shape=M)
    v = kc.tile_load(src, shape=M)
    kc.tile_sort(k, v)
    kc.tile_store(ordered, v)
    kc.tile_store(flipped, kc.tile_transpose(kc.tile_reshape(t, shape=(2, 4))))


@kc.kernel
def k_build(src: kc.array[Particle], out: kc.array[Particle], counts: kc.array[int]):
    fill = Particle()
    fill.mass = 4.0
    fill.vel = kc.vec3(5.0, 6.0, 7.0)
    full = kc.tile_full(M, value=fill, dtype=Particle)
    one = kc.tile_from_thread(shape=2, value=src[3])
    dst = kc.tile_zeros(M, dtype=Particle)
    kc.tile_assign(dst, full)
    kc.tile_assign(dst, one, offset=(1,))
    kc.tile_scatter_add(dst, 6, src[0], True)
    kc.tile_scatter_masked(dst, 7, src[1], True)
    stack = kc.tile_stack(capacity=4, dtype=Particle)
    kc.tile_stack_push(stack, src[2], True)
    kc.tile_stack_push(stack, src[4], True)
    popped, slot = kc.tile_stack_pop(stack)
    dst[0] = popped
    counts[0] = kc.tile_stack_count(stack)
    counts[1] = slot
    kc.tile_store(out, dst)
    wide = kc.tile_broadcast(kc.tile_view(dst, offset=(6,), shape=(1,)), shape=(3,))
    out[M] = kc.tile_extract(wide, 2)


@kc.kernel
def k_lanes(src: kc.array[Particle], out: kc.array[Particle]):
    i = kc.tid()
    out[i] = kc.untile(kc.tile_sum(kc.tile(src[i])))


@kc.kernel(enable_backward=False)
def k_argmax(values: kc.array2d[KeyValue], res: kc.array[KeyValue]):
    i = kc.tid()
    t = kc.tile_load(values, shape=(1, 16), offset=(i, 0))
    kc.tile_store(res, kc.tile_reduce(kv_max, t), offset=i)


@kc.kernel
def k_loss(src: kc.array[Particle], idx: kc.array[int], loss: kc.array[float]):
    t = kc.tile_load(src, shape=M)
    twice = t + t - kc.tile_load_indexed(src, indices=kc.tile_load(idx, shape=M), shape=(M,),
                                         axis=0)
    kc.tile_atomic_add(loss, kc.tile_sum(kc.tile_map(energy, kc.tile_map(kick, twice))))


@kc.kernel
def k_accumulate_grad(src: kc.array[Particle], out: kc.array[Particle]):
    kc.tile_atomic_add(out, kc.tile_load(src, shape=M))


# ---- data ---------------------------------------------------------------------------------


def particles(rng, n: int) -> np.ndarray:
    a = kc.zeros(n, dtype=Particle).numpy()
    a["mass"] = nonzero(rng, n, np.float32)
    a["vel"] = nonzero(rng, 3 * n, np.float32).reshape(n, 3)
    a["tag"] = rng.integers(1, 100, n)
    a["count"] = rng.integers(-50, 50, n)
    return a


def poisoned(n, dtype, shape=None) -> kc.array:
    data = kc.zeros(n, dtype=dtype).numpy()
    data.view(np.uint8)[...] = 0xFF  # NaN floats, -1 ints
    if shape is not None:
        data = data.reshape(shape)
    return kc.array(data, dtype=dtype)


def added(x: np.ndarray, y: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """x + sign * y on the fields that accumulate; tag keeps x's."""
    out = x.copy()
    for name in ("mass", "vel", "count"):
        out[name] = x[name] + (y[name] if sign > 0 else -y[name])
    return out


def same(got: np.ndarray, want: np.ndarray, tol: float = 2e-6) -> None:
    for name in want.dtype.names:
        if want.dtype[name].names:
            same(got[name], want[name], tol)
        else:
            np.testing.assert_allclose(got[name], want[name], rtol=tol, atol=tol, err_msg=name)


# ---- forward ------------------------------------------------------------------------------


def test_struct_tile_arithmetic_maps_and_element_writes(rng):
    src = particles(rng, 2 * M)
    outs = [poisoned(2 * M, Particle), poisoned(2 * M, Particle), poisoned(2, Particle),
            poisoned(4, Particle), poisoned(2 * M, Particle), poisoned(2 * M, Particle)]
    kc.launch_tiled(k_arith, dim=2, inputs=[kc.array(src, dtype=Particle), *outs], block_dim=32)
    blocks = src.reshape(2, M)
    same(outs[0].numpy(), added(src, src))
    same(outs[1].numpy(), added(added(src, src), src, -1.0))
    for k, block in enumerate(blocks):
        want = block[0].copy()
        for x in block[1:]:
            want = added(want, x)
        same(outs[2].numpy()[k], want, 1e-5)
        for r in range(2):
            row = block[4 * r:4 * r + 4]
            want = row[0].copy()
            for x in row[1:]:
                want = added(want, x)
            same(outs[3].numpy()[2 * k + r], want, 1e-5)
    kicked = src.copy()
    kicked["mass"] *= 2
    kicked["vel"] += np.array([1.0, 2.0, 3.0], np.float32)
    same(outs[4].numpy(), kicked)
    for k, block in enumerate(blocks):
        u = np.zeros(M, dtype=src.dtype)
        u[2] = block[5]
        u["mass"][3] = block["mass"][1] * 3
        u["vel"][3, 1] = block["vel"][1, 2]
        u[4] = added(added(u[4], block[6]), block[0], -1.0)
        same(outs[5].numpy()[k * M:(k + 1) * M], added(u, block))


def test_nested_struct_tiles_sum_and_write_fields(rng):
    data = kc.zeros(M, dtype=Body).numpy()
    data["part"] = particles(rng, M)
    data["weight"] = nonzero(rng, M, np.float64)
    total, edited = poisoned(1, Body), poisoned(M, Body)
    kc.launch_tiled(k_nested, dim=1, inputs=[kc.array(data, dtype=Body), total, edited])
    got = total.numpy()[0]
    np.testing.assert_allclose(got["weight"], data["weight"].sum(), rtol=1e-12)
    np.testing.assert_allclose(got["part"]["vel"], data["part"]["vel"].sum(0), rtol=1e-5)
    assert got["part"]["tag"] == data["part"]["tag"][0]  # carried from the first element
    assert got["part"]["count"] == data["part"]["count"].sum()
    want = data.copy()
    want["part"]["mass"][1] = np.float32(data["weight"][0])
    want["weight"][2] = data["part"]["vel"][3, 0]
    same(edited.numpy(), want)


def test_struct_tile_atomics_gathers_sort_and_transpose(rng):
    src = particles(rng, M)
    idx = rng.permutation(M).astype(np.int32)
    keys = rng.permutation(M).astype(np.int32)
    start = particles(rng, M)
    acc = kc.array(start, dtype=Particle)
    outs = [poisoned(M, Particle), poisoned(M, Particle), kc.zeros(M, dtype=Particle),
            poisoned(M, Particle), poisoned((4, 2), Particle)]
    kc.launch_tiled(k_memory, dim=1, inputs=[kc.array(src, dtype=Particle),
                                             kc.array(idx, dtype=int), kc.array(keys, dtype=int),
                                             acc, *outs])
    want = added(start, src)
    want[idx] = added(want[idx], src)
    want["tag"] = start["tag"]  # int8 fields are not added atomically: left as they were
    same(acc.numpy(), want)
    same(outs[0].numpy(), start)  # the values replaced
    same(outs[1].numpy(), src[idx])
    scattered = np.zeros(M, dtype=src.dtype)
    scattered[idx] = src
    same(outs[2].numpy(), scattered)
    same(outs[3].numpy(), src[np.argsort(keys, kind="stable")])
    same(outs[4].numpy(), src.reshape(2, 4).T)


def test_struct_tile_construction_stacks_and_lane_writes(rng):
    src = particles(rng, M)
    out, counts = poisoned(M + 1, Particle), kc.full(2, -9, dtype=int)
    kc.launch_tiled(k_build, dim=1, inputs=[kc.array(src, dtype=Particle), out, counts])
    want = np.zeros(M, dtype=src.dtype)
    want["mass"], want["vel"] = 4.0, [5.0, 6.0, 7.0]
    want[1:3] = src[3]
    want[6] = added(want[6], src[0])
    want[7] = src[1]
    want[0] = src[4]
    got = out.numpy()
    same(got[:M], want)
    same(got[M:], want[6:7])
    np.testing.assert_array_equal(counts.numpy(), [1, 1])


def test_tile_and_untile_of_a_struct(rng):
    src = particles(rng, 5)
    out = poisoned(5, Particle)
    kc.launch_tiled(k_lanes, dim=5, inputs=[kc.array(src, dtype=Particle), out])
    same(out.numpy(), src)


def test_tile_reduce_with_a_struct_operator(rng):
    values = rng.random((5, 16), dtype=np.float32)
    kv = kc.zeros((5, 16), dtype=KeyValue).numpy()
    kv["key"], kv["value"] = np.arange(16), values
    res = poisoned(5, KeyValue)
    kc.launch_tiled(k_argmax, dim=5, inputs=[kc.array(kv, dtype=KeyValue), res])
    np.testing.assert_array_equal(res.numpy()["key"], np.argmax(values, axis=1))


# ---- gradients -----------------------------------------------------------------------------


def test_struct_tile_gradients(rng):
    src = particles(rng, M)
    idx = rng.integers(0, M, M).astype(np.int32)
    x = kc.array(src, dtype=Particle, requires_grad=True)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch_tiled(k_loss, dim=1, inputs=[x, kc.array(idx, dtype=int), loss])
    # d = 2 x - x[idx]; energy of kick(d) = 2 m_d * |v_d + c|^2
    m = src["mass"].astype(np.float64)
    v = src["vel"].astype(np.float64)
    md, vd = 2 * m - m[idx], 2 * v - v[idx]
    w = vd + np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(loss.numpy()[0], np.sum(2 * md * np.sum(w * w, 1)), rtol=1e-5)
    tape.backward(loss)
    gm_d, gv_d = 2 * np.sum(w * w, 1), 4 * md[:, None] * w
    gm, gv = 2 * gm_d, 2 * gv_d
    np.subtract.at(gm, idx, gm_d)
    np.subtract.at(gv, idx, gv_d)
    grad = x.grad.numpy()
    np.testing.assert_allclose(grad["mass"], gm, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grad["vel"], gv, rtol=1e-4, atol=1e-4)
    assert not grad["tag"].any() and not grad["count"].any()


def test_struct_tile_atomic_add_passes_the_gradient_back(rng):
    src = particles(rng, M)
    seed = particles(rng, M)
    x = kc.array(src, dtype=Particle, requires_grad=True)
    out = kc.zeros(M, dtype=Particle, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch_tiled(k_accumulate_grad, dim=1, inputs=[x, out])
    out.grad = kc.array(seed, dtype=Particle)
    tape.backward()
    grad = x.grad.numpy()
    np.testing.assert_array_equal(grad["mass"], seed["mass"])
    np.testing.assert_array_equal(grad["vel"], seed["vel"])


# ---- errors --------------------------------------------------------------------------------

ERRORS = {
    "tile_ones": ("kc.tile_store(out, kc.tile_ones(M, dtype=Particle))",
                  r"tile_ones\(\) does not support Warp struct"),
    "bitwise_inplace": ("t = kc.tile_load(src, shape=M)\n    t &= t\n"
                        "    kc.tile_store(out, t)", "bitwise inplace.*Warp struct"),
    "element_bitwise": ("t = kc.tile_load(src, shape=M)\n    t[0] |= src[1]\n"
                        "    kc.tile_store(out, t)", "bitwise inplace.*Warp struct"),
    "negate": ("kc.tile_store(out, -kc.tile_load(src, shape=M))", "unary.*Warp struct"),
    "tile_min": ("kc.tile_store(out, kc.tile_min(kc.tile_load(src, shape=M)))",
                 r"tile_min\(\).*Warp struct"),
    "tile_argmax": ("kc.tile_store(ints, kc.tile_argmax(kc.tile_load(src, shape=M)))",
                    r"tile_argmax\(\).*Warp struct"),
    "reduce_no_overload": ("kc.tile_store(out, kc.tile_reduce(kc.min, kc.tile_load(src, "
                           "shape=M)))", r"tile_reduce\(\).*overload.*Warp struct"),
    "reduce_bad_return": ("kc.tile_store(out, kc.tile_reduce(energy_pair, kc.tile_load(src, "
                          "shape=M)))", r"tile_reduce\(\).*must return the tile element type"),
    "full_wrong_type": ("kc.tile_store(out, kc.tile_full(M, value=1.0, dtype=Particle))",
                        r"tile_full\(\) value must have dtype Particle"),
    "arange": ("kc.tile_store(out, kc.tile_arange(M, dtype=Particle))",
               r"tile_arange\(\).*numeric scalar dtype"),
}


@kc.func
def energy_pair(a: Particle, b: Particle) -> float:
    return a.mass + b.mass


@pytest.mark.parametrize("name", list(ERRORS))
def test_struct_tile_errors(name, tmp_path):
    body, message = ERRORS[name]
    path = tmp_path / f"k_{name}.py"
    path.write_text(
        "import kernelc as kc\n"
        "from tests.test_tile_structs import M, Particle, energy_pair\n\n\n"
        "@kc.kernel\n"
        "def k(src: kc.array[Particle], out: kc.array[Particle], ints: kc.array[int]):\n"
        f"    {body}\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"k_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(kc.KernelError, match=message) as info:
        kc.compile(module.k)
    assert f"{path}:" in str(info.value)
    assert isinstance(info.value, (TypeError, RuntimeError))


# ---- CUDA-C -------------------------------------------------------------------------------

KERNELS = [k for k in list(globals().values()) if isinstance(k, Kernel)]


@pytest.mark.parametrize("kernel", KERNELS, ids=[k.__name__ for k in KERNELS])
def test_struct_tile_kernels_compile_with_nvrtc(kernel):
    pytest.importorskip("cuda.bindings.nvrtc")
    assert kc.compile(kernel, target="cuda", arch=80).format == "cubin"
    if kernel is k_argmax:
        return
    from kernelc.autodiff.kernel import adjoint_kernel

    types = list(kernel.param_types)
    backward = kc.compile(adjoint_kernel(kernel), target="cuda", arch=80,
                          arg_types=[*types, *types, kc.uint64])
    assert backward.format == "cubin"


def test_struct_tile_cuda_c_on_the_host_matches_the_cpu_backend(rng):
    cuda_harness = pytest.importorskip("tests.cuda_harness")
    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    from kernelc.codegen.cuda import CudaOptions, emit_cuda
    from kernelc.codegen.cuda_layout import ArrayArg

    src = particles(rng, 2 * M)
    nan = [kc.zeros(n, dtype=Particle).numpy() for n in (2 * M, 2 * M, 2, 4, 2 * M, 2 * M)]
    memory = [src[:M], rng.permutation(M).astype(np.int32), rng.permutation(M).astype(np.int32),
              particles(rng, M), *(np.zeros(M, dtype=src.dtype) for _ in range(4)),
              np.zeros((4, 2), dtype=src.dtype)]
    cases = [(k_arith, 2, [src, *nan]), (k_memory, 1, memory)]
    hosts = cuda_harness.build_all([emit_cuda(k.get_ir(), CudaOptions()) for k, _, _ in cases])
    for (kernel, dim, args), host in zip(cases, hosts):
        types = kernel.param_types
        on_host = [x.copy() for x in args]
        on_cpu = [kc.array(x.copy(), dtype=t.dtype) for x, t in zip(args, types)]
        kc.launch_tiled(kernel, dim=dim, inputs=on_cpu)
        packed = [ArrayArg(x.ctypes.data, x.shape, x.strides) for x in on_host]
        assert host.launch((dim, 1), packed, block_dim=4, max_blocks=2) is None
        for x, y, t in zip(on_host, on_cpu, types):
            if isinstance(t.dtype, T.StructType):
                same(x, y.numpy(), 1e-6)
            else:
                np.testing.assert_array_equal(x, y.numpy())
