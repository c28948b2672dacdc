"""Finite-element programs for tests/test_fem.py, written against Warp's `warp.fem` API.

This file runs as is with kernelc; the tests also run a copy whose imports say `warp`
instead of `kernelc` (in a Warp subprocess) and compare what both return (the result
helpers come from `tests/fem_harness.py`, in both processes). Integrands
live here because both compilers read them from a file. The `bad_*` integrands are
compiled by kernelc only, to check where its errors point.
"""

import numpy as np

import kernelc as wp
import kernelc.fem as fem
from tests.fem_harness import flat


@fem.integrand
def value_form(s: fem.Sample, v: fem.Field):
    return v(s)


@fem.integrand
def mass_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


@fem.integrand
def stiffness_form(s: fem.Sample, u: fem.Field, v: fem.Field, nu: wp.float64):
    return fem.scalar_type(u)(nu) * wp.dot(fem.grad(u, s), fem.grad(v, s))


@fem.integrand
def one_form(s: fem.Sample, domain: fem.Domain):
    return fem.scalar_type(domain)(1.0)


@fem.integrand
def x_wall_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    # u v on the sides x = const only (|n_x| = 1 there, 0 on the others)
    n = fem.normal(domain, s)
    return u(s) * v(s) * wp.abs(n[0])


@fem.integrand
def x_wall_value_form(s: fem.Sample, domain: fem.Domain, v: fem.Field, value: wp.float64):
    n = fem.normal(domain, s)
    return fem.scalar_type(domain)(value) * v(s) * wp.abs(n[0])


@fem.integrand
def position_form(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    x = fem.position(domain, s)
    return (x[0] + 2.0 * x[1] * x[1]) * v(s)


@fem.integrand
def field_forms(s: fem.Sample, f: fem.Field, v: fem.Field, scale: float):
    # a discrete field's value and gradient against a test function
    return scale * f(s) * v(s) + wp.dot(fem.grad(f, s), fem.grad(v, s))


@fem.integrand
def field_energy(s: fem.Sample, f: fem.Field):
    g = fem.grad(f, s)
    return f(s) * f(s) + wp.dot(g, g)


@fem.integrand
def interior_penalty_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    # normal-gradient jumps across sides against value averages and jumps
    n = fem.normal(domain, s)
    return wp.dot(fem.grad_jump(u, s), n) * fem.average(v, s) + fem.jump(u, s) * fem.jump(v, s)


@fem.integrand
def position_value(s: fem.Sample, domain: fem.Domain, shift: float):
    x = fem.position(domain, s)
    return wp.sin(x[0]) + x[1] * x[0] + shift


def _csr(matrix) -> dict:
    """A BSR matrix with scalar blocks as its CSR arrays (numbers only, as NumPy)."""
    n = matrix.nnz_sync() if hasattr(matrix, "nnz_sync") else matrix.nnz
    return {"offsets": matrix.offsets.numpy()[: matrix.nrow + 1].copy(),
            "columns": matrix.columns.numpy()[:n].copy(),
            "values": matrix.values.numpy()[:n].reshape(n).copy()}


def assemble(degree: int, serendipity: bool = False, res: int = 6, full: bool = True) -> dict:
    """The operators of the diffusion example on a res x (res + 1) grid: right-hand side,
    stiffness, nodal boundary projector and values, boundary mass, projected system; with
    `full`, also mass matrices, interior-side jumps, constant forms, positions, discrete
    fields and interpolation. All results as NumPy arrays."""
    geo = fem.Grid2D(res=wp.vec2i(res, res + 1), bounds_lo=wp.vec2(-1.0, 0.5),
                     bounds_hi=wp.vec2(1.0, 2.0))
    basis = fem.ElementBasis.SERENDIPITY if serendipity else None
    space = fem.make_polynomial_space(geo, degree=degree, element_basis=basis)
    cells = fem.Cells(geometry=geo)
    test = fem.make_test(space=space, domain=cells)
    trial = fem.make_trial(space=space, domain=cells)
    out = {"node_count": np.array(space.node_count()),
           "positions": space.node_positions().numpy()}

    out["rhs"] = fem.integrate(value_form, fields={"v": test}).numpy()
    stiffness = fem.integrate(stiffness_form, fields={"u": trial, "v": test},
                              values={"nu": wp.float64(1.5)})
    flat("stiffness", _csr(stiffness), out)
    boundary = fem.BoundarySides(geo)
    bd_test = fem.make_test(space=space, domain=boundary)
    bd_trial = fem.make_trial(space=space, domain=boundary)
    projector = fem.integrate(x_wall_form, fields={"u": bd_trial, "v": bd_test},
                              assembly="nodal")
    flat("projector", _csr(projector), out)
    bd_rhs = fem.integrate(x_wall_value_form, fields={"v": bd_test},
                           values={"value": wp.float64(3.0)}, assembly="nodal")
    out["bd_rhs"] = bd_rhs.numpy()
    flat("wall_mass", _csr(fem.integrate(x_wall_form, fields={"u": bd_trial, "v": bd_test})),
         out)
    rhs = fem.integrate(value_form, fields={"v": test})
    fem.project_linear_system(stiffness, rhs, projector, bd_rhs)
    flat("projected", _csr(stiffness), out)
    out["projected_rhs"] = rhs.numpy()
    out["normalized_bd_rhs"] = bd_rhs.numpy()
    if full:
        _more(out, geo, space, cells, boundary, test, trial, bd_test)
    return out


def _more(out: dict, geo, space, cells, boundary, test, trial, bd_test) -> None:
    out["position_rhs"] = fem.integrate(position_form, fields={"v": test}).numpy()
    flat("mass", _csr(fem.integrate(mass_form, fields={"u": trial, "v": test})), out)
    out["area"] = np.array(fem.integrate(one_form, domain=cells))
    out["perimeter"] = np.array(fem.integrate(one_form, domain=boundary))
    out["wall_rhs"] = fem.integrate(x_wall_value_form, fields={"v": bd_test},
                                    values={"value": wp.float64(0.5)}).numpy()
    sides = fem.Sides(geo)
    side_test = fem.make_test(space=space, domain=sides)
    side_trial = fem.make_trial(space=space, domain=sides)
    flat("sides", _csr(fem.integrate(interior_penalty_form,
                                     fields={"u": side_trial, "v": side_test})), out)

    field = space.make_field()
    fem.interpolate(position_value, dest=field, values={"shift": 0.0})
    out["interpolated"] = field.dof_values.numpy()
    quadrature = fem.RegularQuadrature(domain=cells, order=3)
    at_points = wp.zeros(quadrature.total_point_count(), dtype=float)
    fem.interpolate(field_energy, at=quadrature, dest=at_points, fields={"f": field})
    out["at_points"] = at_points.numpy()
    out["field_rhs"] = fem.integrate(field_forms, fields={"f": field, "v": test},
                                     values={"scale": 0.25}).numpy()
    out["field_energy"] = np.array(fem.integrate(field_energy, fields={"f": field},
                                                 domain=cells))
    out["field_boundary"] = np.array(fem.integrate(field_energy, fields={"f": field.trace()},
                                                   domain=boundary))


# name: (degree, serendipity, full); one case runs everything, the others the core operators,
# to keep Warp's compile time (most of the comparison's cost) down.
CASES = {"q1": (1, False, False), "q2": (2, False, True), "s2": (2, True, False),
         "q3": (3, False, False), "s3": (3, True, False)}


def run_cases(names) -> dict:
    """`assemble` for each named case, flattened into one dict of arrays."""
    out = {}
    for name in names:
        degree, serendipity, full = CASES[name]
        flat(name, assemble(degree, serendipity, full=full), out)
    return out


# ---- integrands with mistakes (compiled by kernelc only) -------------------------------------


@fem.integrand
def bad_operator(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(fem.gradd(u, s), fem.grad(v, s))  # BAD_OPERATOR


@fem.integrand
def bad_field_use(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u * v(s)  # BAD_FIELD_USE


@fem.integrand
def bad_operator_argument(s: fem.Sample, v: fem.Field, nu: float):
    return fem.grad(nu, s)[0] * v(s)  # BAD_OPERATOR_ARGUMENT


@fem.integrand
def bad_types(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(fem.grad(u, s), v(s))  # BAD_TYPES
