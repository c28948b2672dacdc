"""Kernels for tests/test_torch_interop.py (kernelc reads kernel source from files)."""

from __future__ import annotations

from typing import Any

import kernelc as kc


@kc.kernel
def scale_add(x: kc.array(dtype=float), y: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = 2.0 * x[i] + y[i]


@kc.kernel
def triple_2d(x: kc.array2d(dtype=float), out: kc.array2d(dtype=float)):
    i, j = kc.tid()
    out[i, j] = 3.0 * x[i, j]


@kc.kernel
def vec3_lengths(v: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = kc.length(v[i])


@kc.kernel
def mat_vec(m: kc.array(dtype=kc.mat22), v: kc.array(dtype=kc.vec2), out: kc.array(dtype=kc.vec2)):
    i = kc.tid()
    out[i] = m[i] * v[i]


@kc.kernel
def copy_any(src: kc.array(dtype=Any), dst: kc.array(dtype=Any)):
    i = kc.tid()
    dst[i] = src[i]


@kc.kernel
def square_sum(x: kc.array(dtype=float), loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, x[i] * x[i])


@kc.kernel
def vec2_cubes(x: kc.array(dtype=kc.vec2), out: kc.array(dtype=float)):
    # A smooth function of both components, so that each has its own gradient.
    i = kc.tid()
    p = x[i]
    out[i] = p[0] * p[0] * p[1] + kc.sin(p[1])
