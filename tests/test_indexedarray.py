"""`kc.indexedarray` (Warp's `wp.indexedarray`): construction, host operations, kernels
(reads, writes, atomics, views, generics, funcs, structs), and Warp's results side by side.

Every numerical result is compared with NumPy fancy indexing of the same data (random,
non-zero, with repeated indices for reads); outputs are poisoned first. The CUDA-C of these
kernels is tested in test_indexedarray_cuda.py; debug checks, errors and gradients in
test_indexedarray_checks.py.
"""

from __future__ import annotations

import indexedarray_kernels as K
import numpy as np
import pytest

import kernelc as wp
from kernelc import types as T
from kernelc.runtime import indexed_copy
from kernelc.runtime.launch_alias import overlapping
from tests.conftest import poisoned, run_warp


def _ints(values) -> wp.array:
    return wp.array(np.asarray(values, dtype=np.int32), dtype=wp.int32)


def _ix(arr: np.ndarray, keys) -> np.ndarray:
    """NumPy's view of an indexed array: `keys` per dimension, None for all of it."""
    return arr[np.ix_(*[np.arange(n) if k is None else np.asarray(k)
                        for n, k in zip(arr.shape, keys)])]


def _case(rng, shape, pattern, repeats=False):
    """Data of `shape`, and index arrays where `pattern` has a 1 (None elsewhere)."""
    data = rng.uniform(1.0, 2.0, shape).astype(np.float32)
    keys = []
    for n, on in zip(shape, pattern):
        if not on:
            keys.append(None)
        elif repeats:
            keys.append(rng.integers(0, n, n + 2).astype(np.int32))
        else:
            keys.append(rng.permutation(n)[: n - 1].astype(np.int32))
    return data, keys


def _indexed(data: np.ndarray, keys, dtype=None) -> tuple[wp.array, wp.indexedarray]:
    arr = wp.array(data) if dtype is None else wp.array(data, dtype=dtype)
    return arr, wp.indexedarray(arr, [None if k is None else _ints(k) for k in keys])


# ---- construction and attributes ------------------------------------------------------------


def test_attributes_and_shapes():
    data = wp.zeros((10, 20, 30), dtype=float)
    i1, i2 = _ints([2, 7]), _ints([2, 7, 12, 17])
    a = wp.indexedarray(data, [i1, None, i2])
    assert (a.shape, a.ndim, a.size, a.dtype, a.device) == ((2, 20, 4), 3, 160, wp.float32,
                                                            data.device)
    assert a.indices[0] is i1 and a.indices[1] is None and a.indices[2] is i2
    assert len(a.indices) == 4 and a.indices[3] is None and len(a) == 2 and a.data is data
    assert wp.indexedarray(data, i1).shape == (2, 20, 30)  # one array: the first dimension
    assert wp.indexedarray(data, [None, i2]).shape == (10, 4, 30)
    assert wp.indexedarray(data).shape == (10, 20, 30)
    assert wp.indexedarray3d(data, [i1]).ndim == 3
    assert not a.is_contiguous and a.grad is None and not a.requires_grad
    assert repr(a) == "indexedarray(shape=(2, 20, 4), dtype=float32)"


def test_annotations():
    for ann, want in ((wp.indexedarray(dtype=float), T.IndexedArrayType(T.float32, 1)),
                      (wp.indexedarray[float], T.IndexedArrayType(T.float32, 1)),
                      (wp.indexedarray[wp.vec3, 3], T.IndexedArrayType(wp.vec3, 3)),
                      (wp.indexedarray2d(dtype=wp.int64), T.IndexedArrayType(T.int64, 2)),
                      (wp.indexedarray4d[float], T.IndexedArrayType(T.float32, 4)),
                      (wp.indexedarray(dtype=wp.Any, ndim=2), T.IndexedArrayType(None, 2))):
        assert T.as_type(ann) == want
        assert ann.data is None and ann.device is None
    with pytest.raises(TypeError, match="needs an indexedarray with data"):
        wp.indexedarray(dtype=float).numpy()
    with pytest.raises(ValueError, match="1 to 4 dimensions"):
        wp.indexedarray(dtype=float, ndim=5)


@pytest.mark.parametrize("args, match", [
    (lambda d: (np.zeros(4, np.float32), [_ints([0])]), "must be a kc.array"),
    (lambda d: (d, [wp.array([1], dtype=wp.int64)]), "must hold int32, got int64"),
    (lambda d: (d, [_ints([[1]])]), "one-dimensional"),
    (lambda d: (d, [[1, 2]]), "must be a kc.array, got list"),
    (lambda d: (d, [_ints([0]), _ints([0])]), "2 index arrays given for a 1-d array"),
    (lambda d: (d, "0"), "indices must be a kc.array or a list"),
])
def test_construction_errors(args, match):
    data = wp.zeros(4, dtype=float)
    with pytest.raises(ValueError, match=match):
        wp.indexedarray(*args(data))
    with pytest.raises(ValueError, match=r"requested dtype \(float64\)"):
        wp.indexedarray(data, [_ints([0])], dtype=wp.float64)
    with pytest.raises(ValueError, match=r"requested ndim \(2\)"):
        wp.indexedarray2d(data, [_ints([0])])


def test_index_values_are_checked_on_the_host():
    """Warp does not look at index values when it builds an indexed array; reading one with
    an entry outside the data is an IndexError on the host (a bounds error in debug mode
    kernels, see below)."""
    a = wp.indexedarray(wp.zeros(10), [_ints([3, 10, 1])])
    assert a.shape == (3,)
    with pytest.raises(IndexError, match="index 10 .* dimension 0 .* size 10"):
        a.numpy()
    with pytest.raises(IndexError, match="index -1"):
        wp.indexedarray(wp.zeros(10), [_ints([-1])]).fill_(1.0)


# ---- host reads: numpy(), list(), array.__getitem__ with index arrays --------------------------


@pytest.mark.parametrize("pattern", [(1,), (1, 0), (0, 1), (1, 1), (0, 1, 0), (1, 0, 1),
                                     (1, 1, 1), (1, 0, 0, 1), (0, 1, 1, 0), (1, 1, 1, 1)])
def test_numpy_matches_fancy_indexing(rng, pattern):
    shape = (5, 4, 6, 3)[:len(pattern)]
    data, keys = _case(rng, shape, pattern, repeats=True)
    _, a = _indexed(data, keys)
    want = _ix(data, keys)
    got = a.numpy()
    assert got.dtype == np.float32 and got.shape == a.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert a.list() == want.reshape(-1).tolist()
    np.testing.assert_array_equal(np.asarray(a), want)
    assert str(a) == str(want)


def test_getitem_with_index_arrays(rng):
    values = rng.integers(1, 1000, (6, 5, 4)).astype(np.int32)
    data = wp.array(values)
    i, j = [4, 0, 4, 2], [1, 3]
    cases = [
        (data[_ints(i)], values[i]),
        (data[:, _ints(j)], values[:, j]),
        (data[_ints(i), :, _ints(j)], values[np.ix_(i, range(5), j)]),
        (data[1:5, _ints(j)], values[1:5][:, j]),  # a slice, then indices of the view
        (data[2, _ints(j)], values[2][j]),  # an int drops its dimension first
        (data[..., _ints(j)], values[..., j]),
        (data[_ints(i), _ints(j), _ints(j)], values[np.ix_(i, j, j)]),
    ]
    for got, want in cases:
        assert isinstance(got, wp.indexedarray)
        np.testing.assert_array_equal(got.numpy(), want)
    same = data[0:3, 0:3, 0:3]
    assert type(same) is wp.array
    np.testing.assert_array_equal(data[0:3, 0:3, _ints([0, 1, 2])].numpy(), same.numpy())


def test_vector_matrix_and_struct_elements(rng):
    vecs = rng.uniform(1, 2, (5, 3)).astype(np.float32)
    a = wp.array(vecs, dtype=wp.vec3)[_ints([4, 1, 1])]
    assert a.dtype == wp.vec3 and a.numpy().shape == (3, 3)
    np.testing.assert_array_equal(a.numpy(), vecs[[4, 1, 1]])
    mats = rng.uniform(1, 2, (4, 2, 2)).astype(np.float64)
    np.testing.assert_array_equal(wp.array(mats, dtype=wp.mat22d)[_ints([3, 0])].numpy(),
                                  mats[[3, 0]])
    records = np.zeros(4, dtype=K.Holder.numpy_dtype())
    records["scale"] = rng.uniform(1, 2, 4)
    got = wp.array(records, dtype=K.Holder)[_ints([2, 2, 0])]
    np.testing.assert_array_equal(got.numpy()["scale"], records["scale"][[2, 2, 0]])


# ---- host writes: fill_, zero_, assign, kc.copy, clone, *_like, to ----------------------------


@pytest.mark.parametrize("kernels", [False, True], ids=["numpy", "kernels"])
@pytest.mark.parametrize("dtype", [wp.float32, wp.int8, wp.uint64, wp.float16, wp.bool])
def test_fill_and_zero_scalars(dtype, kernels):
    values = np.arange(1, 1 + 4 * 5 * 3).reshape(4, 5, 3) % 7 + 1
    data = wp.array(values.astype(dtype.np_dtype))
    a = data[_ints([3, 1]), :, _ints([0, 2])]
    want = values.astype(dtype.np_dtype)
    indexed_copy.fill(a, 42, kernels=kernels)
    want[np.ix_([3, 1], range(5), [0, 2])] = 42
    np.testing.assert_array_equal(data.numpy(), want)
    indexed_copy.fill(a, 0, kernels=kernels)
    want[np.ix_([3, 1], range(5), [0, 2])] = 0
    np.testing.assert_array_equal(data.numpy(), want)
    a.fill_(dtype(5))
    a.zero_()
    np.testing.assert_array_equal(data.numpy(), want)


@pytest.mark.parametrize("kernels", [False, True], ids=["numpy", "kernels"])
def test_fill_vectors_matrices_structs(rng, kernels):
    vecs = wp.array(rng.uniform(1, 2, (6, 4)).astype(np.float32), dtype=wp.vec4)
    keep = vecs.numpy().copy()
    rows = [5, 0, 2]
    a = vecs[_ints(rows)]
    for value in ([17, 42, 99, 101], np.array([1, 2, 3, 4], np.float32), wp.vec4(4, 3, 2, 1),
                  13.5):
        indexed_copy.fill(a, value, kernels=kernels)
        keep[rows] = np.broadcast_to(np.asarray(value, np.float32), (3, 4))
        np.testing.assert_array_equal(vecs.numpy(), keep)
    mats = wp.zeros((3, 3), dtype=wp.types.matrix((2, 3), wp.int32))
    m = mats[_ints([2, 0]), _ints([1])]
    for value in ([1, 2, 3, 4, 5, 6], [[1, 2, 3], [4, 5, 6]], np.arange(6).reshape(2, 3), 7):
        indexed_copy.fill(m, value, kernels=kernels)
        np.testing.assert_array_equal(m.numpy(), np.broadcast_to(
            np.asarray(value, np.int32).reshape(-1, 3) if np.ndim(value) else value,
            (2, 1, 2, 3)))
    assert mats.numpy()[1].sum() == 0 and mats.numpy()[:, 0].sum() == 0
    items = wp.zeros(5, dtype=K.Holder)
    h = K.Holder()
    h.scale = 2.5
    indexed_copy.fill(items[_ints([4, 1])], h, kernels=kernels)
    np.testing.assert_array_equal(items.numpy()["scale"], [0, 2.5, 0, 0, 2.5])
    indexed_copy.fill(items[_ints([4])], 0, kernels=kernels)  # 0: a struct of zeros
    np.testing.assert_array_equal(items.numpy()["scale"], [0, 2.5, 0, 0, 0])
    with pytest.raises(ValueError, match="cannot fill"):
        a.fill_([1, 2])


@pytest.mark.parametrize("kernels", [False, True], ids=["numpy", "kernels"])
def test_gather_and_scatter(rng, kernels):
    data, keys = _case(rng, (5, 6, 4), (1, 0, 1), repeats=False)
    arr, a = _indexed(data, keys)
    out = wp.array(np.full(a.shape, np.nan, np.float32))
    indexed_copy.gather(a, out, kernels=kernels)
    np.testing.assert_array_equal(out.numpy(), _ix(data, keys))
    new = rng.uniform(3, 4, a.shape).astype(np.float32)
    indexed_copy.scatter(a, wp.array(new), kernels=kernels)
    want = data.copy()
    want[np.ix_(keys[0], range(6), keys[2])] = new
    np.testing.assert_array_equal(arr.numpy(), want)


def test_copies_and_likes(rng):
    data, keys = _case(rng, (6, 5), (1, 1))
    arr, a = _indexed(data, keys)
    want = _ix(data, keys)
    for made in (a.contiguous(), wp.clone(a), a.to("cpu").contiguous()):
        assert type(made) is wp.array and made.is_contiguous
        np.testing.assert_array_equal(made.numpy(), want)
    assert a.to("cpu") is a
    for like, fill in ((wp.empty_like(a), None), (wp.zeros_like(a), 0), (wp.ones_like(a), 1),
                       (wp.full_like(a, 2.5), 2.5)):
        assert type(like) is wp.array and like.shape == a.shape and like.dtype == a.dtype
        if fill is not None:
            assert (like.numpy() == fill).all()
    dest = wp.array(np.full(a.shape, np.nan, np.float32))
    wp.copy(dest, a)
    np.testing.assert_array_equal(dest.numpy(), want)
    new = rng.uniform(3, 4, a.shape).astype(np.float32)
    wp.copy(a, wp.array(new))
    np.testing.assert_array_equal(a.numpy(), new)
    a.assign(new * 2)  # from NumPy
    np.testing.assert_array_equal(a.numpy(), new * 2)
    a.assign((new * 3).tolist())  # from a list
    np.testing.assert_array_equal(a.numpy(), new * 3)
    # indexed into indexed (through a staging array), overlapping data
    other = wp.indexedarray(arr, [_ints(keys[0][::-1].copy()), _ints(keys[1])])
    expected = other.numpy()
    wp.copy(a, other)
    np.testing.assert_array_equal(a.numpy(), expected)
    # a strided destination
    wide = wp.array(np.full((a.shape[0], 2 * a.shape[1]), np.nan, np.float32))
    wp.copy(wide[:, ::2], a)
    np.testing.assert_array_equal(wide.numpy()[:, ::2], expected)


def test_copy_errors():
    a = wp.zeros(6)[_ints([1, 2, 3])]
    with pytest.raises(ValueError, match="not supported with indexed arrays"):
        wp.copy(a, wp.zeros(3), dest_offset=1, count=2)
    with pytest.raises(ValueError, match="not supported with indexed arrays"):
        wp.copy(wp.zeros(5), a, count=2)
    with pytest.raises(ValueError, match=r"shape \(4,\) into one of shape \(3,\)"):
        wp.copy(a, wp.zeros(4))
    with pytest.raises(TypeError, match="float64 into one of float32"):
        wp.copy(a, wp.zeros(3, dtype=wp.float64))
    with pytest.raises(ValueError, match="shape"):
        a.assign([1.0, 2.0])


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_empty_indexed_arrays(ndim):
    """Zero-size indexed arrays (an empty index array) of every kind of element."""
    for dtype in (wp.float32, wp.int16, wp.vec3d, wp.types.matrix((2, 3), wp.uint8), K.Holder):
        data = wp.empty((1,) * ndim, dtype=dtype, requires_grad=dtype != K.Holder)
        a = data[wp.empty(0, dtype=int)]
        assert a.size == 0 and a.shape == (0,) + (1,) * (ndim - 1)
        a.zero_()
        a.fill_(K.Holder() if dtype == K.Holder else dtype(3) if dtype.size < 8 else 3)
        for b in (a.contiguous(), wp.empty_like(a), wp.zeros_like(a), wp.clone(a)):
            assert b.shape == a.shape and b.dtype == T.as_type(dtype)
        wp.copy(a, b)
        a.assign(b)
        assert a.numpy().shape[:ndim] == a.shape and a.list() == []


# ---- kernels --------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", [(1,), (0,), (1, 0), (0, 1), (1, 1), (1, 0, 1), (0, 1, 1),
                                     (1, 1, 1), (1, 0, 1, 0), (0, 1, 0, 1), (1, 1, 1, 1)])
def test_kernel_reads_writes_atomics(rng, pattern):
    nd = len(pattern)
    data, keys = _case(rng, (5, 4, 6, 3)[:nd], pattern)  # distinct indices: no write races
    arr, a = _indexed(data, keys)
    out = poisoned(a.shape, np.float32)
    wp.launch(K.RW[nd], dim=a.shape, inputs=[a, out])
    before = _ix(data, keys)
    np.testing.assert_allclose(out.numpy(), before * 2 + (1 if nd == 1 else before),
                               rtol=1e-6)
    want = data.copy()
    want[np.ix_(*[np.arange(n) if k is None else k for n, k in zip(data.shape, keys)])] = \
        before - 2.5
    np.testing.assert_allclose(arr.numpy(), want, rtol=1e-6)


def test_atomics_and_augmented_assignment_under_contention(rng):
    data = wp.array(np.full(6, 100, np.int32))
    top = wp.array(np.zeros(3, np.int32))
    values = rng.integers(1, 50, 4000).astype(np.int32)
    a = data[_ints([4, 1, 2])]
    wp.launch(K.accumulate, dim=4000, inputs=[a, top[_ints([2])], wp.array(values), 3])
    want = np.full(6, 100)
    for k, target in enumerate([4, 1, 2]):
        want[target] += values[k::3].sum() - len(values[k::3])
    np.testing.assert_array_equal(data.numpy(), want)
    assert top.numpy().tolist() == [0, 0, values.max()]


def test_vector_elements_in_kernels(rng):
    vecs = rng.uniform(1, 2, (4, 5, 3)).astype(np.float32)
    data = wp.array(vecs, dtype=wp.vec3)
    a = data[_ints([3, 0]), _ints([4, 1, 2])]
    before = a.numpy()
    out = poisoned(a.shape, np.float32)
    wp.launch(K.vec_ops, dim=a.shape, inputs=[a, out])
    np.testing.assert_allclose(out.numpy(), np.linalg.norm(before, axis=-1), rtol=1e-6)
    np.testing.assert_allclose(a.numpy(), np.roll(before, -1, axis=-1) + [1, 2, 3], rtol=1e-6)


def test_negative_indices_count_from_the_end(rng):
    values = rng.integers(1, 100, (5, 6)).astype(np.int32)
    data = wp.array(values)
    a = data[_ints([4, 1, 0]), _ints([5, 0, 2, 3])]
    out = poisoned(a.shape, np.int32)
    wp.launch(K.from_end, dim=a.shape, inputs=[a, out])
    np.testing.assert_array_equal(out.numpy(), a.numpy()[:, ::-1])


def test_shapes_and_views_in_kernels(rng):
    a = wp.zeros((4, 5, 6))[_ints([1, 2]), :, _ints([0, 1, 2])]
    out = poisoned(7, np.int32)
    wp.launch(K.shapes_3d, dim=1, inputs=[a, out])
    assert out.numpy().tolist() == [2, 5, 3, 5, 3, 3, 2]
    values = rng.uniform(1, 2, (4, 6)).astype(np.float32)
    data = wp.array(values)
    rows = [2, 0, 3]
    b = data[_ints(rows), 1:5]
    out = poisoned(b.shape, np.float32)
    wp.launch(K.view_rows, dim=3, inputs=[b, out])
    np.testing.assert_array_equal(out.numpy(), values[rows, 1:5])
    want = values.copy()
    want[np.ix_(rows, range(1, 5))] += 10
    np.testing.assert_array_equal(data.numpy(), want)
    plain = wp.array(values)  # the same views of a plain array
    out = poisoned((4, 6), np.float32)
    wp.launch(K.view_rows, dim=4, inputs=[plain, out])
    np.testing.assert_array_equal(out.numpy(), values)
    np.testing.assert_array_equal(plain.numpy(), values + 10)


def test_generic_kernels_overloads_and_funcs(rng):
    values = rng.integers(1, 100, (5, 6)).astype(np.int32)
    plain = wp.array(values)
    a = plain[_ints([4, 1]), _ints([5, 0, 2])]
    wp.launch(K.inc_any, dim=a.shape, inputs=[a])
    wp.launch(K.inc_any, dim=plain.shape, inputs=[plain])
    want = values + 1
    want[np.ix_([4, 1], [5, 0, 2])] += 1
    np.testing.assert_array_equal(plain.numpy(), want)
    for dtype in (wp.float64, wp.float16):
        d = wp.array(np.arange(1, 6), dtype=dtype)
        wp.launch(K.scale_generic, dim=2, inputs=[d[_ints([4, 1])], dtype(3)])
        np.testing.assert_array_equal(d.numpy(), [1, 6, 3, 4, 15])
    f = wp.array(rng.uniform(1, 2, 5).astype(np.float32))
    before = f.numpy().copy()
    out = poisoned(2, np.float32)
    wp.launch(K.through_func, dim=2, inputs=[f[_ints([4, 1])], out])
    np.testing.assert_allclose(out.numpy(), before[[4, 1]] * 3, rtol=1e-6)
    before[[4, 1]] += 1
    np.testing.assert_allclose(f.numpy(), before, rtol=1e-6)


def test_structs_holding_indexed_arrays(rng):
    values = rng.uniform(1, 2, 8).astype(np.float32)
    data = wp.array(values)
    h = K.Holder()
    h.scale, h.iarr = 1.5, data[_ints([6, 2, 3])]
    out = poisoned(3, np.float32)
    wp.launch(K.struct_field, dim=3, inputs=[h, out])
    np.testing.assert_allclose(out.numpy(), values[[6, 2, 3]] * 1.5, rtol=1e-6)
    want = values.copy()
    want[[6, 2, 3]] = 2 * want[[6, 2, 3]] + 1
    np.testing.assert_allclose(data.numpy(), want, rtol=1e-6)

    grid = wp.array(rng.integers(1, 9, (4, 3)).astype(np.int32))
    grid_before = grid.numpy().copy()
    o = K.Outer()
    o.inner = h
    o.grid = grid[_ints([3, 0]), :]
    out = poisoned(2, np.float32)
    before = data.numpy().copy()
    wp.launch(K.nested_struct, dim=2, inputs=[o, out])
    np.testing.assert_allclose(out.numpy(), before[[6, 2]] * 1.5 + grid_before[[3, 0], 1],
                               rtol=1e-6)
    before[[6, 2]] *= -1
    np.testing.assert_allclose(data.numpy(), before, rtol=1e-6)
    grid_before[[3, 0], 0] += 7
    np.testing.assert_array_equal(grid.numpy(), grid_before)
    assert list(K.Outer.numpy_dtype().names) == ["inner", "grid"]
    assert len(h.numpy_value()) == 2
    moved = o.to("cpu")  # the same device: the same arrays
    assert moved.grid is o.grid and moved.inner.iarr is h.iarr


def test_arrays_of_structs_holding_indexed_arrays(rng):
    first, second = (wp.array(rng.uniform(1, 2, 6).astype(np.float32)) for _ in range(2))
    snapshot = [first.numpy().copy(), second.numpy().copy()]
    holders = []
    for arr, scale in ((first, 2.0), (second, 3.0)):
        h = K.Holder()
        h.scale, h.iarr = scale, arr[_ints([5, 0, 3])]
        holders.append(h)
    items = wp.array(holders, dtype=K.Holder)
    del holders  # the array of structs keeps the indexed arrays (and their data) alive
    out = poisoned(3, np.float32)
    wp.launch(K.struct_array, dim=3, inputs=[items, out])
    np.testing.assert_allclose(out.numpy(), snapshot[1][[5, 0, 3]] * 3.0, rtol=1e-6)
    snapshot[1][[5, 0, 3]] = 5
    snapshot[0][[5, 0, 3]] += 1
    np.testing.assert_allclose(second.numpy(), snapshot[1])
    np.testing.assert_allclose(first.numpy(), snapshot[0], rtol=1e-6)
    held = items.list()[1]
    # (only an address is stored: a type-only indexed array of the field's type, as Warp)
    assert held.scale == 3.0 and held.iarr.data is None and held.iarr.dtype == wp.float32


def test_an_indexed_view_of_an_argument_is_checked_for_overlap():
    """`a` indexes `b`: the launch must not run the variant that assumes disjoint arrays
    (whose `b[i] += 1` is a plain update)."""
    b = wp.zeros(5000)
    a = b[_ints([7, 3])]
    types = (T.ArrayType(T.float32, 1), T.IndexedArrayType(T.float32, 1))
    assert overlapping([b, a], types)
    assert not overlapping([wp.zeros(4), a], types)
    assert overlapping([a.indices[0], a], types)  # its index array passed on its own
    both = wp.zeros((4, 4))[a.indices[0], a.indices[0]]  # one index array for two dimensions
    assert not overlapping([wp.zeros(4), both], (types[0], T.IndexedArrayType(T.float32, 2)))
    wp.launch(K.own_and_shared, dim=5000, inputs=[b, a])
    want = np.ones(5000, np.float32)
    want[[7, 3]] += 2500
    np.testing.assert_array_equal(b.numpy(), want)


# ---- Warp side by side ----------------------------------------------------------------------------

_WARP_DRIVER = """
from typing import Literal

@wp.kernel
def mix(a: wp.indexedarray[wp.int32, Literal[3]], out: wp.array3d[wp.int32]):
    i, j, k = wp.tid()
    out[i, j, k] = a[i, j, k] * 3 + a[i][j, k]
    a[i, j, k] += 5
    wp.atomic_add(a, 0, 0, 0, 1)

data = wp.array(inputs["data"])
a = wp.indexedarray(data, [wp.array(inputs["i"]), None, wp.array(inputs["k"])])
out = wp.zeros(a.shape, dtype=wp.int32)
wp.launch(mix, dim=a.shape, inputs=[a, out])
results["out"] = out.numpy()
results["data"] = data.numpy()
results["gathered"] = a.numpy()
"""


@wp.kernel
def _mix(a: wp.indexedarray[wp.int32, 3], out: wp.array3d[wp.int32]):
    i, j, k = wp.tid()
    out[i, j, k] = a[i, j, k] * 3 + a[i][j, k]
    a[i, j, k] += 5
    wp.atomic_add(a, 0, 0, 0, 1)


def test_matches_warp_bit_for_bit(rng, tmp_path):
    values = rng.integers(-1000, 1000, (5, 4, 6)).astype(np.int32)
    i = np.array([4, 0, 2], np.int32)
    k = np.array([5, 1, 3, 0], np.int32)
    want = run_warp(_WARP_DRIVER, tmp_path, data=values, i=i, k=k)
    data = wp.array(values)
    a = wp.indexedarray(data, [_ints(i), None, _ints(k)])
    out = poisoned(a.shape, np.int32)
    wp.launch(_mix, dim=a.shape, inputs=[a, out])
    np.testing.assert_array_equal(out.numpy(), want["out"])
    np.testing.assert_array_equal(data.numpy(), want["data"])
    np.testing.assert_array_equal(a.numpy(), want["gathered"])
