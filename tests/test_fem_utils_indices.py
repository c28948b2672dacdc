"""`fem.utils`' index helpers (`validate_indices_in_range`, `compress_node_indices`,
`host_read_at_index`), meshes' checks of their vertex indices, and small geometry queries
Warp programs use (`Grid3D.edge_count`, `supports_cell_lookup`, `build_bvh`)."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem


def test_validate_indices_in_range():
    fem.utils.validate_indices_in_range(4, kc.array([0, 3, 2, 1], dtype=int), "Node")
    fem.utils.validate_indices_in_range(4, kc.zeros(0, dtype=int), "Node")
    with pytest.raises(ValueError, match=r"Particle index 3 at flattened array index 2 is out "
                                         r"of bounds; expected a value in \[0, 3\)"):
        fem.utils.validate_indices_in_range(3, kc.array([0, 2, 3, -1], dtype=int), "Particle")
    rows = kc.array(np.array([[0, 1], [5, -2]], dtype=np.int32), dtype=int)
    with pytest.raises(ValueError, match="Cell index 5 at flattened array index 2"):
        fem.utils.validate_indices_in_range(4, rows, "Cell")
    assert fem.utils.host_read_at_index(kc.array([4, 5, 6], dtype=int)) == 6
    assert fem.utils.host_read_at_index(kc.array([4, 5, 6], dtype=int), 1) == 5


@pytest.mark.parametrize("per_element", [1, 3])
def test_compress_node_indices_matches_numpy(per_element):
    rng = np.random.default_rng(per_element)
    node_count = 17
    shape = (60,) if per_element == 1 else (20, per_element)
    nodes = rng.integers(-3, node_count + 3, size=shape).astype(np.int32)
    offsets, entries, unique_count, unique = fem.utils.compress_node_indices(
        node_count, kc.array(nodes, dtype=int), return_unique_nodes=True)
    flat = nodes.reshape(-1)
    valid = (flat >= 0) & (flat < node_count)
    counts = np.bincount(flat[valid], minlength=node_count)
    np.testing.assert_array_equal(offsets.numpy(), np.concatenate([[0], np.cumsum(counts)]))
    got = entries.numpy()[:valid.sum()]
    for n in range(node_count):  # node n's entries: its array (element) indices, in order
        want = np.flatnonzero(flat == n) // per_element
        np.testing.assert_array_equal(got[offsets.numpy()[n]:offsets.numpy()[n + 1]], want)
    present = np.flatnonzero(counts)
    assert unique_count.numpy()[0] == len(present)
    np.testing.assert_array_equal(unique.numpy()[:len(present)], present)
    assert np.all(unique.numpy()[len(present):] == fem.NULL_NODE_INDEX)


def test_compress_node_indices_writes_into_given_arrays():
    backing = kc.full(12, -99, dtype=int)
    offsets = backing[:4]
    got, _ = fem.utils.compress_node_indices(3, kc.array([0, 1, 2, 3, 4, 5, -1], dtype=int),
                                             node_offsets=offsets)
    np.testing.assert_array_equal(offsets.numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(backing.numpy()[4:], np.full(8, -99))
    assert got.ptr == offsets.ptr


@pytest.mark.parametrize("mesh,arg,vec,count", [
    (fem.Trimesh2D, "tri_vertex_indices", kc.vec2, 3),
    (fem.Quadmesh2D, "quad_vertex_indices", kc.vec2, 4),
    (fem.Tetmesh, "tet_vertex_indices", kc.vec3, 4),
    (fem.Hexmesh, "hex_vertex_indices", kc.vec3, 8)])
def test_meshes_name_their_first_bad_vertex_index(mesh, arg, vec, count):
    positions = kc.zeros(count, dtype=vec)
    for bad in (-1, count, fem.NULL_NODE_INDEX):
        indices = list(range(count))
        indices[count - 1] = bad
        with pytest.raises(ValueError, match=rf"Vertex index {bad} at flattened array index "
                                             rf"{count - 1} is out of bounds; expected a value in "
                                             rf"\[0, {count}\)"):
            mesh(**{arg: kc.array([indices], dtype=int), "positions": positions})


def test_grid_edges_and_lookup_support():
    geo = fem.Grid3D(res=kc.vec3i(3, 2, 4))
    # edges along x, y, z: cells along the axis times vertex lines across it
    assert geo.edge_count() == 3 * 3 * 5 + 2 * 4 * 5 + 4 * 4 * 3
    mesh = fem.Trimesh2D(tri_vertex_indices=kc.array([[0, 1, 2]], dtype=int),
                         positions=kc.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=kc.vec2))
    for g in (geo, mesh):
        g.build_bvh()
        g.update_bvh("cpu")
        assert g.supports_cell_lookup("cpu")
