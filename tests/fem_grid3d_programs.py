"""Serendipity and open-family Lagrange spaces on `Grid3D`, for
tests/test_fem_grid3d_spaces.py, written against Warp's `warp.fem` API.

This file runs as is with kernelc; the test also runs a copy whose imports say `warp`
instead of `kernelc` in a Warp subprocess, and matches what both return key by key: node
tables and counts, node positions, mass and diffusion matrices (cells and boundary sides),
and a field interpolated from an expression then read back (values and gradients) at
quadrature points.
"""

import numpy as np

import kernelc as wp
import kernelc.fem as fem
from tests.fem_harness import block_csr, flat

# name: make_polynomial_space arguments
SPACES = {
    "s2": {"degree": 2, "element_basis": fem.ElementBasis.SERENDIPITY},
    "s3": {"degree": 3, "element_basis": fem.ElementBasis.SERENDIPITY},
    "open1": {"degree": 1, "family": fem.Polynomial.EQUISPACED_OPEN},
    "open2": {"degree": 2, "family": fem.Polynomial.EQUISPACED_OPEN},
    "open3": {"degree": 3, "family": fem.Polynomial.EQUISPACED_OPEN},
    "legendre2": {"degree": 2, "family": fem.Polynomial.GAUSS_LEGENDRE},
}


@fem.integrand
def mass_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


@fem.integrand
def diffusion_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(fem.grad(u, s), fem.grad(v, s))


@fem.integrand
def smooth_expr(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return wp.sin(x[0]) * x[1] + x[2] * x[2] * x[0]


@fem.integrand
def field_value(s: fem.Sample, f: fem.Field):
    return f(s)


@fem.integrand
def field_grad(s: fem.Sample, f: fem.Field):
    return fem.grad(f, s)


def make_grid(scalar_type=wp.float32, env_count: int = 1):
    """A 2 x 3 x 2 grid of unequal cells, away from the origin."""
    return fem.Grid3D(res=wp.vec3i(2, 3, 2), bounds_lo=wp.vec3(-0.5, 0.25, 1.0),
                      bounds_hi=wp.vec3(0.5, 1.0, 1.5), scalar_type=scalar_type,
                      env_count=env_count)


def _forms(space, domain) -> dict:
    u, v = fem.make_trial(space, domain=domain), fem.make_test(space, domain=domain)
    out = {"mass": block_csr(fem.integrate(mass_form, fields={"u": u, "v": v},
                                           assembly="generic", output_dtype=space.dtype))}
    if isinstance(domain, fem.Cells):
        out["diffusion"] = block_csr(fem.integrate(diffusion_form, fields={"u": u, "v": v},
                                                   assembly="generic",
                                                   output_dtype=space.dtype))
    return out


def _field(space, geo) -> dict:
    field = space.make_field()
    fem.interpolate(smooth_expr, dest=field)
    quadrature = fem.RegularQuadrature(fem.Cells(geo), order=2)
    n = quadrature.total_point_count()
    scalar = space.dtype
    vec = wp.types.vector(3, scalar)
    values = wp.full(n, scalar(-999.0), dtype=scalar)
    grads = wp.full(n, vec(scalar(-999.0)), dtype=vec)
    fem.interpolate(field_value, at=quadrature, fields={"f": field}, dest=values)
    fem.interpolate(field_grad, at=quadrature, fields={"f": field}, dest=grads)
    return {"dofs": field.dof_values.numpy(), "values": values.numpy(),
            "grads": grads.numpy()}


def space_results(name: str, scalar_type=wp.float32) -> dict:
    """Everything about space `name` on `make_grid(scalar_type)`."""
    geo = make_grid(scalar_type)
    space = fem.make_polynomial_space(geo, **SPACES[name])
    out = {}
    flat("", {"nodes": space.topology.element_node_indices().numpy(),
              "node_count": [space.node_count()],
              "positions": space.node_positions().numpy()}, out)
    for key, value in _forms(space, fem.Cells(geo)).items():
        flat(f".cells.{key}", value, out)
    for key, value in _forms(space, fem.BoundarySides(geo)).items():
        flat(f".boundary.{key}", value, out)
    flat(".field", _field(space, geo), out)
    suffix = "f32" if scalar_type == wp.float32 else "f64"
    return {f"{name}.{suffix}{key}": value for key, value in out.items()}


def environment_results() -> dict:
    """Node tables and mass matrices on a grid of two environments."""
    geo = make_grid(env_count=2)
    out = {}
    for name in ("s2", "s3", "open2"):
        space = fem.make_polynomial_space(geo, **SPACES[name])
        out[f"env.{name}.nodes"] = space.topology.element_node_indices().numpy()
        out[f"env.{name}.node_count"] = np.array([space.node_count()])
        flat(f"env.{name}.mass", _forms(space, fem.Cells(geo))["mass"], out)
    return out


def run_all() -> dict:
    out = environment_results()
    for scalar_type in (wp.float32, wp.float64):
        for name in SPACES:
            out.update(space_results(name, scalar_type))
    return out
