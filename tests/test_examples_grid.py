"""Smoke tests of the grid-based examples (SPH, DEM particles): physics, not just exit."""

from __future__ import annotations

import numpy as np

import kernelc as kc
from kernelc.examples import particles, sph
from tests.conftest import poisoned


def _sph_density_reference(pos: np.ndarray, fluid) -> np.ndarray:
    d2 = ((pos[:, None, :].astype(np.float64) - pos[None, :, :]) ** 2).sum(-1)
    w = np.clip(fluid.h ** 2 - d2, 0.0, None) ** 3 * (315.0 / (64.0 * np.pi * fluid.h ** 9))
    return fluid.mass * w.sum(1)


def test_sph_grid_holds_every_particle_once_and_density_matches_brute_force(rng):
    fluid = sph.make_fluid(0.05, (0.6, 0.5, 0.3))
    pos = (rng.random((700, 3)) * [0.6, 0.5, 0.3]).astype(np.float32)
    x = kc.array(pos, dtype=kc.vec3)
    grid = sph.NeighbourGrid(700, fluid, "cpu")
    grid.build(x)
    counts, starts, order = grid.counts.numpy(), grid.starts.numpy(), grid.index.numpy()[:700]
    assert counts.sum() == 700 and sorted(order) == list(range(700))
    np.testing.assert_array_equal(starts, np.concatenate([[0], np.cumsum(counts)[:-1]]))
    cells = grid.cell.numpy()[:700]
    assert (np.diff(cells) >= 0).all()  # sorted by cell ...
    for c in np.unique(cells)[:50]:  # ... and each cell's slots hold exactly its particles
        members = order[starts[c]:starts[c] + counts[c]]
        assert len(members) == counts[c] and (cells[starts[c]:starts[c] + counts[c]] == c).all()
    density, pressure = poisoned(700, np.float32), poisoned(700, np.float32)
    kc.launch(sph.compute_density, 700, [x, grid.index, grid.starts, grid.counts, fluid,
                                         density, pressure])
    np.testing.assert_allclose(density.numpy(), _sph_density_reference(pos, fluid), rtol=1e-4)


def test_sph_dam_break_stays_in_the_box_and_keeps_its_density():
    box = (0.6, 0.4, 0.2)
    result = sph.run(h=0.05, frames=6, substeps=10, verbose=False, box=box,
                     extent=(0.2, 0.25, 0.2))
    x = result["x"]
    assert len(x) == result["count"] and np.isfinite(x).all() and np.isfinite(result["v"]).all()
    assert (x >= 0.0).all() and (x <= np.array(box)).all()
    # Mass is carried by particles: none lost, and the fluid neither explodes nor collapses.
    rest = 1000.0
    assert all(0.5 * rest < m < 1.2 * rest for m in result["mean_density"])
    assert max(result["max_density"]) < 2.0 * rest
    assert x[:, 0].max() > 0.2  # the dam has started to flow outwards


def _dem_forces_reference(x, v, radius, box, c) -> np.ndarray:
    def contact(n, rel, depth):
        vn = (n * rel).sum(-1, keepdims=True)
        vt = rel - n * vn
        fn = np.maximum(c.k_normal * depth - c.k_damp * vn, 0.0)
        ft = np.linalg.norm(vt, axis=-1, keepdims=True)
        scale = np.where(ft > 0, np.minimum(c.k_friction * ft, c.mu * fn) / np.where(ft > 0, ft, 1), 0)
        return n * fn - vt * scale

    x, v = x.astype(np.float64), v.astype(np.float64)
    d = x[:, None, :] - x[None, :, :]
    dist = np.linalg.norm(d, axis=-1, keepdims=True)
    depth = 2 * radius - dist
    touching = (depth > 0) & (dist > 0)
    n = np.where(touching, d / np.where(dist > 0, dist, 1), 0)
    f = np.where(touching, contact(n, v[:, None, :] - v[None, :, :], depth), 0).sum(1)
    for axis in range(3):
        for depth, sign in ((radius - x[:, axis], 1.0), (x[:, axis] + radius - box, -1.0)):
            n = np.zeros_like(x)
            n[:, axis] = sign
            f += np.where(depth[:, None] > 0, contact(n, v, depth[:, None]), 0)
    return f


def test_dem_contact_forces_match_brute_force(rng):
    radius, box, count = 0.05, 0.5, 300
    c = particles.Contact()
    c.k_normal, c.k_damp, c.k_friction, c.mu = 2.0e4, 20.0, 20.0, 0.5
    pos = (rng.random((count, 3)) * (box + 0.04) - 0.02).astype(np.float32)  # some in walls
    vel = rng.uniform(-1, 1, (count, 3)).astype(np.float32)
    x, v = kc.array(pos, dtype=kc.vec3), kc.array(vel, dtype=kc.vec3)
    grid = kc.HashGrid(16, 16, 16)
    grid.build(x, radius)
    forces = kc.array(np.full((count, 3), np.nan, np.float32), dtype=kc.vec3)
    kc.launch(particles.apply_forces, count, [grid.id, x, v, forces, radius, box, c])
    ref = _dem_forces_reference(pos, vel, radius, box, c)
    np.testing.assert_allclose(forces.numpy(), ref, rtol=2e-3, atol=2e-2)


def test_dem_particles_stay_in_the_box_and_settle():
    result = particles.run(count=512, frames=30, substeps=8, verbose=False)
    x = result["x"]
    assert np.isfinite(x).all() and np.isfinite(result["v"]).all()
    radius = 0.02
    assert min(result["lowest"]) > -radius and max(result["highest"]) < 1.0 + radius
    energy = result["energy"]
    assert max(energy[-5:]) < max(energy)  # the fall's energy is dissipated by contacts
