"""`kc.map`: a function applied to every element of one or more arrays (Warp's `wp.map`).

The function is called from a generated kernel (see `map_kernel.py`) with one element of
each input array, and values that are not arrays passed through unchanged. Array shapes
broadcast as in NumPy; the outputs are created from the function's result types unless
given with `out=`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.frontend.decorators import Kernel
from kernelc.runtime.array import array
from kernelc.runtime.indexedarray import indexedarray
from kernelc.types_query import type_repr
from kernelc.utils.map_func import map_target
from kernelc.utils.map_kernel import InputKind, map_cache, map_kernel, result_types


def map(func: Callable, *inputs: Any,
        out: array | indexedarray | Sequence[array | indexedarray] | None = None,
        return_kernel: bool = False, block_dim: int | None = None,
        device: Any = None) -> array | list[array] | Kernel:
    """Applies `func` to the elements of one or more arrays, in a kernel.

    Thread (i, j, ...) calls `func` with element (i, j, ...) of each array input and with
    every other input (a scalar, vector, matrix, transform or struct) as it is, and stores
    what `func` returns at (i, j, ...) of the output arrays. Array shapes broadcast as in
    NumPy: dimensions line up from the last, and a dimension of size 1 repeats.

    ```python
    a = kc.array([1.0, 2.0, 3.0], dtype=kc.float32)
    b = kc.array([4.0, 5.0, 6.0], dtype=kc.float32)
    kc.map(lambda x, y: x + 2.0 * y, a, b)      # [9, 12, 15]
    kc.map(kc.clamp, a, 1.5, 2.5, out=a)        # in place: [1.5, 2, 2.5]
    ```

    Args:
        func: A `@kc.func` (generic ones too), a builtin such as `kc.clamp`, or a Python function or lambda (compiled as kernel code, its parameters generic).
        *inputs: One argument of `func` each; at least one is a `kc.array` or a `kc.indexedarray`.
        out: The output array (a `kc.array` or `kc.indexedarray`), or a list of them when `func` returns several values; by default new arrays of the broadcast shape and `func`'s result types.
        return_kernel: Return the generated kernel instead of running it.
        block_dim: Threads per block on CUDA devices (as in `kc.launch`).
        device: Where to run; by default the device of the first array input.

    Returns:
        The output array (a list of arrays for several results), or the kernel when `return_kernel` is set. The kernel takes the inputs, then the outputs, as `kc.launch(kernel, dim=shape, inputs=list(inputs), outputs=[...])`.

    Raises:
        TypeError: `func` cannot be mapped, the number of inputs does not fit it, it returns nothing, or `out` has the wrong dtype, shape or count.
        ValueError: No input is an array, or the array shapes do not broadcast.
        KernelError: `func` does not compile for these inputs (at the line at fault).
    """
    cache = map_cache()
    target = map_target(func, len(inputs), cache.funcs)
    arrays = [x for x in inputs if _is_array(x)]
    if not arrays:
        raise ValueError("map requires at least one kc.array input")
    shape = broadcast_shapes([a.shape for a in arrays])
    arg_types = tuple(_element_type(x, target.arg_names[i]) for i, x in enumerate(inputs))
    results = result_types(target, arg_types, cache)
    kinds: tuple[InputKind, ...] = tuple(
        (x.ndim, tuple(d == 1 for d in x.shape), isinstance(x, indexedarray))
        if _is_array(x) else None for x in inputs)
    if device is None:
        device = arrays[0].device
    outputs = None if return_kernel and out is None else \
        _outputs(out, results, shape, device, arrays)
    out_indexed = None if outputs is None else \
        tuple(isinstance(o, indexedarray) for o in outputs)
    kernel = map_kernel(target, arg_types, kinds, results, len(shape), cache, out_indexed)
    if return_kernel:
        return kernel
    from kernelc.runtime.launch import launch

    launch(kernel, dim=shape, inputs=list(inputs), outputs=outputs, device=device,
           block_dim=block_dim)
    return outputs[0] if len(outputs) == 1 else outputs


def broadcast_shapes(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """The shape `shapes` broadcast to, by NumPy's rules: aligned at the last dimension,
    two sizes agree when they are equal or one of them is 1.

    Raises:
        ValueError: Two shapes do not broadcast.
    """
    result = tuple(shapes[0])
    for shape in shapes[1:]:
        shape = tuple(shape)
        if shape == result:
            continue
        longer, shorter = (result, shape) if len(result) >= len(shape) else (shape, result)
        merged = list(longer)
        offset = len(longer) - len(shorter)
        for k, size in enumerate(shorter):
            here = merged[offset + k]
            if size != here and 1 not in (size, here):
                raise ValueError(f"Shapes {result} and {shape} are not broadcastable")
            merged[offset + k] = here if size == 1 else size
        result = tuple(merged)
    return result


def _is_array(value: Any) -> bool:
    """A kc.array, or a kc.indexedarray with data (not a type-only annotation)."""
    if isinstance(value, indexedarray):
        return value.data is not None
    return isinstance(value, array)


def _element_type(value: Any, name: str) -> T.Type:
    """What `func` receives for an input: an array's dtype, or the type a kernel argument
    of this value has (Python float: float32, int: int32, as in Warp)."""
    if _is_array(value):
        return value.dtype
    if isinstance(value, (bool, np.bool_)):
        return T.bool_
    if isinstance(value, np.generic) and not isinstance(value, np.void):
        return T.number_type(value)
    if isinstance(value, int):
        return T.int32
    if isinstance(value, float):
        return T.float32
    kc_type = getattr(value, "_kc_type", None)
    if isinstance(kc_type, T.Type) and not isinstance(kc_type, (T.ArrayType,
                                                                 T.IndexedArrayType)):
        return kc_type
    raise TypeError(f"kc.map: input '{name}' is a {type(value).__name__}; inputs are "
                    f"kc.arrays or kernelc values (numbers, vectors, matrices, quaternions, "
                    f"transforms, structs)")


def _outputs(out: Any, results: tuple[T.Type, ...], shape: tuple[int, ...], device: Any,
             arrays: list[array]) -> list[array]:
    """The output arrays: `out` checked, or new ones. A new output has a gradient when an
    input array has one and its type is differentiable (Warp's rule)."""
    if out is None:
        wants_grad = any(a.requires_grad for a in arrays)
        return [array(shape=shape, dtype=t, device=device,
                      requires_grad=wants_grad and _differentiable(t)) for t in results]
    given = list(out) if isinstance(out, (list, tuple)) else [out]
    if not isinstance(out, (list, tuple)) and len(results) > 1:
        names = ", ".join(type_repr(t) for t in results)
        raise TypeError(f"Invalid output provided, expected {len(results)} kernelc arrays with "
                        f"shape {shape} and dtypes ({names})")
    if len(given) != len(results):
        raise TypeError(f"Number of provided output arrays ({len(given)}) does not match "
                        f"expected number of function outputs ({len(results)})")
    for k, (o, t) in enumerate(zip(given, results)):
        # Warp's wording: "Output array" for one result, "Output array k" for several
        which = "Output array" if len(results) == 1 else f"Output array {k}"
        if not _is_array(o):
            raise TypeError(f"{which} must be a kc.array or kc.indexedarray, got "
                            f"{type(o).__name__}")
        if o.dtype != t:
            raise TypeError(f"{which} dtype {type_repr(o.dtype)} does not match expected "
                            f"dtype {type_repr(t)}")
        if tuple(o.shape) != shape:
            raise TypeError(f"{which} shape {tuple(o.shape)} does not match expected shape "
                            f"{shape}")
    return given


def _differentiable(t: T.Type) -> bool:
    if isinstance(t, T.StructType):
        return True
    scalar = getattr(t, "dtype", t)
    return isinstance(scalar, T.ScalarType) and scalar.is_float

