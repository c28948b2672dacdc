"""Sparse grids that follow particles: `fem.Nanogrid(rebuildable=True)` and its `rebuild`,
space topologies rebuilt after it, fields on part of a space (`make_field(partition)`), a
PIC quadrature moved to a partition's cells; and Warp's `example_apic_fluid.py`, which uses
them all, run with kernelc and in a Warp subprocess."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from tests import fem_harness as H
from tests import fem_mesh_checks as C
from tests import fem_mesh_programs as M


@fem.integrand
def sample_field(s: fem.Sample, domain: fem.Domain, u: fem.Field,
                 values: kc.array(dtype=float), grads: kc.array(dtype=kc.vec3)):
    values[s.qp_index] = u(s)
    grads[s.qp_index] = fem.grad(u, s)


@fem.integrand
def affine(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return 1.0 + 2.0 * x[0] - 0.5 * x[1] + 0.25 * x[2]


@fem.integrand
def particle_mass(s: fem.Sample, v: fem.Field):
    return v(s)


def _stiffness(geo) -> tuple[np.ndarray, np.ndarray]:
    """The Q1 stiffness matrix of `geo` (dense) and the space's node positions."""
    space = fem.make_polynomial_space(geo, degree=1)
    return C.dense_stiffness(space), space.node_positions().numpy()


def test_rebuilt_nanogrid_is_the_nanogrid_of_the_new_points(rng):
    points = rng.uniform(-1.0, 1.0, (300, 3)).astype(np.float32)
    volume = kc.Volume.allocate_by_voxels(kc.array(points, dtype=kc.vec3), voxel_size=0.25,
                                          rebuildable=True, max_active_voxels=2000)
    geo = fem.Nanogrid(volume, rebuildable=True)
    space = fem.make_polynomial_space(geo, degree=1)  # made and used before the rebuild
    before = C.dense_stiffness(space)
    space.make_field()
    volume_id = volume.id
    status = kc.zeros(1, dtype=kc.uint32)
    moved = (points[:200] * np.float32(1.5) + np.float32(0.3)).astype(np.float32)
    assert geo.rebuild(kc.array(moved, dtype=kc.vec3), status=status) is status
    assert status.numpy()[0] == kc.Volume.REBUILD_SUCCESS and volume.id == volume_id
    space.topology.rebuild()
    fresh = fem.Nanogrid(kc.Volume.allocate_by_voxels(kc.array(moved, dtype=kc.vec3),
                                                      voxel_size=0.25))
    assert (geo.cell_count(), geo.vertex_count(), geo.side_count(), geo.edge_count(),
            geo.boundary_side_count()) == (fresh.cell_count(), fresh.vertex_count(),
                                           fresh.side_count(), fresh.edge_count(),
                                           fresh.boundary_side_count())
    want, want_positions = _stiffness(fresh)
    np.testing.assert_array_equal(space.node_positions().numpy(), want_positions)
    after = C.dense_stiffness(space)
    assert after.shape != before.shape
    np.testing.assert_allclose(after, want, atol=1e-5)
    field = space.make_field()
    fem.interpolate(affine, dest=field)
    np.testing.assert_allclose(field.dof_values.numpy(),
                               1.0 + want_positions @ [2.0, -0.5, 0.25], rtol=1e-5)
    # the measure of the rebuilt cells
    cells = fem.integrate(M.one_form, domain=fem.Cells(geo))
    assert cells == pytest.approx(fresh.cell_count() * 0.25 ** 3, rel=1e-5)


def _partition(geo, keep: np.ndarray):
    return fem.ExplicitGeometryPartition(geo, kc.array(keep.astype(np.int32)),
                                         max_cell_count=geo.cell_count(), max_side_count=0)


def test_fields_on_part_of_a_space(rng):
    res = 4
    geo = fem.Grid3D(res=kc.vec3i(res, res, res))
    space = fem.make_polynomial_space(geo, degree=2)
    full = space.make_field()
    fem.interpolate(affine, dest=full)
    keep = rng.random(geo.cell_count()) < 0.4
    partition = fem.make_space_partition(space.topology, geometry_partition=_partition(
        geo, keep), with_halo=False, max_node_count=space.node_count())
    part = space.make_field(partition)
    assert part.dof_values.shape == (partition.node_count(),)
    part.dof_values.assign(full.dof_values.numpy()[partition.space_node_indices().numpy()])
    # Where every node of a cell is in the partition, the two fields agree; elsewhere the
    # partial field is the full one with the nodes outside the partition set to zero.
    outside = np.setdiff1d(np.arange(space.node_count()),
                           partition.space_node_indices().numpy())
    zeroed = space.make_field()
    zeroed.dof_values.assign(np.where(np.isin(np.arange(space.node_count()), outside), 0.0,
                                      full.dof_values.numpy()).astype(np.float32))
    quadrature = fem.RegularQuadrature(fem.Cells(geo), order=2)
    n = quadrature.total_point_count()
    got, want = {}, {}
    for field, out in ((part, got), (zeroed, want)):
        values, grads = kc.full(n, np.nan, dtype=float), kc.full(n, kc.vec3(np.nan),
                                                                  dtype=kc.vec3)
        fem.interpolate(sample_field, at=quadrature, fields={"u": field},
                        values={"values": values, "grads": grads})
        out["values"], out["grads"] = values.numpy(), grads.numpy()
    np.testing.assert_allclose(got["values"], want["values"], atol=1e-5)
    np.testing.assert_allclose(got["grads"], want["grads"], atol=1e-4)
    inside = np.repeat(keep, n // geo.cell_count())  # points of the partition's cells
    full_values = kc.full(n, np.nan, dtype=float)
    fem.interpolate(sample_field, at=quadrature, fields={"u": full},
                    values={"values": full_values, "grads": kc.zeros(n, dtype=kc.vec3)})
    np.testing.assert_allclose(got["values"][inside], full_values.numpy()[inside], atol=1e-5)
    with pytest.raises(ValueError, match="this space's topology"):
        fem.make_polynomial_space(geo, degree=1).make_field(partition)


def test_pic_quadrature_moves_to_a_partition(rng):
    geo = fem.Grid2D(res=kc.vec2i(6, 5))
    particles = rng.uniform(0.0, 1.0, (400, 2)).astype(np.float32)
    measures = kc.array(rng.uniform(0.5, 2.0, 400).astype(np.float32) * 1e-4)
    pic = fem.PicQuadrature(fem.Cells(geo), kc.array(particles, dtype=kc.vec2), measures)
    mask = kc.zeros(geo.cell_count(), dtype=int)
    pic.fill_element_mask(mask)
    partition_mask = (rng.random(geo.cell_count()) < 0.5) & (mask.numpy() != 0)
    partition = _partition(geo, partition_mask)
    domain = fem.Cells(partition)
    pic.domain = domain
    # One value per cell (a piecewise-constant space): the partition's cells keep what
    # they had over the whole geometry (particles stay binned by geometry cell; a new
    # quadrature on the partition would move particles near it into its cells instead).
    space = fem.make_polynomial_space(geo, degree=0, discontinuous=True)
    whole = fem.integrate(particle_mass, quadrature=fem.PicQuadrature(
        fem.Cells(geo), kc.array(particles, dtype=kc.vec2), measures),
        fields={"v": fem.make_test(space)}, output_dtype=float).numpy()
    moved = fem.integrate(particle_mass, quadrature=pic, fields={"v": fem.make_test(
        space, domain=domain)}, output_dtype=float).numpy()
    cells = np.flatnonzero(partition_mask)
    # each cell's value is the measure of its particles
    cell_of = np.minimum((particles * [6, 5]).astype(int), [5, 4])
    per_cell = np.bincount(cell_of[:, 0] * 5 + cell_of[:, 1], weights=measures.numpy(),
                           minlength=30)
    np.testing.assert_allclose(whole, per_cell, rtol=1e-5)
    np.testing.assert_allclose(np.sort(moved[moved != 0]), np.sort(per_cell[cells]),
                               rtol=1e-5)
    other = fem.Grid2D(res=kc.vec2i(6, 5))
    with pytest.raises(RuntimeError, match="same base geometry"):
        pic.domain = fem.Cells(other)


# ---- Warp's example_apic_fluid ----------------------------------------------------------------

FRAMES = 25
_WARP_SCRIPT = f"""
example = importlib.import_module("warp.examples.fem.example_apic_fluid").Example(
    quiet=True, stage_path=None, voxel_size=1.0, use_cuda_graph=False)
for frame in range({FRAMES}):
    example.step()
results["positions"] = example.state_0.particle_q.numpy()
results["velocities"] = example.state_0.particle_qd.numpy()
"""


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    with H.started_warp_run(tmp_path_factory, "warp_fem_apic", Path(M.__file__),
                            {"apic": _WARP_SCRIPT}, timeout=900) as run:
        yield run


def test_example_apic_fluid_matches_warp(tmp_path_factory, warp_run):
    modules = {"utils": "kca_fem_example_utils",
               "example_apic_fluid": "kca_fem_example_apic_fluid"}
    with H.kernelc_examples(tmp_path_factory, "kc_fem_apic", modules) as loaded:
        example = loaded["kca_fem_example_apic_fluid"].Example(
            quiet=True, stage_path=None, voxel_size=1.0, use_cuda_graph=False)
        for _ in range(FRAMES):
            example.step()
        positions = example.state_0.particle_q.numpy()
        velocities = example.state_0.particle_qd.numpy()
    want = warp_run.results()
    assert positions.shape == want["positions"].shape == (9261, 3)
    # By frame 25 the fluid has fallen into the bowl and the pressure solve acts.
    assert np.abs(want["velocities"]).max() > 3.0
    np.testing.assert_allclose(positions, want["positions"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(velocities, want["velocities"], rtol=0, atol=1e-4)
