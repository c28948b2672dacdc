"""`kc.indexedarray`: an array seen through per-dimension index arrays (Warp's
`wp.indexedarray`).

`kc.indexedarray(data, [I, None, K])` is the (len(I), data.shape[1], len(K)) array whose
element [i, j, k] is `data[I[i], j, K[k]]`: each dimension either goes through a 1-d int32
index array or is used as it is (None). It copies nothing; writes through it (in kernels,
`fill_`, `assign`, `kc.copy`) change `data`. `data[I]`, `data[:, I]`, `data[1:3, I]` (an
index array inside an array's subscript) make one too.

Called without data (`kc.indexedarray(dtype=float, ndim=2)`, `kc.indexedarray[float]`,
`kc.indexedarray[float, Literal[2]]`, `kc.indexedarray2d(dtype=float)`) it is a type-only
object that annotates kernel parameters and struct fields. Indexed arrays carry no
gradients, as in Warp: a backward pass treats what is read through them as constants.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kernelc.runtime import indexed_copy, memory
from kernelc.runtime.array import array, clone, empty_like
from kernelc.runtime.array_ops import install_binary_operators
from kernelc.runtime.device import Device, get_device
from kernelc.types import ArrayType, IndexedArrayType, int32

Devicelike = Device | str | None


class indexedarray:
    """Indexed access to a subset of the elements of a `kc.array` (Warp's `indexedarray`).

    Args:
        data: The array indexed (1 to 4 dims); None makes a type-only annotation.
        indices: One 1-d int32 `kc.array` per leading dimension, None for a dimension that
            is not indexed (a list shorter than `data.ndim` leaves the rest as they are);
            or a single index array for the first dimension.
        dtype: Element type; must be data's if both are given (an annotation's dtype,
            `typing.Any` for a generic parameter).
        ndim: Number of dimensions; must be data's if both are given.

    Attributes:
        data (array | None): The indexed array.
        indices (list): 4 entries: the index array of each dimension, or None.
        shape (tuple[int, ...]): The size of each dimension (an index array's length
            where indexed).
        dtype (Type): The element type.
        ndim (int): Number of dimensions.
        size (int): Number of elements.
        device (Device | None): The device of `data` (None for an annotation).

    Raises:
        ValueError: `data` is not a kc.array, more index arrays than dimensions, an index
            array that is not a 1-d int32 kc.array on data's device, or a dtype or ndim
            that disagrees with data's.
    """

    is_contiguous = False
    # No gradients (Warp's indexed arrays have none): `kc.clone`, `empty_like`, ... see so.
    grad = None
    _grad = None
    requires_grad = False
    retain_grad = False

    def __init__(self, data: array | None = None, indices: Any = None, dtype: Any = None,
                 ndim: int | None = None) -> None:
        self.data = data
        self.indices: list[array | None] = [None] * memory.MAX_DIMS
        if data is None:
            self._init_annotation(dtype, ndim)
            return
        if not isinstance(data, array) or data.ptr is None:
            raise ValueError(f"the data of an indexedarray must be a kc.array with memory, "
                             f"got {type(data).__name__}")
        wanted = None if dtype is None else memory.resolve_dtype(dtype)
        if wanted is not None and wanted != data.dtype:
            raise ValueError(f"the requested dtype ({wanted!r}) is not the data's "
                             f"({data.dtype!r})")
        if ndim is not None and ndim != data.ndim:
            raise ValueError(f"the requested ndim ({ndim}) is not the data's ({data.ndim})")
        if any(s % data.dtype.size for s in data.strides):
            raise ValueError(f"the data's strides {data.strides} are not multiples of its "
                             f"element size {data.dtype.size}")
        self.dtype, self.ndim, self.device = data.dtype, data.ndim, data.device
        self.pinned = data.pinned
        shape = list(data.shape)
        for axis, index in enumerate(_index_list(indices, data.ndim)):
            if index is not None:
                _check_index_array(index, axis, data.device)
                self.indices[axis] = index
                shape[axis] = index.shape[0]
        self.shape = tuple(shape)
        self.size = math.prod(self.shape)
        self._kc_type = IndexedArrayType(self.dtype, self.ndim)

    def _init_annotation(self, dtype: Any, ndim: int | None) -> None:
        ndim = 1 if ndim is None else ndim
        if not 1 <= ndim <= memory.MAX_DIMS:
            raise ValueError(f"indexed arrays have 1 to {memory.MAX_DIMS} dimensions, got "
                             f"ndim={ndim}")
        # No dtype (or typing.Any) is a generic parameter.
        self.dtype = None if dtype is None else memory.resolve_dtype(dtype)
        self.ndim, self.device, self.pinned = ndim, None, False
        self.shape, self.size = (0,) * ndim, 0
        self._kc_type = IndexedArrayType(self.dtype, ndim)

    @classmethod
    def __class_getitem__(cls, params: Any) -> indexedarray:
        """`kc.indexedarray[T]` and `kc.indexedarray[T, Literal[n]]`: an annotation."""
        from kernelc.runtime.array_annotations import _annotation_ndim

        if not isinstance(params, tuple):
            return cls(dtype=params, ndim=1)
        if len(params) != 2:
            raise TypeError(f"kc.indexedarray[...] takes a dtype and an optional ndim, got "
                            f"{len(params)} parameters")
        return cls(dtype=params[0], ndim=_annotation_ndim(params[1]))

    def _require_memory(self, what: str) -> None:
        if self.data is None:
            raise TypeError(f"{what} needs an indexedarray with data, but {self!r} is a type "
                            f"annotation")

    # ---- Python protocol -------------------------------------------------------------

    def __len__(self) -> int:
        self._require_memory("len()")
        return self.shape[0]

    def __repr__(self) -> str:
        if self.data is None:
            return f"indexedarray(dtype={self.dtype!r}, ndim={self.ndim})"
        return f"indexedarray(shape={self.shape}, dtype={self.dtype!r})"

    def __str__(self) -> str:
        return repr(self) if self.data is None else str(self.numpy())

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        values = self.numpy()
        return values if dtype is None else values.astype(dtype, copy=False)

    # ---- contents ----------------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the elements (vector and matrix elements as trailing axes)."""
        self._require_memory("numpy()")
        if self.device.is_cpu:
            return indexed_copy.host_gather(self)
        return self.contiguous().numpy()

    def list(self) -> list[Any]:
        """The elements, flattened, as a Python list (see `kc.array.list`)."""
        self._require_memory("list()")
        return self.contiguous().list()

    def contiguous(self) -> array:
        """A contiguous `kc.array` copy of the elements on the same device."""
        self._require_memory("contiguous()")
        result = empty_like(self)
        indexed_copy.copy(result, self)
        return result

    def to(self, device: Devicelike) -> indexedarray | array:
        """This indexed array if on `device` already, else a contiguous copy there (a
        `kc.array`, as in Warp)."""
        self._require_memory("to()")
        target = get_device(device)
        return self if target == self.device else clone(self, device=target)

    def assign(self, src: Any) -> None:
        """Writes `src` (an array, indexed array, NumPy array or list of this shape) into
        the elements."""
        self._require_memory("assign()")
        if not isinstance(src, (array, indexedarray)):
            src = array(src, dtype=self.dtype, device="cpu", copy=False)
        indexed_copy.copy_checked(self, src)

    def fill_(self, value: Any) -> None:
        """Sets every element to `value` (a scalar, a vector/matrix value of the element
        shape, or a struct instance)."""
        self._require_memory("fill_()")
        indexed_copy.fill(self, value)

    def zero_(self) -> None:
        """Sets every element to zero."""
        self._require_memory("zero_()")
        indexed_copy.fill(self, 0)

    # ---- arithmetic: on a contiguous copy (kc.map reads plain arrays), written back for
    # the in-place forms (`z[idx] += y`, as Warp's example programs write it) -------------

    def _apply(self, name: str, other: Any, reflected: bool = False) -> array:
        from kernelc.runtime.array_ops import _map, _scalar_like

        if isinstance(other, indexedarray):
            other = other.contiguous()
        other = _scalar_like(self, other)
        values = self.contiguous()
        return _map(name, other, values) if reflected else _map(name, values, other)


def _indexed_binary(name: str, reflected: bool, in_place: bool) -> Any:
    def op(self: indexedarray, other: Any) -> Any:
        result = self._apply(name, other, reflected)
        if in_place:
            self.assign(result)
            return self
        return result

    op.__doc__ = f"Elementwise `{name}` on the selected elements (a new array)."
    return op


install_binary_operators(indexedarray, _indexed_binary)


def indexed_arg_type(want: IndexedArrayType | None, value: Any, device: Device,
                     fail: Any) -> IndexedArrayType:
    """The type of a `kc.indexedarray` launch argument for a parameter of type `want` (None:
    generic); None passes a null one, as for arrays. `fail(message)` makes the KernelError
    to raise."""
    kc_type = getattr(value, "_kc_type", None)
    if value is None and want is not None and want.dtype is not None:
        return want
    if not isinstance(kc_type, IndexedArrayType):
        got = "a kc.array" if isinstance(kc_type, ArrayType) else type(value).__name__
        raise fail(f"expected {want!r}, got {got}; make one with kc.indexedarray(data, "
                   f"[indices, ...]) (as in Warp, arrays are not converted)")
    if value.data is None:
        raise fail("got a type-only indexedarray (an annotation such as "
                   "kc.indexedarray(dtype=float)); pass one with data")
    if want is not None:
        if kc_type.ndim != want.ndim:
            raise fail(f"expected a {want.ndim}-d indexedarray, got a {kc_type.ndim}-d one")
        if want.dtype is not None and kc_type.dtype != want.dtype:
            raise fail(f"expected an indexedarray of {want.dtype!r}, got one of "
                       f"{kc_type.dtype!r}")
    if value.device != device:
        raise fail(f"indexedarray is on device '{value.device}' but the launch is on "
                   f"'{device}'")
    return kc_type


def _index_list(indices: Any, ndim: int) -> list[Any]:
    """The per-dimension index arrays given as `indices` (None, one array, or a list)."""
    if indices is None:
        return []
    if isinstance(indices, array):
        return [indices]
    if not isinstance(indices, (list, tuple)):
        raise ValueError(f"indices must be a kc.array or a list of kc.array (or None), got "
                         f"{type(indices).__name__}")
    if len(indices) > ndim:
        raise ValueError(f"{len(indices)} index arrays given for a {ndim}-d array")
    return list(indices)


def _check_index_array(index: Any, axis: int, device: Device) -> None:
    where = f"the index array of dimension {axis}"
    if not isinstance(index, array) or index.ptr is None:
        raise ValueError(f"{where} must be a kc.array, got {type(index).__name__}")
    if index.ndim != 1:
        raise ValueError(f"{where} must be one-dimensional, got {index.ndim} dimensions")
    if index.dtype != int32:
        raise ValueError(f"{where} must hold int32, got {index.dtype!r}")
    if index.device != device:
        raise ValueError(f"{where} is on device '{index.device}', the data on '{device}'")
    if index.strides[0] % 4:
        raise ValueError(f"{where} has a stride of {index.strides[0]} bytes, not a multiple "
                         f"of 4")


def index_with_arrays(arr: array, key: Any) -> indexedarray:
    """`arr[key]` where `key` holds index arrays: ints and slices make a view, and the
    index arrays index the view's dimensions they stand in (`arr[1:3, I]`)."""
    key = key if isinstance(key, tuple) else (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if any(k is Ellipsis for k in key):
        at = next(n for n, k in enumerate(key) if k is Ellipsis)
        key = key[:at] + (slice(None),) * (arr.ndim - len(key) + 1) + key[at + 1:]
    view = arr[tuple(slice(None) if isinstance(k, array) else k for k in key)]
    indices: list[array | None] = []
    for k in key:
        if isinstance(k, array):
            indices.append(k)
        elif isinstance(k, slice):
            indices.append(None)
    return indexedarray(view, indices)


def is_indexed(value: Any) -> bool:
    """Whether `value` is a `kc.indexedarray`."""
    return isinstance(value, indexedarray)


class _FixedNdim:
    """`kc.indexedarrayNd(...)` makes an N-d indexed array (or annotation);
    `kc.indexedarrayNd[T]` annotates an N-d parameter."""

    ndim = 0

    def __new__(cls, *args: Any, **kwargs: Any) -> indexedarray:  # type: ignore[misc]
        return indexedarray(*args, ndim=cls.ndim, **kwargs)

    def __class_getitem__(cls, dtype: Any) -> indexedarray:
        if isinstance(dtype, tuple):
            raise TypeError(f"kc.indexedarray{cls.ndim}d[...] takes one dtype, got "
                            f"{len(dtype)} parameters")
        return indexedarray(dtype=dtype, ndim=cls.ndim)


class indexedarray1d(_FixedNdim):
    """`kc.indexedarray(..., ndim=1)`: a 1-d indexed array, or a 1-d annotation."""

    ndim = 1


class indexedarray2d(_FixedNdim):
    """`kc.indexedarray(..., ndim=2)`: a 2-d indexed array, or a 2-d annotation."""

    ndim = 2


class indexedarray3d(_FixedNdim):
    """`kc.indexedarray(..., ndim=3)`: a 3-d indexed array, or a 3-d annotation."""

    ndim = 3


class indexedarray4d(_FixedNdim):
    """`kc.indexedarray(..., ndim=4)`: a 4-d indexed array, or a 4-d annotation."""

    ndim = 4

