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


@wp.func
def scaled_into(i: int, xs: wp.array(dtype=float), ys: wp.array(dtype=float)):
    ys[i] = xs[i] * xs[i]


@wp.func_grad(scaled_into)
def adj_scaled_into(i: int, xs: wp.array(dtype=float), ys: wp.array(dtype=float)):
    # into the gradient array of an array parameter (not the true derivative, on purpose)
    wp.adjoint[xs][i] += 5.0 * xs[i] + wp.adjoint[ys][i]


@wp.kernel
def ka(xs: wp.array(dtype=float), ys: wp.array(dtype=float)):
    scaled_into(wp.tid(), xs, ys)


@wp.struct
class Pair:
    scale: float
    v: wp.vec3


@wp.func
def weigh(x: float, y: float):
    return x * y


@wp.func_grad(weigh)
def adj_weigh(x: float, y: float, adj_ret: float):
    wp.adjoint[x] += 10.0 * adj_ret
    wp.adjoint[y] += 20.0 * adj_ret


@wp.func
def weigh(p: Pair):  # noqa: F811  (an overload with its own gradient)
    return p.scale * p.v[0]


@wp.func_grad(weigh)
def adj_weigh(p: Pair, adj_ret: float):  # noqa: F811
    wp.adjoint[p.scale] += 3.0 * adj_ret  # fields of a struct parameter
    wp.adjoint[p.v][1] += 7.0 * adj_ret


@wp.kernel
def ks(x: wp.array(dtype=float), pairs: wp.array(dtype=Pair), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, weigh(x[i], 2.0) + weigh(pairs[i]))
