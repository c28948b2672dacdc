"""What the gradient checks know about the function they differentiate, and small helpers
shared by `jacobian` and `jacobian_fd` (argument masks, the launch device, input snapshots).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kernelc import types as T
from kernelc.frontend.decorators import Kernel
from kernelc.runtime.array import array, clone

Mask = Sequence[tuple[str | int, str | int]]


@dataclass
class FunctionMetadata:
    """Names, strides and dtypes of the inputs and outputs of a kernel or Python function.

    `jacobian` and `jacobian_fd` fill one in when given an empty one, so that `gradcheck`
    (and `jacobian_plot`) can label Jacobians without evaluating the function again.

    Attributes:
        key: The kernel's key or the function's name; None while empty.
        input_labels: One name per input (the kernel's or function's parameter names).
        output_labels: One name per output (parameter names for kernels, `output_<i>` for
            the arrays a function returns).
        input_strides: The strides of each array input (None for other inputs).
        output_strides: The strides of each array output (None for other outputs).
        input_dtypes: The element type of each array input (None for other inputs).
        output_dtypes: The element type of each array output (None for other outputs).
    """

    key: str | None = None
    input_labels: list[str] | None = None
    output_labels: list[str] | None = None
    input_strides: list[tuple[int, ...] | None] | None = None
    output_strides: list[tuple[int, ...] | None] | None = None
    input_dtypes: list[Any] | None = None
    output_dtypes: list[Any] | None = None

    @property
    def is_empty(self) -> bool:
        """True until the metadata describes a function."""
        return self.key is None

    def input_is_array(self, i: int) -> bool:
        """Whether input `i` is an array."""
        return self.input_dtypes is not None and self.input_dtypes[i] is not None

    def output_is_array(self, i: int) -> bool:
        """Whether output `i` is an array."""
        return self.output_dtypes is not None and self.output_dtypes[i] is not None

    def update_from_kernel(self, kernel: Kernel, inputs: Sequence[Any],
                           outputs: Sequence[Any] | None = None) -> None:
        """Describes a kernel whose first `len(inputs)` parameters are its inputs."""
        names = list(kernel.arg_names)
        types = list(kernel.param_types)
        self.key = kernel.key
        self.input_labels = names[:len(inputs)]
        self.output_labels = names[len(inputs):]
        given = list(inputs) + list(outputs if outputs is not None else [])
        described = [_describe(t, given[k] if k < len(given) else None)
                     for k, t in enumerate(types)]
        self.input_strides = [s for s, _ in described[:len(inputs)]]
        self.input_dtypes = [d for _, d in described[:len(inputs)]]
        self.output_strides = [s for s, _ in described[len(inputs):]]
        self.output_dtypes = [d for _, d in described[len(inputs):]]

    def update_from_function(self, function: Callable, inputs: Sequence[Any],
                             outputs: Sequence[Any] | array | None = None) -> None:
        """Describes a Python function (evaluated on `inputs` if `outputs` is None)."""
        self.key = getattr(function, "__name__", type(function).__name__)
        self.input_labels = list(inspect.signature(function).parameters)
        if outputs is None:
            outputs = function(*inputs)
        outputs = as_output_list(outputs)
        self.output_labels = [f"output_{i}" for i in range(len(outputs))]
        self.input_strides = [_strides(x) for x in inputs]
        self.input_dtypes = [_dtype(x) for x in inputs]
        self.output_strides = [_strides(y) for y in outputs]
        self.output_dtypes = [_dtype(y) for y in outputs]


def _strides(value: Any) -> tuple[int, ...] | None:
    return value.strides if isinstance(value, array) else None


def _dtype(value: Any) -> Any:
    return value.dtype if isinstance(value, array) else None


def _describe(t: Any, value: Any) -> tuple[tuple[int, ...] | None, Any]:
    """(strides, dtype) of a kernel parameter of type `t` holding `value`."""
    if isinstance(value, array):
        return value.strides, value.dtype
    if isinstance(t, T.ArrayType):
        return None, t.dtype
    return None, None


def as_output_list(outputs: Any) -> list[Any]:
    """A function's result as a list of outputs (a single array becomes a list of one)."""
    if isinstance(outputs, array):
        return [outputs]
    if outputs is None:
        raise ValueError("the function must return an array or a sequence of arrays")
    return list(outputs)


def resolve_mask(mask: Mask | None, metadata: FunctionMetadata,
                 num_inputs: int) -> set[tuple[int, int]]:
    """`input_output_mask` as a set of (input index, output index) pairs.

    An input (output) is named by its index among the inputs (outputs) or by its label;
    an empty set means every pair.

    Raises:
        ValueError: A label names no argument.
    """
    labels = (metadata.input_labels or []) + (metadata.output_labels or [])

    def position(name: str | int, offset: int) -> int:
        if isinstance(name, int):
            return name
        if name not in labels:
            raise ValueError(f"input_output_mask names '{name}', which is not an argument of "
                             f"{metadata.key} (its arguments are {', '.join(labels)})")
        return labels.index(name) + offset

    return {(position(i, 0), position(o, -num_inputs)) for i, o in mask or ()}


def infer_device(values: Sequence[Any]) -> Any:
    """The device of the first array among `values` (or among a struct's array fields),
    else the preferred device."""
    from kernelc.runtime.device import get_preferred_device

    for value in values:
        if isinstance(value, array) and value.device is not None:
            return value.device
        kc_type = getattr(value, "_kc_type", None)
        if isinstance(kc_type, T.StructType):
            for name, _ in kc_type.fields:
                field = getattr(value, name, None)
                if isinstance(field, array) and field.device is not None:
                    return field.device
    return get_preferred_device()


def snapshot(inputs: Sequence[Any]) -> list[array | None]:
    """Copies of the values of the array inputs (None for other inputs)."""
    return [clone(x, requires_grad=False) if isinstance(x, array) and x.ptr is not None
            else None for x in inputs]


def restore(inputs: Sequence[Any], saved: Sequence[array | None] | None) -> None:
    """Writes the values of `snapshot` back into the array inputs."""
    if saved is None:
        return
    for x, copy in zip(inputs, saved):
        if copy is not None:
            x.assign(copy)


@contextmanager
def kept_read_marks(inputs: Sequence[Any]) -> Iterator[None]:
    """Runs a gradient check with the read marks (`verify_autograd_array_access`) of the
    array inputs, and of the arrays they view, cleared, and puts them back afterwards: the
    check's own tapes must neither warn about reads recorded on a caller's pending tape nor
    erase them, so a later overwrite still warns against that tape."""
    nodes = []
    for x in inputs:
        node = x if isinstance(x, array) else None
        while node is not None:
            nodes.append((node, node._is_read))
            node = node._ref
    for node, _ in nodes:
        node._is_read = False
    try:
        yield
    finally:
        for node, was_read in nodes:
            node._is_read = was_read


def evaluate(function: Callable, inputs: Sequence[Any],
             saved: Sequence[array | None] | None) -> list[Any]:
    """`function(*inputs)` as a list of outputs; the inputs are restored if it raises."""
    try:
        return as_output_list(function(*inputs))
    except BaseException:
        restore(inputs, saved)
        raise
