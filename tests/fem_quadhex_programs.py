"""Finite-element programs on quadrilateral and hexahedral meshes (`Quadmesh2D`,
`Quadmesh3D`, `Hexmesh`) and sparse grids (`Nanogrid`) for tests/test_fem_quadhex.py, written against Warp's `warp.fem`
API.

This file runs as is with kernelc; the tests also run a copy whose imports say `warp`
instead of `kernelc` (in a Warp subprocess, where the forms imported from
`tests/fem_mesh_programs.py` come from that file's Warp copy) and compare what both return.
The meshes are grids whose vertices are then moved, so that no two cells are alike (and no
cell is a parallelogram, whose stiffness matrices have entries that cancel exactly).
"""

import numpy as np

import kernelc as wp
import kernelc.fem as fem
from tests.fem_harness import block_csr
from tests.fem_mesh_programs import (
    curl_div_form,
    edge_tangent_energy,
    flat_forms,
    grid_positions,
    interior_penalty_form,
    mass_form,
    normal_energy,
    one_form,
    scalar_forms,
    source_form,
    strain_form,
    tangent_projector_form,
    vector_expr,
)


@fem.integrand
def diffusion_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(fem.grad(u, s), fem.grad(v, s))


@fem.integrand
def lookup_coords_2d(s: fem.Sample, domain: fem.Domain, points: wp.array(dtype=wp.vec2),
                     cells: wp.array(dtype=int), coords: wp.array(dtype=wp.vec3)):
    # one point per cell of the quadrature, the first ones looking up a point each
    if s.qp_index < points.shape[0]:
        found = fem.lookup(domain, points[s.qp_index])
        cells[s.qp_index] = found.element_index
        coords[s.qp_index] = found.element_coords


@fem.integrand
def lookup_coords_3d(s: fem.Sample, domain: fem.Domain, points: wp.array(dtype=wp.vec3),
                     cells: wp.array(dtype=int), coords: wp.array(dtype=wp.vec3)):
    # one point per cell of the quadrature, the first ones looking up a point each
    if s.qp_index < points.shape[0]:
        found = fem.lookup(domain, points[s.qp_index])
        cells[s.qp_index] = found.element_index
        coords[s.qp_index] = found.element_coords


# The 24 rotations of the cube, as permutations of a hexahedron's vertices (vertex k at the
# corner HEX_CORNERS[k]: the bottom face counter-clockwise, then the top face).
_HEX_CORNERS = np.array([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0),
                         (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)])


def _cube_rotations() -> list:
    rotations = []
    for axes in ((0, 1, 2), (1, 2, 0), (2, 0, 1), (1, 0, 2), (0, 2, 1), (2, 1, 0)):
        for signs in np.ndindex(2, 2, 2):
            matrix = np.zeros((3, 3))
            matrix[np.arange(3), axes] = np.where(np.array(signs) == 1, -1.0, 1.0)
            if np.linalg.det(matrix) > 0.0:
                corners = (_HEX_CORNERS - 0.5) @ matrix.T + 0.5
                rotations.append([int(np.flatnonzero((_HEX_CORNERS == c).all(axis=1))[0])
                                  for c in corners])
    return rotations


def _scrambled(cells: np.ndarray, vertex_count: int) -> tuple:
    """`cells` with each cell's vertices listed from another corner (the same cell), and
    the vertices renumbered: (cells, new index of each old vertex)."""
    if cells.shape[1] == 4:
        turns = [np.roll(np.arange(4), -k) for k in range(4)]
    else:
        turns = [np.array(r) for r in _cube_rotations()]
    cells = np.stack([cell[turns[(5 * i + 2) % len(turns)]] for i, cell in enumerate(cells)])
    renumber = np.random.default_rng(7).permutation(vertex_count)
    return renumber[cells], renumber


def make_quadmesh(res=(4, 3), dim: int = 2, build_bvh: bool = False, scrambled: bool = False):
    """A quadmesh of [0, 1] x [0, 0.75], its vertices moved (and lifted to a surface in 3-d);
    `scrambled`: its cells listed from other vertices, its vertices renumbered."""
    pos = grid_positions(res, (0.0, 0.0), (1.0, 0.75))
    pos[:, 0] += 0.05 * np.sin(7.0 * pos[:, 1] + 1.0) * pos[:, 0] * (1.0 - pos[:, 0])
    pos[:, 1] += 0.04 * np.cos(5.0 * pos[:, 0] + 0.5) * pos[:, 1] * (0.75 - pos[:, 1])
    quads = fem.utils.grid_to_quads(*res)
    if scrambled:
        quads, renumber = _scrambled(quads, len(pos))
        pos[renumber] = pos.copy()
    quads = wp.array(quads, dtype=int)
    if dim == 3:
        z = 0.2 * np.cos(3.0 * pos[:, 0]) * np.sin(4.0 * pos[:, 1])
        return fem.Quadmesh3D(quads, wp.array(np.hstack([pos, z[:, None]]), dtype=wp.vec3))
    return fem.Quadmesh2D(quads, wp.array(pos, dtype=wp.vec2), build_bvh=build_bvh)


def make_hexmesh(res=(2, 2, 1), build_bvh: bool = False, sheared: bool = False,
                 scrambled: bool = False):
    """A hexmesh of [0, 1] x [0, 1] x [0, 0.5], its vertices moved (or, `sheared`, mapped by
    one linear map, so that every cell is a parallelepiped); `scrambled`: its cells listed
    from other vertices (turned), its vertices renumbered."""
    pos = grid_positions(res, (0.0, 0.0, 0.0), (1.0, 1.0, 0.5))
    if sheared:
        pos = pos @ np.array([[1.0, 0.2, 0.1], [0.3, 1.1, 0.0], [0.0, 0.25, 0.9]])
    else:
        pos += 0.04 * np.sin(5.0 * pos[:, [1, 2, 0]] + 0.3) * np.cos(3.0 * pos)
    hexes = fem.utils.grid_to_hexes(*res)
    if scrambled:
        hexes, renumber = _scrambled(hexes, len(pos))
        pos[renumber] = pos.copy()
    return fem.Hexmesh(wp.array(hexes, dtype=int), wp.array(pos, dtype=wp.vec3),
                       assume_parallelepiped_cells=sheared, build_bvh=build_bvh)


def _stiffness(geo, **space_args) -> dict:
    space = fem.make_polynomial_space(geo, **space_args)
    cells = fem.Cells(geo)
    u, v = fem.make_trial(space, domain=cells), fem.make_test(space, domain=cells)
    return {"stiffness": block_csr(fem.integrate(diffusion_form, fields={"u": u, "v": v},
                                                 assembly="generic")),
            "mass": block_csr(fem.integrate(mass_form, fields={"u": u, "v": v},
                                            assembly="generic")),
            "rhs": fem.integrate(source_form, fields={"v": v}).numpy(),
            "node_positions": space.node_positions().numpy()}


def _side_forms(geo, space, out: dict) -> None:
    """DG interior-penalty and trace forms of `space` on every side of `geo`."""
    sides = fem.Sides(geo)
    out["dg_jumps"] = block_csr(fem.integrate(
        interior_penalty_form, fields={"u": fem.make_trial(space, domain=sides),
                                       "v": fem.make_test(space, domain=sides)},
        assembly="generic"))
    out["dg_positions"] = space.node_positions().numpy()


def _lookups(geo, points: np.ndarray, form, vec) -> dict:
    """The cell and coordinates `fem.lookup` finds for each of `points`."""
    n = len(points)
    cells, coords = wp.zeros(n, dtype=int), wp.zeros(n, dtype=wp.vec3)
    fem.interpolate(form, at=fem.RegularQuadrature(fem.Cells(geo), order=0),
                    values={"points": wp.array(points, dtype=vec), "cells": cells,
                            "coords": coords})
    return {"lookup_cells": cells.numpy(), "lookup_coords": coords.numpy()}


def quadmesh_2d() -> dict:
    geo = make_quadmesh(build_bvh=True)
    out = {"sizes": np.array([geo.cell_count(), geo.side_count(), geo.boundary_side_count(),
                              geo.vertex_count()]),
           "edges": geo.edge_vertex_indices.numpy(),
           "edge_quads": geo.edge_quad_indices.numpy(),
           "area": fem.integrate(one_form, domain=fem.Cells(geo)),
           "perimeter": fem.integrate(one_form, domain=fem.BoundarySides(geo)),
           "tangents": fem.integrate(edge_tangent_energy, domain=fem.Sides(geo))}
    for degree in (1, 2, 3):
        flat_forms(f"q{degree}", scalar_forms(geo, degree, {}), out)
    for degree in (2, 3):
        flat_forms(f"s{degree}", _stiffness(
            geo, degree=degree, element_basis=fem.ElementBasis.SERENDIPITY), out)
    vspace = fem.make_polynomial_space(geo, degree=2, dtype=wp.vec2)
    cells = fem.Cells(geo)
    out["strain"] = block_csr(fem.integrate(
        strain_form, fields={"u": fem.make_trial(vspace, domain=cells),
                             "v": fem.make_test(vspace, domain=cells)},
        assembly="generic"))
    vfield = vspace.make_field()
    fem.interpolate(vector_expr, dest=vfield)
    out["vector_interpolated"] = vfield.dof_values.numpy()
    _side_forms(geo, fem.make_polynomial_space(geo, degree=1, discontinuous=True), out)
    points = np.array([[0.13, 0.11], [0.52, 0.4], [0.9, 0.7], [0.31, 0.62], [0.77, 0.2]])
    out.update(_lookups(geo, points, lookup_coords_2d, wp.vec2))
    return out


def quadmesh_3d() -> dict:
    geo = make_quadmesh(dim=3)
    out = {"area": fem.integrate(one_form, domain=fem.Cells(geo)),
           "normals": fem.integrate(normal_energy, domain=fem.Cells(geo)),
           "edges": geo.edge_vertex_indices.numpy()}
    out.update(_stiffness(geo, degree=2))
    space = fem.make_polynomial_space(geo, degree=2)
    boundary = fem.BoundarySides(geo)
    out["tangent_projector"] = block_csr(fem.integrate(
        tangent_projector_form, fields={"u": fem.make_trial(space, domain=boundary),
                                        "v": fem.make_test(space, domain=boundary)},
        assembly="nodal"))
    return out


def hexmesh() -> dict:
    geo = make_hexmesh(build_bvh=True)
    out = {"sizes": np.array([geo.cell_count(), geo.side_count(), geo.boundary_side_count(),
                              geo.vertex_count(), geo.edge_count()]),
           "faces": geo.face_vertex_indices.numpy(), "face_hexes": geo.face_hex_indices.numpy(),
           "hex_edges": geo.hex_edge_indices.numpy(),
           "volume": fem.integrate(one_form, domain=fem.Cells(geo)),
           "surface": fem.integrate(one_form, domain=fem.BoundarySides(geo))}
    for degree in (1, 2):
        flat_forms(f"q{degree}", scalar_forms(geo, degree, {}), out)
    flat_forms("q3", _stiffness(geo, degree=3), out)
    for degree in (2, 3):
        flat_forms(f"s{degree}", _stiffness(
            geo, degree=degree, element_basis=fem.ElementBasis.SERENDIPITY), out)
    vspace = fem.make_polynomial_space(geo, degree=1, dtype=wp.vec3)
    cells = fem.Cells(geo)
    out["curl_div"] = block_csr(fem.integrate(
        curl_div_form, fields={"u": fem.make_trial(vspace, domain=cells),
                               "v": fem.make_test(vspace, domain=cells)},
        assembly="generic"))
    _side_forms(geo, fem.make_polynomial_space(geo, degree=1, discontinuous=True), out)
    points = np.array([[0.13, 0.11, 0.2], [0.52, 0.4, 0.31], [0.9, 0.7, 0.45],
                       [0.31, 0.62, 0.1]])
    out.update(_lookups(geo, points, lookup_coords_3d, wp.vec3))
    return out


def hexmesh_parallelepiped() -> dict:
    geo = make_hexmesh(sheared=True)
    out = {"volume": fem.integrate(one_form, domain=fem.Cells(geo))}
    flat_forms("q2", scalar_forms(geo, 2, {}), out)
    return out


def scrambled() -> dict:
    """Cells listed from other vertices, vertices renumbered: shared edge and face nodes
    are numbered from the edges' and faces' own frames, whatever the cells'."""
    out = {}
    quads = make_quadmesh(res=(3, 3), scrambled=True)
    out["quad_edges"] = quads.edge_vertex_indices.numpy()
    flat_forms("q3", scalar_forms(quads, 3, {}), out)
    flat_forms("s3", _stiffness(quads, degree=3, element_basis=fem.ElementBasis.SERENDIPITY),
               out)
    hexes = make_hexmesh(res=(2, 2, 2), scrambled=True)
    out["hex_faces"] = hexes.face_vertex_indices.numpy()
    out["hex_face_hexes"] = hexes.face_hex_indices.numpy()
    flat_forms("hq2", scalar_forms(hexes, 2, {}), out)
    flat_forms("hq3", _stiffness(hexes, degree=3), out)
    flat_forms("hs3", _stiffness(hexes, degree=3, element_basis=fem.ElementBasis.SERENDIPITY),
               out)
    return out


def make_nanogrid(scalar_type=wp.float32):
    """A sparse grid: a 3 x 2 x 2 block, a row of voxels leaving it through negative
    coordinates, lone voxels (one touching the block by an edge only) and a voxel far away
    in another leaf; anisotropic voxels, translated."""
    block = np.stack(np.meshgrid(np.arange(3), np.arange(2), np.arange(2), indexing="ij"),
                     axis=-1).reshape(-1, 3)
    row = np.array([[-1, 0, 0], [-2, 0, 0], [-3, 0, 0], [-3, 1, 0]])
    lone = np.array([[3, 2, 0], [5, 5, 5], [17, -9, 4]])
    voxels = np.concatenate([block, row, lone]).astype(np.int32)
    volume = wp.Volume.allocate_by_voxels(wp.array(voxels, dtype=wp.vec3i),
                                          voxel_size=(0.5, 0.25, 0.4),
                                          translation=(0.1, -0.2, 0.3))
    return fem.Nanogrid(volume, scalar_type=scalar_type)


def nanogrid() -> dict:
    """Three forms only (Warp's compiles of sparse-grid kernels are slow): Q2 has nodes on
    vertices, edges, faces and interiors, so its stiffness checks the whole numbering; the
    DG form checks the sides; then lookups inside and just outside the cells."""
    geo = make_nanogrid()
    out = {"sizes": np.array([geo.cell_count(), geo.side_count(), geo.boundary_side_count(),
                              geo.vertex_count(), geo.edge_count()]),
           "cell_voxels": geo.cell_grid.get_voxels().numpy(),
           "vertex_voxels": geo.vertex_grid.get_voxels().numpy(),
           "face_voxels": geo.face_grid.get_voxels().numpy(),
           "edge_voxels": geo.edge_grid.get_voxels().numpy()}
    space = fem.make_polynomial_space(geo, degree=2)
    out["q2_stiffness"] = block_csr(fem.integrate(
        diffusion_form, fields={"u": fem.make_trial(space), "v": fem.make_test(space)},
        assembly="generic"))
    out["q2_node_positions"] = space.node_positions().numpy()
    _side_forms(geo, fem.make_polynomial_space(geo, degree=1, discontinuous=True), out)
    # inside cells, within half a voxel of one (outside the grid), and far from every cell
    points = np.array([[0.6, 0.1, 0.5], [0.02, -0.3, 0.45], [-1.05, -0.15, 0.2],
                       [1.55, 0.48, 0.36], [1.9, 0.45, 0.6], [-5.0, 3.0, 1.0],
                       [8.6, -2.45, 1.9]])
    out.update(_lookups(geo, points, lookup_coords_3d, wp.vec3))
    return out


def run_all() -> dict:
    """Every program, keys prefixed "quad2d.", "quad3d.", "hex.", "hexpp.", "scrambled." and
    "nano."."""
    parts = {}
    for name, program in (("quad2d", quadmesh_2d), ("quad3d", quadmesh_3d), ("hex", hexmesh),
                          ("hexpp", hexmesh_parallelepiped), ("scrambled", scrambled),
                          ("nano", nanogrid)):
        found = {}
        flat_forms(name, program(), found)
        parts.update(found)
    return parts


__all__ = ["make_hexmesh", "make_nanogrid", "make_quadmesh", "run_all"]
