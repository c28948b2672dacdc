"""`kernelc.geometry` sparse marching cubes and the Lipschitz octree, against Warp 1.19
and on their own.

The programs of tests/geometry_sparse_programs.py run once under Warp (a subprocess) and
once under kernelc. With host-evaluated implicit functions every output agrees bit for bit
and index for index. Warp's example_sparse_marching_cubes.py evaluates a bunny SDF by mesh
queries, whose closest face kernelc may pick differently on ties (a distance one ulp off):
there the cells and triangles agree exactly and the vertices to about 1e-6.
Independently of Warp: the octree against a NumPy re-run of the same recursion, the
sparse surface against the dense extractor, explicit cells against NumPy's edge crossings,
gradients against finite differences, and the errors.
"""

from __future__ import annotations

import importlib
import shutil

import numpy as np
import pytest

import kernelc as kc
import kernelc.geometry
from kernelc.geometry import IsoSurfaceMarchingCubes, sparse_lang, sparse_octree, tables
from tests import geometry_sparse_programs as P
from tests.conftest import run_warp
from tests.test_geometry_iso import ROOT

_WARP_SCRIPT = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
import warp.geometry
from tests import geometry_sparse_programs as P
results.update(P.run_cases(wp))
results.update(P.run_gradients(wp))
results.update(P.run_sparse_example("warp", Path({folder!r})))
"""


@pytest.fixture(scope="module")
def warp_results(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("sparse_warp")
    return run_warp(_WARP_SCRIPT.format(root=str(ROOT), folder=str(folder)), folder)


@pytest.fixture(scope="module")
def kc_results(tmp_path_factory) -> dict:
    out = P.run_cases(kc)
    out.update(P.run_gradients(kc))
    out.update(P.run_sparse_example("kernelc", tmp_path_factory.mktemp("sparse_kc")))
    return out


# ---- agreement with Warp -------------------------------------------------------------------


def test_outputs_match_warp(warp_results, kc_results):
    keys = sorted(k for k in warp_results if not k.startswith(("grad.", "example_")))
    assert keys == sorted(k for k in kc_results if not k.startswith(("grad.", "example_")))
    assert sum(warp_results[k].size for k in keys if k.endswith(".indices")) > 10000
    for key in keys:
        want, got = warp_results[key], kc_results[key]
        assert got.dtype == want.dtype and got.shape == want.shape, key
        np.testing.assert_array_equal(got, want, err_msg=key)


def test_gradients_match_warp(warp_results, kc_results):
    want, got = warp_results["grad.values"], kc_results["grad.values"]
    assert np.abs(want).max() > 0.1 and np.count_nonzero(want) > 100
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_example_matches_warp(warp_results, kc_results):
    for part in ("verts", "indices"):  # the octree cage: exact
        np.testing.assert_array_equal(kc_results[f"example_cells.{part}"],
                                      warp_results[f"example_cells.{part}"])
    for mode in ("sparse", "dense"):
        key = f"example_{mode}"
        assert kc_results[f"{key}.verts"].shape[0] > 1000
        np.testing.assert_array_equal(kc_results[f"{key}.indices"],
                                      warp_results[f"{key}.indices"], err_msg=key)
        # The SDF differs by an ulp where the closest face is a tie (see the docstring).
        np.testing.assert_allclose(kc_results[f"{key}.verts"], warp_results[f"{key}.verts"],
                                   rtol=0, atol=4e-6, err_msg=key)
    # The sparse extractor's vertices are the dense one's, bit for bit, in the same order.
    np.testing.assert_array_equal(kc_results["example_sparse.verts"],
                                  kc_results["example_dense.verts"])


# ---- on their own ----------------------------------------------------------------------------


def octree_reference(f, origin, root, depth, threshold=0.0, bound=1.0) -> np.ndarray:
    """The octree recursion in NumPy, with Warp's float32 steps."""
    cells = np.zeros((1, 3), np.int64)
    origin = np.asarray(origin, np.float32)
    for level in range(depth + 1):
        width = np.full(3, np.float32(root / (1 << level)), np.float32)
        band = np.float32(bound * sparse_octree.half_diagonal(width))
        centers = origin + width * (cells.astype(np.float32) + np.float32(0.5))
        cells = cells[np.abs(f(centers.astype(np.float32)) - np.float32(threshold)) <= band]
        if level < depth:
            child = np.array([[c & 1, c >> 1 & 1, c >> 2 & 1] for c in range(8)])
            cells = (2 * cells[:, None, :] + child[None]).reshape(-1, 3)
    return cells


@pytest.mark.parametrize("field,threshold,bound", [("torus", 0.0, 1.0), ("sphere", 0.2, 1.0),
                                                   ("bumpy", -0.05, 2.0)])
def test_octree_matches_numpy(field, threshold, bound):
    f = P.FIELDS[field]
    cells, width = kc.geometry.lipschitz_octree(P.evaluator(kc, field), (-1.0, -0.9, -1.1), 2.1,
                                                5, threshold=threshold, lipschitz_bound=bound)
    want = octree_reference(f, (-1.0, -0.9, -1.1), 2.1, 5, threshold, bound)
    assert width == 2.1 / 32 and len(want) > 100
    np.testing.assert_array_equal(cells.numpy(), want)
    # Every cell that the surface crosses (a corner on each side) is kept.
    g = np.arange(33, dtype=np.float32) * np.float32(width) + np.float32(-1.0)
    nodes = np.stack(np.meshgrid(g, g + np.float32(0.1), g - np.float32(0.1), indexing="ij"), -1)
    inside = (f(nodes.reshape(-1, 3)) >= threshold).reshape(33, 33, 33)
    lo = np.min([inside[a:32 + a, b:32 + b, c:32 + c] for a in (0, 1) for b in (0, 1)
                 for c in (0, 1)], axis=0)
    hi = np.max([inside[a:32 + a, b:32 + b, c:32 + c] for a in (0, 1) for b in (0, 1)
                 for c in (0, 1)], axis=0)
    crossed = {tuple(c) for c in np.argwhere(lo != hi)}
    assert crossed <= {tuple(c) for c in want}


def _dense(name: str, shape, lower, upper, threshold=0.0):
    """The dense extractor on the same grid, the field sampled as the octree samples it."""
    origin, delta = (np.array(v, np.float32) for v in
                     kc.geometry.iso_surface.resolve_bounds(shape, lower, upper))
    idx = np.stack(np.meshgrid(*(np.arange(n, dtype=np.float32) for n in shape),
                               indexing="ij"), -1)
    field = P.FIELDS[name]((origin + delta * idx).reshape(-1, 3)).reshape(shape)
    return IsoSurfaceMarchingCubes.extract(kc.array(field), threshold, lower=lower, upper=upper)


def _canonical(indices: np.ndarray) -> np.ndarray:
    """Triangles rotated to start at their smallest index, then sorted."""
    t = indices.reshape(-1, 3)
    k = np.argmin(t, axis=1)
    t = np.stack([t[np.arange(len(t)), (k + s) % 3] for s in range(3)], axis=1)
    return t[np.lexsort(t.T[::-1])]


@pytest.mark.parametrize("case", [c for c in P.CASES if c[0] in ("sphere17", "torus_cut",
                                                                 "sphere_aniso", "bumpy_l2")])
def test_sparse_equals_dense(case):
    name, field, shape, kwargs = case
    verts, indices = kc.geometry.sparse_marching_cubes(P.evaluator(kc, field), *shape, **kwargs)
    dense_verts, dense_indices = _dense(field, shape, kwargs.get("lower"), kwargs.get("upper"),
                                        kwargs.get("threshold", 0.0))
    np.testing.assert_array_equal(verts.numpy(), dense_verts.numpy())
    # The same triangles (corners in the same cyclic order), in another order.
    np.testing.assert_array_equal(_canonical(indices.numpy()), _canonical(dense_indices.numpy()))


def test_from_cells_vertices_match_numpy():
    cells, values = P._cells_case(seed=6)
    origin, width, threshold = np.array([0.5, -1.0, 2.0]), 0.25, 0.1
    verts, indices = kc.geometry.sparse_marching_cubes_from_cells(
        cells, values, origin=origin, cell_width=width, threshold=threshold)
    # NumPy: the crossing edges of the cells, keyed by (lower corner, axis), in that order.
    offsets = np.asarray(tables.CUBE_CORNER_OFFSETS)
    edges = {}
    for cell, vals in zip(cells, values):
        for a, b in tables.EDGE_TO_CORNERS:
            va, vb = float(vals[a]), float(vals[b])
            if (va >= threshold) == (vb >= threshold):
                continue
            pa, pb = cell + offsets[a], cell + offsets[b]
            if tuple(pb) < tuple(pa):
                pa, pb, va, vb = pb, pa, vb, va
            t = (threshold - va) / (vb - va)
            axis = int(np.argmax(pb - pa))
            edges[(*pa, axis)] = origin + width * (pa + t * (pb - pa))
    want = np.array([edges[k] for k in sorted(edges)])
    np.testing.assert_allclose(verts.numpy(), want, rtol=0, atol=1e-5)
    tris = indices.numpy().reshape(-1, 3)
    assert tris.min() == 0 and tris.max() == len(want) - 1
    assert len(np.unique(tris)) == len(want)  # every vertex is used, none twice placed


def test_from_cells_gradient_by_finite_differences():
    cells, values = P._cells_case(seed=9)
    flat = values.reshape(-1).astype(np.float32)
    weights = None

    def loss(v: np.ndarray) -> float:
        verts, _ = kc.geometry.sparse_marching_cubes_from_cells(cells, v, cell_width=0.5)
        return float((verts.numpy().astype(np.float64) * weights[:verts.shape[0]]).sum())

    weights = np.random.default_rng(1).standard_normal((20000, 3))
    arr = kc.array(flat, requires_grad=True)
    tape = kc.Tape()
    with tape:
        verts, _ = kc.geometry.sparse_marching_cubes_from_cells(cells, arr, cell_width=0.5)
    verts.grad = kc.array(weights[:verts.shape[0]].astype(np.float32), dtype=kc.vec3)
    tape.backward()
    grad = arr.grad.numpy()
    assert np.count_nonzero(grad) > 50
    rng = np.random.default_rng(0)
    picks = np.concatenate([rng.choice(np.flatnonzero(grad), 12),
                            rng.choice(np.flatnonzero(grad == 0), 4)])
    for i in picks:
        eps = 1e-3
        up, down = flat.copy(), flat.copy()
        up[i] += eps
        down[i] -= eps
        fd = (loss(up) - loss(down)) / (2 * eps)
        assert abs(fd - grad[i]) <= 2e-2 * max(1.0, abs(grad[i])), (i, fd, grad[i])


def test_corner_code_offsets_follow_the_table():
    # corner_codes derives CUBE_CORNER_OFFSETS by bit tricks: check it against the table.
    cells = kc.array(np.array([[0, 0, 0]], np.int32), dtype=kc.vec3i)
    codes = kc.empty(8, dtype=kc.int64)
    order = kc.empty(8, dtype=kc.int32)
    kc.launch(sparse_lang.corner_codes, 1, [cells, kc.vec3i(0, 0, 0), np.int64(100),
                                            np.int64(10), codes, order])
    want = [100 * x + 10 * y + z for x, y, z in tables.CUBE_CORNER_OFFSETS]
    np.testing.assert_array_equal(codes.numpy(), want)


def test_empty_and_stats():
    verts, indices = kc.geometry.sparse_marching_cubes_from_cells(np.zeros((0, 3)), [])
    assert verts.shape == (0,) and indices.shape == (0,)
    _, _, stats = kc.geometry.sparse_marching_cubes(P.evaluator(kc, "sphere"), 9, 9, 9,
                                                    lower=(5.0, 5.0, 5.0), upper=(6, 6, 6),
                                                    return_stats=True)
    assert stats["field_evaluations"] == 1 and stats["leaf_cells"] == 0
    cells, _ = kc.geometry.lipschitz_octree(P.evaluator(kc, "sphere"), (5.0, 5.0, 5.0), 1.0, 3)
    assert cells.shape == (0,) and cells.dtype == kc.vec3i


# ---- errors ----------------------------------------------------------------------------------


@kc.func
def _point_sdf(p: kc.vec3) -> float:
    return kc.length(p) - 0.5


def test_errors():
    g = kc.geometry
    good = P.evaluator(kc, "sphere")
    with pytest.raises(ValueError, match="at least 2"):
        g.sparse_marching_cubes(good, 1, 5, 5)
    with pytest.raises(ValueError, match="lipschitz_bound"):
        g.sparse_marching_cubes(good, 5, 5, 5, lipschitz_bound=-1.0)
    with pytest.raises(TypeError, match="single-point"):
        g.sparse_marching_cubes(_point_sdf, 5, 5, 5)
    with pytest.raises(TypeError, match="callable"):
        g.sparse_marching_cubes(3.0, 5, 5, 5)
    with pytest.raises(TypeError, match="must return a kc.array"):
        g.sparse_marching_cubes(lambda p: P.sphere_sdf(p.numpy()), 5, 5, 5)
    with pytest.raises(ValueError, match="returned 1 values for"):
        g.sparse_marching_cubes(lambda p: kc.zeros(1, dtype=float), 5, 5, 5, lower=(-1, -1, -1))
    with pytest.raises(TypeError, match="float32"):
        g.sparse_marching_cubes(lambda p: kc.zeros(p.shape[0], dtype=kc.float64), 5, 5, 5)
    with pytest.raises(ValueError, match="max_depth"):
        g.lipschitz_octree(good, (0, 0, 0), 1.0, -1)
    with pytest.raises(ValueError, match="root_width"):
        g.lipschitz_octree(good, (0, 0, 0), 0.0, 2)
    with pytest.raises(ValueError, match="lipschitz_bound"):
        g.lipschitz_octree(good, (0, 0, 0), 1.0, 2, lipschitz_bound=-0.5)
    cells = np.zeros((2, 3), np.int32)
    cells[1, 0] = 1
    with pytest.raises(ValueError, match="cell_width"):
        g.sparse_marching_cubes_from_cells(cells, np.zeros(16), cell_width=0.0)
    with pytest.raises(ValueError, match="16 entries for 2 cells"):
        g.sparse_marching_cubes_from_cells(cells, np.zeros(15))
    with pytest.raises(ValueError, match="float32"):
        g.sparse_marching_cubes_from_cells(cells, kc.zeros(16, dtype=kc.float64))
    with pytest.raises(ValueError, match=r"shape \(N, 3\)"):
        g.sparse_marching_cubes_from_cells(np.zeros(4, np.int32), np.zeros(16))
    with pytest.raises(ValueError, match="64-bit"):
        far = np.array([[-2**31 + 1, 0, 0], [2**31 - 2, 0, 0]], np.int32)
        g.sparse_marching_cubes_from_cells(far, np.zeros(16))


# ---- CUDA ------------------------------------------------------------------------------------


_KERNELS = ("octree_centers", "octree_keep", "cull_keep", "compact_cells", "subdivide_cells",
            "cell_bounds", "corner_codes", "first_of_run", "scatter_rank", "unique_corners",
            "gather_values", "mark_edges", "edge_vertices", "cell_faces")


def test_kernels_compile_for_cuda():
    pytest.importorskip("cuda.bindings.nvrtc")
    for name in _KERNELS:
        compiled = kc.compile(getattr(sparse_lang, name), target="cuda", arch=90)
        assert compiled.format == "cubin" and compiled.binary[:4] == b"\x7fELF", name


def test_cuda_c_through_the_host_harness(monkeypatch):
    """The kernels' CUDA-C, compiled by g++ with the grid emulated, gives the CPU's mesh."""
    import cuda_harness

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    from kernelc.codegen.cuda import CudaOptions, emit_cuda
    from kernelc.codegen.cuda_layout import ArrayArg
    # (The package's function of the same name hides the module: import it by path.)
    S = importlib.import_module("kernelc.geometry.sparse_marching_cubes")
    from kernelc.runtime.launch import arg_type

    def harness_launch(kernel, dim, args, device, taped=False):
        dim = dim if isinstance(dim, tuple) else (dim,)
        types = tuple(arg_type(kernel, n, w, v, device)
                      for n, w, v in zip(kernel.arg_names, kernel.param_types, args))
        host = cuda_harness.build(emit_cuda(kernel.get_ir(types), CudaOptions()))
        values = [ArrayArg(a.ptr, a.shape, a.strides) if isinstance(a, kc.array) else a
                  for a in args]
        assert host.launch(dim, values, block_dim=32, max_blocks=8, workers=2) is None

    run = lambda: kc.geometry.sparse_marching_cubes(  # noqa: E731
        P.evaluator(kc, "torus"), 12, 10, 11, lower=(-1, -0.5, -1), upper=(1, 0.5, 1))
    want = run()
    monkeypatch.setattr(S, "launch", harness_launch)
    monkeypatch.setattr(sparse_octree, "launch", harness_launch)
    got = run()
    assert want[1].shape[0] > 100
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.cuda
@pytest.mark.skipif(not kc.is_cuda_available(), reason="needs an NVIDIA GPU")
def test_cuda_matches_cpu():
    host = kc.geometry.sparse_marching_cubes(P.evaluator(kc, "torus"), 33, 33, 33,
                                             lower=(-1, -1, -1), upper=(1, 1, 1))
    verts, indices = kc.geometry.sparse_marching_cubes(P.evaluator(kc, "torus"), 33, 33, 33,
                                                       lower=(-1, -1, -1), upper=(1, 1, 1),
                                                       device="cuda")
    assert str(verts.device).startswith("cuda")
    np.testing.assert_allclose(verts.numpy(), host[0].numpy(), rtol=0, atol=1e-5)
    np.testing.assert_array_equal(indices.numpy(), host[1].numpy())
