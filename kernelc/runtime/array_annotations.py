"""Warp 1.19's subscripted array annotations: `kc.array[T]`, `kc.array[T, n]` and
`kc.array2d[T]`, and the fixed-dimension constructors `kc.array1d` ... `kc.array4d`.

Each gives a type-only `kc.array(dtype=T, ndim=n)`, the same object a call would give.
"""

from __future__ import annotations

import typing
from typing import Any

from kernelc.runtime import memory
from kernelc.runtime.array import array


def _annotation_ndim(ndim: Any) -> int:
    """The `n` of `kc.array[T, n]`, given as an int or as `typing.Literal[n]`."""
    if typing.get_origin(ndim) is typing.Literal:
        (ndim,) = typing.get_args(ndim)
    if isinstance(ndim, bool) or not isinstance(ndim, int):
        raise TypeError(f"an array's ndim must be an int from 1 to {memory.MAX_DIMS}, "
                        f"got {ndim!r}")
    return ndim


def _subscript(params: Any) -> array:
    """`kc.array[T]` and `kc.array[T, Literal[n]]`: a parameter annotation."""
    if not isinstance(params, tuple):
        return array(dtype=params, ndim=1)
    if len(params) != 2:
        raise TypeError(f"kc.array[...] takes a dtype and an optional ndim, got {len(params)} "
                        "parameters")
    return array(dtype=params[0], ndim=_annotation_ndim(params[1]))


array.__class_getitem__ = classmethod(lambda cls, params: _subscript(params))  # type: ignore[attr-defined]


class _FixedNdim:
    """`kc.arrayNd(...)` builds an N-d array; `kc.arrayNd[T]` annotates an N-d parameter."""

    ndim = 0

    def __new__(cls, *args: Any, **kwargs: Any) -> array:  # type: ignore[misc]
        return array(*args, ndim=cls.ndim, **kwargs)

    def __class_getitem__(cls, dtype: Any) -> array:
        if isinstance(dtype, tuple):
            raise TypeError(f"kc.array{cls.ndim}d[...] takes one dtype, got {len(dtype)} "
                            "parameters")
        return array(dtype=dtype, ndim=cls.ndim)


class array1d(_FixedNdim):
    """`kc.array(..., ndim=1)`: a 1-d array, or with `[T]` a 1-d parameter annotation."""

    ndim = 1


class array2d(_FixedNdim):
    """`kc.array(..., ndim=2)`: a 2-d array, or with `[T]` a 2-d parameter annotation."""

    ndim = 2


class array3d(_FixedNdim):
    """`kc.array(..., ndim=3)`: a 3-d array, or with `[T]` a 3-d parameter annotation."""

    ndim = 3


class array4d(_FixedNdim):
    """`kc.array(..., ndim=4)`: a 4-d array, or with `[T]` a 4-d parameter annotation."""

    ndim = 4
