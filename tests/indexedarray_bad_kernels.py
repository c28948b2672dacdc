"""Kernels with mistakes, for the error tests of tests/test_indexedarray.py (each fails to
compile when it is first launched; the tests pin the reported line and column)."""

import kernelc as wp


@wp.kernel
def too_many(a: wp.indexedarray(dtype=float)):
    i = wp.tid()
    a[i, 0] = 1.0


@wp.kernel
def wrong_value(a: wp.indexedarray(dtype=float)):
    a[0] = wp.float64(1.0)


@wp.kernel
def no_data(a: wp.indexedarray(dtype=float)):
    x = a.data  # noqa: F841


@wp.kernel
def atomic_ndim(a: wp.indexedarray2d(dtype=float)):
    wp.atomic_add(a, 0, 1.0)


@wp.func
def takes_array(a: wp.array(dtype=float)) -> float:
    return a[0]


@wp.kernel
def passes_indexed(a: wp.indexedarray(dtype=float), out: wp.array(dtype=float)):
    out[0] = takes_array(a)
