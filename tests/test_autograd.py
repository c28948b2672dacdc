"""`kernelc.autograd` (Warp's `warp.autograd`): Jacobians and gradient checks.

Jacobians of small kernels are checked against analytic NumPy Jacobians, both the ones
computed with backward kernels (`jacobian`) and by finite differences (`jacobian_fd`);
`gradcheck` must pass on correct kernels and fail on a kernel whose gradient is wrong on
purpose; and `jacobians_of` runs here and in a Warp subprocess (its source is sent there),
where Warp's own `warp.autograd` must produce the same Jacobians.
"""

import inspect

import numpy as np
import pytest

import kernelc as kc
import kernelc.autograd
from tests.conftest import run_python, run_warp

AD_TOL = {"rtol": 1e-5, "atol": 1e-5}  # backward kernels: exact up to float32 rounding
FD_TOL = {"rtol": 2e-2, "atol": 2e-2}  # float32 central differences with eps = 1e-4


@kc.kernel
def sin_times(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] * kc.sin(x[i])


@kc.kernel
def two_by_two(a: kc.array(dtype=float), b: kc.array(dtype=float),
               c: kc.array(dtype=float), d: kc.array(dtype=float)):
    i = kc.tid()
    c[i] = a[i] * b[i]
    d[i] = a[i] + kc.exp(b[i])


@kc.kernel
def scale_vec(x: kc.array(dtype=kc.vec3), s: kc.array(dtype=float),
              y: kc.array(dtype=kc.vec3), n: kc.array(dtype=float)):
    i = kc.tid()
    v = x[i]
    y[i] = v * s[i]
    n[i] = kc.dot(v, v) * s[i]


@kc.kernel
def polynomial(x: kc.array(dtype=float), w: kc.array(dtype=float), y: kc.array(dtype=float)):
    # sum_j w[j] * x[i]**j with a power carried across iterations (a non-linear loop)
    i = kc.tid()
    power = float(1.0)
    total = float(0.0)
    for j in range(w.shape[0]):
        total = total + w[j] * power
        power = power * x[i]
    y[i] = total


@kc.func
def quantize(v: float):
    return float(int(v * 1000.0)) / 1000.0  # the int cast has a zero gradient


@kc.kernel
def quantized(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = quantize(x[i])


@kc.kernel
def total_of(y: kc.array(dtype=float), loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, y[i])


@kc.kernel(enable_backward=False)
def no_backward(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] * 2.0


@kc.kernel
def add_one_in_place(x: kc.array(dtype=float)):
    i = kc.tid()
    x[i] = x[i] + 1.0


def grad_array(values, dtype=float) -> kc.array:
    return kc.array(np.asarray(values, np.float32), dtype=dtype, requires_grad=True)


def scalar_jacobian(jac) -> np.ndarray:
    values = jac.numpy()
    return values.reshape(values.shape[0], -1)


# ---- Jacobians against NumPy -------------------------------------------------------------


def test_elementwise_jacobian():
    x_np = np.array([0.3, -1.2, 2.0, 0.7], np.float32)
    x, y = grad_array(x_np), kc.zeros(4, requires_grad=True)
    want = np.diag(np.sin(x_np) + x_np * np.cos(x_np))
    ad = kernelc.autograd.jacobian(sin_times, 4, inputs=[x], outputs=[y])
    fd = kernelc.autograd.jacobian_fd(sin_times, 4, inputs=[x], outputs=[y])
    assert set(ad) == set(fd) == {(0, 0)}
    assert ad[0, 0].shape == (4, 4) and ad[0, 0].dtype == kc.float32
    np.testing.assert_allclose(ad[0, 0].numpy(), want, **AD_TOL)
    np.testing.assert_allclose(fd[0, 0].numpy(), want, **FD_TOL)
    np.testing.assert_array_equal(x.numpy(), x_np)  # inputs put back after perturbing
    np.testing.assert_array_equal(y.numpy(), 0.0)  # a kernel's outputs are not written


def test_vec3_jacobians_flatten_components():
    rng = np.random.default_rng(3)
    v_np = rng.normal(size=(3, 3)).astype(np.float32)
    s_np = np.array([0.5, 2.0, -1.5], np.float32)
    x, s = grad_array(v_np, kc.vec3), grad_array(s_np)
    y, n = kc.zeros(3, dtype=kc.vec3, requires_grad=True), kc.zeros(3, requires_grad=True)
    want = {
        (0, 0): np.kron(np.diag(s_np), np.eye(3)),                      # dy/dx: (9, 9)
        (0, 1): np.zeros((3, 9)),                                         # dn/dx: (3, 9)
        (1, 0): np.zeros((9, 3)),                                         # dy/ds: (9, 3)
        (1, 1): np.diag((v_np * v_np).sum(axis=1)),                       # dn/ds: (3, 3)
    }
    for i in range(3):
        want[0, 1][i, 3 * i:3 * i + 3] = 2.0 * v_np[i] * s_np[i]
        want[1, 0][3 * i:3 * i + 3, i] = v_np[i]
    ad = kernelc.autograd.jacobian(scale_vec, 3, inputs=[x, s], outputs=[y, n])
    fd = kernelc.autograd.jacobian_fd(scale_vec, 3, inputs=[x, s], outputs=[y, n])
    assert set(ad) == set(fd) == set(want)
    # As in Warp: rows are output scalars, columns input elements of the input's dtype.
    assert ad[0, 0].shape == (9, 3) and ad[0, 0].dtype == kc.vec3
    assert fd[0, 1].numpy().shape == (3, 3, 3)
    for pair, jac in want.items():
        np.testing.assert_allclose(scalar_jacobian(ad[pair]), jac, **AD_TOL)
        np.testing.assert_allclose(scalar_jacobian(fd[pair]), jac, **FD_TOL)


def test_two_inputs_two_outputs():
    a_np, b_np = np.array([1.0, -2.0, 0.5], np.float32), np.array([0.2, 0.4, -0.3], np.float32)
    a, b = grad_array(a_np), grad_array(b_np)
    c, d = kc.zeros(3, requires_grad=True), kc.zeros(3, requires_grad=True)
    want = {(0, 0): np.diag(b_np), (1, 0): np.diag(a_np), (0, 1): np.eye(3),
            (1, 1): np.diag(np.exp(b_np))}
    ad = kernelc.autograd.jacobian(two_by_two, 3, inputs=[a, b], outputs=[c, d])
    fd = kernelc.autograd.jacobian_fd(two_by_two, 3, inputs=[a, b], outputs=[c, d])
    assert list(ad) == [(0, 0), (0, 1), (1, 0), (1, 1)]  # Warp's order: inputs outermost
    for pair, jac in want.items():
        np.testing.assert_allclose(ad[pair].numpy(), jac, **AD_TOL)
        np.testing.assert_allclose(fd[pair].numpy(), jac, **FD_TOL)


def test_loop_kernel_jacobian():
    x_np = np.array([0.5, -0.8, 1.1], np.float32)
    w_np = np.array([0.3, -1.0, 0.7, 0.25], np.float32)
    x, w, y = grad_array(x_np), grad_array(w_np), kc.zeros(3, requires_grad=True)
    powers = x_np[:, None] ** np.arange(4)
    dx = (w_np[1:] * np.arange(1, 4) * x_np[:, None] ** np.arange(3)).sum(axis=1)
    ad = kernelc.autograd.jacobian(polynomial, 3, inputs=[x, w], outputs=[y])
    fd = kernelc.autograd.jacobian_fd(polynomial, 3, inputs=[x, w], outputs=[y])
    np.testing.assert_allclose(ad[0, 0].numpy(), np.diag(dx), **AD_TOL)
    np.testing.assert_allclose(ad[1, 0].numpy(), powers, **AD_TOL)
    np.testing.assert_allclose(fd[0, 0].numpy(), np.diag(dx), **FD_TOL)
    np.testing.assert_allclose(fd[1, 0].numpy(), powers, **FD_TOL)


def test_float64_finite_differences_are_accurate():
    x_np = np.array([0.3, -1.2, 2.0])
    x = kc.array(x_np, dtype=kc.float64, requires_grad=True)
    y = kc.zeros(3, dtype=kc.float64, requires_grad=True)

    @kc.kernel
    def sin_times64(x: kc.array(dtype=kc.float64), y: kc.array(dtype=kc.float64)):
        i = kc.tid()
        y[i] = x[i] * kc.sin(x[i])

    fd = kernelc.autograd.jacobian_fd(sin_times64, 3, inputs=[x], outputs=[y], eps=1e-6)
    assert fd[0, 0].dtype == kc.float64
    np.testing.assert_allclose(fd[0, 0].numpy(), np.diag(np.sin(x_np) + x_np * np.cos(x_np)),
                               rtol=1e-8, atol=1e-8)


@kc.kernel
def determinants(m: kc.array(dtype=kc.mat22), d: kc.array(dtype=float)):
    i = kc.tid()
    d[i] = kc.determinant(m[i])


@kc.kernel
def product_with_transpose(x: kc.array2d(dtype=float), y: kc.array2d(dtype=float)):
    i, j = kc.tid()
    y[i, j] = x[i, j] * x[j, i]


def test_matrix_and_2d_arrays():
    m_np = np.array([[[1.0, 2.0], [3.0, 4.0]], [[0.5, -1.0], [2.0, 1.5]]], np.float32)
    m, d = grad_array(m_np, kc.mat22), kc.zeros(2, requires_grad=True)
    jac = kernelc.autograd.jacobian(determinants, 2, inputs=[m], outputs=[d])[0, 0]
    assert jac.dtype == kc.mat22 and jac.numpy().shape == (2, 2, 2, 2)
    for i, (a, b, c, e) in enumerate(m_np.reshape(2, 4)):
        want = np.zeros((2, 2, 2))
        want[i] = [[e, -c], [-b, a]]  # the cofactors
        np.testing.assert_allclose(jac.numpy()[i], want, **AD_TOL)
    assert kernelc.autograd.gradcheck(determinants, 2, [m], [d], show_summary=False)
    x = grad_array(np.arange(9).reshape(3, 3) * 0.3 + 0.2)
    y = kc.zeros((3, 3), requires_grad=True)
    assert kernelc.autograd.gradcheck(product_with_transpose, (3, 3), [x], [y],
                                      show_summary=False)


def test_mask_selects_pairs_by_name_or_index():
    a, b = grad_array([1.0, 2.0]), grad_array([3.0, 4.0])
    c, d = kc.zeros(2, requires_grad=True), kc.zeros(2, requires_grad=True)
    args = dict(inputs=[a, b], outputs=[c, d])
    by_name = kernelc.autograd.jacobian(two_by_two, 2, input_output_mask=[("b", "d")], **args)
    by_index = kernelc.autograd.jacobian_fd(two_by_two, 2, input_output_mask=[(1, 1), (0, 0)],
                                            **args)
    assert list(by_name) == [(1, 1)] and list(by_index) == [(0, 0), (1, 1)]
    with pytest.raises(ValueError, match="'e'"):
        kernelc.autograd.jacobian(two_by_two, 2, input_output_mask=[("a", "e")], **args)


def test_arrays_without_grad_are_left_out():
    a, b = grad_array([1.0, 2.0]), kc.array(np.array([3.0, 4.0], np.float32))
    c, d = kc.zeros(2, requires_grad=True), kc.zeros(2)
    jac = kernelc.autograd.jacobian(two_by_two, 2, inputs=[a, b], outputs=[c, d])
    assert list(jac) == [(0, 0)]


def test_max_per_var_limits_leave_nan():
    x_np = np.array([0.3, -1.2, 2.0, 0.7], np.float32)
    x, y = grad_array(x_np), kc.zeros(4, requires_grad=True)
    ad = kernelc.autograd.jacobian(sin_times, 4, inputs=[x], outputs=[y], max_outputs_per_var=2)
    fd = kernelc.autograd.jacobian_fd(sin_times, 4, inputs=[x], outputs=[y],
                                      max_inputs_per_var=3)
    assert np.isnan(ad[0, 0].numpy()[2:]).all() and not np.isnan(ad[0, 0].numpy()[:2]).any()
    assert np.isnan(fd[0, 0].numpy()[:, 3:]).all() and not np.isnan(fd[0, 0].numpy()[:, :3]).any()
    assert kernelc.autograd.gradcheck(sin_times, 4, [x], [y], max_inputs_per_var=1,
                                      max_outputs_per_var=2, show_summary=False)


def test_vec3_max_inputs_counts_scalars():
    x = grad_array(np.arange(6).reshape(2, 3) * 0.25 + 0.5, kc.vec3)
    s = grad_array([1.5, -0.5])
    y, n = kc.zeros(2, dtype=kc.vec3, requires_grad=True), kc.zeros(2, requires_grad=True)
    assert kernelc.autograd.gradcheck(scale_vec, 2, [x, s], [y, n], max_inputs_per_var=2,
                                      show_summary=False)


# ---- gradcheck ---------------------------------------------------------------------------


def test_gradcheck_passes_and_prints_a_summary(capsys):
    x, y = grad_array([0.3, -1.2, 2.0]), kc.zeros(3, requires_grad=True)
    assert kc.autograd.gradcheck(sin_times, 3, [x], [y]) is True
    lines = capsys.readouterr().out.splitlines()
    assert [cell.strip() for cell in lines[0].split("|")][:7] == [
        "Input", "Output", "Max Abs Error", "AD at MAE", "FD at MAE", "Max Rel Error", "Pass"]
    assert lines[2].split("|")[0].strip() == "x" and "PASS" in lines[2]
    assert lines[-1] == f"Gradient check for kernel {sin_times.key} passed"


def test_gradcheck_fails_on_a_wrong_gradient(capsys):
    # int() has a zero gradient, but the quantized values move under a perturbation of
    # 1e-4 (each x * 1000 is an integer, so x - eps falls below it).
    x, y = grad_array([0.5, 1.0, 2.0]), kc.zeros(3, requires_grad=True)
    ad = kernelc.autograd.jacobian(quantized, 3, inputs=[x], outputs=[y])
    fd = kernelc.autograd.jacobian_fd(quantized, 3, inputs=[x], outputs=[y])
    np.testing.assert_array_equal(ad[0, 0].numpy(), 0.0)
    np.testing.assert_allclose(np.diag(fd[0, 0].numpy()), 5.0, rtol=1e-3)
    capsys.readouterr()
    assert kernelc.autograd.gradcheck(quantized, 3, [x], [y], raise_exception=False) is False
    out = capsys.readouterr().out
    assert "FAIL" in out and f"Gradient check for kernel {quantized.key} failed" in out
    with pytest.raises(ValueError, match="do not match"):
        kernelc.autograd.gradcheck(quantized, 3, [x], [y], show_summary=False)


def test_gradcheck_of_a_python_function():
    x_np = np.array([1.0, 2.0, 3.0], np.float32)
    x = grad_array(x_np)

    def loss_of(x):
        y = kc.zeros(3, requires_grad=True)
        loss = kc.zeros(1, requires_grad=True)
        kc.launch(sin_times, 3, inputs=[x, y])
        kc.launch(total_of, 3, inputs=[y, loss])
        return loss

    ad = kernelc.autograd.jacobian(loss_of, inputs=[x])
    np.testing.assert_allclose(ad[0, 0].numpy(), [np.sin(x_np) + x_np * np.cos(x_np)],
                               **AD_TOL)
    meta = kernelc.autograd.FunctionMetadata()
    fd = kernelc.autograd.jacobian_fd(loss_of, inputs=[x], metadata=meta)
    assert meta.key == "loss_of" and meta.input_labels == ["x"]
    assert meta.output_labels == ["output_0"]
    np.testing.assert_allclose(fd[0, 0].numpy(), ad[0, 0].numpy(), **FD_TOL)
    assert kernelc.autograd.gradcheck(loss_of, inputs=[x], show_summary=False)


def test_function_inputs_are_restored():
    x_np = np.array([1.0, 2.0, 3.0], np.float32)
    x = grad_array(x_np)

    def square_then_bump(x):
        y = kc.zeros(3, requires_grad=True)
        kc.launch(sin_times, 3, inputs=[x, y])
        kc.launch(add_one_in_place, 3, inputs=[x])  # changes its input after using it
        return y

    fd = kernelc.autograd.jacobian_fd(square_then_bump, inputs=[x])
    np.testing.assert_array_equal(x.numpy(), x_np)
    np.testing.assert_allclose(fd[0, 0].numpy(), np.diag(np.sin(x_np) + x_np * np.cos(x_np)),
                               **FD_TOL)
    kernelc.autograd.jacobian(square_then_bump, inputs=[x])
    np.testing.assert_array_equal(x.numpy(), x_np)


def test_gradcheck_tape_checks_each_launch(capsys):
    x = grad_array([0.5, 1.0, 2.0])
    y, z = kc.zeros(3, requires_grad=True), kc.zeros(3, requires_grad=True)
    loss = kc.zeros(1, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(sin_times, 3, inputs=[x], outputs=[y])
        kc.launch(quantized, 3, inputs=[x], outputs=[z])  # x * 1000 are integers
        kc.launch(total_of, 3, inputs=[y], outputs=[loss])
    check = kernelc.autograd.gradcheck_tape
    assert check(tape, raise_exception=False, show_summary=False) is False
    assert check(tape, blacklist_kernels=["quantized"], show_summary=False)
    assert check(tape, whitelist_kernels=[sin_times.key, "total_of"], show_summary=False)
    assert check(tape, skip_to_launch_index=2, show_summary=False)
    # Reversed, the order is total_of, quantized, sin_times.
    assert check(tape, reverse_launches=True, skip_to_launch_index=2, show_summary=False)
    assert not check(tape, reverse_launches=True, skip_to_launch_index=1,
                     raise_exception=False, show_summary=False)
    # A mask that leaves out every differentiable pair of the broken kernel hides it.
    assert check(tape, input_output_masks={"quantized": [(0, 5)]}, show_summary=False)
    capsys.readouterr()
    check(tape, raise_exception=False)
    assert capsys.readouterr().out.count("Gradient check for kernel") == 3


def test_kernels_without_backward():
    x, y = grad_array([1.0, 2.0]), kc.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="backward"):
        kernelc.autograd.jacobian(no_backward, 2, inputs=[x], outputs=[y])
    tape = kc.Tape()
    with tape:
        kc.launch(no_backward, 2, inputs=[x], outputs=[y])
    assert kernelc.autograd.gradcheck_tape(tape, show_summary=False)  # skipped, as in Warp


def test_argument_errors():
    x, y = grad_array([1.0, 2.0]), kc.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="inputs"):
        kernelc.autograd.gradcheck(sin_times, 2)
    with pytest.raises(ValueError, match="output"):
        kernelc.autograd.jacobian(sin_times, 2, inputs=[x])
    base = grad_array(np.arange(8) * 0.1)
    with pytest.raises(ValueError, match="contiguous"):
        kernelc.autograd.jacobian_fd(sin_times, 4, inputs=[base[::2]], outputs=[kc.zeros(
            4, requires_grad=True)])
    assert y.numpy().tolist() == [0.0, 0.0]


def test_reached_as_an_attribute_of_kernelc():
    proc = run_python("""
        import kernelc as wp
        from kernelc import autograd as imported
        assert wp.autograd is imported
        assert callable(wp.autograd.gradcheck) and callable(wp.autograd.jacobian_fd)
        import kernelc.autograd
        assert kernelc.autograd.jacobian is wp.autograd.jacobian
        print("ok")
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_jacobian_plot_draws_one_image_per_pair():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    a, b = grad_array([1.0, 2.0]), grad_array([3.0, 4.0])
    c, d = kc.zeros(2, requires_grad=True), kc.zeros(2, requires_grad=True)
    jac = kernelc.autograd.jacobian(two_by_two, 2, inputs=[a, b], outputs=[c, d],
                                    input_output_mask=[(0, 0), (1, 1), (0, 1)])
    fig = kernelc.autograd.jacobian_plot(jac, two_by_two, inputs=[a, b], show_plot=False)
    images = [ax for ax in fig.axes if ax.images]
    assert len(images) == 3
    assert fig._suptitle.get_text() == f"{two_by_two.key} kernel Jacobian"
    assert {ax.get_xlabel() for ax in images} <= {"a", "b", ""}
    with pytest.raises(ValueError, match="inputs"):
        kernelc.autograd.jacobian_plot(jac, two_by_two)


@pytest.mark.cuda
def test_gradcheck_on_gpu():
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    x = kc.array(np.array([0.3, -1.2, 2.0], np.float32), device="cuda:0", requires_grad=True)
    y = kc.zeros(3, device="cuda:0", requires_grad=True)
    jac = kernelc.autograd.jacobian(sin_times, 3, inputs=[x], outputs=[y])
    assert jac[0, 0].device == x.device
    assert kernelc.autograd.gradcheck(sin_times, 3, [x], [y], show_summary=False)
    v = kc.array(np.ones((2, 3), np.float32), dtype=kc.vec3, device="cuda:0", requires_grad=True)
    s = kc.array(np.array([2.0, 3.0], np.float32), device="cuda:0", requires_grad=True)
    out = [kc.zeros(2, dtype=kc.vec3, device="cuda:0", requires_grad=True),
           kc.zeros(2, device="cuda:0", requires_grad=True)]
    assert kernelc.autograd.gradcheck(scale_vec, 2, [v, s], out, show_summary=False)


# ---- Warp's own warp.autograd on the same kernel -----------------------------------------


def jacobians_of(wp, autograd, inputs: dict) -> dict:
    """Both Jacobians of a vec3 kernel with a loop, two inputs and two outputs.

    This function's source also runs in the Warp subprocess: it uses only its arguments.
    """
    @wp.kernel
    def mixed(x: wp.array(dtype=wp.vec3), w: wp.array(dtype=float),
              y: wp.array(dtype=float), z: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        v = x[i]
        acc = float(0.0)
        for j in range(3):
            acc = acc + w[j] * wp.sin(v[j])
        y[i] = acc * wp.length(v)
        z[i] = v * w[i] + wp.cross(v, wp.vec3(1.0, 2.0, 3.0))

    x = wp.array(inputs["x"], dtype=wp.vec3, requires_grad=True)
    w = wp.array(inputs["w"], dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    z = wp.zeros(3, dtype=wp.vec3, requires_grad=True)
    args = dict(inputs=[x, w], outputs=[y, z])
    out = {}
    for (i, o), jac in autograd.jacobian(mixed, 3, **args).items():
        out[f"ad_{i}_{o}"] = jac.numpy()
    for (i, o), jac in autograd.jacobian_fd(mixed, 3, **args).items():
        out[f"fd_{i}_{o}"] = jac.numpy()
    masked = autograd.jacobian(mixed, 3, input_output_mask=[("w", "z")], max_outputs_per_var=4,
                               **args)
    out["masked_keys"] = np.array(sorted(masked))
    out["masked"] = masked[1, 1].numpy()
    out["x_after"] = x.numpy()
    return out


_WARP_DRIVER = inspect.getsource(jacobians_of) + """
import warp.autograd

results.update(jacobians_of(wp, warp.autograd, inputs))
"""


def _mixed_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {"x": rng.normal(size=(3, 3)).astype(np.float32),
            "w": rng.normal(size=3).astype(np.float32)}


def test_matches_warp_autograd(tmp_path):
    inputs = _mixed_inputs()
    want = run_warp(_WARP_DRIVER, tmp_path, **inputs)
    have = jacobians_of(kc, kernelc.autograd, inputs)
    assert set(have) == set(want)
    for key, value in want.items():
        assert have[key].shape == value.shape, key
        if key.startswith("fd_"):  # both are float32 differences of float32 evaluations
            np.testing.assert_allclose(have[key], value, rtol=1e-2, atol=2e-3, err_msg=key)
        else:
            np.testing.assert_allclose(have[key], value, rtol=1e-5, atol=1e-6, err_msg=key)
