"""The kernels that move elements in and out of indexed arrays off the CPU (gather into an
array, scatter from one, fill), used by `kernelc/runtime/indexed_copy.py`. Generic in the
element type; one per number of dimensions. Not public names.
"""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc.runtime.array import array
from kernelc.runtime.indexedarray import indexedarray

__all__: list[str] = []


def _builtin(fn):
    kernel = kc.kernel(fn)
    kernel.is_builtin = True  # reported as "builtin kernel ..." by the timing tools
    return kernel


@_builtin
def gather_1d(src: indexedarray(dtype=Any, ndim=1), dest: array(dtype=Any, ndim=1)):
    i = kc.tid()
    dest[i] = src[i]


@_builtin
def gather_2d(src: indexedarray(dtype=Any, ndim=2), dest: array(dtype=Any, ndim=2)):
    i, j = kc.tid()
    dest[i, j] = src[i, j]


@_builtin
def gather_3d(src: indexedarray(dtype=Any, ndim=3), dest: array(dtype=Any, ndim=3)):
    i, j, k = kc.tid()
    dest[i, j, k] = src[i, j, k]


@_builtin
def gather_4d(src: indexedarray(dtype=Any, ndim=4), dest: array(dtype=Any, ndim=4)):
    i, j, k, m = kc.tid()
    dest[i, j, k, m] = src[i, j, k, m]


@_builtin
def scatter_1d(dest: indexedarray(dtype=Any, ndim=1), src: array(dtype=Any, ndim=1)):
    i = kc.tid()
    dest[i] = src[i]


@_builtin
def scatter_2d(dest: indexedarray(dtype=Any, ndim=2), src: array(dtype=Any, ndim=2)):
    i, j = kc.tid()
    dest[i, j] = src[i, j]


@_builtin
def scatter_3d(dest: indexedarray(dtype=Any, ndim=3), src: array(dtype=Any, ndim=3)):
    i, j, k = kc.tid()
    dest[i, j, k] = src[i, j, k]


@_builtin
def scatter_4d(dest: indexedarray(dtype=Any, ndim=4), src: array(dtype=Any, ndim=4)):
    i, j, k, m = kc.tid()
    dest[i, j, k, m] = src[i, j, k, m]


@_builtin
def fill_1d(dest: indexedarray(dtype=Any, ndim=1), value: array(dtype=Any, ndim=1)):
    i = kc.tid()
    dest[i] = value[0]


@_builtin
def fill_2d(dest: indexedarray(dtype=Any, ndim=2), value: array(dtype=Any, ndim=1)):
    i, j = kc.tid()
    dest[i, j] = value[0]


@_builtin
def fill_3d(dest: indexedarray(dtype=Any, ndim=3), value: array(dtype=Any, ndim=1)):
    i, j, k = kc.tid()
    dest[i, j, k] = value[0]


@_builtin
def fill_4d(dest: indexedarray(dtype=Any, ndim=4), value: array(dtype=Any, ndim=1)):
    i, j, k, m = kc.tid()
    dest[i, j, k, m] = value[0]
