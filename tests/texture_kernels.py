"""Texture programs, run under kernelc and (in a subprocess) under Warp to compare results.

`wp` is kernelc, or Warp when KERNELC_TEXTURE_MODULE=warp. `run_all()` builds every
texture of `configs()` from seeded random data, samples it at seeded random coordinates
(some far outside the texture, some on texel centres and edges) and returns the outputs,
and the gradients of a weighted sum of samples w.r.t. the coordinates and the LOD.
"""

# No `from __future__ import annotations`: Warp reads kernel annotations as objects.

import importlib
import os

import numpy as np

wp = importlib.import_module(os.environ.get("KERNELC_TEXTURE_MODULE", "kernelc"))
N = 48  # samples per texture

DTYPES = ("float32", "float16", "uint8", "int8", "uint16", "int16", "uint32", "int32")


@wp.kernel
def sample_1d(tex: wp.Texture1D, u: wp.array(dtype=float), lod: wp.array(dtype=float),
              weight: wp.array(dtype=wp.vec4), out: wp.array(dtype=wp.vec4),
              total: wp.array(dtype=float)):
    i = wp.tid()
    v = wp.texture_sample(tex, u[i], dtype=wp.vec4, lod=lod[i])
    out[i] = v
    total[i] = wp.dot(weight[i], v)


@wp.kernel
def sample_2d(tex: wp.Texture2D, uv: wp.array(dtype=wp.vec2), lod: wp.array(dtype=float),
              weight: wp.array(dtype=wp.vec4), out: wp.array(dtype=wp.vec4),
              total: wp.array(dtype=float)):
    i = wp.tid()
    v = wp.texture_sample(tex, uv[i], dtype=wp.vec4, lod=lod[i])
    out[i] = v
    total[i] = wp.dot(weight[i], v)


@wp.kernel
def sample_3d(tex: wp.Texture3D, uvw: wp.array(dtype=wp.vec3), lod: wp.array(dtype=float),
              weight: wp.array(dtype=wp.vec4), out: wp.array(dtype=wp.vec4),
              total: wp.array(dtype=float)):
    i = wp.tid()
    v = wp.texture_sample(tex, uvw[i], dtype=wp.vec4, lod=lod[i])
    out[i] = v
    total[i] = wp.dot(weight[i], v)


# The other call forms (kernelc only: Warp builds a "unique" module only when launched).
@wp.kernel(module="unique", enable_backward=False)
def forms_1d(tex: wp.Texture1D, u: wp.array(dtype=float), lod: wp.array(dtype=float),
             out1: wp.array(dtype=float), out2: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    out1[i] = wp.texture_sample(tex, u[i], float)
    out2[i] = wp.texture_sample(tex, u=u[i], dtype=wp.vec2, lod=lod[i])


@wp.kernel(module="unique", enable_backward=False)
def forms_2d(tex: wp.Texture2D, uv: wp.array(dtype=wp.vec2), lod: wp.array(dtype=float),
             out1: wp.array(dtype=float), out2: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    p = uv[i]
    out1[i] = wp.texture_sample(tex, p, dtype=float)
    out2[i] = wp.texture_sample(tex, p[0], p[1], wp.vec2, lod[i])


@wp.kernel(module="unique", enable_backward=False)
def forms_3d(tex: wp.Texture3D, uvw: wp.array(dtype=wp.vec3), lod: wp.array(dtype=float),
             out1: wp.array(dtype=float), out2: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    p = uvw[i]
    out1[i] = wp.texture_sample(tex, p[0], p[1], p[2], dtype=float, lod=lod[i])
    out2[i] = wp.texture_sample(tex, uvw=p, dtype=wp.vec2)


@wp.struct
class Material:
    albedo: wp.Texture2D
    scale: float


@wp.func
def shade_one(m: Material, tex: wp.Texture2D, uv: wp.vec2):
    a = m.scale * wp.texture_sample(m.albedo, uv, dtype=float)
    return a + wp.texture_sample(tex, uv[0], uv[1], dtype=float)


@wp.kernel(enable_backward=False)
def shade(materials: wp.array(dtype=Material), textures: wp.array(dtype=wp.Texture2D),
          uv: wp.array(dtype=wp.vec2), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = shade_one(materials[i % materials.shape[0]], textures[i % textures.shape[0]],
                       uv[i])


@wp.kernel(enable_backward=False)
def special(nearest: wp.Texture1D, linear: wp.Texture1D, u: wp.array(dtype=float),
            out: wp.array2d(dtype=float)):
    i = wp.tid()
    out[i, 0] = wp.texture_sample(nearest, u[i], dtype=float)
    out[i, 1] = wp.texture_sample(linear, u[i], dtype=float)


@wp.kernel(enable_backward=False)
def sizes(t1: wp.Texture1D, t2: wp.Texture2D, t3: wp.Texture3D, out: wp.array(dtype=int)):
    out[0] = t1.width
    out[1] = t2.width
    out[2] = t2.height
    out[3] = t3.width
    out[4] = t3.height
    out[5] = t3.depth


def configs(ndim: int, count: int, seed: int) -> list[dict]:
    """Seeded random texture configurations (every dtype, channel count, filter, address
    mode, coordinate kind and mip setting appears)."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        dtype = DTYPES[k % len(DTYPES)]
        integer32 = dtype in ("uint32", "int32")
        mipmapped = k % 3 == 0
        out.append({
            "ndim": ndim, "dtype": dtype, "channels": int(rng.choice([1, 2, 4])),
            "size": [int(n) for n in rng.integers(1, 9 if ndim < 3 else 6, ndim)],
            "filter": 0 if integer32 else int(k // len(DTYPES) % 2 == 0 or rng.random() < 0.3),
            "modes": [int(m) for m in rng.integers(0, 4, ndim)],
            "normalized": bool(k % 4 != 1),
            "levels": 0 if mipmapped else 1,
            "mip_filter": 0 if integer32 else int(rng.random() < 0.6),
            "seed": int(rng.integers(1 << 30)),
        })
    return out


def texels(config: dict) -> np.ndarray:
    """Random non-zero texels of a configuration, in its NumPy shape and dtype."""
    rng = np.random.default_rng(config["seed"])
    shape = tuple(reversed(config["size"]))
    if config["channels"] > 1:
        shape += (config["channels"],)
    dtype = np.dtype(config["dtype"])
    if dtype.kind == "f":
        data = rng.uniform(-4.0, 4.0, shape)
    else:
        info = np.iinfo(dtype)
        hi = min(info.max, 1 << 20)
        data = rng.integers(max(info.min, -hi), hi, shape, endpoint=True)
        data[data == 0] = 1
    return data.astype(dtype)


def coordinates(config: dict, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Sample points (n, ndim) and LODs: random, far out, texel centres and edges."""
    rng = np.random.default_rng(config["seed"] + 1)
    size = np.array(config["size"], dtype=np.float64)
    unit = np.ones_like(size) if config["normalized"] else size
    pts = rng.uniform(-1.5, 2.5, (n, len(size))) * unit
    centres = (rng.integers(0, size, (n, len(size))) + 0.5) / size * unit
    edges = rng.integers(-1, size + 2, (n, len(size))) / size * unit
    pts[8:16], pts[16:24] = centres[8:16], edges[16:24]
    pts[24:28] *= 37.0  # several periods away
    pts[28] = -1e-9 * unit
    lod = rng.uniform(-0.5, 5.0, n)
    lod[:6] = [-1.0, 0.0, 1.0, 2.0, 0.5, 100.0]
    return pts.astype(np.float32), lod.astype(np.float32)


def make_texture(config: dict, device: str = "cpu"):
    kind = (wp.Texture1D, wp.Texture2D, wp.Texture3D)[config["ndim"] - 1]
    modes = tuple(wp.TextureAddressMode(m) for m in config["modes"])
    return kind(texels(config), filter_mode=wp.TextureFilterMode(config["filter"]),
                address_mode=modes, normalized_coords=config["normalized"],
                num_mip_levels=config["levels"],
                mip_filter_mode=wp.TextureFilterMode(config["mip_filter"]), device=device)


def _points(ndim: int, pts: np.ndarray):
    if ndim == 1:
        return wp.array(pts[:, 0], dtype=float, device="cpu", requires_grad=True)
    vec = (wp.vec2, wp.vec3)[ndim - 2]
    return wp.array(pts, dtype=vec, device="cpu", requires_grad=True)


def run_config(config: dict) -> dict:
    """Samples (all four channels) of one configuration, and the gradients of a weighted
    sum of them w.r.t. the coordinates and the LOD."""
    ndim = config["ndim"]
    tex = make_texture(config)
    pts, lod = coordinates(config, N)
    p = _points(ndim, pts)
    lods = wp.array(lod, dtype=float, device="cpu", requires_grad=True)
    weight = np.random.default_rng(config["seed"] + 2).uniform(0.5, 2.0, (N, 4))
    w = wp.array(weight.astype(np.float32), dtype=wp.vec4, device="cpu")
    out = wp.array(np.full((N, 4), np.nan, np.float32), dtype=wp.vec4, device="cpu")
    total = wp.array(np.full(N, np.nan, np.float32), dtype=float, device="cpu",
                     requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch((sample_1d, sample_2d, sample_3d)[ndim - 1], N, inputs=[tex, p, lods, w],
                  outputs=[out, total], device="cpu")
    tape.backward(grads={total: wp.ones(N, dtype=float, device="cpu")})
    return {"sample": out.numpy(), "total": total.numpy(), "coord_grad": p.grad.numpy(),
            "lod_grad": lods.grad.numpy()}


def run_aggregates() -> dict:
    """Textures in struct fields and arrays, a null texture, and the size attributes."""
    data = [np.random.default_rng(s).uniform(0.5, 2.0, (3 + s, 4 + s)).astype(np.float32)
            for s in range(3)]
    textures = [wp.Texture2D(d, device="cpu") for d in data]
    materials = []
    for k, scale in enumerate((2.0, -1.0, 0.5)):
        m = Material()
        if k < 2:  # the third keeps a null texture, which samples as zero
            m.albedo = textures[2 - k]
        m.scale = scale
        materials.append(m)
    uv = np.random.default_rng(7).uniform(-0.2, 1.2, (12, 2)).astype(np.float32)
    out = wp.array(np.full(12, np.nan, np.float32), dtype=float, device="cpu")
    wp.launch(shade, 12, inputs=[wp.array(materials, dtype=Material, device="cpu"),
                                 wp.array(textures, dtype=wp.Texture2D, device="cpu"),
                                 wp.array(uv, dtype=wp.vec2, device="cpu")],
              outputs=[out], device="cpu")
    t1 = wp.Texture1D(np.ones(5, np.float32), device="cpu")
    t3 = wp.Texture3D(np.ones((2, 3, 4, 2), np.uint8), device="cpu")
    dims = wp.array(np.full(6, -7, np.int32), dtype=int, device="cpu")
    wp.launch(sizes, 1, inputs=[t1, textures[1], t3], outputs=[dims], device="cpu")
    u = wp.array(np.array([np.nan, np.inf, -np.inf, 1e30, -1e30], np.float32), dtype=float,
                 device="cpu")
    texel = np.array([3.0, 5.0, 7.0, 9.0], np.float32)
    odd = []
    for mode in range(4):  # NaN and infinities by address mode (a power-of-two width)
        pair = [wp.Texture1D(texel, filter_mode=wp.TextureFilterMode(f),
                             address_mode=wp.TextureAddressMode(mode), device="cpu")
                for f in (0, 1)]
        odd.append(wp.array(np.full((5, 2), -7.0, np.float32), dtype=float, device="cpu"))
        wp.launch(special, 5, inputs=[*pair, u], outputs=[odd[-1]], device="cpu")
    return {"shade": out.numpy(), "sizes": dims.numpy(),
            "special": np.stack([a.numpy() for a in odd])}


def run_all(count: int = 30) -> dict:
    """Every configuration of every dimension, keyed "<ndim>d_<k>/<output>"."""
    results = {}
    for ndim in (1, 2, 3):
        for k, config in enumerate(configs(ndim, count, 100 + ndim)):
            for name, value in run_config(config).items():
                results[f"{ndim}d_{k}/{name}"] = value
    for name, value in run_aggregates().items():
        results[f"aggregates/{name}"] = value
    return results
