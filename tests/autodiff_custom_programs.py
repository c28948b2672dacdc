"""Kernels with custom gradients (`@wp.func_grad`), run under kernelc and under Warp
(tests/test_autodiff_custom.py swaps the import)."""

import kernelc as wp


@wp.func
def safe_sqrt(x: float):
    return wp.sqrt(x)

@wp.func_grad(safe_sqrt)
def adj_safe_sqrt(x: float, adj_ret: float):
    if x > 0.0:
        wp.adjoint[x] += 1.0 / (2.0 * wp.sqrt(x)) * adj_ret

@wp.func
def clipped_mul(a: float, b: float):
    return a * b, a + b

@wp.func_grad(clipped_mul)
def adj_clipped_mul(a: float, b: float, adj_r0: float, adj_r1: float):
    wp.adjoint[a] += wp.clamp(b * adj_r0, -1.0, 1.0) + adj_r1
    wp.adjoint[b] += wp.clamp(a * adj_r0, -1.0, 1.0) + adj_r1

@wp.kernel
def k(x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    p, s = clipped_mul(x[i], y[i])
    out[i] = safe_sqrt(x[i]) + p + 2.0 * s

@wp.kernel
def kg(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.grad(safe_sqrt)(x[i])


@wp.func
def cube(v: wp.vec3):
    return wp.dot(v, v) * v[0]


@wp.func_grad(cube)
def adj_cube(v: wp.vec3, adj_ret: float):
    # deliberately not the true gradient: only the x component, doubled
    wp.adjoint[v] += wp.vec3(2.0 * adj_ret, 0.0, 0.0)


@wp.kernel
def kv(p: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, cube(p[i]) * 3.0)


@wp.func
def twice(x: float):
    return x * 2.0


@wp.func_replay(twice)
def replay_twice(x: float):
    return x * 3.0  # deliberately not twice's value: the backward pass must use this one


@wp.kernel
def kr(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    y = twice(x[i])
    wp.atomic_add(loss, 0, y * y)
