"""`gradcheck` and `gradcheck_tape`: compare backward-kernel Jacobians with finite
differences and report the result as a table."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kernelc.autodiff.tape import Tape, backward_disabled_by
from kernelc.autograd.jacobians import jacobian, jacobian_fd
from kernelc.autograd.metadata import FunctionMetadata, Mask
from kernelc.frontend.decorators import Kernel

_HEADERS = ("Input", "Output", "Max Abs Error", "AD at MAE", "FD at MAE", "Max Rel Error",
            "Pass")
_COLORS = {"PASS": "\033[92m", "FAIL": "\033[91m", "NaN": "\033[91m"}
_RESET = "\033[0m"


def gradcheck(function: Kernel | Callable, dim: int | tuple[int, ...] | None = None,
              inputs: Sequence[Any] | None = None, outputs: Sequence[Any] | None = None, *,
              eps: float = 1e-4, atol: float = 1e-3, rtol: float = 1e-2,
              raise_exception: bool = True, input_output_mask: Mask | None = None,
              device: Any = None, max_blocks: int = 0, block_dim: int | None = None,
              max_inputs_per_var: int = -1, max_outputs_per_var: int = -1,
              plot_relative_error: bool = False, plot_absolute_error: bool = False,
              show_summary: bool = True, restore_inputs: bool = True) -> bool:
    """Checks the gradients of a kernel (or Python function) against finite differences.

    Computes the Jacobians with `jacobian` (backward kernels) and `jacobian_fd` (central
    differences with step `eps`) and compares each pair elementwise: the check passes when
    no autodiff entry is NaN and `|AD - FD| <= atol + rtol * |FD|` everywhere (NumPy's
    `allclose`). Vector and matrix components are compared one by one.

    Args:
        function: A `@kc.kernel` (its first `len(inputs)` parameters are the inputs), or a
            Python function of `inputs` that returns its output arrays.
        dim: The kernel's launch dimensions (kernels only).
        inputs: The input arguments; arrays with `requires_grad=True` are differentiated.
        outputs: The output arguments (kernels only); those with `requires_grad=True` are
            differentiated.
        eps: The finite-difference step.
        atol: Absolute tolerance.
        rtol: Relative tolerance (relative to the finite-difference value).
        raise_exception: Raise `ValueError` when the check fails, rather than return False.
        input_output_mask: The (input, output) pairs to check, by index or parameter name;
            None for all pairs.
        device: The device of the kernel's launches (default: the first array's).
        max_blocks: Passed to `kc.launch`.
        block_dim: Passed to `kc.launch`.
        max_inputs_per_var: If positive, only the first this many scalars of each input are
            checked.
        max_outputs_per_var: If positive, only the first this many scalars of each output
            are checked.
        plot_relative_error: Plot the relative errors with `jacobian_plot` (matplotlib).
        plot_absolute_error: Plot the absolute errors with `jacobian_plot` (matplotlib).
        show_summary: Print a table with one line per pair and a closing verdict.
        restore_inputs: For Python functions, restore the array inputs between and after
            evaluations (see `jacobian_fd`).

    Returns:
        True if every checked pair matches, False otherwise.

    Raises:
        ValueError: `inputs` is missing, or the check fails and `raise_exception` is set.
    """
    if inputs is None:
        raise ValueError("The inputs argument must be provided")
    metadata = FunctionMetadata()
    shared = dict(dim=dim, inputs=inputs, outputs=outputs,
                  input_output_mask=input_output_mask, device=device, max_blocks=max_blocks,
                  block_dim=block_dim, metadata=metadata, restore_inputs=restore_inputs)
    jacs_ad = jacobian(function, max_outputs_per_var=max_outputs_per_var, **shared)
    jacs_fd = jacobian_fd(function, max_inputs_per_var=max_inputs_per_var, eps=eps, **shared)

    rows, mismatched, with_nan = [], [], []
    relative_errors, absolute_errors = {}, {}
    for pair, jac_fd in jacs_fd.items():
        ad, fd = _scalar_matrix(jacs_ad[pair]), _scalar_matrix(jac_fd)
        if plot_relative_error or plot_absolute_error:
            relative_errors[pair], absolute_errors[pair] = _errors(ad, fd)
        if max_outputs_per_var > 0:
            ad, fd = ad[:max_outputs_per_var], fd[:max_outputs_per_var]
        if max_inputs_per_var > 0:
            ad, fd = ad[:, :max_inputs_per_var], fd[:, :max_inputs_per_var]
        has_nan = bool(np.isnan(ad).any())
        matches = bool(np.allclose(ad, fd, atol=atol, rtol=rtol))
        if not matches:
            mismatched.append(pair)
        if has_nan:
            with_nan.append(pair)
        verdict = "NaN" if has_nan else "PASS" if matches else "FAIL"
        rows.append(_summary_row(metadata, pair, ad, fd, verdict))
    success = not mismatched and not with_nan

    if show_summary:
        print_table(_HEADERS, rows)
        verdict = "passed" if success else "failed"
        print(_color("PASS" if success else "FAIL",
                     f"Gradient check for kernel {metadata.key} {verdict}"))
    if plot_relative_error or plot_absolute_error:
        from kernelc.autograd.plot import jacobian_plot

        if plot_relative_error:
            jacobian_plot(relative_errors, metadata,
                          title=f"{metadata.key} kernel Jacobian relative error")
        if plot_absolute_error:
            jacobian_plot(absolute_errors, metadata,
                          title=f"{metadata.key} kernel Jacobian absolute error")
    if raise_exception and (mismatched or with_nan):
        input_i, output_i = (mismatched or with_nan)[0]
        reason = ("finite difference and autodiff gradients do not match" if mismatched
                  else "gradient contains NaN values")
        raise ValueError(f"Gradient check failed for kernel {metadata.key}, input {input_i}, "
                         f"output {output_i}: {reason}")
    return success


def gradcheck_tape(tape: Tape, *, eps: float = 1e-4, atol: float = 1e-3, rtol: float = 1e-2,
                   raise_exception: bool = True,
                   input_output_masks: dict[str, Mask] | None = None,
                   blacklist_kernels: list[str] | None = None,
                   whitelist_kernels: list[str] | None = None, max_inputs_per_var: int = -1,
                   max_outputs_per_var: int = -1, plot_relative_error: bool = False,
                   plot_absolute_error: bool = False, show_summary: bool = True,
                   reverse_launches: bool = False, skip_to_launch_index: int = 0) -> bool:
    """Runs `gradcheck` on every kernel launch recorded on a tape.

    Each recorded launch is checked with its own dimensions, inputs, outputs and device, at
    the arrays' current values. Functions recorded with `tape.record_func` (and copies) are
    not checked, nor kernels without a backward kernel.

    Args:
        tape: A `kc.Tape` holding recorded launches.
        eps: The finite-difference step.
        atol: Absolute tolerance.
        rtol: Relative tolerance.
        raise_exception: Raise `ValueError` at the first failing kernel.
        input_output_masks: Per kernel, the `input_output_mask` to use. Kernels are
            named here and in the two lists below by their `key`, their name, or the key
            Warp gives them (the qualified name with `__` for dots).
        blacklist_kernels: Kernels to skip.
        whitelist_kernels: If not empty, only these kernels are checked.
        max_inputs_per_var: See `gradcheck`.
        max_outputs_per_var: See `gradcheck`.
        plot_relative_error: See `gradcheck`.
        plot_absolute_error: See `gradcheck`.
        show_summary: Print a table per launch.
        reverse_launches: Check the launches from the last to the first.
        skip_to_launch_index: Skip this many launches (counted in checking order).

    Returns:
        True if every checked launch passes.
    """
    masks = input_output_masks or {}
    skip = set(blacklist_kernels or ())
    only = set(whitelist_kernels or ())
    launches = list(reversed(tape.launches)) if reverse_launches else list(tape.launches)
    success = True
    for index, entry in enumerate(launches):
        if index < skip_to_launch_index or not isinstance(entry, (list, tuple)):
            continue
        kernel, dim, max_blocks, inputs, outputs, device, block_dim = entry[:7]
        if not isinstance(kernel, Kernel) or backward_disabled_by(kernel):
            continue
        names = _kernel_names(kernel)
        if names & skip or (only and not names & only):
            continue
        mask = next((masks[name] for name in names if name in masks), None)
        passed = gradcheck(kernel, dim, inputs, outputs, eps=eps, atol=atol, rtol=rtol,
                           raise_exception=raise_exception, input_output_mask=mask,
                           device=device,
                           max_blocks=max_blocks, block_dim=block_dim,
                           max_inputs_per_var=max_inputs_per_var,
                           max_outputs_per_var=max_outputs_per_var,
                           plot_relative_error=plot_relative_error,
                           plot_absolute_error=plot_absolute_error,
                           show_summary=show_summary)
        success = success and passed
    return success


def _kernel_names(kernel: Kernel) -> set[str]:
    """The names a kernel goes by in `gradcheck_tape`'s lists: its key, its name, and the
    key Warp would give it (its qualified name with `__` for dots), so that lists written
    for Warp keep working."""
    qualname = kernel.func.__qualname__
    warp_key = re.sub(r"[^0-9a-zA-Z_]+", "", qualname.replace(".", "__"))
    return {kernel.key, kernel.__name__, qualname, warp_key}


# ---- reporting ---------------------------------------------------------------------------


def _scalar_matrix(jac: Any) -> np.ndarray:
    """A Jacobian as a 2-d NumPy array of scalars (vector components as extra columns)."""
    values = np.asarray(jac.numpy() if hasattr(jac, "numpy") else jac)
    return values.reshape(values.shape[0], -1)


def _errors(ad: np.ndarray, fd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(relative, absolute) error of the autodiff entries; relative to the autodiff value,
    or to 1e-8 where that is smaller in magnitude."""
    difference = ad - fd
    scale = np.where(np.abs(ad) < 1e-8, 1e-8, ad)
    return difference / scale, np.abs(difference)


def _summary_row(metadata: FunctionMetadata, pair: tuple[int, int], ad: np.ndarray,
                 fd: np.ndarray, verdict: str) -> list[str]:
    input_i, output_i = pair
    labels = [_label(metadata.input_labels, input_i), _label(metadata.output_labels, output_i)]
    if ad.size == 0:
        return [*labels, "-", "-", "-", "-", _color(verdict, verdict)]
    error = np.abs(ad - fd)
    at = np.unravel_index(int(np.argmax(np.where(np.isnan(error), np.inf, error))), ad.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.max(error / (np.abs(fd) + 1e-8))
    return [*labels, f"{error[at]:.3e} at {tuple(int(k) for k in at)}", f"{ad[at]:.3e}",
            f"{fd[at]:.3e}", f"{relative:.3e}", _color(verdict, verdict)]


def _label(labels: list[str] | None, index: int) -> str:
    return labels[index] if labels is not None and 0 <= index < len(labels) else str(index)


def _color(kind: str, text: str) -> str:
    """`text` in the colour of `kind` when printing to a terminal."""
    if not getattr(sys.stdout, "isatty", lambda: False)():
        return text
    return f"{_COLORS[kind]}{text}{_RESET}"


def print_table(headers: Sequence[str], cells: Sequence[Sequence[str]]) -> None:
    """Prints rows of cells under headers, in columns as wide as their widest entry."""
    def width(text: str) -> int:
        return len(re.sub(r"\033\[\d+m", "", text))

    widths = [max(width(str(c)) for c in column) for column in zip(headers, *cells)]

    def line(row: Sequence[str]) -> str:
        return "".join(f"{c}{' ' * (w - width(str(c)))} | " for c, w in zip(row, widths))

    print(line(headers))
    print("-" * (sum(widths) + 3 * len(widths) - 1))
    for row in cells:
        print(line(row))
