"""Finite-element programs on subdomains, field restrictions and nodal quadratures, and
gradients through `integrate` and `interpolate` on a tape, for tests/test_fem_subdomain.py,
written against Warp's `warp.fem` API.

This file runs as is with kernelc; the tests also run a copy whose imports say `warp`
instead of `kernelc` (in a Warp subprocess, with backward kernels on) and compare what both
return. Bilinear forms ask for Warp's "generic" assembly, the one kernelc implements.
"""

import numpy as np

import kernelc as wp
import kernelc.fem as fem
from tests.fem_harness import block_csr, flat


@fem.integrand
def classify_sides(s: fem.Sample, domain: fem.Domain, left: wp.array(dtype=int),
                   lower: wp.array(dtype=int)):
    # marks the sides x = 0 with y < 0.5, and every side y = 0 (as the Darcy example does)
    nor = fem.normal(domain, s)
    pos = domain(s)
    if nor[0] < -0.5 and pos[1] < 0.5:
        left[s.qp_index] = 1
    if nor[1] < -0.5:
        lower[s.qp_index] = 1


@fem.integrand
def one_form(s: fem.Sample):
    return 1.0


@fem.integrand
def weighted_length_form(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return 1.0 + x[0] * x[0] + 2.0 * x[1]


@fem.integrand
def source_form(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    x = domain(s)
    return wp.sin(3.0 * x[0]) * wp.cos(2.0 * x[1]) * v(s)


@fem.integrand
def identity_form(s: fem.Sample, p: fem.Field, q: fem.Field):
    return p(s) * q(s)


@fem.integrand
def diffusion_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(fem.grad(u, s), fem.grad(v, s))


@fem.integrand
def position_and_index(s: fem.Sample, domain: fem.Domain, index: wp.array(dtype=int)):
    index[s.qp_index] = s.element_index
    x = domain(s)
    return x[0] + 10.0 * x[1]


@fem.integrand
def polynomial(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return x[0] * x[0] - 2.0 * x[0] * x[1] + 0.5


@fem.integrand
def qp_weighted_source(s: fem.Sample, domain: fem.Domain, v: fem.Field,
                       nodal: wp.array(dtype=float)):
    # s.qp_index is the node of the nodal quadrature point
    return nodal[s.qp_index] * v(s)


@fem.integrand
def field_minus_nodal(s: fem.Sample, domain: fem.Domain, u: fem.Field,
                      nodal: wp.array(dtype=float)):
    return u(s) - nodal[s.qp_index] / (fem.measure(domain, s) * s.qp_weight)


@fem.integrand
def flux_loss(s: fem.Sample, domain: fem.Domain, k: fem.Field, p: fem.Field):
    return wp.exp(k(s)) * wp.dot(fem.grad(p, s), fem.normal(domain, s))


@fem.integrand
def energy_loss(s: fem.Sample, u: fem.Field, scale: wp.array(dtype=float)):
    return scale[0] * u(s) * u(s) + wp.sin(u(s))


@fem.integrand
def nonlinear_rhs(s: fem.Sample, u: fem.Field, k: fem.Field, v: fem.Field):
    return wp.exp(k(s)) * wp.dot(fem.grad(u, s), fem.grad(v, s)) + u(s) * u(s) * v(s)


@fem.integrand
def semi_lagrangian(s: fem.Sample, domain: fem.Domain, phi: fem.Field, velocity: fem.Field,
                    dt: float):
    x_prev = domain(s) - velocity(s) * dt
    s_prev = fem.lookup(domain, x_prev, guess=s)
    return phi(s_prev)


def make_grid():
    return fem.Grid2D(res=wp.vec2i(5, 4), bounds_lo=wp.vec2(0.0, 0.0), bounds_hi=wp.vec2(1.25, 1.0))


def _boundary_subdomains(geo):
    boundary = fem.BoundarySides(geo)
    left = wp.zeros(shape=boundary.element_count(), dtype=int)
    lower = wp.zeros(shape=boundary.element_count(), dtype=int)
    fem.interpolate(classify_sides, at=fem.RegularQuadrature(boundary, order=0),
                    values={"left": left, "lower": lower})
    return (left, lower, fem.Subdomain(boundary, element_mask=left),
            fem.Subdomain(boundary, element_mask=lower))


def subdomain_forms() -> dict:
    """Forms over subdomains of boundary sides (from masks) and of cells (from indices)."""
    out = {}
    geo = make_grid()
    left_mask, lower_mask, left, lower = _boundary_subdomains(geo)
    cells = fem.Subdomain(fem.Cells(geo), element_indices=wp.array([0, 3, 4, 9, 17], dtype=int))
    out["masks"] = np.stack([left_mask.numpy(), lower_mask.numpy()])
    out["counts"] = np.array([left.element_count(), lower.element_count(),
                              cells.element_count()])
    out["left_length"] = np.array(fem.integrate(one_form, domain=left))
    out["lower_weighted"] = np.array(fem.integrate(weighted_length_form, domain=lower))
    out["cells_weighted"] = np.array(fem.integrate(weighted_length_form, domain=cells))

    space = fem.make_polynomial_space(geo, degree=2)
    for name, domain in (("left", left), ("lower", lower), ("cells", cells)):
        test = fem.make_test(space=space, domain=domain)
        out[f"{name}_rhs"] = fem.integrate(source_form, fields={"v": test}).numpy()
        out[f"{name}_nodes"] = np.array([test.space_restriction.node_count_sync()])

    # the Darcy example's projector and prescribed values on boundary subdomains
    bd_test = fem.make_test(space=space, domain=left)
    bd_trial = fem.make_trial(space=space, domain=left)
    projector = fem.integrate(identity_form, fields={"p": bd_trial, "q": bd_test},
                              assembly="nodal", output_dtype=float)
    value = fem.integrate(identity_form, fields={"p": fem.UniformField(left, 1.0), "q": bd_test},
                          assembly="nodal", output_dtype=float)
    fem.normalize_dirichlet_projector(projector, value)
    flat("left_projector", block_csr(projector), out)
    out["left_value"] = value.numpy()

    cell_test = fem.make_test(space=space, domain=cells)
    cell_trial = fem.make_trial(space=space, domain=cells)
    stiffness = fem.integrate(diffusion_form, fields={"u": cell_trial, "v": cell_test},
                              assembly="generic", output_dtype=float)
    flat("cells_stiffness", block_csr(stiffness), out)

    quadrature = fem.RegularQuadrature(lower, order=2)
    index = wp.full(quadrature.total_point_count(), -7, dtype=int)
    values = wp.zeros(quadrature.total_point_count(), dtype=float)
    fem.interpolate(position_and_index, at=quadrature, dest=values, values={"index": index})
    out["lower_qp_values"] = values.numpy()
    out["lower_qp_elements"] = index.numpy()
    return out


def restriction_programs() -> dict:
    """Interpolation into field restrictions and at domains."""
    out = {}
    geo = make_grid()
    cells = fem.Subdomain(fem.Cells(geo), element_indices=wp.array([1, 2, 6, 11, 19], dtype=int))
    for degree, discontinuous in ((2, False), (1, True)):
        space = fem.make_polynomial_space(geo, degree=degree, discontinuous=discontinuous)
        key = f"{degree}{'d' if discontinuous else 'c'}"

        field = fem.make_discrete_field(space=space)
        field.dof_values.fill_(-3.0)
        fem.interpolate(polynomial, dest=fem.make_restriction(field, domain=cells))
        out[f"restricted_{key}"] = field.dof_values.numpy()

        field.dof_values.fill_(-3.0)
        restriction = fem.make_space_restriction(space_partition=field.space_partition,
                                                 domain=cells)
        fem.interpolate(polynomial, dest=fem.make_restriction(field, space_restriction=restriction))
        out[f"space_restricted_{key}"] = field.dof_values.numpy()

        field.dof_values.fill_(-3.0)
        fem.interpolate(polynomial, dest=field, at=cells)
        out[f"at_domain_{key}"] = field.dof_values.numpy()

        field.dof_values.fill_(-3.0)
        fem.interpolate(polynomial, dest=fem.make_restriction(field, domain=fem.Cells(geo)))
        out[f"whole_{key}"] = field.dof_values.numpy()
    return out


def nodal_quadrature_programs() -> dict:
    """Integrals and interpolation at `NodalQuadrature` points."""
    out = {}
    geo = make_grid()
    domain = fem.Cells(geo)
    for degree, discontinuous in ((2, False), (2, True), (1, True)):
        key = f"{degree}{'d' if discontinuous else 'c'}"
        space = fem.make_polynomial_space(geo, degree=degree, discontinuous=discontinuous)
        quadrature = fem.NodalQuadrature(domain, space)
        out[f"counts_{key}"] = np.array([quadrature.total_point_count(),
                                         quadrature.max_points_per_element()])
        out[f"area_{key}"] = np.array(fem.integrate(weighted_length_form, quadrature=quadrature))
        test = fem.make_test(space=space, domain=domain)
        trial = fem.make_trial(space=space, domain=domain)
        nodal = wp.array(np.linspace(0.5, 2.0, space.node_count()), dtype=float)
        out[f"rhs_{key}"] = fem.integrate(qp_weighted_source, quadrature=quadrature,
                                          fields={"v": test}, values={"nodal": nodal}).numpy()
        mass = fem.integrate(identity_form, quadrature=quadrature,
                             fields={"p": trial, "q": test}, assembly="generic",
                             output_dtype=float)
        flat(f"mass_{key}", block_csr(mass), out)
        if discontinuous:  # each node in one cell: one write per point
            u = fem.make_discrete_field(space=space)
            fem.interpolate(polynomial, dest=u)
            dest = wp.zeros(space.node_count(), dtype=float)
            fem.interpolate(field_minus_nodal, at=quadrature, dest=dest, fields={"u": u},
                            values={"nodal": nodal})
            out[f"interpolated_{key}"] = dest.numpy()
    sub = fem.Subdomain(domain, element_indices=wp.array([2, 5, 7], dtype=int))
    space = fem.make_polynomial_space(geo, degree=2)
    out["sub_area"] = np.array(fem.integrate(one_form, quadrature=fem.NodalQuadrature(sub, space)))
    return out


def _random_field(space, seed, scale=1.0):
    field = fem.make_discrete_field(space=space)
    rng = np.random.default_rng(seed)
    field.dof_values.assign((scale * rng.standard_normal(space.node_count())).astype(np.float32))
    field.dof_values.requires_grad = True
    return field


def gradient_programs() -> dict:
    """Gradients through integrate (constant and linear forms) and interpolate (at nodes,
    through lookups, and at nodal quadrature points) on a tape."""
    out = {}
    geo = make_grid()
    _, _, left, lower = _boundary_subdomains(geo)
    space = fem.make_polynomial_space(geo, degree=2)
    k = _random_field(space, 1, 0.3)
    p = _random_field(space, 2)
    u = _random_field(space, 3, 0.5)
    scale = wp.array([1.5], dtype=float, requires_grad=True)

    # constant forms into a float32 output: flux over a boundary subdomain, energy on cells
    loss = wp.empty(1, dtype=float, requires_grad=True)
    energy = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        fem.integrate(flux_loss, fields={"k": k.trace(), "p": p.trace()}, domain=left,
                      output=loss)
        fem.integrate(energy_loss, fields={"u": u}, values={"scale": scale},
                      domain=fem.Cells(geo), output=energy, add=True)
    tape.backward(loss=loss)
    out["flux"] = loss.numpy().copy()
    out["flux_grad_k"] = k.dof_values.grad.numpy().copy()
    out["flux_grad_p"] = p.dof_values.grad.numpy().copy()
    tape.zero()
    tape.backward(loss=energy)
    out["energy"] = energy.numpy()
    out["energy_grad_u"] = u.dof_values.grad.numpy().copy()
    out["energy_grad_scale"] = scale.grad.numpy().copy()
    tape.zero()

    # a linear form, seeded with a gradient per node
    test = fem.make_test(space=space, domain=fem.Cells(geo))
    rhs = wp.empty(space.node_count(), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        fem.integrate(nonlinear_rhs, fields={"u": u, "k": k, "v": test}, output=rhs)
    seed = wp.array(np.cos(np.arange(space.node_count())), dtype=float)
    tape.backward(grads={rhs: seed})
    out["rhs"] = rhs.numpy()
    out["rhs_grad_u"] = u.dof_values.grad.numpy().copy()
    out["rhs_grad_k"] = k.dof_values.grad.numpy().copy()
    tape.zero()

    # a semi-Lagrangian step into a field restriction, then a constant form of the result
    v_space = fem.make_polynomial_space(geo, degree=2, dtype=wp.vec2)
    velocity = fem.make_discrete_field(space=v_space)
    rng = np.random.default_rng(4)
    velocity.dof_values.assign((0.2 * rng.standard_normal((v_space.node_count(), 2))
                                ).astype(np.float32))
    velocity.dof_values.requires_grad = True
    phi = fem.make_discrete_field(space=space)
    fem.interpolate(polynomial, dest=phi)
    phi.dof_values.requires_grad = True
    advected = fem.make_discrete_field(space=space)
    advected.dof_values.requires_grad = True
    total = wp.empty(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        fem.interpolate(semi_lagrangian, dest=fem.make_restriction(advected, domain=fem.Cells(geo)),
                        fields={"phi": phi, "velocity": velocity}, values={"dt": 0.5})
        fem.integrate(energy_loss, fields={"u": advected}, values={"scale": scale},
                      domain=fem.Cells(geo), output=total)
    tape.backward(loss=total)
    out["advected"] = advected.dof_values.numpy()
    out["advected_total"] = total.numpy()
    out["advected_grad_velocity"] = velocity.dof_values.grad.numpy().copy()
    out["advected_grad_phi"] = phi.dof_values.grad.numpy().copy()
    tape.zero()

    # interpolation at nodal quadrature points into an array, then its energy
    dg_space = fem.make_polynomial_space(geo, degree=1, discontinuous=True)
    w = _random_field(dg_space, 5)
    nodal = wp.array(np.linspace(0.1, 0.4, dg_space.node_count()), dtype=float,
                     requires_grad=True)
    result = fem.make_discrete_field(space=dg_space)
    result.dof_values.requires_grad = True
    total = wp.empty(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        fem.interpolate(field_minus_nodal, at=fem.NodalQuadrature(fem.Cells(geo), dg_space),
                        dest=result.dof_values, fields={"u": w}, values={"nodal": nodal})
        fem.integrate(energy_loss, fields={"u": result}, values={"scale": scale},
                      domain=fem.Cells(geo), output=total)
    tape.backward(loss=total)
    out["nodal_total"] = total.numpy()
    out["nodal_grad_w"] = w.dof_values.grad.numpy().copy()
    out["nodal_grad_nodal"] = nodal.grad.numpy().copy()
    tape.zero()
    return out


@fem.integrand
def shape_loss(s: fem.Sample, domain: fem.Domain, u: fem.Field):
    # depends on the vertex positions through the measure, the gradient and the position
    F = fem.deformation_gradient(domain, s)
    x = domain(s)
    return wp.dot(fem.grad(u, s), fem.grad(u, s)) + wp.determinant(F) * x[1] + u(s) * x[0]


@fem.integrand
def side_loss(s: fem.Sample, domain: fem.Domain, u: fem.Field):
    n = fem.normal(domain, s)
    return u(s) * n[0] + fem.measure(domain, s)


def position_gradient_programs() -> dict:
    """Gradients with respect to the vertex positions of a triangle mesh (as the elastic
    shape optimisation example takes them), through cell and boundary-side integrals."""
    out = {}
    res = (4, 3)
    x, y = np.meshgrid(np.linspace(0.0, 1.0, res[0] + 1), np.linspace(0.0, 0.75, res[1] + 1),
                       indexing="ij")
    rng = np.random.default_rng(6)
    points = np.stack([x.ravel(), y.ravel()], axis=1)
    points += 0.03 * rng.standard_normal(points.shape)
    positions = wp.array(points.astype(np.float32), dtype=wp.vec2, requires_grad=True)
    tris = np.array([[i * (res[1] + 1) + j, (i + 1) * (res[1] + 1) + j, i * (res[1] + 1) + j + 1]
                     for i in range(res[0]) for j in range(res[1])]
                    + [[(i + 1) * (res[1] + 1) + j, (i + 1) * (res[1] + 1) + j + 1,
                        i * (res[1] + 1) + j + 1] for i in range(res[0]) for j in range(res[1])])
    geo = fem.Trimesh2D(tri_vertex_indices=wp.array(tris, dtype=int), positions=positions,
                        build_bvh=True)
    space = fem.make_polynomial_space(geo, degree=2)
    u = _random_field(space, 7, 0.5)
    cells, boundary = fem.Cells(geo), fem.BoundarySides(geo)
    total = wp.empty(1, dtype=float, requires_grad=True)
    sides = wp.empty(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        fem.integrate(shape_loss, fields={"u": u}, domain=cells, output=total)
        fem.integrate(side_loss, fields={"u": u.trace()}, domain=boundary, output=sides)
    tape.backward(loss=total)
    out["cells_loss"] = total.numpy().copy()
    out["cells_grad_positions"] = positions.grad.numpy().copy()
    out["cells_grad_u"] = u.dof_values.grad.numpy().copy()
    tape.zero()
    tape.backward(loss=sides)
    out["sides_loss"] = sides.numpy().copy()
    out["sides_grad_positions"] = positions.grad.numpy().copy()
    out["sides_grad_u"] = u.dof_values.grad.numpy().copy()
    tape.zero()
    return out


def run_all() -> dict:
    """Every program, keys prefixed "sub.", "res.", "nq.", "grad." and "shape."."""
    parts = {}
    for name, program in (("sub", subdomain_forms), ("res", restriction_programs),
                          ("nq", nodal_quadrature_programs), ("grad", gradient_programs),
                          ("shape", position_gradient_programs)):
        parts.update({f"{name}.{key}": value for key, value in program().items()})
    return parts


__all__ = ["gradient_programs", "make_grid", "nodal_quadrature_programs",
           "position_gradient_programs", "restriction_programs", "run_all", "subdomain_forms"]
