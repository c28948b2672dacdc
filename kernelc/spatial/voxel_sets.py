"""Sets of voxels on the host: the distinct rows of (n, 3) integer coordinates, sorted as
`np.unique(coords, axis=0)` sorts them (by x, then y, then z).

NumPy's row-wise unique sorts the rows as opaque byte strings, about three times slower
than sorting one int64 key per row; volumes built from particles every step (Warp's
particle-in-cell examples) spend most of their build there. A row's key is its position in
the box the rows span, so keys sort as the rows do; boxes too large for an int64 fall back
to NumPy's rows.
"""

from __future__ import annotations

import numpy as np


def unique_rows(coords: np.ndarray, return_inverse: bool = False):
    """`np.unique(coords, axis=0[, return_inverse=True])` for (n, 3) integer `coords`."""
    coords = np.asarray(coords)
    if len(coords) == 0 or coords.ndim != 2 or coords.shape[1] != 3:
        return np.unique(coords, axis=0, return_inverse=return_inverse)
    lo = coords.min(axis=0).astype(np.int64)
    span = coords.max(axis=0).astype(np.int64) - lo + 1
    if float(span[0]) * float(span[1]) * float(span[2]) >= 2.0 ** 62:
        return np.unique(coords, axis=0, return_inverse=return_inverse)
    shifted = coords.astype(np.int64) - lo
    keys = (shifted[:, 0] * span[1] + shifted[:, 1]) * span[2] + shifted[:, 2]
    found = np.unique(keys, return_inverse=return_inverse)
    unique_keys = found[0] if return_inverse else found
    z = unique_keys % span[2]
    rest = unique_keys // span[2]
    rows = np.stack([rest // span[1], rest % span[1], z], axis=1) + lo
    rows = rows.astype(coords.dtype)
    if return_inverse:
        return rows, found[1].reshape(-1)
    return rows
