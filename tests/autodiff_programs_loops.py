"""More of the differentiable programs compared under Warp and kernelc (see
`tests/autodiff_programs.py`, which re-exports them): nested and data-dependent loops,
early return, vector loop state, float16."""

# No `from __future__ import annotations`: Warp reads kernel annotations as objects.

import importlib
import os
import typing

wp = importlib.import_module(os.environ.get("KERNELC_AUTODIFF_MODULE", "kernelc"))
Any = typing.Any


@wp.kernel
def k_nested(x: wp.array(dtype=Any), a: wp.array(dtype=Any), n: int,
             loss: wp.array(dtype=Any)):
    i = wp.tid()
    p = x[i]
    for j in range(n):
        for k in range(2):  # static inside dynamic
            p = p * a[j] + a[k]
        if p > a[0]:  # a branch on the carried state
            p = wp.sin(p)
        for k in range(j):  # dynamic inside dynamic
            p = p * a[k]
    q = x[i] * x[i] + a[3]
    while q < a[5]:  # a trip count that depends on the values
        q = q * a[2] + a[3]
    wp.atomic_add(loss, 0, p + q)


for _t in (wp.float32, wp.float64):
    wp.overload(k_nested, [wp.array(dtype=_t), wp.array(dtype=_t), int, wp.array(dtype=_t)])


@wp.kernel
def k_early_vec(x: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3),
                n: int, loss: wp.array(dtype=float)):
    i = wp.tid()
    if x[i] < 0.0:
        wp.atomic_add(loss, 0, x[i] * x[i])
        return
    u = v[i]
    for j in range(n):  # vector state carried by a dynamic loop
        u = wp.cross(u, b[j]) + u * x[i]
    wp.atomic_add(loss, 0, wp.dot(u, b[0]))


@wp.kernel
def k_pair(a: wp.array(dtype=float), b: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, a[i] * wp.sin(b[i]))


@wp.kernel
def k_half(a: wp.array(dtype=wp.float16), loss: wp.array(dtype=wp.float16)):
    i = wp.tid()
    wp.atomic_add(loss, 0, wp.sin(a[i]) * a[i])
