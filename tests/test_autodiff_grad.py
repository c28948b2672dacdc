"""`kc.grad(f)(args)`: a func's gradient inside a kernel, against finite differences and
against Warp on its particle-repulsion example."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernelc as kc
from kernelc.errors import KernelError

f64 = kc.float64


@kc.func
def potential(d: kc.vec3d):
    r = kc.length(d)
    return kc.exp(-r * r) / (r + f64(0.5))


@kc.func
def two(x: f64, y: f64):
    return kc.sin(x) * y * y


@kc.func
def scaled(x: f64, k: int):
    return x * x * f64(k)


@kc.kernel
def grads_kernel(x: kc.array(dtype=kc.vec3d), f: kc.array(dtype=kc.vec3d),
                 g: kc.array(dtype=f64, ndim=2)):
    i = kc.tid()
    f[i] = -kc.grad(potential)(x[i])
    gx, gy = kc.grad(two)(x[i][0], x[i][1])
    sx, sk = kc.grad(scaled)(x[i][2], 3)
    g[i, 0] = gx
    g[i, 1] = gy
    g[i, 2] = sx
    g[i, 3] = f64(sk)


@kc.kernel
def loss_of_forces(x: kc.array(dtype=kc.vec3d), loss: kc.array(dtype=f64)):
    i = kc.tid()
    fi = kc.grad(potential)(x[i])
    kc.atomic_add(loss, 0, kc.dot(fi, fi) + x[i][0])


@kc.func
def takes_array(a: kc.array(dtype=f64), x: f64):
    return a[0] * x


@kc.kernel
def bad_grad_of_array_func(a: kc.array(dtype=f64)):
    kc.grad(takes_array)(a, f64(1.0))


def _potential(d):
    r = np.linalg.norm(d)
    return np.exp(-r * r) / (r + 0.5)


def test_gradients_of_funcs(rng):
    n = 24
    x = rng.uniform(-1, 1, (n, 3))
    f = kc.full(n, np.nan, dtype=kc.vec3d)
    g = kc.full((n, 4), np.nan, dtype=f64)
    kc.launch(grads_kernel, n, [kc.array(x, dtype=kc.vec3d), f, g])
    eps = 1e-6
    fd = np.array([[-(_potential(d + eps * e) - _potential(d - eps * e)) / (2 * eps)
                    for e in np.eye(3)] for d in x])
    np.testing.assert_allclose(f.numpy(), fd, rtol=1e-7, atol=1e-9)
    got = g.numpy()
    np.testing.assert_allclose(got[:, 0], np.cos(x[:, 0]) * x[:, 1] ** 2, rtol=1e-12)
    np.testing.assert_allclose(got[:, 1], 2 * np.sin(x[:, 0]) * x[:, 1], rtol=1e-12)
    np.testing.assert_allclose(got[:, 2], 6 * x[:, 2], rtol=1e-12)
    assert not got[:, 3].any()  # an int parameter's gradient is zero


def test_backward_treats_grad_as_constant(rng):
    n = 8
    x = kc.array(rng.uniform(-1, 1, (n, 3)), dtype=kc.vec3d, requires_grad=True)
    loss = kc.zeros(1, dtype=f64, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(loss_of_forces, n, [x, loss])
    tape.backward(loss)
    np.testing.assert_array_equal(x.grad.numpy(), np.tile([1.0, 0.0, 0.0], (n, 1)))


def test_grad_errors():
    with pytest.raises(TypeError, match="@kc.func or a builtin"):
        kc.grad(np.sin)
    with pytest.raises(RuntimeError, match="inside kernels"):
        kc.grad(two)(1.0, 2.0)
    with pytest.raises(KernelError, match="funcs taking arrays"):
        kc.launch(bad_grad_of_array_func, 1, [kc.zeros(1, dtype=f64)])


_DRIVER = textwrap.dedent("""
    import importlib.util, json, sys
    import numpy as np
    path, module = sys.argv[1], sys.argv[2]
    text = open(path).read()
    if module == "kernelc":
        text = text.replace("import warp as wp\\n", "import kernelc as wp\\n")
    text = text.replace("import warp.examples\\n", "").replace(
        "warp.examples.get_asset_directory()", repr(sys.argv[3]))
    text = text.replace("self.sim_substeps = 32", "self.sim_substeps = 2")
    out = sys.argv[4] + f"/{module}_particle_repulsion.py"
    open(out, "w").write(text)
    spec = importlib.util.spec_from_file_location(f"{module}_particle_repulsion", out)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if module == "warp":
        import warp
        warp.config.quiet = True
    example = mod.Example()
    example.step()
    state = {k: v.numpy().tolist() for k, v in vars(example).items()
             if hasattr(v, "numpy") and hasattr(v, "dtype")}
    print(json.dumps(state))
""")


def test_particle_repulsion_matches_warp(tmp_path):
    """Warp's example computes forces with wp.grad(potential) over hash-grid neighbours."""
    pytest.importorskip("PIL")
    warp = pytest.importorskip("warp")
    from pathlib import Path

    folder = Path(warp.__file__).parent / "examples"
    source = folder / "optim" / "example_particle_repulsion.py"
    if not source.exists():
        pytest.skip("Warp's examples are not installed")
    states = {}
    for module in ("warp", "kernelc"):
        proc = subprocess.run(
            [sys.executable, "-c", _DRIVER, str(source), module, str(folder / "assets"),
             str(tmp_path)], capture_output=True, text=True, timeout=600,
            cwd=str(Path(kc.__file__).parent.parent))
        assert proc.returncode == 0, proc.stderr[-3000:]
        states[module] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert states["warp"].keys() == states["kernelc"].keys() and states["warp"]
    for name, want in states["warp"].items():
        np.testing.assert_allclose(np.array(states["kernelc"][name]), np.array(want),
                                   rtol=1e-5, atol=1e-5, err_msg=name)


@kc.kernel
def builtin_grads(a: kc.array(dtype=f64), b: kc.array(dtype=f64), out: kc.array(dtype=f64,
                                                                               ndim=2)):
    i = kc.tid()
    db, da = kc.grad(kc.atan2)(b[i], a[i])  # Warp's own example
    out[i, 0] = da
    out[i, 1] = db
    out[i, 2] = kc.grad(kc.sin)(a[i])
    out[i, 3] = kc.grad(kc.length)(kc.vec3d(a[i], b[i], f64(1.0)))[0]


def test_gradients_of_builtins(rng):
    n = 16
    a, b = rng.uniform(-2, 2, n), rng.uniform(-2, 2, n)
    out = kc.full((n, 4), np.nan, dtype=f64)
    kc.launch(builtin_grads, n, [kc.array(a, dtype=f64), kc.array(b, dtype=f64), out])
    d = a * a + b * b
    np.testing.assert_allclose(out.numpy(), np.stack(
        [-b / d, a / d, np.cos(a), a / np.sqrt(d + 1)], axis=1), rtol=1e-12)
