"""Gradients of selects: `min`, `max` and `clamp` at ties go where Warp's `adj_min` /
`adj_max` send them (to the second operand), and `kc.where` of vectors and matrices
differentiates (its adjoint builds their zeros from scalars).

Expected values are Warp 1.19's, worked out from its `adj_min`, `adj_max` and `adj_clamp`
(`clamp(x, a, b) = min(max(a, x), b)`): a tie of `min(a, b)` or `max(a, b)` gives the
gradient to `b`, so `clamp` passes it to `x` at the lower bound and to `b` at the upper one.
"""

import numpy as np

import kernelc as kc


@kc.kernel
def _ties(x: kc.array(dtype=float), a: kc.array(dtype=float), b: kc.array(dtype=float),
          y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = kc.clamp(x[i], a[i], b[i]) + 2.0 * kc.min(x[i], a[i]) + 4.0 * kc.max(x[i], b[i])


def test_min_max_clamp_ties_follow_warp():
    x = kc.array([0.0, 1.0, 0.5, -1.0, 2.0], dtype=float, requires_grad=True)
    a = kc.zeros(5, dtype=float, requires_grad=True)
    b = kc.ones(5, dtype=float, requires_grad=True)
    y = kc.zeros(5, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(_ties, 5, [x, a, b, y])
    tape.backward(grads={y: kc.ones(5)})
    # x = a (lower tie): clamp -> x, min(x, a) -> a; x = b (upper tie): clamp -> b,
    # max(x, b) -> b
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 1.0, 2.0, 4.0])
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0, 2.0, 1.0, 2.0])
    np.testing.assert_array_equal(b.grad.numpy(), [4.0, 5.0, 4.0, 4.0, 1.0])


@kc.kernel
def _vector_where(x: kc.array(dtype=kc.vec2), flags: kc.array(dtype=int),
                  y: kc.array(dtype=float)):
    i = kc.tid()
    v = kc.where(flags[i] > 0, x[i] * 2.0, kc.vec2(1.0, 1.0))
    m = kc.where(flags[i] > 0, kc.outer(x[i], x[i]), kc.identity(2, float))
    y[i] = kc.dot(v, kc.vec2(1.0, 3.0)) + kc.trace(m)


def test_where_of_vectors_and_matrices_differentiates():
    x_np = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.25]], dtype=np.float32)
    x = kc.array(x_np, dtype=kc.vec2, requires_grad=True)
    flags = kc.array([1, 0, 1], dtype=int)
    y = kc.zeros(3, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(_vector_where, 3, [x, flags, y])
    tape.backward(grads={y: kc.ones(3)})
    want = np.where(np.array([1, 0, 1])[:, None] > 0, np.array([2.0, 6.0]) + 2.0 * x_np, 0.0)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)
