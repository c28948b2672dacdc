"""Perlin/curl noise and the random samplers (kernelc.lib.noise, kernelc.lib.sampling).

The kernels are written as a Warp user writes them (`import kernelc as wp`), so the very
same source runs under Warp for the reference values.
"""

from __future__ import annotations

import inspect
import shutil

import numpy as np
import pytest

import kernelc as kc
import kernelc as wp
from tests.conftest import poisoned, run_warp

# Lattice periods of the pnoise columns.
PX, PY, PZ, PT = 3, 5, 2, 7


@wp.kernel
def noise_all(seed: int, xs: wp.array(dtype=wp.vec4), ps: wp.array(dtype=wp.vec4),
              out: wp.array2d(dtype=float)):
    i = wp.tid()
    state = wp.rand_init(seed, i)
    p = xs[i]
    q = ps[i]
    out[i, 0] = wp.noise(state, p[0])
    out[i, 1] = wp.noise(state, wp.vec2(p[0], p[1]))
    out[i, 2] = wp.noise(state, wp.vec3(p[0], p[1], p[2]))
    out[i, 3] = wp.noise(state, p)
    out[i, 4] = wp.pnoise(state, q[0], PX)
    out[i, 5] = wp.pnoise(state, wp.vec2(q[0], q[1]), PX, PY)
    out[i, 6] = wp.pnoise(state, wp.vec3(q[0], q[1], q[2]), PX, PY, PZ)
    out[i, 7] = wp.pnoise(state, q, PX, PY, PZ, PT)
    c2 = wp.curlnoise(state, wp.vec2(p[0], p[1]))
    c3 = wp.curlnoise(state, wp.vec3(p[0], p[1], p[2]), wp.uint32(3), 2.0, 0.5)
    c4 = wp.curlnoise(state, p, octaves=wp.uint32(2), lacunarity=1.7, gain=0.6)
    out[i, 8] = c2[0]
    out[i, 9] = c2[1]
    out[i, 10] = c3[0]
    out[i, 11] = c3[1]
    out[i, 12] = c3[2]
    out[i, 13] = c4[0]
    out[i, 14] = c4[1]
    out[i, 15] = c4[2]


@wp.kernel
def sample_all(seed: int, lams: wp.array(dtype=float), cdf: wp.array(dtype=float),
               v2: wp.array2d(dtype=wp.vec2), v3: wp.array2d(dtype=wp.vec3),
               ints: wp.array2d(dtype=wp.uint32)):
    i = wp.tid()
    state = wp.rand_init(seed, i)
    v2[i, 0] = wp.sample_unit_ring(state)
    v2[i, 1] = wp.sample_unit_disk(state)
    v3[i, 0] = wp.sample_unit_sphere_surface(state)
    v3[i, 1] = wp.sample_unit_sphere(state)
    v3[i, 2] = wp.sample_unit_hemisphere_surface(state)
    v3[i, 3] = wp.sample_unit_hemisphere(state)
    v2[i, 2] = wp.sample_unit_square(state)
    v3[i, 4] = wp.sample_unit_cube(state)
    v2[i, 3] = wp.sample_triangle(state)
    ints[i, 0] = wp.poisson(state, lams[i])
    ints[i, 1] = wp.uint32(wp.sample_cdf(state, cdf))
    ints[i, 2] = wp.poisson(state, 0.0)  # draws nothing
    ints[i, 3] = wp.poisson(state, lam=lams[i] * 4.0)
    ints[i, 4] = state  # the final state: every draw was consumed as Warp consumes it


N = 512


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(20261107)
    xs = rng.uniform(-20.0, 20.0, (N, 4))
    xs[np.abs(xs - np.round(xs)) < 1e-3] += 0.25  # keep off the lattice, where noise is 0
    ps = rng.uniform(0.05, 30.0, (N, 4))
    lams = rng.uniform(0.0, 30.0, N)
    lams[:4] = (0.0, 10.0, 9.999, 1e-3)  # the branch points of poisson
    weights = rng.uniform(0.1, 1.0, 17)
    cdf = np.cumsum(weights) / weights.sum()
    return dict(xs=xs.astype(np.float32), ps=ps.astype(np.float32),
                lams=lams.astype(np.float32), cdf=cdf.astype(np.float32))


@pytest.fixture(scope="module")
def warp_results(inputs, tmp_path_factory):
    """Both kernels under Warp, in one subprocess."""
    source = inspect.getsource(noise_all.func) + "\n" + inspect.getsource(sample_all.func)
    script = f"""
PX, PY, PZ, PT = {PX}, {PY}, {PZ}, {PT}
{source}
n = {N}
out = wp.zeros((n, 16), dtype=float)
wp.launch(noise_all, n, inputs=[42, wp.array(inputs["xs"], dtype=wp.vec4),
                                wp.array(inputs["ps"], dtype=wp.vec4), out])
v2 = wp.zeros((n, 4), dtype=wp.vec2)
v3 = wp.zeros((n, 5), dtype=wp.vec3)
ints = wp.zeros((n, 5), dtype=wp.uint32)
wp.launch(sample_all, n, inputs=[11, wp.array(inputs["lams"], dtype=float),
                                 wp.array(inputs["cdf"], dtype=float), v2, v3, ints])
results.update(noise=out.numpy(), v2=v2.numpy(), v3=v3.numpy(), ints=ints.numpy())
"""
    return run_warp(script, tmp_path_factory.mktemp("warp"), **inputs)


def _run_noise(inputs) -> np.ndarray:
    out = poisoned((N, 16), np.float32)
    kc.launch(noise_all, N, inputs=[42, kc.array(inputs["xs"], dtype=kc.vec4),
                                    kc.array(inputs["ps"], dtype=kc.vec4), out])
    return out.numpy()


def _run_samplers(inputs, n: int = N, seed: int = 11) -> dict[str, np.ndarray]:
    v2 = poisoned((n, 4, 2), np.float32)
    v3 = poisoned((n, 5, 3), np.float32)
    ints = poisoned((n, 5), np.uint32)
    v2, v3 = kc.array(v2.numpy(), dtype=kc.vec2), kc.array(v3.numpy(), dtype=kc.vec3)
    lams = np.resize(inputs["lams"], n)
    kc.launch(sample_all, n, inputs=[seed, kc.array(lams, dtype=float),
                                     kc.array(inputs["cdf"], dtype=float), v2, v3, ints])
    return dict(v2=v2.numpy(), v3=v3.numpy(), ints=ints.numpy(), lams=lams)


# ---- against Warp --------------------------------------------------------------------------


def test_noise_matches_warp(inputs, warp_results):
    ours = _run_noise(inputs)
    assert np.isfinite(ours).all()
    np.testing.assert_allclose(ours, warp_results["noise"], rtol=1e-5, atol=2e-6)
    assert np.abs(ours[:, :8]).max() < 1.0 and np.abs(ours[:, :8]).std() > 0.05


def test_samplers_match_warp(inputs, warp_results):
    ours = _run_samplers(inputs)
    # Integers (counts, indices, the final state) bit for bit; floats to rounding.
    np.testing.assert_array_equal(ours["ints"], warp_results["ints"])
    np.testing.assert_allclose(ours["v2"], warp_results["v2"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours["v3"], warp_results["v3"], rtol=1e-5, atol=1e-6)


# ---- NumPy oracles: the PCG stream and what each sampler makes of it ---------------------------


def _pcg(state: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        b = state * np.uint32(747796405) + np.uint32(2891336453)
        c = ((b >> ((b >> np.uint32(28)) + np.uint32(4))) ^ b) * np.uint32(277803737)
    return (c >> np.uint32(22)) ^ c


def _rand_init(seed: int, offset: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return _pcg(np.uint32(seed) + _pcg(offset.astype(np.uint32)))


def _uniforms(state: np.ndarray, count: int) -> tuple[list[np.ndarray], np.ndarray]:
    """`count` successive randf() values (float32) and the state after them."""
    values = []
    for _ in range(count):
        state = _pcg(state)
        values.append((state >> np.uint32(8)).astype(np.float32) * np.float32(2.0**-24))
    return values, state


# Draws per sampler, in sample_all's order (poisson's vary; sample_cdf takes one).
DRAWS = (1, 2, 2, 3, 2, 3, 2, 3, 2)


def test_samplers_consume_the_stream_like_randf(inputs):
    ours = _run_samplers(inputs)
    state = _rand_init(11, np.arange(N))
    u, state = _uniforms(state, DRAWS[0])
    theta = u[0].astype(np.float64) * np.float32(2 * np.pi)
    np.testing.assert_allclose(ours["v2"][:, 0], np.stack([np.cos(theta), np.sin(theta)], 1),
                               atol=2e-6)
    u, state = _uniforms(state, sum(DRAWS[1:6]))
    u, state = _uniforms(state, DRAWS[6])  # sample_unit_square: exact in float32
    np.testing.assert_array_equal(ours["v2"][:, 2], np.stack(u, 1) - np.float32(0.5))
    u, state = _uniforms(state, DRAWS[7])
    np.testing.assert_array_equal(ours["v3"][:, 4], np.stack(u, 1) - np.float32(0.5))
    u, state = _uniforms(state, DRAWS[8])  # sample_triangle: u = 1 - sqrt(r1), v = r2 sqrt(r1)
    r = np.sqrt(u[0])
    np.testing.assert_array_equal(ours["v2"][:, 3], np.stack([1 - r, u[1] * r], 1))
    # Then poisson (a data-dependent number of draws), sample_cdf (one): check the cdf index
    # for the lanes whose rate was zero, where poisson draws nothing.
    zero = ours["lams"] == 0
    assert zero.any()
    u, _ = _uniforms(state[zero], 1)
    expected = np.searchsorted(inputs["cdf"], u[0], side="left")
    np.testing.assert_array_equal(ours["ints"][zero, 1], expected)


# ---- statistics and geometry ---------------------------------------------------------------


def test_samples_lie_in_their_shapes(inputs):
    out = _run_samplers(inputs, n=20000, seed=3)
    ring, disk, square, tri = (out["v2"][:, k] for k in range(4))
    surface, ball, half_surface, half_ball, cube = (out["v3"][:, k] for k in range(5))
    for unit in (ring, surface, half_surface):
        np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=2e-6)
    for inside in (disk, ball, half_ball):
        assert (np.linalg.norm(inside, axis=1) <= 1.0 + 1e-6).all()
    assert (half_surface[:, 2] >= 0).all() and (half_ball[:, 2] >= 0).all()
    for box in (square, cube):
        assert (box >= -0.5).all() and (box < 0.5).all()
    assert (tri >= 0).all() and (tri.sum(1) <= 1.0 + 1e-6).all()
    # Uniform by area / volume: the inner half radius holds 1/4 of a disk, 1/8 of a ball.
    assert abs((np.linalg.norm(disk, axis=1) < 0.5).mean() - 0.25) < 0.02
    assert abs((np.linalg.norm(ball, axis=1) < 0.5).mean() - 0.125) < 0.015
    assert np.abs(surface.mean(0)).max() < 0.03
    assert abs(half_surface[:, 2].mean() - 0.5) < 0.02  # E[z] on the hemisphere is 1/2
    assert abs(tri[:, 0].mean() - 1 / 3) < 0.01 and abs(tri[:, 1].mean() - 1 / 3) < 0.01


@wp.kernel
def poisson_counts(seed: int, lam: float, out: wp.array(dtype=wp.uint32)):
    i = wp.tid()
    state = wp.rand_init(seed, i)
    out[i] = wp.poisson(state, lam)


@wp.kernel
def cdf_draws(seed: int, cdf: wp.array(dtype=float), out: wp.array(dtype=int)):
    i = wp.tid()
    state = wp.rand_init(seed, i)
    out[i] = wp.sample_cdf(state, cdf)


@pytest.mark.parametrize("lam", [0.7, 4.0, 12.0, 35.0])
def test_poisson_mean_and_variance(lam):
    n = 20000
    out = poisoned(n, np.uint32)
    kc.launch(poisson_counts, n, inputs=[5, lam, out])
    counts = out.numpy().astype(np.float64)
    assert abs(counts.mean() - lam) < 5 * np.sqrt(lam / n)
    assert abs(counts.var() / lam - 1.0) < 0.06


def test_sample_cdf_frequencies(inputs):
    n = 20000
    cdf = inputs["cdf"]
    out = poisoned(n, np.int32)
    kc.launch(cdf_draws, n, inputs=[9, kc.array(cdf, dtype=float), out])
    counts = np.bincount(out.numpy(), minlength=len(cdf))
    assert counts.sum() == n and len(counts) == len(cdf)
    p = np.diff(cdf, prepend=0.0)
    assert (np.abs(counts / n - p) < 5 * np.sqrt(p * (1 - p) / n)).all()


# ---- noise properties ------------------------------------------------------------------------


@wp.kernel
def noise_points(seed: int, xs: wp.array(dtype=wp.vec3), out: wp.array2d(dtype=float)):
    i = wp.tid()
    state = wp.rand_init(seed)
    p = xs[i]
    out[i, 0] = wp.noise(state, p[0])
    out[i, 1] = wp.noise(state, wp.vec2(p[0], p[1]))
    out[i, 2] = wp.noise(state, p)
    out[i, 3] = wp.noise(state, wp.vec4(p[0], p[1], p[2], p[0]))
    out[i, 4] = wp.pnoise(state, p[0], 4)
    out[i, 5] = wp.pnoise(state, wp.vec2(p[0], p[1]), 4, 3)
    out[i, 6] = wp.pnoise(state, p, 4, 3, 2)
    out[i, 7] = wp.pnoise(state, wp.vec4(p[0], p[1], p[2], p[0]), 4, 3, 2, 4)
    c = wp.curlnoise(state, wp.vec3(p[0], p[1], p[2]), wp.uint32(0))
    out[i, 8] = wp.length(c)


def _noise_at(xs: np.ndarray) -> np.ndarray:
    out = poisoned((len(xs), 9), np.float32)
    kc.launch(noise_points, len(xs), inputs=[3, kc.array(xs.astype(np.float32), dtype=kc.vec3),
                                               out])
    return out.numpy()


def test_noise_vanishes_on_the_lattice_and_repeats_with_its_period(rng):
    lattice = rng.integers(1, 40, (64, 3)).astype(np.float64)
    assert (_noise_at(lattice)[:, :8] == 0).all()
    # Multiples of 1/8 are exact in float32, so x and x + period land on the same fraction.
    x = rng.integers(1, 64, (64, 3)) / 8.0
    shift = rng.integers(1, 5, (64, 1)) * np.array([4.0, 3.0, 2.0])  # whole periods
    a, b = _noise_at(x), _noise_at(x + shift)
    np.testing.assert_array_equal(a[:, 4:8], b[:, 4:8])
    assert not np.array_equal(a[:, 1:3], b[:, 1:3])  # the non-periodic field does not repeat
    assert (a[:, 8] == 0).all()  # zero octaves: a zero vector


@wp.kernel
def curl_field(seed: int, xs: wp.array(dtype=wp.vec3), out2: wp.array(dtype=wp.vec2),
               out3: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    state = wp.rand_init(seed)
    p = xs[i]
    out2[i] = wp.curlnoise(state, wp.vec2(p[0], p[1]), wp.uint32(2))
    out3[i] = wp.curlnoise(state, p, wp.uint32(2))


def test_curl_noise_is_divergence_free(rng):
    n, h = 200, 1e-3
    base = rng.uniform(0.1, 10.0, (n, 3))
    # Central differences along each axis: 6 shifted copies of every point.
    shifts = np.concatenate([np.eye(3), -np.eye(3)]) * h
    xs = (base[None] + shifts[:, None]).reshape(-1, 3)
    out2, out3 = kc.zeros(len(xs), dtype=kc.vec2), kc.zeros(len(xs), dtype=kc.vec3)
    kc.launch(curl_field, len(xs), inputs=[8, kc.array(xs.astype(np.float32), dtype=kc.vec3),
                                           out2, out3])
    f2 = out2.numpy().astype(np.float64).reshape(6, n, 2)
    f3 = out3.numpy().astype(np.float64).reshape(6, n, 3)
    div2 = sum((f2[k, :, k] - f2[k + 3, :, k]) / (2 * h) for k in range(2))
    div3 = sum((f3[k, :, k] - f3[k + 3, :, k]) / (2 * h) for k in range(3))
    scale2 = np.abs((f2[0] - f2[3]) / (2 * h)).mean()
    scale3 = np.abs((f3[0] - f3[3]) / (2 * h)).mean()
    assert scale2 > 0.5 and scale3 > 0.5
    assert np.abs(div2).max() < 0.02 * scale2
    assert np.abs(div3).max() < 0.02 * scale3


# ---- the state argument ----------------------------------------------------------------------


@wp.func
def walk(state: wp.uint32, steps: int) -> wp.vec3:
    s = state
    p = wp.vec3(0.0, 0.0, 0.0)
    for _k in range(steps):
        p += wp.sample_unit_sphere_surface(s)
    return p


@wp.func
def walk_on_parameter(state: wp.uint32, steps: int) -> wp.vec3:
    p = wp.vec3(0.0, 0.0, 0.0)
    for _k in range(steps):
        p += wp.sample_unit_sphere_surface(state)
    return p


@wp.kernel
def state_uses(states: wp.array(dtype=wp.uint32), disks: wp.array(dtype=wp.vec2),
               walks: wp.array(dtype=wp.vec3), counts: wp.array(dtype=wp.uint32)):
    i = wp.tid()
    disks[2 * i] = wp.sample_unit_disk(states[i])  # a temporary: states[i] is not advanced
    s = states[i]
    disks[2 * i + 1] = wp.sample_unit_disk(state=s)
    counts[2 * i] = wp.poisson(s, lam=5.0)
    counts[2 * i + 1] = s
    walks[2 * i] = walk(s, 4)
    walks[2 * i + 1] = walk_on_parameter(s, 4)


def _state_uses(n: int = 64):
    states = np.arange(1, n + 1, dtype=np.uint32) * np.uint32(2654435761)
    d_states = kc.array(states, dtype=kc.uint32)
    disks, walks = kc.zeros(2 * n, dtype=kc.vec2), kc.zeros(2 * n, dtype=kc.vec3)
    counts = poisoned(2 * n, np.uint32)
    kc.launch(state_uses, n, inputs=[d_states, disks, walks, counts])
    return states, d_states.numpy(), disks.numpy(), walks.numpy(), counts.numpy()


def test_state_argument_is_advanced_only_when_it_is_a_variable():
    states, after, disks, walks, counts = _state_uses()
    np.testing.assert_array_equal(after, states)
    np.testing.assert_array_equal(disks[0::2], disks[1::2])
    assert (counts[1::2] != states).all()  # the variable moved on
    # Four steps on the unit sphere, each step a fresh direction.
    lengths = np.linalg.norm(walks[0::2], axis=1)
    assert (lengths <= 4.0 + 1e-5).all() and lengths.std() > 0.1


def test_state_parameter_advances_inside_a_loop():
    _, _, _, walks, _ = _state_uses()
    np.testing.assert_allclose(walks[1::2], walks[0::2], rtol=1e-6)


# ---- on the host ---------------------------------------------------------------------------


@wp.kernel
def first_samples(seed: int, xs: wp.array(dtype=wp.vec3), noise_out: wp.array(dtype=float),
                  ring: wp.array(dtype=wp.vec2), counts: wp.array(dtype=wp.uint32)):
    state = wp.rand_init(seed)
    p = xs[0]
    noise_out[0] = wp.noise(state, p)
    noise_out[1] = wp.pnoise(state, wp.vec2(p[0], p[1]), 3, 4)
    c = wp.curlnoise(state, wp.vec2(p[0], p[1]), octaves=wp.uint32(2))
    noise_out[2] = c[1]
    ring[0] = wp.sample_unit_ring(state)
    counts[0] = wp.poisson(state, 17.5)


def test_host_calls_compute_what_kernels_compute():
    p = kc.vec3(1.3, 2.6, 0.7)
    noise_out, ring, counts = poisoned(3, np.float32), poisoned((1, 2), np.float32), \
        poisoned(1, np.uint32)
    ring = kc.array(ring.numpy(), dtype=kc.vec2)
    kc.launch(first_samples, 1, inputs=[21, kc.array([p], dtype=kc.vec3), noise_out, ring,
                                        counts])
    state = kc.rand_init(21)
    assert kc.noise(state, p) == noise_out.numpy()[0]
    assert kc.pnoise(state, kc.vec2(p[0], p[1]), 3, 4) == noise_out.numpy()[1]
    assert kc.curlnoise(state, kc.vec2(p[0], p[1]), octaves=2)[1] == noise_out.numpy()[2]
    first = kc.sample_unit_ring(state)
    np.testing.assert_array_equal(first, ring.numpy()[0])
    np.testing.assert_array_equal(kc.sample_unit_ring(state), first)  # the host state stays
    counts_on_host = kc.poisson(kc.rand_init(21), 17.5)
    assert isinstance(counts_on_host, np.uint32)
    with pytest.raises(RuntimeError, match="inside a kernel"):
        kc.sample_cdf(state, kc.zeros(4, dtype=float))


# ---- errors ------------------------------------------------------------------------------


@wp.kernel
def float_state(out: wp.array(dtype=wp.vec2)):
    out[0] = wp.sample_unit_disk(1.5)


@wp.kernel
def int32_state(out: wp.array(dtype=wp.vec2)):
    s = int(3)
    out[0] = wp.sample_unit_disk(s)


@wp.kernel
def cdf_2d(cdf: wp.array2d(dtype=float), out: wp.array(dtype=int)):
    s = wp.rand_init(1)
    out[0] = wp.sample_cdf(s, cdf)


@wp.kernel
def extra_argument(out: wp.array(dtype=wp.vec2)):
    s = wp.rand_init(1)
    out[0] = wp.sample_unit_ring(s, 2.0)


@pytest.mark.parametrize("kernel, message", [
    (float_state, "sample_unit_disk() needs a uint32 random state"),
    (int32_state, "got a int32"),
    (cdf_2d, "sample_cdf() needs a 1-d float32 array"),
    (extra_argument, "sample_unit_ring(state) takes 1 argument (2 given)"),
])
def test_errors_name_the_call(kernel, message):
    with pytest.raises(kc.KernelError) as err:
        kernel.get_ir(kernel.param_types)
    text = str(err.value)
    assert message in text
    _, line = inspect.getsourcelines(kernel.func)
    call_line = line + len(inspect.getsourcelines(kernel.func)[0]) - 1
    assert f"test_noise_sampling.py:{call_line}:" in text


# ---- CUDA-C ----------------------------------------------------------------------------------


@wp.kernel
def every_function(seed: int, cdf: wp.array(dtype=float), xs: wp.array(dtype=wp.vec4),
                   out: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    state = wp.rand_init(seed, i)
    p = xs[i]
    a = wp.noise(state, wp.vec3(p[0], p[1], p[2])) + wp.pnoise(state, wp.vec2(p[0], p[1]), 3, 4)
    c = wp.sample_unit_sphere_surface(state) + wp.sample_unit_sphere(state)
    c += wp.sample_unit_hemisphere_surface(state) + wp.sample_unit_hemisphere(state)
    c += wp.sample_unit_cube(state)
    d = wp.curlnoise(state, wp.vec2(p[0], p[1])) + wp.sample_unit_ring(state)
    d += wp.sample_unit_disk(state) + wp.sample_unit_square(state) + wp.sample_triangle(state)
    n = wp.float32(wp.poisson(state, p[3])) + wp.float32(wp.sample_cdf(state, cdf))
    out[i] = wp.vec4(a + c[0], c[1] + d[0], c[2] + d[1], n)


def test_every_function_compiles_with_nvrtc():
    pytest.importorskip("cuda.bindings.nvrtc")
    from kernelc.codegen import nvrtc
    from kernelc.codegen.cuda import CudaOptions, emit_cuda

    source = emit_cuda(every_function.get_ir(every_function.param_types), CudaOptions())
    image, fmt = nvrtc.compile_cuda(source.text, 80, name=source.kernel)
    assert fmt == "cubin" and source.entry.encode() in image


def test_cuda_c_computes_what_the_cpu_computes(inputs):
    """The emitted CUDA-C, run on the host by the grid-emulating harness, bit for bit."""
    import cuda_harness

    from kernelc.codegen.cuda import CudaOptions, emit_cuda
    from kernelc.codegen.cuda_layout import ArrayArg

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    noise_host, sample_host = cuda_harness.build_all(
        [emit_cuda(k.get_ir(k.param_types), CudaOptions()) for k in (noise_all, sample_all)])

    def rows(a: np.ndarray, *shape: int) -> ArrayArg:  # an array of vectors, row-major
        item = a.itemsize * a.shape[-1]
        return ArrayArg(a.ctypes.data, shape, (item * int(np.prod(shape[1:])), item)[:len(shape)])

    noise = np.full((N, 16), np.nan, np.float32)
    noise_host.launch(N, [42, rows(inputs["xs"], N), rows(inputs["ps"], N), noise], workers=4)
    np.testing.assert_array_equal(noise, _run_noise(inputs))
    v2 = np.full((N, 4, 2), np.nan, np.float32)
    v3 = np.full((N, 5, 3), np.nan, np.float32)
    ints = np.zeros((N, 5), np.uint32)
    sample_host.launch(N, [11, inputs["lams"], inputs["cdf"], rows(v2, N, 4), rows(v3, N, 5),
                           ints], workers=4)
    ours = _run_samplers(inputs)
    np.testing.assert_array_equal(ints, ours["ints"])
    np.testing.assert_array_equal(v2, ours["v2"])
    np.testing.assert_array_equal(v3, ours["v3"])


@pytest.mark.cuda
def test_gpu_matches_cpu(inputs):
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    cpu = _run_samplers(inputs)
    lams = kc.array(cpu["lams"], dtype=float, device="cuda:0")
    v2 = kc.zeros((N, 4), dtype=kc.vec2, device="cuda:0")
    v3 = kc.zeros((N, 5), dtype=kc.vec3, device="cuda:0")
    ints = kc.zeros((N, 5), dtype=kc.uint32, device="cuda:0")
    kc.launch(sample_all, N, inputs=[11, lams, kc.array(inputs["cdf"], dtype=float,
                                                        device="cuda:0"), v2, v3, ints],
              device="cuda:0")
    # CUDA's libm may round a last bit differently; a rejection test could then flip.
    assert (ints.numpy() == cpu["ints"]).mean() > 0.99
    np.testing.assert_allclose(v2.numpy(), cpu["v2"], rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(v3.numpy(), cpu["v3"], rtol=1e-5, atol=2e-6)
    noise = kc.zeros((N, 16), dtype=float, device="cuda:0")
    kc.launch(noise_all, N, inputs=[42, kc.array(inputs["xs"], dtype=kc.vec4, device="cuda:0"),
                                    kc.array(inputs["ps"], dtype=kc.vec4, device="cuda:0"),
                                    noise], device="cuda:0")
    np.testing.assert_allclose(noise.numpy(), _run_noise(inputs), rtol=1e-5, atol=2e-6)
