"""Random sampling of shapes and distributions (`sample_unit_disk`, `poisson`, ...).

Each sampler is a `@kc.func` that takes a random state and returns its sample together
with the advanced state. In a kernel, `kc.sample_unit_disk(state)` advances `state` in
place, as Warp's does and as `randf(state)` does: the public names are special forms
(`kernelc.frontend.sampling_forms`) that call the func and assign the new state back to
the variable. Every sampler draws the same `randf` values in the same order as Warp's,
so the samples are Warp's up to floating-point rounding (bit for bit for integers).

On the host they are ordinary functions that return the sample and leave `state` as it
is (Warp's behaviour outside kernels); `sample_cdf` exists only in kernels, as in Warp.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.frontend.special import special

__all__ = [
    "sample_unit_ring", "sample_unit_disk", "sample_unit_sphere_surface", "sample_unit_sphere",
    "sample_unit_hemisphere_surface", "sample_unit_hemisphere", "sample_unit_square",
    "sample_unit_cube", "sample_triangle", "poisson", "sample_cdf",
]

_TWO_PI = 2.0 * kc.pi  # folds to Warp's 2.f * M_PI_F in float32


# ---- shapes ------------------------------------------------------------------------------


@kc.func
def _unit_ring(state: kc.uint32) -> tuple[kc.vec2, kc.uint32]:
    theta = kc.randf(state, 0.0, _TWO_PI)
    return kc.vec2(kc.cos(theta), kc.sin(theta)), state


@kc.func
def _unit_disk(state: kc.uint32) -> tuple[kc.vec2, kc.uint32]:
    r = kc.sqrt(kc.randf(state))  # sqrt makes the area density uniform
    theta = kc.randf(state, 0.0, _TWO_PI)
    return kc.vec2(r * kc.cos(theta), r * kc.sin(theta)), state


@kc.func
def _unit_sphere_surface(state: kc.uint32) -> tuple[kc.vec3, kc.uint32]:
    phi = kc.acos(1.0 - 2.0 * kc.randf(state))
    theta = kc.randf(state, 0.0, _TWO_PI)
    x = kc.cos(theta) * kc.sin(phi)
    y = kc.sin(theta) * kc.sin(phi)
    return kc.vec3(x, y, kc.cos(phi)), state


@kc.func
def _unit_sphere(state: kc.uint32) -> tuple[kc.vec3, kc.uint32]:
    phi = kc.acos(1.0 - 2.0 * kc.randf(state))
    theta = kc.randf(state, 0.0, _TWO_PI)
    r = kc.pow(kc.randf(state), 1.0 / 3.0)  # cube root: uniform in volume
    x = r * kc.cos(theta) * kc.sin(phi)
    y = r * kc.sin(theta) * kc.sin(phi)
    return kc.vec3(x, y, r * kc.cos(phi)), state


@kc.func
def _unit_hemisphere_surface(state: kc.uint32) -> tuple[kc.vec3, kc.uint32]:
    phi = kc.acos(1.0 - kc.randf(state))
    theta = kc.randf(state, 0.0, _TWO_PI)
    x = kc.cos(theta) * kc.sin(phi)
    y = kc.sin(theta) * kc.sin(phi)
    return kc.vec3(x, y, kc.cos(phi)), state


@kc.func
def _unit_hemisphere(state: kc.uint32) -> tuple[kc.vec3, kc.uint32]:
    phi = kc.acos(1.0 - kc.randf(state))
    theta = kc.randf(state, 0.0, _TWO_PI)
    r = kc.pow(kc.randf(state), 1.0 / 3.0)
    x = r * kc.cos(theta) * kc.sin(phi)
    y = r * kc.sin(theta) * kc.sin(phi)
    return kc.vec3(x, y, r * kc.cos(phi)), state


@kc.func
def _unit_square(state: kc.uint32) -> tuple[kc.vec2, kc.uint32]:
    x = kc.randf(state) - 0.5
    y = kc.randf(state) - 0.5
    return kc.vec2(x, y), state


@kc.func
def _unit_cube(state: kc.uint32) -> tuple[kc.vec3, kc.uint32]:
    x = kc.randf(state) - 0.5
    y = kc.randf(state) - 0.5
    z = kc.randf(state) - 0.5
    return kc.vec3(x, y, z), state


@kc.func
def _triangle(state: kc.uint32) -> tuple[kc.vec2, kc.uint32]:
    r = kc.sqrt(kc.randf(state))
    v = kc.randf(state) * r
    return kc.vec2(1.0 - r, v), state


# ---- discrete distributions ------------------------------------------------------------------


@kc.func
def _cdf(state: kc.uint32, cdf: kc.array(dtype=float)) -> tuple[int, kc.uint32]:
    # The first index whose entry is >= u (a lower bound by bisection), as Warp.
    u = kc.randf(state)
    lower = 0
    upper = cdf.shape[0] - 1
    while lower < upper:
        mid = lower + (upper - lower) // 2
        if cdf[mid] < u:
            lower = mid + 1
        else:
            upper = mid
    return lower, state


@kc.func
def _log_gamma(x: float) -> float:
    # log(Gamma(x)) by Stirling's series with the argument shifted up to >= 7
    # (Zhang & Jin, "Computation of Special Functions", 1996), in float32 as Warp.
    if x == 1.0 or x == 2.0:
        return 0.0
    n = kc.uint32(0)
    if x < 7.0:
        n = kc.uint32(7.0 - x)
    x0 = x + kc.float32(n)
    x2 = (1.0 / x0) * (1.0 / x0)
    g = -1.39243221690590e00
    g = g * x2 + 1.796443723688307e-01
    g = g * x2 - 2.955065359477124e-02
    g = g * x2 + 6.410256410256410e-03
    g = g * x2 - 1.917526917526918e-03
    g = g * x2 + 8.417508417508418e-04
    g = g * x2 - 5.952380952380952e-04
    g = g * x2 + 7.936507936507937e-04
    g = g * x2 - 2.777777777777778e-03
    g = g * x2 + 8.333333333333333e-02
    out = g / x0 + 0.5 * 1.8378770664093453 + (x0 - 0.5) * kc.log(x0) - x0
    if x < 7.0:
        k = kc.uint32(1)
        while k <= n:
            out -= kc.log(x0 - 1.0)
            x0 -= 1.0
            k += kc.uint32(1)
    return out


@kc.func
def _poisson_small(state: kc.uint32, lam: float) -> tuple[kc.uint32, kc.uint32]:
    # Multiply uniforms until the product drops to exp(-lam): the count is Poisson(lam).
    # `rng` is a local copy: kernelc gives an unassigned parameter no variable of its own,
    # so a randf() on it in a loop would restart from the parameter in every iteration.
    rng = state
    limit = kc.exp(-lam)
    count = kc.uint32(0)
    product = kc.randf(rng)
    while product > limit:
        count += kc.uint32(1)
        product *= kc.randf(rng)
    return count, rng


@kc.func
def _poisson_large(state: kc.uint32, lam: float) -> tuple[kc.uint32, kc.uint32]:
    # Hoermann's transformed rejection (PTRS), Insurance: Math. & Econ. 12 (1993), in
    # float32 with Warp's constants and draw order (two uniforms per trial).
    slam = kc.sqrt(lam)
    loglam = kc.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2.0)
    rng = state  # a variable of its own (see _poisson_small)
    k = 0.0
    searching = True
    while searching:
        u = kc.randf(rng) - 0.5
        v = kc.randf(rng)
        us = 0.5 - kc.abs(u)
        k = kc.floor((2.0 * a / us + b) * u + lam + 0.43)
        if us >= 0.07 and v <= vr:
            searching = False  # the squeeze: accepted without the log test
        elif not (k < 0.0 or (us < 0.013 and v > us)):
            lhs = kc.log(v) + kc.log(invalpha) - kc.log(a / (us * us) + b)
            if lhs <= -lam + k * loglam - _log_gamma(k + 1.0):
                searching = False
    return kc.uint32(k), rng


@kc.func
def _poisson(state: kc.uint32, lam: float) -> tuple[kc.uint32, kc.uint32]:
    if lam >= 10.0:
        return _poisson_large(state, lam)
    if lam == 0.0:
        return kc.uint32(0), state  # no draw at all, as in Warp
    return _poisson_small(state, lam)


# Public name -> (the func returning (sample, new state), Warp's parameter names).
SAMPLERS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "sample_unit_ring": (_unit_ring, ("state",)),
    "sample_unit_disk": (_unit_disk, ("state",)),
    "sample_unit_sphere_surface": (_unit_sphere_surface, ("state",)),
    "sample_unit_sphere": (_unit_sphere, ("state",)),
    "sample_unit_hemisphere_surface": (_unit_hemisphere_surface, ("state",)),
    "sample_unit_hemisphere": (_unit_hemisphere, ("state",)),
    "sample_unit_square": (_unit_square, ("state",)),
    "sample_unit_cube": (_unit_cube, ("state",)),
    "sample_triangle": (_triangle, ("state",)),
    "poisson": (_poisson, ("state", "lam")),
    "sample_cdf": (_cdf, ("state", "cdf")),
}


# ---- on the host: one small kernel evaluates any sampler once --------------------------------

_HOST_ORDER = tuple(SAMPLERS)[:10]  # every sampler but sample_cdf (kernel-only in Warp)
_PLANAR = ("sample_unit_ring", "sample_unit_disk", "sample_unit_square", "sample_triangle")


@kc.kernel
def _sample_on_host(which: int, state: kc.uint32, lam: float, out: kc.array(dtype=kc.vec3),
                    count: kc.array(dtype=kc.uint32)):
    s = state
    if which == 0:
        p, s = _unit_ring(s)
        out[0] = kc.vec3(p[0], p[1], 0.0)
    elif which == 1:
        p, s = _unit_disk(s)
        out[0] = kc.vec3(p[0], p[1], 0.0)
    elif which == 2:
        out[0], s = _unit_sphere_surface(s)
    elif which == 3:
        out[0], s = _unit_sphere(s)
    elif which == 4:
        out[0], s = _unit_hemisphere_surface(s)
    elif which == 5:
        out[0], s = _unit_hemisphere(s)
    elif which == 6:
        p, s = _unit_square(s)
        out[0] = kc.vec3(p[0], p[1], 0.0)
    elif which == 7:
        out[0], s = _unit_cube(s)
    elif which == 8:
        p, s = _triangle(s)
        out[0] = kc.vec3(p[0], p[1], 0.0)
    else:
        count[0], s = _poisson(s, lam)


def _on_host(name: str, state: Any, lam: float = 0.0) -> Any:
    out = kc.zeros(1, dtype=kc.vec3, device="cpu")
    count = kc.zeros(1, dtype=kc.uint32, device="cpu")
    kc.launch(_sample_on_host, 1, inputs=[_HOST_ORDER.index(name), np.uint32(state), lam],
              outputs=[out, count], device="cpu")
    if name == "poisson":
        return count.numpy()[0]
    p = out.numpy()[0]
    return kc.vec2(p[0], p[1]) if name in _PLANAR else kc.vec3(p[0], p[1], p[2])


# ---- the public names ------------------------------------------------------------------------


@special("sample_unit_ring")
def sample_unit_ring(state: int) -> Any:
    """A uniformly random point on the unit circle: a vec2 of length 1.

    Args:
        state: A random state from `rand_init`; advanced in place in kernels.

    Returns:
        The point, a vec2.
    """
    return _on_host("sample_unit_ring", state)


@special("sample_unit_disk")
def sample_unit_disk(state: int) -> Any:
    """A uniformly random point inside the unit disk (radius <= 1).

    Args:
        state: A random state from `rand_init`; advanced in place in kernels.

    Returns:
        The point, a vec2.
    """
    return _on_host("sample_unit_disk", state)


@special("sample_unit_sphere_surface")
def sample_unit_sphere_surface(state: int) -> Any:
    """A uniformly random point on the unit sphere: a vec3 of length 1.

    Args:
        state: A random state from `rand_init`; advanced in place in kernels.

    Returns:
        The point, a vec3.
    """
    return _on_host("sample_unit_sphere_surface", state)


@special("sample_unit_sphere")
def sample_unit_sphere(state: int) -> Any:
    """A uniformly random point inside the unit ball (radius <= 1).

    Args:
        state: A random state from `rand_init`; advanced in place in kernels.

    Returns:
        The point, a vec3.
    """
    return _on_host("sample_unit_sphere", state)


@special("sample_unit_hemisphere_surface")
def sample_unit_hemisphere_surface(state: int) -> Any:
    """A uniformly random point on the unit hemisphere z >= 0: a vec3 of length 1.

    Args:
        state: A random state from `rand_init`; advanced in place in kernels.

    Returns:
        The point, a vec3.
    """
    return _on_host("sample_unit_hemisphere_surface", state)


@special("sample_unit_hemisphere")
def sample_unit_hemisphere(state: int) -> Any:
    """A uniformly random point inside the unit half-ball z >= 0.

    Args:
        state: A random state from `rand_init`; advanced in place in kernels.

    Returns:
        The point, a vec3.
    """
    return _on_host("sample_unit_hemisphere", state)


@special("sample_unit_square")
def sample_unit_square(state: int) -> Any:
    """A uniformly random point in the square [-0.5, 0.5)^2.

    Args:
        state: A random state from `rand_init`; advanced in place in kernels.

    Returns:
        The point, a vec2.
    """
    return _on_host("sample_unit_square", state)


@special("sample_unit_cube")
def sample_unit_cube(state: int) -> Any:
    """A uniformly random point in the cube [-0.5, 0.5)^3.

    Args:
        state: A random state from `rand_init`; advanced in place in kernels.

    Returns:
        The point, a vec3.
    """
    return _on_host("sample_unit_cube", state)


@special("sample_triangle")
def sample_triangle(state: int) -> Any:
    """A uniformly random point in a triangle, as barycentric coordinates (u, v).

    The third coordinate is w = 1 - u - v; the point is `u * a + v * b + w * c`.

    Args:
        state: A random state from `rand_init`; advanced in place in kernels.

    Returns:
        (u, v), a vec2.
    """
    return _on_host("sample_triangle", state)


@special("poisson")
def poisson(state: int, lam: float) -> Any:
    """A Poisson-distributed count with mean `lam` (a uint32).

    `lam < 10` multiplies uniforms; `lam >= 10` uses Hoermann's transformed rejection;
    `lam == 0` returns 0 without drawing.

    Args:
        state: A random state from `rand_init`; advanced in place in kernels.
        lam: The rate (mean and variance), >= 0.

    Returns:
        The count, a uint32.
    """
    return _on_host("poisson", state, lam)


@special("sample_cdf")
def sample_cdf(state: int, cdf: Any) -> int:
    """The index of the first entry of `cdf` that is >= a uniform draw u in [0, 1).

    `cdf` is a 1-d float array, non-decreasing, with last entry 1 (a normalised
    cumulative sum of weights). Kernel-only, as in Warp.

    Args:
        state: A random state from `rand_init`; advanced in place.
        cdf: The cumulative distribution.

    Returns:
        The sampled index, an int in [0, len(cdf) - 1].
    """
    raise RuntimeError("kernelc.sample_cdf() can only be called inside a kernel")
