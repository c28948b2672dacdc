"""The parameters of a kernel or callable as JAX sees them: array shapes, dtypes, scalars.

A kernelc array of n `vec3` is a JAX array of shape (n, 3): vector and matrix components
are trailing JAX axes. Under `jax.vmap`, XLA hands the FFI target buffers with leading batch
axes; they are folded into the first kernelc dimension.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.jax_experimental.xla_ffi import Buffer, buffer_shape
from kernelc.runtime.array import array
from kernelc.runtime.memory import element_layout


@dataclass(frozen=True)
class FfiArg:
    """One parameter: `kc_type` is its kernelc type, `in_out` whether it is also an output.

    For arrays, `inner` is the element's trailing JAX shape, `ndim` the kernelc dimensions
    and `jax_ndim` the JAX dimensions; `np_dtype` the JAX (NumPy) scalar dtype.
    """

    name: str
    kc_type: T.Type
    in_out: bool = False

    @property
    def is_array(self) -> bool:
        return isinstance(self.kc_type, T.ArrayType)

    @property
    def inner(self) -> tuple[int, ...]:
        return element_layout(self.kc_type.dtype)[1] if self.is_array else ()

    @property
    def ndim(self) -> int:
        return self.kc_type.ndim if self.is_array else 0

    @property
    def jax_ndim(self) -> int:
        return self.ndim + len(self.inner)

    @property
    def np_dtype(self) -> np.dtype:
        elem = self.kc_type.dtype if self.is_array else self.kc_type
        return element_layout(elem)[0]

    # ---- tracing -------------------------------------------------------------------------

    def check_input(self, value: Any) -> None:
        """Raises TypeError unless the JAX value fits this array parameter."""
        if np.dtype(value.dtype) != self.np_dtype:
            raise TypeError(f"argument '{self.name}': expected a JAX array of {self.np_dtype}, "
                            f"got {value.dtype}")
        if value.ndim != self.jax_ndim:
            raise TypeError(f"argument '{self.name}': expected a JAX array of {self.jax_ndim} "
                            f"dimensions, got {value.ndim}")
        if tuple(value.shape[self.ndim:]) != self.inner:
            raise TypeError(f"argument '{self.name}': expected the trailing dimensions "
                            f"{self.inner} of {self.kc_type.dtype!r}, got "
                            f"{tuple(value.shape[self.ndim:])}")

    def kc_shape(self, jax_shape: Sequence[int]) -> tuple[int, ...]:
        """The kernelc shape of an (unbatched) JAX shape of this parameter."""
        return tuple(jax_shape[:self.ndim]) if self.inner else tuple(jax_shape)

    def output_type(self, dims: Any) -> Any:
        """The `jax.ShapeDtypeStruct` of this output for `dims`, in kernelc's convention
        (without the element's axes) or JAX's (with them)."""
        import jax

        dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
        if len(dims) == self.ndim:
            dims = (*dims, *self.inner)
        elif not self.inner or len(dims) != self.jax_ndim or dims[self.ndim:] != self.inner:
            raise ValueError(f"output dimensions {dims} do not fit argument '{self.name}' "
                             f"({self.ndim}-d array of {self.kc_type.dtype!r})")
        return jax.ShapeDtypeStruct(tuple(int(d) for d in dims), self.np_dtype)

    def static_value(self, value: Any) -> Any:
        """A scalar argument as the kernel's type; traced values are refused."""
        import jax

        if isinstance(value, jax.core.Tracer):
            raise ValueError(f"argument '{self.name}' must be a static value: scalars are "
                             f"compiled into the call (mark it static in jax.jit)")
        return self.kc_type(value)

    # ---- inside the FFI call -------------------------------------------------------------

    def view(self, buffer: Buffer, device: Any) -> tuple[array, int]:
        """A kernelc array over an XLA buffer, and the batch size folded into its first
        dimension (1 without vmap)."""
        jax_shape = buffer_shape(buffer)
        batch = math.prod(jax_shape[:len(jax_shape) - self.jax_ndim])
        shape = list(jax_shape[len(jax_shape) - self.jax_ndim:][:self.ndim])
        if shape:
            shape[0] *= batch
        return array(ptr=buffer.data or 0, dtype=self.kc_type.dtype, shape=tuple(shape),
                     device=device), batch


def ffi_arg(name: str, annotation: Any, in_out: bool = False) -> FfiArg:
    """The FfiArg of a parameter annotated `annotation`; TypeError unless it is a concrete
    array of scalars, vectors or matrices, or a scalar."""
    kc_type = T.as_type(annotation)
    if isinstance(kc_type, T.ArrayType):
        if not isinstance(kc_type.dtype, (T.ScalarType, T.VectorType, T.MatrixType)):
            raise TypeError(f"argument '{name}': JAX arrays can only hold scalars, vectors or "
                            f"matrices, not {kc_type.dtype!r} (generic arrays need a dtype)")
    elif not isinstance(kc_type, T.ScalarType):
        raise TypeError(f"argument '{name}': expected an array or a scalar, got {annotation!r}")
    if in_out and not isinstance(kc_type, T.ArrayType):
        raise TypeError(f"argument '{name}': only arrays can be in-out arguments")
    return FfiArg(name, kc_type, in_out)


def split_args(params: Sequence[tuple[str, Any]], num_outputs: int,
               in_out_argnames: Sequence[str] | None) -> tuple[list[FfiArg], list[FfiArg]]:
    """(inputs, outputs) of a parameter list: the last `num_outputs` parameters minus the
    in-out ones are outputs; in-out arguments are inputs that are also outputs."""
    names = list(in_out_argnames or ())
    if len(set(names)) != len(names):
        raise ValueError("in_out_argnames must not contain duplicate names")
    if num_outputs < 1:
        raise ValueError("at least one output is required (num_outputs >= 1)")
    if num_outputs > len(params):
        raise ValueError(f"num_outputs={num_outputs} is more than the {len(params)} arguments")
    if num_outputs < len(names):
        raise ValueError("num_outputs must count the in_out_argnames too")
    unknown = set(names) - {n for n, _ in params}
    if unknown:
        raise ValueError(f"in_out_argnames {sorted(unknown)} match no argument")
    num_inputs = len(params) - num_outputs + len(names)
    inputs = [ffi_arg(n, a, n in names) for n, a in params[:num_inputs]]
    outputs = []
    for n, a in params[num_inputs:]:
        if n in names:
            raise ValueError(f"in-out argument '{n}' must come before the output-only "
                             f"arguments")
        arg = ffi_arg(n, a)
        if not arg.is_array:
            raise TypeError(f"output argument '{n}' must be an array")
        outputs.append(arg)
    return inputs, outputs


def output_types(inputs: list[FfiArg], outputs: list[FfiArg], values: Sequence[Any],
                 output_dims: Any) -> list[Any]:
    """The JAX types of a call's results: the in-out arguments (shaped as their inputs),
    then the outputs, shaped by `output_dims` (one shape, or a dict by argument name)."""
    types = [arg.output_type(value.shape) for arg, value in zip(inputs, values) if arg.in_out]
    for arg in outputs:
        dims = output_dims.get(arg.name) if isinstance(output_dims, dict) else output_dims
        if dims is None:
            raise ValueError(f"missing output dimensions for argument '{arg.name}'")
        types.append(arg.output_type(dims))
    return types


def input_output_aliases(inputs: list[FfiArg]) -> dict[int, int]:
    """XLA's aliasing of in-out arguments: index among the array inputs -> result index."""
    arrays = [arg for arg in inputs if arg.is_array]
    return {i: k for k, i in enumerate(i for i, arg in enumerate(arrays) if arg.in_out)}
