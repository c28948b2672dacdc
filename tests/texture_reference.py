"""A NumPy reference of texture sampling and of its gradients, for `tests/test_texture.py`.

Written from the behaviour Warp documents and shows (not from kernelc's code): texel
indices are found in float32 (linear) or float64 (nearest) exactly as the samplers do, so
both pick the same texels; the interpolation itself is done in float64, so results agree
to rounding.
"""

from __future__ import annotations

import itertools

import numpy as np

WRAP, CLAMP, MIRROR, BORDER = 0, 1, 2, 3


def decode(raw: np.ndarray) -> np.ndarray:
    """Texels as float64 values (8/16-bit integers normalised, the rest converted)."""
    scale = {"uint8": 255.0, "uint16": 65535.0, "int8": 127.0, "int16": 32767.0}
    name = raw.dtype.name
    if name in scale:
        value = raw.astype(np.float32) / np.float32(scale[name])
        return np.maximum(value, np.float32(-1.0)).astype(np.float64)
    return raw.astype(np.float32).astype(np.float64)  # 32-bit integers round to float32


def mip_levels(data: np.ndarray, ndim: int, count: int) -> list[np.ndarray]:
    """The mip chain (count 0: down to one texel) by averaging pairs along x, y, z."""
    sizes = data.shape[:ndim]
    full = int(np.floor(np.log2(max(sizes)))) + 1
    levels = [data]
    for _ in range((count or full) - 1):
        current = levels[-1].astype(np.float64)
        for axis in reversed(range(ndim)):  # NumPy's last texture axis is x
            n = current.shape[axis]
            if n > 1:
                even = np.arange(n // 2) * 2
                current = (np.take(current, even, axis) +
                           np.take(current, np.minimum(even + 1, n - 1), axis)) * 0.5
        if data.dtype.kind in "iu":
            info = np.iinfo(data.dtype)
            current = np.clip(np.rint(current), info.min, info.max)
        levels.append(current.astype(data.dtype))
    return levels


def _address(i: np.ndarray, size: int, mode: int) -> np.ndarray:
    if mode == WRAP:
        return np.mod(i, size)
    if mode == CLAMP:
        return np.clip(i, 0, size - 1)
    if mode == MIRROR:
        m = np.mod(i, 2 * size)
        return np.where(m >= size, 2 * size - 1 - m, m)
    return i


def _nearest(coord, normalized, base, size, mode):
    x = coord.astype(np.float64)
    periodic = mode in (WRAP, MIRROR)
    if periodic:
        x = np.fmod(x, (1.0 if normalized else float(base)) * (2.0 if mode == MIRROR else 1.0))
    t = x * size if normalized else x * size / base
    if not periodic:  # NaN goes to the high end, as Warp's min and max
        t = np.where(t < size, t, float(size))
        t = np.where(t < -1.0, -1.0, t)
    return _address(np.floor(t).astype(np.int64), size, mode)


def _linear(coord, normalized, base, size, mode):
    """(index 0, index 1, weight of index 1, slope of t w.r.t. the coordinate)."""
    f32 = np.float32
    x = coord.astype(f32)
    if mode in (WRAP, MIRROR):
        period = f32((1.0 if normalized else base) * (2.0 if mode == MIRROR else 1.0))
        x = np.fmod(x, period)
        x = np.where(x < 0, x + period, x).astype(f32)
    if not normalized:
        x = (x / f32(base)).astype(f32)
    t = (x * f32(size) - f32(0.5)).astype(f32)
    slope = np.full(t.shape, size if normalized else size / base)
    if mode in (CLAMP, BORDER):
        low, high = (0.0, size - 1.0) if mode == CLAMP else (-2.0, float(size))
        slope[~((t >= low) & (t < high))] = 0.0
        t = np.where(t < high, t, f32(high))
        t = np.where(t < low, f32(low), t)
    cell = np.floor(t)
    i0 = cell.astype(np.int64)
    return (_address(i0, size, mode), _address(i0 + 1, size, mode),
            (t - cell).astype(np.float64), slope)


def _fetch(level: np.ndarray, ndim: int, index: list[np.ndarray]) -> np.ndarray:
    """(n, 4) texel values (zero outside the level and in missing channels)."""
    shape = level.shape[:ndim][::-1]  # (width, height, depth)
    inside = np.all([(i >= 0) & (i < n) for i, n in zip(index, shape)], axis=0)
    safe = [np.where(inside, i, 0) for i in index]
    texel = decode(level[tuple(reversed(safe))])
    texel = texel.reshape(len(inside), -1)
    out = np.zeros((len(inside), 4))
    out[:, :texel.shape[1]] = texel
    return out * inside[:, None]


def _sample_level(level, cfg, base, pts):
    """(values (n, 4), d values / d coordinate (ndim, n, 4), whether no axis is within
    rounding of a cell edge, where the slope jumps) at one mip level."""
    ndim = cfg["ndim"]
    size = level.shape[:ndim][::-1]
    norm, modes = cfg["normalized"], cfg["modes"]
    if cfg["filter"] == 0:
        index = [_nearest(pts[:, a], norm, base[a], size[a], modes[a]) for a in range(ndim)]
        return _fetch(level, ndim, index), np.zeros((ndim, len(pts), 4)), np.ones(len(pts), bool)
    axes = [_linear(pts[:, a], norm, base[a], size[a], modes[a]) for a in range(ndim)]
    value = np.zeros((len(pts), 4))
    grad = np.zeros((ndim, len(pts), 4))
    for corner in itertools.product((0, 1), repeat=ndim):
        v = _fetch(level, ndim, [axes[a][c] for a, c in enumerate(corner)])
        weights = [axes[a][2] if c else 1.0 - axes[a][2] for a, c in enumerate(corner)]
        value += np.prod(weights, axis=0)[:, None] * v
        for a, c in enumerate(corner):
            others = np.prod([w for b, w in enumerate(weights) if b != a], axis=0)
            grad[a] += ((1.0 if c else -1.0) * axes[a][3] * others)[:, None] * v
    smooth = np.all([np.abs(f - 0.5) < 0.4999 for _, _, f, _ in axes], axis=0)
    return value, grad, smooth


def sample(cfg: dict, data: np.ndarray, pts: np.ndarray, lod: np.ndarray):
    """Values (n, 4) at `pts` (n, ndim); their derivatives w.r.t. the coordinates
    (n, ndim, 4) and the LOD (n, 4); and where the derivatives are well defined."""
    ndim = cfg["ndim"]
    levels = mip_levels(data, ndim, cfg["levels"])
    base = data.shape[:ndim][::-1]
    top = len(levels) - 1
    per_level = [_sample_level(level, cfg, base, pts) for level in levels]
    n = len(pts)
    value, dcoord, dlod = np.zeros((n, 4)), np.zeros((ndim, n, 4)), np.zeros((n, 4))
    for i in range(n):
        if lod[i] < 0 or top == 0:
            picks = [(0, 1.0)]
        elif cfg["mip_filter"] == 0:
            picks = [(min(int(np.floor(min(lod[i], top) + 0.5)), top), 1.0)]
        else:
            clamped = min(float(lod[i]), top)
            l0 = int(np.floor(clamped))
            l1, f = min(l0 + 1, top), np.float32(clamped) - np.float32(l0)
            picks = [(l0, 1.0)] if l1 == l0 else [(l0, 1.0 - f), (l1, f)]
            if l1 != l0:
                dlod[i] = per_level[l1][0][i] - per_level[l0][0][i]
        if len(picks) == 2 and picks[1][1] == 0.0:
            picks = picks[:1]  # an integer LOD reads one level (the slope is still there)
        for level, weight in picks:
            value[i] += weight * per_level[level][0][i]
            dcoord[:, i] += weight * per_level[level][1][:, i]
    smooth = np.all([s for _, _, s in per_level], axis=0)
    return value, np.moveaxis(dcoord, 0, 1), dlod, smooth
