"""`kc.utils` graph coloring: graph_coloring_assign, graph_coloring_balance and
graph_coloring_get_groups.

Colorings are checked for validity (no edge inside a color, colors 0..count-1 all used)
on lattices with bending edges and random graphs, with self-loops and repeated edges; the
balancing's documented steps on small graphs whose result is known by hand; the groups
against NumPy; and the errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from kernelc import utils
from tests.conftest import poisoned

ALGORITHMS = [utils.GraphColoringAlgorithm.MCS, utils.GraphColoringAlgorithm.GREEDY]


def lattice_edges(n: int) -> np.ndarray:
    """An n x n triangle lattice with both diagonals and 2-apart (bending) neighbours."""
    idx = np.arange(n * n).reshape(n, n)
    pairs = [(idx[:, :-1], idx[:, 1:]), (idx[:-1], idx[1:]), (idx[:-1, :-1], idx[1:, 1:]),
             (idx[:-1, 1:], idx[1:, :-1]), (idx[:, :-2], idx[:, 2:]), (idx[:-2], idx[2:])]
    return np.concatenate([np.stack([a.ravel(), b.ravel()], 1) for a, b in pairs]).astype(
        np.int32)


def random_edges(rng, nodes: int, count: int) -> np.ndarray:
    edges = rng.integers(0, nodes, (count, 2)).astype(np.int32)
    edges[:5] = edges[5:10]  # repeated edges
    edges[10] = (3, 3)  # a self-loop
    return edges


def assert_valid(edges: np.ndarray, colors: np.ndarray, count: int) -> None:
    distinct = edges[:, 0] != edges[:, 1]
    assert not (colors[edges[distinct, 0]] == colors[edges[distinct, 1]]).any()
    assert colors.min() == 0 and colors.max() == count - 1
    assert len(np.unique(colors)) == count


def color(edges: np.ndarray, nodes: int, algorithm) -> tuple[np.ndarray, int]:
    colors = poisoned(nodes, np.int32)
    count = utils.graph_coloring_assign(kc.array(edges, dtype=kc.int32), colors, algorithm)
    assert isinstance(count, int)
    return colors.numpy().copy(), count


@pytest.mark.parametrize("algorithm", ALGORITHMS, ids=lambda a: a.name)
def test_assign_gives_valid_colorings(rng, algorithm):
    edges = lattice_edges(60)
    colors, count = color(edges, 3600, algorithm)
    assert_valid(edges, colors, count)
    assert count <= 9  # at most the largest degree + 1 (12 + 1), far fewer in practice
    for nodes, n_edges in ((50, 120), (2000, 9000), (30_000, 100_000)):
        edges = random_edges(rng, nodes, n_edges)
        colors, count = color(edges, nodes, algorithm)
        assert_valid(edges, colors, count)
        degree = np.bincount(edges.ravel(), minlength=nodes)
        assert count <= degree.max() + 1


def test_assign_small_graphs():
    triangle = np.array([[0, 1], [1, 2], [2, 0]], np.int32)
    square = np.array([[0, 1], [1, 2], [2, 3], [3, 0]], np.int32)
    for algorithm in ALGORITHMS:
        assert color(triangle, 3, algorithm)[1] == 3
        assert color(square, 4, algorithm)[1] == 2
        colors, count = color(np.zeros((0, 2), np.int32), 5, algorithm)  # no edges
        assert count == 1 and colors.tolist() == [0] * 5
        colors, count = color(np.array([[0, 1]], np.int32), 3, algorithm)  # a lone node
        assert count == 2 and colors[0] != colors[1]
    # MCS colors a long path (and any chordal graph) with the fewest colors.
    path = np.stack([np.arange(999), np.arange(1, 1000)], 1).astype(np.int32)
    assert color(path[::-1].copy(), 1000, utils.GraphColoringAlgorithm.MCS)[1] == 2


def test_mcs_uses_no_more_colors_than_greedy_on_a_lattice():
    edges = lattice_edges(100)
    mcs = color(edges, 10_000, utils.GraphColoringAlgorithm.MCS)[1]
    greedy = color(edges, 10_000, utils.GraphColoringAlgorithm.GREEDY)[1]
    assert mcs <= greedy


def test_assign_errors():
    colors = kc.zeros(2, dtype=kc.int32)
    edges = kc.array([[0, 1]], dtype=kc.int32)
    for bad in ((-1, 0), (0, -1), (2, 0), (0, 2)):
        with pytest.raises(RuntimeError) as info:
            utils.graph_coloring_assign(kc.array([bad], dtype=kc.int32), colors)
        assert str(info.value) == (f"Graph coloring failed: Graph edge 0 has endpoints {bad}, "
                                   f"but valid node indices are in the range [0, 2).")
    with pytest.raises(RuntimeError, match="edges array must have dtype int32, got int64"):
        utils.graph_coloring_assign(kc.array([[0, 1]], dtype=kc.int64), colors)
    with pytest.raises(RuntimeError, match="node_colors array must have dtype int32"):
        utils.graph_coloring_assign(edges, kc.zeros(2, dtype=kc.float32))
    with pytest.raises(RuntimeError, match="edges array must be 2-dimensional, got 1"):
        utils.graph_coloring_assign(kc.zeros(4, dtype=kc.int32), colors)
    with pytest.raises(RuntimeError, match=r"shape \(edge_count, 2\), got shape \(2, 3\)"):
        utils.graph_coloring_assign(kc.zeros((2, 3), dtype=kc.int32), colors)
    with pytest.raises(RuntimeError, match="node_colors array must be 1-dimensional"):
        utils.graph_coloring_assign(edges, kc.zeros((2, 1), dtype=kc.int32))
    with pytest.raises(RuntimeError, match="Cannot color an empty graph"):
        utils.graph_coloring_assign(kc.zeros((0, 2), dtype=kc.int32), kc.zeros(0, dtype=kc.int32))
    with pytest.raises(ValueError):
        utils.graph_coloring_assign(edges, colors, algorithm=7)


# ---- graph_coloring_balance ------------------------------------------------------------------


def balance(edges, colors, color_count, target, **kwargs) -> tuple[list, float]:
    node_colors = kc.array(np.array(colors, np.int32), dtype=kc.int32)
    edge_array = kc.array(np.array(edges, np.int32).reshape(-1, 2), dtype=kc.int32)
    ratio = utils.graph_coloring_balance(edge_array, node_colors, color_count, target, **kwargs)
    assert isinstance(ratio, float)
    return node_colors.numpy().tolist(), ratio


# Groups {0}, {1, 2, 3, 4}, {5, 6}: only node 5 can move to group 0; then node 2 to group 2.
_STAR = [(0, 1), (0, 2), (0, 3), (0, 4), (0, 6), (1, 6), (2, 5), (4, 6)]


def test_balance_steps():
    assert balance(_STAR, [0, 1, 1, 1, 1, 2, 2], 3, 1.1, max_iterations=2) == \
        ([0, 1, 2, 1, 1, 0, 2], 1.5)  # group sizes 2, 3, 2: they differ by at most 2
    with pytest.warns(UserWarning, match=r"reached the 0-iteration limit \(achieved ratio 4, "
                                         r"target 1.1\)"):
        assert balance(_STAR, [0, 1, 1, 1, 1, 2, 2], 3, 1.1, max_iterations=0) == \
            ([0, 1, 1, 1, 1, 2, 2], 4.0)
    with pytest.warns(UserWarning, match="1-iteration limit"):
        assert balance(_STAR, [0, 1, 1, 1, 1, 2, 2], 3, 1.1, max_iterations=1)[0] == \
            [0, 1, 1, 1, 1, 0, 2]
    # The target reached by the last permitted move: no warning.
    assert balance([], [0, 0, 0, 0, 0, 1], 2, 2.0, max_iterations=1) == \
        ([1, 0, 0, 0, 0, 1], 2.0)
    # No node can move after the first move: no warning either.
    star = [(1, 5), (2, 5), (3, 5), (4, 5), (5, 6)]
    assert balance(star, [1, 1, 1, 1, 1, 0, 1], 2, 1.01, max_iterations=1) == \
        ([0, 1, 1, 1, 1, 0, 1], 2.5)
    assert balance([], [0, 0, 0, 0, 1], 2, 4.0, max_iterations=1) == ([0, 0, 0, 0, 1], 4.0)


def test_balance_undoes_a_move_that_makes_it_worse():
    # Group 0 = {2} cannot take a node of group 1; moving node 4 (group 2) there empties
    # group 2 (ratio 4 -> inf), so that move is undone.
    edges = [(0, 2), (1, 2), (1, 4), (2, 3), (2, 5), (3, 4), (4, 5)]
    assert balance(edges, [1, 1, 0, 1, 2, 1], 3, 1.1) == ([1, 1, 0, 1, 2, 1], 4.0)


def test_balance_ends_when_moves_cycle():
    edges = [(0, 5), (1, 5), (2, 5), (4, 5), (0, 6), (1, 6), (2, 6), (4, 6), (5, 6)]
    with pytest.warns(UserWarning, match="7-iteration limit"):  # node 3 moves back and forth
        colors, ratio = balance(edges, [0, 0, 0, 1, 0, 2, 1], 3, 1.1)
    assert sorted(np.bincount(colors, minlength=3).tolist()) == [1, 2, 4] and ratio == 4.0


@pytest.mark.parametrize("algorithm", ALGORITHMS, ids=lambda a: a.name)
def test_balance_keeps_colorings_valid(rng, algorithm):
    for edges, nodes in ((lattice_edges(50), 2500), (random_edges(rng, 3000, 6000), 3000)):
        colors, count = color(edges, nodes, algorithm)
        before = np.bincount(colors)
        node_colors = kc.array(colors)
        ratio = utils.graph_coloring_balance(kc.array(edges), node_colors, count, 1.05,
                                             max_iterations=100_000)
        balanced = node_colors.numpy()
        assert_valid(edges, balanced, count)
        after = np.bincount(balanced, minlength=count)
        assert ratio == pytest.approx(after.max() / after.min())
        assert ratio <= before.max() / before.min()
        assert ratio <= 1.05 or after.max() - after.min() <= 2 or ratio < before.max()


def test_balance_errors():
    edges = kc.array([[0, 1]], dtype=kc.int32)
    for bad in (-(2**31), -1, 2, 2**31 - 1):
        colors = kc.array([0, bad], dtype=kc.int32)
        with pytest.raises(RuntimeError) as info:
            utils.graph_coloring_balance(edges, colors, 2, 1.1)
        assert str(info.value) == (f"Graph coloring balance failed: Node 1 has color {bad}, "
                                   f"but valid colors are in the range [0, 2).")
        assert colors.numpy().tolist() == [0, bad]  # untouched
    with pytest.raises(RuntimeError, match=r"balance failed: Graph edge 0 has endpoints "
                                           r"\(0, 2\), but valid node indices"):
        utils.graph_coloring_balance(kc.array([[0, 2]], dtype=kc.int32),
                                     kc.array([0, 1], dtype=kc.int32), 2, 1.1)
    colors = kc.array([0, 1], dtype=kc.int32)
    for bad in (-1, 2**31):
        with pytest.raises(ValueError, match="max_iterations"):
            utils.graph_coloring_balance(edges, colors, 2, 1.1, max_iterations=bad)
    for bad in (True, 1.5, "1"):
        with pytest.raises(TypeError, match="max_iterations must be an integer or None"):
            utils.graph_coloring_balance(edges, colors, 2, 1.1, max_iterations=bad)
    assert utils.graph_coloring_balance(kc.zeros((0, 2), dtype=kc.int32),
                                        kc.zeros(0, dtype=kc.int32), 2, 1.1) == 1.0


# ---- graph_coloring_get_groups ---------------------------------------------------------------


def test_get_groups(rng):
    colors = rng.integers(0, 5, 10_000).astype(np.int32)
    colors[:5] = np.arange(5)
    groups = utils.graph_coloring_get_groups(kc.array(colors), 6)
    assert len(groups) == 6 and all(isinstance(g, kc.array) for g in groups)
    for c, group in enumerate(groups):
        assert group.dtype == kc.int32
        np.testing.assert_array_equal(group.numpy(), np.flatnonzero(colors == c))
    assert groups[5].shape == (0,)
    as_numpy = utils.graph_coloring_get_groups(kc.array(colors), 5, return_wp_array=False)
    assert all(isinstance(g, np.ndarray) for g in as_numpy)
    np.testing.assert_array_equal(np.sort(np.concatenate(as_numpy)), np.arange(10_000))
    assert utils.graph_coloring_get_groups(kc.array(colors), 0) == ()
    with pytest.raises(RuntimeError, match="color_count must be non-negative"):
        utils.graph_coloring_get_groups(kc.array(colors), -1)
    with pytest.raises(RuntimeError, match=r"in the range \[0, 4\)"):
        utils.graph_coloring_get_groups(kc.array(colors), 4)
    with pytest.raises(RuntimeError, match="dtype int32"):
        utils.graph_coloring_get_groups(kc.array(colors.astype(np.int64)), 5)
