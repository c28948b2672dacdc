"""kernelc.sparse under kc.Tape: gradients of block values (and vectors) through the sparse
operations, checked against central finite differences of the same float64 pipeline."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import kernelc as kc
import kernelc.sparse as sp

NROW, NCOL = 4, 3
ROWS = np.array([0, 1, 2, 3, 2, 1, 0, 3, 0], np.int32)
COLS = np.array([1, 0, 1, 2, 2, 2, 1, 0, 0], np.int32)


@kc.kernel
def _dot_loss(y: kc.array(dtype=kc.vec2d), w: kc.array(dtype=kc.vec2d),
              loss: kc.array(dtype=kc.float64)):
    i = kc.tid()
    kc.atomic_add(loss, 0, kc.dot(y[i], w[i]))


def _loss_of(C: sp.BsrMatrix, rng_seed: int = 5) -> kc.array:
    """w . (C u) for fixed random u, w: linear in C's values, so every stored block counts.
    Any block shape: u is seen as scalars, C u as pairs of scalars."""
    rng = np.random.default_rng(rng_seed)
    u = kc.array(rng.uniform(0.5, 1.5, C.shape[1]), dtype=kc.float64)
    w = kc.array(rng.uniform(0.5, 1.5, (C.shape[0] // 2, 2)), dtype=kc.vec2d)
    y = kc.empty(C.shape[0] // 2, dtype=kc.vec2d, requires_grad=True)
    y.fill_(np.nan)  # poisoned: bsr_mv must overwrite it (beta = 0)
    loss = kc.zeros(1, dtype=kc.float64, requires_grad=True)
    sp.bsr_mv(C, u, y)
    kc.launch(_dot_loss, dim=y.shape[0], inputs=[y, w, loss])
    return loss


def _triplet_values(seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.5, 2.0, (len(ROWS), 2, 2))


def _matrix(vals: kc.array, nrow: int = NROW, ncol: int = NCOL) -> sp.BsrMatrix:
    return sp.bsr_from_triplets(nrow, ncol, kc.array(ROWS), kc.array(COLS), vals)


def check_gradients(pipeline: Callable[..., kc.array], *inputs: np.ndarray,
                    dtypes: tuple | None = None) -> None:
    """Runs `pipeline(*arrays) -> loss` under a tape and compares each input's gradient
    with central differences along random directions."""
    dtypes = dtypes or (kc.mat22d,) * len(inputs)
    arrays = [kc.array(x, dtype=t, requires_grad=True) for x, t in zip(inputs, dtypes)]
    tape = kc.Tape()
    with tape:
        loss = pipeline(*arrays)
    tape.backward(loss)
    grads = [a.grad.numpy().copy() for a in arrays]

    def value(xs: list[np.ndarray]) -> float:
        return float(pipeline(*[kc.array(x, dtype=t) for x, t in zip(xs, dtypes)]).numpy()[0])

    rng = np.random.default_rng(11)
    eps = 1e-4
    for k, (x, g) in enumerate(zip(inputs, grads)):
        assert np.all(np.isfinite(g)), f"input {k}: non-finite gradient"
        for _ in range(3):
            d = rng.standard_normal(x.shape)
            plus = [xi + eps * d if i == k else xi for i, xi in enumerate(inputs)]
            minus = [xi - eps * d if i == k else xi for i, xi in enumerate(inputs)]
            numeric = (value(plus) - value(minus)) / (2 * eps)
            assert np.sum(g * d) == pytest.approx(numeric, rel=1e-6, abs=1e-8), f"input {k}"


def test_from_triplets_compact_and_padded():
    check_gradients(lambda v: _loss_of(_matrix(v)), _triplet_values())

    def padded(v):
        A = sp.bsr_zeros(NROW, NCOL, kc.mat22d, row_capacity=3)
        A.values.requires_grad = v.requires_grad
        sp.bsr_set_from_triplets(A, kc.array(ROWS), kc.array(COLS), v, topology="padded")
        assert A.row_counts is not None and A.status_sync() == sp.BSR_STATUS_SUCCESS
        return _loss_of(A)

    check_gradients(padded, _triplet_values())


def test_matrix_requires_grad_follows_values():
    v = kc.array(_triplet_values(), dtype=kc.mat22d, requires_grad=True)
    A = _matrix(v)
    assert A.requires_grad and A.values.grad is not None and (2.0 * A).requires_grad
    assert not _matrix(kc.array(_triplet_values(), dtype=kc.mat22d)).requires_grad
    assert sp.bsr_transposed(A).requires_grad and sp.bsr_copy(A).requires_grad


def test_compress_and_transpose_and_copy():
    def compress(v):
        A = sp.bsr_zeros(NROW, NCOL, kc.mat22d)
        A.nnz = len(ROWS)
        A.offsets = kc.array(np.array([0, 3, 5, 7, 9], np.int32))
        A.row_counts = kc.array(np.array([3, 2, 2, 1], np.int32))
        A.columns = kc.array(np.array([2, 0, 2, 1, 1, 0, 2, 1, 9], np.int32))
        A.values = v
        sp.bsr_compress(A, topology="padded")
        sp.bsr_compress(A)
        return _loss_of(A)

    check_gradients(compress, _triplet_values())
    check_gradients(lambda v: _loss_of((2.0 * _matrix(v)).transpose().eval()),
                    _triplet_values())
    check_gradients(lambda v: _loss_of(sp.bsr_copy(-_matrix(v), topology="padded")),
                    _triplet_values())
    for block_shape in ((1, 1), (2, 1), (4, 2)):
        check_gradients(lambda v, b=block_shape: _loss_of(sp.bsr_copy(_matrix(v),
                                                                   block_shape=b)),
                        _triplet_values())


def test_scale_diag_assign():
    def scale_diag(v):
        A = _matrix(v, NROW, NROW)
        sp.bsr_scale(A, 3.0)
        return _loss_of(sp.bsr_diag(sp.bsr_get_diag(0.5 * A)))

    check_gradients(scale_diag, _triplet_values())

    def assign(v):
        A = _matrix(v)
        B = sp.bsr_zeros(NROW, NCOL, kc.mat22d, row_capacity=3)
        B.values.requires_grad = True
        sp.bsr_assign(B, 2.0 * A, topology="padded")
        return _loss_of(B)

    check_gradients(assign, _triplet_values())

    def masked(v, v2):
        A = _matrix(v)  # the mask: its values are overwritten, so get no gradient
        sp.bsr_set_from_triplets(A, kc.array(ROWS[::-1].copy()), kc.array((COLS + 1) % NCOL),
                                 v2, topology="masked")
        B = sp.bsr_copy(A)
        sp.bsr_assign(B, 0.5 * A, topology="masked")
        return _loss_of(B)

    check_gradients(masked, _triplet_values(), _triplet_values(2))


def test_mv_all_operands():
    x0 = np.random.default_rng(3).uniform(-1, 1, (NCOL, 2))
    y0 = np.random.default_rng(4).uniform(-1, 1, (NROW, 2))
    w = kc.array(np.random.default_rng(6).uniform(0.5, 1.5, (NROW, 2)), dtype=kc.vec2d)

    def mv(v, x, y):
        sp.bsr_mv(_matrix(v), x, y, alpha=1.5, beta=-0.5)
        loss = kc.zeros(1, dtype=kc.float64, requires_grad=True)
        kc.launch(_dot_loss, dim=NROW, inputs=[y, w, loss])
        return loss

    check_gradients(mv, _triplet_values(), x0, y0, dtypes=(kc.mat22d, kc.vec2d, kc.vec2d))

    def mv_transposed(v, x, y):
        sp.bsr_mv(_matrix(v), x, y, alpha=2.0, beta=0.25, transpose=True)
        loss = kc.zeros(1, dtype=kc.float64, requires_grad=True)
        kc.launch(_dot_loss, dim=NCOL, inputs=[y, w, loss])
        return loss

    check_gradients(mv_transposed, _triplet_values(), y0, x0,
                    dtypes=(kc.mat22d, kc.vec2d, kc.vec2d))


def test_axpy_and_mm():
    def axpy(v, v2):
        A, B = _matrix(v), _matrix(v2)
        C = sp.bsr_from_triplets(NROW, NCOL, kc.array(ROWS[::-1].copy()),
                                 kc.array((COLS + 1) % NCOL), v2)
        sp.bsr_axpy(A, C, alpha=2.0, beta=-3.0)
        sp.bsr_axpy(B, C, alpha=0.5)
        return _loss_of(C)

    v2 = _triplet_values(2)
    check_gradients(axpy, _triplet_values(), v2)

    def mm(v, v2):
        A = _matrix(v)
        B = sp.bsr_transposed(_matrix(v2))
        C = sp.bsr_mm(A, B, alpha=0.5)  # new result
        sp.bsr_mm(A, B, C, alpha=2.0, beta=-1.0)  # accumulated into C
        return _loss_of(C)

    check_gradients(mm, _triplet_values(), v2)


@pytest.mark.parametrize("reduction", ["gather", "atomic"])
def test_mapped_values(reduction):
    def mapped(v, v2):
        A = sp.bsr_zeros(NROW, NCOL, kc.mat22d)
        A.values.requires_grad = True
        mapping = sp.bsr_set_from_triplets(A, kc.array(ROWS), kc.array(COLS), v,
                                           prune_numerical_zeros=False, build_mapping=True)
        sp.bsr_set_from_mapped_values(A, mapping, v2, reduction=reduction)
        return _loss_of(A)  # v's values are overwritten: its gradient is zero

    check_gradients(mapped, _triplet_values(), _triplet_values(2))
