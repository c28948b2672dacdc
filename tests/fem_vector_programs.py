"""Vector- and tensor-valued finite-element programs for tests/test_fem_vector.py, written
against Warp's `warp.fem` API.

This file runs as is with kernelc; the tests also run a copy whose imports say `warp`
instead of `kernelc` (in a Warp subprocess) and compare what both return (the result
helpers come from `tests/fem_harness.py`, in both processes). Integrands
live here because both compilers read them from a file. The `bad_*` integrands are
compiled by kernelc only, to check where its errors point.
"""

import numpy as np

import kernelc as wp
import kernelc.fem as fem
from tests.fem_harness import block_csr, flat, prefixed


@fem.integrand
def viscosity_form(s: fem.Sample, u: fem.Field, v: fem.Field, nu: float):
    return nu * wp.ddot(fem.D(u, s), fem.D(v, s))


@fem.integrand
def grad_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.ddot(fem.grad(u, s), fem.grad(v, s)) + fem.curl(u, s) * fem.curl(v, s)


@fem.integrand
def vector_mass_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(u(s), v(s))


@fem.integrand
def div_form(s: fem.Sample, u: fem.Field, q: fem.Field):
    return q(s) * fem.div(u, s)


@fem.integrand
def tensor_div_form(s: fem.Sample, tau: fem.Field, v: fem.Field):
    return wp.dot(fem.div(tau, s), v(s)) + wp.ddot(tau(s), fem.grad(v, s))


@fem.integrand
def top_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    n = fem.normal(domain, s)
    return wp.dot(u(s), v(s)) * wp.max(0.0, n[1])


@fem.integrand
def nested_form(s: fem.Sample, u: fem.Field, v: fem.Field, dt: float, nu: float):
    # integrands calling integrands
    return vector_mass_form(s, u, v) / dt + viscosity_form(s, u, v, nu)


@fem.integrand
def side_vector_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    n = fem.normal(domain, s)
    return wp.dot(fem.jump(u, s), fem.average(v, s)) + fem.div_outer(u, s) * wp.dot(
        fem.outer(v, s), n)


@fem.integrand
def field_energy(s: fem.Sample, f: fem.Field):
    d = fem.D(f, s)
    return wp.ddot(d, d) + fem.div(f, s) * fem.div(f, s) + wp.dot(f(s), f(s))


@fem.integrand
def transported_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field,
                     dt: float):
    x = domain(s) - dt * u(s)
    back = u(fem.lookup(domain, x, s))
    return wp.dot(back, v(s))


@wp.func
def wall_velocity(x: wp.vec2, height: float, speed: float):
    if x[1] >= height:
        return wp.vec2(speed, 0.5 * speed)
    return wp.vec2(0.0, x[0])


def assemble_2d(res: int = 4) -> dict:
    """Forms of the Stokes and Navier-Stokes examples, and more, on a res x (res + 1) grid:
    Q2 velocities (vec2), Q1 pressures, a mat22 Q1 tensor space. All results as NumPy."""
    geo = fem.Grid2D(res=wp.vec2i(res, res + 1), bounds_lo=wp.vec2(-1.0, 0.5),
                     bounds_hi=wp.vec2(1.0, 2.0))
    u_space = fem.make_polynomial_space(geo, degree=2, dtype=wp.vec2)
    p_space = fem.make_polynomial_space(geo, degree=1)
    t_space = fem.make_polynomial_space(geo, degree=1, dtype=wp.mat22)
    cells, boundary = fem.Cells(geo), fem.BoundarySides(geo)
    u_test, u_trial = fem.make_test(u_space, domain=cells), fem.make_trial(u_space, domain=cells)
    out = {"u_node_count": np.array(u_space.node_count())}
    flat("viscosity", block_csr(fem.integrate(viscosity_form, fields={"u": u_trial, "v": u_test},
                                              values={"nu": 0.7}, output_dtype=wp.float64)), out)
    flat("grad", block_csr(fem.integrate(grad_form, fields={"u": u_trial, "v": u_test})), out)
    p_test = fem.make_test(p_space, domain=cells)
    flat("div", block_csr(fem.integrate(div_form, fields={"u": u_trial, "q": p_test},
                                        output_dtype=wp.float64)), out)
    t_trial = fem.make_trial(t_space, domain=cells)
    flat("tensor_div", block_csr(fem.integrate(tensor_div_form,
                                               fields={"tau": t_trial, "v": u_test})), out)
    flat("nested", block_csr(fem.integrate(nested_form, fields={"u": u_trial, "v": u_test},
                                           values={"dt": 0.25, "nu": 0.1})), out)

    bd_test = fem.make_test(u_space, domain=boundary)
    bd_trial = fem.make_trial(u_space, domain=boundary)
    lid = fem.UniformField(domain=boundary, value=wp.vec2(1.0, 0.25))
    out["top_rhs"] = fem.integrate(top_form, fields={"u": lid, "v": bd_test},
                                   output_dtype=wp.vec2d).numpy()
    out["top_rhs_scalars"] = fem.integrate(top_form, fields={"u": lid, "v": bd_test}).numpy()
    flat("bd_mass", block_csr(fem.integrate(vector_mass_form, fields={"u": bd_trial, "v": bd_test},
                                            output_dtype=wp.float64)), out)
    sides = fem.Sides(geo)
    flat("sides", block_csr(fem.integrate(side_vector_form,
                                          fields={"u": fem.make_trial(u_space, domain=sides),
                                                  "v": fem.make_test(u_space, domain=sides)})), out)

    # Dirichlet conditions with 2x2 blocks, from an implicit field (Navier-Stokes's way)
    projector = fem.integrate(vector_mass_form, fields={"u": bd_trial, "v": bd_test},
                              assembly="nodal", output_dtype=wp.float64)
    wall = fem.ImplicitField(domain=boundary, func=wall_velocity,
                             values={"height": 2.0, "speed": 3.0})
    fixed = fem.integrate(vector_mass_form, fields={"u": wall, "v": bd_test}, assembly="nodal",
                          output_dtype=wp.vec2d)
    flat("projector", block_csr(projector), out)
    out["fixed"] = fixed.numpy().copy()
    matrix = fem.integrate(viscosity_form, fields={"u": u_trial, "v": u_test},
                           values={"nu": 1.0}, output_dtype=wp.float64)
    rhs = fem.integrate(vector_mass_form, fields={"u": fem.UniformField(cells, wp.vec2(1.0, -2.0)),
                                                  "v": u_test}, output_dtype=wp.vec2d)
    fem.project_linear_system(matrix, rhs, projector, fixed)
    flat("projected", block_csr(matrix), out)
    out["projected_rhs"] = rhs.numpy()
    out["normalized_fixed"] = fixed.numpy()

    # a discrete vector field: energy, transport by lookup, interpolation at nodes
    field = u_space.make_field()
    positions = u_space.node_positions().numpy()
    field.dof_values = wp.array(np.stack([np.sin(positions[:, 1]), positions[:, 0] ** 2], axis=1),
                                dtype=wp.vec2)
    out["energy"] = np.array(fem.integrate(field_energy, fields={"f": field}, domain=cells))
    out["transported"] = fem.integrate(transported_form, fields={"u": field, "v": u_test},
                                       values={"dt": 0.3}).numpy()
    return out


def assemble_3d(res: int = 2) -> dict:
    """Vector forms on a Grid3D (Q1 vec3: symmetric gradients, curls, divergences)."""
    geo = fem.Grid3D(res=wp.vec3i(res, res + 1, res), bounds_hi=wp.vec3(1.0, 1.5, 0.5))
    u_space = fem.make_polynomial_space(geo, degree=1, dtype=wp.vec3)
    cells = fem.Cells(geo)
    test, trial = fem.make_test(u_space, domain=cells), fem.make_trial(u_space, domain=cells)
    out = {}
    flat("viscosity", block_csr(fem.integrate(viscosity_form, fields={"u": trial, "v": test},
                                              values={"nu": 1.0})), out)
    flat("curl", block_csr(fem.integrate(curl_3d_form, fields={"u": trial, "v": test})), out)
    return out


@fem.integrand
def curl_3d_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(fem.curl(u, s), fem.curl(v, s)) + fem.div(u, s) * fem.div(v, s)


def run_all() -> dict:
    """Every program, keys prefixed "2d." and "3d."."""
    return prefixed({"2d": assemble_2d(), "3d": assemble_3d()})


# ---- kernelc only: wrong uses that must point at their line --------------------------------


@fem.integrand
def bad_div_of_scalar(s: fem.Sample, u: fem.Field, v: fem.Field):
    return fem.div(u, s) * v(s)  # BAD_DIV


@fem.integrand
def bad_D_of_scalar(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.ddot(fem.D(u, s), fem.D(v, s))  # BAD_D


@fem.integrand
def bad_grad_of_tensor(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.ddot(fem.grad(u, s), v(s))  # BAD_GRAD


@fem.integrand
def bad_nested_call(s: fem.Sample, u: fem.Field, v: fem.Field):
    return vector_mass_form(s, u, 1.0)  # BAD_NESTED


@fem.integrand
def bad_lookup(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    return wp.dot(u(fem.lookup(domain)), v(s))  # BAD_LOOKUP
