"""fem.interpolate at the nodes of point basis spaces, differentiable Jacobians into sparse
matrices, `bsr_options`, restriction and partition rebuilds, and a few API edges."""

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from kernelc.sparse import bsr_copy, bsr_zeros


@fem.integrand
def _xy(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return x[0] * x[1] + 2.0 * x[0]


@fem.integrand
def _grad_of(s: fem.Sample, p: fem.Field):
    return fem.grad(p, s)


@fem.integrand
def _scaled(s: fem.Sample, u: fem.Field, scale: kc.array(dtype=float)):
    return u(s) * scale[0]


@fem.integrand
def _partition_value(s: fem.Sample, f: fem.Field, values: kc.array(dtype=float)):
    return values[fem.node_partition_index(f, s.qp_index)]


@fem.integrand
def _div_of(s: fem.Sample, p: fem.Field):
    return fem.div(p, s)


@kc.kernel
def _sum(v: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(out, 0, v[i])


def _unit_quad(rng):
    corners = np.array([[0.0, 0.0], [0.0, 2.0], [2.0, 0.0], [2.0, 2.0]], np.float32)
    positions = kc.array(corners + rng.uniform(-0.1, 0.1, corners.shape).astype(np.float32),
                         dtype=kc.vec2, requires_grad=True)
    return fem.Quadmesh2D(kc.array([[0, 2, 3, 1]], dtype=int), positions), positions


def test_point_basis_nodes_take_values_and_gradients(rng):
    geo, positions = _unit_quad(rng)
    coords = rng.uniform(0.2, 0.8, (1, 3, 3)).astype(np.float32)
    coords[..., 2] = 0.0
    points = kc.array(coords, dtype=fem.Coords, requires_grad=True)
    quadrature = fem.ExplicitQuadrature(fem.Cells(geo), points=points,
                                        weights=kc.full((1, 3), 1.0 / 3.0, dtype=float))
    space = fem.make_collocated_function_space(fem.PointBasisSpace(quadrature), dtype=kc.vec2)
    scalar = fem.make_polynomial_space(geo, degree=2)
    p = scalar.make_field()
    fem.interpolate(_xy, dest=p)
    p.dof_values.requires_grad = True
    dest = space.make_field()
    dest.dof_values = kc.full(3, kc.vec2(-999.0), dtype=kc.vec2, requires_grad=True)
    tape = kc.Tape()
    with tape:
        fem.interpolate(_grad_of, dest=fem.make_restriction(dest), fields={"p": p})
    # world positions of the points, and the field's world gradient there (x y + 2 x)
    world = kc.zeros(3, dtype=kc.vec2)
    fem.PointBasisSpace(quadrature).node_positions(out=world)
    x = world.numpy()
    np.testing.assert_allclose(dest.dof_values.numpy(), np.stack(
        [x[:, 1] + 2.0, x[:, 0]], axis=1), rtol=2e-4, atol=2e-4)
    dest.dof_values.grad.assign(np.tile([1.0, 0.0], (3, 1)).astype(np.float32))
    tape.backward()
    assert np.abs(points.grad.numpy()).max() > 0.0  # the quadrature's own points
    assert np.abs(positions.grad.numpy()).max() > 0.0
    assert np.abs(p.dof_values.grad.numpy()).max() > 0.0


def test_point_basis_node_jacobian_matches_the_field_interpolation(rng):
    geo = fem.Grid2D(res=kc.vec2i(2))
    n = 5
    pic = fem.PicQuadrature(fem.Cells(geo), positions=kc.array(
        rng.uniform(0.05, 0.95, (n, 2)).astype(np.float32), dtype=kc.vec2))
    points = fem.make_collocated_function_space(fem.PointBasisSpace(pic), dtype=kc.vec2)
    scalar = fem.make_polynomial_space(geo, degree=2)
    p = scalar.make_field()
    p.dof_values = kc.array(rng.uniform(-1, 1, scalar.node_count()).astype(np.float32))
    direct = points.make_field()
    fem.interpolate(_grad_of, dest=direct, fields={"p": p})
    jacobian = bsr_zeros(points.node_count(), scalar.node_count(),
                         block_type=kc.types.matrix(shape=(2, 1), dtype=float))
    fem.interpolate(_grad_of, dest=jacobian, dest_space=points,
                    fields={"p": fem.make_trial(scalar)})
    np.testing.assert_allclose((jacobian @ p.dof_values).numpy().reshape(-1, 2),
                               direct.dof_values.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("topology", ["compact", "padded"])
def test_jacobian_values_are_differentiable(topology):
    geo = fem.Grid3D(res=kc.vec3i(3))
    space = fem.make_polynomial_space(geo, degree=2)
    trial_space = fem.make_polynomial_space(geo, degree=1, discontinuous=True)
    domain = fem.Subdomain(fem.Cells(geo), element_indices=kc.array([1, 4, 13], dtype=int))
    restriction = fem.make_space_restriction(space_topology=space.topology, domain=domain)
    matrix = bsr_zeros(space.node_count(), trial_space.node_count(), block_type=float)
    matrix.values = kc.empty(0, dtype=float, requires_grad=True)
    scale = kc.array([1.5], dtype=float, requires_grad=True)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    with kc.Tape() as tape:
        fem.interpolate(_scaled, dest=matrix, dest_space=space, at=restriction,
                        fields={"u": fem.make_trial(trial_space, domain=domain)},
                        values={"scale": scale}, reduction="first",
                        bsr_options={"topology": topology})
        compact = bsr_copy(matrix) if topology == "padded" else matrix
        count = compact.nnz_sync()
        kc.launch(_sum, dim=count, inputs=[compact.values[:count], loss])
    tape.backward(loss=loss)
    # the trial basis functions sum to one at each node
    nodes = restriction.node_count()
    np.testing.assert_allclose(loss.numpy(), [1.5 * nodes], rtol=1e-5)
    np.testing.assert_allclose(scale.grad.numpy(), [nodes], rtol=1e-5)
    if topology == "padded":  # room for one trial cell's nodes in each row that has blocks
        rows = np.diff(matrix.offsets.numpy())
        assert set(rows.tolist()) <= {0, trial_space.topology.MAX_NODES_PER_ELEMENT}
        assert (rows > 0).sum() == nodes
    else:  # "first": one stencil per node
        assert matrix.values.shape[0] <= nodes * trial_space.topology.MAX_NODES_PER_ELEMENT


def test_bsr_options_are_checked():
    geo = fem.Grid2D(res=kc.vec2i(2))
    space = fem.make_polynomial_space(geo, degree=1)
    fields = {"u": fem.make_trial(space), "v": fem.make_test(space)}
    form = _mass
    with pytest.raises(ValueError, match="Mapped FEM assembly requires"):
        fem.integrate(form, fields=fields, bsr_options={"construction": "mapped",
                                                        "prune_numerical_zeros": True})
    with pytest.raises(ValueError, match="Mapped FEM assembly requires"):
        fem.integrate(form, fields=fields, bsr_options={"construction": "mapped_atomic",
                                                        "topology": "padded"})
    with pytest.raises(ValueError, match="Unsupported BSR construction policy"):
        fem.integrate(form, fields=fields, bsr_options={"construction": "magic"})
    with pytest.raises(ValueError, match="Unsupported BSR capacity policy"):
        fem.integrate(form, fields=fields, bsr_options={"capacity": "more"})
    mapped = fem.integrate(form, fields=fields, bsr_options={"construction": "mapped"})
    plain = fem.integrate(form, fields=fields)
    x = kc.array(np.linspace(1.0, 2.0, space.node_count(), dtype=np.float32))
    np.testing.assert_allclose((mapped @ x).numpy(), (plain @ x).numpy(), rtol=1e-6)


@fem.integrand
def _mass(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


def test_restriction_and_partition_rebuild():
    geo = fem.Grid2D(res=kc.vec2i(4))
    space = fem.make_polynomial_space(geo, degree=1)
    mask = kc.zeros(geo.cell_count(), dtype=int)
    mask[:2].fill_(1)
    geo_partition = fem.ExplicitGeometryPartition(geo, mask)
    partition = fem.make_space_partition(space.topology, geometry_partition=geo_partition,
                                         with_halo=False)
    restriction = fem.make_space_restriction(space_partition=partition,
                                             domain=fem.Cells(geo_partition))
    before = restriction.node_arg_value()
    assert partition.node_count() == restriction.node_count() == 6
    mask[:8].fill_(1)
    geo_partition.rebuild(mask)
    partition.rebuild()
    restriction.rebuild()
    after = restriction.node_arg_value()
    assert partition.node_count() == restriction.node_count() == 15
    np.testing.assert_array_equal(after.dof_partition_indices.numpy(), np.arange(15))
    assert after.dof_partition_indices.ptr != before.dof_partition_indices.ptr
    # a subdomain's indices array, assigned in place (negative: no element)
    indices = kc.array([0, 10], dtype=int)  # two cells sharing no node
    domain = fem.Subdomain(fem.Cells(geo), element_indices=indices)
    sub = fem.make_space_restriction(space_topology=space.topology, domain=domain)
    assert sub.node_count() == 8
    indices.assign(np.array([-1, 10], dtype=np.int32))
    sub.rebuild()
    assert sub.node_count() == 4


def test_node_partition_index_of_a_partial_field():
    geo = fem.Grid2D(res=kc.vec2i(2))
    space = fem.make_polynomial_space(geo, degree=1)
    partition = fem.make_space_partition(space.topology, fem.LinearGeometryPartition(geo, 2, 4),
                                         with_halo=False)
    field = fem.make_discrete_field(space, space_partition=partition)
    values = kc.array(np.arange(1.0, 5.0, dtype=np.float32))
    quadrature = fem.NodalQuadrature(fem.Cells(partition.geo_partition), space)
    got = fem.integrate(_partition_value, quadrature=quadrature, fields={"f": field},
                        values={"values": values})
    # one cell of area 1/4, each of its 4 nodes weighing 1/4
    assert got == pytest.approx(0.25 * 0.25 * (1.0 + 2.0 + 3.0 + 4.0), rel=1e-6)


def test_symmetric_mapper_round_trips_exactly_on_the_host():
    for mapping in fem.SymmetricTensorMapper.Mapping:
        for dtype in (kc.mat22, kc.mat33):
            mapper = fem.SymmetricTensorMapper(dtype, mapping=mapping)
            for k in range(mapper.DOF_SIZE):
                dofs = np.zeros(mapper.DOF_SIZE, np.float32)
                dofs[k] = 1.0
                back = mapper.value_to_dof(mapper.dof_to_value(mapper.dof_dtype(dofs)))
                np.testing.assert_array_equal(np.array(back), dofs)
    assert fem.SkewSymmetricTensorMapper(kc.mat22).dof_dtype is float


def test_api_edges():
    with pytest.raises(TypeError, match="space_topology"):
        fem.make_space_partition()
    geo = fem.Grid2D(res=kc.vec2i(2))
    space = fem.make_polynomial_space(geo, degree=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'space'"):
        fem.make_space_partition(space=space)
    matrix_space = fem.make_polynomial_space(geo, degree=1, dtype=kc.mat22)
    with pytest.raises(kc.KernelError, match="Operator `grad` is not defined"):
        fem.interpolate(_grad_of, at=fem.Cells(geo), dest=kc.zeros(4, dtype=kc.vec2),
                        fields={"p": matrix_space.make_field()})
    with pytest.raises(kc.KernelError, match="Operator `div` is not defined"):
        fem.interpolate(_div_of, at=fem.Cells(geo), dest=kc.zeros(4, dtype=float),
                        fields={"p": space.make_field()})
