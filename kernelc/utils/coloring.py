"""Graph coloring (Warp's `wp.utils.graph_coloring_*`): colors for the nodes of an undirected
graph such that no edge joins two nodes of one color, so that the nodes of a color can be
processed in parallel (e.g. by a Gauss-Seidel style solver), and a rebalancing of the color
groups' sizes.

The graph is an `(edge_count, 2)` int32 edge list on the CPU, turned into compressed
adjacency lists (CSR) with NumPy. Both colorings are sequential algorithms, run as
single-thread kernels in kernelc's own language (compiled code, not a Python loop):
- `coloring_mcs_order`: maximum cardinality search. Nodes are numbered one at a time, each
  time one with the most already-numbered neighbours (buckets of nodes by that count, kept
  as linked lists; ties go first-in first-out, so the search spreads out breadth-first).
- `coloring_greedy`: colors the nodes in a given order, each with the smallest color none of
  its colored neighbours has. GREEDY orders by decreasing degree, MCS by its search order.
`graph_coloring_balance` moves one node at a time from a large color group to the
smallest one (see its docstring); it runs on the host with NumPy, keeping for each node the
number of its neighbours of each color.
"""

from __future__ import annotations

import enum
import operator
from typing import Any

import numpy as np

import kernelc as kc
from kernelc import types as T
from kernelc.logger import log_warning
from kernelc.utils import _common as C
from kernelc.utils._common import builtin

_INT32_MAX = 2**31 - 1


class GraphColoringAlgorithm(enum.IntEnum):
    """Which coloring `graph_coloring_assign` computes."""

    MCS = 0
    """Greedy coloring in a maximum cardinality search order (usually fewer colors)."""

    GREEDY = 1
    """Greedy coloring in order of decreasing degree."""


@kc.func
def bucket_append(bucket: int, node: int, head: Any, tail: Any, nxt: Any, prv: Any):
    last = tail[bucket]
    prv[node] = last
    nxt[node] = -1
    if last < 0:
        head[bucket] = node
    else:
        nxt[last] = node
    tail[bucket] = node


@kc.func
def bucket_remove(bucket: int, node: int, head: Any, tail: Any, nxt: Any, prv: Any):
    before = prv[node]
    after = nxt[node]
    if before < 0:
        head[bucket] = after
    else:
        nxt[before] = after
    if after < 0:
        tail[bucket] = before
    else:
        prv[after] = before


@builtin
def coloring_mcs_order(offsets: Any, adj: Any, n: int, weight: Any, head: Any, tail: Any,
                       nxt: Any, prv: Any, order: Any):
    # weight[v]: v's numbered neighbours, or -1 once v is numbered; buckets by weight.
    for v in range(n):
        weight[v] = 0
        bucket_append(0, v, head, tail, nxt, prv)
    top = 0
    for k in range(n):
        while head[top] < 0:
            top = top - 1
        v = head[top]
        bucket_remove(top, v, head, tail, nxt, prv)
        weight[v] = -1
        order[k] = v
        for e in range(offsets[v], offsets[v + 1]):
            u = adj[e]
            w = weight[u]
            if w >= 0:
                bucket_remove(w, u, head, tail, nxt, prv)
                bucket_append(w + 1, u, head, tail, nxt, prv)
                weight[u] = w + 1
                top = max(top, w + 1)


@builtin
def coloring_greedy(offsets: Any, adj: Any, n: int, order: Any, used: Any, colors: Any,
                    color_count: Any):
    # used[c] == k: color c is taken by a neighbour of the k-th node of the order.
    for v in range(n):
        colors[v] = -1
        used[v] = -1
    count = 0
    for k in range(n):
        v = order[k]
        for e in range(offsets[v], offsets[v + 1]):
            c = colors[adj[e]]
            if c >= 0:
                used[c] = k
        color = 0
        while color < count and used[color] == k:
            color = color + 1
        colors[v] = color
        count = max(count, color + 1)
    color_count[0] = count


def graph_coloring_assign(edges: Any, node_colors: Any,
                          algorithm: GraphColoringAlgorithm = GraphColoringAlgorithm.MCS) -> int:
    """Colors the nodes of an undirected graph so that no edge joins two nodes of one color
    (Warp's `wp.utils.graph_coloring_assign`).

    Args:
        edges: A CPU int32 array of shape `(edge_count, 2)`: an edge between nodes `i` and
            `j` per row (self-loops and repeated edges are allowed).
        node_colors: A CPU int32 array of shape `(node_count,)` that receives the colors
            `0 .. color_count - 1`; its length is the number of nodes.
        algorithm: `GraphColoringAlgorithm.MCS` (greedy in a maximum cardinality search
            order) or `GraphColoringAlgorithm.GREEDY` (greedy by decreasing degree).

    Returns:
        The number of colors used.

    Raises:
        RuntimeError: An array is not on the CPU, of the wrong dtype or shape
            (`UtilsValueError` / `UtilsTypeError`), the graph has no nodes, or an edge
            names a node outside `[0, node_count)` ("Graph coloring failed: ...").
        ValueError: An unknown algorithm.
    """
    _check_graph(edges, node_colors)
    algorithm = GraphColoringAlgorithm(algorithm)
    n = node_colors.shape[0]
    if n == 0:
        raise C.UtilsValueError("Cannot color an empty graph")
    offsets_np, adj_np = _adjacency(_edge_ends(edges, n, "Graph coloring failed"), n)
    cpu = node_colors.device
    offsets, adj = (kc.array(a.astype(np.int32), dtype=kc.int32, device=cpu)
                    for a in (offsets_np, adj_np))
    degree = np.diff(offsets_np)
    if algorithm == GraphColoringAlgorithm.MCS:
        order = kc.empty(n, dtype=kc.int32, device=cpu)
        # Bucket heads and tails: a node's count of numbered neighbours is at most its degree.
        buckets = [kc.full(int(degree.max()) + 1, -1, dtype=kc.int32, device=cpu)
                   for _ in range(2)]
        scratch = [kc.empty(n, dtype=kc.int32, device=cpu) for _ in range(3)]
        C.launch(coloring_mcs_order, 1,
                 [offsets, adj, n, scratch[0], *buckets, scratch[1], scratch[2], order], cpu)
    else:
        order = kc.array(np.argsort(-degree, kind="stable").astype(np.int32), device=cpu)
    count = kc.empty(1, dtype=kc.int32, device=cpu)
    C.launch(coloring_greedy, 1, [offsets, adj, n, order,
                                  kc.empty(n, dtype=kc.int32, device=cpu), node_colors, count],
             cpu)
    return int(count.numpy()[0])


def graph_coloring_balance(edges: Any, node_colors: Any, color_count: int,
                           target_max_min_ratio: float, *,
                           max_iterations: int | None = None) -> float:
    """Evens out the sizes of the color groups of a valid coloring, keeping it valid
    (Warp's `wp.utils.graph_coloring_balance`).

    Each step takes the largest and the smallest group (the first of equal sizes) and moves
    one node to the smallest group: the first node (by index) of the largest group that has
    no neighbour in the smallest one, else the first such node of the other groups in color
    order. It stops when the ratio of the largest to the smallest size is at most
    `target_max_min_ratio`, when the two sizes differ by at most 2, when no node can move,
    or after `max_iterations` moves (with a warning). A move that made the ratio worse is
    undone, so the coloring returned is the best one seen.

    Args:
        edges: The graph's CPU int32 `(edge_count, 2)` edge list.
        node_colors: The CPU int32 colors, each in `[0, color_count)`; changed in place.
        color_count: The number of colors (as `graph_coloring_assign` returns).
        target_max_min_ratio: The ratio of the largest to the smallest group to reach.
        max_iterations: The most nodes to move, a non-negative int32; None means the
            number of nodes.

    Returns:
        The ratio of the largest to the smallest group reached (`inf` with an empty group);
        1.0 for a graph without nodes or colors.

    Raises:
        RuntimeError: Arrays not on the CPU or of the wrong dtype or shape; an edge with a
            node outside the graph, or a node with a color outside `[0, color_count)`
            ("Graph coloring balance failed: ..."; `node_colors` is left unchanged).
        TypeError: `max_iterations` is not an integer.
        ValueError: `max_iterations` is negative or more than 2**31 - 1.
    """
    _check_graph(edges, node_colors)
    n = node_colors.shape[0]
    limit = _max_iterations(n, max_iterations)
    ends = _edge_ends(edges, n, "Graph coloring balance failed")
    colors = node_colors.numpy().astype(np.int64)
    color_count = operator.index(color_count)
    bad = np.flatnonzero((colors < 0) | (colors >= color_count))
    if len(bad):
        raise RuntimeError(f"Graph coloring balance failed: Node {bad[0]} has color "
                           f"{colors[bad[0]]}, but valid colors are in the range "
                           f"[0, {color_count}).")
    if n == 0 or color_count == 0:
        return 1.0
    ratio, limit_reached = _Balancer(ends, colors, color_count).run(
        float(target_max_min_ratio), limit)
    node_colors.assign(colors.astype(np.int32))
    if limit_reached:
        log_warning(f"Graph coloring stopped because it reached the {limit}-iteration limit "
                    f"(achieved ratio {ratio:g}, target {target_max_min_ratio:g}).",
                    stacklevel=2)
    return ratio


def graph_coloring_get_groups(node_colors: Any, color_count: int, return_wp_array: bool = True,
                              device: Any = "cpu") -> tuple:
    """The nodes of each color (Warp's `wp.utils.graph_coloring_get_groups`).

    Args:
        node_colors: The CPU int32 node colors, each in `[0, color_count)`.
        color_count: The number of colors.
        return_wp_array: Return kernelc arrays (on `device`) rather than NumPy arrays.
        device: Where the returned arrays live.

    Returns:
        A tuple of `color_count` int32 arrays: the node indices of each color, ascending.

    Raises:
        RuntimeError: A negative `color_count`, or `node_colors` not a one-dimensional
            int32 CPU array, or a color outside `[0, color_count)`.
    """
    color_count = operator.index(color_count)
    if color_count < 0:
        raise C.UtilsValueError("color_count must be non-negative")
    if color_count == 0:
        return ()
    _check_colors(node_colors)
    colors = node_colors.numpy()
    if len(colors) and (colors.min() < 0 or colors.max() >= color_count):
        raise C.UtilsValueError(f"node_colors must be in the range [0, {color_count})")
    order = np.argsort(colors, kind="stable").astype(np.int32)
    bounds = np.searchsorted(colors[order], np.arange(color_count + 1))
    groups = tuple(order[bounds[c]:bounds[c + 1]] for c in range(color_count))
    if return_wp_array:
        return tuple(kc.array(g, dtype=kc.int32, device=device) for g in groups)
    return groups


class _Balancer:
    """The state of a balancing: colors, group sizes, and each node's neighbour count per
    color (so that whether a node may take a color is one lookup)."""

    def __init__(self, ends: np.ndarray, colors: np.ndarray, color_count: int) -> None:
        n = len(colors)
        self.colors = colors
        self.sizes = np.bincount(colors, minlength=color_count)
        self.offsets, self.adj = _adjacency(ends, n)
        nodes = np.repeat(np.arange(n), np.diff(self.offsets))
        self.counts = np.bincount(nodes * color_count + colors[self.adj],
                                  minlength=n * color_count).reshape(n, color_count)

    def ratio(self) -> tuple[float, int, int]:
        big, small = int(np.argmax(self.sizes)), int(np.argmin(self.sizes))
        low = self.sizes[small]
        return (float(self.sizes[big]) / low if low else float("inf")), big, small

    def movable(self, source: int, target: int) -> int:
        """The first node of color `source` without a neighbour of color `target`, or -1."""
        found = np.flatnonzero((self.colors == source) & (self.counts[:, target] == 0))
        return int(found[0]) if len(found) else -1

    def move(self, node: int, color: int) -> None:
        old = self.colors[node]
        neighbours = self.adj[self.offsets[node]:self.offsets[node + 1]]
        np.subtract.at(self.counts, (neighbours, old), 1)
        np.add.at(self.counts, (neighbours, color), 1)
        self.sizes[old] -= 1
        self.sizes[color] += 1
        self.colors[node] = color

    def run(self, target: float, limit: int) -> tuple[float, bool]:
        """Balances; returns the ratio reached and whether the move limit stopped it."""
        previous, last, moves = None, None, 0
        while True:
            ratio, big, small = self.ratio()
            if previous is not None and ratio > previous:
                self.move(*last)  # undo the move that made it worse
                return previous, False
            if self.sizes[big] - self.sizes[small] <= 2 or ratio <= target:
                return ratio, False
            node, source = self.movable(big, small), big
            for color in range(len(self.sizes)):
                if node >= 0:
                    break
                if color not in (big, small):
                    node, source = self.movable(color, small), color
            if node < 0:
                return ratio, False
            if moves == limit:
                return ratio, True
            self.move(node, small)
            previous, last, moves = ratio, (node, source), moves + 1


def _check_colors(node_colors: Any) -> None:
    C.check_array(node_colors, "node_colors")
    if not node_colors.device.is_cpu:
        raise C.UtilsValueError("node_colors array must be on the CPU")
    if node_colors.dtype != T.int32:
        raise C.UtilsTypeError(f"node_colors array must have dtype int32, got "
                               f"{node_colors.dtype!r}")
    if node_colors.ndim != 1:
        raise C.UtilsValueError(f"node_colors array must be 1-dimensional, got "
                                f"{node_colors.ndim} dimensions")


def _check_graph(edges: Any, node_colors: Any) -> None:
    C.check_array(edges, "edges")
    if not edges.device.is_cpu:
        raise C.UtilsValueError("edges array must be on the CPU")
    _check_colors(node_colors)
    if edges.dtype != T.int32:
        raise C.UtilsTypeError(f"edges array must have dtype int32, got {edges.dtype!r}")
    if edges.ndim != 2:
        raise C.UtilsValueError(f"edges array must be 2-dimensional, got {edges.ndim} "
                                f"dimensions")
    if edges.shape[1] != 2:
        raise C.UtilsValueError(f"edges array must have shape (edge_count, 2), got shape "
                                f"{edges.shape}")


def _max_iterations(n: int, value: Any) -> int:
    if value is None:
        return n
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"max_iterations must be an integer or None, got "
                        f"{type(value).__name__}")
    try:
        limit = operator.index(value)
    except TypeError:
        raise TypeError(f"max_iterations must be an integer or None, got "
                        f"{type(value).__name__}") from None
    if limit < 0:
        raise ValueError(f"max_iterations must be non-negative, got {limit}")
    if limit > _INT32_MAX:
        raise ValueError(f"max_iterations must not exceed {_INT32_MAX}, got {limit}")
    return limit


def _edge_ends(edges: Any, n: int, what: str) -> np.ndarray:
    """The edge list as an (edge_count, 2) int64 NumPy array, every node in [0, n)."""
    ends = edges.numpy().astype(np.int64).reshape(-1, 2)
    bad = np.flatnonzero(((ends < 0) | (ends >= n)).any(axis=1))
    if len(bad):
        i = int(bad[0])
        raise RuntimeError(f"{what}: Graph edge {i} has endpoints ({ends[i, 0]}, "
                           f"{ends[i, 1]}), but valid node indices are in the range [0, {n}).")
    return ends


def _adjacency(ends: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR adjacency lists: the neighbours of node v are adj[offsets[v]:offsets[v + 1]], in
    edge order (both ends of each edge list the other)."""
    src = np.concatenate([ends[:, 0], ends[:, 1]])
    dst = np.concatenate([ends[:, 1], ends[:, 0]])
    offsets = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=n))])
    return offsets, dst[np.argsort(src, kind="stable")]
