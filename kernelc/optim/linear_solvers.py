"""The Krylov solvers CG, CR and BiCGSTAB as pre-allocated solver objects.

Each `_run` follows Warp's algorithm step for step (the same products, dot products and
update kernels, in the same order), so iteration counts and residuals match Warp's. Scalars
such as step lengths stay on the device; `kc.where` in the update kernels freezes the
iterate once the residual is below the tolerance, which lets the loop run several
iterations between host checks.
"""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc.optim import linear_kernels as K
from kernelc.optim.linear_operator import LinearOperator
from kernelc.optim.linear_state import (
    LinearSolverState,
    RestartableLinearSolverState,
    initialize_absolute_tolerance,
    repeat_first,
    run_capturable_loop,
)
from kernelc.runtime.array import array


class CG(RestartableLinearSolverState):
    """Pre-allocated Conjugate Gradient solver (Warp's `warp.optim.linear.CG`); see
    `LinearSolverState` for the arguments, and `cg`. `restart` (keyword only): iterations
    between restarts, None for none."""

    name = "cg"

    def _allocate(self) -> None:
        self._configure_restart()
        n, scalar, device = self._n, self._scalar_type, self._device
        self._r_and_z = kc.empty((2, n), dtype=scalar, device=device)
        self._p_and_Ap = kc.empty((2, n), dtype=scalar, device=device)
        self._residuals = kc.empty((2, self._batch_count), dtype=scalar, device=device)
        self._dot = self._make_dot(2)
        # (r, r): one launch computes r.r and r.z against (r, z)
        self._r_repeated = repeat_first(self._r_and_z)

    def _run(self, A: LinearOperator, b: array, x: array,
             M: LinearOperator | None) -> tuple[Any, Any, Any]:
        dot, zero, offsets = self._dot, self._zero, self._offsets
        r_and_z = self._r_repeated if M is None else self._r_and_z
        rz_new = dot.col(0) if M is None else dot.col(1)  # without M, z is r
        r, z = r_and_z[0], r_and_z[1]
        r_norm_sq = dot.col(0)
        p, Ap = self._p_and_Ap[0], self._p_and_Ap[1]
        rz_old, atol_sq = self._residuals[0], self._residuals[1]
        # Not needed by the algorithm; robust against operators that read z or y anyway.
        Ap.zero_()
        z.zero_()
        initialize_absolute_tolerance(b, self._tol, self._atol, dot, atol_sq)
        A.matvec(x, b, r, alpha=-1.0, beta=1.0)

        def update_rr_rz() -> None:
            if M is None:
                dot.compute(r, r)
            else:
                M.matvec(r, z, z, alpha=1.0, beta=0.0)
                dot.compute(self._r_repeated, self._r_and_z)

        update_rr_rz()
        p.assign(z)

        def do_iteration(update_direction: bool = True) -> None:
            self._copy(rz_new, rz_old)
            A.matvec(p, Ap, Ap, alpha=1, beta=0)
            dot.compute(p, Ap, col_offset=1)
            self._launch(K.ratio_step, [atol_sq, r_norm_sq, rz_old, dot.col(1), x, r, p, Ap,
                                         offsets, zero])
            if update_direction:
                update_rr_rz()
                self._launch(K.cg_kernel_2, [atol_sq, r_norm_sq, rz_old, rz_new, z, p, offsets, zero])

        def restart_direction() -> None:
            A.matvec(x, b, r, alpha=-1.0, beta=1.0)
            update_rr_rz()
            self._copy(z, p)

        do_cycle, cycle_size = self._cycle(do_iteration, restart_direction)
        return run_capturable_loop(do_cycle, self._cur_iter_and_condition, r_norm_sq,
                                   self._maxiter, atol_sq, self._callback, self._check_every,
                                   self._use_cuda_graph, cycle_size=cycle_size)


class CR(RestartableLinearSolverState):
    """Pre-allocated Conjugate Residual solver (Warp's `warp.optim.linear.CR`); see
    `LinearSolverState` for the arguments, and `cr`. `restart` (keyword only): iterations
    between restarts, None for none."""

    name = "cr"

    def _allocate(self) -> None:
        self._configure_restart()
        n, scalar, device = self._n, self._scalar_type, self._device
        # Wikipedia's notation, with z = M r and y = M A p
        self._r_and_z = kc.empty((2, n), dtype=scalar, device=device)
        self._r_and_Az = kc.empty((2, n), dtype=scalar, device=device)
        self._y_and_Ap = kc.empty((2, n), dtype=scalar, device=device)
        self._p = kc.empty(n, dtype=scalar, device=device)
        self._residuals = kc.empty((2, self._batch_count), dtype=scalar, device=device)
        self._dot = self._make_dot(2)
        self._r_and_z_repeated = repeat_first(self._r_and_z)
        self._y_and_Ap_repeated = repeat_first(self._y_and_Ap)

    def _run(self, A: LinearOperator, b: array, x: array,
             M: LinearOperator | None) -> tuple[Any, Any, Any]:
        dot, zero, p = self._dot, self._zero, self._p
        offsets = self._offsets
        # Without M, z is r and y is A p.
        r_and_z = self._r_and_z_repeated if M is None else self._r_and_z
        y_and_Ap = self._y_and_Ap_repeated if M is None else self._y_and_Ap
        r_and_Az = self._r_and_Az
        r, z = r_and_z[0], r_and_z[1]
        r_copy, Az = r_and_Az[0], r_and_Az[1]
        y, Ap = y_and_Ap[0], y_and_Ap[1]
        r_norm_sq, zAz_new = dot.col(0), dot.col(1)
        zAz_old, atol_sq = self._residuals[0], self._residuals[1]
        initialize_absolute_tolerance(b, self._tol, self._atol, dot, atol_sq)
        A.matvec(x, b, r, alpha=-1.0, beta=1.0)
        self._y_and_Ap.zero_()

        def update_z() -> None:
            if M is not None:
                M.matvec(r, z, z, alpha=1.0, beta=0.0)

        def update_rr_zAz() -> None:
            A.matvec(z, Az, Az, alpha=1, beta=0)
            self._copy(r, r_copy)
            dot.compute(r_and_z, r_and_Az)

        if M is not None:
            z.zero_()
        update_z()
        update_rr_zAz()
        p.assign(z)
        Ap.assign(Az)

        def do_iteration(update_direction: bool = True) -> None:
            self._copy(zAz_new, zAz_old)
            if M is not None:
                M.matvec(Ap, y, y, alpha=1.0, beta=0.0)
            dot.compute(Ap, y, col_offset=1)
            y_Ap = dot.col(1)
            if M is None:  # the first update is CG's
                self._launch(K.ratio_step, [atol_sq, r_norm_sq, zAz_old, y_Ap, x, r, p, Ap,
                                             offsets, zero])
            else:
                self._launch(K.cr_kernel_1, [atol_sq, r_norm_sq, zAz_old, y_Ap, x, r, z, p, Ap,
                                             y, offsets, zero])
            if update_direction:
                update_rr_zAz()
                self._launch(K.cr_kernel_2, [atol_sq, r_norm_sq, zAz_old, zAz_new, z, p, Az, Ap,
                                             offsets, zero])

        def restart_direction() -> None:
            A.matvec(x, b, r, alpha=-1.0, beta=1.0)
            update_z()
            update_rr_zAz()
            self._copy(z, p)
            self._copy(Az, Ap)

        do_cycle, cycle_size = self._cycle(do_iteration, restart_direction)
        return run_capturable_loop(do_cycle, self._cur_iter_and_condition, r_norm_sq,
                                   self._maxiter, atol_sq, self._callback, self._check_every,
                                   self._use_cuda_graph, cycle_size=cycle_size)


class BiCGSTAB(LinearSolverState):
    """Pre-allocated BiConjugate Gradient Stabilized solver (Warp's
    `warp.optim.linear.BiCGSTAB`); see `LinearSolverState` for the arguments, and
    `bicgstab`. Whether `M` is given is fixed at construction.

    Args:
        is_left_preconditioner: Use `M` as a left (True) or right (False) preconditioner.
    """

    name = "bicgstab"

    def __init__(self, A: Any, b: array, x: array, tol: float | None = None,
                 atol: float | None = None, maxiter: float | None = 0, M: Any = None,
                 callback: Any = None, check_every: int = 10, use_cuda_graph: bool = True,
                 is_left_preconditioner: bool = False) -> None:
        self._is_left_preconditioner = is_left_preconditioner
        super().__init__(A, b, x, tol=tol, atol=atol, maxiter=maxiter, M=M, callback=callback,
                         check_every=check_every, use_cuda_graph=use_cuda_graph)

    def _allocate(self) -> None:
        n, scalar, device = self._n, self._scalar_type, self._device
        # Wikipedia's notation
        self._r_and_r0 = kc.empty((2, n), dtype=scalar, device=device)
        self._p = kc.empty(n, dtype=scalar, device=device)
        self._v = kc.empty(n, dtype=scalar, device=device)
        self._t = kc.empty(n, dtype=scalar, device=device)
        self._r_repeated = repeat_first(self._r_and_r0)
        if self._M is not None:
            self._y = kc.zeros(n, dtype=scalar, device=device)
            self._z = kc.zeros(n, dtype=scalar, device=device)
            left = self._is_left_preconditioner
            self._Mt = kc.zeros(n, dtype=scalar, device=device) if left else self._t
        else:  # y = M p is p, z = M r is r
            self._y, self._z, self._Mt = self._p, self._r_and_r0[0], self._t
        self._dot = self._make_dot(5)
        self._atol_sq = kc.empty(self._batch_count, dtype=scalar, device=device)

    def _check_compatible(self, A: LinearOperator, b: array, x: array,
                          M: LinearOperator | None) -> None:
        super()._check_compatible(A, b, x, M)
        if (M is None) != (self._M is None):
            raise ValueError("BiCGSTAB requires M to be consistently provided between "
                             "construction and call (both None or both non-None)")

    def _run(self, A: LinearOperator, b: array, x: array,
             M: LinearOperator | None) -> tuple[Any, Any, Any]:
        dot, zero, atol_sq = self._dot, self._zero, self._atol_sq
        offsets = self._offsets
        r_and_r0, p, v, t = self._r_and_r0, self._p, self._v, self._t
        r, r0 = r_and_r0[0], r_and_r0[1]
        y, z, Mt = self._y, self._z, self._Mt
        left = M is not None and self._is_left_preconditioner
        r_norm_sq, rho = dot.col(0), dot.col(1)
        initialize_absolute_tolerance(b, self._tol, self._atol, dot, atol_sq)
        A.matvec(x, b, r, alpha=-1.0, beta=1.0)
        dot.compute(r, r, col_offset=0)
        p.assign(r)
        r0.assign(r)
        rho.assign(r_norm_sq)
        v.zero_()
        t.zero_()

        def do_iteration() -> None:
            if M is not None:
                M.matvec(p, y, y, alpha=1.0, beta=0.0)
            A.matvec(y, v, v, alpha=1, beta=0)
            dot.compute(r0, v, col_offset=2)
            r0v = dot.col(2)
            # x += alpha y, r -= alpha v with alpha = rho / (r0 . v)
            self._launch(K.ratio_step, [atol_sq, r_norm_sq, rho, r0v, x, r, y, v, offsets, zero])
            dot.compute(r, r, col_offset=0)
            if M is not None:
                M.matvec(r, z, z, alpha=1.0, beta=0.0)
            A.matvec(z, t, t, alpha=1, beta=0)
            if left:
                M.matvec(t, Mt, Mt, alpha=1.0, beta=0.0)
                dot.compute(z, Mt, col_offset=3)
                dot.compute(Mt, Mt, col_offset=4)
            else:
                dot.compute(r, t, col_offset=3)
                dot.compute(t, t, col_offset=4)
            st, tt = dot.col(3), dot.col(4)
            # x += omega z, r -= omega t with omega = st / tt
            self._launch(K.ratio_step, [atol_sq, r_norm_sq, st, tt, x, r, z, t, offsets, zero])
            dot.compute(r_and_r0, self._r_repeated, col_offset=0)  # r.r and rho = r0.r
            # p = r + beta (p - omega v)
            self._launch(K.bicgstab_kernel_3, [atol_sq, r_norm_sq, rho, r0v, st, tt, p, r, v,
                                               offsets, zero])

        return run_capturable_loop(do_iteration, self._cur_iter_and_condition, r_norm_sq,
                                   self._maxiter, atol_sq, self._callback, self._check_every,
                                   self._use_cuda_graph)
