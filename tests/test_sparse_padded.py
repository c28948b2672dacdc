"""Padded and masked sparse storage, triplet maps, bsr_compress, bsr_assign (kernelc.sparse)."""

import numpy as np
import pytest

import kernelc as kc
import kernelc.sparse as sp


def _dense(A):
    """Dense copy of A's active blocks (scalar blocks), read on the host."""
    out = np.zeros(A.shape)
    offsets = A.offsets.numpy()
    counts = (np.diff(offsets[: A.nrow + 1]) if A.row_counts is None
              else A.row_counts.numpy()[: A.nrow])
    cols, vals = A.columns.numpy(), A.values.numpy()
    for r in range(A.nrow):
        for b in range(offsets[r], offsets[r] + counts[r]):
            out[r, cols[b]] += vals[b]
    return out


def _random_triplets(rng, n, nrow, ncol):
    rows = rng.integers(0, nrow, n).astype(np.int32)
    cols = rng.integers(0, ncol, n).astype(np.int32)
    vals = rng.uniform(0.5, 2.0, n).astype(np.float32)
    return rows, cols, vals


def _reference(shape, rows, cols, vals):
    ref = np.zeros(shape)
    np.add.at(ref, (rows, cols), vals.astype(np.float64))
    return ref


def test_zeros_with_row_capacity():
    A = sp.bsr_zeros(3, 4, kc.float32, row_capacity=2)
    assert A.nnz == 6 and A.offsets.numpy().tolist() == [0, 2, 4, 6]
    assert A.row_counts.numpy().tolist() == [0, 0, 0]
    assert A.status_sync() == sp.BSR_STATUS_SUCCESS
    B = sp.bsr_zeros(3, 4, kc.float32, row_capacity=kc.array([1, 0, 3], dtype=kc.int32))
    assert B.offsets.numpy().tolist() == [0, 1, 1, 4] and B.nnz == 4
    with pytest.raises(ValueError):
        sp.bsr_zeros(3, 4, kc.float32, row_capacity=-1)
    with pytest.raises(TypeError):
        sp.bsr_zeros(3, 4, kc.float32, row_capacity=kc.array([1, 0, 3], dtype=kc.int64))
    with pytest.raises(ValueError, match="Unsupported topology"):
        sp.bsr_zeros(3, 4, kc.float32, topology="masked")


def test_padded_triplets_match_dense_and_overflow():
    rng = np.random.default_rng(3)
    rows, cols, vals = _random_triplets(rng, 40, 5, 6)
    A = sp.bsr_zeros(5, 6, kc.float32, row_capacity=6)
    A.values.fill_(-999.0)
    sp.bsr_set_from_triplets(A, kc.array(rows), kc.array(cols), kc.array(vals), topology="padded")
    assert A.status_sync() == sp.BSR_STATUS_SUCCESS
    assert A.offsets.numpy().tolist() == [0, 6, 12, 18, 24, 30]
    np.testing.assert_allclose(_dense(A), _reference((5, 6), rows, cols, vals), rtol=1e-6)
    # The same values as a compact build, bit for bit.
    C = sp.bsr_from_triplets(5, 6, kc.array(rows), kc.array(cols), kc.array(vals))
    assert _dense(A).tobytes() == _dense(C).tobytes()
    # Rows that do not fit are left empty; the status says so and stays set.
    small = sp.bsr_zeros(5, 6, kc.float32, row_capacity=1)
    sp.bsr_set_from_triplets(small, kc.array(rows), kc.array(cols), kc.array(vals),
                             topology="padded")
    assert small.status_sync() == sp.BSR_STATUS_ROW_CAPACITY_EXCEEDED
    assert "capacity" in small.status_message()
    counts = np.bincount(rows * 6 + cols, minlength=30).reshape(5, 6)
    assert small.row_counts.numpy().tolist() == [int((c > 0).sum() == 1) for c in counts]
    small.clear_status()
    assert small.status_sync() == sp.BSR_STATUS_SUCCESS


def test_masked_triplets_keep_topology():
    A = sp.bsr_from_triplets(2, 3, kc.array([0, 1], dtype=kc.int32),
                             kc.array([1, 2], dtype=kc.int32), kc.array([1.0, 1.0]))
    rows = np.array([0, 0, 1, 1, 0], np.int32)
    cols = np.array([1, 0, 2, 2, 1], np.int32)
    vals = np.array([2.0, 5.0, 3.0, 4.0, 7.0])
    sp.bsr_set_from_triplets(A, kc.array(rows), kc.array(cols), kc.array(vals), topology="masked")
    assert A.nnz == 2 and A.columns.numpy()[:2].tolist() == [1, 2]
    np.testing.assert_array_equal(_dense(A), [[0, 9.0, 0], [0, 0, 7.0]])


def test_triplet_map_reuse():
    rng = np.random.default_rng(5)
    rows, cols, vals = _random_triplets(rng, 30, 4, 4)
    rows[3] = -1  # dropped
    A = sp.bsr_zeros(4, 4, kc.float32)
    mapping = sp.bsr_set_from_triplets(A, kc.array(rows), kc.array(cols), kc.array(vals),
                                       prune_numerical_zeros=False, build_mapping=True)
    assert isinstance(mapping, sp.BsrTripletMap) and mapping.triplet_count == 30
    new_vals = rng.uniform(-1, 1, 30).astype(np.float32)
    fresh = sp.bsr_from_triplets(4, 4, kc.array(rows), kc.array(cols), kc.array(new_vals),
                                 prune_numerical_zeros=False)
    for reduction in ("gather", "atomic"):
        A.values.fill_(np.nan)
        sp.bsr_set_from_mapped_values(A, mapping, kc.array(new_vals), reduction=reduction)
        np.testing.assert_allclose(_dense(A), _dense(fresh), rtol=1e-5, atol=1e-6)
    sp.bsr_set_from_mapped_values(A, mapping, kc.array(new_vals))
    assert A.values.numpy()[: A.nnz].tobytes() == fresh.values.numpy()[: fresh.nnz].tobytes()
    with pytest.raises(ValueError, match="prune_numerical_zeros"):
        sp.bsr_set_from_triplets(A, kc.array(rows), kc.array(cols), kc.array(vals),
                                 build_mapping=True)
    with pytest.raises(TypeError):
        sp.bsr_set_from_triplets(A, kc.array(rows), kc.array(cols), kc.array(vals),
                                 prune_numerical_zeros=False, build_mapping="yes")
    with pytest.raises(ValueError, match="not been built"):
        sp.bsr_set_from_mapped_values(A, sp.BsrTripletMap(8), kc.array(new_vals))
    with pytest.raises(ValueError, match="30 triplets"):
        sp.bsr_set_from_mapped_values(A, mapping, kc.array(new_vals[:5]))


def test_triplet_map_keeps_spare_slots_and_preallocated_storage():
    rng = np.random.default_rng(8)
    rows, cols, vals = _random_triplets(rng, 12, 3, 3)
    A = sp.bsr_zeros(3, 3, kc.float32)
    mapping = sp.BsrTripletMap(capacity=20)
    assert sp.bsr_set_from_triplets(A, kc.array(rows), kc.array(cols), kc.array(vals),
                                    prune_numerical_zeros=False, build_mapping=mapping) is mapping
    assert (mapping.triplet_count, mapping.capacity) == (12, 20)
    ptrs = (mapping._triplet_blocks.ptr, mapping._block_ends.ptr, mapping._triplet_indices.ptr)
    # The atomic reduction clears the mapped blocks only: spare slots keep their values.
    A.values[A.nnz:].fill_(-999.0)
    new_vals = rng.uniform(-1, 1, 12).astype(np.float32)
    sp.bsr_set_from_mapped_values(A, mapping, kc.array(new_vals), reduction="atomic")
    np.testing.assert_allclose(_dense(A), _reference((3, 3), rows, cols, new_vals), rtol=1e-5)
    assert np.all(A.values.numpy()[A.nnz:] == -999.0)
    # Rebuilding within the capacity reuses the map's memory; beyond it, the map grows.
    sp.bsr_set_from_triplets(A, kc.array(rows[:5]), kc.array(cols[:5]), kc.array(vals[:5]),
                             prune_numerical_zeros=False, build_mapping=mapping)
    assert (mapping._triplet_blocks.ptr, mapping._block_ends.ptr,
            mapping._triplet_indices.ptr) == ptrs
    assert mapping.triplet_count == 5 and mapping._triplet_blocks.shape == (5,)
    sp.bsr_set_from_mapped_values(A, mapping, kc.array(new_vals[:5]))
    np.testing.assert_allclose(_dense(A), _reference((3, 3), rows[:5], cols[:5], new_vals[:5]),
                               rtol=1e-5)
    small = sp.BsrTripletMap(capacity=2)
    sp.bsr_set_from_triplets(A, kc.array(rows), kc.array(cols), kc.array(vals),
                             prune_numerical_zeros=False, build_mapping=small)
    assert (small.triplet_count, small.capacity) == (12, 12)


def test_mm_max_new_nnz_reports_on_stdout(capfd):
    ones = kc.array(np.ones(4, np.float32))
    rows, cols = kc.array(np.array([0, 0, 1, 1], np.int32)), kc.array(np.array([0, 1, 0, 1], np.int32))
    A = sp.bsr_from_triplets(2, 2, rows, cols, ones)
    C = sp.bsr_zeros(2, 2, kc.float32)
    sp.bsr_mm(A, A, C, max_new_nnz=4)
    assert C.nnz_sync() == 4 and capfd.readouterr().out == ""
    sp.bsr_mm(A, A, C, max_new_nnz=2)
    assert C.nnz_sync() == 2 and "max_new_nnz (2) exceeded" in capfd.readouterr().out
    np.testing.assert_array_equal(_dense(C), [[2.0, 2.0], [0.0, 0.0]])


def test_compress_sorts_merges_and_prunes():
    A = sp.bsr_zeros(2, 3, kc.float64, row_capacity=4)
    A.columns.assign(np.array([2, 0, 2, 1, -1, 1, 5, 0], np.int32))
    A.values.assign(np.array([1.0, 2.0, 3.0, 0.0, 9.0, -1.0, 4.0, 8.0]))
    A.row_counts.assign(np.array([4, 3], np.int32))  # slot 7 is free
    ref = np.array([[2.0, 0.0, 4.0], [0.0, -1.0, 0.0]])
    padded = sp.bsr_copy(A, topology="padded")
    sp.bsr_compress(padded, topology="padded")
    assert padded.offsets.numpy().tolist() == [0, 4, 8]
    assert padded.row_counts.numpy().tolist() == [2, 1]  # the zero block is pruned
    np.testing.assert_array_equal(_dense(padded), ref)
    sp.bsr_compress(A, prune_numerical_zeros=False)
    assert A.row_counts is None
    assert A.offsets.numpy().tolist() == [0, 3, 4]
    assert A.columns.numpy()[:4].tolist() == [0, 1, 2, 1]
    np.testing.assert_array_equal(_dense(A), ref)


def test_assign_padded_and_masked():
    rng = np.random.default_rng(7)
    rows, cols, vals = _random_triplets(rng, 12, 3, 4)
    src = sp.bsr_from_triplets(3, 4, kc.array(rows), kc.array(cols), kc.array(vals))
    dest = sp.bsr_zeros(3, 4, kc.float32, row_capacity=4)
    dest.values.fill_(-999.0)
    sp.bsr_assign(dest, 2.0 * src, topology="padded")
    np.testing.assert_allclose(_dense(dest), 2.0 * _dense(src), rtol=1e-6)
    mask = sp.bsr_zeros(3, 4, kc.float32)
    sp.bsr_set_diag(mask, 7.0, 3, 4)
    sp.bsr_assign(mask, src, topology="masked")
    np.testing.assert_allclose(_dense(mask), np.diag(np.diag(_dense(src))) @ np.eye(3, 4),
                               rtol=1e-6)
    tiny = sp.bsr_zeros(3, 4, kc.float32, row_capacity=0)
    sp.bsr_assign(tiny, src, topology="padded")
    assert tiny.status_sync() == sp.BSR_STATUS_ROW_CAPACITY_EXCEEDED
    with pytest.raises(ValueError, match="size"):
        sp.bsr_assign(sp.bsr_zeros(2, 4, kc.float32, row_capacity=4), src, topology="padded")


def test_operations_on_padded_operands():
    rng = np.random.default_rng(11)
    rows, cols, vals = _random_triplets(rng, 20, 4, 4)
    compact = sp.bsr_from_triplets(4, 4, kc.array(rows), kc.array(cols), kc.array(vals))
    A = sp.bsr_zeros(4, 4, kc.float32, row_capacity=5)
    sp.bsr_assign(A, compact, topology="padded")
    x = rng.uniform(-1, 1, 4).astype(np.float32)
    assert sp.bsr_mv(A, kc.array(x)).numpy().tobytes() == \
        sp.bsr_mv(compact, kc.array(x)).numpy().tobytes()
    np.testing.assert_array_equal(sp.bsr_get_diag(A).numpy(), sp.bsr_get_diag(compact).numpy())
    np.testing.assert_array_equal(_dense(sp.bsr_transposed(A)), _dense(compact).T)
    # axpy and mm with padded and masked results.
    y = sp.bsr_zeros(4, 4, kc.float32, row_capacity=4)
    sp.bsr_assign(y, sp.bsr_identity(4, kc.float32), topology="padded")
    sp.bsr_axpy(A, y, alpha=2.0, beta=3.0, work_arrays=sp.bsr_axpy_work_arrays(),
                topology="padded")
    np.testing.assert_allclose(_dense(y), 2.0 * _dense(compact) + 3.0 * np.eye(4), rtol=1e-6)
    z = sp.bsr_zeros(4, 4, kc.float32, row_capacity=4)
    sp.bsr_mm(A, compact, z, work_arrays=sp.bsr_mm_work_arrays(), topology="padded")
    np.testing.assert_allclose(_dense(z), _dense(compact) @ _dense(compact), rtol=1e-5)
    masked = sp.bsr_identity(4, kc.float32)
    sp.bsr_mm(A, compact, masked, topology="masked")
    np.testing.assert_allclose(_dense(masked), np.diag(np.diag(_dense(z))), rtol=1e-5)
    with pytest.raises(ValueError, match="must be provided"):
        sp.bsr_axpy(A, None, topology="padded")


def test_set_zero_policies():
    A = sp.bsr_zeros(3, 4, kc.float32, row_capacity=kc.array([1, 0, 3], dtype=kc.int32))
    sp.bsr_set_from_triplets(A, kc.array([0, 2, 2], dtype=kc.int32),
                             kc.array([0, 1, 3], dtype=kc.int32), kc.array([1.0, 2.0, 3.0],
                                                                           dtype=kc.float32),
                             topology="padded")
    assert A.row_counts.numpy().tolist() == [1, 0, 2]
    sp.bsr_set_zero(A, topology="padded")
    assert A.offsets.numpy().tolist() == [0, 1, 1, 4] and A.row_counts.numpy().tolist() == [0] * 3
    sp.bsr_set_zero(A, topology="padded", row_capacity=kc.array([0, 2, 1], dtype=kc.int32))
    assert A.nnz_sync() == 3
    with pytest.raises(ValueError, match="row_capacity requires"):
        sp.bsr_set_zero(A, row_capacity=2)
    with pytest.raises(ValueError, match="resize"):
        sp.bsr_set_zero(A, 2, topology="masked")
    sp.bsr_set_zero(A)
    assert A.row_counts is None and A.nnz == 0


def test_copy_nnz_async_is_deprecated():
    A = sp.bsr_from_triplets(2, 2, kc.array(np.array([0, 0, 1], np.int32)),
                             kc.array(np.array([0, 0, 1], np.int32)),
                             kc.array(np.array([1.0, 2.0, 3.0], np.float32)))
    with pytest.warns(DeprecationWarning, match="nnz_sync"):
        A.copy_nnz_async()
    assert A.nnz_sync() == 2
