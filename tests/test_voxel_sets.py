"""`unique_rows`, the voxel sets volumes are built from: NumPy's row-wise unique, faster."""

import numpy as np
import pytest

from kernelc.spatial.voxel_sets import unique_rows


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("span", [3, 40, 5000])
def test_matches_numpy_rows(dtype, span):
    rng = np.random.default_rng(span)
    coords = rng.integers(-span, span, (2000, 3)).astype(dtype)
    coords = np.concatenate([coords, coords[::7]])  # repeated rows
    want, want_inverse = np.unique(coords, axis=0, return_inverse=True)
    got, got_inverse = unique_rows(coords, return_inverse=True)
    assert got.dtype == coords.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_inverse, want_inverse.reshape(-1))
    np.testing.assert_array_equal(unique_rows(coords), want)


def test_boxes_too_large_for_a_key_and_empty_sets():
    coords = np.array([[-2**31, 0, 7], [2**31 - 1, 5, -2**31], [0, 0, 0], [0, 0, 0]],
                      dtype=np.int64)
    np.testing.assert_array_equal(unique_rows(coords), np.unique(coords, axis=0))
    assert unique_rows(np.zeros((0, 3), np.int32)).shape == (0, 3)
