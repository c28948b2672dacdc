"""Programs on sparse grids of several environments, run by kernelc in the tests and by Warp
in a subprocess (`tests/test_fem_environments.py` matches their results).

Each returns a flat dict of NumPy arrays: the packed grid, the node numbering of a few
spaces, an environment-first partition, particles binned in their environments, and
lookups made inside integrands.
"""

import numpy as np

import kernelc as wp
import kernelc.fem as fem
from tests.fem_harness import flat


@fem.integrand
def _lookups(s: fem.Sample, domain: fem.Domain, cell_env: wp.array(dtype=int),
             cells: wp.array(dtype=int), envs: wp.array(dtype=int),
             guessed: wp.array(dtype=int), filtered: wp.array(dtype=int)):
    env = fem.environment_index(domain, s)
    pos = domain(s)
    envs[s.qp_index] = env
    cells[s.qp_index] = fem.lookup(domain, pos, env).element_index
    guessed[s.qp_index] = fem.lookup(domain, pos, s).element_index
    far = pos + wp.vec3(2.5, 0.0, 0.0)
    filtered[s.qp_index] = fem.lookup(domain, far, 4.0, cell_env, env, env).element_index


@fem.integrand
def _side_cells(s: fem.Sample, domain: fem.Domain, envs: wp.array(dtype=int),
                inner: wp.array(dtype=int), outer: wp.array(dtype=int)):
    envs[s.qp_index] = fem.environment_index(domain, s)
    inner[s.qp_index] = fem.to_inner_cell(domain, s).element_index
    outer[s.qp_index] = fem.to_outer_cell(domain, s).element_index


def _points(geo, quadrature, integrand, names, values=None):
    count = quadrature.total_point_count()
    arrays = {name: wp.full(count, -7, dtype=int) for name in names}
    fem.interpolate(integrand, at=quadrature, values={**arrays, **(values or {})})
    return {name: a.numpy() for name, a in arrays.items()}


def _geometry_results(name: str, geo, out: dict) -> None:
    flat(name, {"counts": [geo.cell_count(), geo.vertex_count(), geo.side_count(),
                           geo.boundary_side_count(), geo.environment_count()],
                "env_offsets": geo.env_offsets.numpy(), "cell_env": geo.cell_env.numpy(),
                "voxels": geo.cell_grid.get_voxels().numpy()}, out)
    cells = fem.RegularQuadrature(fem.Cells(geo), order=1)
    flat(f"{name}.lookup", _points(geo, cells, _lookups,
                                   ("cells", "envs", "guessed", "filtered"),
                                   {"cell_env": geo.cell_env}), out)
    sides = fem.RegularQuadrature(fem.Sides(geo), order=1)
    flat(f"{name}.sides", _points(geo, sides, _side_cells, ("envs", "inner", "outer")), out)
    for label, kwargs in (("q1", {"degree": 1}), ("q2", {"degree": 2}),
                          ("s2", {"degree": 2, "element_basis": fem.ElementBasis.SERENDIPITY})):
        space = fem.make_polynomial_space(geo, **kwargs)
        out[f"{name}.{label}.nodes"] = space.topology.element_node_indices().numpy()
    pressure = fem.make_polynomial_space(geo, degree=0, discontinuous=True)
    for label, capacity in (("all", -1), ("capped", pressure.node_count() - 1)):
        part = fem.make_space_partition(space_topology=pressure.topology,
                                        environment_first=True, max_node_count=capacity)
        flat(f"{name}.partition_{label}", {
            "count": [part.node_count()], "env_offsets": part.env_offsets.numpy(),
            "nodes": part.space_node_indices().numpy()[: part.node_count()]}, out)


def _particles(geo, env_count: int, out: dict, name: str) -> None:
    rng = np.random.default_rng(3)
    positions = rng.uniform(-0.4, 1.4, size=(40, 3)).astype(np.float32)
    envs = (np.arange(40) % env_count).astype(np.int32)
    pic = fem.PicQuadrature(fem.Cells(geo), positions=wp.array(positions, dtype=wp.vec3),
                            env_indices=wp.array(envs, dtype=int))
    flat(name, {"offsets": pic.cell_particle_offsets.numpy(),
                "particles": pic.cell_particle_indices.numpy(),
                "coords": pic._cell_particle_coords.numpy()}, out)


def nanogrid_results() -> dict:
    out = {}
    voxels = np.array([[i, j, k] for i in range(2) for j in range(2) for k in range(2)]
                      + [[0, 0, 0], [1, 0, 0], [1, 1, 0]], dtype=np.int32)
    envs = np.array([0] * 8 + [1, 1, 2], dtype=np.int32)
    geo = fem.Nanogrid.from_environment_voxels(
        wp.array(voxels, dtype=wp.vec3i), wp.array(envs, dtype=wp.int32), 3, voxel_size=0.5)
    _geometry_results("nanogrid", geo, out)
    _particles(geo, 3, out, "nanogrid.pic")
    world = fem.Nanogrid.from_environment_voxels(
        wp.array(voxels.astype(np.float32) * 0.25 + 0.1, dtype=wp.vec3),
        wp.array(envs, dtype=wp.int32), 3, voxel_size=0.25, guard_cells=2)
    flat("world", {"env_offsets": world.env_offsets.numpy(),
                   "voxels": world.cell_grid.get_voxels().numpy(),
                   "cell_env": world.cell_env.numpy()}, out)
    return out


def adaptive_results() -> dict:
    out = {}
    voxels = np.array([[0, 0, 0]] + [[i, j, k] for i in range(2) for j in range(2)
                                     for k in range(2)] + [[2, 0, 0]], dtype=np.int32)
    levels = np.array([1] + [0] * 8 + [1], dtype=np.uint8)
    envs = np.array([0] + [1] * 8 + [1], dtype=np.int32)
    geo = fem.AdaptiveNanogrid.from_environment_voxels(
        wp.array(voxels, dtype=wp.vec3i), wp.array(levels, dtype=wp.uint8),
        wp.array(envs, dtype=wp.int32), 2, level_count=2, voxel_size=0.5)
    _geometry_results("adaptive", geo, out)
    out["adaptive.levels"] = geo._cell_level.numpy()
    return out


@fem.integrand
def _mesh_lookups(s: fem.Sample, domain: fem.Domain, cells: wp.array(dtype=int),
                  envs: wp.array(dtype=int), other: wp.array(dtype=int)):
    env = fem.environment_index(domain, s)
    envs[s.qp_index] = env
    cells[s.qp_index] = fem.lookup(domain, domain(s), env).element_index
    other[s.qp_index] = fem.lookup(domain, domain(s), 1 - env).element_index


def _two_copies(kind: str):
    """Two copies of one cell, in environments 0 and 1 (Warp's test meshes)."""
    unit = {"tri": [[0, 0, 0], [1, 0, 0], [0, 1, 0]],
            "quad": [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]],
            "tet": [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]],
            "hex": [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                    [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]]}[kind]
    n = len(unit)
    positions = wp.array(np.array(unit * 2, dtype=np.float32), dtype=wp.vec3)
    cells = wp.array(np.arange(2 * n, dtype=np.int32).reshape(2, n), dtype=int)
    envs = wp.array([0, 1], dtype=wp.int32)
    if kind == "tri":
        return fem.Trimesh3D(cells, positions, build_bvh=True, cell_env=envs, env_count=2)
    if kind == "quad":
        return fem.Quadmesh3D(cells, positions, build_bvh=True, cell_env=envs, env_count=2)
    if kind == "tet":
        return fem.Tetmesh(cells, positions, build_bvh=True, cell_env=envs, env_count=2)
    return fem.Hexmesh(cells, positions, assume_parallelepiped_cells=True, build_bvh=True,
                       cell_env=envs, env_count=2)


def mesh_results() -> dict:
    out = {}
    for kind in ("tri", "quad", "tet", "hex"):
        geo = _two_copies(kind)
        quadrature = fem.RegularQuadrature(fem.Cells(geo), order=2)
        flat(f"{kind}.lookup", _points(geo, quadrature, _mesh_lookups,
                                       ("cells", "envs", "other")), out)
        sides = fem.RegularQuadrature(fem.Sides(geo), order=1)
        flat(f"{kind}.sides", _points(geo, sides, _side_cells, ("envs", "inner", "outer")),
             out)
        pressure = fem.make_polynomial_space(geo, degree=1)
        part = fem.make_space_partition(space_topology=pressure.topology,
                                        environment_first=True)
        out[f"{kind}.partition"] = part.env_offsets.numpy()
        pic = fem.PicQuadrature(fem.Cells(geo),
                                positions=wp.array([[0.25, 0.25, 0.0]] * 2, dtype=wp.vec3),
                                env_indices=wp.array([1, 0], dtype=int))
        out[f"{kind}.pic"] = pic.cell_particle_indices.numpy()
    return out


@fem.integrand
def _grid_lookups(s: fem.Sample, domain: fem.Domain, env_count: int,
                  cells: wp.array(dtype=int), envs: wp.array(dtype=int),
                  other: wp.array(dtype=int), guessed: wp.array(dtype=int)):
    env = fem.environment_index(domain, s)
    envs[s.qp_index] = env
    cells[s.qp_index] = fem.lookup(domain, domain(s), env).element_index
    other[s.qp_index] = fem.lookup(domain, domain(s), 0.5, (env + 1) % env_count).element_index
    guessed[s.qp_index] = fem.lookup(domain, domain(s), s).element_index


def grid_results() -> dict:
    """Dense grids of several environments (Warp's `Grid2D(..., env_count=N)`)."""
    out = {}
    for name, geo in (("grid2d", fem.Grid2D(res=wp.vec2i(2, 3), env_count=3)),
                      ("grid3d", fem.Grid3D(res=wp.vec3i(2, 1, 2), env_count=2))):
        count = geo.environment_count()
        out[f"{name}.counts"] = np.array([geo.cell_count(), geo.vertex_count(),
                                          geo.side_count(), geo.boundary_side_count()])
        cells = fem.RegularQuadrature(fem.Cells(geo), order=1)
        flat(f"{name}.lookup", _points(geo, cells, _grid_lookups,
                                       ("cells", "envs", "other", "guessed"),
                                       {"env_count": count}), out)
        for label, domain in (("sides", fem.Sides(geo)), ("boundary", fem.BoundarySides(geo))):
            flat(f"{name}.{label}", _points(geo, fem.RegularQuadrature(domain, order=1),
                                            _side_cells, ("envs", "inner", "outer")), out)
        spaces = [("q1", {"degree": 1}), ("q2", {"degree": 2}),
                  ("p0", {"degree": 0, "discontinuous": True})]
        if geo.dimension == 2:
            spaces.append(("open", {"degree": 2, "family": fem.Polynomial.EQUISPACED_OPEN}))
        for label, kwargs in spaces:
            space = fem.make_polynomial_space(geo, **kwargs)
            out[f"{name}.{label}.nodes"] = space.topology.element_node_indices().numpy()
            if label == "q1":
                part = fem.make_space_partition(space_topology=space.topology,
                                                environment_first=True)
                out[f"{name}.partition.offsets"] = part.env_offsets.numpy()
                out[f"{name}.partition.nodes"] = part.space_node_indices().numpy()
        rng = np.random.default_rng(5)
        positions = rng.uniform(0.0, 1.0, size=(12, geo.dimension)).astype(np.float32)
        vec = wp.vec2 if geo.dimension == 2 else wp.vec3
        pic = fem.PicQuadrature(fem.Cells(geo), positions=wp.array(positions, dtype=vec),
                                env_indices=wp.array(np.arange(12) % count, dtype=int))
        out[f"{name}.pic.offsets"] = pic.cell_particle_offsets.numpy()
        out[f"{name}.pic.particles"] = pic.cell_particle_indices.numpy()
    return out
