"""Batched solves in `kernelc.optim.linear`: operators whose `batch_offsets` split the
unknowns into independent subproblems, each solved to its own tolerance.

`solve_batched` runs every solver on one block-diagonal system with uneven (and one empty)
subproblems and an inactive tail, here and in a Warp subprocess: on the CPU, iteration
counts, residuals, callback arguments and solutions agree bit for bit. The other tests
compare each subproblem with NumPy, check that a batched solve equals separate solves,
that inactive unknowns are left alone, and the errors.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import kernelc as kc
import kernelc.optim.linear as linear
from kernelc.optim.linear_dot import BatchedDot
from tests.conftest import run_warp

SIZES = (9, 14, 0, 11)  # one empty subproblem: its offsets repeat
TAIL = 3  # inactive unknowns after the last subproblem


def make_inputs(seed: int = 5) -> dict[str, np.ndarray]:
    """A block-diagonal SPD matrix and a non-symmetric one (blocks of SIZES, then a diagonal
    tail), a right-hand side and an initial guess with no zero entries."""
    rng = np.random.default_rng(seed)
    n = sum(SIZES) + TAIL
    spd, ns = np.zeros((n, n)), np.zeros((n, n))
    start = 0
    for size in SIZES:
        block = slice(start, start + size)
        q = rng.uniform(-1.0, 1.0, (size, size))
        scale = np.exp(rng.uniform(-0.5, 0.5, size))
        spd[block, block] = (q @ q.T + size * np.eye(size)) * scale[:, None] * scale[None, :]
        ns[block, block] = rng.uniform(-1.0, 1.0, (size, size)) + size * np.eye(size)
        start += size
    for i in range(start, n):
        spd[i, i] = ns[i, i] = 2.0 + i
    sign = np.where(rng.uniform(size=n) < 0.3, -1.0, 1.0)
    return {"spd": spd, "ns": ns, "b": rng.uniform(0.5, 2.0, n) * sign,
            "x0": rng.uniform(0.05, 0.1, n), "sizes": np.array(SIZES)}


def solve_batched(wp, linear, inputs: dict) -> dict:
    """Runs every configuration; returns solutions, results and callback arguments.

    This function's source also runs in the Warp subprocess: it uses only its arguments.
    """
    offsets_np = np.concatenate([[0], np.cumsum(inputs["sizes"])]).astype(np.int32)
    configs = []
    for dtype in ("float32", "float64"):
        for name, matrix in (("cg", "spd"), ("cr", "spd"), ("bicgstab", "ns"),
                             ("gmres", "ns")):
            for ptype in (None, "diag"):
                sides = (False, True) if ptype and name in ("bicgstab", "gmres") else (False,)
                for left in sides:
                    configs.append((dtype, name, matrix, ptype, left, {"maxiter": 40}))
        configs += [(dtype, "cg", "spd", "diag", False, {"restart": 4, "check_every": 3}),
                    (dtype, "cr", "spd", None, False, {"check_every": 1, "tol": 1e-4}),
                    (dtype, "gmres", "ns", None, False, {"restart": 5, "max_len": True}),
                    (dtype, "cg", "spd", None, False, {"check_every": 0, "maxiter": 12}),
                    (dtype, "gmres", "ns", "diag", False, {"check_every": 0, "restart": 4,
                                                          "maxiter": 8})]
    out = {}
    for index, (dtype, name, matrix, ptype, left, extra) in enumerate(configs):
        extra = dict(extra)
        scalar = getattr(wp, dtype)
        A = wp.array(inputs[matrix].astype(dtype), dtype=scalar)
        offsets = wp.array(offsets_np, dtype=wp.int32)
        max_len = int(max(inputs["sizes"])) if extra.pop("max_len", False) else None
        A_op = linear.aslinearoperator(A, batch_offsets=offsets, max_batch_length=max_len)
        b = wp.array(inputs["b"].astype(dtype), dtype=scalar)
        x = wp.array(inputs["x0"].astype(dtype), dtype=scalar)
        calls = []
        kwargs = {"M": linear.preconditioner(A, ptype) if ptype else None}
        if extra.get("check_every") != 0:
            kwargs["callback"] = lambda *args, calls=calls: calls.append(args)
        if name in ("bicgstab", "gmres"):
            kwargs["is_left_preconditioner"] = left
        if name == "gmres" and "restart" not in extra:
            kwargs["restart"] = 6
        kwargs.update(extra)
        result = getattr(linear, name)(A_op, b, x, **kwargs)
        if extra.get("check_every") == 0:
            out[f"{index}/norms"] = np.stack([result[1].numpy(), result[2].numpy()])
            result = [result[0].numpy()[0], 0.0, 0.0]
        out[f"{index}/x"] = x.numpy()
        out[f"{index}/result"] = np.array([float(value) for value in result])
        out[f"{index}/calls"] = np.array(calls, dtype=np.float64).reshape(-1, 3)
    return out


_WARP_DRIVER = inspect.getsource(solve_batched) + """
import warp.optim.linear

results.update(solve_batched(wp, warp.optim.linear, inputs))
"""


@pytest.fixture(scope="module")
def inputs() -> dict[str, np.ndarray]:
    return make_inputs()


@pytest.fixture(scope="module")
def ours(inputs) -> dict[str, np.ndarray]:
    return solve_batched(kc, linear, inputs)


def test_matches_warp_bit_for_bit(ours, inputs, tmp_path_factory):
    want = run_warp(_WARP_DRIVER, tmp_path_factory.mktemp("warp_linear_batched"), **inputs)
    assert set(ours) == set(want)
    for key, value in want.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)
    assert all(np.all(np.isfinite(v)) for k, v in ours.items() if k.endswith("/x"))


def blocks(sizes=SIZES):
    start = 0
    for size in sizes:
        yield slice(start, start + size)
        start += size


def test_each_subproblem_is_solved_and_the_tail_is_left_alone(ours, inputs):
    # 15 configurations per dtype: 0-3, 10, 11 and 13 solve the SPD matrix; 11 has a loose
    # tolerance, 13 and 14 (check_every=0) report no residual on the host.
    n_active = sum(SIZES)
    converged = 0
    for index in range(30):
        iterations, residual, atol = ours[f"{index}/result"]
        x = ours[f"{index}/x"]
        np.testing.assert_array_equal(x[n_active:], inputs["x0"][n_active:].astype(x.dtype))
        local = index % 15
        if residual > atol or local in (11, 13, 14):
            continue
        converged += 1
        matrix = inputs["spd" if local < 4 or local == 10 else "ns"]
        rtol = 1e-3 if x.dtype == np.float32 else 1e-8
        for block in blocks():
            if block.start == block.stop:
                continue
            want = np.linalg.solve(matrix[block, block], inputs["b"][block])
            np.testing.assert_allclose(x[block], want, rtol=rtol, atol=rtol, err_msg=str(index))
    assert converged >= 20


def test_reported_residual_is_the_worst_subproblem(ours):
    # check_every=0 returns one squared residual and tolerance per subproblem.
    norms = ours["13/norms"]
    assert norms.shape == (2, len(SIZES))
    assert norms[0, 2] == 0.0  # the empty subproblem
    calls = ours["0/calls"]
    assert calls[0][0] == 0 and calls[-1].tolist() == ours["0/result"].tolist()


@pytest.mark.parametrize("name", ["cg", "cr", "bicgstab", "gmres"])
@pytest.mark.parametrize("dtype", [kc.float32, kc.float64], ids=["f32", "f64"])
def test_batched_equals_separate_solves(name, dtype, inputs):
    # With check_every=0 every solve runs maxiter iterations; subproblems shorter than a
    # dot block sum in the same order either way, so the results are equal bit for bit.
    matrix = inputs["spd" if name in ("cg", "cr") else "ns"]
    kwargs = {"check_every": 0, "maxiter": 8, "tol": 1e-6}
    if name == "gmres":
        kwargs["restart"] = 4
    offsets = kc.array(np.concatenate([[0], np.cumsum(SIZES)]), dtype=kc.int32)
    A = kc.array(matrix, dtype=dtype)
    x = kc.array(inputs["x0"], dtype=dtype)
    op = linear.aslinearoperator(A, batch_offsets=offsets, max_batch_length=max(SIZES))
    getattr(linear, name)(op, kc.array(inputs["b"], dtype=dtype), x,
                          M=linear.preconditioner(A), **kwargs)
    for block in blocks():
        if block.start == block.stop:
            continue
        A_k = kc.array(np.ascontiguousarray(matrix[block, block]), dtype=dtype)
        x_k = kc.array(inputs["x0"][block], dtype=dtype)
        getattr(linear, name)(A_k, kc.array(inputs["b"][block], dtype=dtype), x_k,
                              M=linear.preconditioner(A_k), **kwargs)
        np.testing.assert_array_equal(x.numpy()[block], x_k.numpy(), err_msg=str(block))


def test_sparse_vector_system_with_poisoned_tail(rng):
    # 2x2 blocks, unknowns as vec2d, subproblems of 3 and 2 block rows; the last block row
    # is inactive and holds NaN, which no stored block reads.
    from kernelc.sparse import bsr_from_triplets

    rows_of_blocks, active = 6, 5
    dense = np.zeros((2 * rows_of_blocks, 2 * rows_of_blocks))
    triplets = []
    for sub in (range(0, 3), range(3, 5)):
        q = rng.uniform(-1.0, 1.0, (2 * len(sub), 2 * len(sub)))
        block = q @ q.T + 2 * len(sub) * np.eye(2 * len(sub))
        lo = 2 * sub.start
        dense[lo:lo + block.shape[0], lo:lo + block.shape[0]] = block
        for i in sub:
            for j in sub:
                triplets.append((i, j, dense[2 * i:2 * i + 2, 2 * j:2 * j + 2]))
    rows, cols, values = zip(*triplets, strict=True)
    A = bsr_from_triplets(rows_of_blocks, rows_of_blocks, kc.array(rows, dtype=kc.int32),
                          kc.array(cols, dtype=kc.int32),
                          kc.array(np.array(values), dtype=kc.mat22d))
    offsets = kc.array([0, 6, 10], dtype=kc.int32)
    op = linear.aslinearoperator(A, batch_offsets=offsets)
    b_np = rng.uniform(0.5, 2.0, 2 * rows_of_blocks)
    for name in ("cg", "cr", "bicgstab", "gmres"):
        x_np = np.zeros(2 * rows_of_blocks)
        x_np[2 * active:] = np.nan
        x = kc.array(x_np.reshape(-1, 2), dtype=kc.vec2d)
        iterations, residual, atol = getattr(linear, name)(
            op, kc.array(b_np.reshape(-1, 2), dtype=kc.vec2d), x, tol=1e-10, maxiter=40)
        assert residual <= atol, name
        got = x.numpy().reshape(-1)
        assert np.isnan(got[2 * active:]).all(), name
        for sub in (slice(0, 6), slice(6, 10)):
            want = np.linalg.solve(dense[sub, sub], b_np[sub])
            np.testing.assert_allclose(got[sub], want, rtol=1e-8, atol=1e-9, err_msg=name)


def test_vector_diagonal_operator():
    diag = kc.array([[2.0, 4.0], [5.0, 8.0]], dtype=kc.vec2)
    op = linear.aslinearoperator(diag, batch_offsets=kc.array([0, 2, 4], dtype=kc.int32))
    assert op.batch_count == 2 and op.shape == (2,) and op.scalar_type == kc.float32
    b = kc.array([[2.0, 4.0], [10.0, 24.0]], dtype=kc.vec2)
    for name in ("cg", "cr", "bicgstab", "gmres"):
        x = kc.zeros(2, dtype=kc.vec2)
        getattr(linear, name)(op, b, x, tol=1e-7, maxiter=4, check_every=1)
        np.testing.assert_allclose(x.numpy(), [[1.0, 1.0], [2.0, 3.0]], rtol=1e-6)


@pytest.mark.parametrize("chunked", [False, True])
def test_batched_dot(chunked, rng):
    # The chunked reduction is the CUDA one; here it runs on the CPU. max_batch_length
    # understates a length on purpose: every dof must still be counted.
    sizes = [0, 1, 511, 512, 513, 1300, 7]
    offsets_np = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    n = int(offsets_np[-1]) + 5
    a_np, b_np = rng.uniform(-1, 1, (2, n)), rng.uniform(-1, 1, (2, n))
    offsets = kc.array(offsets_np)
    dot = BatchedDot(n, kc.float64, kc.get_device("cpu"), 3, offsets, max_batch_length=600,
                     chunked=chunked)
    dot.out.fill_(np.nan)
    dot.compute(kc.array(a_np), kc.array(b_np), col_offset=1)
    want = [[np.dot(a_np[c, lo:hi], b_np[c, lo:hi]) for lo, hi in
             zip(offsets_np[:-1], offsets_np[1:], strict=True)] for c in range(2)]
    np.testing.assert_allclose(dot.out.numpy()[1:], want, rtol=1e-12, atol=1e-13)
    assert np.isnan(dot.out.numpy()[0]).all()


def test_errors():
    A = kc.array(np.eye(4) * 2.0)
    b, x = kc.array(np.ones(4)), kc.zeros(4, dtype=kc.float64)
    offsets = kc.array([0, 2, 4], dtype=kc.int32)
    with pytest.raises(ValueError, match="requires batch_offsets"):
        linear.LinearOperator((4, 4), kc.float64, A.device, None, max_batch_length=2)
    with pytest.raises(ValueError, match="non-negative"):
        linear.aslinearoperator(A, batch_offsets=offsets, max_batch_length=-1)
    with pytest.raises(TypeError, match="int32"):
        linear.aslinearoperator(A, batch_offsets=np.array([0, 4]))
    with pytest.raises(TypeError, match="int32"):
        linear.aslinearoperator(A, batch_offsets=kc.array([0, 4], dtype=kc.int64))
    with pytest.raises(ValueError, match="B \\+ 1 offsets"):
        linear.aslinearoperator(A, batch_offsets=kc.array([4], dtype=kc.int32))
    batched = linear.aslinearoperator(A, batch_offsets=offsets, max_batch_length=2)
    assert batched.batch_count == 2 and batched.max_batch_length == 2
    assert linear.aslinearoperator(batched, batch_offsets=None) is batched

    plain = linear.cg(A, b, x, run=False)
    with pytest.raises(ValueError, match="batch_count"):
        plain(A=batched)
    one = linear.aslinearoperator(A, batch_offsets=kc.array([0, 4], dtype=kc.int32))
    with pytest.raises(ValueError, match="batch_offsets must be the same array"):
        plain(A=one)
    solver = linear.gmres(batched, b, x, run=False)
    with pytest.raises(ValueError, match="max_batch_length"):
        solver(A=linear.aslinearoperator(A, batch_offsets=offsets, max_batch_length=4))
    with pytest.raises(ValueError, match="same array"):
        solver(A=linear.aslinearoperator(A, batch_offsets=kc.array([0, 2, 4], dtype=kc.int32),
                                         max_batch_length=2))
    assert solver(A=linear.aslinearoperator(A, batch_offsets=offsets, max_batch_length=2))[0]
    np.testing.assert_allclose(x.numpy(), 0.5)
    assert linear.cg(batched, b, kc.zeros(4, dtype=kc.float64), run=False)._maxiter == 2


@pytest.mark.parametrize("method", ["cr", "cg", "bicgstab", "gmres"])
def test_fem_example_bsr_cg_takes_a_batched_operator(method, tmp_path_factory, rng):
    # The fem examples' `bsr_cg` helper, run on kernelc, with a batched operator and a
    # sparse Jacobi preconditioner (or none).
    from kernelc.sparse import bsr_diag
    from tests import fem_harness as H

    sizes, n = (5, 7), 12
    a = np.zeros((n, n))
    for block in blocks(sizes):
        q = rng.uniform(-1.0, 1.0, (block.stop - block.start,) * 2)
        a[block, block] = q @ q.T + q.shape[0] * np.eye(q.shape[0])
    b_np = rng.uniform(0.5, 2.0, n)
    op = linear.aslinearoperator(kc.array(a), batch_offsets=kc.array([0, 5, 12], dtype=kc.int32))
    with H.kernelc_examples(tmp_path_factory, f"kc_linear_batched_{method}",
                            {"utils": f"kc_linear_batched_utils_{method}"}) as modules:
        utils = next(iter(modules.values()))
        for M in (bsr_diag(kc.array(1.0 / np.diag(a))), None):
            x = kc.zeros(n, dtype=kc.float64)
            err, iterations = utils.bsr_cg(op, x, kc.array(b_np), max_iters=24, tol=1e-10,
                                           method=method, M=M, use_diag_precond=False,
                                           quiet=True)
            atol = 1e-10 * max(np.linalg.norm(b_np[:5]), np.linalg.norm(b_np[5:]))
            assert err <= atol and 0 < iterations <= 24
            np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b_np), rtol=1e-8)


def test_kernels_compile_for_cuda_without_a_gpu(dtype=kc.float64):
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs the NVRTC bindings")
    from kernelc.frontend.decorators import Kernel
    from kernelc.optim import linear_dot

    kernels = [k for k in vars(linear_dot).values() if isinstance(k, Kernel)]
    assert len(kernels) == 4
    for kernel in kernels:
        types = [kc.types.ArrayType(dtype, t.ndim) if isinstance(t, kc.types.ArrayType)
                 and t.dtype is None else dtype if t is None else t
                 for t in kernel.param_types]
        compiled = kc.compile(kernel, target="cuda", arch=90, arg_types=types)
        assert compiled.format == "cubin" and compiled.binary, kernel.__name__


@pytest.mark.cuda
def test_on_gpu_matches_cpu(inputs):
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    offsets_np = np.concatenate([[0], np.cumsum(SIZES)]).astype(np.int32)
    results = {}
    for device in ("cpu", "cuda:0"):
        A = kc.array(inputs["ns"], dtype=kc.float64, device=device)
        op = linear.aslinearoperator(A, batch_offsets=kc.array(offsets_np, device=device))
        x = kc.array(inputs["x0"], dtype=kc.float64, device=device)
        b = kc.array(inputs["b"], dtype=kc.float64, device=device)
        results[device] = linear.gmres(op, b, x, tol=1e-10, restart=8), x.numpy()
    (cpu_result, cpu_x), (gpu_result, gpu_x) = results["cpu"], results["cuda:0"]
    assert cpu_result[0] == gpu_result[0]
    np.testing.assert_allclose(gpu_x, cpu_x, rtol=1e-9, atol=1e-12)
