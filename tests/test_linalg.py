"""svd3, svd2, qr3, eig3, closest_point_edge_edge and intersect_tri_tri: against NumPy
(float64 references), against Warp (same algorithms: equal results) and CUDA-C; errors are in test_linalg_errors."""

from __future__ import annotations

import inspect
import itertools
import shutil
from typing import Any

import numpy as np
import pytest

import kernelc as kc
from kernelc.codegen.cuda import CudaOptions, emit_cuda
from kernelc.codegen.cuda_layout import ArrayArg
from tests.conftest import poisoned, run_warp

# ---- kernels -------------------------------------------------------------------------------


@kc.kernel
def decompose_returns(a: kc.array(dtype=Any), b: kc.array(dtype=Any), u: kc.array(dtype=Any),
                      s: kc.array(dtype=Any), v: kc.array(dtype=Any), q: kc.array(dtype=Any),
                      r: kc.array(dtype=Any), e: kc.array(dtype=Any), d: kc.array(dtype=Any),
                      u2: kc.array(dtype=Any), s2: kc.array(dtype=Any),
                      v2: kc.array(dtype=Any)):
    i = kc.tid()
    m = a[i]
    mu, ms, mv = kc.svd3(m)
    u[i] = mu
    s[i] = ms
    v[i] = mv
    mq, mr = kc.qr3(m)
    q[i] = mq
    r[i] = mr
    me, md = kc.eig3(m + kc.transpose(m))
    e[i] = me
    d[i] = md
    nu, ns, nv = kc.svd2(b[i])
    u2[i] = nu
    s2[i] = ns
    v2[i] = nv


@kc.kernel
def decompose_in_place(a: kc.array(dtype=Any), b: kc.array(dtype=Any),
                       u: kc.array(dtype=Any), s: kc.array(dtype=Any), v: kc.array(dtype=Any),
                       q: kc.array(dtype=Any), r: kc.array(dtype=Any), e: kc.array(dtype=Any),
                       d: kc.array(dtype=Any), u2: kc.array(dtype=Any),
                       s2: kc.array(dtype=Any), v2: kc.array(dtype=Any)):
    i = kc.tid()
    m = a[i]
    mu = m  # any value of the factor's type declares the output variable
    sigma = kc.get_diag(m)
    mv = m
    kc.svd3(m, mu, sigma, mv)
    u[i] = mu
    s[i] = sigma
    v[i] = mv
    mq = m
    mr = m
    kc.qr3(A=m, Q=mq, R=mr)
    q[i] = mq
    r[i] = mr
    me = m
    md = sigma
    kc.eig3(m + kc.transpose(m), me, md)
    e[i] = me
    d[i] = md
    n = b[i]
    nu = n
    ns = kc.get_diag(n)
    nv = n
    kc.svd2(n, nu, ns, nv)
    u2[i] = nu
    s2[i] = ns
    v2[i] = nv


@kc.kernel
def warp_doc_style(a: kc.array(dtype=kc.mat33), s: kc.array(dtype=kc.vec3),
                   rot: kc.array(dtype=kc.mat33)):
    i = kc.tid()
    U = kc.mat33()
    sigma = kc.vec3()
    V = kc.mat33()
    kc.svd3(a[i], U, sigma, V)
    s[i] = sigma
    rot[i] = U * kc.transpose(V)


@kc.kernel
def edges(p: kc.array(dtype=kc.vec3), eps: float, out: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    out[i] = kc.closest_point_edge_edge(p[4 * i], p[4 * i + 1], p[4 * i + 2], p[4 * i + 3], eps)


@kc.kernel
def triangles(p: kc.array(dtype=Any), out: kc.array(dtype=int)):
    i = kc.tid()
    out[i] = kc.intersect_tri_tri(p[6 * i], p[6 * i + 1], p[6 * i + 2], p[6 * i + 3],
                                  p[6 * i + 4], p[6 * i + 5])


# ---- inputs --------------------------------------------------------------------------------

_KC = {np.float16: (kc.mat33h, kc.vec3h, kc.mat22h, kc.vec2h),
       np.float32: (kc.mat33, kc.vec3, kc.mat22, kc.vec2),
       np.float64: (kc.mat33d, kc.vec3d, kc.mat22d, kc.vec2d)}
_NAMES = ("U", "sigma", "V", "Q", "R", "E", "d", "U2", "sigma2", "V2")
# the factors of each host call in test_host_calls_return_what_kernels_compute
_HOST_FACTORS = {"U": ("U", "sigma", "V"), "Q": ("Q", "R"), "E": ("E", "d"),
                 "U2": ("U2", "sigma2", "V2")}


def _rotations(rng, n, size):
    q, _ = np.linalg.qr(rng.normal(size=(n, size, size)))
    return q * np.sign(np.linalg.det(q))[:, None, None]


def _well_conditioned(rng, n, size):
    """U diag(s) Vᵀ with random rotations, distinct s in [0.4, 2.5] and a random sign of det."""
    s = np.sort(rng.uniform(0.4, 2.5, (n, size)), axis=1)[:, ::-1]
    s[:, -1] *= rng.choice([-1.0, 1.0], n)
    return np.einsum("nij,nj,nkj->nik", _rotations(rng, n, size), s, _rotations(rng, n, size))


def _degenerate3(rng):
    """Identity, zero-free diagonal, rank-deficient, repeated and reflected cases."""
    fixed = [np.eye(3), -np.eye(3), np.diag([1.0, 2.0, 3.0]), np.diag([-1.0, 2.0, 3.0]),
             np.diag([2.0, 2.0, 1.0]), np.ones((3, 3)), np.diag([1.0, 0.0, 0.0]),
             np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])]
    spectra = ([2.0, 2.0, 2.0], [3.0, 1.0, 1.0], [3.0, 3.0, 0.5], [2.0, 1.0, 0.0], [1.0, 0, 0])
    r1, r2 = _rotations(rng, 40, 3), _rotations(rng, 40, 3)
    made = [r1[i] @ np.diag(spectra[i % 5]) @ r2[i].T * rng.uniform(0.5, 2) for i in range(40)]
    return np.array(fixed + made)


def _degenerate2(rng, n):
    """Rank-1 and repeated-value 2x2 matrices (Warp gives NaN or a wrong U for some)."""
    fixed = [np.eye(2), 2 * np.eye(2), np.diag([2.0, 3.0]), [[1.0, 2.0], [2.0, 4.0]]]
    rank1 = [np.outer(rng.normal(size=2), rng.normal(size=2)) for _ in range(n - len(fixed))]
    return np.array(fixed + rank1)


def _types(dtype):
    """The element types of the decomposition kernels' arguments: a, b, then the outputs."""
    m3, v3, m2, v2 = _KC[dtype]
    return [m3, m2, m3, v3, m3, m3, m3, m3, v3, m2, v2, m2]


def _nan_numpy(n, kc_type, dtype):
    t = kc.types.as_type(kc_type)
    return np.full((n, *(t.shape if isinstance(t, kc.types.MatrixType) else (t.length,))),
                   np.nan, dtype)


def _nan_array(n, kc_type, dtype):
    return kc.array(_nan_numpy(n, kc_type, dtype), dtype=kc_type)


def _decompose(kernel, a, b, dtype):
    """Runs `kernel` on a (3x3) and b (2x2) in `dtype`; the outputs start as NaN."""
    m3, m2, *types = _types(dtype)
    outs = [_nan_array(len(a), t, dtype) for t in types]
    kc.launch(kernel, len(a), [kc.array(a.astype(dtype), dtype=m3),
                               kc.array(b.astype(dtype), dtype=m2), *outs])
    return {name: o.numpy().astype(np.float64) for name, o in zip(_NAMES, outs)}


# (bound on 90% of the matrices, bound on all): a fixed number of Jacobi sweeps (Warp's) leaves
# a few float32 matrices in a thousand less converged (up to ~5e-3 relative).
_TOL = {np.float16: (2e-2, 8e-2), np.float32: (1e-5, 1e-2), np.float64: (1e-13, 1e-13)}


def _bounded(x, y, tol, scale=None):
    """Per-matrix max |x - y| (relative to `scale` per matrix) within the (p90, max) bounds."""
    err = np.abs(x - y).reshape(len(x), -1).max(axis=1)
    if scale is not None:
        err = err / scale
    assert np.percentile(err, 90) <= tol[0], (np.percentile(err, 90), tol)
    assert err.max() <= tol[1], (err.max(), np.argmax(err), tol)


def _scale(m):
    return np.maximum(np.abs(m).reshape(len(m), -1).max(axis=1), 1e-30)


def _check_orthonormal(m, tol, det=True):
    eye = np.broadcast_to(np.eye(m.shape[-1]), m.shape)
    _bounded(np.einsum("nji,njk->nik", m, m), eye, tol)
    if det:
        _bounded(np.linalg.det(m), np.ones(len(m)), tol)


def _check_svd3(a, out, tol):
    u, s, v = out["U"], out["sigma"], out["V"]
    scale = _scale(a)
    _bounded(np.einsum("nij,nj,nkj->nik", u, s, v), a, tol, scale)
    _check_orthonormal(u, tol)
    _check_orthonormal(v, tol)
    _bounded(np.abs(s), np.linalg.svd(a, compute_uv=False), tol, scale)
    assert (s[:, :2] >= 0).all()
    assert (np.diff(np.abs(s), axis=1) <= tol[1] * scale[:, None]).all()
    det = np.linalg.det(a)
    clear = np.abs(det) > 0.05 * scale**3
    assert (np.sign(s[clear, 2]) == np.sign(det[clear])).all()


def _check_others(a, b, out, tol):
    scale = _scale(a)
    q, r = out["Q"], out["R"]
    _bounded(q @ r, a, tol, scale)
    _check_orthonormal(q, tol)
    _bounded(np.tril(r, -1), np.zeros_like(r), tol, scale)
    _bounded(np.abs(np.triu(r)), np.abs(np.linalg.qr(a)[1]), tol, scale / 10)  # rows up to sign
    sym = a + a.transpose(0, 2, 1)
    e, d = out["E"], out["d"]
    _bounded(np.einsum("nij,nj,nkj->nik", e, d, e), sym, tol, _scale(sym))
    _check_orthonormal(e, tol)
    _bounded(np.sort(d, axis=1), np.linalg.eigvalsh(sym), tol, _scale(sym))
    u2, s2, v2 = out["U2"], out["sigma2"], out["V2"]
    _bounded(np.einsum("nij,nj,nkj->nik", u2, s2, v2), b, tol, _scale(b))
    _check_orthonormal(u2, tol, det=False)
    _check_orthonormal(v2, tol, det=False)
    assert (s2 >= 0).all() and (s2[:, 0] >= s2[:, 1]).all()


# ---- NumPy references ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_well_conditioned_matrices_match_numpy(dtype, rng):
    a = _well_conditioned(rng, 300, 3).astype(dtype).astype(np.float64)
    b = _well_conditioned(rng, 300, 2).astype(dtype).astype(np.float64)
    out = _decompose(decompose_returns, a, b, dtype)
    for value in out.values():
        assert np.isfinite(value).all()
    _check_svd3(a, out, _TOL[dtype])
    _check_others(a, b, out, _TOL[dtype])
    if dtype != np.float16:  # distinct singular values: vectors agree with NumPy up to sign
        un, _, vtn = np.linalg.svd(a)
        cos_u = np.abs(np.einsum("nik,nik->nk", out["U"], un))
        cos_v = np.abs(np.einsum("nik,nki->nk", out["V"], vtn))
        _bounded(cos_u, np.ones_like(cos_u), _TOL[dtype], 0.05)
        _bounded(cos_v, np.ones_like(cos_v), _TOL[dtype], 0.05)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_degenerate_matrices_keep_the_invariants(dtype, rng):
    a = _degenerate3(rng)
    b = _degenerate2(rng, len(a))
    out = _decompose(decompose_returns, a, b, dtype)
    for value in out.values():
        assert np.isfinite(value).all()
    # sqrt(eps) for svd2 of rank-1 matrices (aᵀa squares the condition number)
    tol = (1e-3, 1e-3) if dtype == np.float32 else (1e-7, 1e-7)
    _check_svd3(a, out, tol)
    _check_others(a, b, out, tol)
    np.testing.assert_array_equal(out["sigma2"][1], [2, 2])  # 2 I: exact
    np.testing.assert_array_equal(out["U2"][1], np.eye(2))


def test_in_place_forms_store_what_the_value_forms_return(rng):
    a = np.concatenate([_well_conditioned(rng, 50, 3), _degenerate3(rng)])
    b = _degenerate2(rng, len(a))
    for dtype in (np.float32, np.float64):
        returned = _decompose(decompose_returns, a, b, dtype)
        stored = _decompose(decompose_in_place, a, b, dtype)
        for name in _NAMES:
            np.testing.assert_array_equal(stored[name], returned[name], err_msg=name)


def test_host_calls_return_what_kernels_compute(rng):
    a = _well_conditioned(rng, 3, 3)
    b = _degenerate2(rng, 3)
    for dtype in (np.float32, np.float64):
        in_kernel = _decompose(decompose_returns, a, b, dtype)
        mat3, mat2 = _types(dtype)[:2]
        for k in range(len(a)):
            ak = a[k].astype(dtype)  # (the kernel sums m + mᵀ in dtype)
            found = {"U": kc.svd3(mat3(ak)), "Q": kc.qr3(mat3(ak)), "E": kc.eig3(mat3(ak + ak.T)), "U2": kc.svd2(mat2(b[k]))}
            for key, names in _HOST_FACTORS.items():
                for name, value in zip(names, found[key]):
                    assert value._kc_type.dtype.np_dtype == dtype
                    np.testing.assert_array_equal(value, in_kernel[name][k], err_msg=name)
    m = kc.mat33(a[0])
    with pytest.raises(RuntimeError, match="compatible with the arguments 'mat33, mat33"):
        kc.svd3(m, kc.mat33(), kc.vec3(), kc.mat33())  # in place: kernels only
    with pytest.raises(RuntimeError, match="'svd3' compatible with the arguments 'mat22'"):
        kc.svd3(kc.mat22(1.0, 2.0, 3.0, 4.0))


def test_warp_doc_example_reproduces_its_output():
    f = np.array([[[2.598076, -1.0, 0.0], [1.5, 1.732051, 0.0], [0.0, 0.0, -1.0]]], np.float32)
    s, rot = _nan_array(1, kc.vec3, np.float32), _nan_array(1, kc.mat33, np.float32)
    kc.launch(warp_doc_style, 1, [kc.array(f, dtype=kc.mat33), s, rot])
    np.testing.assert_allclose(s.numpy()[0], [3.0, 2.0, -1.0], atol=1e-5)
    np.testing.assert_allclose(rot.numpy()[0], [[0.866025, -0.5, 0], [0.5, 0.866025, 0],
                                                [0, 0, 1]], atol=1e-5)


# ---- geometry ------------------------------------------------------------------------------


def _segment_pairs(rng, n):
    p = rng.normal(size=(n, 4, 3))
    p[::5, 3] = p[::5, 2] + (p[::5, 1] - p[::5, 0]) * rng.uniform(-2, 2, (len(p[::5]), 1))
    p[1::7, 1] = p[1::7, 0]  # degenerate first edge
    p[2::11, 3] = p[2::11, 2]
    p[3::13, 1], p[3::13, 3] = p[3::13, 0], p[3::13, 2]
    return p.astype(np.float32)


def _segment_distance(p):
    """The distance of each pair of segments (float64): the minimum over the interior
    critical point and the clamped projections from the four endpoints."""
    p = p.astype(np.float64)

    def point_segment(x, a, b):
        d = b - a
        den = np.maximum((d * d).sum(-1), 1e-300)
        t = np.clip(((x - a) * d).sum(-1) / den, 0, 1)
        return np.linalg.norm(a + t[:, None] * d - x, axis=-1)

    p1, q1, p2, q2 = p[:, 0], p[:, 1], p[:, 2], p[:, 3]
    best = np.minimum.reduce([point_segment(p1, p2, q2), point_segment(q1, p2, q2),
                              point_segment(p2, p1, q1), point_segment(q2, p1, q1)])
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, b = (d1 * d1).sum(-1), (d2 * d2).sum(-1), (d1 * d2).sum(-1)
    c, f = (d1 * r).sum(-1), (d2 * r).sum(-1)
    den = a * e - b * b
    ok = den > 1e-9 * np.maximum(a * e, 1e-300)
    s = np.where(ok, (b * f - c * e) / np.where(ok, den, 1), -1)
    t = np.where(ok, (a * f - b * c) / np.where(ok, den, 1), -1)
    inside = ok & (s >= 0) & (s <= 1) & (t >= 0) & (t <= 1)
    gap = np.linalg.norm(p1 + s[:, None] * d1 - p2 - t[:, None] * d2, axis=-1)
    return np.where(inside, np.minimum(best, gap), best)


def test_closest_point_edge_edge_matches_numpy(rng):
    p = _segment_pairs(rng, 2000)
    out = _nan_array(2000, kc.vec3, np.float32)
    kc.launch(edges, 2000, [kc.array(p.reshape(-1, 3), dtype=kc.vec3), 1e-6, out])
    s, t, dist = out.numpy().T
    assert ((s >= 0) & (s <= 1) & (t >= 0) & (t <= 1)).all()
    np.testing.assert_allclose(dist, _segment_distance(p), atol=2e-5)
    p64 = p.astype(np.float64)
    c1 = p64[:, 0] + s[:, None] * (p64[:, 1] - p64[:, 0])
    c2 = p64[:, 2] + t[:, None] * (p64[:, 3] - p64[:, 2])
    np.testing.assert_allclose(np.linalg.norm(c1 - c2, axis=-1), dist, atol=2e-5)
    point = np.all(p[:, 0] == p[:, 1], axis=-1)
    assert (s[point] == 0).all()


def _triangle_pairs(rng, n):
    t = rng.normal(size=(n, 6, 3)) * 0.6
    t[::3, :, 2] = 0.0  # coplanar in z = 0
    t[2::5, 3] = t[2::5, 0]  # a shared vertex
    return t


def _separation(t):
    """Signed gap along the best separating axis (float64): > 0 apart, < 0 overlapping."""
    v, u = t[:3], t[3:]
    nv, nu = np.cross(v[1] - v[0], v[2] - v[0]), np.cross(u[1] - u[0], u[2] - u[0])
    ev, eu = [v[(k + 1) % 3] - v[k] for k in range(3)], [u[(k + 1) % 3] - u[k] for k in range(3)]
    if np.all(t[:, 2] == 0):  # coplanar: the in-plane edge normals
        axes = [np.cross(nv, x) for x in ev + eu]
    else:
        axes = [nv, nu] + [np.cross(x, y) for x in ev for y in eu]
    gap = -np.inf
    for axis in axes:
        norm = np.linalg.norm(axis)
        if norm < 1e-9:
            continue
        pv, pu = v @ axis / norm, u @ axis / norm
        gap = max(gap, max(pu.min() - pv.max(), pv.min() - pu.max()))
    return gap


def test_intersect_tri_tri_matches_a_separating_axis_test(rng):
    t = _triangle_pairs(rng, 1500)
    got = {}
    for dtype, vec in ((np.float32, kc.vec3), (np.float64, kc.vec3d)):
        out = poisoned(len(t), np.int32)
        kc.launch(triangles, len(t), [kc.array(t.reshape(-1, 3).astype(dtype), dtype=vec), out])
        got[dtype] = out.numpy()
    gaps = np.array([_separation(x) for x in t])
    clear = np.abs(gaps) > 1e-4
    assert clear.sum() > 1300 and 0.2 < (gaps < 0).mean() < 0.8
    for hit in got.values():
        np.testing.assert_array_equal(hit[clear], (gaps[clear] < 0).astype(np.int32))


def test_geometry_doc_examples():
    # Warp's documented examples: s=0.5 t=0.5 d=1.0, and crossing triangles intersect
    p = np.array([[0, 0, 0], [1, 0, 0], [0.5, 1, 1], [0.5, 1, -1]], np.float32)
    out = _nan_array(1, kc.vec3, np.float32)
    kc.launch(edges, 1, [kc.array(p, dtype=kc.vec3), 1e-6, out])
    np.testing.assert_allclose(out.numpy()[0], [0.5, 0.5, 1.0], atol=1e-6)
    t = np.array([[0, 0, 0], [2, 0, 0], [0, 2, 0], [1, 1, -1], [1, 1, 1], [1, -1, 0]])
    far = t + [0, 0, 5] * (np.arange(6) >= 3)[:, None]
    for vec, dtype in ((kc.vec3, np.float32), (kc.vec3d, np.float64)):
        hit = poisoned(2, np.int32)
        pts = np.concatenate([t, far]).astype(dtype)
        kc.launch(triangles, 2, [kc.array(pts, dtype=vec), hit])
        np.testing.assert_array_equal(hit.numpy(), [1, 0])


# ---- Warp: the same algorithms give the same numbers ---------------------------------------

def _as_warp(kernel) -> str:
    """The source of one of the kernels above, as a Warp program."""
    return inspect.getsource(kernel.func).replace("kc.", "wp.") + "\n\n"


_WARP_SCRIPT = """
from typing import Any

wp.set_module_options({"enable_backward": False})  # forward code only: compiles faster

""" + "".join(_as_warp(k) for k in (decompose_returns, decompose_in_place, edges, triangles)) + """
TYPES = {"float16": (wp.mat33h, wp.vec3h, wp.mat22h, wp.vec2h),
         "float32": (wp.mat33, wp.vec3, wp.mat22, wp.vec2),
         "float64": (wp.mat33d, wp.vec3d, wp.mat22d, wp.vec2d)}
NAMES = ("U", "sigma", "V", "Q", "R", "E", "d", "U2", "sigma2", "V2")
for name in inputs["types"]:
    m3, v3, m2, v2 = TYPES[str(name)]
    a, b = inputs["a"].astype(name), inputs["b"].astype(name)
    outs = [wp.zeros(len(a), dtype=t) for t in (m3, v3, m3, m3, m3, m3, v3, m2, v2, m2)]
    for kernel in (decompose_returns, decompose_in_place):
        args = [wp.array(a, dtype=m3), wp.array(b, dtype=m2), *outs]
        wp.launch(kernel, len(a), inputs=args)
        for key, o in zip(NAMES, outs):
            results[key + "_" + name + "_" + kernel.key] = o.numpy()
out = wp.zeros(len(inputs["edges"]) // 4, dtype=wp.vec3)
wp.launch(edges, len(out), inputs=[wp.array(inputs["edges"], dtype=wp.vec3), 1e-6, out])
results["edges"] = out.numpy()
for name, vec in (("float32", wp.vec3), ("float64", wp.vec3d)):
    hits = wp.zeros(len(inputs["tris"]) // 6, dtype=int)
    pts = wp.array(inputs["tris"].astype(name), dtype=vec)
    wp.launch(triangles, len(hits), inputs=[pts, hits])
    results["tris_" + name] = hits.numpy()
"""

# U and Q are formed as the product of the three Givens rotations; Warp expands that product
# in the half-angles, so they differ by a few units in the last place.
_ULPS = {np.float16: 4e-3, np.float32: 5e-7, np.float64: 1e-15}


def _compare_with_warp(rng, tmp_path, dtypes):
    a = np.concatenate([_well_conditioned(rng, 200, 3), rng.normal(size=(200, 3, 3)),
                        _degenerate3(rng)])
    b = np.concatenate([_well_conditioned(rng, 200, 2), _degenerate2(rng, len(a) - 200)])
    p = _segment_pairs(rng, 1000).reshape(-1, 3)
    t = _triangle_pairs(rng, 1000).reshape(-1, 3)
    names = np.array([np.dtype(d).name for d in dtypes])
    warp = run_warp(_WARP_SCRIPT, tmp_path, a=a, b=b, edges=p, tris=t, types=names)
    for dtype, kernel in itertools.product(dtypes, (decompose_returns, decompose_in_place)):
        ours = _decompose(kernel, a, b, dtype)
        theirs = {k: warp[f"{k}_{np.dtype(dtype).name}_{kernel.func.__name__}"] for k in _NAMES}
        for key in ("sigma", "V", "R", "E", "d"):
            np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
        for key in ("U", "Q"):
            np.testing.assert_allclose(ours[key], theirs[key], rtol=0, atol=_ULPS[dtype],
                                       err_msg=key)
        # svd2: equal, except where Warp's result is NaN (rank 1: sqrt of a negative
        # rounding of the small eigenvalue) or wrong (a scaled rotation or reflection)
        ws, wu, wv = (theirs[k].astype(np.float64) for k in ("sigma2", "U2", "V2"))
        rec = np.einsum("nij,nj,nkj->nik", wu, ws, wv)
        fine = np.isfinite(ws).all(axis=1) & (np.abs(rec - b.astype(dtype)).max(axis=(1, 2))
                                              <= 0.1 * _scale(b))
        assert fine.mean() > 0.6 and np.isfinite(ours["sigma2"]).all()
        for key in ("U2", "sigma2", "V2"):
            np.testing.assert_array_equal(ours[key][fine], theirs[key][fine], err_msg=key)
    return p, t, warp


def test_results_equal_warps(rng, tmp_path):
    p, t, warp = _compare_with_warp(rng, tmp_path, (np.float32, np.float64))
    out = _nan_array(len(p) // 4, kc.vec3, np.float32)
    kc.launch(edges, len(out), [kc.array(p.astype(np.float32), dtype=kc.vec3), 1e-6, out])
    np.testing.assert_array_equal(out.numpy(), warp["edges"])
    for dtype, vec in ((np.float32, kc.vec3), (np.float64, kc.vec3d)):
        hits = poisoned(len(t) // 6, np.int32)
        kc.launch(triangles, len(hits), [kc.array(t.astype(dtype), dtype=vec), hits])
        np.testing.assert_array_equal(hits.numpy(), warp[f"tris_{np.dtype(dtype).name}"])


@pytest.mark.slow  # Warp compiles its float16 decompositions for about a minute
def test_float16_results_equal_warps(rng, tmp_path):
    _compare_with_warp(rng, tmp_path, (np.float16,))


# ---- CUDA-C ----------------------------------------------------------------------------------


def _array_types(dtype):
    return [kc.array(dtype=t) for t in _types(dtype)]


_CUDA_CASES = [(decompose_returns, _array_types(np.float32)),
               (decompose_in_place, _array_types(np.float64)),
               (edges, None),
               (triangles, [kc.array(dtype=kc.vec3), kc.array(dtype=int)]),
               (triangles, [kc.array(dtype=kc.vec3d), kc.array(dtype=int)])]


@pytest.mark.parametrize("kernel, types", _CUDA_CASES)
def test_kernels_compile_with_nvrtc(kernel, types):
    pytest.importorskip("cuda.bindings.nvrtc")
    compiled = kc.compile(kernel, target="cuda", arch=80, arg_types=types)
    assert compiled.format == "cubin" and compiled.binary


def test_cuda_c_runs_in_host_harness(rng):
    import cuda_harness

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    a = np.concatenate([_well_conditioned(rng, 40, 3), _degenerate3(rng)])
    b = _degenerate2(rng, len(a))
    for dtype in (np.float32, np.float64):
        types = _array_types(dtype)
        source = emit_cuda(decompose_returns.get_ir(tuple(kc.types.as_type(t) for t in types)),
                           CudaOptions())
        host = cuda_harness.build(source)
        arrays = [a.astype(dtype), b.astype(dtype)]
        arrays += [_nan_numpy(len(a), t, dtype) for t in _types(dtype)[2:]]
        args = [ArrayArg(x.ctypes.data, (len(a),), (x[0].nbytes,)) for x in arrays]
        assert host.launch(len(a), args, workers=2) is None
        expected = _decompose(decompose_returns, a, b, dtype)
        for name, got in zip(_NAMES, arrays[2:]):
            np.testing.assert_allclose(got, expected[name], rtol=0, atol=_ULPS[dtype] * 4,
                                       err_msg=name)
