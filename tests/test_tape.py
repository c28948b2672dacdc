"""kc.Tape and backward launches: gradients against NumPy, the tape's bookkeeping, errors."""

from __future__ import annotations

import typing

import numpy as np
import pytest

import kernelc as kc
from kernelc.runtime.context import get_runtime
from tests.conftest import nonzero, poisoned

C = 3.0


@kc.kernel
def square_scale(x: kc.array(dtype=float), y: kc.array(dtype=float), c: float):
    i = kc.tid()
    y[i] = x[i] * x[i] * c


@kc.kernel
def sum_loss(y: kc.array(dtype=float), loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, y[i])


@kc.kernel
def sin_of(y: kc.array(dtype=float), z: kc.array(dtype=float)):
    i = kc.tid()
    z[i] = kc.sin(y[i])


@kc.kernel
def vec_norm_sq(v: kc.array(dtype=kc.vec3), s: float, out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = kc.dot(v[i], v[i]) * s


@kc.kernel
def weighted_2d(x: kc.array2d(dtype=float), w: kc.array(dtype=float),
                loss: kc.array(dtype=float)):
    i, j = kc.tid()
    kc.atomic_add(loss, 0, x[i, j] * x[i, j] * w[j])


@kc.struct
class Params:
    x: kc.array(dtype=float)
    w: kc.array(dtype=float)
    scale: float


@kc.struct
class Outer:
    inner: Params
    offset: float


@kc.kernel
def struct_loss(p: Params, loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, p.x[i] * p.w[i] * p.scale)


@kc.kernel(enable_backward=False)
def no_backward(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] * 2.0


@kc.kernel
def generic_scale(x: kc.array(dtype=typing.Any), y: kc.array(dtype=typing.Any)):
    i = kc.tid()
    y[i] = x[i] * x[i]


def _square_problem(rng, n=37, device=None):
    xs = nonzero(rng, n, np.float32)
    x = kc.array(xs, requires_grad=True, device=device)
    y = poisoned(n, np.float32).to(device) if device else poisoned(n, np.float32)
    y.requires_grad = True
    loss = kc.zeros(1, requires_grad=True, device=device)
    return xs, x, y, loss


def _record_square(x, y, loss, tape):
    with tape:
        kc.launch(square_scale, x.shape[0], inputs=[x, y, C], device=x.device)
        kc.launch(sum_loss, x.shape[0], inputs=[y, loss], device=x.device)


# ---- gradients ---------------------------------------------------------------------------


def test_square_and_sum(rng):
    xs, x, y, loss = _square_problem(rng)
    tape = kc.Tape()
    _record_square(x, y, loss, tape)
    np.testing.assert_allclose(loss.numpy()[0], np.sum(xs * xs * C), rtol=1e-5)
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2 * C * xs, rtol=1e-6)
    np.testing.assert_array_equal(loss.grad.numpy(), [1.0])
    # The adjoint of the store into y consumed y's gradient (Warp's rule).
    np.testing.assert_array_equal(y.grad.numpy(), 0.0)


def test_chain_of_three_kernels(rng):
    xs, x, y, loss = _square_problem(rng)
    z = poisoned(xs.size, np.float32)
    z.requires_grad = True
    tape = kc.Tape()
    with tape:
        kc.launch(square_scale, xs.size, inputs=[x, y, C])
        kc.launch(sin_of, xs.size, inputs=[y, z])
        kc.launch(sum_loss, xs.size, inputs=[z, loss])
    tape.backward(loss)
    ys = xs * xs * C
    np.testing.assert_allclose(x.grad.numpy(), np.cos(ys) * 2 * C * xs, rtol=1e-4, atol=1e-5)


def test_retain_grad_keeps_the_intermediate_gradient(rng):
    xs, x, y, loss = _square_problem(rng)
    y.retain_grad = True
    tape = kc.Tape()
    _record_square(x, y, loss, tape)
    tape.backward(loss)
    np.testing.assert_array_equal(y.grad.numpy(), 1.0)
    np.testing.assert_allclose(x.grad.numpy(), 2 * C * xs, rtol=1e-6)


def test_vec3_arrays(rng):
    vs = nonzero(rng, 3 * 20, np.float32).reshape(20, 3)
    v = kc.array(vs, dtype=kc.vec3, requires_grad=True)
    out = poisoned(20, np.float32)
    out.requires_grad = True
    loss = kc.zeros(1, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(vec_norm_sq, 20, inputs=[v, 0.5, out])
        kc.launch(sum_loss, 20, inputs=[out, loss])
    tape.backward(loss)
    np.testing.assert_allclose(v.grad.numpy(), vs, rtol=1e-6)  # d(0.5 |v|^2)/dv = v


def test_2d_launch(rng):
    xs = nonzero(rng, 5 * 7, np.float32).reshape(5, 7)
    ws = nonzero(rng, 7, np.float32)
    x = kc.array(xs, requires_grad=True)
    w = kc.array(ws, requires_grad=True)
    loss = kc.zeros(1, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(weighted_2d, (5, 7), inputs=[x, w, loss])
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2 * xs * ws, rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), np.sum(xs * xs, axis=0), rtol=1e-5)


def test_struct_with_array_fields(rng):
    xs, ws = nonzero(rng, 16, np.float32), nonzero(rng, 16, np.float32)
    p = Params(x=kc.array(xs, requires_grad=True), w=kc.array(ws), scale=1.5)
    loss = kc.zeros(1, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(struct_loss, 16, inputs=[p, loss])
    tape.backward(loss)
    np.testing.assert_allclose(p.x.grad.numpy(), ws * 1.5, rtol=1e-6)
    assert p.w.grad is None  # no grad where none was asked for
    adj = tape.gradients[p]
    assert isinstance(adj, Params) and adj.x is p.x.grad and adj.w is None and adj.scale == 0


def test_generic_kernel_with_an_input_that_has_no_grad(rng):
    xs = nonzero(rng, 9, np.float64)
    x = kc.array(xs)  # no grad: its adjoint is a null array
    y = kc.zeros(9, dtype=kc.float64, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(generic_scale, 9, inputs=[x, y])
    y.grad.fill_(1.0)
    tape.backward()
    assert x.grad is None
    np.testing.assert_array_equal(y.numpy(), xs * xs)


# ---- the tape ----------------------------------------------------------------------------


def test_launches_are_recorded_with_their_arguments(rng):
    xs, x, y, loss = _square_problem(rng, n=4)
    tape = kc.Tape()
    with tape:
        for _ in range(2):  # the second launch takes the launcher's fast path
            kc.launch(square_scale, 4, inputs=[x, y, C])
        kc.launch(sum_loss, 4, inputs=[y, loss], record_tape=False)
        cmd = kc.launch(sum_loss, 4, inputs=[y, loss], record_cmd=True)
    assert isinstance(cmd, kc.Launch)
    assert len(tape.launches) == 2
    kernel, dim, max_blocks, inputs, outputs, device, block_dim, meta = tape.launches[0]
    assert kernel is square_scale and dim == 4 and list(inputs) == [x, y, C]
    assert device == kc.get_device("cpu") and list(outputs) == [] and meta == {}
    kc.launch(square_scale, 4, inputs=[x, y, C])  # no tape active: not recorded
    assert len(tape.launches) == 2


def test_tapes_do_not_nest():
    outer, inner = kc.Tape(), kc.Tape()
    with outer:
        with pytest.raises(RuntimeError, match="already active"):
            with inner:
                pass
    assert get_runtime().extras.get("tape") is None


def test_backward_twice_accumulates_and_zero_resets(rng):
    xs, x, y, loss = _square_problem(rng)
    tape = kc.Tape()
    _record_square(x, y, loss, tape)
    tape.backward(loss)
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 4 * C * xs, rtol=1e-6)
    tape.zero()
    for g in (x.grad, y.grad):
        np.testing.assert_array_equal(g.numpy(), 0.0)
    assert x in tape.gradients and y in tape.gradients
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2 * C * xs, rtol=1e-6)


def test_reset_forgets_launches_and_zeroes(rng):
    xs, x, y, loss = _square_problem(rng)
    tape = kc.Tape()
    _record_square(x, y, loss, tape)
    tape.record_scope_begin("step")
    tape.backward(loss)
    tape.reset()
    assert tape.launches == [] and tape.scopes == []
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)
    tape.backward(loss)  # nothing recorded: nothing changes but the loss seed
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)


def test_grads_dict_seeds_outputs(rng):
    xs = nonzero(rng, 12, np.float32)
    x = kc.array(xs, requires_grad=True)
    y = poisoned(12, np.float32)
    y.requires_grad = True
    seed = nonzero(rng, 12, np.float32)
    tape = kc.Tape()
    with tape:
        kc.launch(square_scale, 12, inputs=[x, y, C])
    tape.backward(grads={y: kc.array(seed)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * C * xs * seed, rtol=1e-6)
    # An array without a grad takes the given one as its grad.
    x2 = kc.array(xs, requires_grad=True)
    y2 = kc.zeros(12)
    tape2 = kc.Tape()
    with tape2:
        kc.launch(square_scale, 12, inputs=[x2, y2, C])
    given = kc.array(seed)
    tape2.backward(grads={y2: given})
    assert y2.grad is given
    np.testing.assert_allclose(x2.grad.numpy(), 2 * C * xs * seed, rtol=1e-6)


def test_record_func_runs_in_reverse_order(rng):
    # Forward: y = x^2 c (kernel), then u = 2 y on the host; the host step's backward
    # is a recorded function, run before the kernel's backward.
    xs, x, y, loss = _square_problem(rng)
    u = kc.zeros(xs.size, requires_grad=True)
    calls = []

    def host_backward():
        calls.append(len(calls))
        y.grad.assign(y.grad.numpy() + 2.0 * u.grad.numpy())

    tape = kc.Tape()
    with tape:
        kc.launch(square_scale, xs.size, inputs=[x, y, C])
        u.assign(2.0 * y.numpy())
        tape.record_func(host_backward, [u, y])
        kc.launch(sum_loss, xs.size, inputs=[u, loss])
    tape.backward(loss)
    assert calls == [0]
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * C * xs, rtol=1e-6)
    assert tape.gradients[u] is u.grad
    with pytest.raises(RuntimeError, match="gradient"):
        tape.record_func(host_backward, [kc.zeros(3)])


def test_get_adjoint():
    tape = kc.Tape()
    a = kc.zeros(3, requires_grad=True)
    assert tape.get_adjoint(a) is a.grad and tape.gradients[a] is a.grad
    assert tape.get_adjoint(kc.zeros(3)) is None
    assert tape.get_adjoint(2.5) == 0.0 and tape.get_adjoint(7) == 0
    np.testing.assert_array_equal(tape.get_adjoint(kc.vec3(1, 2, 3)), [0, 0, 0])
    inner = Params(x=kc.zeros(2, requires_grad=True), w=kc.zeros(2), scale=4.0)
    adj = tape.get_adjoint(Outer(inner=inner, offset=1.0))
    assert isinstance(adj, Outer) and isinstance(adj.inner, Params)
    assert adj.inner.x is inner.x.grad and adj.inner.w is None
    assert adj.inner.scale == 0 and adj.offset == 0
    inner.x.grad.fill_(5.0)
    tape.zero()
    np.testing.assert_array_equal(inner.x.grad.numpy(), 0.0)


def test_scopes_are_bookkeeping(rng):
    xs, x, y, loss = _square_problem(rng, n=4)
    tape = kc.Tape()
    tape.record_scope_begin("empty")
    tape.record_scope_end()  # nothing recorded inside: dropped
    assert tape.scopes == []
    tape.record_scope_begin("forward", {"step": 1})
    _record_square(x, y, loss, tape)
    tape.record_scope_end()
    assert tape.scopes == [(0, "forward", {"step": 1}), (2, None, None)]
    with pytest.raises(RuntimeError, match="scope"):
        tape.record_scope_end()


def test_scoped_timer_inside_a_tape(rng):
    xs, x, y, loss = _square_problem(rng)
    tape = kc.Tape()
    with kc.ScopedTimer("forward", print=False) as timer:
        _record_square(x, y, loss, tape)
    assert timer.elapsed >= 0 and len(tape.launches) == 2


# ---- copies on the tape ------------------------------------------------------------------


def test_copy_on_the_tape(rng):
    xs, x, y, loss = _square_problem(rng, n=10)
    staged = kc.zeros(16, requires_grad=True)
    staged.fill_(np.float32(9.0))  # elements the copy does not write
    tape = kc.Tape()
    with tape:
        kc.launch(square_scale, 10, inputs=[x, y, C])
        kc.copy(staged, y, dest_offset=3, src_offset=2, count=6)
        kc.launch(sum_loss, 16, inputs=[staged, loss])
    tape.backward(loss)
    want = np.zeros(10, np.float32)
    want[2:8] = 2 * C * xs[2:8]
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)
    # The copied part of the destination's gradient was consumed, the rest kept.
    np.testing.assert_array_equal(staged.grad.numpy(), [1, 1, 1, 0, 0, 0, 0, 0, 0, *[1] * 7])


def test_clone_and_assign_on_the_tape(rng):
    xs, x, y, loss = _square_problem(rng, n=8)
    tape = kc.Tape()
    with tape:
        kc.launch(square_scale, 8, inputs=[x, y, C])
        z = kc.clone(y)
        w = kc.zeros(8, requires_grad=True)
        w.assign(z)
        kc.launch(sum_loss, 8, inputs=[w, loss])
    assert len(tape.launches) == 4
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2 * C * xs, rtol=1e-6)


# ---- explicit backward launches ----------------------------------------------------------


def test_explicit_adjoint_launch_with_external_buffers(rng):
    xs = nonzero(rng, 11, np.float32)
    x = kc.array(xs, requires_grad=True)
    y = kc.zeros(11, requires_grad=True)
    adj_x, adj_y = kc.zeros(11), kc.array(nonzero(rng, 11, np.float32))
    seed = adj_y.numpy().copy()
    kc.launch(square_scale, 11, inputs=[x, y, C], adj_inputs=[adj_x, adj_y, 0.0], adjoint=True)
    np.testing.assert_allclose(adj_x.numpy(), 2 * C * xs * seed, rtol=1e-6)
    np.testing.assert_array_equal(adj_y.numpy(), seed)  # not the array's own grad: kept
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)


def test_explicit_adjoint_launch_falls_back_to_grad(rng):
    xs = nonzero(rng, 11, np.float32)
    x = kc.array(xs, requires_grad=True)
    y = kc.zeros(11, requires_grad=True)
    y.grad.fill_(2.0)
    kc.launch(square_scale, 11, inputs=[x, y, C], adjoint=True)  # adjoints: the .grads
    np.testing.assert_allclose(x.grad.numpy(), 2 * C * xs * 2.0, rtol=1e-6)
    np.testing.assert_array_equal(y.grad.numpy(), 0.0)  # its own grad: consumed


def test_adjoint_launch_checks_its_adjoints(rng):
    x = kc.zeros(4, requires_grad=True)
    y = kc.zeros(4, requires_grad=True)
    with pytest.raises(kc.KernelError, match="adj_x"):
        kc.launch(square_scale, 4, inputs=[x, y, C], adj_inputs=[kc.zeros(4, dtype=int)],
                  adjoint=True)
    with pytest.raises(kc.KernelError, match="adjoints"):
        kc.launch(square_scale, 4, inputs=[x, y, C], adj_inputs=[None] * 4, adjoint=True)


def test_recorded_adjoint_launch(rng):
    xs = nonzero(rng, 6, np.float32)
    x = kc.array(xs, requires_grad=True)
    y = kc.zeros(6, requires_grad=True)
    y.grad.fill_(1.0)
    cmd = kc.launch(square_scale, 6, inputs=[x, y, C], adjoint=True, record_cmd=True)
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)  # nothing ran yet
    cmd.launch()
    np.testing.assert_allclose(x.grad.numpy(), 2 * C * xs, rtol=1e-6)


def test_backward_activity_name(rng):
    xs, x, y, loss = _square_problem(rng, n=4)
    tape = kc.Tape()
    _record_square(x, y, loss, tape)
    kc.timing_begin(kc.TIMING_KERNEL)
    tape.backward(loss)
    names = [r.name for r in kc.timing_end()]
    assert names == ["backward kernel sum_loss", "backward kernel square_scale"]


# ---- errors ------------------------------------------------------------------------------


def test_loss_must_be_a_scalar_with_a_grad():
    tape = kc.Tape()
    with pytest.raises(RuntimeError, match="scalar loss"):
        tape.backward(kc.zeros(2, requires_grad=True))
    with pytest.raises(RuntimeError, match="scalar loss"):
        tape.backward(kc.zeros(1, dtype=kc.vec3, requires_grad=True))
    with pytest.raises(RuntimeError, match="requires_grad"):
        tape.backward(kc.zeros(1))


def test_kernel_without_backward_is_skipped_with_a_warning(rng):
    xs = nonzero(rng, 5, np.float32)
    x = kc.array(xs, requires_grad=True)
    y = kc.zeros(5, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(no_backward, 5, inputs=[x, y])
    np.testing.assert_array_equal(y.numpy(), 2 * xs)
    y.grad.fill_(1.0)
    with pytest.warns(UserWarning, match="no_backward"):
        tape.backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)
    with pytest.raises(RuntimeError, match="enable_backward=False"):
        kc.launch(no_backward, 5, inputs=[x, y], adjoint=True)


def test_module_and_config_options_turn_backward_off(rng):
    xs, x, y, loss = _square_problem(rng, n=4)
    previous = kc.get_module_options()["enable_backward"]
    kc.set_module_options({"enable_backward": False})
    try:
        with pytest.raises(RuntimeError, match="its module"):
            kc.launch(square_scale, 4, inputs=[x, y, C], adjoint=True)
    finally:
        kc.set_module_options({"enable_backward": previous})
    kc.set_module_options({"enable_backward": None})  # undecided: kc.config decides
    kc.config.enable_backward = False
    try:
        with pytest.raises(RuntimeError, match="kc.config"):
            kc.launch(square_scale, 4, inputs=[x, y, C], adjoint=True)
    finally:
        kc.config.enable_backward = True
        kc.set_module_options({"enable_backward": previous})


# ---- CUDA --------------------------------------------------------------------------------


@pytest.mark.cuda
def test_square_and_sum_on_cuda(rng):
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    xs, x, y, loss = _square_problem(rng, n=1000, device="cuda:0")
    tape = kc.Tape()
    _record_square(x, y, loss, tape)
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2 * C * xs, rtol=1e-6)
    np.testing.assert_array_equal(y.grad.numpy(), 0.0)


@pytest.mark.cuda
def test_copy_between_cpu_and_cuda_on_the_tape(rng):
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    xs = nonzero(rng, 64, np.float32)
    x = kc.array(xs, requires_grad=True)  # CPU
    y = kc.zeros(64, requires_grad=True, device="cuda:0")
    loss = kc.zeros(1, requires_grad=True, device="cuda:0")
    tape = kc.Tape()
    with tape:
        x_gpu = x.to("cuda:0")
        kc.launch(square_scale, 64, inputs=[x_gpu, y, C], device="cuda:0")
        kc.launch(sum_loss, 64, inputs=[y, loss], device="cuda:0")
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2 * C * xs, rtol=1e-6)
