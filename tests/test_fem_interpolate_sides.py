"""`fem.interpolate` into a Lagrange field at the nodes of a side domain: only the nodes on
those sides change, each to the integrand's value there."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem


@fem.integrand
def quadratic(s: fem.Sample, domain: fem.Domain, c: kc.vec3):
    x = domain(s)
    return c[0] + c[1] * x[0] * x[0] - c[2] * x[0] * x[1]


@fem.integrand
def vector_value(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return kc.vec2(x[1] - 2.0 * x[0], 3.0 + x[0] * x[1])


def _geometries():
    yield "grid2d", fem.Grid2D(res=kc.vec2i(4, 3), bounds_lo=kc.vec2(-1.0, 0.5),
                               bounds_hi=kc.vec2(1.5, 2.0))
    yield "grid3d", fem.Grid3D(res=kc.vec3i(3, 2, 2))
    block = np.indices((3, 3, 3)).reshape(3, -1).T  # with interior vertices, and a notch
    voxels = np.concatenate([block[:-1], [[3, 0, 0], [-1, 2, 1]]]).astype(np.int32)
    volume = kc.Volume.allocate_by_voxels(kc.array(voxels, dtype=kc.vec3i), voxel_size=0.5)
    yield "nanogrid", fem.Nanogrid(volume)


@pytest.mark.parametrize("degree", [1, 2])
@pytest.mark.parametrize("name,geo", list(_geometries()), ids=lambda v: v if isinstance(v, str) else "")
def test_boundary_nodes_only(name, geo, degree):
    rng = np.random.default_rng(degree)
    c = rng.uniform(0.5, 2.0, 3)
    space = fem.make_polynomial_space(geo, degree=degree)
    field = space.make_field()
    poison = rng.uniform(100.0, 200.0, space.node_count()).astype(np.float32)
    field.dof_values = kc.array(poison, dtype=float)
    fem.interpolate(quadratic, dest=field, at=fem.BoundarySides(geo),
                    values={"c": kc.vec3(*c)})
    x = space.node_positions().numpy().astype(np.float64)
    want = c[0] + c[1] * x[:, 0] ** 2 - c[2] * x[:, 0] * x[:, 1]
    got = field.dof_values.numpy()
    # nodes on the boundary sides: the value there; others untouched
    on_boundary = np.zeros(space.node_count(), dtype=bool)
    geo_dim = x.shape[1]
    lo, hi = x.min(0), x.max(0)
    if name != "nanogrid":  # a box: boundary nodes are those on its faces
        on_boundary = np.any(np.isclose(x, lo) | np.isclose(x, hi), axis=1)
    else:
        on_boundary[_nanogrid_boundary_nodes(geo, space)] = True
    assert geo_dim in (2, 3) and on_boundary.any() and (~on_boundary).any()
    np.testing.assert_allclose(got[on_boundary], want[on_boundary], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[~on_boundary], poison[~on_boundary])


def _nanogrid_boundary_nodes(geo, space) -> np.ndarray:
    """Nodes whose position lies on a boundary face of a voxel set (NumPy geometry)."""
    x = space.node_positions().numpy().astype(np.float64)
    voxels = geo.cell_grid.get_voxels().numpy()[:geo.cell_count()]
    cells = {tuple(v) for v in voxels.tolist()}
    h = 0.5
    out = np.zeros(len(x), dtype=bool)
    for v in voxels:
        for axis in range(3):
            for step in (-1, 1):
                n = v.copy()
                n[axis] += step
                if tuple(n) in cells:
                    continue
                plane = (v[axis] + 0.5 * step) * h  # voxel centres at v * h
                lo = (v - 0.5) * h
                hi = (v + 0.5) * h
                on = np.isclose(x[:, axis], plane)
                for other in range(3):
                    if other != axis:
                        on &= (x[:, other] >= lo[other] - 1e-6) & (x[:, other] <= hi[other] + 1e-6)
                out |= on
    return np.flatnonzero(out)


def test_vector_values_at_boundary_nodes():
    geo = fem.Grid2D(res=kc.vec2i(3, 3))
    space = fem.make_polynomial_space(geo, degree=2, dtype=kc.vec2)
    field = space.make_field()
    field.dof_values = kc.full(space.node_count(), kc.vec2(-9.0, -9.0), dtype=kc.vec2)
    fem.interpolate(vector_value, dest=field, at=fem.BoundarySides(geo))
    x = space.node_positions().numpy().astype(np.float64)
    boundary = np.any(np.isclose(x, 0.0) | np.isclose(x, 1.0), axis=1)
    want = np.stack([x[:, 1] - 2.0 * x[:, 0], 3.0 + x[:, 0] * x[:, 1]], axis=1)
    got = field.dof_values.numpy()
    np.testing.assert_allclose(got[boundary], want[boundary], rtol=1e-5, atol=1e-5)
    assert np.all(got[~boundary] == -9.0)
