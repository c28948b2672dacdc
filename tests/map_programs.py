"""Programs using `wp.map`, run unchanged under Warp and under kernelc (`import kernelc as
wp`) by tests/test_map.py, which compares their results.

Everything is defined inside `run(wp, inputs)` so that the funcs and lambdas see the module
they run under. Warp reads a lambda's source from its line up to the first comma after the
lambda's last parenthesis, so each lambda here is followed on its line only by plain names.
(No `from __future__ import annotations`: the funcs' annotations name the local `wp`.)
"""

from typing import Any

import numpy as np


def run(wp: Any, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Runs every program; returns its results by name (NumPy arrays)."""
    results: dict[str, np.ndarray] = {}
    results.update(docstring_examples(wp))
    results.update(broadcasting(wp, inputs))
    results.update(funcs_and_builtins(wp, inputs))
    results.update(outputs_and_kernels(wp, inputs))
    results.update(gradients(wp, inputs))
    return results


def docstring_examples(wp: Any) -> dict[str, np.ndarray]:
    """The examples of `wp.map`'s documentation (but indexed arrays)."""
    a = wp.array([1, 2, 3], dtype=wp.float32)
    b = wp.array([4, 5, 6], dtype=wp.float32)
    c = wp.array([7, 8, 9], dtype=wp.float32)
    result = wp.map(lambda x, y, z: x + 2.0 * y - z, a, b, c)

    xs = wp.array([-1.0, 0.0, 1.0], dtype=wp.float32)
    wp.map(wp.clamp, xs, -0.5, 0.5, out=xs)

    tf = wp.transform((1.0, 2.0, 3.0), wp.quat_rpy(0.2, -0.6, 0.1))
    points = wp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=wp.vec3)
    transformed = wp.map(wp.transform_point, tf, points)
    return {"doc_lambda": result.numpy(), "doc_clamp": xs.numpy(),
            "doc_transform": transformed.numpy()}


def broadcasting(wp: Any, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """NumPy's broadcasting of the array shapes, 1-D to 4-D."""
    out = {}
    pairs = {"b314_54": ("x314", "x54"), "b5_35": ("x5", "x35"),
             "b2131_415": ("x2131", "x415"), "b1_5": ("x1", "x5")}
    for name, (first, second) in pairs.items():
        x = wp.array(inputs[first], dtype=wp.float32)
        y = wp.array(inputs[second], dtype=wp.float32)
        result = wp.map(lambda p, q: p * q + 1.0, x, y)
        out[name] = result.numpy()
    x = wp.array(inputs["x314"], dtype=wp.float32)
    y = wp.array(inputs["x5"][:4], dtype=wp.float64)
    z = wp.array(inputs["x54"], dtype=wp.float32)
    mixed = wp.map(lambda p, q, r: wp.float64(p * r) - q, x, y, z)
    out["b3_mixed"] = mixed.numpy()
    return out


def funcs_and_builtins(wp: Any, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`@wp.func`s (generic and returning tuples), builtins with extra arguments, plain
    Python functions, vectors, matrices and transforms."""

    @wp.func
    def axpy(a: Any, x: Any, y: Any):
        return a * x + y

    @wp.func
    def sum_and_product(x: float, y: float):
        return x + y, x * y

    def plain(x, y):
        if x > y:
            return x - y
        return y * 2.0

    x = wp.array(inputs["u"], dtype=wp.float32)
    y = wp.array(inputs["v"], dtype=wp.float32)
    x64 = wp.array(inputs["u"], dtype=wp.float64)
    y64 = wp.array(inputs["v"], dtype=wp.float64)
    ints = wp.array(inputs["ints"], dtype=wp.int32)
    vecs = wp.array(inputs["vecs"], dtype=wp.vec3)
    m = wp.mat33(*inputs["mat"].reshape(-1).tolist())
    direction = wp.vec3(0.5, -1.0, 2.0)
    scale = 1.5
    s, p = wp.map(sum_and_product, x, y)
    closure = wp.map(lambda t: wp.sin(t) * scale, x)
    ints_result = wp.map(lambda i: i * 3 + 1, ints)
    cross = wp.map(lambda a, b: wp.cross(a, b) * 2.0, vecs, direction)
    return {
        "axpy32": wp.map(axpy, 2.0, x, y).numpy(),
        "axpy64": wp.map(axpy, wp.float64(-3.0), x64, y64).numpy(),
        "pair_sum": s.numpy(), "pair_product": p.numpy(),
        "plain": wp.map(plain, x, y).numpy(),
        "clamp": wp.map(wp.clamp, x, -0.5, 0.75).numpy(),
        "lerp": wp.map(wp.lerp, x, y, 0.25).numpy(),
        "closure": closure.numpy(),
        "ints": ints_result.numpy(),
        "length": wp.map(wp.length, vecs).numpy(),
        "normalize": wp.map(wp.normalize, vecs).numpy(),
        "dot": wp.map(wp.dot, vecs, direction).numpy(),
        "matvec": wp.map(wp.mul, m, vecs).numpy(),
        "cross": cross.numpy(),
    }


def outputs_and_kernels(wp: Any, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`out=` (one array, a list, in place), `return_kernel=True` and `requires_grad`."""

    @wp.func
    def split(v: wp.vec3):
        return v[0] + v[1], v * 2.0

    vecs = wp.array(inputs["vecs"], dtype=wp.vec3)
    n = vecs.shape[0]
    first = wp.array(np.full(n, np.nan, np.float32), dtype=wp.float32)
    second = wp.array(np.full((n, 3), np.nan, np.float32), dtype=wp.vec3)
    wp.map(split, vecs, out=[first, second])

    x = wp.array(inputs["u"], dtype=wp.float32)
    into = wp.array(np.full(x.shape, np.nan, np.float32), dtype=wp.float32)
    wp.map(wp.abs, x, out=into)
    inplace = wp.array(inputs["u"], dtype=wp.float32)
    wp.map(wp.max, inplace, 0.0, out=inplace)

    kernel = wp.map(lambda a, b: a * b - 1.0, x, 3.0, return_kernel=True)
    launched = wp.array(np.full(x.shape, np.nan, np.float32), dtype=wp.float32)
    wp.launch(kernel, dim=x.shape, inputs=[x, 3.0], outputs=[launched])

    g = wp.array(inputs["u"], dtype=wp.float32, requires_grad=True)
    with_grad = wp.map(lambda a, b: a + b, g, x)
    without_grad = wp.map(lambda a, b: a + b, x, x)
    int_result = wp.map(lambda a: wp.int32(a), g)
    vec_result = wp.map(lambda a, v: v * a, g, vecs)
    flags = [r.requires_grad for r in (with_grad, without_grad, int_result, vec_result)]
    return {"split_first": first.numpy(), "split_second": second.numpy(),
            "into": into.numpy(), "inplace": inplace.numpy(), "launched": launched.numpy(),
            "requires_grad": np.array(flags)}


def gradients(wp: Any, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A tape records map launches; backward through two maps, one broadcasting."""
    a = wp.array(inputs["u"], dtype=wp.float32, requires_grad=True)
    b = wp.array(np.ascontiguousarray(inputs["x35"][:, :1]), dtype=wp.float32,
                 requires_grad=True)
    tape = wp.Tape()
    with tape:
        squared = wp.map(lambda t: t * t * 3.0, a)
        mixed = wp.map(lambda p, q: wp.sin(p) * q, squared, b)
    mixed.grad.fill_(1.0)
    tape.backward()
    return {"grad_value": mixed.numpy(), "grad_a": a.grad.numpy(), "grad_b": b.grad.numpy()}


def make_inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random, non-zero inputs for `run`."""
    def values(*shape: int) -> np.ndarray:
        x = rng.uniform(-2.0, 2.0, shape)
        x[np.abs(x) < 0.05] = 0.5
        return x.astype(np.float32)

    return {
        "x314": values(3, 1, 4), "x54": values(5, 4), "x5": values(5), "x35": values(3, 5),
        "x2131": values(2, 1, 3, 1), "x415": values(4, 1, 5), "x1": values(1),
        "u": values(5), "v": values(5), "ints": rng.integers(-50, 50, 5).astype(np.int32),
        "vecs": values(5, 3), "mat": values(3, 3),
    }
