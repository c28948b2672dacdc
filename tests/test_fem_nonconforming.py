"""Dof mappers, non-conforming bases and `NonconformingField` against Warp's warp.fem, and on
their own.

The programs of `tests/fem_nonconforming_programs.py` (symmetric and skew-symmetric tensor
spaces on 2-d and 3-d grids, `ElementBasis.NONCONFORMING_POLYNOMIAL` on grids, quadrilateral,
triangle and tetrahedron meshes, fields of one geometry evaluated on another, float64) and
Warp's `example_nonconforming_contact.py`, `example_mixed_elasticity.py` (non-conforming
stresses on a grid and on quadrilaterals, P1d stresses on triangles) and `example_stokes.py`
(non-conforming pressures) run here with kernelc
and in a Warp subprocess started when the module's first comparison needs it. The other
checks compare with NumPy and need no Warp.
"""

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kernelc as wp
import kernelc.fem as fem
from tests import fem_harness as H
from tests import fem_mesh_programs as M
from tests import fem_nonconforming_programs as P

PROGRAMS = Path(P.__file__)
# name: (module, Example(...) arguments, steps, fields compared, tolerance relative to each
# field's maximum). Both examples stop CG at relative residuals of 1e-6 (contact, two
# staggered steps; measured 1.2e-5) and 1e-4 (mixed elasticity, five Newton steps;
# measured 2e-4 or better); the Stokes solver agrees to 3e-7.
EXAMPLES = {
    "contact": ("example_nonconforming_contact", {"resolution": 4}, 2,
                ("_u1_field", "_u2_field", "_sig1_field", "_sig2_field"), 1e-4),
    "mixed_nonconforming": ("example_mixed_elasticity", {
        "quiet": True, "resolution": 4, "nonconforming_stresses": True}, 1,
        ("_u_field", "_stress_field", "_stress_norm_field"), 1e-3),
    "mixed_tri": ("example_mixed_elasticity", {"quiet": True, "resolution": 4, "mesh": "tri"},
                  1, ("_u_field", "_stress_field"), 1e-3),
    "mixed_quad_nonconforming": ("example_mixed_elasticity", {
        "quiet": True, "resolution": 4, "mesh": "quad", "nonconforming_stresses": True}, 1,
        ("_u_field", "_stress_field"), 1e-3),
    "stokes_nonconforming": ("example_stokes", {
        "quiet": True, "resolution": 5, "nonconforming_pressures": True}, 1,
        ("_u_field", "_p_field"), 2e-5),
}

_WARP_SCRIPT = """
import fem_nonconforming_programs_warp as P
results = P.run_all()
for name, (module, kwargs, steps, attributes, _) in {examples!r}.items():
    example = importlib.import_module("warp.examples.fem." + module).Example(**kwargs)
    for _ in range(steps):
        example.step()
    for attribute in attributes:
        results[name + "." + attribute] = getattr(example, attribute).dof_values.numpy()
"""

EXAMPLE_MODULES = {file: f"kcn_fem_{file}"
                   for file in ["utils"] + sorted({module for module, *_ in EXAMPLES.values()})}


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    scripts = {"nonconforming": _WARP_SCRIPT.format(examples=EXAMPLES)}
    with H.started_warp_run(tmp_path_factory, "warp_fem_nonconforming", PROGRAMS, scripts,
                            timeout=900, helpers=[Path(M.__file__)]) as run:
        yield run


@pytest.fixture(scope="module")
def kc_programs(warp_run):
    return P.run_all()


@pytest.fixture(scope="module")
def kc_examples(tmp_path_factory):
    with H.kernelc_examples(tmp_path_factory, "kc_fem_nonconforming_examples",
                            EXAMPLE_MODULES) as modules:
        yield {file: modules[name] for file, name in EXAMPLE_MODULES.items()}


# ---- agreement with Warp --------------------------------------------------------------------


def test_nonconforming_programs_match_warp(kc_programs, warp_run):
    prefixes = ("mapped.", "bases.", "fields.", "f64.")
    want = {k: v for k, v in warp_run.results().items() if k.startswith(prefixes)}
    H.assert_results_match(kc_programs, want)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_examples_match_warp(name, kc_examples, warp_run):
    module, kwargs, steps, attributes, tolerance = EXAMPLES[name]
    example = kc_examples[module].Example(**kwargs)
    for _ in range(steps):
        example.step()
    results = warp_run.results()
    for attribute in attributes:
        got = getattr(example, attribute).dof_values.numpy()
        want = results[f"{name}.{attribute}"]
        assert got.shape == want.shape and got.dtype == want.dtype, attribute
        assert np.abs(want).max() > 0.0
        np.testing.assert_allclose(got, want, rtol=0, atol=tolerance * np.abs(want).max(),
                                   err_msg=f"{name}.{attribute}")


# ---- dof mappers against NumPy ------------------------------------------------------------


def _sym_2d_voigt(d):
    r = np.sqrt(2.0)
    return np.array([[r * d[0], d[2]], [d[2], r * d[1]]])


def _sym_2d_db16(d):
    return np.array([[d[0] + d[1], d[2]], [d[2], d[0] - d[1]]])


def _sym_3d_voigt(d):
    r = np.sqrt(2.0)
    return np.array([[r * d[0], d[5], d[4]], [d[5], r * d[1], d[3]], [d[4], d[3], r * d[2]]])


def _sym_3d_db16(d):
    iso, dev = d[0] * np.sqrt(2.0 / 3.0), d[2] / np.sqrt(3.0)
    return np.array([[iso + d[1] - dev, d[5], d[4]], [d[5], iso - d[1] - dev, d[3]],
                     [d[4], d[3], iso + 2.0 * dev]])


def _skew_2d(d):
    return np.array([[0.0, -d], [d, 0.0]])


def _skew_3d(d):
    return np.array([[0.0, -d[2], d[1]], [d[2], 0.0, -d[0]], [-d[1], d[0], 0.0]])


DB16 = fem.SymmetricTensorMapper.Mapping.DB16
MAPPERS = {  # name: (mapper, NumPy dof -> value, symmetric values?)
    "sym2_voigt": (lambda t: fem.SymmetricTensorMapper(t), _sym_2d_voigt, True),
    "sym2_db16": (lambda t: fem.SymmetricTensorMapper(t, DB16), _sym_2d_db16, True),
    "sym3_voigt": (lambda t: fem.SymmetricTensorMapper(t), _sym_3d_voigt, True),
    "sym3_db16": (lambda t: fem.SymmetricTensorMapper(t, DB16), _sym_3d_db16, True),
    "skew2": (lambda t: fem.SkewSymmetricTensorMapper(t), _skew_2d, False),
    "skew3": (lambda t: fem.SkewSymmetricTensorMapper(t), _skew_3d, False),
}


def _map_arrays(mapper, dofs: np.ndarray, values: np.ndarray):
    """dof_to_value of `dofs` and value_to_dof of `values`, on the device."""
    to_value, to_dofs = mapper.dof_to_value, mapper.value_to_dof
    Dofs, Value = mapper.dof_dtype, mapper.value_dtype

    @wp.kernel
    def apply(d: wp.array(dtype=Dofs), v: wp.array(dtype=Value), d_out: wp.array(dtype=Value),
              v_out: wp.array(dtype=Dofs)):
        i = wp.tid()
        d_out[i] = to_value(d[i])
        v_out[i] = to_dofs(v[i])

    n = len(dofs)
    d_out, v_out = wp.zeros(n, dtype=Value), wp.zeros(n, dtype=Dofs)
    wp.launch(apply, dim=n, inputs=[wp.array(dofs, dtype=Dofs), wp.array(values, dtype=Value),
                                    d_out, v_out])
    return d_out.numpy(), v_out.numpy()


@pytest.mark.parametrize("precision", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(MAPPERS))
def test_mappers_match_numpy(name, precision, rng):
    make, reference, symmetric = MAPPERS[name]
    n = 2 if name in ("sym2_voigt", "sym2_db16", "skew2") else 3
    f64 = precision == np.float64
    mapper = make(wp.types.matrix(shape=(n, n), dtype=wp.float64 if f64 else wp.float32))
    size = mapper.DOF_SIZE
    assert size == (n * (n + 1) // 2 if symmetric else n * (n - 1) // 2)
    dofs = rng.uniform(-1.0, 1.0, (16, size) if size > 1 else 16).astype(precision)
    values = rng.uniform(-1.0, 1.0, (16, n, n)).astype(precision)
    got_values, got_dofs = _map_arrays(mapper, dofs, values)
    want_values = np.array([reference(d) for d in dofs.astype(np.float64)])
    tol = 1e-12 if f64 else 1e-6
    np.testing.assert_allclose(got_values, want_values, atol=tol)
    # orthonormal: half the Frobenius product of values is the dot product of dofs ...
    flat = dofs.astype(np.float64).reshape(16, -1)
    np.testing.assert_allclose(0.5 * np.einsum("kij,lij->kl", want_values, want_values),
                               flat @ flat.T, atol=1e-12)
    # ... so value_to_dof is the adjoint: the dofs of the (skew-)symmetric part
    part = 0.5 * (values + np.swapaxes(values, 1, 2) * (1.0 if symmetric else -1.0))
    back = np.array([reference(d) for d in got_dofs.astype(np.float64)])
    np.testing.assert_allclose(back, part, atol=10 * tol)


def test_skew_2d_space_matches_a_scalar_space():
    """Skew-symmetric 2x2 fields (which Warp 1.19 cannot assemble) against the scalar field
    with the same node values, times [[0, -1], [1, 0]]."""
    geo = fem.Grid2D(res=wp.vec2i(3, 2), bounds_hi=wp.vec2(1.0, 0.75))
    cells = fem.Cells(geo)
    skew = fem.make_polynomial_space(geo, degree=1, discontinuous=True,
                                     dof_mapper=fem.SkewSymmetricTensorMapper(wp.mat22))
    scalar = fem.make_polynomial_space(geo, degree=1, discontinuous=True)
    assert skew.dof_dtype is float and skew.NODE_DOF_COUNT == 1
    values = np.random.default_rng(5).uniform(-1.0, 1.0, skew.node_count()).astype(np.float32)
    f, g = skew.make_field(), scalar.make_field()
    f.dof_values, g.dof_values = wp.array(values), wp.array(values)
    got = P._qp_values(P.field_value, f, cells, wp.mat22)
    plain = P._qp_values(P.field_value, g, cells, wp.float32)
    assert np.abs(plain).max() > 0.1
    np.testing.assert_allclose(got, plain[:, None, None] * np.array([[0.0, -1.0], [1.0, 0.0]]),
                               atol=1e-6)
    mass = fem.integrate(P.tensor_mass_form, fields={"sig": fem.make_trial(skew, domain=cells),
                                                     "tau": fem.make_test(skew, domain=cells)})
    plain_mass = fem.integrate(P.scalar_mass_form, fields={
        "u": fem.make_trial(scalar, domain=cells), "v": fem.make_test(scalar, domain=cells)})
    np.testing.assert_allclose(H.block_csr(mass)["values"].reshape(-1),
                               2.0 * H.block_csr(plain_mass)["values"].reshape(-1), rtol=1e-6)
    target = skew.make_field()
    fem.interpolate(P.general_tensor_2d, dest=target)
    x = skew.node_positions().numpy().astype(np.float64)
    # the dof of a value is the skew part's angle: (m10 - m01) / 2, with general_tensor_2d's
    # m01 = x y and m10 = 0.5 - x
    np.testing.assert_allclose(target.dof_values.numpy(),
                               0.5 * ((0.5 - x[:, 0]) - x[:, 0] * x[:, 1]), atol=1e-6)


class HalvedVectorMapper(fem.DofMapper):
    """A user's mapper: one dof per node, the value (d, -2 d)."""

    def __init__(self):
        self.value_dtype = wp.vec2
        self.dof_dtype = wp.float32
        self.DOF_SIZE = 1

    @wp.func
    def dof_to_value(d: float):
        return wp.vec2(d, -2.0 * d)

    @wp.func
    def value_to_dof(v: wp.vec2):
        return 0.2 * (v[0] - 2.0 * v[1])


@fem.integrand
def field_grad(s: fem.Sample, f: fem.Field):
    return fem.grad(f, s)


def test_user_mapper_scales_a_scalar_field():
    geo = fem.Grid2D(res=wp.vec2i(3, 2), bounds_hi=wp.vec2(1.0, 0.75))
    cells = fem.Cells(geo)
    mapped = fem.make_polynomial_space(geo, degree=2, dof_mapper=HalvedVectorMapper())
    scalar = fem.make_polynomial_space(geo, degree=2)
    assert mapped.dtype == wp.vec2 and mapped.dof_dtype == wp.float32
    values = np.random.default_rng(7).uniform(-1.0, 1.0, scalar.node_count()).astype(np.float32)
    f, g = mapped.make_field(), scalar.make_field()
    f.dof_values, g.dof_values = wp.array(values), wp.array(values)
    direction = np.array([1.0, -2.0])
    plain = P._qp_values(P.field_value, g, cells, wp.float32)
    np.testing.assert_allclose(P._qp_values(P.field_value, f, cells, wp.vec2),
                               plain[:, None] * direction, atol=1e-6)
    plain_grad = P._qp_values(field_grad, g, cells, wp.vec2)
    np.testing.assert_allclose(P._qp_values(field_grad, f, cells, wp.mat22),
                               direction[None, :, None] * plain_grad[:, None, :], atol=1e-5)
    h = mapped.make_field()
    fem.interpolate(f, dest=h)  # value_to_dof of (g, -2 g) is (g + 4 g) / 5 = g
    np.testing.assert_allclose(h.dof_values.numpy(), values, atol=1e-6)


# ---- non-conforming bases against NumPy ---------------------------------------------------


@fem.integrand
def polynomial(s: fem.Sample, domain: fem.Domain, degree: int):
    x = domain(s)
    p = 0.5 + 0.3 * x[0] - 0.7 * x[1]
    if degree >= 2:
        p += x[0] * x[1] - 0.4 * x[0] * x[0] + 0.2 * wp.dot(x, x)
    if degree >= 3:
        p += 0.3 * x[0] * x[1] * x[1] - 0.5 * x[0] * x[0] * x[0] + 0.2 * x[1] * wp.dot(x, x)
    return p


def _polynomial(x: np.ndarray, degree: int) -> tuple[np.ndarray, np.ndarray]:
    """The value and gradient of `polynomial` at points x (NumPy, float64)."""
    x0, x1, r2 = x[:, 0], x[:, 1], (x * x).sum(axis=1)
    value = 0.5 + 0.3 * x0 - 0.7 * x1
    grad = np.zeros_like(x)
    grad[:, 0], grad[:, 1] = 0.3, -0.7
    if degree >= 2:
        value = value + x0 * x1 - 0.4 * x0 * x0 + 0.2 * r2
        grad += 0.4 * x
        grad[:, 0] += x1 - 0.8 * x0
        grad[:, 1] += x0
    if degree >= 3:
        value = value + 0.3 * x0 * x1 * x1 - 0.5 * x0 ** 3 + 0.2 * x1 * r2
        grad += 0.4 * x1[:, None] * x
        grad[:, 0] += 0.3 * x1 * x1 - 1.5 * x0 * x0
        grad[:, 1] += 0.6 * x0 * x1 + 0.2 * r2
    return value, grad


@fem.integrand
def position(s: fem.Sample, domain: fem.Domain):
    return domain(s)


@fem.integrand
def unit_source(s: fem.Sample, v: fem.Field):
    return v(s)


GEOMETRIES = {  # name: (geometry, degrees)
    "grid": (lambda: fem.Grid2D(res=wp.vec2i(3, 2), bounds_hi=wp.vec2(1.0, 0.75)), (1, 2, 3)),
    "trimesh": (lambda: M.make_trimesh(res=(3, 2)), (1, 2, 3)),
    "grid3d": (lambda: fem.Grid3D(res=wp.vec3i(2, 1, 1), bounds_hi=wp.vec3(1.0, 0.5, 0.75)),
               (1, 2)),
    "tetmesh": (lambda: M.make_tetmesh(res=(1, 1, 1)), (1, 2)),
    "hexmesh": (lambda: fem.Hexmesh(  # a grid's cells: affine, so polynomials stay so
        wp.array(fem.utils.grid_to_hexes(2, 1, 1), dtype=int),
        wp.array(M.grid_positions((2, 1, 1), (0.0, 0.0, 0.0), (1.0, 0.5, 0.75)),
                 dtype=wp.vec3)), (1, 2)),
}


@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_nonconforming_bases_reproduce_polynomials(name):
    make, degrees = GEOMETRIES[name]
    geo = make()
    cells = fem.Cells(geo)
    quadrature = fem.RegularQuadrature(cells, order=4)
    points = wp.zeros(quadrature.total_point_count(), dtype=wp.types.vector(geo.dimension,
                                                                              wp.float32))
    fem.interpolate(position, dest=points, at=quadrature)
    x = points.numpy().astype(np.float64)
    for degree in degrees:
        space = fem.make_polynomial_space(
            geo, degree=degree, element_basis=fem.ElementBasis.NONCONFORMING_POLYNOMIAL)
        assert space.node_count() == geo.cell_count() * space.shape.NODES_PER_ELEMENT
        field = space.make_field()
        fem.interpolate(polynomial, dest=field, values={"degree": degree})
        want, want_grad = _polynomial(x, degree)
        values = wp.zeros(len(x), dtype=wp.float32)
        fem.interpolate(P.field_value, dest=values, at=quadrature, fields={"f": field})
        np.testing.assert_allclose(values.numpy(), want, atol=2e-5, err_msg=f"{degree}")
        grads = wp.zeros(len(x), dtype=points.dtype)
        fem.interpolate(field_grad, dest=grads, at=quadrature, fields={"f": field})
        np.testing.assert_allclose(grads.numpy(), want_grad, atol=5e-4, err_msg=f"{degree}")
        # nodal weights integrate constants: the test functions sum to the measure
        rhs = fem.integrate(unit_source, fields={"v": fem.make_test(space, domain=cells)},
                            assembly="nodal")
        measure = fem.integrate(M.one_form, domain=cells)
        assert float(np.sum(rhs.numpy(), dtype=np.float64)) == pytest.approx(measure, rel=1e-5)


# ---- non-conforming fields against NumPy ------------------------------------------------


@fem.integrand
def linear_vector(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return wp.vec2(1.0 + 2.0 * x[0] - x[1], 0.5 * x[0] + 3.0 * x[1])


LINEAR = np.array([[2.0, -1.0], [0.5, 3.0]])
BACKGROUND = np.array([-7.0, 5.0])


def _expected_inside(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Whether each point is in the box [lo, hi], none of them near its boundary (there the
    1e-3 tolerance decides)."""
    outside = np.maximum(np.maximum(lo - x, x - hi), 0.0)
    distance = np.sqrt((outside * outside).sum(axis=1))
    assert not np.any((distance > 1e-4) & (distance < 2e-3))
    return distance <= 1e-4


@pytest.mark.parametrize("on_sides", [False, True])
def test_nonconforming_field_evaluates_inside_its_geometry(on_sides):
    geo = fem.Grid2D(res=wp.vec2i(5, 4))
    lo, hi = np.array([0.25, 0.3]), np.array([0.65, 0.9])
    other = fem.Grid2D(res=wp.vec2i(2, 3), bounds_lo=wp.vec2(*lo), bounds_hi=wp.vec2(*hi))
    field = fem.make_polynomial_space(other, degree=1, dtype=wp.vec2).make_field()
    fem.interpolate(linear_vector, dest=field)  # Q1 holds linear functions exactly
    nc = fem.NonconformingField(fem.Cells(geo), field, background=wp.vec2(*BACKGROUND))
    if on_sides:
        nc = nc.trace()
    domain = nc.domain
    assert isinstance(domain, fem.Sides) == on_sides and nc.degree == 1 and nc.dtype == wp.vec2
    quadrature = fem.RegularQuadrature(domain, order=3)
    x = wp.zeros(quadrature.total_point_count(), dtype=wp.vec2)
    fem.interpolate(position, dest=x, at=quadrature)
    x = x.numpy().astype(np.float64)
    inside = _expected_inside(x, lo, hi)
    assert 0 < inside.sum() < len(x)
    want = np.where(inside[:, None], x @ LINEAR.T + np.array([1.0, 0.0]), BACKGROUND)
    got = wp.zeros(len(x), dtype=wp.vec2)
    fem.interpolate(P.field_value, dest=got, at=quadrature, fields={"f": nc})
    np.testing.assert_allclose(got.numpy(), want, atol=1e-5)
    grads = wp.zeros(len(x), dtype=wp.mat22)
    fem.interpolate(field_grad, dest=grads, at=quadrature, fields={"f": nc})
    np.testing.assert_allclose(grads.numpy(), np.where(inside[:, None, None], LINEAR, 0.0),
                               atol=1e-4)


def test_nonconforming_field_errors():
    geo = fem.Grid2D(res=wp.vec2i(2, 2))
    cells, sides = fem.Cells(geo), fem.BoundarySides(geo)
    field = fem.make_polynomial_space(geo, degree=1).make_field()
    with pytest.raises(ValueError, match="defined on cells"):
        fem.NonconformingField(cells, field.trace())
    other = fem.Grid2D(res=wp.vec2i(2, 2), scalar_type=wp.float64)
    with pytest.raises(NotImplementedError, match="scalar types"):
        fem.NonconformingField(cells, fem.make_polynomial_space(other).make_field())
    with pytest.raises(ValueError, match="conforming to the domain"):
        fem.NonconformingField(sides, field, background=field)
    with pytest.raises(RuntimeError, match="cell elements"):
        fem.NonconformingField(sides, field).trace()


def test_dof_mapper_errors():
    with pytest.raises(ValueError, match="Unsupported value dtype"):
        fem.SymmetricTensorMapper(wp.vec3)
    with pytest.raises(ValueError, match="Unsupported value dtype"):
        fem.SkewSymmetricTensorMapper(wp.mat44)
    geo = fem.Grid2D(res=wp.vec2i(2, 2))
    with pytest.raises(NotImplementedError, match="geometry's scalar type"):
        fem.make_polynomial_space(geo, dof_mapper=fem.SymmetricTensorMapper(wp.mat22d))


# ---- `v.dtype` in generic funcs (the contact example's stress function needs it) -------------


@wp.func
def _halved_trace_matrix(m: Any):
    half = m.dtype(0.5)
    diag = wp.vector(m[0, 0], m[1, 1], dtype=m.dtype)
    return type(m)(half * diag[0], m[0, 1], m[1, 0], half * diag[1] + m.dtype(1.0))


@pytest.mark.parametrize("precision", [np.float32, np.float64])
def test_dtype_of_matrix_values_in_funcs(precision, rng):
    Mat = wp.mat22d if precision == np.float64 else wp.mat22

    @wp.kernel
    def apply(a: wp.array(dtype=Mat), out: wp.array(dtype=Mat)):
        i = wp.tid()
        out[i] = _halved_trace_matrix(a[i])

    values = rng.uniform(-1.0, 1.0, (8, 2, 2)).astype(precision)
    out = wp.zeros(8, dtype=Mat)
    wp.launch(apply, dim=8, inputs=[wp.array(values, dtype=Mat), out])
    want = values.copy()
    want[:, 0, 0] *= 0.5
    want[:, 1, 1] = 0.5 * want[:, 1, 1] + 1.0
    assert out.numpy().dtype == precision
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
