"""`warp.fem.linalg`: `array_axpy` on arrays (with its adjoint on a tape), and the kernel
funcs `symmetric_eigen` (from `linalg_funcs.py`), `generalized_inner`,
`generalized_outer`, `symmetric_part`, `skew_part` and `spherical_part` (from
`linalg_products.py`), `inverse_qr`, `householder_qr_decomposition`,
`householder_make_hessenberg`, `solve_triangular`, `symmetric_eigenvalues_qr` and
`tridiagonal_symmetric_eigenvalues_qr` (from `linalg_qr.py`)."""

from typing import Any

import kernelc as kc
from kernelc.fem.linalg_funcs import symmetric_eigen
from kernelc.fem.linalg_products import (
    generalized_inner,
    generalized_outer,
    skew_part,
    spherical_part,
    symmetric_part,
)
from kernelc.fem.linalg_qr import (
    householder_make_hessenberg,
    householder_qr_decomposition,
    inverse_qr,
    solve_triangular,
    symmetric_eigenvalues_qr,
    tridiagonal_symmetric_eigenvalues_qr,
)
from kernelc.runtime.array_grad import active_tape

__all__ = ["array_axpy", "generalized_inner", "generalized_outer", "householder_make_hessenberg",
           "householder_qr_decomposition", "inverse_qr", "skew_part", "solve_triangular",
           "spherical_part", "symmetric_eigen", "symmetric_eigenvalues_qr", "symmetric_part",
           "tridiagonal_symmetric_eigenvalues_qr"]


@kc.kernel(enable_backward=False)
def _array_axpy_kernel(x: kc.array(dtype=Any), y: kc.array(dtype=Any), alpha: Any, beta: Any):
    i = kc.tid()
    y[i] = beta * y[i] + alpha * y.dtype(x[i])


def array_axpy(x: Any, y: Any, alpha: float = 1.0, beta: float = 1.0) -> None:
    """`y = alpha * x + beta * y`, element-wise, in y's type (Warp's `fem.linalg.array_axpy`).

    Args:
        x: 1-d array, converted element-wise to y's type.
        y: 1-d array updated in place.
        alpha: Scale of x.
        beta: Scale of y.

    Raises:
        ValueError: Shapes or devices that differ.
    """
    if x.shape != y.shape or x.device != y.device:
        raise ValueError("x and y arrays must have the same shape and device")
    if y.ndim != 1:
        raise NotImplementedError("array_axpy supports 1-d arrays only")
    scalar = kc.types.as_type(y.dtype)
    scalar = getattr(scalar, "dtype", scalar)  # vectors and matrices scale by their scalar
    kc.launch(_array_axpy_kernel, dim=y.shape[0], device=y.device,
              inputs=[x, y, scalar(alpha), scalar(beta)], record_tape=False)
    tape = active_tape()
    if tape is not None and (x.requires_grad or y.requires_grad):
        # y is updated in place, so the adjoint is written by hand (as Warp records it):
        # x.grad += alpha y.grad, then y.grad *= beta.
        def backward() -> None:
            array_axpy(y.grad, x.grad, alpha=alpha, beta=1.0)
            if beta != 1.0:
                array_axpy(y.grad, y.grad, alpha=0.0, beta=beta)

        tape.record_func(backward, arrays=[x, y])
