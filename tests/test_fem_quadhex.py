"""kernelc.fem on quadrilateral and hexahedral meshes (`Quadmesh2D`, `Quadmesh3D`,
`Hexmesh`) and sparse grids (`Nanogrid`) against Warp's warp.fem, and on their own.

The programs of `tests/fem_quadhex_programs.py` (topology, Q1 to Q3, serendipity, vector
and discontinuous spaces, nodal and side forms, interpolation, lookups; meshes whose cells
are listed from arbitrary vertices; a sparse grid) and Warp's `example_diffusion.py` (`--mesh quad`),
`example_diffusion_3d.py` (`--mesh hex`, `--mesh quad`) and `example_distortion_energy.py`
(`--mesh quad`) run here with kernelc and in a Warp subprocess started when the module's
first comparison needs it. Topology (side numbering and orientation, side cells, node
numbers) and sparsity must be Warp's exactly, values its to float rounding. The other
checks need no Warp.
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
from tests import fem_mesh_programs as M
from tests import fem_quadhex_programs as P

PROGRAMS = Path(P.__file__)
# name: (module, Example(...) arguments, the field compared); small meshes keep runs short.
EXAMPLES = {
    "diffusion_quad": ("example_diffusion", {"mesh": "quad", "resolution": 8},
                       "_scalar_field"),
    "diffusion_quad_q1": ("example_diffusion", {"mesh": "quad", "resolution": 8, "degree": 1,
                                                "boundary_compliance": 0.1}, "_scalar_field"),
    "diffusion_quad_s3": ("example_diffusion", {"mesh": "quad", "resolution": 6, "degree": 3,
                                                "serendipity": True}, "_scalar_field"),
    "diffusion_hex": ("example_diffusion_3d", {"mesh": "hex", "resolution": 3},
                      "_scalar_field"),
    "diffusion_hex_s2": ("example_diffusion_3d", {"mesh": "hex", "resolution": 3,
                                                  "serendipity": True}, "_scalar_field"),
    "diffusion_quad3d": ("example_diffusion_3d", {"mesh": "quad", "resolution": 4},
                         "_scalar_field"),
    "distortion_quad": ("example_distortion_energy", {"mesh": "quad", "resolution": 5},
                        "_u_field"),
}
# CG stops at a relative residual of 1e-4; the distortion example takes ten Newton steps of
# such solves, which carry rounding differences further.
TOLERANCES = {"distortion_quad": 1e-3}

_WARP_SCRIPT = """
import fem_quadhex_programs_warp as P
results = P.run_all()
for name, (module, kwargs, field) in {examples!r}.items():
    example = importlib.import_module("warp.examples.fem." + module).Example(quiet=True,
                                                                            **kwargs)
    example.step()
    results["ex." + name] = getattr(example, field).dof_values.numpy()
"""

EXAMPLE_MODULES = {"utils": "kcq_fem_example_utils",
                   "example_diffusion": "kcq_fem_example_diffusion"} | {
    module: f"kcq_fem_{module}" for module, _, _ in EXAMPLES.values()}


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    scripts = {"quadhex": _WARP_SCRIPT.format(examples=EXAMPLES)}
    with H.started_warp_run(tmp_path_factory, "warp_fem_quadhex", PROGRAMS, scripts,
                            timeout=900, helpers=[Path(M.__file__)]) as run:
        yield run


@pytest.fixture(scope="module")
def kc_programs(warp_run):
    return P.run_all()


@pytest.fixture(scope="module")
def kc_examples(tmp_path_factory):
    with H.kernelc_examples(tmp_path_factory, "kc_fem_quadhex_examples",
                            EXAMPLE_MODULES) as modules:
        yield modules


# ---- agreement with Warp --------------------------------------------------------------------


def test_quadhex_programs_match_warp(kc_programs, warp_run):
    want = {k: v for k, v in warp_run.results().items() if not k.startswith("ex.")}
    H.assert_results_match(kc_programs, want)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_examples_match_warp(name, kc_examples, warp_run):
    module, kwargs, field = EXAMPLES[name]
    example = kc_examples[f"kcq_fem_{module}"].Example(quiet=True, **kwargs)
    example.step()
    got = getattr(example, field).dof_values.numpy()
    want = warp_run.results()[f"ex.{name}"]
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.abs(want).max() > 0.0
    tolerance = TOLERANCES.get(name, 1e-4)
    np.testing.assert_allclose(got, want, rtol=0, atol=tolerance * np.abs(want).max(),
                               err_msg=name)


# ---- on their own -----------------------------------------------------------------------------


def _grid_quadmesh(res: tuple) -> fem.Quadmesh2D:
    return fem.Quadmesh2D(kc.array(fem.utils.grid_to_quads(*res), dtype=int),
                          kc.array(C.grid_points(res), dtype=kc.vec2))


def _grid_hexmesh(res: tuple) -> fem.Hexmesh:
    return fem.Hexmesh(kc.array(fem.utils.grid_to_hexes(*res), dtype=int),
                       kc.array(C.grid_points(res), dtype=kc.vec3))


def test_measures_sum_to_the_domain():
    quads = P.make_quadmesh()  # its boundary vertices slide along the rectangle's sides
    assert fem.integrate(M.one_form, domain=fem.Cells(quads)) == pytest.approx(0.75, rel=1e-6)
    assert fem.integrate(M.one_form, domain=fem.BoundarySides(quads)) == pytest.approx(
        3.5, rel=1e-6)
    cube = _grid_hexmesh((3, 2, 2))
    assert fem.integrate(M.one_form, domain=fem.Cells(cube)) == pytest.approx(1.0, rel=1e-6)
    assert fem.integrate(M.one_form, domain=fem.BoundarySides(cube)) == pytest.approx(
        6.0, rel=1e-6)
    sheared = P.make_hexmesh(sheared=True)  # an affine image of a 1 x 1 x 0.5 box
    matrix = np.array([[1.0, 0.2, 0.1], [0.3, 1.1, 0.0], [0.0, 0.25, 0.9]])
    assert fem.integrate(M.one_form, domain=fem.Cells(sheared)) == pytest.approx(
        0.5 * abs(np.linalg.det(matrix)), rel=1e-6)


@pytest.mark.parametrize("make", [lambda: P.make_quadmesh(scrambled=True),
                                  lambda: P.make_hexmesh(res=(2, 2, 2), scrambled=True)])
def test_sides_point_out_of_their_inner_cell(make):
    C.check_side_orientation(make())


@pytest.mark.parametrize("element_basis, degrees", [(None, (1, 2, 3, 4)),
                                                    (fem.ElementBasis.SERENDIPITY, (2, 3))])
@pytest.mark.parametrize("make", [lambda: P.make_quadmesh(res=(3, 3), scrambled=True),
                                  lambda: P.make_hexmesh(res=(2, 2, 2), scrambled=True)])
def test_cells_agree_on_their_shared_nodes(make, element_basis, degrees):
    """Every cell puts each of its nodes where the other cells sharing it put it, and every
    node belongs to some cell (cells listed from arbitrary vertices and in either
    direction around their faces). Warp's own numbering of degree-4 hexahedra breaks this:
    it turns face nodes as if faces had 2 x 2 of them."""
    geo = make()
    for degree in degrees:
        space = fem.make_polynomial_space(geo, degree=degree, element_basis=element_basis)
        nodes = space.topology.host_element_nodes().reshape(-1)
        where = geo.host_cell_positions(space.shape.node_coords().astype(np.float64))
        where = where.reshape(len(nodes), -1)
        first = np.full((space.node_count(), where.shape[1]), np.nan)
        first[nodes[::-1]] = where[::-1]  # the first cell's position of each node
        assert not np.isnan(first).any()
        np.testing.assert_allclose(where, first[nodes], atol=1e-6, err_msg=str(degree))


@pytest.mark.parametrize("degree", [1, 2])
def test_grid_shaped_meshes_match_the_grids(degree):
    """A Quadmesh2D / Hexmesh of a grid's cells has the grid's stiffness matrix (its nodes
    matched by position)."""
    for res, mesh, grid in (((3, 2), _grid_quadmesh, fem.Grid2D),
                            ((2, 1, 2), _grid_hexmesh, fem.Grid3D)):
        matrices, positions = [], []
        for geo in (mesh(res), grid(res=res)):
            space = fem.make_polynomial_space(geo, degree=degree)
            cells = fem.Cells(geo)
            matrix = fem.integrate(M.diffusion_form, assembly="generic",
                                   fields={"u": fem.make_trial(space, domain=cells),
                                           "v": fem.make_test(space, domain=cells)})
            matrices.append(_dense(H.block_csr(matrix), space.node_count()))
            positions.append(space.node_positions().numpy())
        order = [np.lexsort(p.T[::-1]) for p in positions]
        np.testing.assert_allclose(positions[0][order[0]], positions[1][order[1]], atol=1e-6)
        np.testing.assert_allclose(matrices[0][np.ix_(order[0], order[0])],
                                   matrices[1][np.ix_(order[1], order[1])], atol=1e-5)


def _dense(csr: dict, n: int) -> np.ndarray:
    out = np.zeros((n, n))
    rows = np.repeat(np.arange(n), np.diff(csr["offsets"]))
    out[rows, csr["columns"]] = csr["values"].reshape(-1)
    return out


def test_regular_quadrature_on_squares_and_cubes():
    # the tensor rules integrate x^a y^b (z^c) exactly up to their order in each variable
    for element in (Element.SQUARE, Element.CUBE):
        for order in range(6):
            points, weights = map(np.array, element_quadrature(element, order))
            for powers in np.ndindex(*(order + 1,) * element.dimension):
                exact = np.prod([1.0 / (p + 1) for p in powers])
                value = (weights * np.prod(points[:, :element.dimension] ** np.array(powers),
                                           axis=1)).sum()
                assert abs(value - exact) < 1e-12, (element, order, powers)


@pytest.mark.parametrize("mesh_type, degree, sizes, rate", [
    (fem.Quadmesh2D, 1, (4, 8), 1.7), (fem.Quadmesh2D, 2, (4, 8), 2.7),
    (fem.Hexmesh, 1, (3, 6), 1.6), (fem.Hexmesh, 2, (2, 4), 2.5)])
def test_poisson_converges(mesh_type, degree, sizes, rate):
    errors = [C.poisson_error(mesh_type, n, degree) for n in sizes]
    assert np.log2(errors[0] / errors[1]) > rate, errors  # the L2 error falls as h^(k + 1)


def test_serendipity_poisson_converges():
    errors = [C.poisson_error(fem.Quadmesh2D, n, 3, fem.ElementBasis.SERENDIPITY)
              for n in (2, 4)]
    assert np.log2(errors[0] / errors[1]) > 3.5, errors


def test_fields_reproduce_polynomials():
    # Q_k holds the quadratics on affine cells; on other cells, the linear functions
    C.check_polynomial_reproduction(P.make_hexmesh(sheared=True), 2)
    C.check_polynomial_reproduction(P.make_quadmesh(dim=3), 1)
    for geo in (P.make_quadmesh(scrambled=True), P.make_hexmesh(scrambled=True)):
        space = fem.make_polynomial_space(geo, degree=2)
        field = space.make_field()
        fem.interpolate(C.linear_expr, dest=field)
        error = fem.integrate(C.linear_error, fields={"f": field}, domain=fem.Cells(geo))
        assert error < 1e-10, error


def test_lookup_finds_the_cell():
    # to Warp's precision on bilinear and trilinear cells, exactly on affine ones
    C.check_lookup(P.make_quadmesh(res=(4, 3)), tolerance=1e-3)
    C.check_lookup(P.make_quadmesh(res=(3, 3), scrambled=True), tolerance=1e-3)
    C.check_lookup(P.make_hexmesh(res=(2, 2, 1)), tolerance=1e-3)
    C.check_lookup(P.make_hexmesh(sheared=True))


def test_double_precision_meshes():
    geo32 = P.make_quadmesh()
    geo64 = fem.Quadmesh2D(geo32.quad_vertex_indices,
                           kc.array(geo32.host_positions(), dtype=kc.vec2d))
    assert geo64.scalar_type == kc.float64 and geo64.name == "Quadmesh2D_f64"
    hex32 = P.make_hexmesh()
    hex64 = fem.Hexmesh(hex32.hex_vertex_indices, kc.array(hex32.host_positions(),
                                                           dtype=kc.vec3d))
    assert hex64.name == "Hexmesh_f64_general"
    for low, high in ((geo32, geo64), (hex32, hex64)):
        values = []
        for geo in (low, high):
            space = fem.make_polynomial_space(geo, degree=2)
            cells = fem.Cells(geo)
            matrix = fem.integrate(M.diffusion_form, assembly="generic",
                                   fields={"u": fem.make_trial(space, domain=cells),
                                           "v": fem.make_test(space, domain=cells)})
            values.append(H.block_csr(matrix))
        np.testing.assert_array_equal(values[0]["columns"], values[1]["columns"])
        assert values[1]["values"].dtype == np.float64
        np.testing.assert_allclose(values[0]["values"], values[1]["values"], atol=2e-6)


def test_warp_names_and_arrays():
    quads = P.make_quadmesh(scrambled=True)
    assert quads.name == "Quadmesh2D" and P.make_quadmesh(dim=3).name == "Quadmesh3D"
    assert quads.reference_cell() == Element.SQUARE
    edges = quads.edge_vertex_indices.numpy()
    assert edges.shape == (quads.side_count(), 2)
    assert (quads.edge_quad_indices.numpy()[quads.boundary_side_indices()] ==
            quads.edge_quad_indices.numpy()[quads.boundary_side_indices()][:, :1]).all()
    hexes = P.make_hexmesh(res=(2, 2, 2), scrambled=True)
    assert hexes.name == "Hexmesh_general" and hexes.reference_side() == Element.SQUARE
    assert P.make_hexmesh(sheared=True).name == "Hexmesh_parallelepiped"
    assert hexes.face_vertex_indices.numpy().shape == (hexes.side_count(), 4)
    assert hexes.hex_edge_indices.numpy().max() == hexes.edge_count() - 1
    # each face's vertices go round it from its smallest vertex index
    faces = hexes.face_vertex_indices.numpy()
    assert (faces[:, 0] == faces.min(axis=1)).all()


def test_mesh_generators():
    quads = fem.utils.grid_to_quads(2, 3)
    pos = C.grid_points((2, 3))
    corners = pos[quads]
    area = 0.5 * np.sum(corners[:, :, 0] * np.roll(corners[:, :, 1], -1, axis=1)
                        - np.roll(corners[:, :, 0], -1, axis=1) * corners[:, :, 1], axis=1)
    assert (area > 0).all()  # counter-clockwise
    hexes = fem.utils.grid_to_hexes(2, 1, 1)
    corners = C.grid_points((2, 1, 1))[hexes]
    np.testing.assert_allclose(corners - corners[:, :1], np.broadcast_to(
        [[0, 0, 0], [0.5, 0, 0], [0.5, 1, 0], [0, 1, 0], [0, 0, 1], [0.5, 0, 1], [0.5, 1, 1],
         [0, 1, 1]], corners.shape))


# ---- errors -----------------------------------------------------------------------------------


def test_bad_meshes_raise():
    with pytest.raises(ValueError, match="Vertex index"):
        fem.Quadmesh2D(kc.array(np.array([[0, 1, 2, 7]]), dtype=int),
                       kc.array(np.zeros((4, 2)), dtype=kc.vec2))
    with pytest.raises(TypeError, match="vec3"):
        fem.Hexmesh(kc.array(np.arange(8)[None], dtype=int),
                    kc.array(np.zeros((8, 2)), dtype=kc.vec2))
    with pytest.raises(ValueError, match="closed polynomial family"):
        fem.make_polynomial_space(P.make_quadmesh(), degree=2,
                                  family=fem.Polynomial.GAUSS_LEGENDRE)
    with pytest.raises(NotImplementedError, match="degree 2 or 3"):
        fem.make_polynomial_space(P.make_hexmesh(), degree=4,
                                  element_basis=fem.ElementBasis.SERENDIPITY)
