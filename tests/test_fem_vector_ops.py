"""kernelc.fem's vector and tensor operators against analytic and NumPy references, on
random non-zero data (no Warp needed), and the errors of their wrong uses.

Discrete fields interpolating random polynomials that the space reproduces exactly are
evaluated at quadrature points (`fem.interpolate(..., at=quadrature)`), next to the
points' positions, and compared with the polynomials' values and derivatives.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from tests import fem_vector_programs as P

PROGRAMS = Path(P.__file__)


@fem.integrand
def point(s: fem.Sample, domain: fem.Domain):
    return domain(s)


@fem.integrand
def value_of(s: fem.Sample, f: fem.Field):
    return f(s)


@fem.integrand
def grad_of(s: fem.Sample, f: fem.Field):
    return fem.grad(f, s)


@fem.integrand
def D_of(s: fem.Sample, f: fem.Field):
    return fem.D(f, s)


@fem.integrand
def div_of(s: fem.Sample, f: fem.Field):
    return fem.div(f, s)


@fem.integrand
def curl_of(s: fem.Sample, f: fem.Field):
    return fem.curl(f, s)


def _at_points(integrand, quadrature, dtype, fields=None):
    dest = kc.full(quadrature.total_point_count(), value=np.nan, dtype=dtype)  # poisoned
    fem.interpolate(integrand, at=quadrature, dest=dest, fields=fields or {})
    return dest.numpy().astype(np.float64)


def _field(space, values: np.ndarray):
    field = space.make_field()
    field.dof_values = kc.array(values, dtype=space.dtype)
    return field


def test_vector_field_operators_2d():
    """A Q2 vec2 field interpolating a random quadratic: value, gradient, D, div, curl."""
    rng = np.random.default_rng(1)
    c = rng.uniform(-1.0, 1.0, size=(2, 6))  # f_i = c_i . (1, x, y, x^2, xy, y^2)

    def f(x, y):
        return np.stack([c[i, 0] + c[i, 1] * x + c[i, 2] * y + c[i, 3] * x * x
                         + c[i, 4] * x * y + c[i, 5] * y * y for i in range(2)], axis=-1)

    def grad(x, y):  # (points, component, axis)
        gx = [c[i, 1] + 2 * c[i, 3] * x + c[i, 4] * y for i in range(2)]
        gy = [c[i, 2] + c[i, 4] * x + 2 * c[i, 5] * y for i in range(2)]
        return np.stack([np.stack(gx, -1), np.stack(gy, -1)], axis=-1)

    geo = fem.Grid2D(res=kc.vec2i(3, 4), bounds_lo=kc.vec2(-1.0, 0.5), bounds_hi=kc.vec2(1.0, 2.0))
    space = fem.make_polynomial_space(geo, degree=2, dtype=kc.vec2)
    nodes = space.node_positions().numpy().astype(np.float64)
    field = _field(space, f(nodes[:, 0], nodes[:, 1]))
    quadrature = fem.RegularQuadrature(fem.Cells(geo), order=3)
    x = _at_points(point, quadrature, kc.vec2)
    g = grad(x[:, 0], x[:, 1])
    fields = {"f": field}
    np.testing.assert_allclose(_at_points(value_of, quadrature, kc.vec2, fields),
                               f(x[:, 0], x[:, 1]), atol=2e-5)
    np.testing.assert_allclose(_at_points(grad_of, quadrature, kc.mat22, fields), g, atol=1e-4)
    np.testing.assert_allclose(_at_points(D_of, quadrature, kc.mat22, fields),
                               0.5 * (g + g.transpose(0, 2, 1)), atol=1e-4)
    np.testing.assert_allclose(_at_points(div_of, quadrature, kc.float32, fields),
                               g[:, 0, 0] + g[:, 1, 1], atol=1e-4)
    # Warp's curl of a 2-d field is the skew part's angle: (dfy/dx - dfx/dy) / 2
    np.testing.assert_allclose(_at_points(curl_of, quadrature, kc.float32, fields),
                               0.5 * (g[:, 1, 0] - g[:, 0, 1]), atol=1e-4)


def test_vector_and_tensor_operators_3d():
    """Q1 fields interpolating random linear functions: vec3 curl and div, mat33 div."""
    rng = np.random.default_rng(2)
    A, b = rng.uniform(-1.0, 1.0, size=(3, 3)), rng.uniform(-1.0, 1.0, size=3)
    geo = fem.Grid3D(res=kc.vec3i(2, 3, 2), bounds_hi=kc.vec3(1.0, 1.5, 0.5))
    cells = fem.Cells(geo)
    quadrature = fem.RegularQuadrature(cells, order=2)
    x = _at_points(point, quadrature, kc.vec3)
    space = fem.make_polynomial_space(geo, degree=1, dtype=kc.vec3)
    nodes = space.node_positions().numpy().astype(np.float64)
    field = {"f": _field(space, nodes @ A.T + b)}  # f(x) = A x + b, grad f = A
    half = 0.5 * np.array([A[2, 1] - A[1, 2], A[0, 2] - A[2, 0], A[1, 0] - A[0, 1]])
    np.testing.assert_allclose(_at_points(curl_of, quadrature, kc.vec3, field),
                               np.broadcast_to(half, x.shape), atol=1e-5)
    np.testing.assert_allclose(_at_points(div_of, quadrature, kc.float32, field),
                               np.trace(A), atol=1e-5)
    # T(x)[i, j] = sum_k B[i, j, k] x_k: div_j = sum_i dT[i, j]/dx_i = sum_i B[i, j, i]
    B = rng.uniform(-1.0, 1.0, size=(3, 3, 3))
    tensors = fem.make_polynomial_space(geo, degree=1, dtype=kc.mat33)
    t_nodes = tensors.node_positions().numpy().astype(np.float64)
    tensor = {"f": _field(tensors, np.einsum("ijk,nk->nij", B, t_nodes))}
    np.testing.assert_allclose(_at_points(div_of, quadrature, kc.vec3, tensor),
                               np.broadcast_to(np.einsum("iji->j", B), x.shape), atol=1e-5)


@fem.integrand
def scalar_mass(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


def test_vector_mass_is_the_scalar_mass_times_identity():
    """Test and trial functions of a vec2 space: dof d of a node is the node's weight times
    e_d, so the vector mass matrix's blocks are the scalar mass times the 2x2 identity."""
    geo = fem.Grid2D(res=kc.vec2i(3, 2), bounds_hi=kc.vec2(2.0, 1.0))
    cells = fem.Cells(geo)
    scalar = fem.make_polynomial_space(geo, degree=2)
    vector = fem.make_polynomial_space(geo, degree=2, dtype=kc.vec2)
    assert (vector.NODE_DOF_COUNT, vector.gradient_dtype, vector.divergence_dtype) == (
        2, kc.mat22, kc.float32)
    mass = [fem.integrate(form, fields={"u": fem.make_trial(s, domain=cells),
                                        "v": fem.make_test(s, domain=cells)})
            for form, s in ((scalar_mass, scalar), (P.vector_mass_form, vector))]
    assert mass[1].block_shape == (2, 2)
    np.testing.assert_array_equal(mass[1].columns.numpy()[: mass[1].nnz],
                                  mass[0].columns.numpy()[: mass[0].nnz])
    blocks = mass[1].values.numpy()[: mass[1].nnz]
    expected = mass[0].values.numpy()[: mass[0].nnz, None, None] * np.eye(2)
    np.testing.assert_allclose(blocks, expected, rtol=1e-6, atol=1e-9)


def test_linear_form_output_layouts():
    geo = fem.Grid2D(res=kc.vec2i(2, 2))
    cells = fem.Cells(geo)
    space = fem.make_polynomial_space(geo, degree=1, dtype=kc.vec2)
    test = fem.make_test(space, domain=cells)
    uniform = fem.UniformField(cells, kc.vec2(1.5, -2.0))
    as_vectors = fem.integrate(P.vector_mass_form, fields={"u": uniform, "v": test},
                               output_dtype=kc.vec2d)
    as_scalars = fem.integrate(P.vector_mass_form, fields={"u": uniform, "v": test})
    assert as_vectors.dtype == kc.vec2d and as_scalars.shape == (9, 2)
    # the test functions sum to one: the integrals sum to the value times the area (1)
    np.testing.assert_allclose(as_vectors.numpy().sum(axis=0), [1.5, -2.0], rtol=1e-6)
    np.testing.assert_allclose(as_scalars.numpy(), as_vectors.numpy(), rtol=1e-6)
    into = kc.full((9, 2), value=np.nan, dtype=kc.float32)  # poisoned, then overwritten
    fem.integrate(P.vector_mass_form, fields={"u": uniform, "v": test}, output=into)
    np.testing.assert_allclose(into.numpy(), as_scalars.numpy())
    with pytest.raises(RuntimeError, match="Incompatible output type"):
        fem.integrate(P.vector_mass_form, fields={"u": uniform, "v": test},
                      output_dtype=kc.vec3)
    # flat scalars, read as (nodes, dofs); the entries past them are zeroed
    flat = kc.full(20, value=np.nan, dtype=kc.float32)
    fem.integrate(P.vector_mass_form, fields={"u": uniform, "v": test}, output=flat)
    np.testing.assert_allclose(flat.numpy()[:18], as_scalars.numpy().reshape(-1))
    assert np.all(flat.numpy()[18:] == 0.0)
    bad = [(kc.zeros((9, 1), dtype=float), "last dimension must be of size 2"),
           (kc.zeros(17, dtype=float), "at least 18 entries"),
           (kc.zeros(36, dtype=float)[::2], "must be contiguous"),
           (kc.zeros((9, 2, 1), dtype=float), "one- or two-dimensional")]
    for output, message in bad:
        with pytest.raises(RuntimeError, match=message):
            fem.integrate(P.vector_mass_form, fields={"u": uniform, "v": test}, output=output)


def test_block_projector_normalization_matches_numpy():
    """Random SPD 2x2 blocks (one rank-deficient): kept eigenvectors as a projection, the
    value's components along them divided by their eigenvalues."""
    rng = np.random.default_rng(3)
    n = 5
    q = np.linalg.qr(rng.normal(size=(n, 2, 2)))[0]
    eigenvalues = rng.uniform(0.5, 2.0, size=(n, 2))
    eigenvalues[1, 0] = 0.0
    blocks = np.einsum("nij,nj,nkj->nik", q, eigenvalues, q)
    values = rng.normal(size=(n, 2))
    rows = kc.array(np.arange(n, dtype=np.int32))
    projector = kc.sparse.bsr_from_triplets(n, n, rows, rows, kc.array(blocks, dtype=kc.mat22d))
    fixed = kc.array(values, dtype=kc.vec2d)
    fem.normalize_dirichlet_projector(projector, fixed)
    keep = eigenvalues > 1e-6 * eigenvalues.sum(axis=1, keepdims=True)
    unit = np.einsum("nij,nj,nkj->nik", q, keep.astype(float), q)
    scaled = np.einsum("nij,nj,nkj,nk->ni", q, np.where(keep, 1 / np.where(keep, eigenvalues, 1),
                                                          0), q, values)
    np.testing.assert_allclose(projector.values.numpy(), unit, atol=1e-12)
    np.testing.assert_allclose(fixed.numpy(), scaled, rtol=1e-10, atol=1e-12)


@kc.kernel
def _dense_kernel(a: kc.array(dtype=kc.mat33d), inverse: kc.array(dtype=kc.mat33d),
                  eigenvalues: kc.array(dtype=kc.vec3d), vectors: kc.array(dtype=kc.mat33d)):
    i = kc.tid()
    inverse[i] = fem.linalg.inverse_qr(a[i])
    values, rows = fem.linalg.symmetric_eigen(a[i] + kc.transpose(a[i]))
    eigenvalues[i] = values
    vectors[i] = rows


def test_inverse_qr_and_symmetric_eigen_match_numpy():
    rng = np.random.default_rng(4)
    A = rng.normal(size=(6, 3, 3))
    outputs = [kc.full(6, value=np.nan, dtype=t) for t in (kc.mat33d, kc.vec3d, kc.mat33d)]
    kc.launch(_dense_kernel, dim=6, inputs=[kc.array(A, dtype=kc.mat33d), *outputs])
    inverse, values, vectors = (o.numpy() for o in outputs)
    np.testing.assert_allclose(inverse, np.linalg.inv(A), rtol=1e-9, atol=1e-9)
    S = A + A.transpose(0, 2, 1)
    np.testing.assert_allclose(np.sort(values, axis=1), np.linalg.eigvalsh(S), atol=1e-12)
    np.testing.assert_allclose(np.einsum("nki,nk,nkj->nij", vectors, values, vectors), S,
                               atol=1e-12)


def test_array_cast_copy_and_view_between_types():
    rng = np.random.default_rng(5)
    data = rng.normal(size=(7, 2))
    source = kc.array(data, dtype=kc.vec2d)
    dest = kc.full(7, value=np.nan, dtype=kc.vec2)
    kc.utils.array_cast(in_array=source, out_array=dest)
    np.testing.assert_array_equal(dest.numpy(), data.astype(np.float32))
    blocks = kc.array(data[:, :1, None], dtype=kc.types.matrix((1, 1), kc.float64))
    scalars = blocks.view(kc.float64)
    assert scalars.shape == (7,) and scalars.ptr == blocks.ptr
    np.testing.assert_array_equal(scalars.numpy(), data[:, 0])
    vectors = kc.full(7, value=np.nan, dtype=kc.types.vector(1, kc.float64))
    kc.copy(vectors, scalars)  # one byte size: copied as bytes, as Warp does
    np.testing.assert_array_equal(vectors.numpy()[:, 0], data[:, 0])
    with pytest.raises(TypeError, match="one dtype"):
        kc.copy(source, scalars)
    assert source.view(kc.float64).shape == (7, 2)
    with pytest.raises(TypeError, match="source scalar dtype float64 has size 8 bytes, but "
                       "target dtype has size 4 bytes"):  # Warp's wording
        source.view(kc.float32)
    with pytest.raises(TypeError, match="cannot create an array view with dtype vec4f from "
                       "source dtype float64: source dtype has size 8 bytes, but target scalar "
                       "dtype float32 has size 4 bytes"):
        scalars.view(kc.vec4)
    with pytest.raises(TypeError, match="dtype uint16 from source dtype float64: source dtype "
                       "has size 8 bytes, but target dtype has size 2 bytes"):
        scalars.view(kc.uint16)
    assert kc.types.type_size_in_bytes(kc.vec2d) == 16


# ---- errors ---------------------------------------------------------------------------------


def _where(marker: str, code: str) -> str:
    """'fem_vector_programs.py:LINE:COL' of `code` on the line ending with `marker`."""
    for number, line in enumerate(PROGRAMS.read_text().splitlines(), start=1):
        if line.rstrip().endswith(marker):
            return f"fem_vector_programs.py:{number}:{line.index(code) + 1}"
    raise LookupError(marker)


@pytest.mark.parametrize("name, dtype, marker, code, words", [
    ("bad_div_of_scalar", None, "# BAD_DIV", "fem.div", "float32 values has no divergence"),
    ("bad_D_of_scalar", None, "# BAD_D", "fem.D", "has no symmetric gradient"),
    ("bad_grad_of_tensor", kc.mat22, "# BAD_GRAD", "fem.grad", "mat22 values has no gradient"),
    ("bad_nested_call", kc.vec2, "# BAD_NESTED", "1.0", "must be a field argument"),
    ("bad_lookup", kc.vec2, "# BAD_LOOKUP", "fem.lookup", "takes 2 to 6 arguments"),
])
def test_wrong_uses_point_at_the_integrand(name, dtype, marker, code, words):
    geo = fem.Grid2D(res=kc.vec2i(2))
    space = fem.make_polynomial_space(geo, degree=1, dtype=dtype)
    cells = fem.Cells(geo)
    fields = {"u": fem.make_trial(space, domain=cells), "v": fem.make_test(space, domain=cells)}
    with pytest.raises(kc.KernelError) as info:
        fem.integrate(getattr(P, name), fields=fields)
    message = str(info.value)
    assert _where(marker, code) in message, message
    assert words in message, message
    assert "^" in message


def test_bad_spaces_and_fields_raise():
    geo = fem.Grid2D(res=kc.vec2i(2))
    with pytest.raises(NotImplementedError, match="scalar type"):
        fem.make_polynomial_space(geo, dtype=kc.vec2d)  # float64 values on a float32 grid
    with pytest.raises(ValueError, match="kernelc func"):
        fem.ImplicitField(fem.Cells(geo), func=lambda x: x)
    with pytest.raises(ValueError, match="first argument"):
        fem.ImplicitField(fem.Cells(geo), func=_not_a_position)
    with pytest.raises(ValueError, match="Unknown arguments"):
        fem.ImplicitField(fem.BoundarySides(geo), func=P.wall_velocity, values={"hieght": 1.0})


@kc.func
def _not_a_position(x: float):
    return x
