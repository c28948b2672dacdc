"""Kernels of `tests/test_uniform_updates.py`: atomics every thread applies to one element
(summed per worker on the CPU), and look-alikes that must stay plain atomics."""

from __future__ import annotations

import kernelc as kc


@kc.struct
class Params:
    offset: kc.array(dtype=kc.vec3)
    scale: kc.array(dtype=float)
    weight: float


@kc.kernel
def totals(x: kc.array(dtype=float), acc: kc.array(dtype=float), counts: kc.array(dtype=int),
           vsum: kc.array(dtype=kc.vec3), slot: int):
    i = kc.tid()
    kc.atomic_add(acc, 0, x[i])
    kc.atomic_sub(acc, slot + 1, 2.0 * x[i])
    if x[i] > 0.0:
        kc.atomic_add(counts, slot, 1)
        vsum[slot] += kc.vec3(x[i], 1.0, -x[i])


@kc.kernel
def totals_2d(x: kc.array2d(dtype=kc.float64), acc: kc.array(dtype=kc.float64)):
    i, j = kc.tid()
    kc.atomic_add(acc, 1, x[i, j] * x[i, j])


@kc.kernel
def read_back(x: kc.array(dtype=float), acc: kc.array(dtype=float), seen: kc.array(dtype=float)):
    """`acc` is read too: its updates must stay atomics."""
    i = kc.tid()
    kc.atomic_add(acc, 0, x[i])
    seen[i] = acc[1]


@kc.kernel
def old_value_used(x: kc.array(dtype=float), acc: kc.array(dtype=float),
                   old: kc.array(dtype=float)):
    i = kc.tid()
    old[i] = kc.atomic_add(acc, 0, x[i])


@kc.kernel
def per_thread_index(x: kc.array(dtype=float), acc: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(acc, i % 3, x[i])


@kc.kernel
def loop_index(x: kc.array(dtype=float), acc: kc.array(dtype=float)):
    i = kc.tid()
    for k in range(3):
        kc.atomic_add(acc, k, x[i])


@kc.kernel
def struct_fields(p: Params, x: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    i = kc.tid()
    y = (x[i] - p.offset[0]) * p.scale[0] * p.weight
    out[i] = kc.dot(y, y)
