"""Programs for tests/test_fem_pic_gimp.py: a GIMP-style `fem.PicQuadrature` (particles
overlapping several cells, given as 2-d arrays of cells, coordinates and fractions) on a
trimesh, its bins, weights, integrals and interpolation, written against Warp's `warp.fem`
API (the test runs a copy whose imports say `warp` in a Warp subprocess and compares what
both return).
"""

import numpy as np

import kernelc as wp
import kernelc.fem as fem
from tests.fem_harness import block_csr


@fem.integrand
def position_poly(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return 1.0 + x[0] + 2.0 * x[1] * x[1]


@fem.integrand
def particle_source(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    return (1.0 + domain(s)[0]) * v(s)


@fem.integrand
def particle_mass(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


@fem.integrand
def particle_value(s: fem.Sample, domain: fem.Domain, f: fem.Field):
    return f(s) + domain(s)[1]


@fem.integrand
def particle_record(s: fem.Sample, weights: wp.array(dtype=float),
                    elements: wp.array(dtype=int)):
    # every (particle, cell) overlap adds its weight and its cell
    wp.atomic_add(weights, s.qp_index, s.qp_weight)
    wp.atomic_add(elements, s.qp_index, s.element_index + 1)


def make_mesh(res=(3, 2)):
    """A trimesh of [0, 1] x [0, 0.75] with moved vertices (cells of different areas)."""
    axes = [np.linspace(0.0, 1.0, res[0] + 1), np.linspace(0.0, 0.75, res[1] + 1)]
    pos = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 2)
    pos[:, 0] += 0.05 * np.sin(7.0 * pos[:, 1]) * pos[:, 0] * (1.0 - pos[:, 0])
    pos[:, 1] += 0.04 * np.cos(5.0 * pos[:, 0]) * pos[:, 1] * (0.75 - pos[:, 1])
    tris = wp.array(fem.utils.grid_to_tris(*res), dtype=int)
    return fem.Trimesh2D(tris, wp.array(pos.astype(np.float32), dtype=wp.vec2))


def gimp_particles(cell_count: int, count: int, per_particle: int, seed: int) -> tuple:
    """Random (cells, barycentric coordinates, fractions, measures) of `count` particles,
    each in `per_particle` cells, about one entry in five left out (cell -1)."""
    rng = np.random.default_rng(seed)
    cells = rng.integers(0, cell_count, size=(count, per_particle))
    cells[rng.uniform(size=cells.shape) < 0.2] = -1
    coords = np.zeros((count, per_particle, 3))
    coords[...] = rng.dirichlet(np.ones(3), size=(count, per_particle))
    fractions = rng.uniform(0.1, 1.0, size=cells.shape)
    measures = rng.uniform(0.005, 0.02, size=count)
    return cells, coords, fractions, measures


def _arrays(cells, coords, fractions) -> tuple:
    return (wp.array(cells.astype(np.int32), dtype=int),
            wp.array(coords.astype(np.float32), dtype=wp.vec3),
            wp.array(fractions.astype(np.float32), dtype=float))


def gimp_mesh() -> dict:
    out = {}
    mesh = make_mesh()
    cells, coords, fractions, measures = gimp_particles(mesh.cell_count(), 14, 3, 7)
    domain = fem.Cells(mesh)
    pic = fem.PicQuadrature(domain, _arrays(cells, coords, fractions),
                            measures=wp.array(measures.astype(np.float32), dtype=float))
    used = int(pic.cell_particle_offsets.numpy()[-1])
    out["counts"] = np.array([pic.total_point_count(), pic.max_points_per_element()])
    out["offsets"] = pic.cell_particle_offsets.numpy()
    out["indices"] = pic.cell_particle_indices.numpy()[:used]
    out["weights"] = pic._cell_particle_fraction.numpy()[:used]
    out["coords"] = pic._cell_particle_coords.numpy()[:used]
    out["total"] = np.array([fem.integrate(position_poly, quadrature=pic)])

    space = fem.make_polynomial_space(mesh, degree=1)
    v = fem.make_test(space, domain=domain)
    out["rhs"] = fem.integrate(particle_source, quadrature=pic, fields={"v": v}).numpy()
    u = fem.make_trial(space, domain=domain)
    mass = fem.integrate(particle_mass, quadrature=pic, fields={"u": u, "v": v})
    out.update({f"mass.{k}": a for k, a in block_csr(mass).items()})

    f = space.make_field()
    nodal = np.random.default_rng(8).uniform(-1.0, 1.0, size=space.node_count())
    f.dof_values = wp.array(nodal.astype(np.float32), dtype=float)
    values = wp.zeros(pic.total_point_count(), dtype=float)
    fem.interpolate(particle_value, dest=values, at=pic, fields={"f": f})
    out["interpolated"] = values.numpy()
    weights = wp.zeros(pic.total_point_count(), dtype=float)
    elements = wp.zeros(pic.total_point_count(), dtype=int)
    fem.interpolate(particle_record, at=pic, values={"weights": weights, "elements": elements})
    out["record.weights"], out["record.elements"] = weights.numpy(), elements.numpy()

    # without measures: each cell's points share it, times their fractions
    shared = fem.PicQuadrature(domain, _arrays(cells, coords, fractions))
    out["shared.weights"] = shared._cell_particle_fraction.numpy()[:used]
    out["shared.total"] = np.array([fem.integrate(position_poly, quadrature=shared)])
    return out
