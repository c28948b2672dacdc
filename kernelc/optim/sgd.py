"""`SGD`: stochastic gradient descent with momentum, Nesterov momentum and weight decay."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import kernelc as kc
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


@kc.kernel
def sgd_step_kernel(g: kc.array(dtype=Any), b: kc.array(dtype=Any), lr: Any, momentum: Any,
                    dampening: Any, weight_decay: Any, nesterov: int, t: int,
                    params: kc.array(dtype=Any)):
    # The operations, and their order, are those of Warp's kernel, so that float32 results
    # agree bit for bit.
    i = kc.tid()
    step = g[i]
    if weight_decay != 0.0:
        step += weight_decay * params[i]
    if momentum != 0.0:
        velocity = b[i]
        if t > 0:
            velocity = momentum * velocity + (1.0 - dampening) * step
        else:
            velocity = step
        if nesterov == 1:
            step += momentum * velocity
        else:
            step = velocity
        b[i] = velocity
    params[i] = params[i] - lr * step


class SGD:
    """Stochastic gradient descent with optional momentum (Warp's `warp.optim.SGD`).

    Each `step(grad)` updates every parameter array in place, element by element:

        g = grad + weight_decay * param
        b = g on the first step, else momentum * b + (1 - dampening) * g   (if momentum)
        g = g + momentum * b if nesterov, else b                           (if momentum)
        param = param - lr * g

    Parameters may hold float16, float32 or float64 scalars, vectors, matrices,
    quaternions or transforms (Warp 1.19 compiles float32 element types only).

    Args:
        params: The arrays to optimise, or None to set them later with `set_params`.
        lr: Learning rate.
        momentum: Momentum factor (0 disables momentum and its buffers' use).
        dampening: Fraction of the gradient left out of the momentum buffer's update.
        weight_decay: L2 penalty added to the gradient (times the parameter).
        nesterov: Use Nesterov momentum.

    Attributes:
        params (list[array] | None): The parameter arrays.
        b (list[array]): One momentum buffer per parameter (zeros at first).
        t (int): The number of steps taken since the last reset.
    """

    def __init__(self, params: Sequence[array] | None = None, lr: float = 0.001,
                 momentum: float = 0.0, dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None:
        self.b: list[array] = []
        self.set_params(params)
        self.lr = lr
        self.momentum = momentum
        self.dampening = dampening
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        self.t = 0

    def set_params(self, params: Sequence[array] | None) -> None:
        """Sets the arrays to optimise and allocates their momentum buffers.

        A buffer that still fits its parameter (same shape and dtype) is kept, with its
        contents; None leaves the buffers as they are.

        Args:
            params: A list of arrays, or None.
        """
        checked = check_params(params, "SGD")
        self.params = checked
        if not checked:
            return
        for param in checked:
            if scalar_of(param.dtype) is None:
                raise RuntimeError(f"Unsupported dtype for the SGD optimizer: {param.dtype!r} "
                                   f"(parameters hold float scalars, vectors or matrices)")
        if len(self.b) != len(checked):
            self.b = [None] * len(checked)  # type: ignore[list-item]
        self.b = [fresh_buffer(buffer, param, param.dtype)
                  for buffer, param in zip(self.b, checked)]

    def reset_internal_state(self) -> None:
        """Zeroes the momentum buffers and the step count."""
        for buffer in self.b:
            buffer.zero_()
        self.t = 0

    def step(self, grad: Sequence[array]) -> None:
        """Takes one step: updates every parameter from its gradient.

        Args:
            grad: One gradient array per parameter (same dtype and shape), for example
                `[p.grad for p in params]` after `tape.backward(loss)`.
        """
        check_grads("SGD", self.params, grad)
        for g, buffer, param in zip(grad, self.b, self.params):
            SGD.step_detail(g, buffer, self.lr, self.momentum, self.dampening,
                            self.weight_decay, self.nesterov, self.t, param)
        self.t = self.t + 1

    @staticmethod
    def step_detail(g: array, b: array, lr: float, momentum: float, dampening: float,
                    weight_decay: float, nesterov: bool, t: int, params: array) -> None:
        """Updates one parameter array in place (the launch behind `step`).

        Args:
            g: The gradient.
            b: The momentum buffer (read and written when `momentum` is not 0).
            lr: Learning rate.
            momentum: Momentum factor.
            dampening: Momentum dampening.
            weight_decay: Weight decay coefficient.
            nesterov: Use Nesterov momentum.
            t: The step index (the first step, 0, starts the momentum buffer at `g`).
            params: The parameter array, updated in place.
        """
        check_step("SGD", g, params, {"momentum buffer": (b, params.dtype)})
        scalar = scalar_of(params.dtype)
        if scalar is None:
            raise RuntimeError(f"Unsupported dtype for the SGD optimizer: {params.dtype!r}")
        g, b, params = flat([g, b, params], "SGD")
        inputs = [g, b, typed(scalar, lr), typed(scalar, momentum), typed(scalar, dampening),
                  typed(scalar, weight_decay), int(nesterov), int(t), params]
        kc.launch(sgd_step_kernel, dim=params.size, inputs=inputs, device=params.device)
