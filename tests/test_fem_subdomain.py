"""`fem.Subdomain`, field restrictions (`fem.make_restriction`), `fem.NodalQuadrature`,
`fem.TemporaryStore`, and gradients through `fem.integrate` / `fem.interpolate` on a tape,
against Warp's warp.fem and on their own.

The programs of `tests/fem_subdomain_programs.py` and Warp's
`example_darcy_ls_optimization.py` (shape optimisation by level sets: subdomains of boundary
sides, a field restriction, a nodal quadrature in its discontinuous variant, and a tape
through interpolation, lookups and integrals) run here with kernelc and in a Warp subprocess
started when the module's first comparison needs it. The other tests check the same
features with NumPy: finite differences for gradients, exact quadrature, pool reuse.
"""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from tests import fem_harness as H
from tests import fem_subdomain_programs as P

PROGRAMS = Path(P.__file__)
# The Darcy example on a 20 x 20 grid, three optimisation steps, each variant.
DARCY = {"darcy_cg": {"discontinuous": False}, "darcy_dg": {"discontinuous": True}}
DARCY_ARGS = {"degree": 1, "resolution": 20, "mesh": "grid", "dt": 0.05, "simp": 3.0,
              "k_min": 0.0}
DARCY_STEPS = 3
# The elastic shape optimisation (gradients with respect to vertex positions), 10 x 2 cells.
ELASTIC_ARGS = {"degree": 1, "resolution": 10, "mesh": "tri", "lr": 1.0e-3}
ELASTIC_STEPS = 3

_WARP_SCRIPT = """
wp.config.enable_backward = True  # the programs differentiate (before any launch)
import fem_subdomain_programs_warp as P
results = P.run_all()
from warp.examples.fem import example_darcy_ls_optimization as darcy
for name, kwargs in {darcy!r}.items():
    example = darcy.Example(quiet=True, **{args!r}, **kwargs)
    results[name + ".loss"] = np.array([example.step() for _ in range({steps})])
    results[name + ".level_set"] = example._level_set_field.dof_values.numpy()
    results[name + ".velocity"] = example._level_set_velocity_field.dof_values.numpy()
from warp.examples.fem import example_elastic_shape_optimization as elastic
example = elastic.Example(quiet=True, **{elastic_args!r})
results["elastic.loss"] = np.array([example.step() for _ in range({elastic_steps})])
results["elastic.positions"] = example._vertex_positions.numpy()
results["elastic.displacement"] = example._u_field.dof_values.numpy()
"""

EXAMPLE_MODULES = {"utils": "kcs_fem_example_utils",
                   "example_darcy_ls_optimization": "kcs_fem_example_darcy_ls_optimization",
                   "example_elastic_shape_optimization":
                       "kcs_fem_example_elastic_shape_optimization"}


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    script = _WARP_SCRIPT.format(darcy=DARCY, args=DARCY_ARGS, steps=DARCY_STEPS,
                                 elastic_args=ELASTIC_ARGS, elastic_steps=ELASTIC_STEPS)
    with H.started_warp_run(tmp_path_factory, "warp_fem_subdomain", PROGRAMS,
                            {"subdomain": script}, timeout=900) as run:
        yield run


@pytest.fixture(scope="module")
def kc_programs(warp_run):
    return P.run_all()


@pytest.fixture(scope="module")
def kc_examples(tmp_path_factory):
    with H.kernelc_examples(tmp_path_factory, "kc_fem_subdomain_examples",
                            EXAMPLE_MODULES) as modules:
        yield modules


# ---- agreement with Warp --------------------------------------------------------------------


def test_programs_match_warp(kc_programs, warp_run):
    want = {k: v for k, v in warp_run.results().items()
            if not k.startswith(("darcy", "elastic"))}
    assert want and set(want) == set(kc_programs)
    for key, expected in want.items():
        got = np.asarray(kc_programs[key])
        assert got.shape == expected.shape, key
        assert got.dtype == expected.dtype, key
        if expected.dtype.kind in "iu":  # masks, counts, offsets, columns: exactly Warp's
            np.testing.assert_array_equal(got, expected, err_msg=key)
            continue
        scale = float(np.abs(expected).max()) if expected.size else 0.0
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5 * scale + 1e-12,
                                   err_msg=key)


@pytest.mark.parametrize("name", list(DARCY))
def test_darcy_example_matches_warp(name, kc_examples, warp_run):
    module = kc_examples["kcs_fem_example_darcy_ls_optimization"]
    example = module.Example(quiet=True, **DARCY_ARGS, **DARCY[name])
    losses = np.array([example.step() for _ in range(DARCY_STEPS)])
    want = warp_run.results()
    # CG solves (relative residual 1e-6) of a nearly singular system: measured 1e-5 of the
    # losses, 3e-6 of the level set and its velocity (the loss' gradient)
    np.testing.assert_allclose(losses, want[f"{name}.loss"], rtol=1e-4)
    for key, field in (("level_set", example._level_set_field),
                       ("velocity", example._level_set_velocity_field)):
        expected = want[f"{name}.{key}"]
        got = field.dof_values.numpy()
        assert got.shape == expected.shape and np.abs(expected).max() > 0.0
        np.testing.assert_allclose(got, expected, rtol=0,
                                   atol=1e-4 * np.abs(expected).max(), err_msg=key)


def test_elastic_shape_optimization_matches_warp(kc_examples, warp_run):
    module = kc_examples["kcs_fem_example_elastic_shape_optimization"]
    example = module.Example(quiet=True, **ELASTIC_ARGS)
    losses = np.array([example.step() for _ in range(ELASTIC_STEPS)])
    want = warp_run.results()
    # Adam moves each vertex by about lr along the sign of its gradient, so positions agree
    # only where the gradients do (fixed vertices must get exactly zero: they do)
    np.testing.assert_allclose(losses, want["elastic.loss"], rtol=1e-4)
    positions = example._vertex_positions.numpy()
    np.testing.assert_allclose(positions, want["elastic.positions"], rtol=0, atol=1e-5)
    displacement = example._u_field.dof_values.numpy()
    expected = want["elastic.displacement"]
    np.testing.assert_allclose(displacement, expected, rtol=0,
                               atol=1e-4 * np.abs(expected).max())


# ---- subdomains -------------------------------------------------------------------------------


def test_subdomain_from_mask_and_indices():
    geo = P.make_grid()
    boundary = fem.BoundarySides(geo)
    mask = np.zeros(boundary.element_count(), dtype=np.int32)
    mask[[1, 4, 5]] = 1
    sub = fem.Subdomain(boundary, element_mask=kc.array(mask, dtype=int))
    assert sub.element_count() == 3
    assert sub.element_kind == fem.ElementKind.SIDE
    assert sub.name == f"{boundary.name}_Subdomain"
    np.testing.assert_array_equal(sub.element_indices(),
                                  boundary.element_indices()[[1, 4, 5]])
    np.testing.assert_array_equal(sub.domain_element_indices().numpy(), [1, 4, 5])
    # a subdomain of a subdomain picks from its list
    subsub = fem.Subdomain(sub, element_indices=kc.array([2, 0], dtype=int))
    np.testing.assert_array_equal(subsub.element_indices(),
                                  boundary.element_indices()[[5, 1]])
    assert sub == sub and sub != fem.Subdomain(boundary, element_mask=kc.array(mask, dtype=int))


def test_subdomain_integrals_are_sums_over_its_elements():
    geo = P.make_grid()
    cells = fem.Cells(geo)
    picked = [0, 7, 8, 19]
    sub = fem.Subdomain(cells, element_indices=kc.array(picked, dtype=int))
    area = geo.cell_size[0] * geo.cell_size[1]
    assert fem.integrate(P.one_form, domain=sub) == pytest.approx(len(picked) * area)
    space = fem.make_polynomial_space(geo, degree=1)
    rhs = fem.integrate(P.identity_form, fields={"p": fem.UniformField(sub, 1.0),
                                                 "q": fem.make_test(space, domain=sub)})
    # each picked cell gives a quarter of its area to each of its four vertices
    nodes = space.topology.host_element_nodes()[picked]
    expected = np.zeros(space.node_count())
    np.add.at(expected, nodes.reshape(-1), area / 4)
    np.testing.assert_allclose(rhs.numpy(), expected, rtol=1e-6)


def test_subdomain_errors():
    geo = P.make_grid()
    boundary = fem.BoundarySides(geo)
    with pytest.raises(ValueError, match="Either"):
        fem.Subdomain(boundary)
    with pytest.raises(ValueError, match="Only one"):
        fem.Subdomain(boundary, element_mask=kc.zeros(boundary.element_count(), dtype=int),
                      element_indices=kc.array([0], dtype=int))
    with pytest.raises(ValueError, match="one entry per element"):
        fem.Subdomain(boundary, element_mask=kc.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="must lie in"):
        fem.Subdomain(boundary, element_indices=kc.array([boundary.element_count()], dtype=int))


def test_restriction_leaves_other_nodes_alone():
    geo = P.make_grid()
    space = fem.make_polynomial_space(geo, degree=1)
    sub = fem.Subdomain(fem.Cells(geo), element_indices=kc.array([0], dtype=int))
    field = fem.make_discrete_field(space)
    field.dof_values.fill_(-1.0)
    restriction = fem.make_restriction(field, domain=sub)
    assert restriction.field is field and restriction.domain is sub
    fem.interpolate(P.polynomial, dest=restriction)
    values = field.dof_values.numpy()
    touched = np.unique(space.topology.host_element_nodes()[0])
    x = space.node_positions().numpy()
    expected = x[:, 0] ** 2 - 2.0 * x[:, 0] * x[:, 1] + 0.5
    np.testing.assert_allclose(values[touched], expected[touched], rtol=1e-6)
    assert (np.delete(values, touched) == -1.0).all()


# ---- nodal quadrature -----------------------------------------------------------------------


def test_nodal_quadrature_is_lobatto_exact():
    geo = P.make_grid()
    cells = fem.Cells(geo)
    space = fem.make_polynomial_space(geo, degree=2)  # 3 Gauss-Lobatto nodes: exact to x^3
    quadrature = fem.NodalQuadrature(cells, space)
    assert quadrature.total_point_count() == space.node_count()
    assert quadrature.points_per_element() == 9
    got = fem.integrate(P.weighted_length_form, quadrature=quadrature)
    assert got == pytest.approx(1.25 + 1.25**3 / 3 + 1.25, rel=1e-6)  # 1 + x^2 + 2y
    # s.qp_index is the node: reading a nodal array there integrates the field of those
    # values (exactly: the field is Q2)
    nodal = kc.array(np.arange(space.node_count(), dtype=np.float32), dtype=float)
    got = fem.integrate(P.qp_weighted_source, quadrature=quadrature,
                        fields={"v": fem.UniformField(cells, 1.0)}, values={"nodal": nodal})
    field = fem.make_discrete_field(space)
    field.dof_values = nodal
    exact = fem.integrate(_field_value, fields={"u": field}, domain=cells)
    assert got == pytest.approx(exact, rel=1e-5)


@fem.integrand
def _field_value(s: fem.Sample, u: fem.Field):
    return u(s)


def test_nodal_quadrature_errors():
    geo = P.make_grid()
    space = fem.make_polynomial_space(geo, degree=1)
    with pytest.raises(ValueError):
        fem.NodalQuadrature(fem.Cells(geo))
    with pytest.raises(NotImplementedError, match="sides"):
        fem.NodalQuadrature(fem.Sides(geo), space)


# ---- gradients ------------------------------------------------------------------------------


def _grid64():
    return fem.Grid2D(res=kc.vec2i(4, 3), bounds_lo=kc.vec2d(0.0, 0.0),
                      bounds_hi=kc.vec2d(1.0, 0.75), scalar_type=kc.float64)


@fem.integrand
def _flux64(s: fem.Sample, domain: fem.Domain, k: fem.Field, p: fem.Field):
    return kc.exp(k(s)) * kc.dot(fem.grad(p, s), fem.normal(domain, s))


@fem.integrand
def _advect64(s: fem.Sample, domain: fem.Domain, phi: fem.Field, velocity: fem.Field):
    x_prev = domain(s) - velocity(s) * kc.float64(0.3)
    return phi(fem.lookup(domain, x_prev, guess=s))


@fem.integrand
def _square64(s: fem.Sample, u: fem.Field):
    return u(s) * u(s) + kc.sin(u(s))


def _central_differences(values: np.ndarray, evaluate, eps: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(values)
    for i in np.ndindex(values.shape):
        up, down = values.copy(), values.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (evaluate(up) - evaluate(down)) / (2 * eps)
    return grad


def test_constant_form_gradient_matches_finite_differences():
    geo = _grid64()
    boundary = fem.BoundarySides(geo)
    mask = np.zeros(boundary.element_count(), dtype=np.int32)
    mask[::3] = 1
    sub = fem.Subdomain(boundary, element_mask=kc.array(mask, dtype=int))
    space = fem.make_polynomial_space(geo, degree=2)
    rng = np.random.default_rng(0)
    k0 = 0.3 * rng.standard_normal(space.node_count())
    p0 = rng.standard_normal(space.node_count())
    k, p = fem.make_discrete_field(space), fem.make_discrete_field(space)

    def flux(k_values, p_values, record=False):
        k.dof_values = kc.array(k_values, dtype=kc.float64, requires_grad=record)
        p.dof_values = kc.array(p_values, dtype=kc.float64, requires_grad=record)
        loss = kc.zeros(1, dtype=kc.float64, requires_grad=record)
        tape = kc.Tape()
        with tape:
            fem.integrate(_flux64, fields={"k": k.trace(), "p": p.trace()}, domain=sub,
                          output=loss)
        if record:
            tape.backward(loss)
            return k.dof_values.grad.numpy().copy(), p.dof_values.grad.numpy().copy()
        return float(loss.numpy()[0])

    grad_k, grad_p = flux(k0, p0, record=True)
    assert np.abs(grad_k).max() > 0 and np.abs(grad_p).max() > 0
    np.testing.assert_allclose(grad_k, _central_differences(k0, lambda v: flux(v, p0)),
                               rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(grad_p, _central_differences(p0, lambda v: flux(k0, v)),
                               rtol=1e-5, atol=1e-8)


def test_semi_lagrangian_gradient_matches_finite_differences():
    geo = _grid64()
    cells = fem.Cells(geo)
    space = fem.make_polynomial_space(geo, degree=2)
    v_space = fem.make_polynomial_space(geo, degree=1, dtype=kc.vec2d)
    rng = np.random.default_rng(1)
    phi0 = rng.standard_normal(space.node_count())
    vel0 = 0.1 * rng.standard_normal((v_space.node_count(), 2))
    phi, velocity = fem.make_discrete_field(space), fem.make_discrete_field(v_space)
    advected = fem.make_discrete_field(space)

    def run(phi_values, vel_values, record=False):
        phi.dof_values = kc.array(phi_values, dtype=kc.float64, requires_grad=record)
        velocity.dof_values = kc.array(vel_values, dtype=kc.vec2d, requires_grad=record)
        advected.dof_values = kc.zeros(space.node_count(), dtype=kc.float64,
                                       requires_grad=record)
        total = kc.zeros(1, dtype=kc.float64, requires_grad=record)
        tape = kc.Tape()
        with tape:
            fem.interpolate(_advect64, dest=fem.make_restriction(advected, domain=cells),
                            fields={"phi": phi, "velocity": velocity})
            fem.integrate(_square64, fields={"u": advected}, domain=cells, output=total)
        if record:
            tape.backward(total)
            return phi.dof_values.grad.numpy().copy(), velocity.dof_values.grad.numpy().copy()
        return float(total.numpy()[0])

    grad_phi, grad_vel = run(phi0, vel0, record=True)
    np.testing.assert_allclose(grad_phi, _central_differences(phi0, lambda v: run(v, vel0)),
                               rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(grad_vel, _central_differences(vel0, lambda v: run(phi0, v)),
                               rtol=1e-5, atol=1e-8)


def test_position_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    x, y = np.meshgrid(np.linspace(0.0, 1.0, 4), np.linspace(0.0, 0.5, 3), indexing="ij")
    points0 = np.stack([x.ravel(), y.ravel()], axis=1) + 0.02 * rng.standard_normal((12, 2))
    tris = kc.array(fem.utils.grid_to_tris(3, 2), dtype=int)
    u0 = rng.standard_normal(12)

    def loss(points, record=False):
        positions = kc.array(points, dtype=kc.vec2d, requires_grad=record)
        geo = fem.Trimesh2D(tris, positions)
        space = fem.make_polynomial_space(geo, degree=1)
        u = fem.make_discrete_field(space)
        u.dof_values = kc.array(u0, dtype=kc.float64)
        total = kc.zeros(1, dtype=kc.float64, requires_grad=record)
        tape = kc.Tape()
        with tape:
            fem.integrate(P.shape_loss, fields={"u": u}, domain=fem.Cells(geo), output=total)
            fem.integrate(P.side_loss, fields={"u": u.trace()}, domain=fem.BoundarySides(geo),
                          output=total, add=True)
        if record:
            tape.backward(total)
            return positions.grad.numpy().copy()
        return float(total.numpy()[0])

    grad = loss(points0, record=True)
    assert np.abs(grad).max() > 0
    np.testing.assert_allclose(grad, _central_differences(points0, loss), rtol=1e-5,
                               atol=1e-8)


def test_linear_form_gradient_matches_its_matrix():
    # the gradient of seed . rhs(u) for rhs(u)_i = integral(grad u . grad v_i) is K^T seed
    geo = _grid64()
    cells = fem.Cells(geo)
    space = fem.make_polynomial_space(geo, degree=2)
    test, trial = fem.make_test(space, domain=cells), fem.make_trial(space, domain=cells)
    u = fem.make_discrete_field(space)
    rng = np.random.default_rng(2)
    u.dof_values = kc.array(rng.standard_normal(space.node_count()), dtype=kc.float64,
                            requires_grad=True)
    rhs = kc.empty(space.node_count(), dtype=kc.float64, requires_grad=True)
    tape = kc.Tape()
    with tape:
        fem.integrate(P.diffusion_form, fields={"u": u, "v": test}, output=rhs)
    seed = rng.standard_normal(space.node_count())
    tape.backward(grads={rhs: kc.array(seed, dtype=kc.float64)})
    matrix = fem.integrate(P.diffusion_form, fields={"u": trial, "v": test},
                           output_dtype=kc.float64)
    dense = np.zeros((space.node_count(), space.node_count()))
    offsets, columns = matrix.offsets.numpy(), matrix.columns.numpy()
    values = matrix.values.numpy()
    for row in range(matrix.nrow):
        for j in range(offsets[row], offsets[row + 1]):
            dense[row, columns[j]] += values[j]
    np.testing.assert_allclose(rhs.numpy(), dense @ u.dof_values.numpy(), atol=1e-12)
    np.testing.assert_allclose(u.dof_values.grad.numpy(), dense.T @ seed, atol=1e-10)


# ---- temporary store --------------------------------------------------------------------------


def test_temporary_store_reuses_released_memory():
    store = fem.TemporaryStore()
    first = fem.borrow_temporary(store, shape=(4, 3), dtype=float)
    first.fill_(2.0)
    assert first.shape == (4, 3) and first.dtype == kc.float32
    ptr = first.ptr
    first.release()
    assert store.free_bytes() == 48
    second = fem.borrow_temporary(store, shape=10, dtype=float)  # fits in the 48 bytes
    assert second.ptr == ptr and store.free_bytes() == 0
    del second
    gc.collect()  # garbage collected: back to the store
    assert store.free_bytes() == 48
    bigger = fem.borrow_temporary(store, shape=100, dtype=float)
    assert bigger.ptr != ptr and store.free_bytes() == 48
    kept = bigger.detach()
    assert kept is bigger
    del bigger, kept
    gc.collect()  # detached: its memory went with it
    assert store.free_bytes() == 48


def test_temporary_store_gradients_default_store_and_tape():
    store = fem.TemporaryStore()
    with_grad = fem.borrow_temporary(store, shape=5, dtype=kc.vec3, requires_grad=True)
    assert with_grad.grad is not None and (with_grad.grad.numpy() == 0).all()
    like = fem.borrow_temporary_like(with_grad, store)
    assert like.shape == (5,) and like.dtype == kc.vec3 and like.requires_grad
    plain = fem.borrow_temporary(None, shape=3, dtype=int)  # no store: a plain array
    plain.release()
    plain.fill_(1)
    fem.set_default_temporary_store(store)
    try:
        from_default = fem.borrow_temporary(None, shape=2, dtype=float)
        from_default.release()
        assert store.free_bytes() >= 8
        held = fem.borrow_temporary(None, shape=2, dtype=float)
        free = store.free_bytes()
        with kc.Tape():
            held.release()  # a recorded launch may read it again: kept
        assert store.free_bytes() == free
    finally:
        fem.set_default_temporary_store(None)


def test_integrate_takes_the_temporary_store():
    geo = P.make_grid()
    store = fem.TemporaryStore()
    out = kc.zeros(1, dtype=float)
    fem.integrate(P.one_form, domain=fem.Cells(geo), output=out, temporary_store=store)
    assert out.numpy()[0] == pytest.approx(1.25)
    assert store.free_bytes() == 8  # the float64 accumulator, released after the cast
    space = fem.make_polynomial_space(geo, degree=1)
    test, trial = fem.make_test(space), fem.make_trial(space)
    fem.integrate(P.diffusion_form, fields={"u": trial, "v": test}, temporary_store=store)
    free = store.free_bytes()
    assert free > 8  # the triplet values, summed into the matrix and given back
    rhs = fem.integrate(P.source_form, fields={"v": test}, temporary_store=store)
    assert store.free_bytes() < free and hasattr(rhs, "release")  # lent to the caller
    expected = rhs.numpy().copy()
    del rhs
    gc.collect()
    assert store.free_bytes() == free
    np.testing.assert_array_equal(
        fem.integrate(P.source_form, fields={"v": test}, temporary_store=store).numpy(), expected)


# ---- Warp's argument rules ----------------------------------------------------------------


def test_fields_the_integrand_does_not_take_are_ignored():
    geo = P.make_grid()
    space = fem.make_polynomial_space(geo, degree=1)
    field = fem.make_discrete_field(space)
    assert fem.integrate(P.one_form, domain=fem.Cells(geo), fields={"unused": field}) == \
        pytest.approx(1.25)
