"""`kc.Tape`: records kernel launches, then runs their backward kernels in reverse order.

While a tape is active (`with tape:`), `kc.launch` appends each forward launch to
`tape.launches`, and `kc.copy` (with `clone`, `to`, `assign`) of arrays that have grads
appends a function that runs the copy's adjoint. `tape.backward(loss)` seeds `loss.grad`
with 1 and runs the list backwards: each launch as `kc.launch(..., adjoint=True)` with the
adjoints `get_adjoint` finds (the arrays' `.grad`), each function by calling it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.autodiff.access import clear_marks
from kernelc.config import config
from kernelc.frontend.decorators import kernel as _kernel
from kernelc.frontend.special import tid as _tid
from kernelc.frontend.struct import default_value
from kernelc.logger import log_warning
from kernelc.runtime.array import array
from kernelc.runtime.array_interop import is_torch_tensor
from kernelc.runtime.context import get_runtime

_TAPE_KEY = "tape"  # where the active tape lives: Runtime.extras (no module globals)


__all__ = ["Tape"]


class Tape:
    """Records kernel launches for reverse-mode automatic differentiation (Warp's `wp.Tape`).

    ```python
    tape = kc.Tape()
    with tape:
        kc.launch(compute, dim=n, inputs=[x], outputs=[y])
        kc.launch(reduce, dim=n, inputs=[y], outputs=[loss])
    tape.backward(loss)        # x.grad now holds d loss / d x
    ```

    Attributes:
        gradients (dict): Each array (or struct) whose adjoint the tape has used, mapped to
            that adjoint (the array's `.grad`); `zero()` zeroes them.
        launches (list): The recorded operations in order: `[kernel, dim, max_blocks,
            inputs, outputs, device, block_dim, metadata]` lists for launches, callables
            for `record_func` (and copies).
        scopes (list): `(launch index, name, metadata)` entries of `record_scope_begin`
            (name None for the end of a scope); bookkeeping only.
        loss (array | None): Unused; kept for Warp compatibility.
    """

    def __init__(self) -> None:
        self.gradients: dict[Any, Any] = {}
        self.launches: list[Any] = []
        self.scopes: list[tuple[int, str | None, dict | None]] = []
        self.loss: array | None = None

    def __enter__(self) -> Tape:
        extras = get_runtime().extras
        if extras.get(_TAPE_KEY) is not None:
            raise RuntimeError("entering a tape while one is already active (tapes do not "
                               "nest)")
        extras[_TAPE_KEY] = self
        return self

    def __exit__(self, *exc: Any) -> None:
        extras = get_runtime().extras
        if extras.get(_TAPE_KEY) is None:
            raise RuntimeError("ended tape capture, but no tape is active")
        extras[_TAPE_KEY] = None

    def backward(self, loss: array | None = None,
                 grads: dict[array, array] | None = None) -> None:
        """Runs the recorded operations backwards, accumulating gradients into `.grad`s.

        Args:
            loss: A one-element scalar array with `requires_grad`; its gradient is set
                to 1 first.
            grads: Incoming gradients: for each array, its gradient (assigned as the
                array's `.grad` if it has none, else copied into the existing one).

        Raises:
            RuntimeError: `loss` has more than one element or a non-scalar dtype, or no
                grad.
        """
        if loss is not None:
            if loss.size > 1 or not isinstance(loss.dtype, T.ScalarType):
                raise RuntimeError("Can only return gradients for scalar loss functions.")
            if not loss.requires_grad:
                raise RuntimeError("Scalar loss arrays should have requires_grad=True set "
                                   "before calling Tape.backward()")
            loss.grad.fill_(1.0)  # type: ignore[union-attr]
        for a, g in (grads or {}).items():
            if a.grad is None:
                a.grad = g
            else:
                a.grad.assign(g)
        from kernelc.runtime.launch import launch

        for entry in reversed(self.launches):
            if callable(entry):
                entry()
                continue
            kernel, dim, max_blocks, inputs, outputs, device, block_dim = entry[:7]
            disabled = backward_disabled_by(kernel)
            if disabled:
                log_warning(f"Running the tape backwards may produce incorrect gradients "
                            f"because recorded kernel {kernel.key} has no backward kernel "
                            f"({disabled} sets enable_backward=False); it is skipped.",
                            UserWarning, stacklevel=2)
                continue
            launch(kernel, dim, inputs, outputs,
                   adj_inputs=[self.get_adjoint(a) for a in inputs],
                   adj_outputs=[self.get_adjoint(a) for a in outputs],
                   device=device, adjoint=True, max_blocks=max_blocks, block_dim=block_dim)
        if config.verify_autograd_array_access:  # the reads have served their purpose
            clear_marks(self.launches)

    def record_launch(self, kernel: Any, dim: Any, max_blocks: int, inputs: Sequence[Any],
                      outputs: Sequence[Any], device: Any, block_dim: int | None = 0,
                      metadata: dict | None = None) -> None:
        """Appends a kernel launch (done by `kc.launch` while the tape is active)."""
        from kernelc.runtime.device import get_device

        self.launches.append([kernel, dim, max_blocks, inputs, outputs, get_device(device),
                              block_dim or None, {} if metadata is None else metadata])

    def record_func(self, backward: Callable[[], Any], arrays: Sequence[array]) -> None:
        """Appends a function that the backward pass calls (in reverse order, as launches).

        Args:
            backward: Called with no arguments during `backward()`.
            arrays: The arrays whose gradients it uses; `zero()` zeroes their grads.

        Raises:
            RuntimeError: One of `arrays` is not a kc.array with a grad.
        """
        self.launches.append(backward)
        for a in arrays:
            if not isinstance(a, array) or a.grad is None:
                raise RuntimeError(f"Array {a!r} is not a kc.array with a gradient array; "
                                   f"create it with requires_grad=True")
            self.gradients[a] = a.grad

    def record_scope_begin(self, scope_name: str, metadata: dict | None = None) -> None:
        """Opens a named group of the operations recorded next (bookkeeping only)."""
        self.scopes.append((len(self.launches), scope_name, {} if metadata is None else metadata))

    def record_scope_end(self, remove_scope_if_empty: bool = True) -> None:
        """Closes the innermost open scope (dropped if it recorded nothing and
        `remove_scope_if_empty`)."""
        depth = sum(-1 if name is None else 1 for _, name, _ in self.scopes)
        if depth == 0:
            raise RuntimeError("ended tape scope, but scope not present (no scope is open)")
        last = self.scopes[-1]
        if remove_scope_if_empty and last[1] is not None and last[0] == len(self.launches):
            self.scopes.pop()
        else:
            self.scopes.append((len(self.launches), None, None))

    def get_adjoint(self, a: Any) -> Any:
        """The adjoint the backward pass passes for the kernel argument `a`.

        Arrays: their `.grad` (None without one). `@kc.struct` instances: a new instance
        of the same class whose array fields are the fields' grads (None where absent),
        built the same way for nested structs, other fields zero. Scalars, vectors and
        matrices: a zero of their type. Each array and struct used is remembered in
        `gradients`.
        """
        if isinstance(a, array):
            if a.grad is None:
                return None
            self.gradients[a] = a.grad
            return a.grad
        kc_type = getattr(a, "_kc_type", None)
        if isinstance(kc_type, T.StructType):
            fields = [(name, self.get_adjoint(getattr(a, name))) for name, t in kc_type.fields
                      if isinstance(t, (T.ArrayType, T.StructType))]
            adj = self.gradients.get(a)
            if adj is None or any(getattr(adj, name) is not g for name, g in fields):
                adj = kc_type.cls()  # (the one made last time serves while its fields hold)
                for name, g in fields:
                    setattr(adj, name, g)
            self.gradients[a] = adj
            return adj
        return zero_of(a)

    def visualize(self, filename: str | None = None, simplify_graph: bool = True,
                  hide_readonly_arrays: bool = False, array_labels: dict | None = None,
                  choose_longest_node_name: bool = True, ignore_graph_scopes: bool = False,
                  track_inputs: Sequence[array] | None = None,
                  track_outputs: Sequence[array] | None = None,
                  track_input_names: Sequence[str] | None = None,
                  track_output_names: Sequence[str] | None = None,
                  graph_direction: str = "LR") -> str:
        """The recorded operations as Graphviz dot code (render it with
        `dot -Tsvg tape.dot -o tape.svg`), as Warp's `Tape.visualize`.

        Launches and copies are nodes with edges from the arrays they read and to the
        arrays they write; scopes are boxed clusters.

        Args:
            filename: Also write the code to this file.
            simplify_graph: Draw a run of identical operations (or sequences of them) once,
                in a cluster labelled "repeated Nx".
            hide_readonly_arrays: Leave out arrays that no operation writes.
            array_labels: Names for arrays (by default, the names of the caller's variables
                that hold them, else `a0`, `a1`, ...).
            choose_longest_node_name: Of several variables holding one array, name it after
                the longest (else the shortest).
            ignore_graph_scopes: Leave out the scope clusters.
            track_inputs: Arrays always shown, even if read-only.
            track_outputs: Arrays always shown.
            track_input_names: Names for `track_inputs`, in order.
            track_output_names: Names for `track_outputs`, in order.
            graph_direction: Graphviz `rankdir` ("LR" left to right, "TB" top to bottom).

        Returns:
            The dot code.
        """
        import sys

        from kernelc.autodiff.tape_graph import tape_dot

        return tape_dot(self, filename, simplify_graph, hide_readonly_arrays, array_labels,
                        choose_longest_node_name, ignore_graph_scopes, track_inputs,
                        track_outputs, track_input_names, track_output_names,
                        graph_direction, frame=sys._getframe(1))

    def reset(self) -> None:
        """Forgets every recorded operation and zeroes the gradients."""
        if config.verify_autograd_array_access:
            clear_marks(self.launches)
        self.launches = []
        self.scopes = []
        self.zero()

    def zero(self) -> None:
        """Zeroes every gradient in `gradients`."""
        for g in self.gradients.values():
            _zero_grads(g)


def _zero_grads(g: Any) -> None:
    if isinstance(g, array):
        g.zero_()
        return
    kc_type = getattr(g, "_kc_type", None)
    if isinstance(kc_type, T.StructType):
        for name, t in kc_type.fields:
            if isinstance(t, (T.ArrayType, T.StructType)) and getattr(g, name) is not None:
                _zero_grads(getattr(g, name))


def zero_of(value: Any) -> Any:
    """A zero of the type of a value passed by value (None for anything else)."""
    kc_type = getattr(value, "_kc_type", None)
    if isinstance(kc_type, (T.ScalarType, T.VectorType, T.MatrixType)):
        return default_value(kc_type)
    if isinstance(value, (bool, int, float, np.generic)):
        return type(value)(0)
    return None


def backward_disabled_by(kernel: Any) -> str | None:
    """What turns off the backward kernel of `kernel` ("the kernel", "its module" or
    "kc.config"), or None if it has one. The kernel's option decides, then the module's
    (`kc.set_module_options`), then `kc.config.enable_backward`."""
    from kernelc.config import config

    option = kernel.options.get("enable_backward")
    if option is not None:
        return None if option else "the kernel"
    module = get_runtime().extras.get("module_options", {}).get(kernel.module)
    option = None if module is None else module.get("enable_backward")
    if option is not None:
        return None if option else "its module"
    return None if config.enable_backward else "kc.config"


def adjoint_arguments(values: Sequence[Any], types: Sequence[T.Type],
                      adjoints: Sequence[Any]) -> tuple[list[Any], int]:
    """The adjoint arguments of a backward launch, and its `adj_store_mask`.

    An array adjoint given as None is the array's own grad (Warp's kernels fall back to
    it); bit `i` of the mask is set when the adjoint of array parameter `i` is the array's
    own grad and the array does not `retain_grad` (for a struct parameter: when that holds
    for every array field that has an adjoint). Structs get their fields' grads where
    their adjoint has none; adjoints of values passed by value are zeros.
    """
    adj_values, mask = [], 0
    for i, (v, t, adj) in enumerate(zip(values, types, adjoints)):
        adj = fill_adjoint(t, v, adj)
        pairs = list(_array_pairs(t, v, adj))
        if pairs and all(grad is not None and getattr(a, "ptr", None) == grad.ptr and not retain
                         for a, grad, retain in pairs):
            mask |= 1 << i
        adj_values.append(adj)
    return adj_values, mask


def _array_pairs(t: T.Type, primal: Any, adj: Any):
    """(adjoint, the primal's grad, its retain_grad) for each array with a non-null adjoint
    in a parameter (the array itself or a struct's array fields, recursively)."""
    if isinstance(t, T.ArrayType) and adj is not None and primal is not None:
        yield adj, getattr(primal, "grad", None), getattr(primal, "retain_grad", False)
    elif isinstance(t, T.StructType) and adj is not None and primal is not None:
        for name, field_type in t.fields:
            yield from _array_pairs(field_type, getattr(primal, name), getattr(adj, name))


def fill_adjoint(t: T.Type, primal: Any, adj: Any) -> Any:
    """`adj` as passed to a backward kernel for a parameter of type `t` holding `primal`."""
    if isinstance(t, T.ArrayType):
        if adj is not None or is_torch_tensor(primal):
            # A tensor passed directly never requires grad (launches refuse those), so it
            # has no adjoint even when its .grad is set: Warp sees it as an array without one.
            return adj
        return getattr(primal, "grad", None)
    if isinstance(t, T.StructType) and primal is not None:
        filled = t.cls()
        for name, field_type in t.fields:
            if isinstance(field_type, (T.ArrayType, T.StructType)):
                given = None if adj is None else getattr(adj, name)
                setattr(filled, name, fill_adjoint(field_type, getattr(primal, name), given))
        return filled
    return default_value(t)


# ---- the adjoint of kc.copy --------------------------------------------------------------


def _addable(a: array, b: array) -> bool:
    """Whether the two adjoints can be added elementwise (same numeric, non-bool dtype)."""
    t = a.dtype
    scalar = t if isinstance(t, T.ScalarType) else getattr(t, "dtype", None)
    return (a.dtype == b.dtype and isinstance(scalar, T.ScalarType) and not scalar.is_bool
            and isinstance(t, (T.ScalarType, T.VectorType, T.MatrixType)))


def _windows(adj_src: array, adj_dest: array, dest_offset: int, src_offset: int,
             count: int) -> tuple[array, array] | None:
    """The copied elements of each adjoint, as views (None if views cannot express them)."""
    if adj_src.is_contiguous and adj_dest.is_contiguous:
        return (adj_src.flatten()[src_offset:src_offset + count],
                adj_dest.flatten()[dest_offset:dest_offset + count])
    if adj_src.ndim == 1 and adj_dest.ndim == 1:
        return adj_src[src_offset:src_offset + count], adj_dest[dest_offset:dest_offset + count]
    if adj_src.shape == adj_dest.shape:
        return adj_src, adj_dest
    return None


def _overlap(a: array, b: array) -> bool:
    def extent(x: array) -> tuple[int, int]:
        last = sum((n - 1) * s for n, s in zip(x.shape, x.strides))
        return x.ptr, x.ptr + last + x.dtype.size  # type: ignore[operator]

    (a_lo, a_hi), (b_lo, b_hi) = extent(a), extent(b)
    return a_lo < b_hi and b_lo < a_hi


def adj_copy(adj_dest: array, adj_src: array, dest_offset: int, src_offset: int, count: int,
             stream: Any = None, dest_retain_grad: bool = False) -> None:
    """The backward of `kc.copy(dest, src, dest_offset, src_offset, count)`, on the grads.

    As in Warp: the copied part of the destination's gradient is added into the source's
    (which may already hold gradients from other uses of the source), then zeroed, since
    the copy overwrote those destination values (unless the destination `retain_grad`).
    Between a CPU and a CUDA array the gradient goes through a temporary on the source's
    device. Copies this cannot express (overlapping or unsupported layouts, bool or struct
    dtypes) overwrite the source's gradient instead, with a warning.
    """
    from kernelc.runtime.memory import copy

    if adj_src.size == 0 or count == 0:
        return
    reason = _fallback_reason(adj_src, adj_dest, dest_offset, src_offset, count)
    if reason is None:
        src_part, dest_part = _windows(adj_src, adj_dest, dest_offset, src_offset, count)
        if adj_src.device != adj_dest.device:
            incoming = array(shape=src_part.shape, dtype=src_part.dtype, device=src_part.device)
            copy(incoming, dest_part)
            _add_into(src_part, incoming)
        else:
            _add_into(src_part, dest_part)
        if not dest_retain_grad:
            dest_part.zero_()
        return
    log_warning(f"A tape-recorded kc.copy() has a copy pattern whose gradients cannot yet be "
                f"fully tracked ({reason}): the backward pass overwrites the source's "
                f"gradient instead of adding to it, and does not clear the destination's",
                UserWarning, stacklevel=3, once=True)
    copy(adj_src, adj_dest, dest_offset=src_offset, src_offset=dest_offset, count=count)


def _fallback_reason(adj_src: array, adj_dest: array, dest_offset: int, src_offset: int,
                     count: int) -> str | None:
    """Why the adjoint of a copy cannot add gradients exactly (None if it can), in the
    words of Warp's warning."""
    if not _addable(adj_src, adj_dest):
        return "copy between unsupported gradient dtypes"
    regions = _windows(adj_src, adj_dest, dest_offset, src_offset, count)
    if adj_src.device != adj_dest.device:
        if regions is not None and not all(r.is_contiguous for r in regions):
            return "non-contiguous CPU/CUDA copy"
        return None if regions is not None else "cross-device copy"
    if regions is None:
        return "copy with unsupported view or offset layout"
    if _overlap(*regions):
        return "overlapping copy"
    return None


def _add_into(a: array, b: array) -> None:
    """a += b elementwise (same shape, dtype and device), never recorded on a tape."""
    from kernelc.runtime.launch import launch

    add = (_add_1d, _add_2d, _add_3d, _add_4d)[a.ndim - 1]
    launch(add, dim=a.shape, inputs=[a, b], device=a.device, record_tape=False)


@_kernel
def _add_1d(a: array(dtype=Any), b: array(dtype=Any)):
    i = _tid()
    a[i] = a[i] + b[i]


@_kernel
def _add_2d(a: array(dtype=Any, ndim=2), b: array(dtype=Any, ndim=2)):
    i, j = _tid()
    a[i, j] = a[i, j] + b[i, j]


@_kernel
def _add_3d(a: array(dtype=Any, ndim=3), b: array(dtype=Any, ndim=3)):
    i, j, k = _tid()
    a[i, j, k] = a[i, j, k] + b[i, j, k]


@_kernel
def _add_4d(a: array(dtype=Any, ndim=4), b: array(dtype=Any, ndim=4)):
    i, j, k, m = _tid()
    a[i, j, k, m] = a[i, j, k, m] + b[i, j, k, m]


for _k in (_add_1d, _add_2d, _add_3d, _add_4d):
    _k.is_builtin = True  # reported as "builtin kernel ..." by the timing tools
