"""`kernelc.optim.linear` (cg, cr, bicgstab, gmres) against NumPy and against Warp.

`solve_all` runs every solver configuration (dtype, preconditioner, left/right, restarts,
check intervals, a system large enough for two-level dot products) on the same inputs; it
runs in a Warp subprocess (its source is sent there) and here. The solvers do Warp's
operations in Warp's order, so iteration counts, residuals, tolerances, callback arguments
and solutions agree bit for bit.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import kernelc as kc
import kernelc.optim.linear as linear
from tests.conftest import poisoned, run_warp

SOLVERS = ("cg", "cr", "bicgstab", "gmres")


@kc.kernel
def report_kernel(cur_iter: kc.array(dtype=int), r_norm_sq: kc.array(dtype=kc.float64),
                  atol_sq: kc.array(dtype=kc.float64)):
    # A device-side callback (check_every=0): one line per call.
    kc.printf("iteration %d\n", cur_iter[0])


def make_inputs(seed: int = 11, n: int = 24, big: int = 600) -> dict[str, np.ndarray]:
    """Well-conditioned systems with no zero entries: an SPD matrix with a badly scaled
    diagonal (so Jacobi matters) and a non-symmetric one with negative diagonal entries (so
    "diag_abs" differs from "diag")."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1.0, 1.0, (n, n))
    scale = np.exp(rng.uniform(-0.5, 0.5, n))
    spd = (q @ q.T + n * np.eye(n)) * scale[:, None] * scale[None, :]
    signs = np.where(rng.uniform(size=n) < 0.3, -1.0, 1.0)
    ns = rng.uniform(-1.0, 1.0, (n, n)) + n * np.diag(rng.uniform(0.5, 2.0, n) * signs)
    qb = rng.uniform(-1.0, 1.0, (big, big))
    return {"spd": spd, "ns": ns, "b": rng.uniform(0.5, 2.0, n) * signs,
            "x0": rng.uniform(0.05, 0.1, n), "big": qb @ qb.T / big + np.eye(big),
            "big_b": rng.uniform(0.5, 2.0, big)}


def solve_all(wp, linear, inputs: dict) -> dict:
    """Runs every configuration; returns solutions, results and callback arguments.

    This function's source also runs in the Warp subprocess: it uses only its arguments.
    """
    configs = []
    for dtype in ("float32", "float64"):
        for name, matrix in (("cg", "spd"), ("cr", "spd"), ("bicgstab", "ns"),
                             ("gmres", "ns")):
            for ptype in (None, "diag", "diag_abs"):
                sides = (False, True) if ptype and name in ("bicgstab", "gmres") else (False,)
                for left in sides:
                    configs.append((dtype, name, matrix, ptype, left, {"maxiter": 48}))
        configs += [(dtype, "cg", "spd", "diag", False, {"restart": 5, "tol": 1e-4}),
                    (dtype, "cr", "spd", None, False, {"restart": 4, "maxiter": 9}),
                    (dtype, "gmres", "ns", None, False, {"restart": 5, "check_every": 12}),
                    (dtype, "cg", "spd", None, False, {"check_every": 1, "atol": 1e-3}),
                    (dtype, "bicgstab", "ns", "diag", False, {"check_every": 0, "maxiter": 7}),
                    (dtype, "cg", "big", None, False, {"maxiter": 6, "check_every": 3}),
                    (dtype, "gmres", "big", None, False, {"restart": 4, "maxiter": 8})]
    out = {}
    for index, (dtype, name, matrix, ptype, left, extra) in enumerate(configs):
        scalar = getattr(wp, dtype)
        A = wp.array(inputs[matrix].astype(dtype), dtype=scalar)
        n = A.shape[0]
        b = wp.array(inputs["big_b" if n > len(inputs["b"]) else "b"].astype(dtype),
                     dtype=scalar)
        x = wp.zeros(n, dtype=scalar) if n > len(inputs["b"]) else wp.array(
            inputs["x0"].astype(dtype), dtype=scalar)
        calls = []
        kwargs = {"M": linear.preconditioner(A, ptype) if ptype else None}
        if extra.get("check_every") != 0:
            kwargs["callback"] = lambda *args, calls=calls: calls.append(args)
        if name in ("bicgstab", "gmres"):
            kwargs["is_left_preconditioner"] = left
        if name == "gmres" and "restart" not in extra:
            kwargs["restart"] = 12
        kwargs.update(extra)
        result = getattr(linear, name)(A, b, x, **kwargs)
        if extra.get("check_every") == 0:
            result = [value.numpy()[0] for value in result]
        out[f"{index}/x"] = x.numpy()
        out[f"{index}/result"] = np.array([float(value) for value in result])
        out[f"{index}/calls"] = np.array(calls, dtype=np.float64).reshape(-1, 3)
    return out


_WARP_DRIVER = inspect.getsource(solve_all) + """
import warp.optim.linear

results.update(solve_all(wp, warp.optim.linear, inputs))
"""


@pytest.fixture(scope="module")
def inputs() -> dict[str, np.ndarray]:
    return make_inputs()


@pytest.fixture(scope="module")
def ours(inputs) -> dict[str, np.ndarray]:
    return solve_all(kc, linear, inputs)


def test_matches_warp_bit_for_bit(ours, inputs, tmp_path_factory):
    want = run_warp(_WARP_DRIVER, tmp_path_factory.mktemp("warp_linear"), **inputs)
    assert set(ours) == set(want)
    for key, value in want.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)
    # The comparison is not vacuous: solutions are finite and moved off the initial guess.
    assert all(np.all(np.isfinite(v)) for k, v in ours.items() if k.endswith("/x"))
    assert not np.allclose(ours["0/x"], inputs["x0"])


def test_converged_configurations_solve_the_system(ours, inputs):
    # The first 16 configurations of each dtype (23) use default tolerances; all but
    # unpreconditioned GMRES(12) on the indefinite matrix in float64 converge.
    converged = 0
    for offset, rtol in ((0, 1e-4), (23, 1e-9)):
        for index in range(offset, offset + 16):
            iterations, residual, atol = ours[f"{index}/result"]
            assert 0 < iterations <= 48, index
            if residual > atol:
                continue
            converged += 1
            matrix = "spd" if index - offset < 6 else "ns"
            want = np.linalg.solve(inputs[matrix], inputs["b"])
            np.testing.assert_allclose(ours[f"{index}/x"], want, rtol=rtol, atol=rtol,
                                       err_msg=str(index))
    assert converged >= 31


def system(rng, n: int, symmetric: bool) -> tuple[np.ndarray, np.ndarray]:
    q = rng.uniform(-1.0, 1.0, (n, n))
    a = q @ q.T + n * np.eye(n) if symmetric else q + n * np.eye(n)
    b = rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)
    return a, b


@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize("dtype", [kc.float32, kc.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("ptype", [None, "diag"])
def test_solution_matches_numpy(name, dtype, ptype, rng):
    a, b_np = system(rng, 20, symmetric=name in ("cg", "cr"))
    A, b = kc.array(a, dtype=dtype), kc.array(b_np, dtype=dtype)
    x = kc.array(rng.uniform(0.1, 0.2, 20), dtype=dtype)  # x is the initial guess too
    M = linear.preconditioner(A, ptype) if ptype else None
    tol = 1e-5 if dtype == kc.float32 else 1e-11
    iterations, residual, atol = getattr(linear, name)(A, b, x, tol=tol, M=M)
    assert isinstance(iterations, int) and 0 < iterations <= 32
    assert residual <= atol == pytest.approx(tol * np.linalg.norm(b_np), rel=1e-5)
    want = np.linalg.solve(a, b_np)
    np.testing.assert_allclose(x.numpy(), want, rtol=50 * tol, atol=50 * tol)


def test_callback_calls(rng):
    a, b_np = system(rng, 30, symmetric=True)
    A, b, x = kc.array(a), kc.array(b_np), kc.zeros(30, dtype=kc.float64)
    calls = []
    result = linear.cg(A, b, x, tol=1e-6, callback=lambda *args: calls.append(args),
                       check_every=2)
    assert calls[0][0] == 0 and calls[0][1] == pytest.approx(np.linalg.norm(b_np), rel=1e-5)
    assert calls[-1] == result
    steps = [call[0] for call in calls[:-1]]
    assert steps == list(range(0, 2 * len(steps), 2))  # every check_every iterations
    assert all(call[2] == result[2] for call in calls)
    assert all(isinstance(v, float) for v in calls[1][1:]) and isinstance(calls[1][0], int)


def test_maxiter_stops(rng):
    a, b_np = system(rng, 30, symmetric=False)
    A, b = kc.array(a), kc.array(b_np)
    for name, maxiter, want in (("cg", 3, 3), ("bicgstab", 2, 2), ("gmres", 6, 8)):
        x = kc.zeros(30, dtype=kc.float64)
        kwargs = {"restart": 4} if name == "gmres" else {}
        iterations, residual, atol = getattr(linear, name)(A, b, x, tol=1e-14, maxiter=maxiter,
                                                           **kwargs)
        assert iterations == want and residual > atol, name  # whole GMRES cycles
    x = kc.array(np.linalg.solve(a, b_np))
    assert linear.cr(A, b, x, tol=1e-3)[0] == 0  # an exact guess needs no iteration


def test_check_every_zero_returns_device_arrays(rng, capfd):
    a, b_np = system(rng, 12, symmetric=True)
    A, b, x = kc.array(a, dtype=kc.float64), kc.array(b_np), kc.zeros(12, dtype=kc.float64)
    iterations, r_norm_sq, atol_sq = linear.cg(A, b, x, maxiter=15, check_every=0,
                                               callback=report_kernel)
    assert isinstance(iterations, kc.array) and iterations.numpy()[0] == 15
    assert r_norm_sq.numpy()[0] <= atol_sq.numpy()[0]
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b_np), rtol=1e-9)
    lines = capfd.readouterr().out.split()
    assert lines.count("iteration") == 16  # before the first iteration and after each
    with pytest.raises(TypeError, match="kernel"):
        linear.cg(A, b, x, check_every=0, callback=print)


def test_solver_objects_reuse_buffers(rng):
    a, b_np = system(rng, 16, symmetric=True)
    A, b, x = kc.array(a), kc.array(b_np), kc.zeros(16, dtype=kc.float64)
    solver = linear.cg(A, b, x, tol=1e-6, run=False)
    assert isinstance(solver, linear.CG) and isinstance(solver, linear.LinearSolverState)
    assert solver()[2] > 0
    b2 = kc.array(-2.0 * b_np)
    x2 = kc.zeros(16, dtype=kc.float64)
    solver(b=b2, x=x2, M=linear.preconditioner(A))
    np.testing.assert_allclose(x2.numpy(), -2.0 * x.numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="shape"):
        solver(b=kc.zeros(8, dtype=kc.float64))
    gm = linear.GMRES(A, b, kc.zeros(16, dtype=kc.float64), restart=40)
    assert gm()[0] == 16  # restart is capped at maxiter (the system size)
    bi = linear.BiCGSTAB(A, b, kc.zeros(16, dtype=kc.float64))
    with pytest.raises(ValueError, match="consistently"):
        bi(M=linear.preconditioner(A))


def test_operators(rng):
    a = rng.uniform(0.5, 1.5, (5, 7)).astype(np.float32)
    x_np = rng.uniform(-1, 1, 7).astype(np.float32)
    y_np = rng.uniform(-1, 1, 5).astype(np.float32)
    op = linear.aslinearoperator(kc.array(a))
    assert op.shape == (5, 7) and op.dtype == kc.float32 and op.scalar_type == kc.float32
    assert op.batch_count == 1 and op.batch_offsets is None
    z = poisoned(5, np.float32)
    op.matvec(kc.array(x_np), kc.array(y_np), z, 2.0, 0.0)  # beta 0: z is not read
    np.testing.assert_allclose(z.numpy(), 2.0 * a @ x_np, rtol=1e-6)
    op.matvec(kc.array(x_np), kc.array(y_np), z, -1.0, 0.5)
    np.testing.assert_allclose(z.numpy(), 0.5 * y_np - a @ x_np, rtol=1e-6, atol=1e-6)
    diag = linear.aslinearoperator(kc.array(y_np))
    z = poisoned(5, np.float32)
    diag.matvec(kc.array(x_np[:5]), kc.array(y_np), z, 1.0, 0.0)
    np.testing.assert_allclose(z.numpy(), y_np * x_np[:5], rtol=1e-6)
    assert linear.aslinearoperator(op) is op and linear.aslinearoperator(None) is None


def test_user_operator_and_diagonal_system(rng):
    a, b_np = system(rng, 10, symmetric=False)

    def matvec(x, y, z, alpha, beta):  # on the host, through NumPy
        z.assign((alpha * (a @ x.numpy()) + beta * y.numpy()).astype(np.float64))

    op = linear.LinearOperator((10, 10), kc.float64, kc.get_device("cpu"), matvec)
    x = kc.zeros(10, dtype=kc.float64)
    assert linear.gmres(op, kc.array(b_np), x, tol=1e-10)[1] < 1e-9
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b_np), rtol=1e-8)
    d = rng.uniform(1.0, 2.0, 10)
    x = kc.zeros(10, dtype=kc.float64)
    linear.cg(kc.array(d), kc.array(b_np), x)
    np.testing.assert_allclose(x.numpy(), b_np / d, rtol=1e-10)


def test_preconditioner():
    a = np.array([[2.0, 1.0, 0.5], [1.0, 0.0, 1.0], [0.5, 1.0, -4.0]])
    A = kc.array(a)
    z = poisoned(3, np.float64)
    ones = kc.array(np.ones(3))
    linear.preconditioner(A, "diag").matvec(ones, ones, z, 1.0, 0.0)
    np.testing.assert_array_equal(z.numpy(), [0.5, 1.0, -0.25])  # a zero pivot gives 1
    linear.preconditioner(A, "diag_abs").matvec(ones, ones, z, 1.0, 0.0)
    np.testing.assert_array_equal(z.numpy(), [0.5, 1.0, 0.25])
    assert linear.preconditioner(A, "id") is None
    with pytest.raises(ValueError, match="Unsupported preconditioner type"):
        linear.preconditioner(A, None)  # as in Warp: "id" means none
    with pytest.raises(ValueError, match="BsrMatrix"):  # block types need a sparse matrix
        linear.preconditioner(A, "block_jacobi_direct")
    with pytest.raises(ValueError, match="square"):
        linear.preconditioner(kc.zeros((2, 3)), "diag")
    with pytest.raises(ValueError, match="diagonal preconditioner"):
        linear.preconditioner(linear.aslinearoperator(A), "diag")


class BsrMatrix:  # stands in for warp.sparse.BsrMatrix
    pass


def test_errors():
    A, b, x = kc.zeros((4, 4)), kc.zeros(4), kc.zeros(4)
    with pytest.raises(NotImplementedError, match="BsrMatrix"):
        linear.aslinearoperator(BsrMatrix())
    with pytest.raises(NotImplementedError, match="sparse"):
        linear.cg(BsrMatrix(), b, x)
    with pytest.raises(ValueError, match="Unable to create LinearOperator"):
        linear.aslinearoperator(np.eye(4))
    with pytest.raises(ValueError, match="requires batch_offsets"):
        linear.aslinearoperator(A, max_batch_length=4)
    with pytest.raises(ValueError, match="non-negative"):
        linear.aslinearoperator(A, batch_offsets=kc.zeros(2, dtype=int), max_batch_length=-1)
    with pytest.raises(TypeError, match="int32"):
        linear.aslinearoperator(A, batch_offsets=kc.zeros(2, dtype=kc.int64))
    cases: list[tuple[Any, ...]] = [
        (TypeError, "b must hold float32", (A, kc.zeros(4, dtype=kc.float64), x)),
        (TypeError, "float32 or float64", (kc.zeros((4, 4), dtype=int), b, x)),
        (ValueError, r"x must have shape \(4,\)", (A, b, kc.zeros(5))),
        (ValueError, "square", (kc.zeros((4, 3)), b, x)),
        (ValueError, "1-d", (A, kc.zeros((4, 1)), x)),
        (TypeError, "kc.array", (A, np.zeros(4, np.float32), x)),
        (ValueError, "M has shape", (A, b, x), {"M": kc.zeros(5)}),
        (TypeError, "M holds float64", (A, b, x), {"M": kc.zeros(4, dtype=kc.float64)}),
        (ValueError, "empty", (kc.zeros((0, 0)), kc.zeros(0), kc.zeros(0))),
    ]
    for solver in SOLVERS:
        for error, message, args, *kwargs in cases:
            with pytest.raises(error, match=message):
                getattr(linear, solver)(*args, **(kwargs[0] if kwargs else {}))
    with pytest.raises(ValueError, match="restart must be positive"):
        linear.gmres(A, b, x, restart=0)
    with pytest.raises(TypeError, match="restart must be an integer"):
        linear.cg(A, b, x, restart=True)
    with pytest.raises(ValueError, match="check_every"):
        linear.cr(A, b, x, check_every=-1)


def test_module_layout():
    import kernelc.optim

    assert kc.optim.linear is linear is kernelc.optim.linear
    assert set(linear.__all__) == {"CG", "CR", "FSAI", "GMRES", "BiCGSTAB", "LinearOperator",
                                   "LinearSolverState", "aslinearoperator", "bicgstab", "cg",
                                   "cr", "gmres", "preconditioner"}


def test_kernels_compile_for_cuda_without_a_gpu(dtype=kc.float32):
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs the NVRTC bindings")
    from kernelc.frontend.decorators import Kernel
    from kernelc.optim import linear_kernels

    kernels = [k for k in vars(linear_kernels).values() if isinstance(k, Kernel)]
    assert len(kernels) >= 18  # every solver kernel, found by looking (not an empty list)
    for kernel in kernels:
        # Generic parameters (arrays of Any, Any scalars) take the solver's scalar type.
        types = [kc.types.ArrayType(dtype, t.ndim) if isinstance(t, kc.types.ArrayType)
                 and t.dtype is None else dtype if t is None else t
                 for t in kernel.param_types]
        compiled = kc.compile(kernel, target="cuda", arch=90, arg_types=types)
        assert compiled.format == "cubin" and compiled.binary, kernel.__name__


@pytest.mark.cuda
@pytest.mark.parametrize("name", SOLVERS)
def test_on_gpu_matches_cpu(name, rng):
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    a, b_np = system(rng, 40, symmetric=name in ("cg", "cr"))
    results = {}
    for device in ("cpu", "cuda:0"):
        A = kc.array(a, dtype=kc.float64, device=device)
        x = kc.zeros(40, dtype=kc.float64, device=device)
        M = linear.preconditioner(A)
        b = kc.array(b_np, dtype=kc.float64, device=device)
        results[device] = getattr(linear, name)(A, b, x, tol=1e-10, M=M), x.numpy()
        x_graph = kc.zeros(40, dtype=kc.float64, device=device)  # check_every=0: one graph
        getattr(linear, name)(A, b, x_graph, tol=1e-10, M=M, check_every=0, maxiter=40)
        np.testing.assert_allclose(x_graph.numpy(), results[device][1], rtol=1e-7, atol=1e-9)
    (cpu_result, cpu_x), (gpu_result, gpu_x) = results["cpu"], results["cuda:0"]
    assert abs(gpu_result[0] - cpu_result[0]) <= 31 and gpu_result[1] <= gpu_result[2]
    np.testing.assert_allclose(gpu_x, cpu_x, rtol=1e-7, atol=1e-9)
