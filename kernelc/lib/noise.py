"""Perlin noise (`noise`, `pnoise`) and curl noise (`curlnoise`), written in kernelc's language.

The results are Warp's: the same lattice hash, the same random gradients (drawn with
`randf` from a hash of the lattice point, normalised), the same quintic fade and the same
order of operations, so a kernel gets Warp's values up to floating-point rounding.

A field of dimension N is built one axis at a time: a *row* interpolates two lattice
points along x, a *face* two rows along y, and so on, x first, exactly as Warp nests its
interpolations. Each level carries the value and its gradient; `noise` uses the value,
`curlnoise` the gradient (the unused half is removed by the optimiser).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.frontend.decorators import Func

__all__ = ["noise", "pnoise", "curlnoise"]

# Lattice hash: one odd prime per axis (Teschner et al.'s spatial hash primes, as Warp).
_PX = 73856093
_PY = 19349663
_PZ = 53471161
_PT = 10000019
# curlnoise derives its second and third potential fields by re-seeding with these offsets.
_CURL_OFFSET_2 = 10019689
_CURL_OFFSET_3 = 13112221


# ---- the fade curve and one interpolation step ---------------------------------------------


@kc.func
def _fade(t: float) -> float:
    # 6t^5 - 15t^4 + 10t^3 (Perlin's "smootherstep"), in Warp's evaluation order.
    return t * t * t * (t * (t * 6.0 - 15.0) + 10.0)


@kc.func
def _fade_slope(t: float) -> float:
    return 30.0 * t * t * (t * (t - 2.0) + 1.0)


@kc.func
def _interp(a: float, b: float, t: float) -> float:
    return (b - a) * _fade(t) + a


# Value and gradient of an interpolation along the axis `axis` (a unit vector).
@kc.func
def _interp_grad(a: float, ga: kc.vec2, b: float, gb: kc.vec2, t: float,
                 axis: kc.vec2) -> tuple[float, kc.vec2]:
    return _interp(a, b, t), (gb - ga) * _fade(t) + (b - a) * _fade_slope(t) * axis + ga


@kc.func
def _interp_grad(a: float, ga: kc.vec3, b: float, gb: kc.vec3, t: float,  # noqa: F811
                 axis: kc.vec3) -> tuple[float, kc.vec3]:
    return _interp(a, b, t), (gb - ga) * _fade(t) + (b - a) * _fade_slope(t) * axis + ga


@kc.func
def _interp_grad(a: float, ga: kc.vec4, b: float, gb: kc.vec4, t: float,  # noqa: F811
                 axis: kc.vec4) -> tuple[float, kc.vec4]:
    return _interp(a, b, t), (gb - ga) * _fade(t) + (b - a) * _fade_slope(t) * axis + ga


# ---- random gradients at lattice points ------------------------------------------------------
# The hash of a lattice point seeds a throw-away random state; C's precedence in Warp's
# `ix * p1 ^ iy * p2 + state` puts the `+ state` on the last product, kept here.


@kc.func
def _gradient1(state: kc.uint32, ix: int) -> float:
    idx = kc.uint32(ix) * _PX + state
    return kc.randf(idx, -1.0, 1.0)


@kc.func
def _gradient2(state: kc.uint32, ix: int, iy: int) -> kc.vec2:
    idx = (kc.uint32(ix) * _PX) ^ (kc.uint32(iy) * _PY + state)
    x = kc.randf(idx) - 0.5
    y = kc.randf(idx) - 0.5
    return kc.normalize(kc.vec2(x, y))


@kc.func
def _gradient3(state: kc.uint32, ix: int, iy: int, iz: int) -> kc.vec3:
    idx = (kc.uint32(ix) * _PX) ^ (kc.uint32(iy) * _PY) ^ (kc.uint32(iz) * _PZ + state)
    x = kc.randf(idx) - 0.5
    y = kc.randf(idx) - 0.5
    z = kc.randf(idx) - 0.5
    return kc.normalize(kc.vec3(x, y, z))


@kc.func
def _gradient4(state: kc.uint32, ix: int, iy: int, iz: int, it: int) -> kc.vec4:
    idx = ((kc.uint32(ix) * _PX) ^ (kc.uint32(iy) * _PY) ^ (kc.uint32(iz) * _PZ)
           ^ (kc.uint32(it) * _PT + state))
    x = kc.randf(idx) - 0.5
    y = kc.randf(idx) - 0.5
    z = kc.randf(idx) - 0.5
    t = kc.randf(idx) - 0.5
    return kc.normalize(kc.vec4(x, y, z, t))


# ---- lattice cells: the integer corner below a coordinate and the fraction above it ----------


@kc.func
def _corner(x: float) -> int:
    return kc.int32(kc.floor(x))


@kc.func
def _frac(x: float) -> float:
    return x - kc.floor(x)


@kc.func
def _wrap(i: int, period: int) -> int:
    # C's remainder (Warp's `mod` on ints): negative coordinates stay negative, as in Warp.
    return i % period


# ---- 1-D ---------------------------------------------------------------------------------


@kc.func
def _noise1(state: kc.uint32, x0: int, x1: int, dx: float) -> float:
    v0 = dx * _gradient1(state, x0)
    v1 = (dx - 1.0) * _gradient1(state, x1)
    return _interp(v0, v1, dx)


# ---- 2-D: a point (value, gradient), a row along x, the cell along y ---------------------------


@kc.func
def _point2(state: kc.uint32, ix: int, iy: int, d: kc.vec2) -> tuple[float, kc.vec2]:
    g = _gradient2(state, ix, iy)
    return d[0] * g[0] + d[1] * g[1], g


@kc.func
def _row2(state: kc.uint32, lo: kc.vec2i, hi: kc.vec2i, iy: int,
          d: kc.vec2) -> tuple[float, kc.vec2]:
    a, ga = _point2(state, lo[0], iy, d)
    b, gb = _point2(state, hi[0], iy, d - kc.vec2(1.0, 0.0))
    return _interp_grad(a, ga, b, gb, d[0], kc.vec2(1.0, 0.0))


@kc.func
def _noise2(state: kc.uint32, lo: kc.vec2i, hi: kc.vec2i, d: kc.vec2) -> tuple[float, kc.vec2]:
    a, ga = _row2(state, lo, hi, lo[1], d)
    b, gb = _row2(state, lo, hi, hi[1], d - kc.vec2(0.0, 1.0))
    return _interp_grad(a, ga, b, gb, d[1], kc.vec2(0.0, 1.0))


# ---- 3-D ---------------------------------------------------------------------------------


@kc.func
def _point3(state: kc.uint32, ix: int, iy: int, iz: int, d: kc.vec3) -> tuple[float, kc.vec3]:
    g = _gradient3(state, ix, iy, iz)
    return d[0] * g[0] + d[1] * g[1] + d[2] * g[2], g


@kc.func
def _row3(state: kc.uint32, lo: kc.vec3i, hi: kc.vec3i, iy: int, iz: int,
          d: kc.vec3) -> tuple[float, kc.vec3]:
    a, ga = _point3(state, lo[0], iy, iz, d)
    b, gb = _point3(state, hi[0], iy, iz, d - kc.vec3(1.0, 0.0, 0.0))
    return _interp_grad(a, ga, b, gb, d[0], kc.vec3(1.0, 0.0, 0.0))


@kc.func
def _face3(state: kc.uint32, lo: kc.vec3i, hi: kc.vec3i, iz: int,
           d: kc.vec3) -> tuple[float, kc.vec3]:
    a, ga = _row3(state, lo, hi, lo[1], iz, d)
    b, gb = _row3(state, lo, hi, hi[1], iz, d - kc.vec3(0.0, 1.0, 0.0))
    return _interp_grad(a, ga, b, gb, d[1], kc.vec3(0.0, 1.0, 0.0))


@kc.func
def _noise3(state: kc.uint32, lo: kc.vec3i, hi: kc.vec3i, d: kc.vec3) -> tuple[float, kc.vec3]:
    a, ga = _face3(state, lo, hi, lo[2], d)
    b, gb = _face3(state, lo, hi, hi[2], d - kc.vec3(0.0, 0.0, 1.0))
    return _interp_grad(a, ga, b, gb, d[2], kc.vec3(0.0, 0.0, 1.0))


# ---- 4-D ---------------------------------------------------------------------------------


@kc.func
def _point4(state: kc.uint32, ix: int, iy: int, iz: int, it: int,
            d: kc.vec4) -> tuple[float, kc.vec4]:
    g = _gradient4(state, ix, iy, iz, it)
    return d[0] * g[0] + d[1] * g[1] + d[2] * g[2] + d[3] * g[3], g


@kc.func
def _row4(state: kc.uint32, lo: kc.vec4i, hi: kc.vec4i, iy: int, iz: int, it: int,
          d: kc.vec4) -> tuple[float, kc.vec4]:
    a, ga = _point4(state, lo[0], iy, iz, it, d)
    b, gb = _point4(state, hi[0], iy, iz, it, d - kc.vec4(1.0, 0.0, 0.0, 0.0))
    return _interp_grad(a, ga, b, gb, d[0], kc.vec4(1.0, 0.0, 0.0, 0.0))


@kc.func
def _face4(state: kc.uint32, lo: kc.vec4i, hi: kc.vec4i, iz: int, it: int,
           d: kc.vec4) -> tuple[float, kc.vec4]:
    a, ga = _row4(state, lo, hi, lo[1], iz, it, d)
    b, gb = _row4(state, lo, hi, hi[1], iz, it, d - kc.vec4(0.0, 1.0, 0.0, 0.0))
    return _interp_grad(a, ga, b, gb, d[1], kc.vec4(0.0, 1.0, 0.0, 0.0))


@kc.func
def _cube4(state: kc.uint32, lo: kc.vec4i, hi: kc.vec4i, it: int,
           d: kc.vec4) -> tuple[float, kc.vec4]:
    a, ga = _face4(state, lo, hi, lo[2], it, d)
    b, gb = _face4(state, lo, hi, hi[2], it, d - kc.vec4(0.0, 0.0, 1.0, 0.0))
    return _interp_grad(a, ga, b, gb, d[2], kc.vec4(0.0, 0.0, 1.0, 0.0))


@kc.func
def _noise4(state: kc.uint32, lo: kc.vec4i, hi: kc.vec4i, d: kc.vec4) -> tuple[float, kc.vec4]:
    a, ga = _cube4(state, lo, hi, lo[3], d)
    b, gb = _cube4(state, lo, hi, hi[3], d - kc.vec4(0.0, 0.0, 0.0, 1.0))
    return _interp_grad(a, ga, b, gb, d[3], kc.vec4(0.0, 0.0, 0.0, 1.0))


# ---- cells of a coordinate -------------------------------------------------------------------


@kc.func
def _cell2(p: kc.vec2) -> kc.vec2i:
    return kc.vec2i(_corner(p[0]), _corner(p[1]))


@kc.func
def _cell3(p: kc.vec3) -> kc.vec3i:
    return kc.vec3i(_corner(p[0]), _corner(p[1]), _corner(p[2]))


@kc.func
def _cell4(p: kc.vec4) -> kc.vec4i:
    return kc.vec4i(_corner(p[0]), _corner(p[1]), _corner(p[2]), _corner(p[3]))


@kc.func
def _frac2(p: kc.vec2) -> kc.vec2:
    return kc.vec2(_frac(p[0]), _frac(p[1]))


@kc.func
def _frac3(p: kc.vec3) -> kc.vec3:
    return kc.vec3(_frac(p[0]), _frac(p[1]), _frac(p[2]))


@kc.func
def _frac4(p: kc.vec4) -> kc.vec4:
    return kc.vec4(_frac(p[0]), _frac(p[1]), _frac(p[2]), _frac(p[3]))


# ---- noise -------------------------------------------------------------------------------


@kc.func
def noise(state: kc.uint32, x: float) -> float:
    """Non-periodic Perlin noise at a coordinate (a float, vec2, vec3 or vec4).

    One noise feature spans one unit; values are centred on zero. `state` (from
    `rand_init`) selects the field and is not advanced.

    Args:
        state: Selects the noise field.
        x: The coordinate (`xy`, `xyz` or `xyzt` for the vector overloads, as in Warp).

    Returns:
        The noise value, a float.
    """
    x0 = _corner(x)
    return _noise1(state, x0, x0 + 1, _frac(x))


@kc.func
def noise(state: kc.uint32, xy: kc.vec2) -> float:  # noqa: F811
    lo = _cell2(xy)
    value, gradient = _noise2(state, lo, lo + kc.vec2i(1, 1), _frac2(xy))
    return value


@kc.func
def noise(state: kc.uint32, xyz: kc.vec3) -> float:  # noqa: F811
    lo = _cell3(xyz)
    value, gradient = _noise3(state, lo, lo + kc.vec3i(1, 1, 1), _frac3(xyz))
    return value


@kc.func
def noise(state: kc.uint32, xyzt: kc.vec4) -> float:  # noqa: F811
    lo = _cell4(xyzt)
    value, gradient = _noise4(state, lo, lo + kc.vec4i(1, 1, 1, 1), _frac4(xyzt))
    return value


# ---- pnoise: the lattice wraps every `p` cells ---------------------------------------------


@kc.func
def pnoise(state: kc.uint32, x: float, px: int) -> float:
    """Perlin noise that repeats every `px` (`py`, `pz`, `pt`) units along each axis.

    Takes a float, vec2, vec3 or vec4 coordinate and one positive integer period per
    component. Negative coordinates are not supported (as in Warp).

    Args:
        state: Selects the noise field; not advanced.
        x: The coordinate (`xy`, `xyz` or `xyzt` for the vector overloads).
        px: The period along x (then `py`, `pz`, `pt`).

    Returns:
        The noise value, a float.
    """
    x0 = _wrap(_corner(x), px)
    return _noise1(state, x0, _wrap(x0 + 1, px), _frac(x))


@kc.func
def pnoise(state: kc.uint32, xy: kc.vec2, px: int, py: int) -> float:  # noqa: F811
    c = _cell2(xy)
    lo = kc.vec2i(_wrap(c[0], px), _wrap(c[1], py))
    hi = kc.vec2i(_wrap(lo[0] + 1, px), _wrap(lo[1] + 1, py))
    value, gradient = _noise2(state, lo, hi, _frac2(xy))
    return value


@kc.func
def pnoise(state: kc.uint32, xyz: kc.vec3, px: int, py: int, pz: int) -> float:  # noqa: F811
    c = _cell3(xyz)
    lo = kc.vec3i(_wrap(c[0], px), _wrap(c[1], py), _wrap(c[2], pz))
    hi = kc.vec3i(_wrap(lo[0] + 1, px), _wrap(lo[1] + 1, py), _wrap(lo[2] + 1, pz))
    value, gradient = _noise3(state, lo, hi, _frac3(xyz))
    return value


@kc.func
def pnoise(state: kc.uint32, xyzt: kc.vec4, px: int, py: int, pz: int,  # noqa: F811
           pt: int) -> float:
    c = _cell4(xyzt)
    lo = kc.vec4i(_wrap(c[0], px), _wrap(c[1], py), _wrap(c[2], pz), _wrap(c[3], pt))
    hi = kc.vec4i(_wrap(lo[0] + 1, px), _wrap(lo[1] + 1, py), _wrap(lo[2] + 1, pz),
                  _wrap(lo[3] + 1, pt))
    value, gradient = _noise4(state, lo, hi, _frac4(xyzt))
    return value


# ---- curlnoise -------------------------------------------------------------------------------


@kc.func
def curlnoise(state: kc.uint32, xy: kc.vec2, octaves: kc.uint32 = 1, lacunarity: float = 2.0,
              gain: float = 0.5) -> kc.vec2:
    """A divergence-free field: the curl of Perlin-noise potentials, summed over octaves.

    Takes a vec2 (returns a vec2), a vec3 or a vec4 (the fourth axis usually time; both
    return a vec3). Octave i samples at frequency `lacunarity**i` with weight `gain**i`.
    `state` selects the field and is not advanced.

    Args:
        state: Selects the noise field.
        xy: The coordinate (`xyz` or `xyzt` for the other overloads).
        octaves: How many octaves to sum (zero gives a zero vector).
        lacunarity: Frequency factor between octaves.
        gain: Amplitude factor between octaves.

    Returns:
        The (unnormalised) curl vector.
    """
    total = kc.vec2(0.0, 0.0)
    freq = 1.0
    amplitude = 1.0
    i = kc.uint32(0)
    while i < octaves:
        p = freq * xy
        lo = _cell2(p)
        value, gradient = _noise2(state, lo, lo + kc.vec2i(1, 1), _frac2(p))
        total += amplitude * gradient
        amplitude *= gain
        freq *= lacunarity
        i += kc.uint32(1)
    return kc.vec2(-total[1], total[0])


@kc.func
def curlnoise(state: kc.uint32, xyz: kc.vec3, octaves: kc.uint32 = 1,  # noqa: F811
              lacunarity: float = 2.0, gain: float = 0.5) -> kc.vec3:
    # Three potential fields; the state chain runs on across octaves, as in Warp.
    s1 = kc.vec3(0.0, 0.0, 0.0)
    s2 = kc.vec3(0.0, 0.0, 0.0)
    s3 = kc.vec3(0.0, 0.0, 0.0)
    seed = state
    freq = 1.0
    amplitude = 1.0
    i = kc.uint32(0)
    while i < octaves:
        p = freq * xyz
        lo = _cell3(p)
        hi = lo + kc.vec3i(1, 1, 1)
        d = _frac3(p)
        v1, g1 = _noise3(seed, lo, hi, d)
        seed = kc.rand_init(kc.int32(seed), _CURL_OFFSET_2)
        v2, g2 = _noise3(seed, lo, hi, d)
        seed = kc.rand_init(kc.int32(seed), _CURL_OFFSET_3)
        v3, g3 = _noise3(seed, lo, hi, d)
        s1 += amplitude * g1
        s2 += amplitude * g2
        s3 += amplitude * g3
        amplitude *= gain
        freq *= lacunarity
        i += kc.uint32(1)
    return kc.vec3(s3[1] - s2[2], s1[2] - s3[0], s2[0] - s1[1])


@kc.func
def curlnoise(state: kc.uint32, xyzt: kc.vec4, octaves: kc.uint32 = 1,  # noqa: F811
              lacunarity: float = 2.0, gain: float = 0.5) -> kc.vec3:
    s1 = kc.vec4(0.0, 0.0, 0.0, 0.0)
    s2 = kc.vec4(0.0, 0.0, 0.0, 0.0)
    s3 = kc.vec4(0.0, 0.0, 0.0, 0.0)
    seed = state
    freq = 1.0
    amplitude = 1.0
    i = kc.uint32(0)
    while i < octaves:
        p = freq * xyzt
        lo = _cell4(p)
        hi = lo + kc.vec4i(1, 1, 1, 1)
        d = _frac4(p)
        v1, g1 = _noise4(seed, lo, hi, d)
        seed = kc.rand_init(kc.int32(seed), _CURL_OFFSET_2)
        v2, g2 = _noise4(seed, lo, hi, d)
        seed = kc.rand_init(kc.int32(seed), _CURL_OFFSET_3)
        v3, g3 = _noise4(seed, lo, hi, d)
        s1 += amplitude * g1
        s2 += amplitude * g2
        s3 += amplitude * g3
        amplitude *= gain
        freq *= lacunarity
        i += kc.uint32(1)
    return kc.vec3(s3[1] - s2[2], s1[2] - s3[0], s2[0] - s1[1])


# ---- on the host: Warp evaluates these in Python scope too -----------------------------------
# A func called on the host runs its Python body, which here would not mean what it means in
# a kernel (randf does not advance a host state), so the public names evaluate a one-thread
# kernel instead: the same machine code as in a kernel, compiled once per argument type.


@kc.func
def _pnoise_periods(state: kc.uint32, x: float, p: kc.vec4i) -> float:
    return pnoise(state, x, p[0])


@kc.func
def _pnoise_periods(state: kc.uint32, x: kc.vec2, p: kc.vec4i) -> float:  # noqa: F811
    return pnoise(state, x, p[0], p[1])


@kc.func
def _pnoise_periods(state: kc.uint32, x: kc.vec3, p: kc.vec4i) -> float:  # noqa: F811
    return pnoise(state, x, p[0], p[1], p[2])


@kc.func
def _pnoise_periods(state: kc.uint32, x: kc.vec4, p: kc.vec4i) -> float:  # noqa: F811
    return pnoise(state, x, p[0], p[1], p[2], p[3])


@kc.kernel
def _noise_on_host(state: kc.uint32, x: kc.array(dtype=Any), out: kc.array(dtype=float)):
    out[0] = noise(state, x[0])


@kc.kernel
def _pnoise_on_host(state: kc.uint32, x: kc.array(dtype=Any), p: kc.vec4i,
                    out: kc.array(dtype=float)):
    out[0] = _pnoise_periods(state, x[0], p)


@kc.kernel
def _curlnoise_on_host(state: kc.uint32, x: kc.array(dtype=Any), octaves: kc.uint32,
                       lacunarity: float, gain: float, out: kc.array(dtype=Any)):
    out[0] = curlnoise(state, x[0], octaves, lacunarity, gain)


def _coordinate(name: str, args: tuple, kwargs: dict[str, Any]) -> tuple[Any, tuple]:
    """The coordinate of a host call, given by position or by any of Warp's names."""
    given = [kwargs.pop(k) for k in ("x", "xy", "xyz", "xyzt") if k in kwargs]
    if len(args) + len(given) < 1 or len(given) > 1 or kwargs and name != "curlnoise":
        raise TypeError(f"kernelc.{name}(): expected (state, coordinate, ...)")
    return (given[0], args) if given else (args[0], args[1:])


def _run(name: str, kernel: Any, state: Any, x: Any, extra: list[Any], dtype: Any
         ) -> np.ndarray:
    # The coordinate travels in a one-element array, whose dtype picks the overload.
    kc_type = getattr(x, "_kc_type", None)
    if kc_type is None and not isinstance(x, (int, float, np.floating, np.integer)):
        raise TypeError(f"kernelc.{name}() takes a float or a kernelc "
                        f"vector coordinate, got {type(x).__name__}")
    coords = kc.array([x], dtype=kc.float32 if kc_type is None else kc_type, device="cpu")
    out = kc.zeros(1, dtype=dtype, device="cpu")
    kc.launch(kernel, 1, inputs=[np.uint32(state), coords, *extra, out], device="cpu")
    return out.numpy()[0]


def _noise_host(state: int, *args: Any, **kwargs: Any) -> float:
    x, rest = _coordinate("noise", args, kwargs)
    if rest:
        raise TypeError("kernelc.noise() takes 2 arguments: (state, x)")
    return float(_run("noise", _noise_on_host, state, x, [], float))


def _pnoise_host(state: int, *args: Any, **kwargs: Any) -> float:
    periods = [kwargs.pop(k) for k in ("px", "py", "pz", "pt") if k in kwargs]
    x, rest = _coordinate("pnoise", args, kwargs)
    periods = [*rest, *periods]
    p = kc.vec4i(*periods, *([0] * (4 - len(periods)))) if len(periods) <= 4 else None
    if p is None:
        raise TypeError("kernelc.pnoise() takes one period per coordinate")
    return float(_run("pnoise", _pnoise_on_host, state, x, [p], float))


def _curlnoise_host(state: int, *args: Any, **kwargs: Any) -> Any:
    x, rest = _coordinate("curlnoise", args, kwargs)
    options = dict(zip(("octaves", "lacunarity", "gain"), rest))
    for key in ("octaves", "lacunarity", "gain"):
        if key in kwargs:
            options[key] = kwargs.pop(key)
    if kwargs or len(rest) > 3:
        raise TypeError("kernelc.curlnoise() takes (state, xy, octaves=1, lacunarity=2.0, "
                        "gain=0.5)")
    flat = getattr(x, "_kc_type", None) == kc.types.as_type(kc.vec2)
    extra = [np.uint32(options.get("octaves", 1)), float(options.get("lacunarity", 2.0)),
             float(options.get("gain", 0.5))]
    value = _run("curlnoise", _curlnoise_on_host, state, x, extra, kc.vec2 if flat else kc.vec3)
    return kc.vec2(*value) if flat else kc.vec3(*value)


class _LibraryFunc(Func):
    """The public face of an overloaded library func: in kernels the overloads, on the host
    a function computing what the kernel computes."""

    def __init__(self, overloads: Func, host: Callable[..., Any]):
        super().__init__(overloads.func)
        self.variants = overloads.variants
        self._host = host

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._host(*args, **kwargs)


noise = _LibraryFunc(noise, _noise_host)
pnoise = _LibraryFunc(pnoise, _pnoise_host)
curlnoise = _LibraryFunc(curlnoise, _curlnoise_host)
