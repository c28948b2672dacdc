"""GMRES[k]: the restarted Generalized Minimal Residual solver, as a pre-allocated object.

Each restart cycle builds an orthonormal basis V of the Krylov space of the (preconditioned)
residual with k Arnoldi steps (classical Gram-Schmidt, the projections computed as k dot
products in one launch), solves the small least-squares problem on the Hessenberg matrix H
with Givens rotations (one thread), updates x and recomputes the true residual. The steps
and their order are Warp's, so results match Warp's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.optim import linear_kernels as K
from kernelc.optim.linear_operator import LinearOperator
from kernelc.optim.linear_state import (
    LinearSolverState,
    check_positive_int,
    dtype_epsilon,
    initialize_absolute_tolerance,
    run_capturable_loop,
    view,
)
from kernelc.runtime.array import array


class GMRES(LinearSolverState):
    """Pre-allocated restarted GMRES solver (Warp's `warp.optim.linear.GMRES`); see
    `LinearSolverState` for the shared arguments, and `gmres`.

    Args:
        restart: The k of GMRES[k]: Arnoldi steps per cycle (capped at `maxiter`); memory
            grows with it (k + 1 basis vectors).
        is_left_preconditioner: Use `M` as a left (True) or right (False) preconditioner.
    """

    name = "gmres"

    def __init__(self, A: Any, b: array, x: array, tol: float | None = None,
                 atol: float | None = None, restart: int = 31, maxiter: float | None = 0,
                 M: Any = None, callback: Any = None, check_every: int = 31,
                 use_cuda_graph: bool = True, is_left_preconditioner: bool = False) -> None:
        self._restart = check_positive_int(self.name, "restart", restart)
        self._is_left_preconditioner = is_left_preconditioner
        super().__init__(A, b, x, tol=tol, atol=atol, maxiter=maxiter, M=M, callback=callback,
                         check_every=check_every, use_cuda_graph=use_cuda_graph)

    def _allocate(self) -> None:
        n, scalar, device = self._n, self._scalar_type, self._device
        restart = max(1, min(self._restart, self._maxiter))
        self._restart = restart
        if self._check_every > 0:
            self._check_every = max(restart, self._check_every)
        # Warp passes eps**2 as a float32 kernel argument; round it the same way.
        self._pivot_tolerance = scalar(np.float32(dtype_epsilon(scalar) ** 2))
        batches = self._batch_count
        self._r = kc.empty(n, dtype=scalar, device=device)
        self._w = kc.empty(n, dtype=scalar, device=device)
        # One Hessenberg matrix and least-squares solution per subproblem; H[k, j] holds
        # the subproblems' coefficients side by side, so that a column of projections is a
        # (j + 1, subproblems) block that the dot products fill directly.
        self._H = kc.zeros((restart + 1, restart, batches), dtype=scalar, device=device)
        self._y = kc.empty((batches, restart + 1), dtype=scalar, device=device)
        self._V = kc.zeros((restart + 1, n), dtype=scalar, device=device)
        self._beta = kc.empty(batches, dtype=scalar, device=device)
        self._atol_sq = kc.empty(batches, dtype=scalar, device=device)
        self._dot = self._make_dot(restart + 1)
        w = self._w
        self._w_repeated = view(w, (restart + 1, n), (0, w.strides[0]))
        self._V_rows = [self._V[k] for k in range(restart + 1)]
        H = self._H
        self._H_columns = [view(H, (j + 1, batches), (H.strides[0], H.strides[2]),
                                j * H.strides[1]) for j in range(restart)]
        # H[j + 1, j]: where the norm of the new basis vector goes, per subproblem.
        self._H_subdiagonal = [H[j + 1][j] for j in range(restart)]

    def _run(self, A: LinearOperator, b: array, x: array,
             M: LinearOperator | None) -> tuple[Any, Any, Any]:
        restart, zero, dot = self._restart, self._zero, self._dot
        r, w, H, y, V, beta = self._r, self._w, self._H, self._y, self._V, self._beta
        left = M is not None and self._is_left_preconditioner
        r_norm_sq = dot.col(0)
        initialize_absolute_tolerance(b, self._tol, self._atol, dot, self._atol_sq)
        A.matvec(x, b, r, alpha=-1.0, beta=1.0)
        dot.compute(r, r, col_offset=0)
        w.zero_()

        offsets = self._offsets

        def normalize(src: array, dest: array, norm_out: array) -> None:
            # dest = src / |src| per subproblem (|src|^2 is column 0 of the dot); |src| goes
            # to norm_out, one per subproblem.
            self._launch(K.gmres_normalize_kernel, [src, dest, dot.col(0), norm_out, offsets,
                                                    zero])

        def do_arnoldi_iteration(j: int) -> None:
            v_j, v_next = self._V_rows[j], self._V_rows[j + 1]
            if M is None:
                A.matvec(v_j, w, w, alpha=1, beta=0)
            elif left:
                A.matvec(v_j, v_next, v_next, alpha=1, beta=0)
                M.matvec(v_next, w, w, alpha=1, beta=0)
            else:
                M.matvec(v_j, v_next, v_next, alpha=1, beta=0)
                A.matvec(v_next, w, w, alpha=1, beta=0)
            dot.compute(self._w_repeated[:j + 1], V[:j + 1], out=self._H_columns[j])
            self._launch(K.gmres_arnoldi_axpy_kernel, [j, V, w, H, offsets, zero])
            dot.compute(w, w)
            normalize(w, v_next, self._H_subdiagonal[j])

        def do_restart_cycle() -> None:
            if left:
                M.matvec(r, w, w, alpha=1, beta=0)
                rh = w
            else:
                rh = r
            dot.compute(rh, rh)
            normalize(rh, self._V_rows[0], beta)
            for j in range(restart):
                do_arnoldi_iteration(j)
            self._launch(K.gmres_least_squares_kernel,
                         [restart, self._pivot_tolerance, beta, H, y, zero], self._batch_count)
            if M is None or left:
                self._launch(K.gmres_update_x_kernel,
                             [restart, self._scalar_type(1), y, V, x, offsets])
            else:  # x += M (V y)
                self._launch(K.gmres_update_x_kernel, [restart, zero, y, V, w, offsets])
                M.matvec(w, r, r, alpha=1, beta=0)
                self._launch(K.add_kernel, [r, x, offsets])
            self._copy(b, r)
            A.matvec(x, b, r, alpha=-1.0, beta=1.0)
            dot.compute(r, r)

        return run_capturable_loop(do_restart_cycle, self._cur_iter_and_condition, r_norm_sq,
                                   self._maxiter, self._atol_sq, self._callback,
                                   self._check_every, self._use_cuda_graph,
                                   cycle_size=restart)
