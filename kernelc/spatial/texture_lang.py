"""Texture sampling in kernels, written in kernelc's own language.

A texture reaches a kernel as a small record (`View1D`, `View2D`, `View3D`, whose kernel
type names are `Texture1D`, `Texture2D`, `Texture3D`): the address of its buffer (`id`,
0 for a null texture, which samples as zero), its base size, and its format and modes.
The buffer starts with a table of `MAX_LEVELS` uint64 byte offsets, one per mip level,
followed by the levels' texels, row-major (depth, height, width, channel).

The arithmetic follows Warp's CPU sampler operation by operation, so that results agree to
the last bit or nearly (a compiler may fuse a multiply and an add): linear filtering works
in float32 on coordinates first reduced by the period of a wrapping or mirroring axis;
nearest filtering finds its texel in float64; the address mode is applied to the integer
texel indices; border texels read as zero, as do channels the texture does not have.
Everything here is ordinary kernelc code, so both backends compile it and the autodiff
transform differentiates it: coordinate gradients come from the interpolation weights,
and the one custom gradient (`_mip_blend`) gives the LOD the slope towards the next level
even at an integer LOD, as Warp's adjoint does.
"""

from __future__ import annotations

import kernelc as kc
from kernelc.autodiff.custom import adjoint, func_grad
from kernelc.builtins import BUILTINS

WRAP, CLAMP, MIRROR, BORDER = 0, 1, 2, 3
CLOSEST, LINEAR = 0, 1
# Storage format codes (`Texture.dtype` on the host).
FLOAT32, FLOAT16, UINT8, INT8, UINT16, INT16, UINT32, INT32 = range(8)
MAX_LEVELS = 16
HEADER_BYTES = 8 * MAX_LEVELS

_load_u64 = BUILTINS["_load_uint64"]
_load_f32 = BUILTINS["_load_float32"]
_load_f16 = BUILTINS["_load_float16"]
_load_u8 = BUILTINS["_load_uint8"]
_load_i8 = BUILTINS["_load_int8"]
_load_u16 = BUILTINS["_load_uint16"]
_load_i16 = BUILTINS["_load_int16"]
_load_u32 = BUILTINS["_load_uint32"]
_load_i32 = BUILTINS["_load_int32"]


def _record(name: str, axes: str) -> type:
    """The kernel-side record of a texture with the given axes ("u", "uv" or "uvw")."""
    sizes = ("width", "height", "depth")[:len(axes)]
    fields = {"id": kc.uint64, **{size: kc.int32 for size in sizes}, "num_channels": kc.int32,
              "dtype_code": kc.int32, "filter_mode": kc.int32, "mip_filter_mode": kc.int32,
              "num_mip_levels": kc.int32, "normalized_coords": kc.int32,
              **{f"address_mode_{axis}": kc.int32 for axis in axes}}
    doc = f"What a kernel receives for a `kc.{name}` (all zero: a null texture)."
    cls = type(name, (), {"__annotations__": fields, "__doc__": doc, "__module__": __name__})
    return kc.struct(cls)


View1D = _record("Texture1D", "u")
View2D = _record("Texture2D", "uv")
View3D = _record("Texture3D", "uvw")


# ---- texels ----------------------------------------------------------------------------------


@kc.func
def _decode(data: kc.uint64, code: kc.int32, index: kc.int64) -> float:
    """Texel channel `index` as a float: 8- and 16-bit integers normalised, 32-bit
    integers converted, floats as they are."""
    if code == FLOAT32:
        return _load_f32(data, index)
    if code == UINT8:
        return kc.float32(_load_u8(data, index)) / 255.0
    if code == UINT16:
        return kc.float32(_load_u16(data, index)) / 65535.0
    if code == FLOAT16:
        return kc.float32(_load_f16(data, index))
    if code == UINT32:
        return kc.float32(_load_u32(data, index))
    if code == INT32:
        return kc.float32(_load_i32(data, index))
    x = 0.0
    if code == INT8:
        x = kc.float32(_load_i8(data, index)) / 127.0
    else:
        x = kc.float32(_load_i16(data, index)) / 32767.0
    if x < -1.0:  # -128 and -32768 map to -1, as the largest negative value does
        x = -1.0
    return x


@kc.func
def _level_data(tex_id: kc.uint64, level: kc.int32) -> kc.uint64:
    return tex_id + _load_u64(tex_id, level)


@kc.func
def _fetch(data: kc.uint64, code: kc.int32, channels: kc.int32, inside: bool,
           texel: kc.int64, channel: kc.int32) -> float:
    """Channel `channel` of texel number `texel`, zero outside the texture (border)."""
    if not inside:
        return 0.0
    return _decode(data, code, texel * kc.int64(channels) + kc.int64(channel))


@kc.func
def _inside(x: kc.int64, size: kc.int32) -> bool:
    return x >= kc.int64(0) and x < kc.int64(size)


# ---- addressing ------------------------------------------------------------------------------


@kc.func
def _address(index: kc.int64, size: kc.int32, mode: kc.int32) -> kc.int64:
    """A texel index after the axis's address mode (a border index is left as it is)."""
    n = kc.int64(size)
    out = index
    if mode == WRAP:
        out = index % n
        if out < kc.int64(0):
            out = out + n
    elif mode == CLAMP:
        out = kc.clamp(index, kc.int64(0), n - kc.int64(1))
    elif mode == MIRROR:
        period = n + n
        out = index % period
        if out < kc.int64(0):
            out = out + period
        if out >= n:
            out = period - out - kc.int64(1)
    return out


@kc.func
def _periodic(mode: kc.int32) -> bool:
    return mode == WRAP or mode == MIRROR


@kc.func
def _reduced(coord: float, normalized: kc.int32, base: kc.int32, mode: kc.int32) -> float:
    """A coordinate in normalised units, first reduced by the period of a wrapping or
    mirroring axis (so that large coordinates keep their fraction)."""
    x = coord
    if _periodic(mode):
        period = 1.0
        if normalized == 0:
            period = kc.float32(base)
        if mode == MIRROR:
            period = period * 2.0
        x = x % period
        if x < 0.0:
            x = x + period
    if normalized == 0:
        x = x / kc.float32(base)
    return x


@kc.func
def _linear_axis(coord: float, normalized: kc.int32, base: kc.int32, size: kc.int32,
                 mode: kc.int32):
    """The two texel indices a linear sample blends along one axis, and the weight of the
    second."""
    t = _reduced(coord, normalized, base, mode) * kc.float32(size) - 0.5
    low = 0.0
    high = kc.float32(size - 1)
    if mode == BORDER:  # both neighbours outside, without an unbounded float to int
        low = -2.0
        high = kc.float32(size)
    if mode == CLAMP or mode == BORDER:
        # As Warp's min and max: NaN goes to the high end, and on the low edge itself the
        # coordinate keeps its gradient.
        if not t < high:
            t = high
        if t < low:
            t = low
    cell = kc.floor(t)
    i0 = kc.int64(cell)
    return _address(i0, size, mode), _address(i0 + kc.int64(1), size, mode), t - cell


@kc.func
def _nearest_axis(coord: float, normalized: kc.int32, base: kc.int32, size: kc.int32,
                  mode: kc.int32) -> kc.int64:
    """The texel index of a nearest sample along one axis (float64, so that a tiny negative
    coordinate stays on its side of a border)."""
    x = kc.float64(coord)
    periodic = _periodic(mode)
    if periodic:
        period = kc.float64(1.0)
        if normalized == 0:
            period = kc.float64(base)
        if mode == MIRROR:
            period = period * kc.float64(2.0)
        x = x % period
    t = x * kc.float64(size)
    if normalized == 0:
        t = t / kc.float64(base)
    if not periodic:
        t = kc.max(kc.float64(-1.0), kc.min(t, kc.float64(size)))
    return _address(kc.int64(kc.floor(t)), size, mode)


@kc.func
def _lerp(a: float, b: float, f: float) -> float:
    return a * (1.0 - f) + b * f


@kc.func
def _level_size(base: kc.int32, level: kc.int32) -> kc.int32:
    return kc.max(base >> level, 1)


# ---- one mip level ---------------------------------------------------------------------------


@kc.func
def _level_1d(tex: View1D, level: kc.int32, u: float, count: kc.int32) -> kc.vec4f:
    w = _level_size(tex.width, level)
    data = _level_data(tex.id, level)
    code = tex.dtype_code
    channels = tex.num_channels
    out = kc.vec4f()
    if tex.filter_mode == CLOSEST:
        x = _nearest_axis(u, tex.normalized_coords, tex.width, w, tex.address_mode_u)
        for c in range(count):
            out[c] = _fetch(data, code, channels, _inside(x, w), x, c)
        return out
    x0, x1, fx = _linear_axis(u, tex.normalized_coords, tex.width, w, tex.address_mode_u)
    for c in range(count):
        v0 = _fetch(data, code, channels, _inside(x0, w), x0, c)
        v1 = _fetch(data, code, channels, _inside(x1, w), x1, c)
        out[c] = _lerp(v0, v1, fx)
    return out


@kc.func
def _texel_2d(x: kc.int64, y: kc.int64, w: kc.int32) -> kc.int64:
    return y * kc.int64(w) + x


@kc.func
def _level_2d(tex: View2D, level: kc.int32, u: float, v: float, count: kc.int32) -> kc.vec4f:
    w = _level_size(tex.width, level)
    h = _level_size(tex.height, level)
    data = _level_data(tex.id, level)
    code = tex.dtype_code
    channels = tex.num_channels
    normalized = tex.normalized_coords
    out = kc.vec4f()
    if tex.filter_mode == CLOSEST:
        x = _nearest_axis(u, normalized, tex.width, w, tex.address_mode_u)
        y = _nearest_axis(v, normalized, tex.height, h, tex.address_mode_v)
        inside = _inside(x, w) and _inside(y, h)
        for c in range(count):
            out[c] = _fetch(data, code, channels, inside, _texel_2d(x, y, w), c)
        return out
    x0, x1, fx = _linear_axis(u, normalized, tex.width, w, tex.address_mode_u)
    y0, y1, fy = _linear_axis(v, normalized, tex.height, h, tex.address_mode_v)
    in_x0 = _inside(x0, w)
    in_x1 = _inside(x1, w)
    in_y0 = _inside(y0, h)
    in_y1 = _inside(y1, h)
    for c in range(count):
        v00 = _fetch(data, code, channels, in_x0 and in_y0, _texel_2d(x0, y0, w), c)
        v10 = _fetch(data, code, channels, in_x1 and in_y0, _texel_2d(x1, y0, w), c)
        v01 = _fetch(data, code, channels, in_x0 and in_y1, _texel_2d(x0, y1, w), c)
        v11 = _fetch(data, code, channels, in_x1 and in_y1, _texel_2d(x1, y1, w), c)
        out[c] = _lerp(_lerp(v00, v10, fx), _lerp(v01, v11, fx), fy)
    return out


@kc.func
def _texel_3d(x: kc.int64, y: kc.int64, z: kc.int64, w: kc.int32, h: kc.int32) -> kc.int64:
    return (z * kc.int64(h) + y) * kc.int64(w) + x


@kc.func
def _corner_3d(tex: View3D, data: kc.uint64, x: kc.int64, y: kc.int64, z: kc.int64,
               w: kc.int32, h: kc.int32, d: kc.int32, c: kc.int32) -> float:
    inside = _inside(x, w) and _inside(y, h) and _inside(z, d)
    return _fetch(data, tex.dtype_code, tex.num_channels, inside, _texel_3d(x, y, z, w, h), c)


@kc.func
def _level_3d(tex: View3D, level: kc.int32, u: float, v: float, s: float,
              count: kc.int32) -> kc.vec4f:
    w = _level_size(tex.width, level)
    h = _level_size(tex.height, level)
    d = _level_size(tex.depth, level)
    data = _level_data(tex.id, level)
    normalized = tex.normalized_coords
    out = kc.vec4f()
    if tex.filter_mode == CLOSEST:
        x = _nearest_axis(u, normalized, tex.width, w, tex.address_mode_u)
        y = _nearest_axis(v, normalized, tex.height, h, tex.address_mode_v)
        z = _nearest_axis(s, normalized, tex.depth, d, tex.address_mode_w)
        for c in range(count):
            out[c] = _corner_3d(tex, data, x, y, z, w, h, d, c)
        return out
    x0, x1, fx = _linear_axis(u, normalized, tex.width, w, tex.address_mode_u)
    y0, y1, fy = _linear_axis(v, normalized, tex.height, h, tex.address_mode_v)
    z0, z1, fz = _linear_axis(s, normalized, tex.depth, d, tex.address_mode_w)
    for c in range(count):
        a00 = _lerp(_corner_3d(tex, data, x0, y0, z0, w, h, d, c),
                    _corner_3d(tex, data, x1, y0, z0, w, h, d, c), fx)
        a10 = _lerp(_corner_3d(tex, data, x0, y1, z0, w, h, d, c),
                    _corner_3d(tex, data, x1, y1, z0, w, h, d, c), fx)
        a01 = _lerp(_corner_3d(tex, data, x0, y0, z1, w, h, d, c),
                    _corner_3d(tex, data, x1, y0, z1, w, h, d, c), fx)
        a11 = _lerp(_corner_3d(tex, data, x0, y1, z1, w, h, d, c),
                    _corner_3d(tex, data, x1, y1, z1, w, h, d, c), fx)
        out[c] = _lerp(_lerp(a00, a10, fy), _lerp(a01, a11, fy), fz)
    return out


# ---- mip levels ------------------------------------------------------------------------------


@kc.func
def _mip_levels(lod: float, levels: kc.int32, mip_filter: kc.int32):
    """(first level, second level, weight of the second, whether to blend); a negative
    `lod` reads the base level."""
    if lod < 0.0 or levels <= 1:
        return 0, 0, 0.0, False
    top = levels - 1
    clamped = lod
    if lod > kc.float32(top):
        clamped = kc.float32(top)
    if mip_filter == CLOSEST:
        nearest = kc.min(kc.int32(kc.floor(clamped + 0.5)), top)
        return nearest, nearest, 0.0, False
    level0 = kc.int32(kc.floor(clamped))
    level1 = kc.min(level0 + 1, top)
    return level0, level1, clamped - kc.float32(level0), level1 != level0


@kc.func
def _mip_blend(v0: kc.vec4f, v1: kc.vec4f, f: float) -> kc.vec4f:
    if f == 0.0:
        return v0
    return v0 * (1.0 - f) + v1 * f


@func_grad(_mip_blend)
def _mip_blend_grad(v0: kc.vec4f, v1: kc.vec4f, f: float, adj_ret: kc.vec4f):
    # the slope towards the next level, also where f is 0 (the forward pass returns v0)
    adjoint[v0] += adj_ret * (1.0 - f)
    adjoint[v1] += adj_ret * f
    adjoint[f] += kc.dot(adj_ret, v1 - v0)


# ---- the samplers `texture_sample` calls -------------------------------------------------------


@kc.func
def sample_1d(tex: View1D, u: float, lod: float, count: kc.int32) -> kc.vec4f:
    """The first `count` channels at `u` (the rest zero); a negative `lod` reads level 0."""
    if tex.id == kc.uint64(0):
        return kc.vec4f()
    n = kc.min(count, tex.num_channels)
    level0, level1, f, blend = _mip_levels(lod, tex.num_mip_levels, tex.mip_filter_mode)
    v0 = _level_1d(tex, level0, u, n)
    if not blend:
        return v0
    return _mip_blend(v0, _level_1d(tex, level1, u, n), f)


@kc.func
def sample_2d(tex: View2D, u: float, v: float, lod: float, count: kc.int32) -> kc.vec4f:
    """The first `count` channels at (u, v) (the rest zero)."""
    if tex.id == kc.uint64(0):
        return kc.vec4f()
    n = kc.min(count, tex.num_channels)
    level0, level1, f, blend = _mip_levels(lod, tex.num_mip_levels, tex.mip_filter_mode)
    v0 = _level_2d(tex, level0, u, v, n)
    if not blend:
        return v0
    return _mip_blend(v0, _level_2d(tex, level1, u, v, n), f)


@kc.func
def sample_3d(tex: View3D, u: float, v: float, s: float, lod: float,
              count: kc.int32) -> kc.vec4f:
    """The first `count` channels at (u, v, w) (the rest zero)."""
    if tex.id == kc.uint64(0):
        return kc.vec4f()
    n = kc.min(count, tex.num_channels)
    level0, level1, f, blend = _mip_levels(lod, tex.num_mip_levels, tex.mip_filter_mode)
    v0 = _level_3d(tex, level0, u, v, s, n)
    if not blend:
        return v0
    return _mip_blend(v0, _level_3d(tex, level1, u, v, s, n), f)
