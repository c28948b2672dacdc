"""What the iterative solvers share: tolerances, the iteration loops, operand checks, and
`LinearSolverState`, the base of the pre-allocated solver objects (the dot products are in
`linear_dot`)."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import kernelc as kc
from kernelc import types as T
from kernelc.frontend.decorators import Kernel
from kernelc.optim import linear_kernels as K
from kernelc.optim.linear_dot import BatchedDot, Dot, launch, make_dot, view
from kernelc.optim.linear_operator import (
    SCALAR_TYPES,
    LinearOperator,
    _scalars,
    aslinearoperator,
    scalar_rows,
)
from kernelc.runtime.array import array

__all__ = ["BatchedDot", "Dot", "LinearSolverState", "RestartableLinearSolverState",
           "check_positive_int", "check_problem", "dtype_epsilon", "get_tolerances",
           "initialize_absolute_tolerance", "launch", "repeat_first", "run_capturable_loop",
           "run_solver_loop", "view"]


def repeat_first(arr: array) -> array:
    """A view of a 2-d array whose every row is its first row."""
    return view(arr, arr.shape, (0, arr.strides[1]))


def dtype_epsilon(scalar: Any) -> float:
    """Warp's nominal precision of a scalar type, from which default tolerances derive."""
    if scalar == T.float64:
        return 1.0e-16
    if scalar == T.float16:
        return 1.0e-4
    return 1.0e-8


def get_tolerances(scalar: Any, tol: float | None, atol: float | None) -> tuple[float, float]:
    """(relative, absolute) tolerances: a missing one takes the other's value, both missing
    eps ** 0.75, and the absolute one is at least eps ** 2.25."""
    eps = dtype_epsilon(scalar)
    if tol is None and atol is None:
        tol = atol = eps ** (3 / 4)
    elif tol is None:
        tol = atol
    elif atol is None:
        atol = tol
    return tol, max(atol, eps ** (9 / 4))


def initialize_absolute_tolerance(b: array, tol: float | None, atol: float | None,
                                  dot: Dot | BatchedDot, atol_sq: array) -> None:
    """atol_sq = max(tol * |b|, atol) ** 2 per subproblem, on the device (uses the dot's
    column 0)."""
    scalar = atol_sq.dtype
    dot.compute(b, b)
    rtol, atol = get_tolerances(scalar, tol, atol)
    launch(K.initialize_tolerance_kernel, atol_sq.shape[0],
           [scalar(rtol), scalar(atol), dot.col(0), atol_sq], b.device)


def run_capturable_loop(do_cycle: Callable[[], None], cur_iter_and_condition: array,
                        r_norm_sq: array, maxiter: int, atol_sq: array, callback: Any,
                        check_every: int, use_cuda_graph: bool,
                        cycle_size: int = 1) -> tuple[Any, Any, Any]:
    """Runs the cycles: with host checks every `check_every` iterations, or (0) with no
    host synchronisation at all, returning device arrays."""
    device = atol_sq.device
    if check_every > 0:
        return run_solver_loop(do_cycle, cycle_size, r_norm_sq, maxiter, atol_sq, callback,
                               check_every, use_cuda_graph, device)
    cur_iter_and_condition.fill_(-cycle_size)
    cur_iter = cur_iter_and_condition[0:1]
    condition = cur_iter_and_condition[1:2]
    update = [int(maxiter), cycle_size, cur_iter, r_norm_sq, atol_sq, condition]
    if callback is not None and not isinstance(callback, Kernel):
        raise TypeError("with check_every=0 the callback must be a kernel taking (cur_iter, "
                        "r_norm_sq, atol_sq) arrays; got a Python callable")

    def update_and_report() -> None:
        launch(K.update_condition_kernel, 1, update, device)
        if callback is not None:
            launch(callback, 1, [cur_iter, r_norm_sq, atol_sq], device)

    def cycle() -> None:
        do_cycle()
        update_and_report()

    update_and_report()
    # kernelc has no conditional graphs: like Warp without them, run all maxiter iterations
    # (the update kernels stop changing x once the residual is below the tolerance).
    graph = None
    for count in range(0, maxiter, cycle_size):
        # The first cycle runs outside a capture: it compiles and loads the kernels.
        if device.is_cuda and use_cuda_graph and count > 0:
            if graph is None:
                with kc.ScopedCapture(device=device, force_module_load=False) as capture:
                    cycle()
                graph = capture.graph
            kc.capture_launch(graph)
        else:
            cycle()
    return cur_iter, r_norm_sq, atol_sq


def run_solver_loop(do_cycle: Callable[[], None], cycle_size: int, r_norm_sq: array,
                    maxiter: int, atol_sq: array, callback: Callable | None, check_every: int,
                    use_cuda_graph: bool, device: Any) -> tuple[int, float, float]:
    """Warp's host loop: checks convergence (and calls `callback(iteration, residual,
    atol)`) before the first cycle, every `check_every` iterations, and at the end.

    With several subproblems, the solve stops once each is within its own tolerance; the
    residual and tolerance reported are the largest ones."""
    atol_sq_host = atol_sq.numpy()
    atol = math.sqrt(float(atol_sq_host.max()))
    check_every = max(check_every, cycle_size)
    cur_iter = 0
    r_norm_sq_host = r_norm_sq.numpy()
    err = math.sqrt(float(r_norm_sq_host.max()))
    if callback is not None:
        callback(cur_iter, err, atol)
    if (r_norm_sq_host <= atol_sq_host).all():
        return cur_iter, err, atol
    graph = None
    while True:
        # The first cycle runs outside a capture: it compiles and loads the kernels.
        if device.is_cuda and use_cuda_graph and cur_iter > 0:
            if graph is None:
                with kc.ScopedCapture(device=device, force_module_load=False) as capture:
                    do_cycle()
                graph = capture.graph
            kc.capture_launch(graph)
        else:
            do_cycle()
        cur_iter += cycle_size
        if cur_iter >= maxiter:
            break
        if cur_iter % check_every < cycle_size:
            r_norm_sq_host = r_norm_sq.numpy()
            if (r_norm_sq_host <= atol_sq_host).all():
                break
            if callback is not None:
                callback(cur_iter, math.sqrt(float(r_norm_sq_host.max())), atol)
    err = math.sqrt(float(r_norm_sq.numpy().max()))
    if callback is not None:
        callback(cur_iter, err, atol)
    return cur_iter, err, atol


def _check_vector(name: str, what: str, v: Any, scalar: Any, n: int, device: Any) -> None:
    if not isinstance(v, array) or v.ptr is None:
        raise TypeError(f"{name}: {what} must be a kc.array with memory, got "
                        f"{type(v).__name__}")
    if v.ndim != 1:
        raise ValueError(f"{name}: {what} must be a 1-d array, got shape {v.shape}")
    if v.dtype != scalar:
        raise TypeError(f"{name}: {what} must hold {scalar!r} values like the matrix, got "
                        f"{v.dtype!r}")
    if v.shape[0] != n:
        raise ValueError(f"{name}: {what} must have shape ({n},) to match the {n}x{n} "
                         f"matrix, got {v.shape}")
    if v.device != device:
        raise ValueError(f"{name}: {what} is on {v.device}, the matrix on {device}")


def _check_operator(name: str, what: str, op: LinearOperator, n: int | None = None) -> int:
    """The scalar size of a square (or diagonal) operator; raises for other operators."""
    shape = tuple(op.shape)
    if op.scalar_type not in SCALAR_TYPES:
        raise TypeError(f"{name}: {what} must hold float16, float32 or float64 values, got "
                        f"{op.dtype!r}")
    if len(shape) == 2 and shape[0] != shape[1] or len(shape) not in (1, 2):
        raise ValueError(f"{name}: {what} must be square, got shape {shape}")
    rows = scalar_rows(op)
    if n is not None and rows != n:
        raise ValueError(f"{name}: {what} has shape {shape}, the system is {n}x{n}")
    return rows


def check_problem(name: str, A: LinearOperator, b: Any, x: Any, M: LinearOperator | None) -> int:
    """Raises clear errors for operands that do not make a square system; returns its size."""
    n = _check_operator(name, "A", A)
    if n == 0:
        raise ValueError(f"{name}: the system is empty (A has shape {tuple(A.shape)})")
    _check_vector(name, "b", b, A.scalar_type, n, A.device)
    _check_vector(name, "x", x, A.scalar_type, n, A.device)
    if M is not None:
        _check_operator(name, "M", M, n)
        if M.scalar_type != A.scalar_type:
            raise TypeError(f"{name}: M holds {M.scalar_type!r} values, A {A.scalar_type!r}")
        if M.device != A.device:
            raise ValueError(f"{name}: M is on {M.device}, A on {A.device}")
    return n


def check_positive_int(name: str, what: str, value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name}: {what} must be an integer, got {value!r}")
    try:
        value = operator.index(value)
    except TypeError as error:
        raise TypeError(f"{name}: {what} must be an integer, got {value!r}") from error
    if value < 1:
        raise ValueError(f"{name}: {what} must be positive, got {value}")
    return value


def _scalar_views(A: LinearOperator, v: Any) -> Any:
    """Warp accepts a block system's unknowns as arrays of vectors: the solvers work on
    their scalar views, which share their memory (anything else is left for the checks)."""
    if isinstance(v, array) and v.ptr is not None and A.scalar_type in SCALAR_TYPES:
        return _scalars(v, A.scalar_type, scalar_rows(A))
    return v


class LinearSolverState:
    """Pre-allocated state of an iterative solver (Warp's
    `warp.optim.linear.LinearSolverState`): the temporary buffers and the problem (`A`, `b`,
    `x`, `M`). Calling it runs the solver, optionally on new operands of the same shape,
    dtype and device. Make one with `CG`, `CR`, `BiCGSTAB` or `GMRES`, or with a solver
    function's `run=False`.

    Args:
        A: The system's left-hand side (see `aslinearoperator`).
        b: The right-hand side.
        x: The initial guess, overwritten with the solution.
        tol: Relative tolerance on the residual norm, as a fraction of |b|.
        atol: Absolute tolerance on the residual norm.
        maxiter: Maximum number of iterations (0 or None: the system size, divided by the
            number of subproblems of a batched `A`).
        M: Optional preconditioner.
        callback: Called as `callback(iteration, residual_norm, atol)` at each check.
        check_every: Iterations between convergence checks (0: never synchronise).
        use_cuda_graph: Replay the iterations as a CUDA graph on CUDA devices.
    """

    name = "solver"

    def __init__(self, A: Any, b: array, x: array, tol: float | None = None,
                 atol: float | None = None, maxiter: float | None = 0, M: Any = None,
                 callback: Callable | None = None, check_every: int = 10,
                 use_cuda_graph: bool = True) -> None:
        self._A = aslinearoperator(A)
        self._M = aslinearoperator(M)
        # Warp accepts a block system's unknowns as arrays of vectors: solve on their scalar
        # views, which share their memory.
        b, x = _scalar_views(self._A, b), _scalar_views(self._A, x)
        self._n = check_problem(self.name, self._A, b, x, self._M)
        if isinstance(check_every, bool) or operator.index(check_every) < 0:
            raise ValueError(f"{self.name}: check_every must be a non-negative integer, got "
                             f"{check_every!r}")
        self._b, self._x = b, x
        self._tol, self._atol = tol, atol
        self._callback = callback
        self._check_every = operator.index(check_every)
        self._use_cuda_graph = use_cuda_graph
        self._device = self._A.device
        self._scalar_type = self._A.scalar_type
        self._zero = self._scalar_type(0)
        self._batch_count = self._A.batch_count
        self._max_batch_length = self._A.max_batch_length
        # The update kernels find each dof's subproblem in these offsets; an unbatched
        # system is one subproblem covering every dof.
        offsets = self._A.batch_offsets
        if offsets is not None and offsets.device != self._device:
            raise ValueError(f"{self.name}: A.batch_offsets is on {offsets.device}, A on "
                             f"{self._device}")
        self._batch_offsets = offsets
        self._offsets = offsets if offsets is not None else kc.array(
            [0, self._n], dtype=kc.int32, device=self._device)
        # As in Warp, the default is the scalar size of one (average) subproblem.
        self._maxiter = int(self._n // self._batch_count if maxiter is None or maxiter == 0
                            else maxiter)
        self._cur_iter_and_condition = kc.empty(2, dtype=kc.int32, device=self._device)
        self._allocate()

    def _make_dot(self, columns: int) -> Dot | BatchedDot:
        return make_dot(self._n, self._scalar_type, self._device, columns, self._batch_offsets,
                        self._max_batch_length)

    def _allocate(self) -> None:
        raise NotImplementedError

    def _run(self, A: LinearOperator, b: array, x: array,
             M: LinearOperator | None) -> tuple[Any, Any, Any]:
        raise NotImplementedError

    def _launch(self, kernel: Kernel, inputs: list[Any], dim: Any = None) -> None:
        launch(kernel, self._n if dim is None else dim, inputs, self._device)

    def _copy(self, src: array, dest: array) -> None:
        self._launch(K.copy_kernel, [src, dest], src.shape[0])

    def _check_compatible(self, A: LinearOperator, b: array, x: array,
                          M: LinearOperator | None) -> None:
        check_problem(self.name, A, b, x, M)
        if A is self._A:
            return
        if (tuple(A.shape) != tuple(self._A.shape) or A.dtype != self._A.dtype
                or A.device != self._A.device):
            raise ValueError(f"{self.name}: A must match the operator the solver was made for "
                             f"(shape {self._A.shape}, {self._A.dtype!r}, {self._A.device})")
        # The buffers and reductions are laid out for the construction's subproblems.
        if A.batch_count != self._batch_count:
            raise ValueError(f"{self.name}: Incompatible A.batch_count: expected "
                             f"{self._batch_count}, got {A.batch_count}")
        if A.batch_offsets is not self._batch_offsets:
            raise ValueError(f"{self.name}: A.batch_offsets must be the same array as at "
                             f"construction")
        if A.max_batch_length != self._max_batch_length:
            raise ValueError(f"{self.name}: for batched systems, A.max_batch_length must "
                             f"match the value used at construction "
                             f"({self._max_batch_length}), got {A.max_batch_length}")

    def __call__(self, A: Any = None, b: array | None = None, x: array | None = None,
                 M: Any = None) -> tuple[Any, Any, Any]:
        """Runs the solver; operands left as None are those given at construction.

        Returns:
            (iterations, residual norm, absolute tolerance) as host numbers; with
            `check_every=0`, as device arrays (iterations, squared residual norm, squared
            tolerance).
        """
        A_op = self._A if A is None else aslinearoperator(A)
        M_op = self._M if M is None else aslinearoperator(M)
        b = self._b if b is None else _scalar_views(A_op, b)
        x = self._x if x is None else _scalar_views(A_op, x)
        self._check_compatible(A_op, b, x, M_op)
        return self._run(A_op, b, x, M_op)


class RestartableLinearSolverState(LinearSolverState):
    """CG's and CR's optional restarts: every `restart` iterations, the residual is
    recomputed as b - A x and the search direction reset."""

    def __init__(self, A: Any, b: array, x: array, tol: float | None = None,
                 atol: float | None = None, maxiter: float | None = 0, M: Any = None,
                 callback: Callable | None = None, check_every: int = 10,
                 use_cuda_graph: bool = True, *, restart: int | None = None) -> None:
        if restart is not None:
            restart = check_positive_int(self.name, "restart", restart)
        self._restart = restart
        super().__init__(A, b, x, tol=tol, atol=atol, maxiter=maxiter, M=M, callback=callback,
                         check_every=check_every, use_cuda_graph=use_cuda_graph)

    def _configure_restart(self) -> None:
        if self._restart is not None:
            self._restart = max(1, min(self._restart, self._maxiter))
            if self._check_every > 0:
                self._check_every = max(self._check_every, self._restart)

    def _cycle(self, do_iteration: Callable[..., None],
               restart_direction: Callable[[], None]) -> tuple[Callable[[], None], int]:
        """The cycle the loop runs, and how many iterations it counts for."""
        restart = self._restart
        if restart is None:
            return do_iteration, 1

        def do_restart_cycle() -> None:
            for _ in range(restart - 1):
                do_iteration()
            # The explicit residual replaces the last recursive update, then the search
            # direction restarts from it.
            do_iteration(update_direction=False)
            restart_direction()

        return do_restart_cycle, restart
