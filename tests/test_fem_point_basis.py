"""`fem.PointBasisSpace`: nodes at a quadrature's points with radial kernel basis functions.

NumPy references on random particles (Gaussian kernels depending on the point index and two
extra values, reference and world distances, on a grid and on triangles): mass and
gradient matrices over a `PicQuadrature`, linear and nodal forms, interpolation of point
fields, node positions, truncated cells (`max_nodes_per_element`) and evaluation-point
numbering; then Warp's own point-basis tests (`test_fem_quadrature.py`) and the errors.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

import kernelc as wp
import kernelc.fem as fem

RADIUS, SCALE = 0.35, 1.5


@wp.func
def gauss(d2: float, index: int, radius: float, scale: float):
    return scale * wp.exp(-d2 / (radius * radius)) * (1.0 + 0.01 * float(index))


@wp.func
def gauss_grad(d2: float, index: int, radius: float, scale: float):
    return -scale * wp.exp(-d2 / (radius * radius)) / (radius * radius) * (
        1.0 + 0.01 * float(index))


def np_gauss(d2, index):
    return SCALE * np.exp(-d2 / RADIUS**2) * (1.0 + 0.01 * index)


def np_gauss_grad(d2, index):
    return -SCALE * np.exp(-d2 / RADIUS**2) / RADIUS**2 * (1.0 + 0.01 * index)


@fem.integrand
def mass_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


@fem.integrand
def grad_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(fem.grad(u, s), fem.grad(v, s))


@fem.integrand
def vector_mass_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(u(s), v(s))


@fem.integrand
def linear_form(s: fem.Sample, v: fem.Field):
    return v(s)


@fem.integrand
def value_of(s: fem.Sample, p: fem.Field):
    return p(s)


@fem.integrand
def grad_of(s: fem.Sample, p: fem.Field):
    return fem.grad(p, s)


@fem.integrand
def node_count_form(s: fem.Sample, p: fem.Field):
    return float(fem.node_count(p, s))


# ---- the particles and their NumPy reference ------------------------------------------------


class Particles:
    """Random particles given as (cell, coordinates) on a 3 x 3 grid or its triangles, with
    everything a NumPy assembly needs."""

    def __init__(self, kind: str, seed: int = 7, count: int = 40) -> None:
        rng = np.random.default_rng(seed)
        vx, vy = np.meshgrid(np.linspace(0.0, 1.5, 4), np.linspace(0.0, 1.2, 4), indexing="ij")
        vertices = np.stack([vx.ravel(), vy.ravel()], axis=1)
        if kind == "grid":
            self.geo = fem.Grid2D(res=wp.vec2i(3), bounds_hi=wp.vec2(1.5, 1.2))
            cell_count = 9
        else:
            tris = fem.utils.grid_to_tris(3, 3)
            self.geo = fem.Trimesh2D(wp.array(tris, dtype=int), wp.array(vertices, dtype=wp.vec2))
            cell_count = len(tris)
        # a few crowded cells, some empty ones
        self.cells = rng.choice([0, 1, 1, 4, 4, 4, 5, 7, cell_count - 1], size=count)
        if kind == "grid":
            uv = rng.uniform(0.05, 0.95, size=(count, 2))
            self.coords = np.concatenate([uv, np.zeros((count, 1))], axis=1)
            cx, cy = self.cells // 3, self.cells % 3
            self.jacobians = np.tile(np.diag([0.5, 0.4]), (count, 1, 1))
            self.world = np.stack([(cx + uv[:, 0]) * 0.5, (cy + uv[:, 1]) * 0.4], axis=1)
            self.ref = uv
            self.cell_measure = np.full(count, 0.2)
        else:
            lam = rng.dirichlet([2.0, 2.0, 2.0], size=count)
            self.coords = lam
            corners = vertices[tris[self.cells]]  # (count, 3, 2)
            self.world = np.einsum("pi,pid->pd", lam, corners)
            self.jacobians = np.stack([corners[:, 1] - corners[:, 0],
                                       corners[:, 2] - corners[:, 0]], axis=2)
            self.ref = lam[:, 1:]
            self.cell_measure = 0.5 * np.abs(np.linalg.det(self.jacobians))
        self.measures = rng.uniform(0.01, 0.05, size=count)
        self.weights = self.measures / self.cell_measure
        self.pic = fem.PicQuadrature(
            fem.Cells(self.geo),
            positions=(wp.array(self.cells, dtype=int), wp.array(self.coords, dtype=fem.Coords)),
            measures=wp.array(self.measures, dtype=float))

    def cell_points(self, cell: int, max_nodes: int = -1) -> np.ndarray:
        points = np.flatnonzero(self.cells == cell)
        return points if max_nodes < 0 else points[:max_nodes]

    def basis(self, p: int, node: int, world: bool) -> tuple[float, np.ndarray]:
        """(value, world gradient) of the basis function of particle `node` at particle
        `p` (both in one cell)."""
        if world:
            delta = self.world[p] - self.world[node]
            d2 = delta @ delta
            return np_gauss(d2, node), 2.0 * np_gauss_grad(d2, node) * delta
        delta = self.ref[p] - self.ref[node]
        d2 = delta @ delta
        ref_grad = 2.0 * np_gauss_grad(d2, node) * delta
        return np_gauss(d2, node), np.linalg.solve(self.jacobians[p].T, ref_grad)

    def matrices(self, world: bool, max_nodes: int = -1) -> tuple[np.ndarray, np.ndarray]:
        """Mass and gradient matrices over the particles, indexed by particle."""
        n = len(self.cells)
        mass, stiffness = np.zeros((n, n)), np.zeros((n, n))
        for p in range(n):
            nodes = self.cell_points(self.cells[p], max_nodes)
            w = self.weights[p] * self.cell_measure[p]
            basis = [self.basis(p, k, world) for k in nodes]
            for i, (vi, gi) in zip(nodes, basis):
                for j, (vj, gj) in zip(nodes, basis):
                    mass[i, j] += w * vi * vj
                    stiffness[i, j] += w * gi @ gj
        return mass, stiffness

    def evaluation_order(self) -> np.ndarray:
        """Particles in evaluation order (by cell, then particle index)."""
        return np.argsort(self.cells, kind="stable")


def dense(matrix) -> np.ndarray:
    """A `BsrMatrix` as a dense NumPy array."""
    rows, cols = matrix.block_shape
    out = np.zeros((matrix.nrow * rows, matrix.ncol * cols))
    offsets = matrix.offsets.numpy()
    columns = matrix.columns.numpy()
    values = matrix.values.numpy().reshape(-1, rows, cols)
    for r in range(matrix.nrow):
        for k in range(offsets[r], offsets[r + 1]):
            c = columns[k]
            out[r * rows:(r + 1) * rows, c * cols:(c + 1) * cols] = values[k]
    return out


def point_space(particles: Particles, distance: str, dtype=None, **options):
    basis = fem.PointBasisSpace(particles.pic, kernel_func=gauss, kernel_grad_func=gauss_grad,
                                kernel_values={"radius": RADIUS, "scale": SCALE},
                                distance_space=distance, **options)
    return fem.make_collocated_function_space(basis, dtype=dtype)


# ---- NumPy references -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["grid", "tri"])
@pytest.mark.parametrize("distance", ["reference", "world"])
def test_mass_and_gradient_matrices(kind, distance):
    particles = Particles(kind)
    space = point_space(particles, distance)
    domain = fem.Cells(particles.geo)
    u, v = fem.make_trial(space, domain=domain), fem.make_test(space, domain=domain)
    fields = {"u": u, "v": v}
    mass = fem.integrate(mass_form, quadrature=particles.pic, fields=fields,
                         output_dtype=wp.float64)
    stiffness = fem.integrate(grad_form, quadrature=particles.pic, fields=fields,
                              output_dtype=wp.float64)
    ref_mass, ref_stiffness = particles.matrices(distance == "world")
    np.testing.assert_allclose(dense(mass), ref_mass, rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(dense(stiffness), ref_stiffness, rtol=2e-4,
                               atol=1e-5 * np.abs(ref_stiffness).max())
    # a linear form: the row sums of the mass matrix with unit trial functions replaced by 1
    rhs = wp.full(space.node_count(), np.nan, dtype=wp.float64)
    fem.integrate(linear_form, quadrature=particles.pic, fields={"v": v}, output=rhs)
    ref_rhs = np.zeros(len(particles.cells))
    for p in range(len(particles.cells)):
        for k in particles.cell_points(particles.cells[p]):
            ref_rhs[k] += particles.weights[p] * particles.cell_measure[p] * \
                particles.basis(p, k, distance == "world")[0]
    np.testing.assert_allclose(rhs.numpy(), ref_rhs, rtol=2e-5)


def test_vector_values_and_nodal_assembly():
    particles = Particles("grid", seed=11)
    space = point_space(particles, "world", dtype=wp.vec2)
    domain = fem.Cells(particles.geo)
    fields = {"u": fem.make_trial(space, domain=domain), "v": fem.make_test(space, domain=domain)}
    mass = fem.integrate(vector_mass_form, quadrature=particles.pic, fields=fields,
                         output_dtype=wp.float64)
    ref_mass, _ = particles.matrices(world=True)
    np.testing.assert_allclose(dense(mass), np.kron(ref_mass, np.eye(2)), rtol=2e-5, atol=1e-7)

    # nodal assembly: each node's function at its own point, with its point's weight
    scalar = point_space(particles, "world")
    test = fem.make_test(scalar, domain=domain)
    nodal = fem.integrate(linear_form, fields={"v": test}, assembly="nodal",
                          output_dtype=wp.float64)
    own = np_gauss(0.0, np.arange(len(particles.cells)))
    np.testing.assert_allclose(nodal.numpy(), particles.measures * own, rtol=1e-5)
    nodal_mass = fem.integrate(mass_form, fields={"u": fem.make_trial(scalar, domain=domain),
                                                  "v": test},
                               assembly="nodal", output_dtype=wp.float64)
    np.testing.assert_allclose(dense(nodal_mass), np.diag(particles.measures * own**2),
                               rtol=1e-5)


@pytest.mark.parametrize("kind", ["grid", "tri"])
def test_interpolation_of_point_fields(kind):
    particles = Particles(kind, seed=3)
    space = point_space(particles, "reference")
    field = space.make_field()
    dofs = np.random.default_rng(1).uniform(-1.0, 1.0, space.node_count())
    field.dof_values = wp.array(dofs, dtype=float)
    n = len(particles.cells)
    values = wp.full(n, np.nan, dtype=float)
    grads = wp.full(n, wp.vec2(np.nan), dtype=wp.vec2)
    fem.interpolate(value_of, dest=values, at=particles.pic, fields={"p": field})
    fem.interpolate(grad_of, dest=grads, at=particles.pic, fields={"p": field})
    counts = wp.full(n, np.nan, dtype=float)
    fem.interpolate(node_count_form, dest=counts, at=particles.pic, fields={"p": field})
    ref_values, ref_grads = np.zeros(n), np.zeros((n, 2))
    for p in range(n):
        for k in particles.cell_points(particles.cells[p]):
            value, grad = particles.basis(p, k, world=False)
            ref_values[p] += dofs[k] * value
            ref_grads[p] += dofs[k] * grad
    np.testing.assert_allclose(values.numpy(), ref_values, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads.numpy(), ref_grads, rtol=1e-4,
                               atol=1e-5 * np.abs(ref_grads).max())
    np.testing.assert_array_equal(counts.numpy(),
                                  np.bincount(particles.cells)[particles.cells])
    np.testing.assert_allclose(space.node_positions().numpy(), particles.world, rtol=1e-6,
                               atol=1e-6)


def test_truncated_cells_and_evaluation_points():
    particles = Particles("grid", seed=5)
    domain = fem.Cells(particles.geo)
    # at most two nodes per cell (Warp's element_node_count: the smaller count)
    space = point_space(particles, "world", max_nodes_per_element=2)
    kept = np.concatenate([particles.cell_points(c, 2) for c in range(9)])
    test = fem.make_test(space, domain=domain)
    assert test.space_restriction.node_count() == len(kept)
    assert space.node_count() == len(particles.cells)
    mass = fem.integrate(mass_form, quadrature=particles.pic, output_dtype=wp.float64,
                         fields={"u": fem.make_trial(space, domain=domain), "v": test})
    ref_mass, _ = particles.matrices(world=True, max_nodes=2)
    np.testing.assert_allclose(dense(mass), ref_mass, rtol=2e-5, atol=1e-7)
    counts = space.topology.host_element_node_counts()
    np.testing.assert_array_equal(counts, np.minimum(np.bincount(particles.cells,
                                                                 minlength=9), 2))

    # nodes numbered by evaluation point: the particles sorted by cell
    space = point_space(particles, "world", use_evaluation_point_index=True)
    order = particles.evaluation_order()
    assert space.node_count() == particles.pic.evaluation_point_count()
    mass = fem.integrate(mass_form, quadrature=particles.pic, output_dtype=wp.float64,
                         fields={"u": fem.make_trial(space, domain=domain),
                                 "v": fem.make_test(space, domain=domain)})
    ref_mass, _ = particles.matrices(world=True)
    np.testing.assert_allclose(dense(mass), ref_mass[np.ix_(order, order)], rtol=2e-5,
                               atol=1e-7)
    np.testing.assert_allclose(space.node_positions().numpy(), particles.world[order],
                               rtol=1e-6, atol=1e-6)


def test_dirac_default_on_regular_quadrature():
    geo = fem.Grid2D(res=wp.vec2i(3, 2), bounds_hi=wp.vec2(1.5, 1.0))
    domain = fem.Cells(geo)
    quadrature = fem.RegularQuadrature(domain, order=3)
    basis = fem.PointBasisSpace(quadrature)
    assert basis.kernel_values == {"squared_radius": 1.0e-6}
    space = fem.make_collocated_function_space(basis)
    test = fem.make_test(space, domain=domain)
    per_cell = quadrature.points_per_element()
    assert space.node_count() == 6 * per_cell
    nodal = fem.integrate(linear_form, fields={"v": test}, assembly="nodal",
                          output_dtype=wp.float64)
    ref = np.tile(quadrature.weights, 6) * 0.25
    np.testing.assert_allclose(nodal.numpy(), ref, rtol=1e-6)
    # at the quadrature's own points, each node's Dirac is one at its point only
    at_points = fem.integrate(linear_form, quadrature=quadrature, fields={"v": test},
                              output_dtype=wp.float64)
    np.testing.assert_allclose(at_points.numpy(), ref, rtol=1e-6)
    centres = fem.integrate(linear_form, quadrature=fem.RegularQuadrature(domain, order=0),
                            fields={"v": test}, output_dtype=wp.float64)
    np.testing.assert_array_equal(centres.numpy(), np.zeros(space.node_count()))
    cells = np.arange(6)
    corner = np.stack([cells // 2 * 0.5, cells % 2 * 0.5], axis=1)
    ref_positions = corner[:, None, :] + 0.5 * quadrature.points[None, :, :2]
    np.testing.assert_allclose(space.node_positions().numpy(), ref_positions.reshape(-1, 2),
                               rtol=1e-6)


def test_world_positions_on_a_partition():
    # particles located from world positions (one outside the grid: in the closest cell)
    geo = fem.Grid2D(res=wp.vec2i(2))
    positions = np.array([[0.2, 0.3], [0.7, 0.6], [0.3, 0.1], [1.4, 0.2], [0.9, 0.9]])
    pic = fem.PicQuadrature(fem.Cells(geo), positions=wp.array(positions, dtype=wp.vec2))
    basis = fem.PointBasisSpace(pic)
    space = fem.make_collocated_function_space(basis)
    assert space.node_count() == 5
    test = fem.make_test(space)
    assert test.space_restriction.node_count() == 5
    nodal = fem.integrate(linear_form, fields={"v": test}, assembly="nodal")
    np.testing.assert_allclose(nodal.numpy(), [0.125, 0.125, 0.125, 0.25, 0.125], rtol=1e-6)
    np.testing.assert_allclose(space.node_positions().numpy(), positions, rtol=1e-6)
    part = fem.make_space_partition(space, geometry_partition=fem.LinearGeometryPartition(
        geo, 0, 2), with_halo=False)
    np.testing.assert_array_equal(part.space_node_indices().numpy(), [0, 2])


@fem.integrand
def node_index_form(s: fem.Sample, v: fem.Field):
    return float(fem.node_index(v, s)) * fem.node_inner_weight(v, s)


@fem.integrand
def discrete_node_sum(s: fem.Sample, u: fem.Field):
    total = float(0.0)
    for k in range(fem.node_count(u, s)):
        total += float(fem.node_index(u, s, k)) * fem.node_inner_weight(u, s, k) + u(
            fem.at_node(u, s, k))
    return total


def test_node_operators():
    geo = fem.Grid2D(res=wp.vec2i(2))
    pic = fem.PicQuadrature(fem.Cells(geo), positions=wp.array(
        [[0.2, 0.3], [0.3, 0.2], [0.8, 0.7]], dtype=wp.vec2))
    space = fem.make_collocated_function_space(fem.PointBasisSpace(pic))
    nodal = fem.integrate(node_index_form, fields={"v": fem.make_test(space)}, assembly="nodal")
    np.testing.assert_allclose(nodal.numpy(), [0.0, 0.125, 0.5], rtol=1e-6)
    field = space.make_field()
    field.dof_values = wp.array([1.0, 2.0, 3.0], dtype=float)
    out = wp.full(3, np.nan, dtype=float)
    fem.interpolate(discrete_node_sum, dest=out, at=pic, fields={"u": field})
    # at particle p: its own node's index (Dirac weights), plus the values at its cell's nodes
    np.testing.assert_allclose(out.numpy(), [0.0 + 3.0, 1.0 + 3.0, 2.0 + 3.0])


# ---- Warp's tests (warp/tests/fem/test_fem_quadrature.py) -------------------------------------


@wp.func
def _rbf_kernel_func(squared_dist: float, point_index: int, radius: float):
    return wp.exp(-squared_dist / (2.0 * radius * radius))


@wp.func
def _rbf_kernel_grad_func(squared_dist: float, point_index: int, radius: float):
    return -wp.exp(-squared_dist / (2.0 * radius * radius)) * (
        squared_dist / (2.0 * radius * radius))


@wp.func
def _invalid_rbf_kernel_func(squared_dist: int, point_index: int):
    return float(squared_dist + point_index)


@fem.integrand
def vector_divergence_form(s: fem.Sample, u: fem.Field, q: fem.Field):
    return fem.div(u, s) * q(s)


def _rbf(d2, radius):
    return np.exp(-d2 / (2.0 * radius * radius))


def _rbf_grad(d2, radius):
    return -np.exp(-d2 / (2.0 * radius * radius)) * (d2 / (2.0 * radius * radius))


def test_warp_point_basis():
    geo = fem.Grid2D(res=wp.vec2i(2))
    domain = fem.Cells(geo)
    quadrature = fem.RegularQuadrature(domain, order=2, family=fem.Polynomial.GAUSS_LEGENDRE)
    point_test = fem.make_test(fem.make_collocated_function_space(fem.PointBasisSpace(quadrature)),
                               domain=domain)
    self_int = fem.integrate(linear_form, fields={"v": point_test}, assembly="nodal")
    assert np.sum(self_int.numpy()) == pytest.approx(1.0, abs=1e-5)
    other_quadrature = fem.RegularQuadrature(domain, order=0, family=fem.Polynomial.GAUSS_LEGENDRE)
    other_int = fem.integrate(linear_form, quadrature=other_quadrature, fields={"v": point_test})
    assert np.sum(other_int.numpy()) == pytest.approx(0.0, abs=1e-5)

    points = wp.array([[0.25, 0.33], [0.33, 0.25], [0.8, 0.8]], dtype=wp.vec2)
    neighbours = 2 * (0.25 - 0.33) ** 2
    cell0_centre, cell3_centre = (0.25 - 0.33) ** 2, 2.0 * (0.75 - 0.8) ** 2
    pic = fem.PicQuadrature(domain, positions=points)
    assert (pic.active_cell_count(), pic.total_point_count(), pic.max_points_per_element()) == \
        (2, 3, 2)
    radius = 0.1
    point_basis = fem.PointBasisSpace(pic, kernel_func=_rbf_kernel_func,
                                      kernel_grad_func=_rbf_kernel_grad_func,
                                      kernel_values={"radius": radius}, distance_space="world")
    space = fem.make_collocated_function_space(point_basis)
    point_test = fem.make_test(space, domain=domain)
    assert point_test.space_restriction.node_count() == 3
    self_int = fem.integrate(linear_form, fields={"v": point_test}, quadrature=pic)
    near = 0.125 * (1.0 + _rbf(neighbours, radius))
    np.testing.assert_allclose(self_int.numpy(), [near, near, 0.25], rtol=2.0e-7)
    other_int = fem.integrate(linear_form, quadrature=other_quadrature, fields={"v": point_test})
    np.testing.assert_allclose(other_int.numpy(), 0.25 * _rbf(np.array(
        [cell0_centre, cell0_centre, cell3_centre]), radius), rtol=1e-6)

    mat = fem.integrate(vector_divergence_form, quadrature=pic, output_dtype=float, fields={
        "u": fem.make_test(fem.make_polynomial_space(geo, dtype=wp.vec2)),
        "q": fem.make_trial(space)})
    assert (mat.nrow, mat.ncol, mat.nnz_sync()) == (9, 3, 12)

    # The trial field's gradients at the particles (Warp's test interpolates them into a
    # matrix): those of a field with one unit dof
    ref_grad = 2.0 * _rbf_grad(neighbours, radius) * np.array([0.25 - 0.33, 0.33 - 0.25])
    for node, other, sign in ((1, 0, 1.0), (0, 1, -1.0)):
        field = space.make_field()
        field.dof_values = wp.array(np.eye(3)[node], dtype=float)
        grads = wp.full(3, wp.vec2(np.nan), dtype=wp.vec2)
        fem.interpolate(grad_of, dest=grads, at=pic, fields={"p": field})
        np.testing.assert_allclose(grads.numpy()[other], sign * ref_grad, rtol=1.0e-6)


def _constant_kernels(value: float, slope: float):
    """Same-named kernel funcs of other objects (Warp's tests take them from two modules)."""

    @wp.func
    def point_kernel_func(squared_dist: float, point_index: int):
        return value

    @wp.func
    def point_kernel_grad_func(squared_dist: float, point_index: int):
        return slope

    return point_kernel_func, point_kernel_grad_func


def test_warp_point_basis_gradient_identity():
    geo = fem.Grid2D(res=wp.vec2i(1))
    quadrature = fem.RegularQuadrature(fem.Cells(geo), order=0)
    values = {"radius": 1.0}
    fem.PointBasisSpace(quadrature, kernel_func=_rbf_kernel_func,
                        kernel_grad_func=_rbf_kernel_grad_func, kernel_values=values)
    without = fem.PointBasisSpace(quadrature, kernel_func=_rbf_kernel_func, kernel_values=values)
    field = fem.make_collocated_function_space(without).make_field()
    field.dof_values.fill_(1.0)
    dest = fem.make_polynomial_space(geo, dtype=wp.vec2).make_field()
    fem.interpolate(grad_of, fields={"p": field}, dest=dest)
    np.testing.assert_array_equal(dest.dof_values.numpy(), np.zeros((4, 2)))


def test_warp_point_basis_kernel_identity():
    geo = fem.Grid2D(res=wp.vec2i(1))
    quadrature = fem.RegularQuadrature(fem.Cells(geo), order=0)
    dest = fem.make_polynomial_space(geo).make_field()
    for value in (1.0, 2.0):
        kernel, _ = _constant_kernels(value, 0.0)
        field = fem.make_collocated_function_space(
            fem.PointBasisSpace(quadrature, kernel_func=kernel)).make_field()
        field.dof_values.fill_(1.0)
        fem.interpolate(field, dest=dest)
        np.testing.assert_array_equal(dest.dof_values.numpy(), np.full(4, value))

    kernel, zero_slope = _constant_kernels(1.0, 0.0)
    _, unit_slope = _constant_kernels(1.0, 1.0)
    dest = fem.make_polynomial_space(geo, dtype=wp.vec2).make_field()
    norms = []
    for slope in (zero_slope, unit_slope):
        field = fem.make_collocated_function_space(fem.PointBasisSpace(
            quadrature, kernel_func=kernel, kernel_grad_func=slope)).make_field()
        field.dof_values.fill_(1.0)
        fem.interpolate(grad_of, fields={"p": field}, dest=dest)
        norms.append(np.linalg.norm(dest.dof_values.numpy()))
    assert norms[0] == 0.0 and norms[1] > 0.0


def test_warp_pic_quadrature_cache_across_geometries():
    @fem.integrand
    def piecewise_constant(s: fem.Sample):
        return float(s.element_index)

    for geometry, expected in ((fem.Grid3D(res=wp.vec3i(2, 1, 1)), 0.5),
                               (fem.Grid2D(res=wp.vec2i(2, 1), bounds_hi=wp.vec2(2.0, 2.0)), 2.0)):
        domain = fem.Cells(geometry)
        quadrature = fem.PicQuadrature(domain, positions=(
            wp.array([1], dtype=int), wp.full(1, wp.vec3(0.5), dtype=wp.vec3)))
        space = fem.make_collocated_function_space(fem.PointBasisSpace(quadrature))
        restriction = fem.make_space_restriction(space_topology=space.topology, domain=domain)
        assert restriction.node_count() == 1
        assert fem.integrate(piecewise_constant, quadrature=quadrature,
                             domain=domain) == pytest.approx(expected)


# ---- errors ---------------------------------------------------------------------------------


def _regular():
    geo = fem.Grid2D(res=wp.vec2i(1))
    return geo, fem.RegularQuadrature(fem.Cells(geo), order=0)


def test_rejects_invalid_kernel_argument_types():
    _, quadrature = _regular()
    with pytest.raises(TypeError, match=r"Radial kernel '_invalid_rbf_kernel_func' argument "
                                        r"types must be \(float32, int32\), got "
                                        r"\(int32, int32\)"):
        fem.PointBasisSpace(quadrature, kernel_func=_invalid_rbf_kernel_func)
    with pytest.raises(TypeError, match="must be a @wp.func"):
        fem.PointBasisSpace(quadrature, kernel_func=lambda d2, i: 1.0)
    with pytest.raises(TypeError, match="must take the parameters of 'gauss'"):
        fem.PointBasisSpace(quadrature, kernel_func=gauss, kernel_grad_func=_rbf_kernel_func)
    f64 = fem.RegularQuadrature(fem.Cells(fem.Grid2D(res=wp.vec2i(1), scalar_type=wp.float64)),
                                order=0)
    with pytest.raises(TypeError, match=r"\(float32 or float64, int32\)"):
        fem.PointBasisSpace(f64, kernel_func=_invalid_rbf_kernel_func)


def test_rejects_bad_values_and_domains(caplog):
    geo, quadrature = _regular()
    with pytest.raises(ValueError, match="'radiu' does not match any of the function 'gauss'"):
        fem.PointBasisSpace(quadrature, kernel_func=gauss, kernel_values={"radiu": 1.0})
    with pytest.raises(ValueError, match="'radius' of type 'str' is incompatible"):
        fem.PointBasisSpace(quadrature, kernel_func=gauss, kernel_values={"radius": "x",
                                                                          "scale": 1.0})
    with caplog.at_level(logging.WARNING, logger="kernelc.fem"):
        fem.PointBasisSpace(quadrature, kernel_func=gauss, kernel_values={"radius": 1.0})
    assert "Missing values for parameter(s) 'scale'" in caplog.text
    with pytest.raises(ValueError, match="distance_space"):
        fem.PointBasisSpace(quadrature, distance_space="physical")
    with pytest.raises(ValueError, match="span the whole geometry partition"):
        fem.PointBasisSpace(fem.RegularQuadrature(fem.Sides(geo), order=0))
    big = fem.Grid2D(res=wp.vec2i(2))
    sub = fem.Subdomain(fem.Cells(big), element_indices=wp.array([0, 3], dtype=int))
    with pytest.raises(ValueError, match="span the whole geometry partition"):
        fem.PointBasisSpace(fem.RegularQuadrature(sub, order=0))
