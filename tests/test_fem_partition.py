"""Geometry partitions, space partitions, domains over partitions and `PicQuadrature`:
partition element lists against NumPy, node numbering against Warp's (pinned values),
domain-decomposed assembly against whole-geometry assembly, particle quadrature against
NumPy sums over particles, the indexed-array helpers the examples use, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem

RNG_SEED = 4321


@fem.integrand
def _stiffness(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    x = domain(s)
    return (1.0 + x[0] * x[1]) * kc.dot(fem.grad(u, s), fem.grad(v, s)) + u(s) * v(s)


@fem.integrand
def _source(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    x = domain(s)
    return (kc.sin(3.0 * x[0]) + x[1]) * v(s)


@fem.integrand
def _mass(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


@fem.integrand
def _side_jumps(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    return fem.jump(u, s) * fem.jump(v, s) + fem.average(u, s) * fem.average(v, s) * (
        1.0 + domain(s)[0])


@fem.integrand
def _position_sum(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return 1.0 + x[0] + 2.0 * x[1] * x[1]


@fem.integrand
def _particle_source(s: fem.Sample, v: fem.Field, particle_values: kc.array(dtype=float)):
    return particle_values[s.qp_index] * v(s)


# ---- geometries and references -----------------------------------------------------------------


def _trimesh(res: tuple[int, int] = (4, 3)) -> fem.Trimesh2D:
    rng = np.random.default_rng(RNG_SEED)
    x, y = np.meshgrid(np.linspace(0.0, 1.0, res[0] + 1), np.linspace(0.0, 1.0, res[1] + 1),
                       indexing="ij")
    pts = np.stack([x.ravel(), y.ravel()], axis=1)
    pts += rng.uniform(-0.1, 0.1, size=pts.shape) / max(res)
    return fem.Trimesh2D(kc.array(fem.utils.grid_to_tris(*res), dtype=int),
                         kc.array(pts, dtype=kc.vec2))


def _reference_elements(geo: fem.Geometry, cells: np.ndarray) -> dict[str, np.ndarray]:
    mask = np.zeros(geo.cell_count(), dtype=bool)
    mask[cells] = True
    sides = np.arange(geo.side_count())
    inner, outer = geo.side_cells(sides)
    return {"cells": np.flatnonzero(mask), "sides": sides[mask[inner]],
            "boundary_sides": sides[mask[inner] & (inner == outer)],
            "frontier_sides": sides[mask[inner] != mask[outer]]}


def _dense(matrix, n: int) -> np.ndarray:
    nnz = matrix.nnz_sync()
    offsets = matrix.offsets.numpy()[: matrix.nrow + 1]
    rows = np.repeat(np.arange(matrix.nrow), np.diff(offsets))
    out = np.zeros((n, n))
    np.add.at(out, (rows, matrix.columns.numpy()[:nnz]), matrix.values.numpy()[:nnz])
    return out


def _scatter(local: np.ndarray, nodes: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros((n, n)) if local.ndim == 2 else np.zeros(n)
    if local.ndim == 2:
        np.add.at(out, (nodes[:, None], nodes[None, :]), local)
    else:
        np.add.at(out, nodes, local)
    return out


# ---- geometry partitions -----------------------------------------------------------------------


@pytest.mark.parametrize("mesh", ["grid", "tri"])
def test_partition_elements_match_numpy(mesh):
    geo = fem.Grid2D(res=kc.vec2i(5, 4)) if mesh == "grid" else _trimesh()
    rng = np.random.default_rng(RNG_SEED)
    count = geo.cell_count()
    per = (count + 2) // 3
    for rank in range(3):
        part = fem.LinearGeometryPartition(geo, rank, 3)
        want = _reference_elements(geo, np.arange(rank * per, min((rank + 1) * per, count)))
        for kind, cells in want.items():
            np.testing.assert_array_equal(part.host_element_indices(kind), cells, err_msg=kind)
        assert part.cell_count() == len(want["cells"])
        assert fem.Cells(part).element_count() == len(want["cells"])
        np.testing.assert_array_equal(fem.Sides(part).element_indices(), want["sides"])
        np.testing.assert_array_equal(fem.BoundarySides(part).element_indices(),
                                      want["boundary_sides"])
        np.testing.assert_array_equal(fem.FrontierSides(part).element_indices(),
                                      want["frontier_sides"])
    mask = (rng.uniform(size=count) > 0.5).astype(np.int32)
    part = fem.ExplicitGeometryPartition(geo, kc.array(mask, dtype=int))
    for kind, cells in _reference_elements(geo, np.flatnonzero(mask)).items():
        np.testing.assert_array_equal(part.host_element_indices(kind), cells, err_msg=kind)
    np.testing.assert_array_equal(part.partition_cell_indices().numpy()[np.flatnonzero(mask)],
                                  np.arange(mask.sum()))
    part.rebuild(kc.array(1 - mask, dtype=int))
    np.testing.assert_array_equal(fem.Cells(part).element_indices(), np.flatnonzero(1 - mask))
    assert fem.FrontierSides(geo).element_count() == 0


# Warp 1.19's numbering on a 3 x 2 grid, Q2: (counts), (nodes with halo, counts), (nodes
# without halo, counts), for rank 0 of 2 and for the cells of mask [1, 0, 0, 1, 1, 0].
_WARP_LINEAR = ((3, 10, 5, 3),
                ([0, 1, 5, 6, 2, 3, 4, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 20, 21, 22, 18,
                  19, 23, 24, 25, 26, 27, 30, 31, 32], (31, 21, 4)),
                (list(range(18)) + [20, 21, 22], (21, 21, 21)))
_WARP_EXPLICIT = ((3, 9, 5, 7),
                  ([0, 1, 2, 5, 6, 7, 10, 11, 12, 13, 14, 17, 18, 19, 20, 21, 22, 23, 24, 25,
                    26, 27, 30, 31, 32, 3, 4, 8, 9, 15, 16, 28, 29, 33, 34], (35, 25, 0)),
                  ([0, 1, 2, 5, 6, 7, 10, 11, 12, 13, 14, 17, 18, 19, 20, 21, 22, 23, 24, 25,
                    26, 27, 30, 31, 32], (25, 25, 25)))


def test_space_partition_numbering_matches_warp():
    geo = fem.Grid2D(res=kc.vec2i(3, 2))
    space = fem.make_polynomial_space(geo, degree=2)
    parts = (fem.LinearGeometryPartition(geo, 0, 2),
             fem.ExplicitGeometryPartition(geo, kc.array([1, 0, 0, 1, 1, 0], dtype=int)))
    for part, (counts, with_halo, without_halo) in zip(parts, (_WARP_LINEAR, _WARP_EXPLICIT),
                                                       strict=True):
        assert (part.cell_count(), part.side_count(), part.boundary_side_count(),
                part.frontier_side_count()) == counts
        for halo, (nodes, node_counts) in ((True, with_halo), (False, without_halo)):
            sp = fem.make_space_partition(space_topology=space.topology,
                                          geometry_partition=part, with_halo=halo)
            assert isinstance(sp, fem.NodePartition) and sp.geo_partition is part
            np.testing.assert_array_equal(sp.space_node_indices().numpy(), nodes)
            assert (sp.node_count(), sp.owned_node_count(), sp.interior_node_count()) == \
                node_counts
    whole = fem.make_space_partition(space_topology=space.topology)
    np.testing.assert_array_equal(whole.space_node_indices().numpy(),
                                  np.arange(space.node_count()))


# ---- assembly over partitions ------------------------------------------------------------------


@pytest.mark.parametrize("mesh", ["grid", "tri"])
def test_partitioned_assembly_sums_to_whole_assembly(mesh):
    geo = fem.Grid2D(res=kc.vec2i(4, 3)) if mesh == "grid" else _trimesh()
    space = fem.make_polynomial_space(geo, degree=2)
    n = space.node_count()

    def forms(domain_of, space_partition):
        cells, bd, sides = domain_of(fem.Cells), domain_of(fem.BoundarySides), \
            domain_of(fem.Sides)
        args = {} if space_partition is None else {"space_partition": space_partition}
        test = fem.make_test(space, domain=cells, **args)
        trial = fem.make_trial(space, domain=cells, **args)
        out = {"stiffness": fem.integrate(_stiffness, fields={"u": trial, "v": test}),
               "rhs": fem.integrate(_source, fields={"v": test}),
               "boundary": fem.integrate(_mass, fields={
                   "u": fem.make_trial(space, domain=bd, **args),
                   "v": fem.make_test(space, domain=bd, **args)}),
               "sides": fem.integrate(_side_jumps, fields={
                   "u": fem.make_trial(space, domain=sides, **args),
                   "v": fem.make_test(space, domain=sides, **args)}),
               "side_total": fem.integrate(_position_sum, domain=sides)}
        return out, (test.space_partition.node_count() if space_partition else n)

    whole, _ = forms(lambda d: d(geo), None)
    want = {k: (_dense(v, n) if hasattr(v, "nnz_sync") else
                (v.numpy() if hasattr(v, "numpy") else v)) for k, v in whole.items()}
    got = {k: 0.0 for k in want}
    for rank in range(3):
        part = fem.LinearGeometryPartition(geo, rank, 3)
        sp = fem.make_space_partition(space_topology=space.topology, geometry_partition=part)
        local, m = forms(lambda d, p=part: d(p), sp)
        nodes = sp.space_node_indices().numpy()
        for k, v in local.items():
            if hasattr(v, "nnz_sync"):
                assert v.nrow == v.ncol == sp.node_count()
                got[k] = got[k] + _scatter(_dense(v, m), nodes, n)
            elif hasattr(v, "numpy"):
                got[k] = got[k] + _scatter(v.numpy(), nodes, n)
            else:
                got[k] = got[k] + v
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=0,
                                   atol=1e-5 * np.abs(want[k]).max(), err_msg=k)


def test_partition_test_and_trial_of_different_spaces():
    geo = fem.Grid2D(res=kc.vec2i(4, 3))
    p1 = fem.make_polynomial_space(geo, degree=1)
    p0 = fem.make_polynomial_space(geo, degree=0)
    mask = np.array([1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0], dtype=np.int32)
    part = fem.ExplicitGeometryPartition(geo, kc.array(mask, dtype=int))
    sp1 = fem.make_space_partition(space_topology=p1.topology, geometry_partition=part)
    sp0 = fem.make_space_partition(space_topology=p0.topology, geometry_partition=part)
    local = fem.integrate(_mass, fields={"u": fem.make_trial(p1, space_partition=sp1),
                                         "v": fem.make_test(p0, space_partition=sp0)})
    assert (local.nrow, local.ncol) == (sp0.node_count(), sp1.node_count())
    whole = _dense(fem.integrate(_mass, fields={"u": fem.make_trial(p1),
                                                "v": fem.make_test(p0)}),
                   max(p0.node_count(), p1.node_count()))[: p0.node_count(), : p1.node_count()]
    rows, cols = sp0.space_node_indices().numpy(), sp1.space_node_indices().numpy()
    dense = np.zeros((sp0.node_count(), sp1.node_count()))
    nnz = local.nnz_sync()
    r = np.repeat(np.arange(local.nrow), np.diff(local.offsets.numpy()[: local.nrow + 1]))
    dense[r, local.columns.numpy()[:nnz]] = local.values.numpy()[:nnz]
    want = whole[np.ix_(rows, cols)] * mask[rows][:, None]  # the partition's cells only
    np.testing.assert_allclose(dense, want, rtol=0, atol=1e-6)


# ---- particle quadrature -----------------------------------------------------------------------


def _q1_basis(x: np.ndarray, nodes: np.ndarray, h: np.ndarray) -> np.ndarray:
    """(points, nodes) values of the Q1 hat functions."""
    d = np.abs(x[:, None, :] - nodes[None, :, :]) / h
    return np.prod(np.maximum(0.0, 1.0 - d), axis=2)


def _partition_cells(x: np.ndarray, res: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The partition cell (mask 1) each point of the unit square is binned in, by Warp's
    grid search: its own cell, else the last closest cell within half a cell, else -1."""
    found = np.full(len(x), -1)
    for p, point in enumerate(x * res):  # in cell units (the grid is the unit square)
        clamped = np.clip(point, 0.0, res)
        own = np.minimum(np.floor(clamped).astype(int), res - 1)
        if mask[own[0] * res[1] + own[1]]:
            found[p] = own[0] * res[1] + own[1]
            continue
        lo = np.maximum(0, np.floor(clamped - 0.5).astype(int))
        hi = np.minimum(res, np.floor(clamped + 0.5).astype(int) + 1)
        best = 0.25 / res.max() ** 2  # (half of the smaller cell size) squared
        for i in range(lo[0], hi[0]):
            for j in range(lo[1], hi[1]):
                gap = (point - np.clip(point, (i, j), (i + 1, j + 1))) / res
                if mask[i * res[1] + j] and gap @ gap <= best:
                    best, found[p] = gap @ gap, i * res[1] + j
    return found


def _cell_q1(x: np.ndarray, cells: np.ndarray, res: np.ndarray, nodes: int) -> np.ndarray:
    """(points, nodes): each point's cell's four Q1 functions at the point (extended
    outside the cell), zero rows for points in no cell."""
    out = np.zeros((len(x), nodes))
    for p, cell in enumerate(cells):
        if cell < 0:
            continue
        ij = np.array([cell // res[1], cell % res[1]])
        u, v = x[p] * res - ij
        for a, b in np.ndindex(2, 2):
            node = (ij[0] + a) * (res[1] + 1) + ij[1] + b
            out[p, node] += (u if a else 1.0 - u) * (v if b else 1.0 - v)
    return out


def test_pic_quadrature_sums_over_particles():
    res = np.array([4, 3])
    geo = fem.Grid2D(res=kc.vec2i(*res))
    space = fem.make_polynomial_space(geo, degree=1)
    rng = np.random.default_rng(RNG_SEED + 1)
    count = 200
    x = rng.uniform(0.0, 1.0, size=(count, 2))
    measures = rng.uniform(0.5, 1.5, size=count) / count
    values = rng.uniform(-1.0, 1.0, size=count)
    cells = fem.Cells(geo)
    pic = fem.PicQuadrature(cells, kc.array(x, dtype=kc.vec2),
                            kc.array(measures, dtype=float))
    assert pic.total_point_count() == count == pic.evaluation_point_count()
    phi = _q1_basis(x, space.node_positions().numpy().astype(np.float64), 1.0 / res)
    rhs = kc.full(space.node_count(), np.nan, dtype=float)
    fem.integrate(_particle_source, quadrature=pic, fields={"v": fem.make_test(space)},
                  values={"particle_values": kc.array(values, dtype=float)}, output=rhs)
    np.testing.assert_allclose(rhs.numpy(), phi.T @ (measures * values), rtol=1e-5,
                               atol=1e-7)
    mass = fem.integrate(_mass, quadrature=pic, fields={"u": fem.make_trial(space),
                                                        "v": fem.make_test(space)})
    np.testing.assert_allclose(_dense(mass, space.node_count()),
                               phi.T @ (measures[:, None] * phi), rtol=0, atol=1e-7)
    total = fem.integrate(_position_sum, quadrature=pic)
    np.testing.assert_allclose(total, np.sum(measures * (1 + x[:, 0] + 2 * x[:, 1] ** 2)),
                               rtol=1e-5)
    # without measures, each cell's particles share it: the total is the area
    uniform = fem.PicQuadrature(cells, kc.array(x, dtype=kc.vec2))
    area = fem.integrate(_mass, quadrature=uniform, fields={
        "u": fem.UniformField(cells, 1.0), "v": fem.UniformField(cells, 1.0)})
    cell_of = np.minimum((x * res).astype(int), res - 1)
    occupied = len(np.unique(cell_of[:, 0] * res[1] + cell_of[:, 1]))
    np.testing.assert_allclose(area, occupied / res.prod(), rtol=1e-5)


def test_pic_quadrature_on_partition_with_domain_indices():
    res = np.array([4, 3])
    geo = fem.Grid2D(res=kc.vec2i(*res))
    space = fem.make_polynomial_space(geo, degree=1)
    rng = np.random.default_rng(RNG_SEED + 2)
    count = 150
    x = rng.uniform(0.0, 1.0, size=(count, 2))
    measures = rng.uniform(0.5, 1.5, size=count) / count
    values = rng.uniform(-1.0, 1.0, size=count)
    mask = (rng.uniform(size=geo.cell_count()) > 0.4).astype(np.int32)
    part = fem.ExplicitGeometryPartition(geo, kc.array(mask, dtype=int))
    sp = fem.make_space_partition(space_topology=space.topology, geometry_partition=part)
    cell_of = np.minimum((x * res).astype(int), res - 1)
    phi = _q1_basis(x, space.node_positions().numpy().astype(np.float64), 1.0 / res)
    # Warp's binning: a partition cell within half a cell of the particle, its basis
    # functions extended to the particle
    found = _partition_cells(x, res, mask)
    inside = found >= 0
    want = _cell_q1(x, found, res, space.node_count()).T @ (measures * values)
    for by_domain in (False, True):
        pic = fem.PicQuadrature(fem.Cells(part), kc.array(x, dtype=kc.vec2),
                                kc.array(measures, dtype=float),
                                use_domain_element_indices=by_domain)
        assert pic.evaluation_point_count() == inside.sum()
        rhs = fem.integrate(_particle_source, quadrature=pic,
                            fields={"v": fem.make_test(space, space_partition=sp)},
                            values={"particle_values": kc.array(values, dtype=float)})
        assert rhs.shape == (sp.node_count(),)
        got = _scatter(rhs.numpy().astype(np.float64), sp.space_node_indices().numpy(),
                       space.node_count())
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    # particles given as (cell, coordinates): the same sums
    coords = np.zeros((count, 3))
    coords[:, :2] = x * res - cell_of
    given = fem.PicQuadrature(fem.Cells(geo), (
        kc.array(cell_of[:, 0] * res[1] + cell_of[:, 1], dtype=int),
        kc.array(coords, dtype=kc.vec3)), kc.array(measures, dtype=float))
    rhs = fem.integrate(_particle_source, quadrature=given, fields={"v": fem.make_test(space)},
                        values={"particle_values": kc.array(values, dtype=float)})
    np.testing.assert_allclose(rhs.numpy(), phi.T @ (measures * values), rtol=1e-5, atol=1e-7)


# ---- indexed arrays, as the partition examples use them -----------------------------------


def test_indexed_array_arithmetic_and_cast():
    rng = np.random.default_rng(RNG_SEED + 3)
    base = rng.uniform(-1.0, 1.0, size=10)
    z = kc.array(base, dtype=float)
    idx = np.array([7, 2, 5, 0], dtype=np.int32)
    add = rng.uniform(-1.0, 1.0, size=4)
    view = z[kc.array(idx, dtype=kc.int32)]
    view += kc.array(add, dtype=float)
    want = base.copy()
    want[idx] += add
    np.testing.assert_allclose(z.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose((view * 2.0).numpy(), 2.0 * want[idx], rtol=1e-6)
    out = kc.full(10, np.nan, dtype=float)
    kc.utils.array_cast(in_array=kc.array(add, dtype=kc.float64),
                        out_array=out[kc.array(idx, dtype=kc.int32)])
    assert np.allclose(out.numpy()[idx], add) and np.isnan(np.delete(out.numpy(), idx)).all()
    assert kc.zeros(n=5, dtype=float).shape == (5,)


# ---- errors ----------------------------------------------------------------------------------


def test_partition_errors():
    geo = fem.Grid2D(res=kc.vec2i(3, 2))
    with pytest.raises(ValueError, match="rank"):
        fem.LinearGeometryPartition(geo, 2, 2)
    with pytest.raises(ValueError, match="one entry per cell"):
        fem.ExplicitGeometryPartition(geo, kc.array([1, 0], dtype=int))
    with pytest.raises(TypeError, match="geometry"):
        fem.Cells(object())
    space = fem.make_polynomial_space(geo, degree=1)
    other = fem.LinearGeometryPartition(fem.Grid2D(res=kc.vec2i(3, 2)), 0, 2)
    with pytest.raises(ValueError, match="space's geometry"):
        fem.make_space_partition(space_topology=space.topology, geometry_partition=other)
    sp = fem.make_space_partition(space_topology=space.topology,
                                  geometry_partition=fem.LinearGeometryPartition(geo, 0, 2))
    with pytest.raises(ValueError, match="with_halo=True"):
        fem.make_space_partition(space.topology, fem.LinearGeometryPartition(geo, 0, 2),
                                 environment_first=True)
    assert space.make_field(space_partition=sp).dof_values.shape == (sp.node_count(),)
    with pytest.raises(ValueError, match="cells"):
        fem.PicQuadrature(fem.Sides(geo), kc.array(np.zeros((2, 2)), dtype=kc.vec2))
    with pytest.raises(ValueError, match="Measures"):
        fem.PicQuadrature(fem.Cells(geo), kc.array(np.zeros((2, 2)), dtype=kc.vec2),
                          kc.array(np.ones(3), dtype=float))
