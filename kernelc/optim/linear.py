"""`kernelc.optim.linear`: iterative linear solvers (Warp's `warp.optim.linear`), for dense
and diagonal matrices and user-defined operators.

`cg` and `cr` solve symmetric positive-definite systems, `bicgstab` and `gmres` general
ones. Each updates `x` in place, starting from its values, and returns (iterations,
residual norm, absolute tolerance). Everything runs in kernels on the matrix's device; the
host reads the residual only every `check_every` iterations. An operator with
`batch_offsets` holds independent subproblems, solved together, each to its own tolerance
(see `aslinearoperator`). The algorithms, their
stopping rules and their rounding are Warp 1.19's: on the CPU, iteration counts and results
agree with Warp's.

Example:
    >>> A = kc.array(dense_spd_matrix, dtype=kc.float64)
    >>> b = kc.array(rhs, dtype=kc.float64)
    >>> x = kc.zeros(len(rhs), dtype=kc.float64)
    >>> M = kc.optim.linear.preconditioner(A, "diag")
    >>> iterations, residual, atol = kc.optim.linear.cg(A, b, x, tol=1e-10, M=M)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelc.optim.linear_fsai import FSAI
from kernelc.optim.linear_gmres import GMRES
from kernelc.optim.linear_operator import LinearOperator, aslinearoperator, preconditioner
from kernelc.optim.linear_solvers import CG, CR, BiCGSTAB
from kernelc.optim.linear_state import LinearSolverState
from kernelc.runtime.array import array

__all__ = ["CG", "CR", "FSAI", "GMRES", "BiCGSTAB", "LinearOperator", "LinearSolverState",
           "aslinearoperator", "bicgstab", "cg", "cr", "gmres", "preconditioner"]

_Result = tuple[Any, Any, Any]


def cg(A: Any, b: array, x: array, tol: float | None = None, atol: float | None = None,
       maxiter: float | None = 0, M: Any = None, callback: Callable | None = None,
       check_every: int = 10, use_cuda_graph: bool = True, run: bool = True, *,
       restart: int | None = None) -> _Result | CG:
    """Solves a symmetric positive-definite system A x = b with the Conjugate Gradient
    method (Warp's `warp.optim.linear.cg`).

    The iteration stops once the (recursively updated) residual norm is at most
    `max(atol, tol * |b|)`. Without `tol` and `atol`, both are eps ** 0.75 (1e-6 for
    float32, 1e-12 for float64, from Warp's nominal eps of 1e-8 and 1e-16); one given sets
    the other.

    Args:
        A: The left-hand side: a square 2-d `kc.array` (dense), a 1-d one (diagonal), both
            float16, float32 or float64, a `kernelc.sparse.BsrMatrix`, or a `LinearOperator`.
        b: The right-hand side, a 1-d array of A's scalar type.
        x: The initial guess, overwritten with the solution (same shape and dtype as b).
        tol: Relative tolerance on the residual norm, as a fraction of |b|.
        atol: Absolute tolerance on the residual norm.
        maxiter: Maximum number of iterations (0 or None: the system size, divided by the
            number of subproblems of a batched operator). With `restart`, whole restart
            cycles run, so up to `restart - 1` more.
        M: Optional preconditioner, ideally close to A's inverse (see `preconditioner`).
        callback: Called as `callback(iteration, residual_norm, atol)` before the first
            iteration, at every check that does not stop, and once at the end. With
            `check_every=0`, a kernel launched with (iteration, squared residual, squared
            tolerance) 1-element arrays after every iteration.
        check_every: Iterations between host-side checks of the residual (and callbacks).
            0: never synchronise; all `maxiter` iterations run (the iterate stops changing
            once converged) and the results are device arrays.
        use_cuda_graph: On CUDA devices, replay the iterations as a CUDA graph (A's and
            M's products must then only launch kernels).
        run: True: solve now. False: return the `CG` object, to call repeatedly without
            reallocating its buffers.
        restart: Iterations between restarts, which recompute b - A x and reset the search
            direction (checks happen at cycle ends only). None: no restarts.

    Returns:
        (iterations, residual norm, absolute tolerance) as an int and two floats (for a
        batched operator, the largest over its subproblems); with `check_every=0`,
        (iterations, squared residual norm, squared tolerance) as device arrays (one
        element, or one per subproblem); with `run=False`, the solver object.

    Raises:
        TypeError: Arrays of another dtype than A's scalar type, or a bad `restart`.
        ValueError: Shapes or devices that do not make a square system.
    """
    state = CG(A, b, x, tol=tol, atol=atol, maxiter=maxiter, M=M, callback=callback,
               check_every=check_every, use_cuda_graph=use_cuda_graph, restart=restart)
    return state() if run else state


def cr(A: Any, b: array, x: array, tol: float | None = None, atol: float | None = None,
       maxiter: float | None = 0, M: Any = None, callback: Callable | None = None,
       check_every: int = 10, use_cuda_graph: bool = True, run: bool = True, *,
       restart: int | None = None) -> _Result | CR:
    """Solves a symmetric (positive-definite) system A x = b with the Conjugate Residual
    method (Warp's `warp.optim.linear.cr`), which minimises the residual norm over the
    Krylov space.

    Arguments, tolerances and return values are those of `cg`.

    Args:
        A: The left-hand side (matrix array or `LinearOperator`).
        b: The right-hand side.
        x: The initial guess, overwritten with the solution.
        tol: Relative tolerance on the residual norm.
        atol: Absolute tolerance on the residual norm.
        maxiter: Maximum number of iterations (0 or None: the system size).
        M: Optional preconditioner.
        callback: See `cg`.
        check_every: Iterations between host-side checks (0: none).
        use_cuda_graph: Replay the iterations as a CUDA graph on CUDA devices.
        run: False: return the `CR` object instead of solving.
        restart: Iterations between restarts (None: none).

    Returns:
        (iterations, residual norm, absolute tolerance); see `cg`.
    """
    state = CR(A, b, x, tol=tol, atol=atol, maxiter=maxiter, M=M, callback=callback,
               check_every=check_every, use_cuda_graph=use_cuda_graph, restart=restart)
    return state() if run else state


def bicgstab(A: Any, b: array, x: array, tol: float | None = None, atol: float | None = None,
             maxiter: float | None = 0, M: Any = None, callback: Callable | None = None,
             check_every: int = 10, use_cuda_graph: bool = True,
             is_left_preconditioner: bool = False, run: bool = True) -> _Result | BiCGSTAB:
    """Solves a general (non-symmetric) system A x = b with the BiConjugate Gradient
    Stabilized method (Warp's `warp.optim.linear.bicgstab`).

    Tolerances and return values are those of `cg`; the residual norm returned is the
    recursively updated one.

    Args:
        A: The left-hand side (matrix array or `LinearOperator`).
        b: The right-hand side.
        x: The initial guess, overwritten with the solution.
        tol: Relative tolerance on the residual norm.
        atol: Absolute tolerance on the residual norm.
        maxiter: Maximum number of iterations (0 or None: the system size).
        M: Optional preconditioner, ideally with `M A` (left) or `A M` (right) close to
            the identity.
        callback: See `cg`.
        check_every: Iterations between host-side checks (0: none).
        use_cuda_graph: Replay the iterations as a CUDA graph on CUDA devices.
        is_left_preconditioner: Use `M` on the left (True) or the right (False).
        run: False: return the `BiCGSTAB` object instead of solving.

    Returns:
        (iterations, residual norm, absolute tolerance); see `cg`.
    """
    state = BiCGSTAB(A, b, x, tol=tol, atol=atol, maxiter=maxiter, M=M, callback=callback,
                     check_every=check_every, use_cuda_graph=use_cuda_graph,
                     is_left_preconditioner=is_left_preconditioner)
    return state() if run else state


def gmres(A: Any, b: array, x: array, tol: float | None = None, atol: float | None = None,
          restart: int = 31, maxiter: float | None = 0, M: Any = None,
          callback: Callable | None = None, check_every: int = 31, use_cuda_graph: bool = True,
          is_left_preconditioner: bool = False, run: bool = True) -> _Result | GMRES:
    """Solves a general system A x = b with restarted GMRES[k] (Warp's
    `warp.optim.linear.gmres`).

    Iterations count in whole restart cycles of `restart` Arnoldi steps, so the count is
    a multiple of `restart` and may pass `maxiter` by up to `restart - 1`. The residual
    norm returned is the true |b - A x| (of the unpreconditioned system).

    Args:
        A: The left-hand side (matrix array or `LinearOperator`).
        b: The right-hand side.
        x: The initial guess, overwritten with the solution.
        tol: Relative tolerance on the residual norm.
        atol: Absolute tolerance on the residual norm.
        restart: The k of GMRES[k] (capped at `maxiter`): more needs more memory (k + 1
            vectors) and usually fewer iterations.
        maxiter: Maximum number of iterations (0 or None: the system size).
        M: Optional preconditioner.
        callback: See `cg` (called at cycle ends).
        check_every: Iterations between host-side checks, at least `restart` (0: none).
        use_cuda_graph: Replay the cycles as a CUDA graph on CUDA devices.
        is_left_preconditioner: Use `M` on the left (True) or the right (False).
        run: False: return the `GMRES` object instead of solving.

    Returns:
        (iterations, residual norm, absolute tolerance); see `cg`.
    """
    state = GMRES(A, b, x, tol=tol, atol=atol, restart=restart, maxiter=maxiter, M=M,
                  callback=callback, check_every=check_every, use_cuda_graph=use_cuda_graph,
                  is_left_preconditioner=is_left_preconditioner)
    return state() if run else state
