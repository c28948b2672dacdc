"""Discontinuous-Galerkin finite-element programs for tests/test_fem_dg.py, written against
Warp's `warp.fem` API.

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
def scalar_mass_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


@fem.integrand
def vector_mass_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(u(s), v(s))


@fem.integrand
def tensor_mass_form(s: fem.Sample, sig: fem.Field, tau: fem.Field):
    return wp.ddot(tau(s), sig(s))


@fem.integrand
def sip_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    # symmetric interior penalty, as in example_convection_diffusion_dg
    nor = fem.normal(domain, s)
    penalty = fem.measure_ratio(domain, s) * float(fem.degree(u) * fem.degree(v) + 1)
    return penalty * fem.jump(u, s) * fem.jump(v, s) - (
        wp.dot(fem.grad_average(u, s), nor) * fem.jump(v, s)
        + wp.dot(fem.grad_average(v, s), nor) * fem.jump(u, s))


@fem.integrand
def upwind_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field, w: wp.vec2,
                lo: wp.vec2, hi: wp.vec2):
    x = domain(s)
    vel_n = wp.dot(w, fem.normal(domain, s))
    if x[0] <= lo[0] or x[0] >= hi[0] or x[1] <= lo[1] or x[1] >= hi[1]:
        return u(s) * (-v(s) * vel_n + 0.5 * v(s) * wp.abs(vel_n))
    return fem.jump(u, s) * (-fem.average(v, s) * vel_n + 0.5 * fem.jump(v, s) * wp.abs(vel_n))


@fem.integrand
def vector_side_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    nor = fem.normal(domain, s)
    return wp.dot(fem.average(u, s), fem.jump(v, s)) * wp.abs(nor[0]) + wp.dot(
        fem.jump(u, s), fem.jump(v, s)) * (1.0 + fem.measure(domain, s))


@fem.integrand
def cell_transport_form(s: fem.Sample, u: fem.Field, v: fem.Field, w: fem.Field):
    return -wp.dot(fem.div(w, s) * v(s) + fem.grad(v, s) * w(s), u(s))


@fem.integrand
def node_mean(s: fem.Sample, f: fem.Field):
    # the mean of a field over its cell's nodes, as the positivity limiters compute it
    n = fem.node_count(f, s)
    total = f(s) * 0.0
    for k in range(n):
        total += f(fem.at_node(f, s, k))
    return total / float(n)


@fem.integrand
def wrapped_flux_form(s: fem.Sample, domain: fem.Domain, f: fem.Field, v: fem.Field,
                      lo: wp.vec2, hi: wp.vec2):
    # the state across a periodic boundary, as example_kelvin_helmholtz finds it
    pos = domain(s)
    if pos[0] <= lo[0] or pos[0] >= hi[0]:
        wrapped = wp.vec2(wp.where(pos[0] <= lo[0], hi[0] - 1.0e-4, lo[0] + 1.0e-4), pos[1])
        cell_domain = fem.cells(domain)
        f_cells = fem.cells(f)
        return wp.dot(f_cells(fem.lookup(cell_domain, wrapped, s)) - f(s), v(s))
    return wp.dot(fem.jump(f, s), fem.average(v, s))


@fem.integrand
def position_value(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return wp.vec2(wp.sin(2.0 * x[0]) + x[1], x[0] * x[1] - 0.5)


@fem.integrand
def scalar_source(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    x = domain(s)
    return (wp.cos(x[0]) + x[1] * x[1]) * v(s)


def _scalar_forms(geo, degree: int, family, out: dict, prefix: str) -> None:
    space = fem.make_polynomial_space(geo, degree=degree, discontinuous=True, family=family)
    cells, sides = fem.Cells(geo), fem.Sides(geo)
    test, trial = fem.make_test(space, domain=cells), fem.make_trial(space, domain=cells)
    side_test, side_trial = fem.make_test(space, domain=sides), fem.make_trial(space, domain=sides)
    out[f"{prefix}.node_count"] = np.array(space.node_count())
    out[f"{prefix}.positions"] = space.node_positions().numpy()
    flat(f"{prefix}.mass", block_csr(fem.integrate(scalar_mass_form,
                                                   fields={"u": trial, "v": test})), out)
    flat(f"{prefix}.nodal_mass", block_csr(fem.integrate(
        scalar_mass_form, fields={"u": trial, "v": test}, assembly="nodal")), out)
    flat(f"{prefix}.sip", block_csr(fem.integrate(sip_form, fields={"u": side_trial,
                                                                   "v": side_test})), out)
    lo, hi = geo.bounds_lo, geo.bounds_hi
    flat(f"{prefix}.upwind", block_csr(fem.integrate(
        upwind_form, fields={"u": side_trial, "v": side_test},
        values={"w": wp.vec2(0.7, -0.4), "lo": lo, "hi": hi})), out)
    out[f"{prefix}.source"] = fem.integrate(scalar_source, fields={"v": test}).numpy()
    field = space.make_field()
    x = space.node_positions().numpy()
    field.dof_values = wp.array(np.sin(3.0 * x[:, 0]) * np.cos(x[:, -1]) + 0.25,
                                dtype=geo.scalar_type)
    out[f"{prefix}.sip_rhs"] = fem.integrate(sip_form, fields={"u": field.trace(),
                                                               "v": side_test}).numpy()


def assemble_2d(res: int = 4) -> dict:
    """DG forms on a res x (res - 1) grid: scalar Q1 and Q2 (Gauss-Lobatto and
    Gauss-Legendre nodes), degree-0 vec2 values, Q2 Gauss-Legendre mat22 values."""
    geo = fem.Grid2D(res=wp.vec2i(res, res - 1), bounds_lo=wp.vec2(-1.0, 0.5),
                     bounds_hi=wp.vec2(1.0, 2.0))
    out = {}
    _scalar_forms(geo, 1, None, out, "q1")
    _scalar_forms(geo, 2, fem.Polynomial.GAUSS_LEGENDRE, out, "q2gl")
    _scalar_forms(geo, 2, fem.Polynomial.LOBATTO_GAUSS_LEGENDRE, out, "q2")
    cells, sides = fem.Cells(geo), fem.Sides(geo)

    # piecewise constants (vec2): mass, side jumps, interpolation
    basis0 = fem.make_polynomial_basis_space(geo, degree=0)
    p0 = fem.make_collocated_function_space(basis0, dtype=wp.vec2)
    out["p0.node_count"] = np.array(p0.node_count())
    out["p0.positions"] = p0.node_positions().numpy()
    flat("p0.nodal_mass", block_csr(fem.integrate(
        vector_mass_form, fields={"u": fem.make_trial(p0, domain=cells),
                                  "v": fem.make_test(p0, domain=cells)},
        assembly="nodal", output_dtype=float)), out)
    flat("p0.sides", block_csr(fem.integrate(
        vector_side_form, fields={"u": fem.make_trial(p0, domain=sides),
                                  "v": fem.make_test(p0, domain=sides)})), out)
    f0 = p0.make_field()
    fem.interpolate(position_value, dest=f0)
    out["p0.values"] = f0.dof_values.numpy()

    # Q1 vec2 (Burgers's space): interpolation, cell transport, node means, periodic sides
    basis1 = fem.make_polynomial_basis_space(geo, degree=1, discontinuous=True)
    v1 = fem.make_collocated_function_space(basis1, dtype=wp.vec2)
    f1 = v1.make_field()
    fem.interpolate(position_value, dest=f1)
    out["v1.values"] = f1.dof_values.numpy()
    v_test = fem.make_test(v1, domain=cells)
    out["v1.transport"] = fem.integrate(
        cell_transport_form, fields={"u": f1, "v": v_test, "w": f1}, output_dtype=wp.vec2,
        quadrature=fem.RegularQuadrature(order=3, domain=cells,
                                         family=fem.Polynomial.LOBATTO_GAUSS_LEGENDRE)).numpy()
    mean = v1.make_field()
    fem.interpolate(node_mean, dest=mean, fields={"f": f1})
    out["v1.node_mean"] = mean.dof_values.numpy()
    out["v1.wrapped"] = fem.integrate(
        wrapped_flux_form, fields={"f": f1.trace(), "v": fem.make_test(v1, domain=sides)},
        values={"lo": geo.bounds_lo, "hi": geo.bounds_hi}, output_dtype=wp.vec2).numpy()

    # Q2 Gauss-Legendre mat22 values (example_mixed_elasticity's stresses)
    t2 = fem.make_polynomial_space(geo, degree=2, discontinuous=True, dtype=wp.mat22,
                                   family=fem.Polynomial.GAUSS_LEGENDRE)
    t_test, t_trial = fem.make_test(t2, domain=cells), fem.make_trial(t2, domain=cells)
    flat("t2.nodal_mass", block_csr(fem.integrate(tensor_mass_form,
                                                  fields={"sig": t_trial, "tau": t_test},
                                                  assembly="nodal")), out)
    flat("t2.mass", block_csr(fem.integrate(tensor_mass_form,
                                            fields={"sig": t_trial, "tau": t_test})), out)
    return out


def assemble_3d(res: int = 2) -> dict:
    """Discontinuous Q1 and degree-0 scalars on a Grid3D: mass and interior penalty."""
    geo = fem.Grid3D(res=wp.vec3i(res, res + 1, res), bounds_hi=wp.vec3(1.0, 1.5, 0.5))
    out = {}
    sides = fem.Sides(geo)
    for name, degree in (("q1", 1), ("p0", 0)):
        space = fem.make_polynomial_space(geo, degree=degree, discontinuous=True)
        out[f"{name}.positions"] = space.node_positions().numpy()
        flat(f"{name}.sip", block_csr(fem.integrate(
            sip_form, fields={"u": fem.make_trial(space, domain=sides),
                              "v": fem.make_test(space, domain=sides)})), out)
    return out


def run_all() -> dict:
    """Every program, keys prefixed "2d." and "3d."."""
    return prefixed({"2d": assemble_2d(), "3d": assemble_3d()})


# ---- kernelc only: wrong uses that must point at their line --------------------------------


@fem.integrand
def bad_at_node_args(s: fem.Sample, f: fem.Field):
    return f(fem.at_node(f, s))  # BAD_AT_NODE_ARGS


@fem.integrand
def bad_cells_inline(s: fem.Sample, domain: fem.Domain, f: fem.Field):
    return wp.length(fem.cells(f))  # BAD_CELLS_INLINE


@fem.integrand
def bad_cells_of_value(s: fem.Sample, f: fem.Field, x: float):
    c = fem.cells(x)  # BAD_CELLS_VALUE
    return f(c)
