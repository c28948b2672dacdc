"""`kc.array`: strided N-d arrays (1 to 4 dims) in device memory, and their constructors.

An `array` is memory (an `Allocation`) plus a view of it: a pointer to element 0, a shape,
byte strides and an element type. Slicing, transposing and reshaping make new views of
the same memory. Called with neither data, shape nor ptr, `array(dtype=T, ndim=N)` is a
type-only object used to annotate kernel parameters.

Element types are kernelc scalars, vectors and matrices. NumPy sees a vector or matrix
element as trailing axes: an array of n `vec3` is a NumPy array of shape (n, 3).
"""

from __future__ import annotations

import math
import operator
import typing
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kernelc.errors import ReshapeError
from kernelc.runtime import memory
from kernelc.runtime.array_access import AccessMixin
from kernelc.runtime.array_bf16 import element_storage, list_items, numbers, public_values
from kernelc.runtime.array_grad import GradMixin, copy_grads, init_grad, view_grad
from kernelc.runtime.array_ops import ArithmeticMixin
from kernelc.runtime.array_struct import (
    keep_field_arrays,
    struct_fill_value,
    struct_host_data,
    struct_instances,
)
from kernelc.runtime.device import Device, get_device
from kernelc.runtime.memory import Shapelike, contiguous_strides, element_layout, normalize_shape
from kernelc.runtime.memory_kind import MemoryKind, memory_kind_of
from kernelc.types import ArrayType, StructType, Type, as_type, bfloat16, is_ml_bfloat16
from kernelc.types import float32 as _float32

Devicelike = Device | str | None


class array(GradMixin, AccessMixin, ArithmeticMixin):
    """A strided array of 1 to 4 dimensions on a device (Warp's `wp.array`).

    With `data`, `shape` or `ptr` it holds memory; with none of them it is a type-only
    kernel parameter annotation (`kc.array(dtype=float, ndim=2)`).

    Args:
        data: Values to copy in: a list, tuple, NumPy array, kc.array, or anything NumPy
            can convert; for a struct dtype, also (nested) lists of struct instances.
        dtype: Element type (a kernelc scalar, vector or matrix type, `float`, `int`,
            `bool`, a NumPy dtype). `typing.Any` infers it from `data` (float64 data stays
            float64); without data it means float32, and a generic annotation.
        shape: An int or a tuple of up to 4 ints.
        strides: Byte strides (default: contiguous). For new memory (no `ptr`, no
            `data`), as many bytes are allocated as the layout spans, as in Warp.
        ptr: Address of existing memory to wrap (needs `dtype` and `shape`).
        capacity: Size in bytes of the memory at `ptr` (default: what the view spans).
        device: Where the array lives (default: the data's device or the current device).
        copy: If False, NumPy data of the right dtype on the right device is used in place
            rather than copied (otherwise it is copied, as Warp does).
        owner: Accepted for Warp compatibility; memory at `ptr` is never freed by kernelc
            itself.
        requires_grad: Allocate a zero-filled gradient array, `.grad` (see `kc.Tape`).
        pinned: Page-locked host memory, for faster transfers to CUDA devices.
        ndim: Number of dimensions (for annotations; checked against data or shape).
        grad: An existing array to use as `.grad` (same dtype, shape and device).
        retain_grad: Keep `.grad` where backward kernels would consume it (see
            `retain_grad`).
        deleter: With `ptr`: called as `deleter(ptr, capacity)` once the array and every
            view of it are gone, to free the memory.

    Attributes:
        ptr (int | None): Address of element 0, None for a type-only array.
        shape (tuple[int, ...]): Tuple of dimension sizes.
        strides (tuple[int, ...]): Tuple of byte strides, one per dimension.
        dtype (Type): The kernelc element type.
        ndim (int): Number of dimensions.
        size (int): Number of elements.
        capacity (int): Bytes of memory the array spans (or was allocated with).
        device (Device): The Device the memory is on.
        grad (array | None): The gradient array (`requires_grad`), else None.
        deleter (Callable | None): The `deleter` given with `ptr`, else None (views and
            kernelc-allocated arrays have none).
    """

    # Class-level defaults keep repr() working on an object whose __init__ raised.
    ptr: int | None = None
    dtype: Type | None = None
    deleter: Callable[[int, int], None] | None = None
    ndim = 0

    def __init__(self, data: Any = None, dtype: Any = typing.Any,
                 shape: Shapelike | None = None, strides: Sequence[int] | None = None,
                 ptr: int | None = None, capacity: int | None = None,
                 device: Devicelike = None, copy: bool = True, owner: bool = False,
                 requires_grad: bool = False, pinned: bool = False,
                 ndim: int | None = None, grad: array | None = None,
                 retain_grad: bool = False,
                 deleter: Callable[[int, int], None] | None = None) -> None:
        self.pinned = pinned
        self._np: np.ndarray | None = None
        if data is None and shape is None and ptr is None:
            self._init_annotation(dtype, 1 if ndim is None else ndim)
            return
        resolved = memory.resolve_dtype(dtype)
        if ptr is not None and data is not None:
            raise ValueError("give either data= or ptr=, not both")
        if ptr is not None:
            self._init_foreign(ptr, resolved, shape, strides, capacity, device)
            if deleter is not None:  # called with (ptr, capacity) once no view is left
                weakref.finalize(self._alloc, deleter, self.ptr, self.capacity)
                self.deleter = deleter
        elif data is None:
            self._init_new(resolved, shape, strides, device, pinned)
        elif isinstance(data, array):
            self._init_from_array(data, resolved, shape, device, copy)
        else:
            self._init_from_host(data, resolved, shape, device, copy)
        if ndim is not None and ndim != self.ndim:
            raise ValueError(f"ndim={ndim} does not match the array's shape {self.shape}")
        if requires_grad or grad is not None or retain_grad:
            init_grad(self, requires_grad, grad, retain_grad)

    # ---- construction ----------------------------------------------------------------

    def _init_annotation(self, dtype: Any, ndim: int) -> None:
        if not 1 <= ndim <= memory.MAX_DIMS:
            raise ValueError(f"arrays have 1 to {memory.MAX_DIMS} dimensions, got ndim={ndim}")
        elem = memory.resolve_dtype(dtype)
        self._alloc = self.ptr = self.shape = self.strides = self.device = None
        self.dtype, self.ndim, self.size, self.capacity = elem, ndim, 0, 0
        self.is_contiguous = True
        self._kc_type = ArrayType(elem, ndim)  # type: ignore[arg-type]  (None = generic)

    def _set(self, alloc: memory.Allocation, ptr: int, shape: tuple[int, ...],
             strides: tuple[int, ...], dtype: Type, dense: bool = False) -> None:
        """Fills in every attribute of a memory-backed array (the one place that does);
        `dense` says the strides are known to be the contiguous ones."""
        self._alloc = alloc
        self.ptr = ptr
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.ndim = len(shape)
        self.size = math.prod(shape)
        self.device = alloc.device
        # Warp's rule: exactly the row-major strides, even on axes of length 1 (`a[::2]`
        # of two elements is not contiguous), so code that checks it behaves the same.
        self.is_contiguous = dense or self.size == 0 or strides == contiguous_strides(
            shape, dtype.size)
        whole = ptr == alloc.ptr and self.is_contiguous and self.size
        self.capacity = alloc.nbytes if whole else memory.span(shape, strides, dtype.size)
        self._kc_type = ArrayType(dtype, len(shape))

    def _init_new(self, dtype: Type | None, shape: Shapelike | None,
                  strides: Sequence[int] | None, device: Devicelike, pinned: bool) -> None:
        """New memory for `shape`; with `strides`, as much as that layout spans (Warp's rule)."""
        dims, elem = normalize_shape(shape), _float32 if dtype is None else dtype  # type: ignore
        _check_dims(dims)
        element_layout(elem)
        dense = contiguous_strides(dims, elem.size)
        steps = dense if strides is None else tuple(operator.index(s) for s in strides)
        if len(steps) != len(dims):
            raise ValueError(f"Invalid number of strides, expected {len(dims)} strides, got "
                             f"{len(steps)}")
        if any(s < 0 for s in steps):
            raise NotImplementedError("Negative strides are not supported for newly "
                                      "allocated arrays.")
        nbytes = memory.span(dims, steps, elem.size)
        alloc = memory.allocate(get_device(device), nbytes, pinned, elem, dims)
        self._set(alloc, alloc.ptr, dims, steps, elem, dense=steps == dense)

    def _init_foreign(self, ptr: int, dtype: Type | None, shape: Shapelike | None,
                      strides: Sequence[int] | None, capacity: int | None,
                      device: Devicelike) -> None:
        if dtype is None or shape is None:
            raise ValueError("an array made from ptr= needs dtype= and shape=")
        dims = normalize_shape(shape)
        _check_dims(dims)
        element_layout(dtype)
        # (Python ints: NumPy int32 strides from another framework would overflow offsets.)
        steps = contiguous_strides(dims, dtype.size) if strides is None else \
            tuple(operator.index(s) for s in strides)
        if len(steps) != len(dims) or any(s < 0 for s in steps):
            raise ValueError(f"strides {steps} do not fit shape {dims} (one non-negative "
                             f"byte stride per dimension)")
        nbytes = memory.span(dims, steps, dtype.size) if capacity is None else int(capacity)
        alloc = memory.Allocation(int(ptr), nbytes, get_device(device))
        self._set(alloc, int(ptr), dims, steps, dtype)
        if capacity is not None:  # as given, even for a strided layout (Warp's rule)
            self.capacity = nbytes

    def _init_from_array(self, src: array, dtype: Type | None, shape: Shapelike | None,
                         device: Devicelike, copy: bool) -> None:
        src._require_memory("kc.array(data=...)")
        dev = src.device if device is None else get_device(device)
        elem = src.dtype if dtype is None else dtype
        if elem != src.dtype:
            # Conversions happen in NumPy on the host.
            self._init_from_host(numbers(src._values(), src.dtype), elem, shape, dev, True)
            return
        if shape is not None and normalize_shape(shape) != src.shape:
            src = src.reshape(shape)
        if not copy and dev == src.device:
            self._set(src._alloc, src.ptr, src.shape, src.strides, src.dtype)
            return
        alloc = memory.allocate(dev, src.size * elem.size, self.pinned, elem, src.shape)
        self._set(alloc, alloc.ptr, src.shape, contiguous_strides(src.shape, elem.size), elem)
        memory.copy_array(self, src)

    def _init_from_host(self, data: Any, dtype: Type | None, shape: Shapelike | None,
                        device: Devicelike, copy: bool) -> None:
        if isinstance(data, np.ndarray):  # before any copy of (possibly broadcast) data
            _check_dims(data.shape)
        keep_field_arrays(self, dtype, data)  # struct instances' arrays: their addresses
        data, dtype = struct_host_data(data, dtype)  # lists of struct instances
        try:
            if dtype is None:
                host = np.asarray(data)
                # as_type would read object arrays of Python types as type annotations.
                dtype = bfloat16 if is_ml_bfloat16(host.dtype) else None \
                    if host.dtype.kind in "OUSVMmc" else as_type(host.dtype)
                if dtype is None:
                    raise TypeError(f"unsupported input data dtype {host.dtype}: it has no "
                                    f"kernelc equivalent")
            np_dtype, inner = element_layout(dtype)
            host = element_storage(data, dtype, np_dtype)
        except ValueError as err:
            raise ValueError(f"cannot convert the data to an array: {err}") from None
        if host.ndim == 0:
            raise ValueError(f"array data must be a sequence or array, got the scalar {data!r}")
        host = self._shape_host(host, dtype, inner, shape)
        # Read-only memory is shared too (`np.asarray(jax_array)`), as Warp shares it.
        if not memory.aliasable(host, np_dtype, inner, writeable=False):
            host, copy = np.array(host, order="C"), True  # private, packed and writeable
        dev = get_device(device)
        outer = host.ndim - len(inner)
        wrapped = memory.Allocation(host.ctypes.data, host.nbytes, get_device("cpu"), host)
        if not copy and dev.is_cpu:
            self._set(wrapped, wrapped.ptr, host.shape[:outer], host.strides[:outer], dtype)
            return
        staging = array._over(wrapped, wrapped.ptr, host.shape[:outer], host.strides[:outer],
                              dtype)
        alloc = memory.allocate(dev, staging.size * dtype.size, self.pinned, dtype,
                                staging.shape)
        dense = contiguous_strides(staging.shape, dtype.size)
        self._set(alloc, alloc.ptr, staging.shape, dense, dtype)
        memory.copy_array(self, staging)

    @staticmethod
    def _shape_host(host: np.ndarray, dtype: Type, inner: tuple[int, ...],
                    shape: Shapelike | None) -> np.ndarray:
        """Reshapes host data to (outer shape + element shape), checking it fits."""
        count = len(inner)
        per_elem = math.prod(inner)
        if shape is not None:
            dims = normalize_shape(shape)
            if host.size != math.prod(dims) * per_elem:
                raise ValueError(f"data with {host.size} values does not fit shape {dims} "
                                 f"of {dtype!r}")
            return host.reshape(dims + inner)
        if count and host.shape[host.ndim - count:] != inner:
            # Warp also takes the components flat along the last axis: [x0, y0, z0, x1, ...];
            # an axis of exactly one element's components goes away.
            last = host.shape[-1]
            if last % per_elem == 0:
                outer = host.shape[:-1] if last == per_elem else (*host.shape[:-1],
                                                                   last // per_elem)
                return host.reshape((*(outer or (1,)), *inner))
            raise ValueError(f"data of shape {host.shape} does not end in the element shape "
                             f"{inner} of {dtype!r}")
        outer = host.shape[:host.ndim - count]
        if not outer:  # a single vector or matrix value
            return host.reshape((1, *inner))
        normalize_shape(outer)
        return host

    @classmethod
    def _over(cls, alloc: memory.Allocation, ptr: int, shape: tuple[int, ...],
              strides: tuple[int, ...], dtype: Type, pinned: bool = False) -> array:
        """An array over existing memory, without the checks of __init__."""
        view = cls.__new__(cls)
        view.pinned, view._np = pinned, None
        view._set(alloc, ptr, shape, strides, dtype)
        return view

    def _view(self, ptr: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> array:
        """A new array over the same memory (without a grad: callers add the grad's view)."""
        view = array._over(self._alloc, ptr, shape, strides, self.dtype, self.pinned)
        view._ref = self
        return view

    def _require_memory(self, what: str) -> None:
        if self.ptr is None:
            raise TypeError(f"{what} needs an array with memory, but {self!r} is a type "
                            f"annotation; allocate one with kc.zeros, kc.empty or kc.array(data)")

    @property
    def memory_kind(self) -> MemoryKind:
        """The kind of memory behind the array (`kc.MemoryKind`): HOST or PINNED on the
        CPU, CUDA_MEMPOOL, CUDA_DEVICE or CUDA_MANAGED on a GPU, UNKNOWN for an annotation."""
        return memory_kind_of(self)

    # ---- NumPy and interchange -------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """The values as a NumPy array: a zero-copy view on the CPU, a copy from a GPU;
        vector and matrix elements as trailing axes, bfloat16 values as `ml_dtypes.bfloat16`
        where that package is installed, else as their bits (`np.uint16`)."""
        return public_values(self._values(), self.dtype)

    def _values(self) -> np.ndarray:
        self._require_memory("numpy()")
        if not self.device.is_cpu:
            return memory.to_host(self)
        if self._np is None:
            self._np = memory.host_view(self)
        return self._np

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        values = self.numpy()
        if dtype is not None:
            values = values.astype(dtype, copy=False)
        return np.array(values, copy=True) if copy else values

    @property
    def __array_interface__(self) -> dict[str, Any]:
        if self.ptr is None or not self.device.is_cpu:
            raise AttributeError("__array_interface__ is only defined for CPU arrays")
        return memory.array_interface(self)

    def __ctype__(self) -> Any:
        """Warp's array descriptor (data pointer, shape, strides) as a ctypes object, which
        recorded launches take (`Launch.set_param_at_index_from_ctype`)."""
        from kernelc.runtime.launch_cmd import ctype_descriptor

        return ctype_descriptor(self)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self.ptr is None or not self.device.is_cuda:
            raise AttributeError("__cuda_array_interface__ is only defined for CUDA arrays")
        interface = memory.array_interface(self)
        interface["version"] = 2
        return interface

    def __dlpack__(self, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: Any = None, copy: bool | None = None) -> Any:
        self._require_memory("__dlpack__()")
        if not self.device.is_cpu:
            from kernelc.runtime.dlpack_cuda import export_array

            return export_array(self, stream, max_version, dl_device, copy)
        if stream is not None and stream != -1:  # the DLPack rule for CPU producers
            raise TypeError(f"DLPack stream must be None or -1 for CPU device, got {stream!r}")
        options = {"max_version": max_version, "dl_device": dl_device, "copy": copy}
        capsule = self._values().__dlpack__(**{k: v for k, v in options.items() if v is not None})
        if getattr(self.dtype, "dtype", self.dtype) == bfloat16:
            from kernelc.runtime.dlpack_capsule import mark_bfloat16

            return mark_bfloat16(capsule)  # NumPy exported the bits as uint16
        return capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        self._require_memory("__dlpack_device__()")
        # DLPack device codes: kDLCPU = 1, kDLCUDA = 2.
        return (1, 0) if self.device.is_cpu else (2, self.device.ordinal)

    def list(self) -> list[Any]:
        """The elements, flattened, as a Python list, as Warp gives them: numbers, vectors
        and matrices as host values (`vec3f([1.0, 2.0, 3.0])`), structs as instances of
        their class."""
        if isinstance(self.dtype, StructType):
            return struct_instances(self.dtype, self._values())
        return list_items(self._values(), self.dtype, self.size)

    # ---- Python protocol -------------------------------------------------------------

    def __len__(self) -> int:
        self._require_memory("len()")
        return self.shape[0]

    def __repr__(self) -> str:
        if self.ptr is None:
            return f"array(dtype={self.dtype!r}, ndim={self.ndim})"
        return f"array(shape={self.shape}, dtype={self.dtype!r})"

    def __str__(self) -> str:
        if self.ptr is None:
            return repr(self)
        return str(self.numpy())

    def __getitem__(self, key: Any) -> Any:
        """Views for ints and slices (step > 0); the element itself when fully indexed; a
        `kc.indexedarray` where index arrays (1-d int32 arrays) stand for dimensions."""
        self._require_memory("indexing")
        if isinstance(key, array) or (
                isinstance(key, tuple) and any(isinstance(k, array) for k in key)):
            from kernelc.runtime.indexedarray import index_with_arrays

            return index_with_arrays(self, key)
        ptr, shape, strides = memory.index_layout(self.ptr, self.shape, self.strides, key)
        if not shape:  # fully indexed: read the one element (NumPy's rule; Warp refuses)
            element = self._view(ptr, (1,), (self.dtype.size,))
            return element.list()[0] if isinstance(self.dtype, StructType) else element.numpy()[0]
        grad = self._grad
        return view_grad(self._view(ptr, shape, strides), None if grad is None else grad[key])

    # ---- views -----------------------------------------------------------------------

    def reshape(self, shape: Shapelike) -> array:
        """A view with a new shape (one dimension may be -1); needs a contiguous array."""
        self._require_memory("reshape()")
        dims = (shape,) if not isinstance(shape, Sequence) else tuple(shape)
        dims = tuple(operator.index(n) for n in dims)
        if dims.count(-1) > 1:
            raise ValueError("only one dimension of a new shape can be -1")
        if -1 in dims:
            known = math.prod(n for n in dims if n != -1)
            if known == 0 or self.size % known:
                raise ReshapeError(f"cannot reshape array of shape {self.shape} (size "
                                   f"{self.size}) into shape {dims}")
            dims = tuple(self.size // known if n == -1 else n for n in dims)
        dims = normalize_shape(dims)
        if math.prod(dims) != self.size:
            raise ReshapeError(f"cannot reshape array of shape {self.shape} (size {self.size}) "
                               f"into shape {dims} (size {math.prod(dims)})")
        if not self.is_contiguous:
            raise RuntimeError("reshaping a non-contiguous array is not supported; "
                               "call .contiguous() first")
        view = self._view(self.ptr, dims, contiguous_strides(dims, self.dtype.size))
        return view_grad(view, None if self._grad is None else self._grad.reshape(dims))

    def flatten(self) -> array:
        """A 1-d array of all elements: a view if contiguous, else a contiguous copy."""
        return self.contiguous().reshape(self.size)

    def view(self, dtype: Any) -> array:
        """The same memory seen as elements of `dtype` (Warp's `array.view`).

        A dtype of the same byte size keeps the shape; a scalar view of vector or matrix
        elements adds their axes as trailing dimensions, and a vector or matrix view of
        scalars takes them from the trailing dimensions. The grad, if any, is viewed alike.
        """
        self._require_memory("view()")
        resolved = memory.resolve_dtype(dtype)
        shape, strides = memory.view_layout(self.shape, self.strides, self.dtype, resolved)
        view = array._over(self._alloc, self.ptr, shape, strides, resolved, self.pinned)
        view._ref = self
        return view_grad(view, None if self._grad is None else self._grad.view(resolved))

    def transpose(self, axes: Sequence[int] | None = None) -> array:
        """A view with the dimensions permuted (reversed by default)."""
        self._require_memory("transpose()")
        order = tuple(reversed(range(self.ndim))) if axes is None else tuple(axes)
        if sorted(order) != list(range(self.ndim)):
            raise ValueError(f"axes {order} are not a permutation of the {self.ndim} dimensions")
        view = self._view(self.ptr, tuple(self.shape[a] for a in order),
                          tuple(self.strides[a] for a in order))
        return view_grad(view, None if self._grad is None else self._grad.transpose(order))

    def contiguous(self) -> array:
        """This array if it is contiguous, else a contiguous copy on the same device."""
        self._require_memory("contiguous()")
        return self if self.is_contiguous else clone(self)

    # ---- data movement ---------------------------------------------------------------

    def to(self, device: Devicelike) -> array:
        """This array on `device`: itself if already there, else a copy."""
        self._require_memory("to()")
        target = get_device(device)
        return self if target == self.device else clone(self, device=target)

    def fill_(self, value: Any) -> None:
        """Sets every element to `value` (a scalar, a vector/matrix of the element shape, a
        matrix's components in one row (a flat list or 1-d NumPy array), or a struct
        instance)."""
        self._require_memory("fill_()")
        np_dtype, inner = element_layout(self.dtype)
        pattern = element_storage(struct_fill_value(self.dtype, value), self.dtype, np_dtype)
        if pattern.shape not in ((), inner):
            if len(inner) != 2 or pattern.shape != (math.prod(inner),):
                raise ValueError(f"cannot fill an array of {self.dtype!r} with a value of "
                                 f"shape {pattern.shape}")
            pattern = pattern.reshape(inner)  # a matrix's components in a row, as Warp takes
        if self.size:
            memory.fill_array(self, np.broadcast_to(pattern, inner))
        keep_field_arrays(self, self.dtype, value)
        self.mark_init()  # initialised: earlier reads no longer matter

    def zero_(self) -> None:
        """Sets every element to zero (all bytes zero, which also suits struct elements)."""
        self._require_memory("zero_()")
        np_dtype, inner = element_layout(self.dtype)
        if self.size:
            memory.fill_array(self, np.zeros(inner, np_dtype))
        self.mark_init()

    def assign(self, src: Any) -> None:
        """Copies `src` (an array, NumPy array or list of the same shape) into this array;
        the grads too when both have one (recorded on an active `kc.Tape`, as `kc.copy`)."""
        self._require_memory("assign()")
        if not isinstance(src, array):
            src = array(src, dtype=self.dtype, device="cpu", copy=False)
        src._require_memory("assign()")
        if src.dtype != self.dtype:
            raise TypeError(f"cannot assign an array of {src.dtype!r} to one of {self.dtype!r}")
        if src.shape != self.shape:
            raise ValueError(f"cannot assign an array of shape {src.shape} to one of "
                             f"shape {self.shape}")
        memory.copy_array(self, src)
        if self._grad is not None and src._grad is not None:
            copy_grads(self, src, 0, 0, src.size, None)


def _check_dims(dims: Sequence[int]) -> None:
    # Kernels index every dimension with 32-bit ints, as Warp's do.
    for axis, n in enumerate(dims):
        if n > _MAX_DIM:
            raise ValueError("Array shapes must not exceed the maximum representable value of a "
                             f"signed 32-bit integer, got {n} in dimension {axis}")


_MAX_DIM = (1 << 31) - 1


# The constructors live in their own module; they are names of this one too.
from kernelc.runtime.array_factory import (  # noqa: E402
    clone,
    empty,
    empty_like,
    full,
    full_like,
    ones,
    ones_like,
    zeros,
    zeros_like,
)

__all__ = ["Devicelike", "array", "clone", "empty", "empty_like", "full", "full_like", "ones",
           "ones_like", "zeros", "zeros_like"]
