"""kernelc.fem's Nedelec (H(curl)) and Raviart-Thomas (H(div)) spaces against Warp's
warp.fem, and on their own.

The programs of `tests/fem_nedelec_rt_programs.py` (node numbers, forms, nodal projectors,
interpolation on cells and boundary sides, discrete field integrals on grids, tetrahedra,
hexahedra, triangles and quadrilaterals) and Warp's `example_magnetostatics.py` (Nedelec,
`fem.curl`, a grid, tetrahedra or hexahedra deformed onto a cylinder) and
`example_streamlines.py` (Raviart-Thomas, `fem.div`, lookups) run here with kernelc and in
Warp subprocesses started when the module's first comparison needs them. Node numbers and
sparsity must be Warp's exactly, values its to float rounding. The other checks need no
Warp: conformity of the traces, reproduction of affine fields, the divergence theorem,
`interpolate(dim=...)` and the errors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from tests import fem_harness as H
from tests import fem_mesh_programs as M
from tests import fem_nedelec_rt_programs as P
from tests import fem_quadhex_programs as Q

PROGRAMS = Path(P.__file__)
_MAG, _STREAM = "example_magnetostatics", "example_streamlines"
# name: (module, Example(...) arguments, the attributes compared); small meshes keep runs
# short (the magnetostatics domain shrunk so that its coil meets quadrature points).
EXAMPLES = {
    "magnetostatics_grid": (_MAG, {"resolution": 5, "domain_radius": 0.6},
                            ("A_field", "B_field")),
    "magnetostatics_tet": (_MAG, {"mesh": "tet", "resolution": 5, "domain_radius": 0.6},
                           ("A_field", "B_field")),
    "magnetostatics_hex": (_MAG, {"mesh": "hex", "resolution": 5, "domain_radius": 0.6},
                           ("A_field", "B_field")),
    "magnetostatics_grid_fp64": (_MAG, {"resolution": 5, "domain_radius": 0.6, "fp64": True},
                                 ("A_field", "B_field")),
    "streamlines_grid": (_STREAM, {"resolution": 4, "headless": True},
                         ("velocity_field", "pressure_field", "_points", "_speed")),
    "streamlines_tet": (_STREAM, {"mesh": "tet", "resolution": 4, "headless": True},
                        ("velocity_field", "pressure_field", "_points", "_speed")),
    "streamlines_hex": (_STREAM, {"mesh": "hex", "resolution": 4, "headless": True},
                        ("velocity_field", "pressure_field", "_points", "_speed")),
}
# The magnetostatics solver (CR) stops at a relative residual of 1e-4 (measured: 1.5e-6 of
# the maximum; float64 4e-16); the streamlines agree bit for bit.
TOLERANCES = {"magnetostatics": 1e-4, "streamlines": 1e-5}

_WARP_PROGRAMS = """
import fem_nedelec_rt_programs_warp as P
results = P.run_all()
"""

_WARP_EXAMPLES = """
def as_numpy(x):
    return x.dof_values.numpy() if hasattr(x, "dof_values") else x.numpy()

for name, (module, kwargs, attributes) in {examples!r}.items():
    example = importlib.import_module("warp.examples.fem." + module).Example(quiet=True,
                                                                            **kwargs)
    example.step()
    for attribute in attributes:
        results[f"ex.{{name}}.{{attribute}}"] = as_numpy(getattr(example, attribute))
"""

EXAMPLE_MODULES = {"utils": "kcn_fem_example_utils",
                   "example_apic_fluid": "kcn_fem_example_apic_fluid",
                   _MAG: f"kcn_fem_{_MAG}", _STREAM: f"kcn_fem_{_STREAM}"}


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    scripts = {"programs": _WARP_PROGRAMS,
               "examples": _WARP_EXAMPLES.format(examples=EXAMPLES)}
    with H.started_warp_run(tmp_path_factory, "warp_fem_nedelec_rt", PROGRAMS, scripts,
                            timeout=900,
                            helpers=[Path(M.__file__), Path(Q.__file__)]) as run:
        yield run


@pytest.fixture(scope="module")
def kc_programs(warp_run):
    return P.run_all()


@pytest.fixture(scope="module")
def kc_examples(tmp_path_factory):
    with H.kernelc_examples(tmp_path_factory, "kc_fem_nedelec_rt_examples",
                            EXAMPLE_MODULES) as modules:
        yield modules


# ---- agreement with Warp --------------------------------------------------------------------


def test_nedelec_rt_programs_match_warp(kc_programs, warp_run):
    want = {k: v for k, v in warp_run.results().items() if not k.startswith("ex.")}
    H.assert_results_match(kc_programs, want)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_examples_match_warp(name, kc_examples, warp_run):
    module, kwargs, attributes = EXAMPLES[name]
    example = kc_examples[f"kcn_fem_{module}"].Example(quiet=True, **kwargs)
    example.step()
    tolerance = TOLERANCES[name.split("_")[0]]
    for attribute in attributes:
        value = getattr(example, attribute)
        got = value.dof_values.numpy() if hasattr(value, "dof_values") else value.numpy()
        want = warp_run.results()[f"ex.{name}.{attribute}"]
        assert got.shape == want.shape and got.dtype == want.dtype, attribute
        assert np.abs(want).max() > 0.0, attribute
        keep = _comparable(name, attribute, warp_run.results())
        np.testing.assert_allclose(got[keep], want[keep], rtol=0,
                                   atol=tolerance * np.abs(want).max(),
                                   err_msg=f"{name}.{attribute}")


def _comparable(name: str, attribute: str, want: dict) -> np.ndarray:
    """Which entries of an example's result to compare: all, except on the hexahedra of
    the streamlines example the points of each streamline after the first point within
    2^-10 (in cell coordinates) of an interior face, and their speeds. Warp's lookup
    takes a point that close to a face to be in either cell (its closest-point search
    stops with the unprojected coordinates there, at a distance that is rounding noise,
    and its BVH's traversal order breaks the tie), and the Raviart-Thomas velocity is
    not continuous across faces; kernelc keeps the cell that contains the point."""
    shape = want[f"ex.{name}.{attribute}"].shape
    if name != "streamlines_hex" or attribute not in ("_points", "_speed"):
        return np.ones(shape, dtype=bool)
    cells = want[f"ex.{name}._points"] * 4.0  # a 4 x 4 x 4 unit cube
    offset = np.abs(cells - np.round(cells))
    interior = (np.round(cells) > 0.0) & (np.round(cells) < 4.0)
    near = ((offset < 2.0 ** -10) & interior).any(axis=-1)
    first = np.where(near.any(axis=1), np.argmax(near, axis=1), shape[1])
    keep = np.arange(shape[1])[None, :] <= first[:, None]
    if attribute == "_speed":  # the speed at the ambiguous point is that of either cell
        keep = np.arange(shape[1])[None, :] < first[:, None]
    assert keep.mean() > 0.5  # most of each streamline is compared
    return np.broadcast_to(keep[..., None], shape) if len(shape) == 3 else keep


# ---- on their own -----------------------------------------------------------------------------


@fem.integrand
def normal_jump(s: fem.Sample, domain: fem.Domain, f: fem.Field):
    j = kc.dot(fem.jump(f, s), fem.normal(domain, s))
    return j * j


@fem.integrand
def tangent_jump(s: fem.Sample, domain: fem.Domain, f: fem.Field):
    n = fem.normal(domain, s)
    j = fem.jump(f, s)
    return kc.length_sq(j - kc.dot(j, n) * n)


@fem.integrand
def side_size(s: fem.Sample, f: fem.Field):
    return kc.length_sq(fem.average(f, s))


def _random_field(space, seed: int):
    field = space.make_field()
    values = np.random.default_rng(seed).normal(size=space.node_count())
    field.dof_values = kc.array(values, dtype=space.geometry.scalar_type)
    return field


def _mirrored(mesh):
    """The 2-d mesh with every other cell listed clockwise."""
    cells = mesh.host_cell_vertices().copy()
    cells[::2] = cells[::2, ::-1]
    return type(mesh)(kc.array(cells, dtype=int), mesh.positions)


_MESHES = {"tet": lambda: M.make_tetmesh(res=(2, 2, 2)),
           "hex": lambda: Q.make_hexmesh(res=(2, 2, 2), scrambled=True),
           "grid3": lambda: fem.Grid3D(res=kc.vec3i(2, 2, 3)),
           "tri": lambda: M.make_trimesh(res=(3, 3)),
           "quad": lambda: Q.make_quadmesh(res=(3, 3), scrambled=True),
           "tri_mirrored": lambda: _mirrored(M.make_trimesh(res=(3, 3))),
           "quad_mirrored": lambda: _mirrored(Q.make_quadmesh(res=(3, 3), scrambled=True))}


@pytest.mark.parametrize("mesh", list(_MESHES))
def test_traces_are_conforming(mesh):
    """Random Nedelec fields keep their tangential components across sides (and jump in
    their normal ones), Raviart-Thomas fields their normal components: the orientation
    signs make neighbouring cells agree, whatever the cells' vertex order."""
    geo = _MESHES[mesh]()
    sides = fem.Sides(geo)
    for basis, kept, free in ((fem.ElementBasis.NEDELEC_FIRST_KIND, tangent_jump, normal_jump),
                              (fem.ElementBasis.RAVIART_THOMAS, normal_jump, tangent_jump)):
        space = fem.make_polynomial_space(geo, degree=1, element_basis=basis)
        trace = _random_field(space, 3).trace()
        scale = fem.integrate(side_size, fields={"f": trace}, domain=sides)
        assert fem.integrate(kept, fields={"f": trace}, domain=sides) < 1e-10 * scale
        assert fem.integrate(free, fields={"f": trace}, domain=sides) > 1e-2 * scale


@fem.integrand
def rotation_field(s: fem.Sample, domain: fem.Domain, a: kc.vec3, b: kc.vec3):
    return a + kc.cross(b, domain(s))


@fem.integrand
def rotation_field_2d(s: fem.Sample, domain: fem.Domain, a: kc.vec2, b: float):
    x = domain(s)
    return a + b * kc.vec2(-x[1], x[0])


@fem.integrand
def dilation_field(s: fem.Sample, domain: fem.Domain, a: kc.vec3, b: float):
    return a + b * domain(s)


@fem.integrand
def dilation_field_2d(s: fem.Sample, domain: fem.Domain, a: kc.vec2, b: float):
    return a + b * domain(s)


@fem.integrand
def sample_3d(s: fem.Sample, domain: fem.Domain, f: fem.Field, x: kc.array(dtype=kc.vec3),
              value: kc.array(dtype=kc.vec3), curl: kc.array(dtype=kc.vec3),
              div: kc.array(dtype=float)):
    x[s.qp_index] = domain(s)
    value[s.qp_index] = f(s)
    curl[s.qp_index] = fem.curl(f, s)
    div[s.qp_index] = fem.div(f, s)


@fem.integrand
def sample_2d(s: fem.Sample, domain: fem.Domain, f: fem.Field, x: kc.array(dtype=kc.vec2),
              value: kc.array(dtype=kc.vec2), curl: kc.array(dtype=float),
              div: kc.array(dtype=float)):
    x[s.qp_index] = domain(s)
    value[s.qp_index] = f(s)
    curl[s.qp_index] = fem.curl(f, s)
    div[s.qp_index] = fem.div(f, s)


_AFFINE = {"tet": lambda: M.make_tetmesh(res=(2, 2, 2)),
           "hexp": lambda: Q.make_hexmesh(res=(2, 2, 1), sheared=True),
           "grid3": lambda: fem.Grid3D(res=kc.vec3i(2, 1, 2), bounds_hi=kc.vec3(1.0, 0.5, 0.8)),
           "tri": lambda: M.make_trimesh(res=(3, 2)),
           "grid2": lambda: fem.Grid2D(res=kc.vec2i(2, 3), bounds_hi=kc.vec2(0.6, 1.0))}


@pytest.mark.parametrize("mesh", list(_AFFINE))
def test_affine_fields_are_reproduced(mesh):
    """Interpolating a + b x x (Nedelec) or a + b x (Raviart-Thomas) on cells that are
    affine images of the reference one gives back the field, its curl (Warp's: b, half the
    rotation) and its divergence (b times the dimension) at every quadrature point."""
    geo = _AFFINE[mesh]()
    dim = geo.dimension
    rng = np.random.default_rng(11)
    a, b, beta = rng.normal(size=dim), rng.normal(size=3), float(rng.normal())
    vec = kc.vec3 if dim == 3 else kc.vec2
    rotation = {"a": vec(*a), "b": vec(*b) if dim == 3 else float(b[2])}
    cases = ((fem.ElementBasis.NEDELEC_FIRST_KIND, rotation_field if dim == 3
              else rotation_field_2d, rotation),
             (fem.ElementBasis.RAVIART_THOMAS, dilation_field if dim == 3
              else dilation_field_2d, {"a": vec(*a), "b": beta}))
    for basis, make_field, values in cases:
        space = fem.make_polynomial_space(geo, degree=1, element_basis=basis)
        field = space.make_field()
        fem.interpolate(make_field, dest=field, values=values)
        quadrature = fem.RegularQuadrature(fem.Cells(geo), order=2)
        n = quadrature.total_point_count()
        out = {"x": kc.zeros(n, dtype=vec), "value": kc.zeros(n, dtype=vec),
               "curl": kc.zeros(n, dtype=kc.vec3 if dim == 3 else float),
               "div": kc.zeros(n, dtype=float)}
        fem.interpolate(sample_3d if dim == 3 else sample_2d, at=quadrature,
                        fields={"f": field}, values=out)
        x, got = out["x"].numpy(), {k: v.numpy() for k, v in out.items()}
        if basis == fem.ElementBasis.NEDELEC_FIRST_KIND:
            want = a + (np.cross(b, x) if dim == 3 else b[2] * np.stack([-x[:, 1], x[:, 0]], 1))
            np.testing.assert_allclose(got["curl"], np.broadcast_to(
                b if dim == 3 else b[2], got["curl"].shape), rtol=3e-5, atol=3e-5)
            np.testing.assert_allclose(got["div"], 0.0, rtol=3e-5, atol=3e-5)
        else:
            want = a + beta * x
            np.testing.assert_allclose(got["div"], dim * beta, rtol=3e-5, atol=3e-5)
        np.testing.assert_allclose(got["value"], want, rtol=3e-5, atol=3e-5)


@fem.integrand
def divergence(s: fem.Sample, f: fem.Field):
    return fem.div(f, s)


@fem.integrand
def outflow(s: fem.Sample, domain: fem.Domain, f: fem.Field):
    return kc.dot(f(s), fem.normal(domain, s))


@pytest.mark.parametrize("mesh", ["tet", "hex", "quad"])
def test_divergence_theorem(mesh):
    """The divergence of a random Raviart-Thomas field sums to its flux through the
    boundary (on curved cells too: the Piola map keeps fluxes)."""
    geo = _MESHES[mesh]()
    space = fem.make_polynomial_space(geo, degree=1,
                                      element_basis=fem.ElementBasis.RAVIART_THOMAS)
    field = _random_field(space, 5)
    total = fem.integrate(divergence, fields={"f": field}, domain=fem.Cells(geo))
    flux = fem.integrate(outflow, fields={"f": field.trace()}, domain=fem.BoundarySides(geo))
    assert abs(flux) > 1e-2
    assert total == pytest.approx(flux, rel=1e-4, abs=1e-5)


@fem.integrand
def free_sample(s: fem.Sample, domain: fem.Domain, out: kc.array(dtype=kc.vec2)):
    out[s.qp_index] = kc.vec2(float(s.qp_index) * 2.0 + float(s.element_index), s.qp_weight)


@fem.integrand
def free_value(s: fem.Sample, domain: fem.Domain):
    return 3.0 * float(s.qp_index)


def test_interpolate_at_free_samples():
    """`interpolate(..., dim=n)`: n samples in no element, numbered 0 to n - 1, weight
    1 / n, for side effects or into an array."""
    geo = fem.Grid3D(res=kc.vec3i(2))
    out = kc.zeros(7, dtype=kc.vec2)
    fem.interpolate(free_sample, at=fem.Cells(geo), dim=7, values={"out": out})
    want = np.stack([np.arange(7) * 2.0 - 1.0, np.full(7, 1.0 / 7.0)], axis=1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    dest = kc.zeros(5, dtype=float)
    fem.interpolate(free_value, dest=dest, at=fem.Cells(geo), dim=5)
    np.testing.assert_allclose(dest.numpy(), 3.0 * np.arange(5))


def test_errors():
    geo = fem.Grid3D(res=kc.vec3i(2))
    lagrange = fem.make_polynomial_basis_space(geo, degree=1)
    nedelec = fem.make_polynomial_basis_space(
        geo, degree=1, element_basis=fem.ElementBasis.NEDELEC_FIRST_KIND)
    with pytest.raises(ValueError, match="covariant"):
        fem.make_covariant_function_space(lagrange)
    with pytest.raises(ValueError, match="ontravariant"):
        fem.make_contravariant_function_space(nedelec)
    with pytest.raises(NotImplementedError, match="degree-1"):
        fem.make_polynomial_space(geo, degree=2,
                                  element_basis=fem.ElementBasis.RAVIART_THOMAS)
    with pytest.raises(NotImplementedError, match="not supported"):
        fem.make_polynomial_space(M.make_trimesh(dim=3), degree=1,
                                  element_basis=fem.ElementBasis.NEDELEC_FIRST_KIND)
    space = fem.make_covariant_function_space(nedelec)
    assert space.dtype == kc.vec3 and space.dof_dtype == kc.float32
    assert space.NODE_DOF_COUNT == 1 and space.VALUE_DOF_COUNT == 3
    assert space.node_count() == 3 * 2 * 3 * 3  # edges of a 2 x 2 x 2 grid
