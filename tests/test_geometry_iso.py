"""`kernelc.geometry`: marching cubes and surface nets against Warp 1.19 and on their own.

The programs of tests/geometry_programs.py run once under Warp (one subprocess for the
module) and once under kernelc; vertices must agree bit for bit and faces index for
index, in Warp's order. Independently of Warp, the meshes are checked against NumPy
(marching-cubes vertices recomputed by linear interpolation along the grid's edges) and
for validity: closed, consistently wound, outward-facing surfaces with the right Euler
characteristic.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
import kernelc.geometry
from kernelc.geometry import IsoSurfaceBase, IsoSurfaceMarchingCubes, IsoSurfaceNets, tables
from tests import geometry_programs as P
from tests.conftest import run_warp

ROOT = Path(__file__).resolve().parent.parent

_WARP_SCRIPT = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
import warp.geometry
from warp._src.geometry import surface_nets as _sn
from tests import geometry_programs as P
results.update(P.run_cases(wp))
results.update(P.run_gradients(wp))
results.update(P.run_isosurface_example("warp", Path({folder!r})))
G = wp.geometry.IsoSurfaceMarchingCubes
for name in ("CUBE_CORNER_OFFSETS", "EDGE_TO_CORNERS", "CASE_TO_TRI_RANGE",
             "TRI_LOCAL_INDICES"):
    results["table." + name] = np.asarray(getattr(G, name))
results["table.SN_EDGE_GROUPS"] = np.asarray(_sn._SN_EDGE_GROUP_TABLE)
results["table.SN_AMBIGUOUS_FACE"] = np.asarray(_sn._SN_AMBIGUOUS_FACE)
"""


@pytest.fixture(scope="module")
def warp_results(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("geometry_warp")
    script = _WARP_SCRIPT.format(root=str(ROOT), folder=str(folder))
    return run_warp(script, folder)


@pytest.fixture(scope="module")
def kc_results(tmp_path_factory) -> dict:
    out = P.run_cases(kc)
    out.update(P.run_gradients(kc))
    out.update(P.run_isosurface_example("kernelc", tmp_path_factory.mktemp("geometry_kc")))
    return out


def _extract(cls, name: str, threshold: float = 0.0, **kwargs):
    verts, indices = cls.extract(P.field_array(kc, name), threshold, **kwargs)
    return verts.numpy().astype(np.float64), indices.numpy()


# ---- agreement with Warp -------------------------------------------------------------------


def test_tables_match_warp(warp_results):
    for name in ("CUBE_CORNER_OFFSETS", "EDGE_TO_CORNERS", "CASE_TO_TRI_RANGE",
                 "TRI_LOCAL_INDICES"):
        np.testing.assert_array_equal(np.asarray(getattr(IsoSurfaceMarchingCubes, name)),
                                      warp_results[f"table.{name}"], err_msg=name)
    # The surface-net tables are derived (tables.py), not copied: the derivation must give
    # OpenVDB's tables, which Warp uses.
    np.testing.assert_array_equal(tables.SN_EDGE_GROUPS, warp_results["table.SN_EDGE_GROUPS"])
    np.testing.assert_array_equal(tables.SN_AMBIGUOUS_FACE,
                                  warp_results["table.SN_AMBIGUOUS_FACE"])


def test_outputs_match_warp(warp_results, kc_results):
    keys = sorted(k for k in warp_results if not k.startswith(("table.", "grad_")))
    assert keys == sorted(k for k in kc_results if not k.startswith("grad_"))
    assert any(warp_results[k].size for k in keys if k.endswith(".indices"))
    for key in keys:
        want, got = warp_results[key], kc_results[key]
        assert got.dtype == want.dtype and got.shape == want.shape, key
        # Bit for bit (NaN equal to NaN: surface nets average in a NaN node's edges).
        np.testing.assert_array_equal(got, want, err_msg=key)


def test_example_isosurface_matches_warp(warp_results, kc_results):
    for method, topology in P.EXAMPLE_RUNS:
        key = f"example_{method}_{topology}"
        assert kc_results[f"{key}.verts"].shape[0] > 100
        for part in ("field", "verts", "indices"):
            np.testing.assert_array_equal(kc_results[f"{key}.{part}"],
                                          warp_results[f"{key}.{part}"], err_msg=key)


def test_gradients_match_warp(warp_results, kc_results):
    for tag in ("mc", "sn"):
        want, got = warp_results[f"grad_{tag}.field"], kc_results[f"grad_{tag}.field"]
        assert np.abs(want).max() > 0.1
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


# ---- on their own: positions -----------------------------------------------------------------


def mc_reference_vertices(field: np.ndarray, threshold: float, lower, delta) -> np.ndarray:
    """Marching-cubes vertices by NumPy in float64: one per crossing lattice edge, in
    (i, j, k, axis) order, linearly interpolated between the edge's two nodes."""
    f = field.astype(np.float64)
    n = np.array(f.shape)
    crossing = np.zeros((*f.shape, 3), bool)
    t = np.zeros((*f.shape, 3))
    for axis in range(3):
        a = np.take(f, np.arange(n[axis] - 1), axis=axis)
        b = np.take(f, np.arange(1, n[axis]), axis=axis)
        cut = ((a >= threshold) & (b < threshold)) | ((a < threshold) & (b >= threshold))
        index = [slice(None)] * 3
        index[axis] = slice(0, n[axis] - 1)
        crossing[(*index, axis)] = cut
        with np.errstate(divide="ignore", invalid="ignore"):
            t[(*index, axis)] = np.clip((threshold - a) / (b - a), 0.0, 1.0)
    nodes = np.argwhere(crossing)  # C order: (i, j, k, axis)
    local = nodes[:, :3].astype(np.float64)
    local[np.arange(len(nodes)), nodes[:, 3]] += t[tuple(nodes.T)]
    return np.asarray(lower) + local * np.asarray(delta)


@pytest.mark.parametrize("name,threshold,bounds", [
    ("sphere16", 0.0, {}), ("noise", 0.4, P.BOUNDS), ("torus", -0.05, {}),
    ("open", 0.0, {"lower": (2.0, 0.0, -1.0)}),
])
def test_marching_cubes_vertices_lie_on_the_edges(name, threshold, bounds):
    field = P.FIELDS[name]()
    verts, indices = _extract(IsoSurfaceMarchingCubes, name, threshold, **bounds)
    lower = np.array(bounds.get("lower", (0.0, 0.0, 0.0)))
    upper = np.array(bounds.get("upper", np.array(field.shape) - 1.0))
    delta = (upper - lower) / (np.array(field.shape) - 1)
    want = mc_reference_vertices(field, threshold, lower, delta)
    assert verts.shape == want.shape
    np.testing.assert_allclose(verts, want, rtol=0, atol=2e-6 * np.abs(want).max())
    # Every triangle's corners lie on edges of one cell.
    local = np.rint((verts - lower) / delta * 2).astype(int)  # doubled: an edge's midpoint
    tris = indices.reshape(-1, 3)
    lo = np.min(local[tris], axis=1) // 2
    hi = -(-np.max(local[tris], axis=1) // 2)
    assert np.all(hi - lo <= 1)


def test_surface_net_vertices_lie_in_their_cells():
    for name, threshold in (("noise", 0.0), ("sphere16", 0.1)):
        field = P.FIELDS[name]()
        verts, indices = _extract(IsoSurfaceNets, name, threshold)
        cells = np.floor(verts).astype(int)
        cells = np.minimum(cells, np.array(field.shape) - 2)
        # The cell of each vertex has corners on both sides of the threshold.
        corners = np.stack([field[cells[:, 0] + dx, cells[:, 1] + dy, cells[:, 2] + dz]
                            for dx in (0, 1) for dy in (0, 1) for dz in (0, 1)], axis=1)
        inside = corners < threshold
        assert np.all(inside.any(axis=1) & ~inside.all(axis=1))
        # Every vertex belongs to a face (Warp documents this for surface nets).
        assert np.array_equal(np.unique(indices), np.arange(len(verts)))


# ---- on their own: mesh validity -----------------------------------------------------------


def check_closed_mesh(verts: np.ndarray, tris: np.ndarray, euler: int) -> float:
    """Asserts a closed, consistently wound, outward-facing mesh with the given Euler
    characteristic; returns its volume."""
    directed = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    assert len(np.unique(directed, axis=0)) == len(directed)  # each directed edge once
    undirected, count = np.unique(np.sort(directed, axis=1), axis=0, return_counts=True)
    assert np.all(count == 2)  # every edge shared by two faces
    assert len(verts) - len(undirected) + len(tris) == euler
    a, b, c = (verts[tris[:, k]] for k in range(3))
    volume = np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0
    assert volume > 0  # counter-clockwise seen from outside: normals point out
    return volume


@pytest.mark.parametrize("cls", [IsoSurfaceMarchingCubes, IsoSurfaceNets], ids=["mc", "sn"])
def test_closed_surfaces(cls):
    radius = 0.6
    shape = (16, 16, 16)
    verts, indices = _extract(cls, "sphere16", lower=(-1.0, -1.0, -1.0), upper=(1.0, 1.0, 1.0))
    tris = indices.reshape(-1, 3)
    volume = check_closed_mesh(verts, tris, euler=2)
    assert volume == pytest.approx(4.0 / 3.0 * np.pi * radius**3, rel=0.1)  # 16 nodes a side
    # Normals point away from the centre.
    a, b, c = (verts[tris[:, k]] for k in range(3))
    normals = np.cross(b - a, c - a)
    centre = np.array([0.03, -0.02, 0.05])
    assert np.mean(np.einsum("ij,ij->i", normals, (a + b + c) / 3 - centre) > 0) > 0.99
    assert verts.shape[0] > 300 and shape == P.FIELDS["sphere16"]().shape
    verts, indices = _extract(cls, "torus")
    check_closed_mesh(verts, indices.reshape(-1, 3), euler=0)


def test_open_surface_is_consistently_wound():
    for cls in (IsoSurfaceMarchingCubes, IsoSurfaceNets):
        verts, indices = _extract(cls, "open")
        tris = indices.reshape(-1, 3)
        directed = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
        assert len(np.unique(directed, axis=0)) == len(directed)
        _, count = np.unique(np.sort(directed, axis=1), axis=0, return_counts=True)
        assert count.max() == 2 and (count == 1).any()  # a boundary where it leaves the grid


def test_quads_split_into_the_triangles():
    field = P.field_array(kc, "noise")
    verts_t, tris = IsoSurfaceNets.extract(field, 0.3, topology="triangle")
    verts_q, quads = IsoSurfaceNets.extract(field, 0.3, topology="quad")
    np.testing.assert_array_equal(verts_t.numpy(), verts_q.numpy())
    q = quads.numpy().reshape(-1, 4)
    split = np.hstack([q[:, [0, 1, 2]], q[:, [0, 2, 3]]]).reshape(-1)
    np.testing.assert_array_equal(tris.numpy(), split)


def test_no_surface_gives_empty_arrays():
    for cls in (IsoSurfaceMarchingCubes, IsoSurfaceNets):
        verts, indices = cls.extract(P.field_array(kc, "flat"), 0.0)
        assert verts.shape == (0,) and verts.dtype == kc.vec3
        assert indices.shape == (0,) and indices.dtype == kc.int32


# ---- API -------------------------------------------------------------------------------------


def test_api_names():
    assert kc.geometry is kernelc.geometry
    assert issubclass(IsoSurfaceMarchingCubes, IsoSurfaceBase)
    assert issubclass(IsoSurfaceNets, IsoSurfaceBase)
    with pytest.raises(TypeError):
        IsoSurfaceBase(4, 4, 4)  # abstract
    nets = IsoSurfaceNets(3, 4, 5, topology="quad")
    assert (nets.nx, nets.ny, nets.nz, nets.topology) == (3, 4, 5, "quad")
    assert nets.verts is None and nets.indices is None
    nets.resize(6, 7, 8)
    assert (nets.nx, nets.ny, nets.nz) == (6, 7, 8)


def test_marching_cubes_alias_warns(recwarn):
    kc.__dict__.pop("MarchingCubes", None)  # kernelc keeps the name after the first read
    with pytest.warns(DeprecationWarning, match="MarchingCubes"):
        alias = kc.MarchingCubes
    assert alias is IsoSurfaceMarchingCubes
    with pytest.warns(DeprecationWarning, match=r"domain_bounds_lower_corner` is deprecated .*"
                                                r"Use `lower` instead"):
        mc = alias(4, 4, 4, domain_bounds_lower_corner=(1.0, 2.0, 3.0))
    assert mc.lower == (1.0, 2.0, 3.0) and mc.upper is None
    with pytest.warns(DeprecationWarning):
        assert mc.domain_bounds_lower_corner == (1.0, 2.0, 3.0)
    with pytest.warns(DeprecationWarning, match="Use `upper` instead"):
        mc.domain_bounds_upper_corner = (5.0, 5.0, 5.0)
    assert mc.upper == (5.0, 5.0, 5.0)
    with pytest.raises(TypeError, match="both"):
        alias(4, 4, 4, lower=(0.0, 0.0, 0.0), domain_bounds_lower_corner=(1.0, 1.0, 1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        IsoSurfaceMarchingCubes(4, 4, 4, (0.0, 0.0, 0.0), (1.0, 1.0, 1.0))  # no warning
    with pytest.warns(DeprecationWarning, match="extract_surface_marching_cubes"):
        verts, _ = IsoSurfaceMarchingCubes.extract_surface_marching_cubes(
            P.field_array(kc, "sphere16"), 0.0)
    assert verts.shape[0] > 0


# ---- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [IsoSurfaceMarchingCubes, IsoSurfaceNets], ids=["mc", "sn"])
def test_bad_fields(cls):
    good = np.zeros((4, 5, 6), np.float32)
    with pytest.raises(TypeError, match="kc.array"):
        cls.extract(good, 0.0)
    with pytest.raises(ValueError, match="3D array"):
        cls.extract(kc.zeros((4, 5), dtype=float), 0.0)
    with pytest.raises(ValueError, match="at least 2 nodes"):
        cls.extract(kc.zeros((4, 1, 6), dtype=float), 0.0)
    with pytest.raises(TypeError, match="float32"):
        cls.extract(kc.array(good.astype(np.float64)), 0.0)
    with pytest.raises(TypeError, match="float32"):
        cls.extract(kc.zeros((4, 5, 6), dtype=kc.int32), 0.0)
    with pytest.raises(ValueError, match="lower"):
        cls.extract(kc.array(good), 0.0, lower=(0.0, 1.0))
    extractor = cls(4, 5, 6)
    with pytest.raises(ValueError, match=r"Field shape \(4, 5, 7\) does not match"):
        extractor.surface(kc.zeros((4, 5, 7), dtype=float), 0.0)
    with pytest.raises(ValueError, match="does not match"):
        extractor.surface(kc.zeros((4, 5), dtype=float), 0.0)
    extractor.surface(kc.array(good - 1.0), 0.0)  # the right size works
    assert extractor.verts.shape == (0,)


def test_bad_topology():
    with pytest.raises(ValueError, match="topology"):
        IsoSurfaceNets(4, 4, 4, topology="hexagon")
    with pytest.raises(ValueError, match="topology"):
        IsoSurfaceNets.extract(kc.zeros((4, 4, 4), dtype=float), 0.0, topology="quads")


# ---- CUDA ------------------------------------------------------------------------------------


def _kernels():
    from kernelc.geometry import marching_cubes_lang as M
    from kernelc.geometry import surface_nets_lang as S

    return (M.mc_count, M.mc_vertices, M.mc_faces, S.sn_classify, S.sn_points, S.sn_faces)


def test_kernels_compile_for_cuda():
    pytest.importorskip("cuda.bindings.nvrtc")
    for kernel in _kernels():
        compiled = kc.compile(kernel, target="cuda", arch=90)
        assert compiled.format == "cubin" and compiled.binary[:4] == b"\x7fELF"


def test_cuda_c_through_the_host_harness(monkeypatch):
    """The kernels' CUDA-C, compiled by g++ with the grid emulated (tests/cuda_harness),
    gives the CPU backend's meshes exactly."""
    import cuda_harness

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    from kernelc.codegen.cuda import CudaOptions, emit_cuda
    from kernelc.codegen.cuda_layout import ArrayArg
    from kernelc.geometry import marching_cubes, surface_nets
    from kernelc.runtime.launch import arg_type

    def harness_launch(kernel, dim, args, device, taped=False):
        types = tuple(arg_type(kernel, n, w, v, device)
                      for n, w, v in zip(kernel.arg_names, kernel.param_types, args))
        host = cuda_harness.build(emit_cuda(kernel.get_ir(types), CudaOptions()))
        values = [ArrayArg(a.ptr, a.shape, a.strides) if isinstance(a, kc.array) else a
                  for a in args]
        assert host.launch(tuple(dim), values, block_dim=32, max_blocks=8, workers=2) is None

    cases = [(cls, name, kwargs) for cls in (IsoSurfaceMarchingCubes, IsoSurfaceNets)
             for name, kwargs in (("noise", {}), ("sphere_flat", P.BOUNDS))]
    want = [cls.extract(P.field_array(kc, name), 0.1, **kwargs) for cls, name, kwargs in cases]
    monkeypatch.setattr(marching_cubes, "launch", harness_launch)
    monkeypatch.setattr(surface_nets, "launch", harness_launch)
    for (cls, name, kwargs), (verts, indices) in zip(cases, want):
        got_verts, got_indices = cls.extract(P.field_array(kc, name), 0.1, **kwargs)
        np.testing.assert_array_equal(got_verts.numpy(), verts.numpy())
        np.testing.assert_array_equal(got_indices.numpy(), indices.numpy())


@pytest.mark.cuda
@pytest.mark.skipif(not kc.is_cuda_available(), reason="needs an NVIDIA GPU")
def test_cuda_matches_cpu():
    for cls in (IsoSurfaceMarchingCubes, IsoSurfaceNets):
        for name in ("noise", "torus"):
            host = cls.extract(P.field_array(kc, name), 0.1)
            field = kc.array(P.FIELDS[name](), dtype=kc.float32, device="cuda")
            verts, indices = cls.extract(field, 0.1)
            assert verts.device == field.device and indices.device == field.device
            np.testing.assert_allclose(verts.numpy(), host[0].numpy(), rtol=0, atol=1e-5)
            np.testing.assert_array_equal(indices.numpy(), host[1].numpy())
