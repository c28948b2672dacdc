"""Kernels, funcs and structs of tests/test_indexedarray.py (kernels live in files: the front
end reads their source)."""

from __future__ import annotations

from typing import Any, Literal

import kernelc as wp

# ---- reads, writes, atomics, per number of dimensions --------------------------------------


@wp.kernel
def rw_1d(a: wp.indexedarray[float], out: wp.array[float]):
    i = wp.tid()
    out[i] = a[i] * 2.0 + 1.0
    a[i] = a[i] - 3.0
    wp.atomic_add(a, i, 0.5)


@wp.kernel
def rw_2d(a: wp.indexedarray[float, Literal[2]], out: wp.array2d[float]):
    i, j = wp.tid()
    out[i, j] = a[i, j] * 2.0 + a[i][j]
    a[i, j] = a[i, j] - 3.0
    wp.atomic_add(a, i, j, 0.5)


@wp.kernel
def rw_3d(a: wp.indexedarray3d(dtype=float), out: wp.array3d[float]):
    i, j, k = wp.tid()
    out[i, j, k] = a[i, j, k] * 2.0 + a[i][j][k]
    a[i, j, k] = a[i, j][k] - 3.0
    wp.atomic_add(a, i, j, k, 0.5)


@wp.kernel
def rw_4d(a: wp.indexedarray(dtype=float, ndim=4), out: wp.array4d[float]):
    i, j, k, m = wp.tid()
    out[i, j, k, m] = a[i, j, k, m] * 2.0 + a[i][j, k][m]
    a[i, j, k, m] = a[i, j, k][m] - 3.0
    wp.atomic_add(a, i, j, k, m, 0.5)


RW = {1: rw_1d, 2: rw_2d, 3: rw_3d, 4: rw_4d}


@wp.kernel
def accumulate(a: wp.indexedarray[wp.int32], top: wp.indexedarray[wp.int32],
               values: wp.array[wp.int32], n: int):
    """Every thread adds into element tid % n: `+=` and atomics must not lose updates."""
    t = wp.tid()
    i = t % n
    a[i] += values[t]
    wp.atomic_sub(a, i, 1)
    wp.atomic_max(top, 0, values[t])


@wp.kernel
def vec_ops(a: wp.indexedarray2d(dtype=wp.vec3), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    v = a[i, j]
    out[i, j] = wp.length(v)
    a[i, j] = wp.vec3(v[1], v[2], v[0])
    wp.atomic_add(a, i, j, wp.vec3(1.0, 2.0, 3.0))


@wp.kernel
def from_end(a: wp.indexedarray2d(dtype=wp.int32), out: wp.array2d(dtype=wp.int32)):
    i, j = wp.tid()
    out[i, j] = a[i - a.shape[0], -1 - j]


@wp.kernel
def read_at(a: wp.indexedarray(dtype=float), out: wp.array(dtype=float), offset: int):
    i = wp.tid()
    out[i] = a[i + offset]


@wp.kernel
def shapes_3d(a: wp.indexedarray3d(dtype=float), out: wp.array(dtype=wp.int32)):
    out[0] = a.shape[0]
    out[1] = a.shape[1]
    out[2] = a.shape[2]
    view2 = a[1]
    out[3] = view2.shape[0]
    out[4] = view2.shape[1]
    view1 = a[1, 0]
    out[5] = view1.shape[0]
    out[6] = len(a)


@wp.kernel
def view_rows(a: Any, out: wp.array2d(dtype=float)):
    """For arrays and indexed arrays alike: `row = a[i]` is a view of a row."""
    i = wp.tid()
    row = a[i]
    for j in range(row.shape[0]):
        out[i, j] = row[j]
        row[j] = row[j] + 10.0


# ---- generic kernels, overloads, funcs -------------------------------------------------------


@wp.kernel
def inc_any(a: Any):
    i, j = wp.tid()
    a[i, j] = a[i, j] + a.dtype(1)


wp.overload(inc_any, [wp.array2d[wp.int32]])
wp.overload(inc_any, [wp.indexedarray[wp.int32, Literal[2]]])


@wp.kernel
def scale_generic(a: wp.indexedarray(dtype=Any), s: Any):
    i = wp.tid()
    a[i] = a[i] * s


@wp.func
def weighted(a: wp.indexedarray(dtype=float), i: int, w: float) -> float:
    return a[i] * w


@wp.func
def bump(a: wp.indexedarray(dtype=float), i: int):
    a[i] += 1.0


@wp.kernel
def through_func(a: wp.indexedarray(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = weighted(a, i, 3.0)
    bump(a, i)


# ---- structs ----------------------------------------------------------------------------------


@wp.struct
class Holder:
    scale: float
    iarr: wp.indexedarray[float]


@wp.struct
class Outer:
    inner: Holder
    grid: wp.indexedarray2d(dtype=wp.int32)


@wp.kernel
def struct_field(h: Holder, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = h.iarr[i] * h.scale
    h.iarr[i] = 2.0 * h.iarr[i]
    wp.atomic_add(h.iarr, i, 1.0)


@wp.kernel
def nested_struct(o: Outer, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = o.inner.iarr[i] * o.inner.scale + float(o.grid[i, 1])
    o.inner.iarr[i] = -o.inner.iarr[i]
    o.grid[i, 0] += 7


@wp.kernel
def struct_array(items: wp.array(dtype=Holder), out: wp.array(dtype=float)):
    i = wp.tid()
    s = items[1]
    out[i] = s.iarr[i] * s.scale
    s.iarr[i] = 5.0
    wp.atomic_add(items[0].iarr, i, 1.0)


# ---- autodiff ------------------------------------------------------------------------------------


@wp.kernel
def weighted_square(a: wp.indexedarray(dtype=float), x: wp.array(dtype=float),
                    y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a[i] * x[i] * x[i]


# ---- aliasing: an indexed array over an array also passed on its own ----------------------------


@wp.kernel
def own_and_shared(b: wp.array(dtype=float), a: wp.indexedarray(dtype=float)):
    i = wp.tid()
    b[i] += 1.0  # each thread its own element: without a shared view, a plain update
    wp.atomic_add(a, i % 2, 1.0)  # many threads, through the view, onto b's elements
