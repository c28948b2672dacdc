"""kernelc.fem on unstructured meshes (`Trimesh2D`, `Trimesh3D`, `Tetmesh`) against Warp's
warp.fem, and on their own.

The programs of `tests/fem_mesh_programs.py` (topology, P1 to P3 and discontinuous spaces,
vector spaces, nodal and side forms, interpolation) and Warp's `example_diffusion_3d.py`
(tetrahedra and a triangulated surface) and `example_distortion_energy.py` run here with
kernelc and in a Warp subprocess started when the module's first comparison needs it.
Topology (side numbering and orientation, side cells) and sparsity must be Warp's exactly,
values its to float rounding. The NumPy checks need no Warp.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from kernelc.fem.element import Element, element_quadrature
from tests import fem_harness as H
from tests import fem_mesh_checks as C
from tests import fem_mesh_programs as P

PROGRAMS = Path(P.__file__)
# name: (module, Example(...) arguments, the field compared); small meshes keep runs short.
EXAMPLES = {
    "diffusion_tet": ("example_diffusion_3d", {"mesh": "tet", "resolution": 3},
                      "_scalar_field"),
    "diffusion_tri": ("example_diffusion_3d", {"mesh": "tri", "resolution": 4},
                      "_scalar_field"),
    "distortion": ("example_distortion_energy", {"mesh": "tri", "resolution": 5}, "_u_field"),
}
# CG stops at a relative residual of 1e-4; the distortion example takes ten Newton steps of
# such solves, which carry rounding differences further (measured: 3.6e-4 of the maximum).
TOLERANCES = {"distortion": 1e-3}

_WARP_SCRIPT = """
import fem_mesh_programs_warp as P
results = P.run_all()
for name, (module, kwargs, field) in {examples!r}.items():
    example = importlib.import_module("warp.examples.fem." + module).Example(quiet=True,
                                                                            **kwargs)
    example.step()
    results["ex." + name] = getattr(example, field).dof_values.numpy()
"""

EXAMPLE_MODULES = {"utils": "kcm_fem_example_utils",
                   "example_diffusion": "kcm_fem_example_diffusion"} | {
    module: f"kcm_fem_{module}" for module, _, _ in EXAMPLES.values()}


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    scripts = {"mesh": _WARP_SCRIPT.format(examples=EXAMPLES)}
    with H.started_warp_run(tmp_path_factory, "warp_fem_mesh", PROGRAMS, scripts,
                            timeout=900) as run:
        yield run


@pytest.fixture(scope="module")
def kc_programs(warp_run):
    return P.run_all()


@pytest.fixture(scope="module")
def kc_examples(tmp_path_factory):
    with H.kernelc_examples(tmp_path_factory, "kc_fem_mesh_examples",
                            EXAMPLE_MODULES) as modules:
        yield modules


# ---- agreement with Warp --------------------------------------------------------------------


def test_mesh_programs_match_warp(kc_programs, warp_run):
    want = {k: v for k, v in warp_run.results().items() if not k.startswith("ex.")}
    H.assert_results_match(kc_programs, want)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_examples_match_warp(name, kc_examples, warp_run):
    module, kwargs, field = EXAMPLES[name]
    example = kc_examples[f"kcm_fem_{module}"].Example(quiet=True, **kwargs)
    example.step()
    got = getattr(example, field).dof_values.numpy()
    want = warp_run.results()[f"ex.{name}"]
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.abs(want).max() > 0.0
    tolerance = TOLERANCES.get(name, 1e-4)
    np.testing.assert_allclose(got, want, rtol=0, atol=tolerance * np.abs(want).max(),
                               err_msg=name)


# ---- on their own -----------------------------------------------------------------------------


def test_measures_sum_to_the_domain():
    tri = P.make_trimesh(res=(5, 4))
    assert fem.integrate(P.one_form, domain=fem.Cells(tri)) == pytest.approx(0.75, rel=1e-6)
    corners = tri.host_positions()[tri.host_side_vertices()[tri.boundary_side_indices()]]
    perimeter = np.linalg.norm(corners[:, 1] - corners[:, 0], axis=1).sum()
    assert fem.integrate(P.one_form, domain=fem.BoundarySides(tri)) == pytest.approx(
        perimeter, rel=1e-6)
    tet = P.make_tetmesh(res=(2, 3, 2))
    volume = C.tet_volumes(tet).sum()
    assert fem.integrate(P.one_form, domain=fem.Cells(tet)) == pytest.approx(volume, rel=1e-6)
    cube = fem.Tetmesh(kc.array(fem.utils.grid_to_tets(3, 2, 2), dtype=int),
                       kc.array(C.grid_points((3, 2, 2)), dtype=kc.vec3))
    assert fem.integrate(P.one_form, domain=fem.Cells(cube)) == pytest.approx(1.0, rel=1e-6)
    assert fem.integrate(P.one_form, domain=fem.BoundarySides(cube)) == pytest.approx(
        6.0, rel=1e-6)


def test_sides_point_out_of_their_inner_cell():
    for geo in (P.make_trimesh(res=(3, 3)), P.make_tetmesh(res=(2, 2, 2))):
        C.check_side_orientation(geo)


@pytest.mark.parametrize("element, orders", [(Element.TRIANGLE, range(9)),
                                             (Element.TETRAHEDRON, range(7))])
def test_simplex_quadrature_is_exact(element, orders):
    for order in orders:
        points, weights = element_quadrature(element, order)
        C.check_simplex_rule(element, order, np.array(points), np.array(weights))


@pytest.mark.parametrize("degree", [1, 2])
def test_poisson_on_triangles_converges(degree):
    errors = [C.poisson_error(fem.Trimesh2D, n, degree) for n in (4, 8)]
    rate = np.log2(errors[0] / errors[1])
    assert rate > degree + 0.7, errors  # the L2 error falls as h^(degree + 1)


@pytest.mark.parametrize("degree, sizes", [(1, (4, 8)), (2, (2, 4))])
def test_poisson_on_tetrahedra_converges(degree, sizes):
    errors = [C.poisson_error(fem.Tetmesh, n, degree) for n in sizes]
    assert np.log2(errors[0] / errors[1]) > degree + 0.5, errors


def test_fields_reproduce_polynomials_on_meshes():
    C.check_polynomial_reproduction(P.make_trimesh(res=(3, 2)), 2)
    C.check_polynomial_reproduction(P.make_trimesh(res=(3, 2), dim=3), 1)
    C.check_polynomial_reproduction(P.make_tetmesh(), 2)


def test_lookup_finds_the_cell():
    C.check_lookup(P.make_trimesh(res=(4, 3)))
    C.check_lookup(P.make_tetmesh(res=(2, 2, 1)))


def test_mesh_generators():
    tris = fem.utils.grid_to_tris(2, 3)
    assert tris.shape == (12, 3)
    assert fem.utils.grid_to_tets(2, 1, 1).shape == (10, 4)
    assert fem.utils.grid_to_quads(2, 3).shape == (6, 4)
    hexes = fem.utils.grid_to_hexes(1, 1, 1)
    np.testing.assert_array_equal(hexes, [[0, 4, 6, 2, 1, 5, 7, 3]])
    # every triangle counter-clockwise; the tetrahedra fill the cube (their orientation
    # alternates with the mirrored cells, as Warp's do)
    pos = np.stack(np.meshgrid(np.arange(3), np.arange(4), indexing="ij"), -1).reshape(-1, 2)
    e1, e2 = pos[tris[:, 1]] - pos[tris[:, 0]], pos[tris[:, 2]] - pos[tris[:, 0]]
    assert (e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0] > 0).all()
    tet = fem.Tetmesh(kc.array(fem.utils.grid_to_tets(2, 2, 2), dtype=int),
                      kc.array(C.grid_points((2, 2, 2)), dtype=kc.vec3))
    assert C.tet_volumes(tet).sum() == pytest.approx(1.0)


# ---- errors -----------------------------------------------------------------------------------


def test_integrand_without_value_interpolates_and_errors_at_its_def():
    geo = fem.Grid2D(res=kc.vec2i(2))
    boundary = fem.BoundarySides(geo)
    left = kc.zeros(boundary.element_count(), dtype=int)
    fem.interpolate(C.mark_left_sides, at=fem.RegularQuadrature(boundary, order=0),
                    values={"left": left})
    assert left.numpy().sum() == 2  # the two sides x = 0
    with pytest.raises(kc.KernelError) as info:
        fem.integrate(C.mark_left_sides, domain=boundary, values={"left": left})
    message = str(info.value)
    assert C.where("def mark_left_sides", "def") in message, message
    assert "returns no value" in message and "^" in message


def test_integrand_value_errors_point_at_the_return():
    geo = fem.Grid2D(res=kc.vec2i(2))
    space = fem.make_polynomial_space(geo, degree=1)
    cells = fem.Cells(geo)
    with pytest.raises(kc.KernelError) as info:
        fem.integrate(C.vector_valued_form, fields={"u": fem.make_trial(space, domain=cells),
                                                    "v": fem.make_test(space, domain=cells)})
    message = str(info.value)
    assert C.where("# BAD_VALUE", "wp.vec2") in message, message
    assert "cannot convert" in message and "^" in message


def test_errors_in_fem_library_code_keep_their_place():
    geo = fem.Grid2D(res=kc.vec2i(2))
    field = fem.make_polynomial_space(geo, degree=1).make_field()
    with pytest.raises(kc.KernelError) as info:
        fem.integrate(C.position_of_an_int, fields={"u": field}, domain=fem.Cells(geo))
    message = str(info.value)
    # The place is fem's own code, not the integrand's value; the integrand is named.
    assert "grid2d.py" in message and "element_index" in message, message
    assert "compiling integrand 'position_of_an_int'" in message and "^" in message
    assert "the value of integrand" not in message


def test_bad_meshes_raise():
    with pytest.raises(ValueError, match="Vertex index"):
        fem.Trimesh2D(kc.array(np.array([[0, 1, 5]]), dtype=int),
                      kc.array(np.zeros((3, 2)), dtype=kc.vec2))
    with pytest.raises(TypeError, match="vec3"):
        fem.Tetmesh(kc.array(np.array([[0, 1, 2, 3]]), dtype=int),
                    kc.array(np.zeros((4, 2)), dtype=kc.vec2))
    with pytest.raises(NotImplementedError, match="degree above 2"):
        fem.make_polynomial_space(P.make_tetmesh(), degree=3)
