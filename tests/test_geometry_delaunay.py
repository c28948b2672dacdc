"""`kernelc.geometry` adjacency and Delaunay flips against Warp 1.19 and against NumPy.

The programs of tests/geometry_delaunay_programs.py run once under Warp (a subprocess)
and once under kernelc: adjacency, the kernel API from a user kernel and flipped meshes
agree index for index, flip counts exactly. Independently of Warp: the adjacency against
a pairing done in Python, the flipped meshes against the empty-circumcircle property (and
scipy's triangulation), CPU graph capture, the kernels' CUDA-C, and the errors.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import kernelc as kc
import kernelc.geometry
from kernelc.geometry import delaunay_lang as L
from tests import geometry_delaunay_programs as P
from tests.conftest import run_warp
from tests.test_geometry_iso import ROOT

_WARP_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
import warp.geometry
from tests import geometry_delaunay_programs as P
results.update(P.run_adjacency_cases(wp))
results.update(P.run_user_kernel(wp))
results.update(P.run_flip_cases(wp))
"""


@pytest.fixture(scope="module")
def warp_results(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("delaunay_warp")
    return run_warp(_WARP_SCRIPT.format(root=str(ROOT)), folder)


@pytest.fixture(scope="module")
def kc_results() -> dict:
    out = P.run_adjacency_cases(kc)
    out.update(P.run_user_kernel(kc))
    out.update(P.run_flip_cases(kc))
    return out


def test_outputs_match_warp(warp_results, kc_results):
    assert sorted(warp_results) == sorted(kc_results)
    for key, want in warp_results.items():
        got = kc_results[key]
        assert got.dtype == want.dtype and got.shape == want.shape, key
        np.testing.assert_array_equal(got, want, err_msg=key)
    assert warp_results["sweep.flips"][0] > 1000 and warp_results["sheared.flips"][0] > 1000


# ---- adjacency against NumPy ---------------------------------------------------------------


def _pairing(tris: np.ndarray, vertex_count: int) -> tuple[np.ndarray, np.ndarray]:
    """The documented rule, in Python: half-edges of an edge pair up in order of 3t + j."""
    neighbors = np.full(tris.shape, -1, np.int32)
    edges = np.full(tris.shape, -1, np.int32)
    waiting: dict[tuple[int, int], tuple[int, int]] = {}
    for t, tri in enumerate(tris):
        for j in range(3):
            a, b = int(tri[(j + 1) % 3]), int(tri[(j + 2) % 3])
            key = (min(a, b), max(a, b))
            if key[0] < 0 or key[1] >= vertex_count:
                continue
            if key in waiting:
                s, i = waiting.pop(key)
                neighbors[t, j], edges[t, j], neighbors[s, i], edges[s, i] = s, i, t, j
            else:
                waiting[key] = (t, j)
    return neighbors, edges


def test_adjacency_matches_the_pairing_rule(kc_results):
    for name, (tris, count) in P.adjacency_meshes().items():
        count = int(tris.max(initial=-1)) + 1 if count is None else count
        neighbors, edges = _pairing(tris, count)
        np.testing.assert_array_equal(kc_results[f"{name}.neighbors"], neighbors, err_msg=name)
        np.testing.assert_array_equal(kc_results[f"{name}.edges"], edges, err_msg=name)
        np.testing.assert_array_equal(kc_results[f"{name}.alone"], neighbors, err_msg=name)
    np.testing.assert_array_equal(kc_results["strided.neighbors"], kc_results["grid.neighbors"])


def test_out_of_range_vertices_are_boundary_edges():
    tris = np.array([[0, 1, 2], [2, 1, 3], [3, 1, 9], [-1, 3, 1]], np.int32)
    neighbors, edges = kc.geometry.tri_tri_adjacency(kc.array(tris, dtype=kc.int32), 4)
    want_neighbors, want_edges = _pairing(tris, 4)
    np.testing.assert_array_equal(neighbors.numpy(), want_neighbors)
    np.testing.assert_array_equal(edges.numpy(), want_edges)
    assert want_neighbors[2].tolist() == [-1, -1, 1]


def test_user_kernel_recovers_neighbor_edges(kc_results):
    tris = P.sweep_triangulation(80, seed=9)[1]
    _, edges = _pairing(tris, 80)
    np.testing.assert_array_equal(kc_results["user_kernel.edges"], edges)


@kc.kernel
def _predicates(points: kc.array(dtype=kc.vec2), area: kc.array(dtype=float),
                det: kc.array(dtype=float), inside: kc.array(dtype=kc.int32)):
    i = kc.tid()
    a, b, c, d = points[4 * i], points[4 * i + 1], points[4 * i + 2], points[4 * i + 3]
    area[i] = L.signed_area(a, b, c)
    det[i] = L.in_circle_det(a, b, c, d)
    inside[i] = kc.where(L.in_circle(a, b, c, d), 1, 0)


def test_predicates_match_numpy():
    rng = np.random.default_rng(8)
    quads = rng.uniform(-1.0, 1.0, (500, 4, 2)).astype(np.float32)
    out = [kc.full(500, np.nan, dtype=float), kc.full(500, np.nan, dtype=float),
           kc.full(500, -1, dtype=kc.int32)]
    kc.launch(_predicates, 500, [kc.array(quads.reshape(-1, 2), dtype=kc.vec2), *out])
    p = quads.astype(np.float64)
    area = _areas(p.reshape(-1, 2), np.arange(2000).reshape(500, 4)[:, :3])
    rel = p[:, :3] - p[:, 3:]
    det = np.linalg.det(np.concatenate([rel, (rel ** 2).sum(2, keepdims=True)], 2))
    np.testing.assert_allclose(out[0].numpy(), area, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1].numpy(), det, rtol=1e-4, atol=1e-5)
    # For a counter-clockwise triangle, a positive determinant means inside.
    clear = np.abs(det) > 1e-4
    assert clear.sum() > 450
    np.testing.assert_array_equal(out[2].numpy()[clear], (det > 0)[clear])


# ---- flipped meshes against NumPy ----------------------------------------------------------


def _areas(points: np.ndarray, tris: np.ndarray) -> np.ndarray:
    a, b, c = (points[tris[:, k]].astype(np.float64) for k in range(3))
    ab, ac = b - a, c - a
    return 0.5 * (ab[:, 0] * ac[:, 1] - ab[:, 1] * ac[:, 0])


def _edge_counts(tris: np.ndarray) -> dict[tuple[int, int], int]:
    counts: dict[tuple[int, int], int] = {}
    for tri in tris.tolist():
        for j in range(3):
            a, b = tri[(j + 1) % 3], tri[(j + 2) % 3]
            counts[min(a, b), max(a, b)] = counts.get((min(a, b), max(a, b)), 0) + 1
    return counts


def _empty_circumcircles(points: np.ndarray, tris: np.ndarray) -> bool:
    """No point lies inside any triangle's circumcircle (beyond a relative tolerance)."""
    p = points.astype(np.float64)
    a, b, c = (p[tris[:, k]] for k in range(3))
    d = 4.0 * _areas(points, tris)
    la, lb, lc = ((v * v).sum(1) for v in (a, b, c))
    ux = (la * (b[:, 1] - c[:, 1]) + lb * (c[:, 1] - a[:, 1]) + lc * (a[:, 1] - b[:, 1])) / d
    uy = (la * (c[:, 0] - b[:, 0]) + lb * (a[:, 0] - c[:, 0]) + lc * (b[:, 0] - a[:, 0])) / d
    r2 = (a[:, 0] - ux) ** 2 + (a[:, 1] - uy) ** 2
    dist2 = (p[None, :, 0] - ux[:, None]) ** 2 + (p[None, :, 1] - uy[:, None]) ** 2
    return bool(np.all(dist2 >= r2[:, None] * (1.0 - 1e-5)))


@pytest.mark.parametrize("name", ["quad", "grid", "grid30", "sheared", "regular", "ellipse",
                                  "sweep", "junction", "star"])
def test_flips_keep_a_triangulation_and_reach_delaunay(kc_results, name):
    points, before, _ = P.flip_meshes()[name]
    after = kc_results[f"{name}.indices"]
    assert after.shape == before.shape and kc_results[f"{name}.again"][0] == 0
    assert np.all(_areas(points, after) > 0)  # the junction's flat triangle is gone
    assert set(np.unique(after)) == set(np.unique(before))
    np.testing.assert_allclose(_areas(points, after).sum(), _areas(points, before).sum(),
                               rtol=1e-6)
    counts_before, counts_after = _edge_counts(before), _edge_counts(after)
    assert max(counts_after.values()) == 2
    assert ({e for e, n in counts_before.items() if n == 1}
            == {e for e, n in counts_after.items() if n == 1})  # the outline stays
    # Each flip makes one edge (which a later flip may take away again).
    assert kc_results[f"{name}.flips"][0] >= len(set(counts_after) - set(counts_before)) > 0 \
        or name == "regular"
    if name != "star":  # the star's concave rim blocks some flips
        assert _empty_circumcircles(points, after), name


def test_random_triangulation_is_scipys(kc_results):
    spatial = pytest.importorskip("scipy.spatial")
    points, before, _ = P.flip_meshes()["sweep"]
    assert np.all(_areas(points, before) > 0) and not _empty_circumcircles(points, before)
    want = {tuple(sorted(t)) for t in spatial.Delaunay(points.astype(np.float64)).simplices}
    assert {tuple(sorted(t)) for t in kc_results["sweep.indices"].tolist()} == want


def _new_triangles(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    old = set(map(tuple, before.tolist()))
    return np.array([t for t in after.tolist() if tuple(t) not in old], np.int32)


def test_flip_guards(kc_results):
    meshes = P.flip_meshes()
    _, before, kwargs = meshes["grid30_ref"]
    made = _new_triangles(before, kc_results["grid30_ref.indices"])
    assert len(made) > 100
    assert np.all(np.abs(_areas(kwargs["ref_positions"], made)) > 0.05)
    points, before, _ = meshes["sweep_area_eps"]
    made = _new_triangles(before, kc_results["sweep_area_eps.indices"])
    assert len(made) > 100 and np.all(_areas(points, made) > 2e-4)
    # One pass flips an independent set: no triangle changes twice.
    changed = np.any(kc_results["sweep_one_pass.indices"] != before, axis=1)
    assert changed.sum() == 2 * kc_results["sweep_one_pass.flips"][0]
    np.testing.assert_array_equal(kc_results["quad_ref_flat.indices"], meshes["quad"][1])


# ---- graph capture and CUDA-C ----------------------------------------------------------------


def test_cpu_graph_capture_replays_the_loop():
    points, tris, _ = P.flip_meshes()["grid"]
    positions = kc.array(points, dtype=kc.vec2)
    eager = kc.array(tris, dtype=kc.int32)
    want = kc.geometry.delaunay_edge_flip(positions, eager).numpy()[0]
    indices = kc.array(tris, dtype=kc.int32)
    with kc.ScopedCapture(device="cpu") as capture:
        total = kc.geometry.delaunay_edge_flip(positions, indices)
        with pytest.raises(RuntimeError, match="vertex_count"):
            kc.geometry.tri_tri_adjacency(indices)
    np.testing.assert_array_equal(indices.numpy(), tris)  # recorded, not run
    kc.capture_launch(capture.graph)
    assert total.numpy()[0] == want
    np.testing.assert_array_equal(indices.numpy(), eager.numpy())
    kc.capture_launch(capture.graph)  # the adjacency is rebuilt: a Delaunay mesh stays
    assert total.numpy()[0] == 0
    np.testing.assert_array_equal(indices.numpy(), eager.numpy())


def _kernels() -> tuple:
    return (L.max_vertex_index, L.half_edge_keys, L.pair_half_edges, L.stake_flip_claims,
            L.apply_won_flips, L.record_pass)


def test_kernels_compile_for_cuda():
    pytest.importorskip("cuda.bindings.nvrtc")
    for kernel in _kernels():
        compiled = kc.compile(kernel, target="cuda", arch=90)
        assert compiled.format == "cubin" and compiled.binary[:4] == b"\x7fELF"


def test_cuda_c_through_the_host_harness(monkeypatch):
    """The kernels' CUDA-C, compiled by g++ with the grid emulated (tests/cuda_harness),
    flips the CPU backend's mesh exactly."""
    import cuda_harness

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    from kernelc.codegen.cuda import CudaOptions, emit_cuda
    from kernelc.codegen.cuda_layout import ArrayArg
    from kernelc.geometry import delaunay
    from kernelc.runtime.launch import arg_type

    def harness_launch(kernel, dim, args, device):
        types = tuple(arg_type(kernel, n, w, v, device)
                      for n, w, v in zip(kernel.arg_names, kernel.param_types, args))
        host = cuda_harness.build(emit_cuda(kernel.get_ir(types), CudaOptions()))
        values = [ArrayArg(a.ptr, a.shape, a.strides) if isinstance(a, kc.array) else a
                  for a in args]
        assert host.launch((dim,), values, block_dim=32, max_blocks=8, workers=2) is None

    points, tris, _ = P.flip_meshes()["sweep"]
    positions = kc.array(points, dtype=kc.vec2)
    want = kc.array(tris, dtype=kc.int32)
    kc.geometry.delaunay_edge_flip(positions, want)
    monkeypatch.setattr(delaunay, "_launch", harness_launch)
    got = kc.array(tris, dtype=kc.int32)
    kc.geometry.delaunay_edge_flip(positions, got)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.cuda
@pytest.mark.skipif(not kc.is_cuda_available(), reason="needs an NVIDIA GPU")
def test_cuda_matches_cpu():
    for name in ("sweep", "grid30", "junction"):
        points, tris, _ = P.flip_meshes()[name]
        host = kc.array(tris, dtype=kc.int32)
        host_flips = kc.geometry.delaunay_edge_flip(kc.array(points, dtype=kc.vec2), host)
        device = kc.array(tris, dtype=kc.int32, device="cuda")
        flips = kc.geometry.delaunay_edge_flip(
            kc.array(points, dtype=kc.vec2, device="cuda"), device)
        assert flips.device == device.device
        assert flips.numpy()[0] == host_flips.numpy()[0]
        np.testing.assert_array_equal(device.numpy(), host.numpy())
        for got, want in zip(kc.geometry.tri_tri_adjacency(device),
                             kc.geometry.tri_tri_adjacency(host)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---- errors ----------------------------------------------------------------------------------


def test_errors():
    g = kc.geometry
    points, tris, _ = P.flip_meshes()["grid"]
    positions = kc.array(points, dtype=kc.vec2)
    indices = kc.array(tris, dtype=kc.int32)
    cases = [
        (ValueError, r"\(num_tris, 3\)", lambda: g.tri_tri_adjacency(
            kc.zeros(4, dtype=kc.int32))),
        (ValueError, r"shape \(2, 4\)", lambda: g.delaunay_edge_flip(
            positions, kc.zeros((2, 4), dtype=kc.int32))),
        (TypeError, "dtype int32, got int64", lambda: g.tri_tri_adjacency(
            kc.zeros((2, 3), dtype=kc.int64))),
        (RuntimeError, "got float32", lambda: g.tri_tri_adjacency(kc.zeros((2, 3)))),
        (TypeError, "got ndarray", lambda: g.tri_tri_adjacency(tris)),
        (ValueError, "vertex_count", lambda: g.tri_tri_adjacency(indices, -1)),
        (TypeError, "vertex_count", lambda: g.tri_tri_adjacency(indices, 4.0)),
        (TypeError, "'positions' must have dtype vec2", lambda: g.delaunay_edge_flip(
            kc.zeros(points.shape[0], dtype=kc.vec3), indices)),
        (TypeError, "'positions' must have dtype", lambda: g.delaunay_edge_flip(
            kc.array(points), indices)),
        (ValueError, "'ref_positions' must be a 1-d", lambda: g.delaunay_edge_flip(
            positions, indices, kc.zeros((2, 2), dtype=kc.vec2))),
        (TypeError, "kc.array", lambda: g.delaunay_edge_flip(points, indices)),
        (ValueError, "max_passes", lambda: g.delaunay_edge_flip(positions, indices,
                                                                max_passes=0)),
        (ValueError, "max_passes", lambda: g.delaunay_edge_flip(positions, indices, None, -1)),
        (TypeError, "max_passes", lambda: g.delaunay_edge_flip(positions, indices, None, 2.5)),
    ]
    for bad in (-1.0, float("nan"), float("inf")):
        cases += [(ValueError, "area_epsilon", lambda bad=bad: g.delaunay_edge_flip(
                      positions, indices, area_epsilon=bad)),
                  (ValueError, "ref_area_epsilon", lambda bad=bad: g.delaunay_edge_flip(
                      positions, indices, ref_area_epsilon=bad))]
    cases.append((TypeError, "area_epsilon", lambda: g.delaunay_edge_flip(
        positions, indices, area_epsilon="0")))
    for error, message, call in cases:
        with pytest.raises(error, match=message):
            call()
    np.testing.assert_array_equal(indices.numpy(), tris)  # rejected calls change nothing


def test_empty_mesh():
    flips = kc.geometry.delaunay_edge_flip(kc.zeros(0, dtype=kc.vec2),
                                           kc.zeros((0, 3), dtype=kc.int32))
    assert flips.shape == (1,) and flips.dtype == kc.int32 and flips.numpy()[0] == 0
    neighbors = kc.geometry.tri_tri_adjacency(kc.zeros((0, 3), dtype=kc.int32),
                                              return_neighbor_edge_indices=False)
    assert isinstance(neighbors, kc.array) and neighbors.shape == (0, 3)
