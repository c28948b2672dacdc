"""Gradient arrays of `kc.array` (`requires_grad`, `.grad`, `retain_grad`), as in Warp.

An array that requires gradients owns a second array of the same shape, dtype and device,
`.grad`, into which backward kernels (see `kc.Tape`) accumulate the gradient of a loss with
respect to the array's elements. Views (slices, reshapes, transposes) share the grad of the
array they view; copies made by `kc.copy`, `clone`, `to` and `assign` copy the grad too, and
while a tape records they record their adjoint on it (`kernelc.autodiff.tape.adj_copy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelc.runtime.context import get_runtime

if TYPE_CHECKING:
    from kernelc.runtime.array import array


class GradMixin:
    """The gradient attributes of `kc.array` (kept here so that array.py stays small)."""

    # Class-level defaults: views made without __init__ start with no grad.
    _grad: array | None = None
    _requires_grad: bool = False
    _retain_grad: bool = False

    @property
    def grad(self) -> array | None:
        """The array that accumulates this array's gradient in backward passes, or None.

        Assigning an array (same dtype, shape and device) also sets `requires_grad`;
        assigning None drops the gradient and clears `requires_grad`.
        """
        return self._grad

    @grad.setter
    def grad(self, grad: array | None) -> None:
        if grad is None:
            self._grad, self._requires_grad, self._retain_grad = None, False, False
            return
        self._require_memory("setting .grad")  # type: ignore[attr-defined]
        if getattr(grad, "ptr", None) is None:
            raise ValueError(f"a gradient must be a kc.array with memory, got {grad!r}")
        for what in ("dtype", "shape", "device"):
            want, got = getattr(self, what), getattr(grad, what)
            if want != got:
                raise ValueError(f"the given gradient array is incompatible: expected {what} "
                                 f"{want}, got {got}")
        self._grad, self._requires_grad = grad, True

    @property
    def requires_grad(self) -> bool:
        """Whether gradients are tracked for this array.

        Setting it to True allocates a zero-filled `.grad` if there is none; setting it
        to False drops `.grad` (and `retain_grad`).
        """
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and self._grad is None:
            self._require_memory("requires_grad=True")  # type: ignore[attr-defined]
            from kernelc.runtime.array import zeros

            self._grad = zeros(self.shape, self.dtype, self.device,  # type: ignore[attr-defined]
                               pinned=self.pinned)  # type: ignore[attr-defined]
        elif not value:
            self._grad, self._retain_grad = None, False
        self._requires_grad = bool(value)

    @property
    def retain_grad(self) -> bool:
        """Whether backward passes keep this array's gradient where a kernel stored into it.

        By default the adjoint of a store into an element consumes (zeroes) that
        element's gradient, so that only the last write in the forward pass receives it.
        Needs `requires_grad`.
        """
        return self._retain_grad

    @retain_grad.setter
    def retain_grad(self, value: bool) -> None:
        if value and not self._requires_grad:
            raise ValueError("retain_grad=True requires requires_grad=True")
        self._retain_grad = bool(value)


def init_grad(arr: array, requires_grad: bool, grad: array | None, retain_grad: bool) -> None:
    """Sets up the gradient of a newly constructed array (the `array()` keywords)."""
    if grad is not None:
        arr.grad = grad
    else:
        arr.requires_grad = requires_grad
    arr.retain_grad = retain_grad


def view_grad(view: array, grad_view: Any) -> array:
    """`view` of an array, given the same view of that array's grad (or None)."""
    if grad_view is not None:
        view.grad = grad_view
    return view


def active_tape() -> Any:
    """The `kc.Tape` recording now, or None."""
    return get_runtime().extras.get("tape")


def copy_grads(dest: array, src: array, dest_offset: int, src_offset: int, count: int,
               stream: Any) -> None:
    """After `kc.copy(dest, src, ...)` of arrays that both have grads: copies the grads
    the same way and, while a tape records, records the copy's adjoint on it (Warp's
    behaviour, so that copies, clones and `to()` are differentiable)."""
    from kernelc.runtime.memory import copy

    copy(dest.grad, src.grad, dest_offset, src_offset, count, stream)  # type: ignore[arg-type]
    tape = active_tape()
    if tape is None:
        return
    from kernelc.autodiff.tape import adj_copy
    from kernelc.config import config

    if config.verify_autograd_array_access:
        from kernelc.autodiff.access import check_copy

        check_copy(dest, src)

    def backward() -> None:
        # The grads and retain_grad are looked up when the backward pass runs, as in Warp.
        adj_copy(dest.grad, src.grad, dest_offset, src_offset, count, stream,
                 dest.retain_grad)

    backward._kc_graph = ("copy", (src,), (dest,))  # type: ignore[attr-defined]  (visualize)
    tape.record_func(backward, [dest, src])
