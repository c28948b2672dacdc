"""`fem.interpolate` of integrands with a trial field into a `BsrMatrix` (the Jacobian
with respect to the trial dofs), checked against NumPy: the matrix times random dofs is
the interpolation of the discrete field with those dofs. Warp 1.19 gives the same matrices
(compared by hand on a `Grid2D`: entries within 2.4e-7, same non-zero counts)."""

import numpy as np
import pytest

import kernelc as wp
import kernelc.fem as fem
from kernelc.sparse import bsr_zeros

RNG_SEED = 7


@fem.integrand
def grad_of(s: fem.Sample, p: fem.Field):
    return fem.grad(p, s)


@fem.integrand
def scaled_value(s: fem.Sample, p: fem.Field, a: float):
    return a * p(s)


@fem.integrand
def first_component(s: fem.Sample, p: fem.Field):
    return p(s)[0]


def _dense(m) -> np.ndarray:
    nnz = m.nnz_sync()
    offsets, cols = m.offsets.numpy()[: m.nrow + 1], m.columns.numpy()[:nnz]
    vals = m.values.numpy()[:nnz]
    rows, ncols = m.block_shape
    out = np.zeros((m.nrow * rows, m.ncol * ncols))
    for r in range(m.nrow):
        for b in range(offsets[r], offsets[r + 1]):
            out[r * rows:(r + 1) * rows, cols[b] * ncols:(cols[b] + 1) * ncols] = \
                np.asarray(vals[b]).reshape(rows, ncols)
    return out


def _random_field(space, rng):
    field = space.make_field()
    shape = field.dof_values.numpy().shape
    field.dof_values = wp.array(rng.uniform(0.5, 1.5, size=shape).astype(np.float32),
                                dtype=space.dof_dtype)
    return field


def _poisoned(nrow, ncol, block_type):
    """A matrix already holding blocks (all NaN), which interpolation must replace."""
    m = bsr_zeros(nrow, ncol, block_type)
    rows = wp.array(np.arange(nrow, dtype=np.int32), dtype=wp.int32)
    cols = wp.array(np.zeros(nrow, dtype=np.int32), dtype=wp.int32)
    shape = (1, 1) if block_type in (wp.float32, float) else block_type._shape_
    from kernelc.sparse import bsr_set_from_triplets

    vals = wp.array(np.full((nrow, *shape), np.nan, dtype=np.float32), dtype=wp.float32)
    bsr_set_from_triplets(m, rows, cols, vals, prune_numerical_zeros=False)
    return m


def test_scalar_gradient_at_quadrature_points():
    rng = np.random.default_rng(RNG_SEED)
    geo = fem.Grid2D(res=wp.vec2i(3, 2), bounds_hi=wp.vec2(1.5, 1.0))
    space = fem.make_polynomial_space(geo, degree=2)
    field = _random_field(space, rng)
    quadrature = fem.RegularQuadrature(fem.Cells(geo), order=3)
    n = quadrature.total_point_count()
    jac = _poisoned(n, space.node_count(), wp.types.matrix(shape=(2, 1), dtype=float))
    fem.interpolate(grad_of, dest=jac, at=quadrature, fields={"p": fem.make_trial(space)})
    expected = wp.full(n, wp.vec2(np.nan), dtype=wp.vec2)
    fem.interpolate(grad_of, dest=expected, at=quadrature, fields={"p": field})
    got = _dense(jac) @ field.dof_values.numpy()
    np.testing.assert_allclose(got.reshape(n, 2), expected.numpy(), rtol=2e-5, atol=2e-5)
    assert np.all(np.isfinite(jac.values.numpy()[: jac.nnz_sync()]))


def test_scalar_value_with_a_value_argument_on_triangles_and_sides():
    rng = np.random.default_rng(RNG_SEED + 1)
    geo = fem.Grid2D(res=wp.vec2i(3))
    space = fem.make_polynomial_space(geo, degree=3)
    field = _random_field(space, rng)
    for domain in (fem.Cells(geo), fem.Sides(geo)):
        trial = fem.make_trial(space, domain=domain)
        quadrature = fem.RegularQuadrature(domain, order=2)
        n = quadrature.total_point_count()
        jac = bsr_zeros(n, space.node_count(), float)
        source = field if domain.element_kind == fem.ElementKind.CELL else field.trace()
        fem.interpolate(scaled_value, dest=jac, at=quadrature, fields={"p": trial},
                        values={"a": 3.0})
        expected = wp.full(n, np.nan, dtype=float)
        fem.interpolate(scaled_value, dest=expected, at=quadrature, fields={"p": source},
                        values={"a": 3.0})
        np.testing.assert_allclose(_dense(jac) @ field.dof_values.numpy(), expected.numpy(),
                                   rtol=2e-5)


def test_vector_trial_space_gradient_blocks():
    rng = np.random.default_rng(RNG_SEED + 2)
    geo = fem.Grid2D(res=wp.vec2i(2, 3))
    space = fem.make_polynomial_space(geo, degree=1, dtype=wp.vec2)
    field = _random_field(space, rng)
    quadrature = fem.RegularQuadrature(fem.Cells(geo), order=2)
    n = quadrature.total_point_count()
    jac = bsr_zeros(n, space.node_count(), wp.types.matrix(shape=(4, 2), dtype=float))
    fem.interpolate(grad_of, dest=jac, at=quadrature, fields={"p": fem.make_trial(space)})
    expected = wp.full(n, wp.mat22(np.nan), dtype=wp.mat22)
    fem.interpolate(grad_of, dest=expected, at=quadrature, fields={"p": field})
    got = _dense(jac) @ field.dof_values.numpy().reshape(-1)
    np.testing.assert_allclose(got.reshape(n, 2, 2), expected.numpy(), rtol=2e-5, atol=2e-6)
    # one point per cell with `at` a domain; a scalar out of a vector field
    cells = bsr_zeros(geo.cell_count(), space.node_count(), wp.types.matrix(shape=(1, 2),
                                                                             dtype=float))
    fem.interpolate(first_component, dest=cells, at=fem.Cells(geo),
                    fields={"p": fem.make_trial(space)})
    centres = wp.full(geo.cell_count(), np.nan, dtype=float)
    fem.interpolate(first_component, dest=centres, at=fem.Cells(geo), fields={"p": field})
    np.testing.assert_allclose(_dense(cells) @ field.dof_values.numpy().reshape(-1),
                               centres.numpy(), rtol=2e-6)


def test_particles():
    rng = np.random.default_rng(RNG_SEED + 3)
    geo = fem.Grid2D(res=wp.vec2i(3))
    space = fem.make_polynomial_space(geo, degree=2)
    field = _random_field(space, rng)
    positions = wp.array(rng.uniform(0.05, 0.95, size=(20, 2)).astype(np.float32), dtype=wp.vec2)
    pic = fem.PicQuadrature(fem.Cells(geo), positions)
    jac = bsr_zeros(20, space.node_count(), wp.types.matrix(shape=(2, 1), dtype=float))
    fem.interpolate(grad_of, dest=jac, at=pic, fields={"p": fem.make_trial(space)})
    expected = wp.full(20, wp.vec2(np.nan), dtype=wp.vec2)
    fem.interpolate(grad_of, dest=expected, at=pic, fields={"p": field})
    got = _dense(jac) @ field.dof_values.numpy()
    np.testing.assert_allclose(got.reshape(20, 2), expected.numpy(), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("reduction", ["weighted_average", "mean", "first"])
def test_at_nodes_of_a_dest_space(reduction):
    rng = np.random.default_rng(RNG_SEED + 4)
    geo = fem.Grid2D(res=wp.vec2i(3, 2), bounds_hi=wp.vec2(3.0, 1.0))
    space = fem.make_polynomial_space(geo, degree=2, discontinuous=True)
    dest_space = fem.make_polynomial_space(geo, degree=1)
    field = _random_field(space, rng)
    jac = bsr_zeros(dest_space.node_count(), space.node_count(), float)
    fem.interpolate(scaled_value, dest=jac, dest_space=dest_space,
                    at=fem.make_space_restriction(space_topology=dest_space.topology,
                                                  domain=fem.Cells(geo)),
                    fields={"p": fem.make_trial(space)}, values={"a": 2.0},
                    reduction=reduction)
    expected = dest_space.make_field()
    expected.dof_values.fill_(np.nan)
    fem.interpolate(scaled_value, dest=expected, fields={"p": field}, values={"a": 2.0},
                    reduction=reduction)
    np.testing.assert_allclose(_dense(jac) @ field.dof_values.numpy(),
                               expected.dof_values.numpy(), rtol=2e-6)


def test_vector_dest_space_nodes():
    rng = np.random.default_rng(RNG_SEED + 5)
    geo = fem.Grid2D(res=wp.vec2i(2))
    space = fem.make_polynomial_space(geo, degree=2)
    dest_space = fem.make_polynomial_space(geo, degree=1, dtype=wp.vec2, discontinuous=True)
    field = _random_field(space, rng)
    jac = bsr_zeros(dest_space.node_count(), space.node_count(),
                    wp.types.matrix(shape=(2, 1), dtype=float))
    fem.interpolate(grad_of, dest=jac, dest_space=dest_space, fields={"p": fem.make_trial(space)})
    expected = dest_space.make_field()
    fem.interpolate(grad_of, dest=expected, fields={"p": field})
    got = _dense(jac) @ field.dof_values.numpy()
    np.testing.assert_allclose(got.reshape(-1, 2), expected.dof_values.numpy(), rtol=2e-5,
                               atol=2e-5)


def test_zero_blocks_are_pruned_unless_asked():
    positions = wp.array([[0.0, 0.0], [0.0, 2.0], [2.0, 0.0], [2.0, 2.0]], dtype=wp.vec2)
    geo = fem.Quadmesh2D(wp.array([[0, 2, 3, 1]], dtype=int), positions)
    space = fem.make_polynomial_space(geo, degree=2)
    centre = fem.RegularQuadrature(fem.Cells(geo), order=0)
    block = wp.types.matrix(shape=(2, 1), dtype=float)
    jac = bsr_zeros(1, space.node_count(), block)
    fem.interpolate(grad_of, dest=jac, at=centre, fields={"p": fem.make_trial(space)})
    assert jac.nnz_sync() == 4  # Warp's count: the gradients at the centre of the edge nodes
    fem.interpolate(grad_of, dest=jac, at=centre, fields={"p": fem.make_trial(space)},
                    bsr_options={"prune_numerical_zeros": False})
    assert jac.nnz_sync() == 9


def test_errors():
    geo = fem.Grid2D(res=wp.vec2i(2))
    space = fem.make_polynomial_space(geo, degree=1)
    trial = fem.make_trial(space)
    quadrature = fem.RegularQuadrature(fem.Cells(geo), order=0)
    n = quadrature.total_point_count()
    with pytest.raises(ValueError, match="requires 'dest' to be a `kernelc.sparse.BsrMatrix`"):
        fem.interpolate(grad_of, dest=wp.zeros(n, dtype=wp.vec2), at=quadrature,
                        fields={"p": trial})
    with pytest.raises(ValueError, match="must be a trial field"):
        fem.interpolate(grad_of, dest=bsr_zeros(n, 9, float), at=quadrature,
                        fields={"p": space.make_field()})
    block = wp.types.matrix(shape=(2, 1), dtype=float)
    with pytest.raises(RuntimeError, match=f"must have {n} rows and 9 columns of blocks"):
        fem.interpolate(grad_of, dest=bsr_zeros(n + 1, 9, block), at=quadrature,
                        fields={"p": trial})
    with pytest.raises(RuntimeError, match="blocks must have 1 columns"):
        fem.interpolate(grad_of, dest=bsr_zeros(n, 9, wp.types.matrix(shape=(2, 2), dtype=float)),
                        at=quadrature, fields={"p": trial})
    with pytest.raises(wp.KernelError, match="must have 3 coefficient") as err:
        fem.interpolate(grad_of, dest=bsr_zeros(n, 9, wp.types.matrix(shape=(3, 1), dtype=float)),
                        at=quadrature, fields={"p": trial})
    assert "test_fem_interpolate_jacobian.py:" in str(err.value)  # at the integrand's return
    with pytest.raises(ValueError, match="`dim` free samples"):
        fem.interpolate(grad_of, dest=bsr_zeros(4, 9, block), at=fem.Cells(geo), dim=4,
                        fields={"p": trial})
    restriction = fem.make_space_restriction(space_topology=space.topology,
                                             domain=fem.Cells(geo))
    with pytest.raises(ValueError, match="`dest_space` must be provided"):
        fem.interpolate(grad_of, dest=bsr_zeros(9, 9, block), at=restriction,
                        fields={"p": trial})
    with pytest.raises(RuntimeError, match="blocks must have 1 rows"):
        fem.interpolate(grad_of, dest=bsr_zeros(9, 9, block), at=restriction, dest_space=space,
                        fields={"p": trial})
