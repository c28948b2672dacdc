"""`@kc.func_native`: C++ snippets called from CPU kernels, their gradients, their errors
and their cached libraries."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from kernelc.runtime import native_snippets
from tests.conftest import nonzero, poisoned, run_warp

pytestmark = pytest.mark.skipif(native_snippets.find_cxx_compiler() is None,
                                reason="needs a C++ compiler")

N = 16

SAXPY = "out[tid] = a * x[tid] + y[tid];"
SAXPY_ADJ = """
    adj_a += x[tid] * adj_out[tid];
    adj_x[tid] += a * adj_out[tid];
    adj_y[tid] += adj_out[tid];
"""


@kc.func_native(SAXPY, SAXPY_ADJ)
def saxpy(a: kc.float32, x: kc.array(dtype=kc.float32), y: kc.array(dtype=kc.float32),
          out: kc.array(dtype=kc.float32), tid: int): ...


@kc.func_native("float sq = x * x;\nreturn sq;", "adj_x += 2.0f * x * adj_ret;")
def square(x: float) -> float: ...


@kc.func_native("return wp::vec_t<3, wp::float32>(x, 2.0f * x, x * x);")
def spread(x: kc.float32) -> kc.vec3: ...


@kc.func_native("return wp::mat_t<2, 2, wp::float32>(x, 1.0f, -1.0f, x);")
def rotation_like(x: kc.float32) -> kc.mat22: ...


@kc.func_native("return wp::dot(u, v) + m(0, 1) * m[1][0];")
def dot_plus(u: kc.vec3, v: kc.vec3, m: kc.mat22) -> float: ...


@kc.func_native("x = x * s + 1.0f;\nflag = x > 0.0f;\nreturn (int)flag + 10;")
def scale_in_place(x: kc.ref[float], s: float, flag: kc.ref[bool]) -> int: ...


@kc.func_native("return wp::index(m, i, j) * (double)m.shape[1];")
def element_2d(m: kc.array2d(dtype=kc.float64), i: int, j: int) -> kc.float64: ...


@kc.kernel
def k_saxpy(a: kc.float32, x: kc.array(dtype=kc.float32), y: kc.array(dtype=kc.float32),
            out: kc.array(dtype=kc.float32)):
    tid = kc.tid()
    saxpy(a, x, y, out, tid)


@kc.kernel
def k_values(x: kc.array(dtype=float), sq: kc.array(dtype=float), v: kc.array(dtype=kc.vec3),
             m: kc.array(dtype=kc.mat22), d: kc.array(dtype=float)):
    i = kc.tid()
    sq[i] = square(x[i])
    v[i] = spread(x[i])
    m[i] = rotation_like(x[i])
    d[i] = dot_plus(spread(x[i]), kc.vec3(1.0, 2.0, 3.0), rotation_like(x[i]))


@kc.kernel
def k_refs(x: kc.array(dtype=float), s: float, flags: kc.array(dtype=kc.int32),
           codes: kc.array(dtype=kc.int32)):
    i = kc.tid()
    on = False
    codes[i] = scale_in_place(x[i], s, on)  # writes back into x[i] and `on`
    flags[i] = 1 if on else 0


@kc.kernel
def k_2d(m: kc.array2d(dtype=kc.float64), out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    out[i] = element_2d(m, i, 2)


def test_saxpy_forward_and_gradients(rng):
    a = 1.75
    x_np, y_np = nonzero(rng, N, np.float32), nonzero(rng, N, np.float32)
    x = kc.array(x_np, requires_grad=True)
    y = kc.array(y_np, requires_grad=True)
    out = poisoned(N, np.float32)
    out.requires_grad = True
    tape = kc.Tape()
    with tape:
        kc.launch(k_saxpy, N, inputs=[a, x, y, out])
    np.testing.assert_allclose(out.numpy(), a * x_np + y_np, rtol=1e-6)
    seed = nonzero(rng, N, np.float32)
    tape.backward(grads={out: kc.array(seed)})
    np.testing.assert_allclose(x.grad.numpy(), a * seed, rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), seed, rtol=1e-6)


def test_returned_scalars_vectors_and_matrices(rng):
    x_np = nonzero(rng, N, np.float32)
    outs = [poisoned(N, np.float32), poisoned((N, 3), np.float32),
            poisoned((N, 2, 2), np.float32), poisoned(N, np.float32)]
    outs[1] = kc.array(outs[1].numpy(), dtype=kc.vec3)
    outs[2] = kc.array(outs[2].numpy(), dtype=kc.mat22)
    kc.launch(k_values, N, inputs=[kc.array(x_np), *outs])
    sq, v, m, d = (o.numpy() for o in outs)
    np.testing.assert_allclose(sq, x_np * x_np, rtol=1e-6)
    np.testing.assert_allclose(v, np.stack([x_np, 2 * x_np, x_np * x_np], 1), rtol=1e-6)
    expect_m = np.stack([np.stack([x_np, np.ones(N)], 1), np.stack([-np.ones(N), x_np], 1)], 1)
    np.testing.assert_allclose(m, expect_m, rtol=1e-6)
    np.testing.assert_allclose(d, x_np + 4 * x_np + 3 * x_np * x_np - 1.0, rtol=1e-5)


def test_reference_parameters_write_back(rng):
    x_np = nonzero(rng, N, np.float32)
    x = kc.array(x_np)
    flags, codes = poisoned(N, np.int32), poisoned(N, np.int32)
    kc.launch(k_refs, N, inputs=[x, -2.5, flags, codes])
    after = x_np * np.float32(-2.5) + np.float32(1.0)
    np.testing.assert_allclose(x.numpy(), after, rtol=1e-6)
    np.testing.assert_array_equal(flags.numpy(), (after > 0).astype(np.int32))
    np.testing.assert_array_equal(codes.numpy(), 10 + (after > 0).astype(np.int32))


def test_strided_arrays(rng):
    m_np = nonzero(rng, (N, 5), np.float64)
    out = poisoned(N, np.float64)
    kc.launch(k_2d, N, inputs=[kc.array(m_np), out])
    np.testing.assert_allclose(out.numpy(), m_np[:, 2] * 5.0)
    # a 1-d slice with a stride: `x[tid]` follows it
    x_np, y_np = nonzero(rng, 2 * N, np.float32), nonzero(rng, N, np.float32)
    x = kc.array(x_np)[::2]
    out1 = poisoned(N, np.float32)
    kc.launch(k_saxpy, N, inputs=[2.0, x, kc.array(y_np), out1])
    np.testing.assert_allclose(out1.numpy(), 2.0 * x_np[::2] + y_np, rtol=1e-6)


@kc.func_native("y[tid] = powf(x[tid], 2.0f);", adj_snippet="adj_x[tid] += 2.0f * adj_y[tid];",
                replay_snippet="y[tid] = x[tid];")
def square_replayed(x: kc.array(dtype=float), y: kc.array(dtype=float), tid: int): ...


@kc.kernel
def k_log_square(x: kc.array(dtype=float), y: kc.array(dtype=float), z: kc.array(dtype=float)):
    tid = kc.tid()
    square_replayed(x, y, tid)
    z[tid] = kc.log(y[tid])


def test_replay_snippet_runs_in_the_backward_pass(rng):
    """The backward kernel replays `y = x` (not `x**2`): d log(y)/dx = 2 / x (Warp's case)."""
    x_np = np.abs(nonzero(rng, N, np.float32)) + 0.5
    x = kc.array(x_np, requires_grad=True)
    y = kc.zeros(N, dtype=float, requires_grad=True)
    z = kc.zeros(N, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(k_log_square, N, inputs=[x, y, z])
    np.testing.assert_allclose(z.numpy(), np.log(x_np ** 2), rtol=1e-5)
    tape.backward(grads={z: kc.ones(N, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 / x_np, rtol=1e-5)


@kc.func_native("slot[tid] = __atomic_fetch_add(counter.data, 1, __ATOMIC_RELAXED);",
                replay_snippet="")
def take_ticket(counter: kc.array(dtype=kc.int32), slot: kc.array(dtype=kc.int32), tid: int): ...


@kc.kernel
def k_tickets(x: kc.array(dtype=float), counter: kc.array(dtype=kc.int32),
              slot: kc.array(dtype=kc.int32), out: kc.array(dtype=float)):
    tid = kc.tid()
    take_ticket(counter, slot, tid)
    j = slot[tid]
    out[j] = x[j] * x[j]


def test_side_effects_are_not_replayed(rng):
    """A snippet without an adjoint but with integer operands only differentiates fine;
    its empty replay keeps the counter from counting twice (Warp's test_custom_replay_grad)."""
    x_np = nonzero(rng, N, np.float32)
    x = kc.array(x_np, requires_grad=True)
    counter, slot = kc.zeros(1, dtype=kc.int32), kc.zeros(N, dtype=kc.int32)
    out = kc.zeros(N, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(k_tickets, N, inputs=[x, counter, slot, out])
    tape.backward(grads={out: kc.ones(N, dtype=float)})
    assert counter.numpy()[0] == N
    assert sorted(slot.numpy()) == list(range(N))
    np.testing.assert_allclose(x.grad.numpy(), 2 * x_np, rtol=1e-6)


@kc.func
def cubed_via_native(x: float):
    return square(x) * x


@kc.kernel
def k_nested(x: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = cubed_via_native(x[i])


def test_gradient_through_a_func_calling_a_snippet(rng):
    x_np = nonzero(rng, N, np.float32)
    x = kc.array(x_np, requires_grad=True)
    out = kc.zeros(N, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(k_nested, N, inputs=[x, out])
    tape.backward(grads={out: kc.ones(N, dtype=float)})
    np.testing.assert_allclose(out.numpy(), x_np ** 3, rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), 3 * x_np ** 2, rtol=1e-5)


@kc.func_native("x = x + d;", adj_snippet="adj_d += 3.0f * adj_x;")
def add_ref(x: kc.ref[float], d: float): ...


@kc.kernel
def k_add_ref(d: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    v = float(1.0)
    add_ref(v, d[i])
    out[i] = v * 2.0


def test_reference_parameter_adjoint_sees_the_handed_back_gradient(rng):
    """`adj_x` of a kc.ref parameter holds the gradient of the value handed back."""
    d_np = nonzero(rng, N, np.float32)
    d = kc.array(d_np, requires_grad=True)
    out = kc.zeros(N, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(k_add_ref, N, inputs=[d, out])
    np.testing.assert_allclose(out.numpy(), 2 * (1 + d_np), rtol=1e-6)
    tape.backward(grads={out: kc.ones(N, dtype=float)})
    np.testing.assert_allclose(d.grad.numpy(), np.full(N, 6.0), rtol=1e-6)  # 3 * (2 * 1)


def test_matches_warp(rng, tmp_path):
    x_np, y_np = nonzero(rng, N, np.float32), nonzero(rng, N, np.float32)
    seed = nonzero(rng, N, np.float32)
    got_out = poisoned(N, np.float32)
    got_out.requires_grad = True
    x, y = kc.array(x_np, requires_grad=True), kc.array(y_np, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(k_saxpy, N, inputs=[0.5, x, y, got_out])
    tape.backward(grads={got_out: kc.array(seed)})
    want = run_warp(f"""
        @wp.func_native({SAXPY!r}, {SAXPY_ADJ!r})
        def saxpy(a: wp.float32, x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32),
                  out: wp.array(dtype=wp.float32), tid: int): ...

        @wp.kernel
        def k(a: wp.float32, x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32),
              out: wp.array(dtype=wp.float32)):
            tid = wp.tid()
            saxpy(a, x, y, out, tid)

        x = wp.array(inputs["x"], requires_grad=True)
        y = wp.array(inputs["y"], requires_grad=True)
        out = wp.zeros_like(x, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(k, x.shape[0], inputs=[0.5, x, y, out], device="cpu")
        tape.backward(grads={{out: wp.array(inputs["seed"])}})
        results["out"], results["gx"], results["gy"] = out.numpy(), x.grad.numpy(), y.grad.numpy()
    """, tmp_path, x=x_np, y=y_np, seed=seed)
    np.testing.assert_allclose(got_out.numpy(), want["out"], rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), want["gx"], rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), want["gy"], rtol=1e-6)
