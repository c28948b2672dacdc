"""`kernelc.optim` (SGD, Adam) compared with Warp's `warp.optim`, NumPy and a real fit.

`run_optimisers` steps each optimiser configuration over the same random parameters and
gradients (float32, vec3, quat and float16 arrays, gradients spread over nine decades),
with a `reset_internal_state()` and a `set_params()` on the way. It runs in a Warp
subprocess (its source is sent there) and here with kernelc; every intermediate parameter
array and the final optimiser state must agree. The update kernels perform Warp's
operations in Warp's order, so the results agree bit for bit.
"""

from __future__ import annotations

import inspect
import typing

import numpy as np
import pytest

import kernelc as kc
import kernelc.optim
from tests.conftest import run_python, run_warp

STEPS = 6


def run_optimisers(wp, optim, inputs: dict, device: str = "cpu") -> dict:
    """Steps every configuration; returns the parameters after each step and the state.

    This function's source also runs in the Warp subprocess: it uses only its arguments.
    """
    configs = [
        ("sgd", "SGD", {"lr": 0.05}, ("f32", "v3", "quat")),
        ("sgd_momentum", "SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.25,
                                 "weight_decay": 0.01}, ("f32", "v3", "quat")),
        ("sgd_nesterov", "SGD", {"lr": 0.02, "momentum": 0.8, "nesterov": True,
                                 "weight_decay": 0.1}, ("f32", "v3")),
        ("adam", "Adam", {}, ("f32", "v3", "f16")),
        ("adam_custom", "Adam", {"lr": 0.01, "betas": (0.8, 0.95), "eps": 1e-6},
         ("f32", "v3", "f16")),
    ]
    dtypes = {"f32": wp.float32, "v3": wp.vec3, "quat": wp.quat, "f16": wp.float16}
    out = {}
    for name, cls_name, kwargs, tags in configs:
        for tag in tags:
            dtype = dtypes[tag]
            param = wp.array(inputs[f"{tag}_p"], dtype=dtype, device=device)
            opt = getattr(optim, cls_name)([param], **kwargs)
            for step in range(STEPS):
                grad = wp.array(inputs[f"{tag}_g"][step], dtype=dtype, device=device)
                opt.step([grad])
                out[f"{name}/{tag}/{step}"] = param.numpy().copy()
                if step == 2:
                    opt.reset_internal_state()
                if step == 3:
                    opt.set_params([param])  # same shape and dtype: the state is kept
            state = {"b": getattr(opt, "b", [])[:1], "m": getattr(opt, "m", [])[:1],
                     "v": getattr(opt, "v", [])[:1]}
            for key, buffers in state.items():
                for buffer in buffers:
                    out[f"{name}/{tag}/{key}"] = buffer.numpy().copy()
            out[f"{name}/{tag}/t"] = np.array(opt.t)
    return out


def make_inputs(seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {"f32": (40,), "v3": (24, 3), "quat": (8, 4), "f16": (40,)}
    inputs = {}
    for tag, shape in shapes.items():
        np_dtype = np.float16 if tag == "f16" else np.float32
        scale = 10.0 ** rng.integers(-6, 3, size=(STEPS, *shape))
        grads = rng.normal(size=(STEPS, *shape)) * scale
        grads[:, 0] = 0.0  # a zero gradient: Adam's eps keeps the update finite
        inputs[f"{tag}_p"] = rng.normal(size=shape).astype(np_dtype)
        inputs[f"{tag}_g"] = grads.astype(np_dtype)
    return inputs


_WARP_DRIVER = inspect.getsource(run_optimisers) + f"""
import warp.optim

STEPS = {STEPS}
results.update(run_optimisers(wp, warp.optim, inputs))
"""


@pytest.fixture(scope="module")
def warp_results(tmp_path_factory) -> dict[str, np.ndarray]:
    return run_warp(_WARP_DRIVER, tmp_path_factory.mktemp("warp_optim"), **make_inputs())


def test_matches_warp_bit_for_bit(warp_results):
    have = run_optimisers(kc, kernelc.optim, make_inputs())
    assert set(have) == set(warp_results)
    for key, want in warp_results.items():
        assert np.all(np.isfinite(want)), key
        np.testing.assert_array_equal(have[key], want, err_msg=key)
    assert not np.array_equal(have["adam/v3/5"], make_inputs()["v3_p"])


# ---- NumPy references ---------------------------------------------------------------------


def adam_reference(p, grads, lr=0.001, betas=(0.9, 0.999), eps=1e-8):
    """Adam in float64, from the formula (Kingma and Ba, algorithm 1)."""
    p, m, v = p.astype(np.float64), np.zeros(p.shape), np.zeros(p.shape)
    history = []
    for t, g in enumerate(grads.astype(np.float64)):
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        mhat, vhat = m / (1 - betas[0] ** (t + 1)), v / (1 - betas[1] ** (t + 1))
        p = p - lr * mhat / (np.sqrt(vhat) + eps)
        history.append(p)
    return history


def sgd_reference(p, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                  nesterov=False):
    p, b = p.astype(np.float64), np.zeros(p.shape)
    history = []
    for t, g in enumerate(grads.astype(np.float64)):
        g = g + weight_decay * p
        if momentum:
            b = g if t == 0 else momentum * b + (1 - dampening) * g
            g = g + momentum * b if nesterov else b
        p = p - lr * g
        history.append(p)
    return history


# (kernelc dtype, NumPy element shape, NumPy dtype, rtol)
DTYPES = [(kc.float32, (), np.float32, 2e-5), (kc.vec3, (3,), np.float32, 2e-5),
          (kc.vec2d, (2,), np.float64, 1e-12), (kc.float64, (), np.float64, 1e-12),
          (kc.types.vector(5, kc.float32), (5,), np.float32, 2e-5)]


@pytest.mark.parametrize("dtype,inner,np_dtype,rtol", DTYPES, ids=lambda x: str(x))
@pytest.mark.parametrize("kwargs", [{}, {"lr": 0.05, "betas": (0.5, 0.9), "eps": 1e-4}])
def test_adam_matches_numpy_formula(dtype, inner, np_dtype, rtol, kwargs, rng):
    p0 = rng.normal(size=(33, *inner)).astype(np_dtype)
    grads = (rng.normal(size=(5, 33, *inner)) * 10.0 ** rng.integers(-3, 3, (5, 33, *inner)))
    grads = grads.astype(np_dtype)
    param = kc.array(p0, dtype=dtype)
    opt = kc.optim.Adam([param], **kwargs)
    for step, want in enumerate(adam_reference(p0, grads, **kwargs)):
        opt.step([kc.array(grads[step], dtype=dtype)])
        have = param.numpy()
        assert have.dtype == np_dtype
        np.testing.assert_allclose(have, want, rtol=rtol, atol=rtol, err_msg=f"step {step}")
    assert opt.t == 5 and opt.m[0].dtype == dtype and opt.v[0].dtype == dtype


def test_adam_float16_keeps_float32_moments(rng):
    p0 = rng.normal(size=16).astype(np.float16)
    grads = rng.normal(size=(3, 16)).astype(np.float16)
    param = kc.array(p0, dtype=kc.float16)
    opt = kc.optim.Adam([param], lr=0.01)
    assert opt.m[0].dtype == kc.float32 and opt.v[0].dtype == kc.float32
    for g in grads:
        opt.step([kc.array(g, dtype=kc.float16)])
    want = adam_reference(p0, grads, lr=0.01)[-1]
    np.testing.assert_allclose(param.numpy().astype(np.float64), want, atol=4e-3)


SGD_KWARGS = [{"lr": 0.1}, {"lr": 0.1, "momentum": 0.9},
              {"lr": 0.05, "momentum": 0.5, "dampening": 0.5, "weight_decay": 0.1},
              {"lr": 0.05, "momentum": 0.9, "nesterov": True}]


@pytest.mark.parametrize("dtype,inner,np_dtype,rtol", DTYPES + [
    (kc.mat22, (2, 2), np.float32, 2e-5), (kc.quatd, (4,), np.float64, 1e-12)],
    ids=lambda x: str(x))
@pytest.mark.parametrize("kwargs", SGD_KWARGS)
def test_sgd_matches_numpy_formula(dtype, inner, np_dtype, rtol, kwargs, rng):
    p0 = rng.normal(size=(21, *inner)).astype(np_dtype)
    grads = rng.normal(size=(4, 21, *inner)).astype(np_dtype)
    param = kc.array(p0, dtype=dtype)
    opt = kc.optim.SGD([param], **kwargs)
    for step, want in enumerate(sgd_reference(p0, grads, **kwargs)):
        opt.step([kc.array(grads[step], dtype=dtype)])
        np.testing.assert_allclose(param.numpy(), want, rtol=rtol, atol=rtol,
                                   err_msg=f"step {step}")


def test_multidimensional_parameters_update_like_flat_ones(rng):
    """Warp's kernels take 1-d arrays; kernelc also updates contiguous 2-d parameters."""
    p0 = rng.normal(size=(6, 5)).astype(np.float32)
    grads = rng.normal(size=(3, 6, 5)).astype(np.float32)
    for cls in (kc.optim.Adam, kc.optim.SGD):
        grid, flat = kc.array(p0), kc.array(p0.reshape(-1))
        opt_grid, opt_flat = cls([grid], lr=0.1), cls([flat], lr=0.1)
        for g in grads:
            opt_grid.step([kc.array(g)])
            opt_flat.step([kc.array(g.reshape(-1))])
        np.testing.assert_array_equal(grid.numpy().reshape(-1), flat.numpy())
    strided = kc.array(p0)[:, 1:3]
    with pytest.raises(ValueError, match="contiguous"):
        kc.optim.SGD([strided]).step([kc.zeros((6, 2))])


# ---- optimisation with a tape --------------------------------------------------------------


@kc.kernel
def _fit_loss(points: kc.array(dtype=kc.vec3), centre: kc.array(dtype=kc.vec3),
              scale: kc.array(dtype=float), targets: kc.array(dtype=kc.vec3),
              loss: kc.array(dtype=float)):
    i = kc.tid()
    d = scale[0] * points[i] + centre[0] - targets[i]
    kc.atomic_add(loss, 0, kc.dot(d, d))


@pytest.mark.parametrize("cls,kwargs,iterations", [
    (kernelc.optim.Adam, {"lr": 0.05}, 300),
    (kernelc.optim.SGD, {"lr": 0.002, "momentum": 0.9}, 200)])
def test_tape_optimisation_converges(cls, kwargs, iterations, rng):
    points = rng.normal(size=(64, 3)).astype(np.float32)
    true_centre, true_scale = np.array([0.5, -1.0, 2.0], np.float32), 1.5
    targets = kc.array(true_scale * points + true_centre, dtype=kc.vec3)
    points = kc.array(points, dtype=kc.vec3)
    centre = kc.zeros(1, dtype=kc.vec3, requires_grad=True)
    scale = kc.ones(1, dtype=float, requires_grad=True)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    opt = cls([centre, scale], **kwargs)
    tape = kc.Tape()
    first = None
    for _ in range(iterations):
        loss.zero_()
        with tape:
            kc.launch(_fit_loss, 64, inputs=[points, centre, scale, targets, loss])
        tape.backward(loss)
        first = float(loss.numpy()[0]) if first is None else first
        opt.step([centre.grad, scale.grad])
        tape.zero()
        tape.reset()
    assert first > 100.0
    assert float(loss.numpy()[0]) < 1e-3 * first
    np.testing.assert_allclose(centre.numpy()[0], true_centre, atol=5e-3)
    np.testing.assert_allclose(scale.numpy()[0], true_scale, atol=5e-3)


# ---- API ------------------------------------------------------------------------------------


def test_defaults_and_attributes_are_warps():
    adam = kc.optim.Adam()
    assert (adam.params, adam.m, adam.v, adam.t) == (None, [], [], 0)
    assert (adam.lr, adam.beta1, adam.beta2, adam.eps) == (0.001, 0.9, 0.999, 1e-08)
    sgd = kc.optim.SGD()
    assert (sgd.params, sgd.b, sgd.t, sgd.lr, sgd.momentum, sgd.dampening,
            sgd.weight_decay, sgd.nesterov) == (None, [], 0, 0.001, 0.0, 0.0, 0.0, False)
    assert list(inspect.signature(kc.optim.Adam).parameters) == ["params", "lr", "betas", "eps"]
    assert list(inspect.signature(kc.optim.SGD).parameters) == [
        "params", "lr", "momentum", "dampening", "weight_decay", "nesterov"]
    assert list(inspect.signature(kc.optim.Adam.step_detail).parameters) == [
        "g", "m", "v", "lr", "beta1", "beta2", "t", "eps", "params"]
    assert list(inspect.signature(kc.optim.SGD.step_detail).parameters) == [
        "g", "b", "lr", "momentum", "dampening", "weight_decay", "nesterov", "t", "params"]


def test_step_detail_updates_one_array():
    p, g = kc.ones(4), kc.full(4, 2.0)
    m, v = kc.zeros(4), kc.zeros(4)
    kc.optim.Adam.step_detail(g, m, v, 0.5, 0.9, 0.999, 0, 1e-8, p)
    np.testing.assert_allclose(p.numpy(), 0.5, rtol=1e-6)
    np.testing.assert_allclose(m.numpy(), 0.2, rtol=1e-6)
    b = kc.zeros(4)
    kc.optim.SGD.step_detail(g, b, 0.25, 0.0, 0.0, 0.0, False, 0, p)
    np.testing.assert_allclose(p.numpy(), 0.0, atol=1e-6)


def test_set_params_keeps_fitting_state_and_replaces_the_rest():
    p = kc.ones(4)
    opt = kc.optim.Adam([p], lr=0.1)
    opt.step([kc.ones(4)])
    m = opt.m[0]
    opt.set_params(None)
    assert opt.params is None and opt.m[0] is m
    with pytest.raises(RuntimeError, match="must be set before calling step"):
        opt.step([kc.ones(4)])
    opt.set_params([p])
    assert opt.m[0] is m and float(m.numpy()[0]) != 0.0
    opt.set_params([kc.ones(6)])
    assert opt.m[0].shape == (6,) and not np.any(opt.m[0].numpy())
    opt.set_params([kc.ones(6), kc.ones(2, dtype=kc.vec3)])
    assert opt.v[1].dtype == kc.vec3 and opt.v[1].shape == (2,)
    opt.reset_internal_state()
    assert opt.t == 0


def test_errors():
    p = kc.ones(4)
    with pytest.raises(TypeError, match="gradient dtype must match"):
        kc.optim.Adam([p]).step([kc.ones(4, dtype=kc.float64)])
    with pytest.raises(ValueError, match="gradient shape must match"):
        kc.optim.SGD([p]).step([kc.ones(5)])
    with pytest.raises(ValueError, match="one gradient per parameter"):
        kc.optim.SGD([p]).step([])
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        kc.optim.Adam([kc.ones(4, dtype=kc.int32)])
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        kc.optim.Adam([kc.ones(4, dtype=kc.quat)])
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        kc.optim.SGD([kc.ones(4, dtype=kc.vec3i)])
    with pytest.raises(TypeError, match="list of kc.array"):
        kc.optim.SGD(p)
    with pytest.raises(TypeError, match="momentum buffer dtype"):
        kc.optim.SGD.step_detail(p, kc.zeros(4, dtype=kc.float64), 0.1, 0.0, 0.0, 0.0,
                                 False, 0, p)
    assert p.numpy().tolist() == [1.0] * 4  # nothing ran


def test_import_forms():
    from kernelc.optim import SGD, Adam

    assert kc.optim.Adam is Adam and kc.optim.SGD is SGD
    assert kernelc.optim.__all__ == ["Adam", "SGD"]
    # `wp.optim` after a bare `import kernelc as wp` (the lazy attribute), in a fresh process
    proc = run_python("""
        import kernelc as wp
        opt = wp.optim.Adam([wp.ones(3)], lr=0.5)
        opt.step([wp.ones(3)])
        print(wp.optim.SGD.__name__, opt.params[0].numpy().tolist())
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["SGD", "[0.5,", "0.5,", "0.5]"]


def test_kernels_are_generic():
    from kernelc.optim import adam, sgd

    for kernel in (adam.adam_step_kernel_scalar, adam.adam_step_kernel_vector,
                   sgd.sgd_step_kernel):
        annotations = inspect.get_annotations(kernel.func, eval_str=True)
        assert annotations["lr"] is typing.Any


@pytest.mark.parametrize("kernel,dtype,scalar", [
    ("adam_step_kernel_scalar", kc.float32, kc.float32),
    ("adam_step_kernel_vector", kc.vec3, kc.float32),
    ("adam_step_kernel_vector", kc.vec4d, kc.float64),
    ("adam_step_kernel_half", None, None),
    ("sgd_step_kernel", kc.quat, kc.float32),
    ("sgd_step_kernel", kc.float16, kc.float16)])
def test_kernels_compile_for_cuda_without_a_gpu(kernel, dtype, scalar):
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs the NVRTC bindings")
    from kernelc.optim import adam, sgd

    arr = kc.array(dtype=dtype) if dtype is not None else None
    if kernel == "sgd_step_kernel":
        types = [arr, arr, scalar, scalar, scalar, scalar, int, int, arr]
    else:  # the float16 kernel is not generic
        types = None if arr is None else [arr] * 3 + [scalar] * 5 + [arr]
    target = getattr(sgd if kernel.startswith("sgd") else adam, kernel)
    compiled = kc.compile(target, target="cuda", arch=90, arg_types=types)
    assert compiled.format == "cubin" and compiled.binary


@pytest.mark.cuda
def test_on_gpu_matches_cpu():
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    inputs = make_inputs(3)
    want = run_optimisers(kc, kernelc.optim, inputs)
    have = run_optimisers(kc, kernelc.optim, inputs, device="cuda:0")
    assert set(have) == set(want)
    for key, expected in want.items():
        np.testing.assert_allclose(have[key].astype(np.float64), expected, rtol=1e-5,
                                   atol=1e-5 * float(np.max(np.abs(expected), initial=1.0)),
                                   err_msg=key)
