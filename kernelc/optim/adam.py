"""`Adam`: adaptive moment estimation, with bias-corrected first and second moments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import kernelc as kc
from kernelc import types as T
from kernelc.optim._common import (
    check_grads,
    check_params,
    check_step,
    flat,
    fresh_buffer,
    scalar_of,
    typed,
)
from kernelc.runtime.array import array

# Three kernels because Warp's three differ in their rounding: float16 parameters keep
# float32 moments, and for vectors Warp multiplies lr into the quotient, not the numerator.
# The operations and their order are Warp's, so float32 results agree bit for bit.


@kc.kernel
def adam_step_kernel_scalar(g: kc.array(dtype=Any), m: kc.array(dtype=Any),
                            v: kc.array(dtype=Any), lr: Any, beta1: Any, beta2: Any, t: Any,
                            eps: Any, params: kc.array(dtype=Any)):
    i = kc.tid()
    m[i] = beta1 * m[i] + (1.0 - beta1) * g[i]
    v[i] = beta2 * v[i] + (1.0 - beta2) * g[i] * g[i]
    mhat = m[i] / (1.0 - kc.pow(beta1, t + 1.0))
    vhat = v[i] / (1.0 - kc.pow(beta2, t + 1.0))
    params[i] = params[i] - lr * mhat / (kc.sqrt(vhat) + eps)


@kc.kernel
def adam_step_kernel_vector(g: kc.array(dtype=Any), m: kc.array(dtype=Any),
                            v: kc.array(dtype=Any), lr: Any, beta1: Any, beta2: Any, t: Any,
                            eps: Any, params: kc.array(dtype=Any)):
    i = kc.tid()
    m[i] = beta1 * m[i] + (1.0 - beta1) * g[i]
    v[i] = beta2 * v[i] + (1.0 - beta2) * kc.cw_mul(g[i], g[i])
    mhat = m[i] / (1.0 - kc.pow(beta1, t + 1.0))
    vhat = v[i] / (1.0 - kc.pow(beta2, t + 1.0))
    denominator = vhat
    for k in range(len(vhat)):
        denominator[k] = kc.sqrt(vhat[k]) + eps
    params[i] = params[i] - lr * kc.cw_div(mhat, denominator)


@kc.kernel
def adam_step_kernel_half(g: kc.array(dtype=kc.float16), m: kc.array(dtype=float),
                          v: kc.array(dtype=float), lr: float, beta1: float, beta2: float,
                          t: float, eps: float, params: kc.array(dtype=kc.float16)):
    i = kc.tid()
    grad = float(g[i])
    m[i] = beta1 * m[i] + (1.0 - beta1) * grad
    v[i] = beta2 * v[i] + (1.0 - beta2) * grad * grad
    mhat = m[i] / (1.0 - kc.pow(beta1, t + 1.0))
    vhat = v[i] / (1.0 - kc.pow(beta2, t + 1.0))
    params[i] = params[i] - kc.float16(lr * mhat / (kc.sqrt(vhat) + eps))


def moment_dtype(dtype: T.Type) -> T.Type:
    """The dtype of the moment buffers for parameters of `dtype` (float16 ones get float32
    moments, as in Warp); raises RuntimeError for dtypes Adam does not update."""
    if dtype == kc.float16:
        return kc.float32
    if isinstance(dtype, T.ScalarType) and dtype.is_float:
        return dtype
    if (isinstance(dtype, T.VectorType) and dtype.kind == "vec"
            and dtype.dtype in (kc.float32, kc.float64)):
        return dtype
    raise RuntimeError(f"Unsupported dtype for the Adam optimizer: {dtype!r} (parameters hold "
                       f"float16/32/64 scalars or float32/64 vectors)")


class Adam:
    """The Adam optimiser (Warp's `warp.optim.Adam`, after Kingma and Ba, 2015).

    Each `step(grad)` updates every parameter array in place, element by element (component
    by component for vectors), with `t` the number of steps taken before:

        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        param = param - lr * (m / (1 - beta1 ** (t + 1))) / (sqrt(v / (1 - beta2 ** (t + 1))) + eps)

    Parameters may hold float16 (with float32 moments), float32 or float64 scalars, or
    float32/float64 vectors of any length (Warp 1.19 takes float16, float32 and `vec3`).

    Args:
        params: The arrays to optimise, or None to set them later with `set_params`.
        lr: Learning rate.
        betas: Decay rates `(beta1, beta2)` of the first and second moment averages.
        eps: Added to the denominator, against division by zero.

    Attributes:
        params (list[array] | None): The parameter arrays.
        m (list[array]): First moments, one buffer per parameter (zeros at first).
        v (list[array]): Second moments, one buffer per parameter (zeros at first).
        t (int): The number of steps taken since the last reset.
    """

    def __init__(self, params: Sequence[array] | None = None, lr: float = 0.001,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-08) -> None:
        self.m: list[array] = []
        self.v: list[array] = []
        self.set_params(params)
        self.lr = lr
        self.beta1 = betas[0]
        self.beta2 = betas[1]
        self.eps = eps
        self.t = 0

    def set_params(self, params: Sequence[array] | None) -> None:
        """Sets the arrays to optimise and allocates their moment buffers.

        Buffers that still fit their parameter (same shape, matching dtype) are kept, with
        their contents; None leaves the buffers as they are.

        Args:
            params: A list of arrays, or None.
        """
        checked = check_params(params, "Adam")
        self.params = checked
        if not checked:
            return
        dtypes = [moment_dtype(param.dtype) for param in checked]
        if len(self.m) != len(checked):
            self.m = [None] * len(checked)  # type: ignore[list-item]
        if len(self.v) != len(checked):
            self.v = [None] * len(checked)  # type: ignore[list-item]
        self.m = [fresh_buffer(m, p, d) for m, p, d in zip(self.m, checked, dtypes)]
        self.v = [fresh_buffer(v, p, d) for v, p, d in zip(self.v, checked, dtypes)]

    def reset_internal_state(self) -> None:
        """Zeroes the moment buffers and the step count."""
        for buffer in (*self.m, *self.v):
            buffer.zero_()
        self.t = 0

    def step(self, grad: Sequence[array]) -> None:
        """Takes one step: updates every parameter from its gradient.

        Args:
            grad: One gradient array per parameter (same dtype and shape), for example
                `[p.grad for p in params]` after `tape.backward(loss)`.
        """
        check_grads("Adam", self.params, grad)
        for g, m, v, param in zip(grad, self.m, self.v, self.params):
            Adam.step_detail(g, m, v, self.lr, self.beta1, self.beta2, self.t, self.eps, param)
        self.t = self.t + 1

    @staticmethod
    def step_detail(g: array, m: array, v: array, lr: float, beta1: float, beta2: float,
                    t: int, eps: float, params: array) -> None:
        """Updates one parameter array in place (the launch behind `step`).

        Args:
            g: The gradient.
            m: The first-moment buffer, updated in place.
            v: The second-moment buffer, updated in place.
            lr: Learning rate.
            beta1: Decay rate of the first moment.
            beta2: Decay rate of the second moment.
            t: The step index (0 for the first step), for the bias correction.
            eps: Added to the denominator.
            params: The parameter array, updated in place.
        """
        dtype = moment_dtype(params.dtype)
        check_step("Adam", g, params, {"first moment": (m, dtype), "second moment": (v, dtype)})
        g, m, v, params = flat([g, m, v, params], "Adam")
        if params.dtype == kc.float16:
            kernel, inputs = adam_step_kernel_half, [lr, beta1, beta2, float(t), eps]
        else:
            scalar = scalar_of(params.dtype)
            kernel = (adam_step_kernel_vector if isinstance(params.dtype, T.VectorType)
                      else adam_step_kernel_scalar)
            inputs = [typed(scalar, x) for x in (lr, beta1, beta2, t, eps)]
        kc.launch(kernel, dim=params.size, inputs=[g, m, v, *inputs, params],
                  device=params.device)
