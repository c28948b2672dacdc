"""`kernelc.geometry` swept volumes against Warp 1.19 and against NumPy.

The programs of tests/geometry_swept_programs.py (and Warp's example_swept_volume.py) run
once under Warp (a subprocess) and once under kernelc. Bounds and grids agree bit for bit
and the meshes' triangles index for index; field values (so vertices) agree to an ulp or
two: where a point is equally close to several faces (at a shared edge or corner), the
mesh query may pick another face than Warp's, and the closest point differs by rounding.
Independently of Warp: bounds and unsigned/signed distances against brute force in NumPy,
the kernel API `swept_volume_sdf` from a user kernel, and the errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
import kernelc.geometry
from kernelc.geometry import SweptVolumeSignMode as Mode
from tests import geometry_swept_programs as P
from tests.conftest import run_warp
from tests.test_geometry_iso import ROOT

_WARP_SCRIPT = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
import warp.geometry
from tests import geometry_swept_programs as P
results.update(P.run_cases(wp))
results.update(P.run_swept_example("warp", Path({folder!r})))
"""


@pytest.fixture(scope="module")
def warp_results(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("swept_warp")
    return run_warp(_WARP_SCRIPT.format(root=str(ROOT), folder=str(folder)), folder)


@pytest.fixture(scope="module")
def kc_results(tmp_path_factory) -> dict:
    out = P.run_cases(kc)
    out.update(P.run_swept_example("kernelc", tmp_path_factory.mktemp("swept_kc")))
    return out


def test_outputs_match_warp(warp_results, kc_results):
    assert sorted(warp_results) == sorted(kc_results)
    for key, want in warp_results.items():
        got = kc_results[key]
        assert got.dtype == want.dtype and got.shape == want.shape, key
        if key.endswith((".indices", "bounds")):
            np.testing.assert_array_equal(got, want, err_msg=key)
        else:  # fields and vertices: to the closest face's rounding
            assert np.abs(want).max() > 0.5, key
            np.testing.assert_allclose(got, want, rtol=0, atol=5e-7, err_msg=key)
    assert warp_results["example_WINDING_NUMBER.indices"].size > 3000


# ---- against NumPy ---------------------------------------------------------------------------


def _rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    x, y, z, w = q
    r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    return v @ r.T


def _posed(xforms: np.ndarray, m: int) -> list[np.ndarray]:
    """The world-space points of mesh m at each pose, in float64."""
    points = (P.TET_POINTS, P.box()[0])[m].astype(np.float64)
    return [_rotate(x[3:].astype(np.float64), points) + x[:3] for x in xforms[m]]


def _triangle_distance(p: np.ndarray, a, b, c) -> np.ndarray:
    """Distance from points p (n, 3) to triangle abc, by projecting onto the plane or
    else onto the three edges."""
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n)
    d_plane = (p - a) @ n
    q = p - d_plane[:, None] * n
    inside = np.ones(len(p), bool)
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= (np.cross(v - u, q - u) @ n) >= 0
    best = np.where(inside, np.abs(d_plane), np.inf)
    for u, v in ((a, b), (b, c), (c, a)):
        t = np.clip(((p - u) @ (v - u)) / ((v - u) @ (v - u)), 0, 1)
        best = np.minimum(best, np.linalg.norm(p - (u + t[:, None] * (v - u)), axis=1))
    return best


def _reference(points: np.ndarray, xforms: np.ndarray, signed: bool = True) -> np.ndarray:
    """min over meshes and poses of the (signed: negative inside; both solids are convex)
    distance."""
    out = np.full(len(points), np.inf)
    for m, faces in enumerate((P.TET_FACES, P.box()[1])):
        tris = faces.reshape(-1, 3)
        for world in _posed(xforms, m):
            dist = np.min([_triangle_distance(points, *world[t]) for t in tris], axis=0)
            inside = np.ones(len(points), bool)
            for t in tris:  # outward faces of a convex solid: inside is behind all
                a, b, c = world[t]
                inside &= (points - a) @ np.cross(b - a, c - a) < 0
            out = np.minimum(out, np.where(inside & signed, -dist, dist))
    return out


def _nodes(field, lower, upper) -> np.ndarray:
    shape = field.shape
    axes = [np.linspace(float(lower[a]), float(upper[a]), shape[a]) for a in range(3)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)


def test_bounds_match_numpy():
    xforms = P.poses(samples=5, seed=11)
    lower, upper = kc.geometry.swept_volume_bounds(P.meshes(kc), xforms, padding=0.1)
    corners = []
    for m in range(2):
        points = (P.TET_POINTS, P.box()[0])[m]
        box = np.array([[(points.min(0), points.max(0))[c >> a & 1][a] for a in range(3)]
                        for c in range(8)], np.float64)
        corners += [_rotate(x[3:].astype(np.float64), box) + x[:3] for x in xforms[m]]
    corners = np.concatenate(corners)
    np.testing.assert_allclose(np.array(lower), corners.min(0) - 0.1, atol=1e-5)
    np.testing.assert_allclose(np.array(upper), corners.max(0) + 0.1, atol=1e-5)


@pytest.mark.parametrize("mode", [Mode.WINDING_NUMBER, Mode.NORMAL, Mode.PARITY, Mode.NO_SIGN])
def test_field_matches_numpy(mode):
    xforms = P.poses(samples=4, seed=5)
    field, lower, upper = kc.geometry.swept_volume_field(P.meshes(kc), xforms,
                                                         resolution=(11, 9, 10), sign_mode=mode)
    want = _reference(_nodes(field, lower, upper), xforms, signed=mode != Mode.NO_SIGN)
    assert (want < 0).sum() > 20 or mode == Mode.NO_SIGN
    got = field.numpy().reshape(-1)
    if mode == Mode.NORMAL:
        # The closest face's normal misjudges a few outside points nearest to an edge or
        # corner (as Warp's, whose fields these match), which then take that pose's
        # negative distance: compare everywhere else.
        wrong = (got < 0) & (want > 0)
        assert wrong.sum() <= 0.01 * got.size
        got, want = got[~wrong], want[~wrong]
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5)


def test_mesh_lies_on_the_level_and_encloses_the_poses():
    xforms = P.poses()
    shapes = P.meshes(kc)
    threshold = 0.09  # over half a cell's diagonal: the envelope encloses every pose
    verts, indices = kc.geometry.swept_volume_mesh(shapes, xforms, voxel_size=0.1,
                                                   threshold=threshold)
    lower, upper = kc.geometry.swept_volume_bounds(shapes, xforms)
    v = verts.numpy()
    assert np.all(v.min(0) < np.array(lower)) and np.all(v.max(0) > np.array(upper))
    tris = indices.numpy().reshape(-1, 3)
    assert len(tris) > 500 and tris.max() == len(v) - 1
    # Every vertex lies on the threshold level of the reference distance, up to the
    # linear interpolation's error within a cell.
    np.testing.assert_allclose(_reference(v.astype(np.float64), xforms), threshold, atol=0.04)


@kc.kernel
def _user_sdf(ids: kc.array(dtype=kc.uint64), xforms: kc.array2d(dtype=kc.transform),
              points: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = kc.geometry.swept_volume_sdf(points[i], ids, xforms, 10.0, 1)


def test_sdf_from_a_user_kernel():
    xforms = P.poses(samples=3, seed=2)
    shapes = P.meshes(kc)
    ids = kc.array(np.array([m.id for m in shapes], np.uint64), dtype=kc.uint64)
    points = np.random.default_rng(4).uniform(-0.5, 1.5, (300, 3)).astype(np.float32)
    out = kc.full(300, np.nan, dtype=float)
    kc.launch(_user_sdf, 300, [ids, kc.array(xforms, dtype=kc.transform),
                               kc.array(points, dtype=kc.vec3), out])
    np.testing.assert_allclose(out.numpy(), _reference(points.astype(np.float64), xforms),
                               rtol=0, atol=2e-5)


# ---- errors ----------------------------------------------------------------------------------


def test_errors():
    g = kc.geometry
    shapes, xforms = P.meshes(kc), P.poses()
    cases = [
        (ValueError, "at least one mesh", lambda: g.swept_volume_mesh([], xforms, 0.1)),
        (ValueError, "shape", lambda: g.swept_volume_bounds(shapes, np.zeros((2, 3, 6)))),
        (ValueError, "ndim 1", lambda: g.swept_volume_bounds(
            shapes, kc.zeros(3, dtype=kc.transform))),
        (TypeError, "dtype", lambda: g.swept_volume_bounds(shapes, kc.zeros((2, 3)))),
        (ValueError, "1 rows but there are 2", lambda: g.swept_volume_bounds(shapes,
                                                                            xforms[:1])),
        (ValueError, "at least one pose", lambda: g.swept_volume_bounds(shapes,
                                                                       xforms[:, :0])),
        (ValueError, "not both", lambda: g.swept_volume_field(shapes, xforms, 0.1,
                                                              resolution=(4, 4, 4))),
        (ValueError, "Provide either", lambda: g.swept_volume_field(shapes, xforms)),
        (ValueError, "positive", lambda: g.swept_volume_field(shapes, xforms, -0.1)),
        (ValueError, "both 'lower' and 'upper'", lambda: g.swept_volume_field(
            shapes, xforms, resolution=(4, 4, 4), lower=(0, 0, 0))),
        (ValueError, "explicit domain bounds", lambda: g.swept_volume_field(
            shapes, xforms, 0.1, lower=(0, 0, 0), upper=(1, 1, 1))),
        (ValueError, "must exceed", lambda: g.swept_volume_field(
            shapes, xforms, resolution=(4, 4, 4), lower=(0, 0, 0), upper=(1, 0, 1))),
        (ValueError, "exactly 3", lambda: g.swept_volume_field(shapes, xforms,
                                                               resolution=(4, 4))),
        (ValueError, "at least 2", lambda: g.swept_volume_field(shapes, xforms,
                                                                resolution=(4, 1, 4))),
        (ValueError, "NO_SIGN", lambda: g.swept_volume_mesh(shapes, xforms, 0.1,
                                                            sign_mode=Mode.NO_SIGN)),
        (ValueError, "support_winding_number", lambda: g.swept_volume_field(
            P.meshes(kc, winding=False), xforms, 0.1)),
    ]
    for error, message, call in cases:
        with pytest.raises(error, match=message):
            call()


def test_sign_mode_is_an_int_enum():
    assert [int(m) for m in Mode] == [0, 1, 2, 3]
    assert [m.name for m in Mode] == ["NORMAL", "WINDING_NUMBER", "PARITY", "NO_SIGN"]


def test_kernels_compile_for_cuda():
    pytest.importorskip("cuda.bindings.nvrtc")
    from kernelc.geometry import swept_volume_lang as L

    for kernel in (L.swept_field, L.mesh_box, L.posed_boxes):
        compiled = kc.compile(kernel, target="cuda", arch=90)
        assert compiled.format == "cubin" and compiled.binary[:4] == b"\x7fELF"
