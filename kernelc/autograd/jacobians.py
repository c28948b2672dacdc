"""`jacobian` (from backward kernels) and `jacobian_fd` (from central finite differences).

Both return one matrix per (input, output) pair of differentiable arrays: row `r` belongs to
scalar `r` of the output (vector and matrix components counted one by one), column `c` to
element `c` of the input. The matrix is a kernelc array of shape `(output scalars, input
size)` with the input's dtype, so a `vec3` input contributes three scalars per column;
`jac.numpy().reshape(rows, -1)` is the plain scalar Jacobian. Entries that were not
evaluated (see `max_outputs_per_var`, `max_inputs_per_var`) are NaN.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kernelc.autodiff.tape import Tape, backward_disabled_by
from kernelc.autograd import _ops
from kernelc.autograd.metadata import (
    FunctionMetadata,
    Mask,
    evaluate,
    infer_device,
    kept_read_marks,
    resolve_mask,
    restore,
    snapshot,
)
from kernelc.frontend.decorators import Kernel
from kernelc.runtime.array import array, clone, empty

Jacobians = dict[tuple[int, int], array]


def jacobian(function: Kernel | Callable, dim: int | tuple[int, ...] | None = None,
             inputs: Sequence[Any] | None = None, outputs: Sequence[Any] | None = None,
             input_output_mask: Mask | None = None, device: Any = None, max_blocks: int = 0,
             block_dim: int | None = None, max_outputs_per_var: int = -1,
             plot_jacobians: bool = False, metadata: FunctionMetadata | None = None,
             restore_inputs: bool = True) -> Jacobians:
    """Jacobians of a kernel or Python function, computed with its backward kernels.

    For every selected pair of a differentiable input and output (arrays created with
    `requires_grad=True` that hold floating-point scalars, vectors or matrices), each scalar
    of the output in turn gets a gradient of one (all others zero) and the backward pass
    runs once; the input's gradient is then one row of the Jacobian.

    A kernel is not launched forward: its backward kernel is launched with `dim`, `inputs`
    and `outputs` (its first `len(inputs)` parameters are the inputs, the rest the
    outputs). A Python function is called once on `inputs` under a `kc.Tape`; it returns an
    array or a sequence of arrays, which are the outputs, and the tape is run backwards.

    Args:
        function: A `@kc.kernel`, or a Python function of `inputs` that launches kernels.
        dim: The kernel's launch dimensions (kernels only).
        inputs: The input arguments.
        outputs: The output arguments (kernels only; a function returns its outputs).
        input_output_mask: The (input, output) pairs to compute, each named by its index
            among the inputs (outputs) or by its parameter name (`output_<i>` for a
            function's results); None for all pairs.
        device: The device of the kernel's launches (default: the first array's).
        max_blocks: Passed to `kc.launch` (kernels only).
        block_dim: Passed to `kc.launch` (kernels only).
        max_outputs_per_var: If positive, only this many output scalars (rows) are
            evaluated; the other rows are NaN.
        plot_jacobians: Show the Jacobians with `jacobian_plot` (needs matplotlib).
        metadata: Receives the names and dtypes of the arguments if empty; used as it is
            otherwise.
        restore_inputs: For Python functions, write the array inputs' original values back
            before returning (arrays inside structs are not restored).

    Returns:
        A dict mapping `(input index, output index)` to the Jacobian of that pair, an array
        of shape `(output scalars, input size)` with the input's dtype.

    Raises:
        ValueError: No inputs, no outputs for a kernel, or a kernel without a backward kernel.
    """
    metadata = FunctionMetadata() if metadata is None else metadata
    inputs = _require_inputs(inputs)
    with kept_read_marks(inputs):  # a caller's pending tape keeps its marks
        is_kernel = isinstance(function, Kernel)
        saved = None
        if is_kernel:
            _require_backward(function)
            outputs = _kernel_outputs(outputs, dim)
            device = infer_device(inputs + outputs) if device is None else device
            if metadata.is_empty:
                metadata.update_from_kernel(function, inputs, outputs)
            tape = Tape()
            tape.record_launch(function, dim, max_blocks, inputs, outputs, device, block_dim)
        else:
            saved = snapshot(inputs) if restore_inputs else None
            tape = Tape()
            with tape:
                outputs = evaluate(function, inputs, saved)
        try:
            for entry in tape.launches:
                if not callable(entry):
                    _require_backward(entry[0])
            if metadata.is_empty:
                metadata.update_from_function(function, inputs, outputs)
            pairs = _pairs(inputs, outputs, resolve_mask(input_output_mask, metadata, len(inputs)))
            _zero_grads(inputs + outputs)
            jacobians = {pair: _backward_block(tape, inputs, outputs, *pair, max_outputs_per_var)
                         for pair in pairs}
        finally:
            restore(inputs, saved)
        if plot_jacobians:
            from kernelc.autograd.plot import jacobian_plot

            jacobian_plot(jacobians, metadata)
        return jacobians


def jacobian_fd(function: Kernel | Callable, dim: int | tuple[int, ...] | None = None,
                inputs: Sequence[Any] | None = None, outputs: Sequence[Any] | None = None,
                input_output_mask: Mask | None = None, device: Any = None,
                max_blocks: int = 0, block_dim: int | None = None,
                max_inputs_per_var: int = -1, eps: float = 1e-4,
                plot_jacobians: bool = False, metadata: FunctionMetadata | None = None,
                restore_inputs: bool = True) -> Jacobians:
    """Jacobians of a kernel or Python function, by central finite differences.

    For every selected pair of differentiable input and output (as for `jacobian`), each
    scalar of the input in turn is moved by `-eps` and by `+eps`, the function is evaluated
    forward at both points, and `(right - left) / (2 eps)` of the output is one column of
    the Jacobian. The input is put back afterwards. A kernel writes into copies of its
    outputs, so the outputs passed in keep their values; only the inputs are perturbed
    (they must be contiguous arrays).

    Args:
        function: A `@kc.kernel`, or a Python function of `inputs` returning arrays.
        dim: The kernel's launch dimensions (kernels only).
        inputs: The input arguments.
        outputs: The output arguments (kernels only).
        input_output_mask: The (input, output) pairs to compute (see `jacobian`).
        device: The device of the kernel's launches (default: the first array's).
        max_blocks: Passed to `kc.launch` (kernels only).
        block_dim: Passed to `kc.launch` (kernels only).
        max_inputs_per_var: If positive, only this many input scalars (columns of the
            scalar Jacobian) are evaluated; the others are NaN.
        eps: The finite-difference step, applied in the input's precision.
        plot_jacobians: Show the Jacobians with `jacobian_plot` (needs matplotlib).
        metadata: Receives the names and dtypes of the arguments if empty.
        restore_inputs: For Python functions, restore the array inputs' original values
            before every evaluation and before returning, so that a function that changes
            its inputs is always evaluated at the intended point.

    Returns:
        A dict mapping `(input index, output index)` to the Jacobian of that pair, as for
        `jacobian`.

    Raises:
        ValueError: No inputs, no outputs for a kernel, or a non-contiguous input.
    """
    metadata = FunctionMetadata() if metadata is None else metadata
    inputs = _require_inputs(inputs)
    with kept_read_marks(inputs):  # a caller's pending tape keeps its marks
        is_kernel = isinstance(function, Kernel)
        saved = None
        if is_kernel:
            outputs = _kernel_outputs(outputs, dim)
            device = infer_device(inputs + outputs) if device is None else device
            if metadata.is_empty:
                metadata.update_from_kernel(function, inputs, outputs)
        else:
            saved = snapshot(inputs) if restore_inputs else None
            outputs = evaluate(function, inputs, saved)
            try:
                if metadata.is_empty:
                    metadata.update_from_function(function, inputs, outputs)
            finally:
                restore(inputs, saved)
        pairs = _pairs(inputs, outputs, resolve_mask(input_output_mask, metadata, len(inputs)))
        launch_args = (dim, device, max_blocks, block_dim)
        try:
            jacobians = {pair: _difference_block(function, launch_args, inputs, outputs, *pair,
                                                 saved, max_inputs_per_var, eps)
                         for pair in pairs}
        finally:
            restore(inputs, saved)
        if plot_jacobians:
            from kernelc.autograd.plot import jacobian_plot

            jacobian_plot(jacobians, metadata)
        return jacobians


# ---- one (input, output) pair ------------------------------------------------------------


def _backward_block(tape: Tape, inputs: list, outputs: list, input_i: int, output_i: int,
                    max_rows: int) -> array:
    """The Jacobian of one pair: one backward pass per output scalar."""
    x, y = inputs[input_i], outputs[output_i]
    seed = _ops.scalar_view(y.grad, f"the gradient of output {output_i}")
    jac = empty((seed.size, x.size), dtype=x.dtype, device=x.device)
    jac.fill_(np.nan)
    rows = seed.size if max_rows <= 0 else min(seed.size, max_rows)
    for r in range(rows):
        y.grad.zero_()
        _ops.set_element(seed, r, 1.0)
        tape.backward()
        jac[r].assign(x.grad.flatten())
        _zero_grads(inputs + outputs)
        tape.zero()  # gradients of intermediate arrays of a function
    return jac


def _difference_block(function: Kernel | Callable, launch_args: tuple, inputs: list,
                      outputs: list, input_i: int, output_i: int,
                      saved: list | None, max_columns: int, eps: float) -> array:
    """The Jacobian of one pair: two forward evaluations per input scalar."""
    x, y = inputs[input_i], outputs[output_i]
    flat_x = _ops.scalar_view(x, f"input {input_i}")
    original = None if saved is not None else clone(flat_x, requires_grad=False)
    base = clone(y, requires_grad=False)
    left, right = clone(base), clone(base)
    flat_left = _ops.scalar_view(left, f"output {output_i}")
    flat_right = _ops.scalar_view(right, f"output {output_i}")
    evaluate_into = _evaluator(function, launch_args, inputs, outputs, output_i, saved)
    # Column c of the Jacobian is row c here, so that each quotient is a contiguous write.
    columns = empty((flat_x.size, flat_left.size), dtype=flat_left.dtype, device=y.device)
    columns.fill_(np.nan)
    count = flat_x.size if max_columns <= 0 else min(flat_x.size, max_columns)
    for c in range(count):
        left.assign(base)
        right.assign(base)
        _ops.set_element(flat_x, c, -eps, relative=True)
        evaluate_into(left)
        if saved is not None:  # the evaluation may have changed the inputs: start afresh
            restore(inputs, saved)
            _ops.set_element(flat_x, c, eps, relative=True)
        else:
            _ops.set_element(flat_x, c, 2.0 * eps, relative=True)
        evaluate_into(right)
        if saved is not None:
            restore(inputs, saved)
        else:
            _ops.copy_element(flat_x, original, c)
        _ops.difference_quotient(flat_left, flat_right, eps, columns[c])
    scalar = _ops.scalar_type(x.dtype)
    host = columns.numpy().T.astype(scalar.np_dtype)
    shape = (host.shape[0], x.size, *_element_shape(x))
    return array(np.ascontiguousarray(host).reshape(shape), dtype=x.dtype, device=x.device)


def _evaluator(function: Kernel | Callable, launch_args: tuple, inputs: list, outputs: list,
               output_i: int, saved: list | None) -> Callable[[array], None]:
    """A function that evaluates `function` at the current inputs and leaves output
    `output_i` in the array it is given."""
    if isinstance(function, Kernel):
        from kernelc.runtime.launch import launch

        dim, device, max_blocks, block_dim = launch_args
        # Each evaluation gets private copies of the other outputs: a kernel may accumulate
        # into its outputs, and the caller's outputs must keep their values.
        others = [clone(y, requires_grad=False) if isinstance(y, array) else y
                  for y in outputs]

        def run_kernel(target: array) -> None:
            args = others[:output_i] + [target] + others[output_i + 1:]
            launch(function, dim, inputs=inputs, outputs=args, device=device,
                   max_blocks=max_blocks, block_dim=block_dim, record_tape=False)

        return run_kernel

    def run_function(target: array) -> None:
        target.assign(evaluate(function, inputs, saved)[output_i])

    return run_function


# ---- helpers -----------------------------------------------------------------------------


def _element_shape(a: array) -> tuple[int, ...]:
    from kernelc.runtime.memory import element_layout

    return element_layout(a.dtype)[1]


def _require_inputs(inputs: Sequence[Any] | None) -> list[Any]:
    if inputs is None:
        raise ValueError("The inputs argument must be provided")
    return list(inputs)


def _kernel_outputs(outputs: Sequence[Any] | None, dim: Any) -> list[Any]:
    if outputs is None or len(outputs) == 0:
        raise ValueError("A list of output arguments must be provided to compute kernel "
                         "Jacobians")
    if dim is None:
        raise ValueError("dim must be given to compute the Jacobians of a kernel")
    return list(outputs)


def _require_backward(kernel: Kernel) -> None:
    if backward_disabled_by(kernel):
        raise ValueError(f"Kernel must have backward pass enabled to compute Jacobians "
                         f"(kernel {kernel.key})")


def _pairs(inputs: list, outputs: list, mask: set[tuple[int, int]]) -> list[tuple[int, int]]:
    """The (input, output) index pairs to compute, in Warp's order (inputs outermost)."""
    return [(i, o) for i, o in itertools.product(range(len(inputs)), range(len(outputs)))
            if (not mask or (i, o) in mask)
            and _ops.is_differentiable(inputs[i]) and _ops.is_differentiable(outputs[o])]


def _zero_grads(values: Sequence[Any]) -> None:
    for value in values:
        if isinstance(value, array) and value.ptr is not None and value.grad is not None:
            value.grad.zero_()
