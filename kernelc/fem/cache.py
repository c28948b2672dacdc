"""Temporary arrays shared between `kernelc.fem` calls (Warp's `warp.fem.TemporaryStore`).

A `TemporaryStore` keeps the memory of the temporaries it lent: `borrow_temporary` hands out
an array over a free buffer of the store big enough for it (or over a new one, 1.5 times the
largest free buffer when there is one, as Warp grows them), and the buffer goes back to the
store when the array is released (`temp.release()`) or garbage collected. A temporary
`detach()`ed from the store keeps its memory for itself. Without a store (none given and no
default set with `set_default_temporary_store`), `borrow_temporary` allocates a plain array.

`dynamic_func`, `dynamic_kernel` and `dynamic_struct` (cache_dynamic.py) make a func,
kernel or struct once per definition and suffix.

While a `kc.Tape` records, `release()` does nothing, as in Warp: a recorded launch may read
the temporary again during the backward pass.
"""

from __future__ import annotations

import bisect
import math
import weakref
from typing import Any

import kernelc as kc
from kernelc.fem.cache_dynamic import dynamic_func, dynamic_kernel, dynamic_struct
from kernelc.runtime import memory
from kernelc.runtime.context import get_runtime

_DEFAULT_KEY = "fem_default_temporary_store"  # Runtime.extras entry (no module globals)
_TAPE_KEY = "tape"  # where kc.Tape marks itself active

Temporary = kc.array
"""A temporary array lent by a `TemporaryStore`: a `kc.array` with `release()` and
`detach()` methods (Warp's `warp.fem.Temporary`)."""


class _Pool:
    """The free buffers of one element layout (scalar type, device, pinned), by size."""

    def __init__(self, device: Any, pinned: bool) -> None:
        self.device = device
        self.pinned = pinned
        self.free: list[kc.array] = []  # byte buffers, ascending capacity
        self.capacities: list[int] = []

    def take(self, nbytes: int) -> kc.array:
        """A free buffer of at least `nbytes` bytes, removed from the pool (or a new one)."""
        index = bisect.bisect_left(self.capacities, nbytes)
        if index < len(self.free):
            self.capacities.pop(index)
            return self.free.pop(index)
        if self.capacities:
            nbytes = max(int(self.capacities[-1] * 1.5), nbytes)
        return kc.empty(nbytes, dtype=kc.uint8, device=self.device, pinned=self.pinned)

    def give_back(self, buffer: kc.array) -> None:
        """Returns a buffer to the pool."""
        index = bisect.bisect_left(self.capacities, buffer.capacity)
        self.free.insert(index, buffer)
        self.capacities.insert(index, buffer.capacity)


class TemporaryStore:
    """A pool of temporary arrays reused across `kernelc.fem` calls (Warp's
    `warp.fem.TemporaryStore`).

    Pass it to the functions that take a `temporary_store`, or make it the default with
    `set_default_temporary_store`. By default there is none, and temporaries are plain
    arrays.
    """

    def __init__(self) -> None:
        self._pools: dict[tuple, _Pool] = {}

    def clear(self) -> None:
        """Forgets every free buffer (arrays still lent keep their memory)."""
        self._pools = {}

    def free_bytes(self) -> int:
        """Bytes held in free buffers, ready to be lent again."""
        return sum(sum(pool.capacities) for pool in self._pools.values())

    def borrow(self, shape: Any, dtype: Any, pinned: bool = False, device: Any = None,
               requires_grad: bool = False) -> Temporary:
        """An array of `shape` and `dtype` over memory of the store (contents undefined;
        the gradient, with `requires_grad`, zeroed as `kc.empty` makes it).

        Args:
            shape: Dimensions of the array.
            dtype: Element type.
            pinned: Page-locked host memory.
            device: Where the memory lives (default: the current device).
            requires_grad: Also lend a zeroed gradient array, `.grad`.
        """
        dtype = memory.resolve_dtype(dtype)
        device = kc.get_device(device)
        grad = None
        if requires_grad:
            grad = self.borrow(shape, dtype, pinned=pinned, device=device)
            grad.zero_()
        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        nbytes = dtype.size * math.prod(dims)
        if nbytes == 0:
            return _with_methods(kc.empty(dims, dtype=dtype, device=device, pinned=pinned,
                                          grad=grad), None)
        key = (repr(dtype), str(device), pinned)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = _Pool(device, pinned)
        buffer = pool.take(nbytes)
        temporary = kc.array(ptr=buffer.ptr, dtype=dtype, shape=dims, device=device,
                             capacity=nbytes, pinned=pinned, grad=grad)
        temporary._temporary_buffer = buffer  # the memory lives as long as the array
        # When the array goes, its buffer goes back to the pool (unless released before).
        returned = weakref.finalize(temporary, pool.give_back, buffer)
        return _with_methods(temporary, returned)


def _with_methods(temporary: kc.array, returned: weakref.finalize | None) -> Temporary:
    """Adds Warp's `release()` and `detach()` to a lent array."""
    ref = weakref.ref(temporary)

    def release() -> None:
        """Returns the memory to the store now (not while a tape records)."""
        if get_runtime().extras.get(_TAPE_KEY) is not None:
            return
        if returned is not None:
            returned()

    def detach() -> Temporary | None:
        """Keeps the memory for this array: it never returns to the store."""
        if returned is not None:
            returned.detach()
        return ref()

    temporary.release = release
    temporary.detach = detach
    return temporary


def set_default_temporary_store(temporary_store: TemporaryStore | None) -> None:
    """Sets the store `kernelc.fem` functions borrow from when none is passed (None: plain
    arrays), as Warp's `warp.fem.set_default_temporary_store`."""
    get_runtime().extras[_DEFAULT_KEY] = temporary_store


def default_temporary_store() -> TemporaryStore | None:
    """The store set with `set_default_temporary_store`, or None."""
    return get_runtime().extras.get(_DEFAULT_KEY)


def borrow_temporary(temporary_store: TemporaryStore | None, shape: Any, dtype: Any,
                     pinned: bool = False, requires_grad: bool = False,
                     device: Any = None) -> Temporary:
    """A temporary array from `temporary_store` (or the default store; a plain array when
    there is none), as Warp's `warp.fem.borrow_temporary`.

    Args:
        temporary_store: The store to borrow from, or None for the default one.
        shape: Dimensions of the array.
        dtype: Element type.
        pinned: Page-locked host memory.
        requires_grad: Also make a zeroed gradient array.
        device: Where the memory lives (default: the current device).
    """
    if temporary_store is None:
        temporary_store = default_temporary_store()
    if temporary_store is None:
        return _with_methods(kc.empty(shape, dtype=dtype, device=device, pinned=pinned,
                                      requires_grad=requires_grad), None)
    return temporary_store.borrow(shape, dtype, pinned=pinned, device=device,
                                  requires_grad=requires_grad)


def borrow_temporary_like(array: kc.array, temporary_store: TemporaryStore | None
                          ) -> Temporary:
    """A temporary with the shape, dtype, device, pinning and `requires_grad` of `array`
    (Warp's `warp.fem.borrow_temporary_like`)."""
    return borrow_temporary(temporary_store, shape=array.shape, dtype=array.dtype,
                            pinned=array.pinned, device=array.device,
                            requires_grad=array.requires_grad)


__all__ = ["Temporary", "TemporaryStore", "borrow_temporary", "borrow_temporary_like",
           "default_temporary_store", "dynamic_func", "dynamic_kernel", "dynamic_struct",
           "set_default_temporary_store"]
