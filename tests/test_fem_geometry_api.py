"""Geometry-level API of `kernelc.fem`: boundary side indices in kernels (`SideIndexArg`,
`side_index_arg_value`, `boundary_side_index`), the `supports_cell_lookup` flag and its
BVH calls, `fem.geometry.DeformedGeometry`, and sparse grids built or rebuilt inside a CPU
graph capture (replays rebuild from the arrays' contents at replay time)."""

# No `from __future__ import annotations`: the kernels below name a local geometry's
# argument types in their annotations.
import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem


def _lattice(*cells: int) -> np.ndarray:
    axes = [np.linspace(0.0, 1.0, n + 1) for n in cells]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(cells))


def _tetmesh(n: int = 2) -> fem.Tetmesh:
    tets = kc.array(fem.utils.grid_to_tets(n, n, n), dtype=int)
    return fem.Tetmesh(tets, kc.array(_lattice(n, n, n), dtype=kc.vec3))


def _trimesh(n: int = 3, **kwargs) -> fem.Trimesh2D:
    tris = kc.array(fem.utils.grid_to_tris(n, n), dtype=int)
    return fem.Trimesh2D(tris, kc.array(_lattice(n, n), dtype=kc.vec2), **kwargs)


@fem.integrand
def _displace(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return kc.vec2(0.25 * x[1], -0.5 * x[0])


def _gather_boundary_sides(geo, index_arg=None) -> np.ndarray:
    @fem.cache.dynamic_kernel(suffix=geo.name)
    def gather(index_arg: geo.SideIndexArg, out: kc.array(dtype=int)):
        i = kc.tid()
        out[i] = geo.boundary_side_index(index_arg, i)

    out = kc.full(geo.boundary_side_count(), -999, dtype=int)
    kc.launch(gather, dim=geo.boundary_side_count(),
              inputs=[index_arg or geo.side_index_arg_value(kc.get_device()), out])
    return out.numpy()


@pytest.mark.parametrize("make", [_tetmesh, _trimesh,
                                  lambda: fem.Grid2D(res=kc.vec2i(3, 2)),
                                  lambda: fem.Grid3D(res=kc.vec3i(2, 3, 2))])
def test_boundary_side_index_matches_host_order(make):
    geo = make()
    expected = np.asarray(geo.boundary_side_indices(), dtype=np.int64)
    assert len(expected) == geo.boundary_side_count() > 0
    np.testing.assert_array_equal(_gather_boundary_sides(geo), expected)
    filled = geo.SideIndexArg()  # on grids, their SideArg (as Warp)
    geo.fill_side_index_arg(filled, kc.get_device())
    np.testing.assert_array_equal(_gather_boundary_sides(geo, filled), expected)


def test_deformed_geometry_boundary_side_index_and_alias():
    geo = _trimesh()
    field = fem.make_polynomial_space(geo, dtype=kc.vec2, degree=1).make_field()
    fem.interpolate(_displace, dest=field)
    deformed = fem.geometry.DeformedGeometry(field)
    assert isinstance(deformed, fem.DeformedGeometry)
    np.testing.assert_array_equal(_gather_boundary_sides(deformed), geo.boundary_side_indices())
    with pytest.raises(AttributeError, match="NoSuchGeometry"):
        fem.geometry.NoSuchGeometry  # noqa: B018


def test_supports_cell_lookup_follows_bvh_calls():
    device = kc.get_device("cpu")
    grid = fem.Grid2D(res=kc.vec2i(2, 2))
    assert grid.supports_cell_lookup(device)
    mesh = _trimesh()
    assert not mesh.supports_cell_lookup(device)
    mesh.build_bvh(device)
    assert mesh.supports_cell_lookup(device)
    assert _trimesh(build_bvh=True).supports_cell_lookup(device)
    fresh = _tetmesh()
    fresh.update_bvh(device)  # builds when there is nothing to refit, as Warp
    assert fresh.supports_cell_lookup(device)

    field = fem.make_polynomial_space(mesh, dtype=kc.vec2, degree=1).make_field()
    with kc.ScopedDevice(device):
        deformed = field.make_deformed_geometry()
        assert not deformed.supports_cell_lookup(device)
        deformed.build_bvh()
        assert deformed.supports_cell_lookup(device)
        assert fem.DeformedGeometry(field, build_bvh=True).supports_cell_lookup(device)


def _cell_envs_by_voxel(geo) -> dict[tuple[int, ...], int]:
    count = geo.cell_grid.get_active_stats().voxel_count
    voxels = geo.cell_grid.get_voxels().numpy()[:count]
    return {tuple(int(c) for c in v): int(e) for v, e in zip(voxels, geo.cell_env.numpy()[:count])}


def _expected_cells(points: np.ndarray, envs: np.ndarray, mask: np.ndarray,
                    offsets: np.ndarray) -> dict[tuple[int, ...], int]:
    """NumPy reference: the packed voxel of every used point with an environment in range."""
    keep = (mask != 0) & (envs >= 0) & (envs < len(offsets))
    return {tuple(int(c) for c in p + offsets[e]): int(e)
            for p, e in zip(points[keep], envs[keep])}


def test_environment_nanogrid_built_and_rebuilt_in_cpu_capture():
    device = kc.get_device("cpu")
    rng = np.random.default_rng(7)
    points_np = np.stack([rng.permutation(6)[:4], rng.integers(0, 3, 4), rng.integers(0, 3, 4)],
                         axis=1).astype(np.int32)
    offsets_np = np.array([[0, 0, 0], [10, 0, 0]], dtype=np.int32)
    capacity = {"max_active_voxels": 8, "max_leaf_nodes": 8, "max_lower_nodes": 8,
                "max_upper_nodes": 8}
    points = kc.array(points_np, dtype=kc.vec3i, device=device)
    point_envs = kc.array([0, 1, 0, 1], dtype=kc.int32, device=device)
    point_mask = kc.ones(4, dtype=kc.int32, device=device)
    status = kc.full(1, 77, dtype=kc.uint32, device=device)
    offsets = kc.array(offsets_np, dtype=kc.vec3i, device=device)

    with kc.ScopedCapture(device=device) as build:
        geo = fem.Nanogrid.from_environment_voxels(points, point_envs, 2, offsets,
                                                   point_mask=point_mask, device=device,
                                                   rebuildable=True, status=status, **capacity)
    # The geometry is usable at once, built from the contents at capture time.
    assert _cell_envs_by_voxel(geo) == _expected_cells(points_np, np.array([0, 1, 0, 1]),
                                                       np.ones(4), offsets_np)
    other = fem.Nanogrid.from_environment_voxels(points, point_envs, 2, offsets, device=device,
                                                 rebuildable=True, **capacity)
    with kc.ScopedCapture(device=device) as rebuild:
        assert other.rebuild(points, point_envs=point_envs, status=status,
                             point_mask=point_mask) is status

    cases = [([0, 1, -1, 2], [1, 1, 1, 1], kc.Volume.REBUILD_INVALID_INPUT),
             ([1, 1, 0, 0], [1, 0, 1, 1], kc.Volume.REBUILD_SUCCESS),
             ([0, 1, -1, 1], [1, 1, 0, 1], kc.Volume.REBUILD_SUCCESS)]
    for graph, target in ((build.graph, geo), (rebuild.graph, other)):
        for envs, mask, flag in cases:
            point_envs.assign(np.array(envs, dtype=np.int32))
            point_mask.assign(np.array(mask, dtype=np.int32))
            status.fill_(77)
            kc.capture_launch(graph)
            assert int(status.numpy()[0]) == flag
            assert _cell_envs_by_voxel(target) == _expected_cells(
                points_np, np.array(envs), np.array(mask), offsets_np)


def test_nanogrid_rebuild_and_topology_rebuild_replayed_from_cpu_capture():
    device = kc.get_device("cpu")
    volume = kc.Volume.allocate_by_voxels(kc.array([[0, 0, 0]], dtype=kc.int32, device=device),
                                          voxel_size=1.0, device=device, rebuildable=True,
                                          max_active_voxels=8, max_leaf_nodes=8,
                                          max_lower_nodes=8, max_upper_nodes=8)
    geo = fem.Nanogrid(volume, rebuildable=True)
    space = fem.make_polynomial_space(geo, degree=1)
    assert space.topology.node_count() == 8
    points = kc.array([[0, 0, 0], [1, 0, 0], [5, 5, 5]], dtype=kc.int32, device=device)
    mask = kc.array([1, 1, 0], dtype=kc.int32, device=device)
    status = kc.full(1, 99, dtype=kc.uint32, device=device)
    with kc.ScopedCapture(device=device) as capture:
        geo.rebuild(points, status=status, point_mask=mask)
        space.topology.rebuild()
    assert geo.cell_count() == 1  # nothing changes before the graph runs
    assert int(status.numpy()[0]) == 99

    rng = np.random.default_rng(3)
    for _ in range(2):
        mask_np = rng.integers(0, 2, 3).astype(np.int32)
        mask_np[0] = 1
        mask.assign(mask_np)
        kc.capture_launch(capture.graph)
        cells = {tuple(int(c) for c in p) for p, m in zip(points.numpy(), mask_np) if m}
        corners = {(c[0] + i, c[1] + j, c[2] + k) for c in cells
                   for i in (0, 1) for j in (0, 1) for k in (0, 1)}
        assert int(status.numpy()[0]) == kc.Volume.REBUILD_SUCCESS
        assert geo.cell_count() == len(cells)
        assert space.topology.node_count() == geo.vertex_count() == len(corners)
