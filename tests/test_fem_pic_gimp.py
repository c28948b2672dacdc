"""GIMP-style `fem.PicQuadrature`: particles overlapping several cells, given as 2-d arrays
(particles, cells per particle) of cells, coordinates and fractions. Its bins and weights,
integrals and interpolation against NumPy sums over the (particle, cell) overlaps, error
paths, and the same program run with kernelc and in a Warp subprocess."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from tests import fem_harness as H
from tests import fem_pic_gimp_programs as P
from tests.conftest import poisoned

RES = np.array([4, 3])
LO, HI = np.array([0.2, -0.1]), np.array([1.4, 0.8])
H_CELL = (HI - LO) / RES


@fem.integrand
def _poly(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return 1.0 + x[0] + 2.0 * x[1] * x[1]


@fem.integrand
def _source(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    return (1.0 + domain(s)[0]) * v(s)


@fem.integrand
def _mass(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


@fem.integrand
def _value(s: fem.Sample, domain: fem.Domain, f: fem.Field):
    return f(s) + domain(s)[1]


@fem.integrand
def _record(s: fem.Sample, weights: kc.array(dtype=float), cells: kc.array(dtype=int)):
    kc.atomic_add(weights, s.qp_index, s.qp_weight)
    kc.atomic_add(cells, s.qp_index, s.element_index + 1)


def _grid() -> fem.Grid2D:
    return fem.Grid2D(res=kc.vec2i(*RES), bounds_lo=kc.vec2(*LO), bounds_hi=kc.vec2(*HI))


def _particles(rng, count: int, per_particle: int, cell_count: int) -> tuple:
    """(cells, coordinates, fractions, measures): distinct cells in a row, about one entry in
    five left out (-1), each particle's fractions over its cells summing to one."""
    cells = np.stack([rng.choice(cell_count, per_particle, replace=False)
                      for _ in range(count)])
    cells[rng.uniform(size=cells.shape) < 0.2] = -1
    coords = np.zeros((count, per_particle, 3))
    coords[..., :2] = rng.uniform(0.02, 0.98, size=(count, per_particle, 2))
    fractions = rng.uniform(0.2, 1.0, size=cells.shape) * (cells >= 0)
    fractions /= np.maximum(fractions.sum(axis=1, keepdims=True), 1e-30)
    fractions[cells < 0] = rng.uniform(2.0, 3.0, size=(cells < 0).sum())  # never read
    measures = rng.uniform(0.5, 1.5, size=count) / count
    return cells, coords, fractions, measures


def _arrays(cells, coords, fractions=None) -> tuple:
    arrays = (kc.array(cells.astype(np.int32), dtype=int),
              kc.array(coords.astype(np.float32), dtype=kc.vec3))
    if fractions is None:
        return arrays
    return (*arrays, kc.array(fractions.astype(np.float32), dtype=float))


def _entries(cells, coords, fractions, measures, cell_measure) -> dict:
    """Warp's points: the entries with a cell, by cell then particle, with their weights."""
    per = cells.shape[1]
    flat = cells.reshape(-1)
    order = [i for i in np.argsort(flat, kind="stable") if flat[i] >= 0]
    counts = np.bincount(flat[order], minlength=RES.prod())
    particle = np.array(order) // per
    bins = flat[order]
    if measures is None:
        base = 1.0 / counts[bins]
    else:
        base = measures[particle] / cell_measure
    return {"bins": bins, "particle": particle, "counts": counts,
            "coords": coords.reshape(-1, 3)[order],
            "weights": base * fractions.reshape(-1)[order]}


def _world(bins: np.ndarray, coords: np.ndarray) -> np.ndarray:
    ij = np.stack([bins // RES[1], bins % RES[1]], axis=1)
    return LO + (ij + coords[:, :2]) * H_CELL


def _hats(x: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """(points, nodes) values of the Q1 basis functions at `x`."""
    d = np.abs(x[:, None, :] - nodes[None, :, :]) / H_CELL
    return np.prod(np.maximum(0.0, 1.0 - d), axis=-1)


def test_gimp_bins_weights_and_counts(rng):
    geo = _grid()
    cells, coords, fractions, measures = _particles(rng, 40, 4, geo.cell_count())
    pic = fem.PicQuadrature(fem.Cells(geo), _arrays(cells, coords, fractions),
                            measures=kc.array(measures.astype(np.float32), dtype=float))
    want = _entries(cells, coords, fractions, measures, H_CELL.prod())
    assert pic.total_point_count() == 40
    assert pic.evaluation_point_count() == len(want["bins"]) == (cells >= 0).sum()
    assert pic.max_points_per_element() == want["counts"].max()
    assert pic.active_cell_count() == np.count_nonzero(want["counts"])
    np.testing.assert_array_equal(pic.cell_particle_offsets.numpy(),
                                  np.concatenate([[0], np.cumsum(want["counts"])]))
    np.testing.assert_array_equal(pic.cell_particle_indices.numpy(), want["particle"])
    np.testing.assert_allclose(pic._cell_particle_coords.numpy(), want["coords"], rtol=1e-6)
    np.testing.assert_allclose(pic._cell_particle_fraction.numpy(), want["weights"], rtol=1e-5)
    mask = poisoned(geo.cell_count(), np.int32)
    pic.fill_element_mask(mask)
    np.testing.assert_array_equal(mask.numpy(), (want["counts"] > 0).astype(np.int32))
    pairs = pic.evaluation_point_element_indices().numpy()
    np.testing.assert_array_equal(pairs[:, 0], want["bins"])
    starts = pic.cell_particle_offsets.numpy()[want["bins"]]
    np.testing.assert_array_equal(pairs[:, 1], np.arange(len(want["bins"])) - starts)
    # a particle's last point in evaluation order writes its interpolated value
    writes = pic.point_writes().numpy()
    last = {p: i for i, p in enumerate(want["particle"])}
    np.testing.assert_array_equal(np.flatnonzero(writes), sorted(last.values()))


def test_gimp_integrals_match_numpy_sums(rng):
    geo = _grid()
    cells, coords, fractions, measures = _particles(rng, 60, 3, geo.cell_count())
    domain = fem.Cells(geo)
    pic = fem.PicQuadrature(domain, _arrays(cells, coords, fractions),
                            measures=kc.array(measures.astype(np.float32), dtype=float))
    want = _entries(cells, coords, fractions, measures, H_CELL.prod())
    x = _world(want["bins"], want["coords"])
    amount = want["weights"] * H_CELL.prod()  # each overlap's share of its particle's measure
    # the shares of a particle split among cells add up to its measure
    placed = (cells >= 0).any(axis=1)
    np.testing.assert_allclose(np.bincount(want["particle"], amount, minlength=60)[placed],
                               measures[placed], rtol=1e-5)
    total = fem.integrate(_poly, quadrature=pic)
    np.testing.assert_allclose(total, np.sum(amount * (1 + x[:, 0] + 2 * x[:, 1] ** 2)),
                               rtol=1e-5)

    space = fem.make_polynomial_space(geo, degree=1)
    phi = _hats(x, space.node_positions().numpy().astype(np.float64))
    rhs = poisoned(space.node_count(), np.float32)
    fem.integrate(_source, quadrature=pic, fields={"v": fem.make_test(space, domain=domain)},
                  output=rhs)
    np.testing.assert_allclose(rhs.numpy(), phi.T @ (amount * (1 + x[:, 0])), rtol=1e-5,
                               atol=1e-7)
    mass = fem.integrate(_mass, quadrature=pic, fields={
        "u": fem.make_trial(space, domain=domain), "v": fem.make_test(space, domain=domain)})
    dense = np.zeros((space.node_count(), space.node_count()))
    n = mass.nnz_sync()
    rows = np.repeat(np.arange(mass.nrow), np.diff(mass.offsets.numpy()[: mass.nrow + 1]))
    dense[rows[:n], mass.columns.numpy()[:n]] = mass.values.numpy()[:n].reshape(-1)
    np.testing.assert_allclose(dense, phi.T @ (amount[:, None] * phi), rtol=0, atol=1e-7)

    # without measures: the points of a cell share it, each times its fraction
    shared = fem.PicQuadrature(domain, _arrays(cells, coords, fractions))
    plain = _entries(cells, coords, fractions, None, H_CELL.prod())
    np.testing.assert_allclose(shared._cell_particle_fraction.numpy(), plain["weights"],
                               rtol=1e-5)
    total = fem.integrate(_poly, quadrature=shared)
    np.testing.assert_allclose(total, H_CELL.prod() * np.sum(
        plain["weights"] * (1 + x[:, 0] + 2 * x[:, 1] ** 2)), rtol=1e-5)


def test_gimp_interpolation_at_particles(rng):
    geo = _grid()
    cells, coords, fractions, measures = _particles(rng, 30, 3, geo.cell_count())
    cells[3] = -1  # a particle in no cell: left untouched
    domain = fem.Cells(geo)
    pic = fem.PicQuadrature(domain, _arrays(cells, coords, fractions),
                            measures=kc.array(measures.astype(np.float32), dtype=float))
    want = _entries(cells, coords, fractions, measures, H_CELL.prod())
    x = _world(want["bins"], want["coords"])
    space = fem.make_polynomial_space(geo, degree=1)
    nodal = rng.uniform(-1.0, 1.0, size=space.node_count())
    field = space.make_field()
    field.dof_values = kc.array(nodal.astype(np.float32), dtype=float)
    at_points = _hats(x, space.node_positions().numpy().astype(np.float64)) @ nodal + x[:, 1]

    values = poisoned(30, np.float32)
    fem.interpolate(_value, dest=values, at=pic, fields={"f": field})
    expected = np.full(30, np.nan)
    for k, p in enumerate(want["particle"]):  # the particle's last point, in its highest cell
        expected[p] = at_points[k]
    assert np.isnan(values.numpy()[3])
    np.testing.assert_allclose(values.numpy(), expected, rtol=1e-5, atol=1e-6)

    # every overlap is visited, with its weight and cell
    weights, visited = kc.zeros(30, dtype=float), kc.zeros(30, dtype=int)
    fem.interpolate(_record, at=pic, values={"weights": weights, "cells": visited})
    np.testing.assert_allclose(weights.numpy(), np.bincount(
        want["particle"], want["weights"], minlength=30), rtol=1e-5)
    np.testing.assert_array_equal(visited.numpy(), np.bincount(
        want["particle"], want["bins"] + 1, minlength=30))


def test_gimp_domain_element_indices_and_partitions(rng):
    geo = _grid()
    mask = (rng.uniform(size=geo.cell_count()) > 0.4).astype(np.int32)
    partition = fem.ExplicitGeometryPartition(geo, kc.array(mask, dtype=int))
    domain = fem.Cells(partition)
    inside = domain.element_indices()
    cells, coords, fractions, measures = _particles(rng, 25, 3, geo.cell_count())
    entries = _entries(cells, coords, fractions, measures, H_CELL.prod())
    keep = mask[entries["bins"]] > 0
    x = _world(entries["bins"], entries["coords"])
    poly = 1 + x[:, 0] + 2 * x[:, 1] ** 2
    want = np.sum((entries["weights"] * H_CELL.prod() * poly)[keep])
    # geometry cells, those outside the partition not integrated
    pic = fem.PicQuadrature(domain, _arrays(cells, coords, fractions),
                            measures=kc.array(measures.astype(np.float32), dtype=float))
    np.testing.assert_allclose(fem.integrate(_poly, quadrature=pic), want, rtol=1e-5)
    # cells given as indices in the domain
    to_domain = np.full(geo.cell_count(), -1)
    to_domain[inside] = np.arange(len(inside))
    local = np.where(cells >= 0, to_domain[np.maximum(cells, 0)], -1)
    by_domain = fem.PicQuadrature(domain, _arrays(local, coords, fractions),
                                  measures=kc.array(measures.astype(np.float32), dtype=float),
                                  use_domain_element_indices=True)
    assert by_domain.evaluation_point_count() == keep.sum()
    assert len(by_domain.cell_particle_offsets.numpy()) == len(inside) + 1
    np.testing.assert_allclose(fem.integrate(_poly, quadrature=by_domain), want, rtol=1e-5)


def test_gimp_without_fractions_and_warps_example():
    # (cells, coordinates) of 2-d arrays: each overlap weighs the particle's measure
    geo = fem.Grid2D(res=kc.vec2i(2))
    cells = np.array([[0, 1], [2, 3]])
    coords = np.array([[[0.25, 0.25, 0], [0.75, 0.25, 0]], [[0.25, 0.75, 0], [0.75, 0.75, 0]]])
    pic = fem.PicQuadrature(fem.Cells(geo), _arrays(cells, coords),
                            measures=kc.array([0.1, 0.2], dtype=float))
    np.testing.assert_allclose(pic._cell_particle_fraction.numpy(), [0.4, 0.4, 0.8, 0.8],
                               rtol=1e-6)
    np.testing.assert_array_equal(pic.cell_particle_indices.numpy(), [0, 0, 1, 1])
    # Warp's test_gimp_quadrature: halves of two particles in the four cells
    half = fem.PicQuadrature(fem.Cells(geo), _arrays(cells, coords, np.full((2, 2), 0.5)))
    assert (half.total_point_count(), half.evaluation_point_count(),
            half.max_points_per_element()) == (2, 4, 1)

    @fem.integrand
    def element_index(s: fem.Sample):
        return float(s.element_index)

    total = fem.integrate(element_index, quadrature=half)
    np.testing.assert_allclose(total, 0.5 * (0 + 1 + 2 + 3) / 4.0, rtol=1e-6)


def test_gimp_bad_shapes_raise():
    geo = fem.Grid2D(res=kc.vec2i(2))
    domain = fem.Cells(geo)
    cells = np.zeros((3, 2), dtype=np.int32)
    coords = np.zeros((3, 2, 3))
    with pytest.raises(ValueError, match="Cell index and coordinates arrays must have the same"):
        fem.PicQuadrature(domain, _arrays(cells, coords[:, :1]))
    with pytest.raises(ValueError, match="Cell index and coordinates arrays must have the same"):
        fem.PicQuadrature(domain, _arrays(cells, np.zeros((3, 3))))
    with pytest.raises(ValueError, match="Cell index, coordinates and fraction arrays"):
        fem.PicQuadrature(domain, (*_arrays(cells, coords), kc.zeros(3, dtype=float)))
    with pytest.raises(ValueError, match="Cell index, coordinates and fraction arrays"):
        fem.PicQuadrature(domain, _arrays(cells, coords, np.zeros((3, 3))))
    with pytest.raises(ValueError, match="Measures should be an 1d array"):
        fem.PicQuadrature(domain, _arrays(cells, coords), measures=kc.zeros(6, dtype=float))
    with pytest.raises(ValueError, match="1d array .* or a 2d array"):
        fem.PicQuadrature(domain, (np.zeros((3, 2, 2), dtype=np.int32), np.zeros((3, 2, 2, 3))))
    with pytest.raises(ValueError, match="positions must be an array, or a tuple"):
        fem.PicQuadrature(domain, (*_arrays(cells, coords, np.ones((3, 2))), cells))


# ---- the same program with Warp ----------------------------------------------------------------

_WARP_SCRIPT = """
from fem_pic_gimp_programs_warp import gimp_mesh
results.update(gimp_mesh())
"""


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    with H.started_warp_run(tmp_path_factory, "warp_fem_pic_gimp", Path(P.__file__),
                            {"gimp": _WARP_SCRIPT}, timeout=600) as run:
        yield run


def test_gimp_quadrature_matches_warp(warp_run):
    got = P.gimp_mesh()
    want = warp_run.results()
    H.assert_results_match(got, want)
    assert np.abs(want["interpolated"]).max() > 0.1 and want["mass.values"].size
