"""`@kc.func_grad` and `@kc.func_replay`: custom gradients and replays of funcs, against
hand-derived values and Warp."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import autodiff_custom_programs as P
import numpy as np
import pytest

import kernelc as kc
from kernelc.errors import KernelError

X = np.array([0.0, 4.0, 0.25, 9.0], np.float32)
Y = np.array([3.0, 0.1, -5.0, 0.5], np.float32)
V = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], np.float32)


def run(wp) -> dict:
    """The gradients of the three programs, with `wp` kernelc or Warp."""
    x = wp.array(X, dtype=float, requires_grad=True)
    y = wp.array(Y, dtype=float, requires_grad=True)
    out = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(P.k, 4, [x, y, out])
    tape.backward(grads={out: wp.array(np.ones(4, np.float32), dtype=float)})
    g = wp.zeros(4, dtype=float)
    wp.launch(P.kg, 4, [x, g])
    p = wp.array(V, dtype=wp.vec3, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(P.kv, 2, [p, loss])
    tape.backward(loss)
    r = wp.array(X[1:], dtype=float, requires_grad=True)
    loss_r = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(P.kr, 3, [r, loss_r])
    tape.backward(loss_r)
    xa = wp.array(X, dtype=float, requires_grad=True)
    ya = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(P.ka, 4, [xa, ya])
    tape.backward(grads={ya: wp.array(Y, dtype=float)})
    pairs = wp.zeros(2, dtype=P.Pair, requires_grad=True)
    xs = wp.array(X[:2], dtype=float, requires_grad=True)
    loss_s = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(P.ks, 2, [xs, pairs, loss_s])
    tape.backward(loss_s)
    pair_grads = pairs.grad.numpy()
    return {"x": x.grad.numpy().tolist(), "y": y.grad.numpy().tolist(),
            "grad": g.numpy().tolist(), "p": p.grad.numpy().tolist(),
            "out": out.numpy().tolist(), "replay": r.grad.numpy().tolist(),
            "replay_loss": loss_r.numpy().tolist(), "arrays": xa.grad.numpy().tolist(),
            "overload_x": xs.grad.numpy().tolist(),
            "struct_scale": pair_grads["scale"].tolist(),
            "struct_v": pair_grads["v"].tolist()}


def test_custom_gradients_replace_derived_ones():
    got = run(kc)
    dsqrt = np.where(X > 0, 1 / (2 * np.sqrt(np.maximum(X, 1e-30))), 0.0)
    np.testing.assert_allclose(got["x"], dsqrt + np.clip(Y, -1, 1) + 2, rtol=1e-6)
    np.testing.assert_allclose(got["y"], np.clip(X, -1, 1) + 2, rtol=1e-6)
    np.testing.assert_allclose(got["grad"], dsqrt, rtol=1e-6)  # kc.grad uses it too
    np.testing.assert_allclose(got["p"], [[6.0, 0, 0], [6.0, 0, 0]])  # the custom rule
    # The forward pass uses twice (loss = sum (2x)^2); the backward pass replays y with
    # replay_twice (3x), so d loss / dx = 2 * 3x * 2.
    np.testing.assert_allclose(got["replay_loss"], [np.sum((2 * X[1:]) ** 2)], rtol=1e-6)
    np.testing.assert_allclose(got["replay"], 12 * X[1:], rtol=1e-6)
    # kc.adjoint[xs][i] adds into the array's gradient (and reads ys's)
    np.testing.assert_allclose(got["arrays"], 5 * X + Y, rtol=1e-6)
    # each overload uses its own gradient; struct fields get theirs
    np.testing.assert_allclose(got["overload_x"], [10.0, 10.0])
    np.testing.assert_allclose(got["struct_scale"], [3.0, 3.0])
    np.testing.assert_allclose(got["struct_v"], [[0.0, 7.0, 0.0]] * 2)


_DRIVER = textwrap.dedent("""
    import json, sys, types
    sys.path.insert(0, sys.argv[1])
    import warp as wp
    wp.config.quiet = True
    source = open(sys.argv[2]).read().replace("import kernelc as wp", "import warp as wp")
    path = sys.argv[3] + "/warp_custom_programs.py"
    open(path, "w").write(source)
    sys.path.insert(0, sys.argv[3])
    import warp_custom_programs
    sys.modules["autodiff_custom_programs"] = warp_custom_programs
    import test_autodiff_custom as T
    T.P = warp_custom_programs
    print(json.dumps(T.run(wp)))
""")


def test_custom_gradients_match_warp(tmp_path):
    pytest.importorskip("warp")
    here = Path(__file__).parent
    proc = subprocess.run([sys.executable, "-c", _DRIVER, str(here),
                           str(here / "autodiff_custom_programs.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    want = json.loads(proc.stdout.strip().splitlines()[-1])
    got = run(kc)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=name)


@kc.func
def square(x: float):
    return x * x


@kc.func_grad(square)
def adj_square_returns(x: float, adj_ret: float):
    return x


@kc.kernel
def uses_bad_grad(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = square(x[i])


@kc.func
def cube_f(x: float):
    return x * x * x


@kc.func_grad(cube_f)
def adj_cube_wrong_arity(x: float):
    kc.adjoint[x] += 1.0


@kc.kernel
def uses_wrong_arity(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = cube_f(x[i])


def test_errors():
    with pytest.raises(TypeError, match="@kc.func"):
        kc.func_grad(np.sin)
    with pytest.raises(RuntimeError, match="func_grad"):
        kc.adjoint[0]
    x, y = kc.ones(2, dtype=float), kc.zeros(2, dtype=float)
    with pytest.raises(KernelError, match="returns nothing"):
        kc.launch(uses_bad_grad, 2, [x, y])
    with pytest.raises(KernelError, match="must take the func's parameters"):
        kc.launch(uses_wrong_arity, 2, [x, y])
