"""`kc.Bvh`: a bounding volume hierarchy over boxes, and the build shared with `kc.Mesh`.

The build runs on the host with vectorised NumPy, one pass per tree level: the items are
sorted once by the Morton code of their box centres (a 63-bit code on a cube around the
centres, so an elongated scene is cut along its long axis first), then every node splits its
range where the highest differing bit of its codes changes — the middle of its Morton cell.
Nodes deeper than `62 - ceil(log2(n))` split at the median instead, which bounds the depth by
62 for any input, so the queries' fixed `STACK_SIZE` stack can never overflow.

Grouped hierarchies (Warp's `groups=`) sort the items by group first, and split a node whose
items span several groups at the group boundary that halves its number of groups, so each
group ends up in one subtree, whose root `bvh_get_group_root` finds in a sorted table.

Node bounds are computed on the device by kernels, one launch per depth, deepest first; a
`refit` reruns only those launches, so it costs a few microseconds of launch overhead per
level plus one pass over the items.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.runtime.array import array, zeros
from kernelc.runtime.launch import launch
from kernelc.spatial import bvh_lang
from kernelc.spatial.bvh_lang import BvhQuery

__all__ = ["Bvh", "BvhQuery", "is_cubql_available"]

_CONSTRUCTORS = ("sah", "median", "lbvh", "cubql")
_MORTON_BITS = 21  # per axis: 63-bit codes


@dataclass(frozen=True)
class Topology:
    """A built hierarchy, on the host.

    Attributes:
        info: int32 (num_nodes, 4) in depth-first order (see `bvh_lang.NODE_INTS`).
        prims: int32 (num_items,): the item in each leaf slot.
        leaves: int32 node indices of the leaves, ascending.
        inner: int32 node indices of the inner nodes, deepest first.
        level_offsets: where each depth starts in `inner` (deepest first), plus the end.
        depth: the deepest node's depth (the root's is 0).
        group_roots: int32 (num_groups, 2): each group and the root of its subtree, sorted
            by group; empty for a hierarchy built without groups.
    """

    info: np.ndarray
    prims: np.ndarray
    leaves: np.ndarray
    inner: np.ndarray
    level_offsets: tuple[int, ...]
    depth: int
    group_roots: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros((0, 2), np.int32))


def _spread_bits(x: np.ndarray) -> np.ndarray:
    """The low 21 bits of each value moved to every third bit (bit k to bit 3k)."""
    x = x & np.uint64(0x1FFFFF)
    for shift, mask in ((32, 0x1F00000000FFFF), (16, 0x1F0000FF0000FF),
                        (8, 0x100F00F00F00F00F), (4, 0x10C30C30C30C30C3),
                        (2, 0x1249249249249249)):
        x = (x | (x << np.uint64(shift))) & np.uint64(mask)
    return x


def morton_codes(lowers: np.ndarray, uppers: np.ndarray) -> np.ndarray:
    """63-bit Morton codes of the box centres, on a cube around all centres."""
    # One axis at a time: reductions over a contiguous column are far faster than over axis
    # 0 of an (n, 3) array.
    centres = [np.nan_to_num((lowers[:, k].astype(np.float64) + uppers[:, k]) * 0.5)
               for k in range(3)]
    origins = [float(x.min()) for x in centres]
    extent = max(float(x.max()) - o for x, o in zip(centres, origins))
    scale = ((1 << _MORTON_BITS) - 1) / extent if extent > 0.0 else 0.0
    codes = np.zeros(len(lowers), np.uint64)
    for k, (x, origin) in enumerate(zip(centres, origins)):
        x -= origin
        x *= scale
        np.clip(x, 0, (1 << _MORTON_BITS) - 1, out=x)
        codes |= _spread_bits(x.astype(np.uint64)) << np.uint64(2 - k)
    return codes


def _highest_bit(x: np.ndarray) -> np.ndarray:
    """Index of the highest set bit of each non-zero uint64 (exact: 32-bit halves)."""
    high = (x >> np.uint64(32)).astype(np.float64)
    low = (x & np.uint64(0xFFFFFFFF)).astype(np.float64)
    return np.where(high > 0, 31 + np.frexp(high)[1], np.frexp(low)[1] - 1).astype(np.uint64)


def _split(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, morton: bool,
           sorted_within: bool = False) -> np.ndarray:
    """Where each range [start, end) splits: at its highest differing Morton bit, else the
    middle. `sorted_within`: the codes are sorted within each range only (grouped builds)."""
    middle = (starts + ends) // 2
    if not morton:
        return middle
    first, last = codes[starts], codes[ends - 1]
    differ = first != last
    if not differ.any():
        return middle
    bit = _highest_bit(np.where(differ, first ^ last, np.uint64(1)))
    prefix = (last >> bit) << bit  # the first code with that bit set
    if sorted_within:
        at = _first_at_least(codes, starts, ends, prefix)
    else:
        at = np.searchsorted(codes, prefix, side="left").astype(np.int64)
    return np.where(differ, at, middle)


def _first_at_least(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                    keys: np.ndarray) -> np.ndarray:
    """For each range [start, end) of `codes`, sorted within it, the first index whose code
    is >= its key (a bisection run on all the ranges at once)."""
    lo, hi = starts.copy(), ends.copy()
    last = len(codes) - 1
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        below = active & (codes[np.minimum(mid, last)] < keys)
        lo = np.where(below, mid + 1, lo)
        hi = np.where(active & ~below, mid, hi)


def build_topology(lowers: np.ndarray, uppers: np.ndarray, leaf_size: int = 1,
                   median: bool = False, groups: np.ndarray | None = None) -> Topology:
    """Builds the hierarchy of `n` boxes ((n, 3) arrays) top-down, one level at a time.

    Args:
        lowers: Lower corners, (n, 3).
        uppers: Upper corners, (n, 3).
        leaf_size: Most items in a leaf.
        median: Split every node at its median in Morton order (else at its Morton cell's
            middle, falling back to the median only deep down).
        groups: Each item's group (int, (n,)), or None: every group then gets a subtree of
            its own (see the module's docstring).
    """
    n = len(lowers)
    if n == 0:  # one empty leaf; the descriptor reports no nodes, so queries find nothing
        empty = np.zeros(0, np.int32)
        return Topology(np.array([[0, 0, 1, 0]], np.int32), empty, np.zeros(1, np.int32),
                        empty, (0,), 0)
    codes = morton_codes(lowers, uppers)
    if groups is None:
        order = np.argsort(codes, kind="stable")
    else:
        groups = np.asarray(groups, np.int64)
        order = np.lexsort((codes, groups))  # by group, then Morton code
        sorted_groups = groups[order]
        # Where the group changes: a node spanning one of these is split at one.
        changes = np.flatnonzero(sorted_groups[1:] != sorted_groups[:-1]) + 1
    codes = codes[order]
    morton_depth = 62 - max(1, math.ceil(math.log2(max(n, 2))))
    # Per level: the ranges of its nodes, for each inner node its children's positions in
    # the next level, and (grouped builds) which nodes are the roots of their group.
    level_starts, level_ends, level_children, level_roots = [], [], [], []
    starts = np.zeros(1, np.int64)
    ends = np.full(1, n, np.int64)
    parent_mixed = np.ones(1, bool)  # the root's "parent" spans every group
    depth = 0
    while len(starts):
        inner = (ends - starts) > leaf_size
        if groups is not None:
            first = np.searchsorted(changes, starts, side="right")
            stop = np.searchsorted(changes, ends, side="left")
            mixed = stop > first  # the node holds items of several groups
            inner |= mixed
            level_roots.append(parent_mixed & ~mixed)
        split = _split(codes, starts[inner], ends[inner], not median and depth < morton_depth,
                       sorted_within=groups is not None)
        if groups is not None:
            at_groups = mixed[inner]  # split there at the middle group boundary
            middle = (first[inner] + stop[inner]) // 2
            split = np.where(at_groups, changes[np.minimum(middle, max(len(changes) - 1, 0))]
                             if len(changes) else split, split)
            parent_mixed = np.repeat(mixed[inner], 2)
        level_starts.append(starts)
        level_ends.append(ends)
        level_children.append(inner)
        starts = np.stack([starts[inner], split], axis=1).ravel()
        ends = np.stack([split, ends[inner]], axis=1).ravel()
        depth += 1
    topology = _number_depth_first(level_starts, level_ends, level_children, order,
                                   level_roots if groups is not None else None)
    return topology if groups is None else _with_group_roots(topology, sorted_groups)


def _with_group_roots(topology: Topology, sorted_groups: np.ndarray) -> Topology:
    """`topology` with its `group_roots` table: the group of each root node (read from
    the first item of its range) and the node, sorted by group."""
    nodes = topology.group_roots[:, 1]
    # A root's first item slot is that of its leftmost leaf: in depth-first order, the
    # first leaf at or after it.
    first_slot = topology.info[topology.leaves[np.searchsorted(topology.leaves, nodes)], 0]
    table = np.stack([sorted_groups[first_slot], nodes], axis=1).astype(np.int32)
    table = table[np.argsort(table[:, 0], kind="stable")]
    return dataclasses.replace(topology, group_roots=table)


def _number_depth_first(level_starts, level_ends, level_children, order,
                        level_roots=None) -> Topology:
    """Lays the level-by-level tree out in depth-first order, with skip indices; the nodes
    `level_roots` marks (per level) are listed in `group_roots[:, 1]`."""
    levels = len(level_starts)
    # Subtree sizes, bottom-up: an inner node's children are consecutive in the next level.
    sizes: list[np.ndarray] = [None] * levels  # type: ignore[list-item]
    for d in range(levels - 1, -1, -1):
        size = np.ones(len(level_starts[d]), np.int64)
        if d + 1 < levels:
            child = sizes[d + 1].reshape(-1, 2)
            size[level_children[d]] += child[:, 0] + child[:, 1]
        sizes[d] = size
    total = int(sizes[0][0])
    info = np.zeros((total, 4), np.int32)
    leaves, inner_by_depth, roots = [], [], []
    index = np.zeros(1, np.int64)  # depth-first index of each node of the level
    for d in range(levels):
        inner = level_children[d]
        if level_roots is not None:
            roots.append(index[level_roots[d]])
        skip = index + sizes[d]
        info[index, 2] = skip
        info[index, 3] = d
        leaf = ~inner
        info[index[leaf], 0] = level_starts[d][leaf]
        info[index[leaf], 1] = level_ends[d][leaf] - level_starts[d][leaf]
        leaves.append(index[leaf])
        inner_by_depth.append(index[inner])
        if d + 1 < levels:
            left = index[inner] + 1
            right = left + sizes[d + 1].reshape(-1, 2)[:, 0]
            info[index[inner], 0] = right
            index = np.stack([left, right], axis=1).ravel()
    inner_nodes = inner_by_depth[::-1]
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in inner_nodes])])
    return Topology(info=info, prims=order.astype(np.int32),
                    # In depth-first order, consecutive leaves read consecutive items.
                    leaves=np.sort(np.concatenate(leaves)).astype(np.int32),
                    inner=np.concatenate(inner_nodes).astype(np.int32),
                    level_offsets=tuple(int(x) for x in offsets), depth=levels - 1,
                    group_roots=_root_nodes(roots))


def _root_nodes(roots: list[np.ndarray]) -> np.ndarray:
    """(nodes, 2) int32 with the nodes in column 1 (the groups are filled in later)."""
    nodes = np.concatenate(roots) if roots else np.zeros(0, np.int64)
    return np.stack([np.zeros_like(nodes), nodes], axis=1).astype(np.int32)


class Tree:
    """A hierarchy's arrays on a device, and the launches that refit its node bounds."""

    def __init__(self, topology: Topology, device: Any, item_lowers: array,
                 item_uppers: array) -> None:
        self.topology = topology
        self.device = device
        self.num_nodes = len(topology.info)
        self.num_items = len(topology.prims)
        self.info = array(topology.info.ravel(), dtype=T.int32, device=device)
        # Never empty: an array of no elements has no address to put in the descriptor.
        self.prims = array(np.append(topology.prims, 0).astype(np.int32), dtype=T.int32,
                           device=device)
        self.leaves = array(topology.leaves, dtype=T.int32, device=device)
        self.inner = array(np.concatenate([topology.inner, [0]]).astype(np.int32),
                           dtype=T.int32, device=device)
        self.bounds = zeros(self.num_nodes * bvh_lang.NODE_FLOATS, dtype=T.float32, device=device)
        roots = topology.group_roots
        self.num_groups = len(roots)
        self.group_roots = array(np.append(roots.ravel(), [0, 0]).astype(np.int32),
                                 dtype=T.int32, device=device)
        self.item_lowers = item_lowers
        self.item_uppers = item_uppers

    def refit_levels(self, kernel: Any, arrays: list[Any]) -> None:
        """Launches `kernel(inner, offset, info, *arrays)` once per depth, deepest first."""
        offsets = self.topology.level_offsets
        for begin, end in zip(offsets[:-1], offsets[1:]):
            if end > begin:
                launch(kernel, end - begin, [self.inner, begin, self.info, *arrays],
                       device=self.device)

    def refit_items(self) -> None:
        """Node bounds from the item boxes (`item_lowers`, `item_uppers` arrays of vec3)."""
        launch(bvh_lang.refit_item_leaves, len(self.topology.leaves),
               [self.leaves, self.info, self.prims, self.item_lowers, self.item_uppers,
                self.bounds], device=self.device)
        self.refit_levels(bvh_lang.refit_inner, [self.bounds])

    def write_descriptor(self, raw: np.ndarray) -> None:
        """Fills the BVH fields (the first `bvh_lang.DESCRIPTOR_SIZE` bytes) of `raw`."""
        lang = bvh_lang
        u64 = raw[:lang.DESCRIPTOR_SIZE].view(np.uint64)
        u64[lang.DESCRIPTOR_BOUNDS // 8] = self.bounds.ptr
        u64[lang.DESCRIPTOR_INFO // 8] = self.info.ptr
        u64[lang.DESCRIPTOR_PRIMS // 8] = self.prims.ptr
        u64[lang.DESCRIPTOR_ITEM_LOWERS // 8] = self.item_lowers.ptr or 0
        u64[lang.DESCRIPTOR_ITEM_UPPERS // 8] = self.item_uppers.ptr or 0
        i32 = raw[:lang.DESCRIPTOR_SIZE].view(np.int32)
        i32[lang.DESCRIPTOR_NUM_NODES // 4] = self.num_nodes if self.num_items else 0
        i32[lang.DESCRIPTOR_NUM_ITEMS // 4] = self.num_items
        u64[lang.DESCRIPTOR_GROUPS // 8] = self.group_roots.ptr
        i32[lang.DESCRIPTOR_NUM_GROUPS // 4] = self.num_groups


def is_cubql_available() -> bool:
    """Whether Warp's cuBQL builder is there: never in kernelc, whose one builder serves
    every constructor name (`"cubql"` included)."""
    return False


def _is_cubql(constructor: Any) -> bool:
    name = getattr(constructor, "name", constructor)
    return isinstance(name, str) and name.lower() == "cubql"


def check_constructor(constructor: Any) -> bool:
    """Whether a Warp `constructor` name asks for median splits (all others build alike)."""
    if constructor is None:
        return False
    name = getattr(constructor, "name", constructor)
    if not isinstance(name, str) or name.lower() not in _CONSTRUCTORS:
        raise ValueError(f"unknown BVH constructor {constructor!r}; expected one of "
                         f"{', '.join(map(repr, _CONSTRUCTORS))} or None")
    return name.lower() == "median"


def check_groups(groups: Any, count: int, what: str, device: Any) -> np.ndarray | None:
    """The group of each item as NumPy ints, or None; raises RuntimeError (as Warp does)
    unless `groups` is a contiguous int32 array of `count` entries on `device`."""
    if groups is None:
        return None
    if getattr(groups, "dtype", None) != T.int32 or not getattr(groups, "is_contiguous",
                                                                  False):
        raise RuntimeError(f"groups should be a contiguous array of type int32 (one per {what})")
    if groups.device != device:
        raise RuntimeError(f"groups must live on the same device as the {what}s "
                           f"({device}), not {groups.device}")
    if len(groups) != count:
        raise RuntimeError(f"groups must have one entry per {what} ({count}), got "
                           f"{len(groups)}")
    return groups.numpy()


def check_vec3_array(value: Any, what: str, device: Any = None) -> array:
    """`value` if it is a contiguous 1-d array of vec3 (on `device`), else a clear error."""
    vec3 = T.VectorType(3, T.float32)
    if not isinstance(value, array) or value.dtype != vec3:
        got = value.dtype if isinstance(value, array) else type(value).__name__
        raise TypeError(f"{what} must be an array of kc.vec3, got {got!r}")
    if value.ndim != 1 or not value.is_contiguous:
        raise ValueError(f"{what} must be a contiguous 1-d array of kc.vec3")
    if device is not None and value.device != device:
        raise ValueError(f"{what} is on {value.device}, expected {device}")
    return value


class Bvh:
    """A bounding volume hierarchy over `n` boxes, for `bvh_query_aabb` / `bvh_query_ray`.

    Args:
        lowers: Lower corners of the boxes: a contiguous array of `kc.vec3`.
        uppers: Upper corners, on the same device.
        constructor: Warp's builder name ("sah", "median", "lbvh", "cubql" or None). kernelc
            has one builder (Morton-ordered splits); "median" splits at the median instead.
        groups: The group of each box (a contiguous `int32` array), or None. Each group
            gets a subtree of its own, whose root `bvh_get_group_root(id, group)` returns;
            a query started there (`root=`) sees that group's boxes only.
        leaf_size: Most boxes in a leaf.

    Attributes:
        id: The `uint64` to pass to kernels.
        device: The device the hierarchy lives on (that of `lowers`).
        lowers, uppers: The arrays given; change them in place and call `refit()`.
    """

    def __init__(self, lowers: array, uppers: array, constructor: Any = None,
                 groups: Any = None, leaf_size: int = 1) -> None:
        check_vec3_array(lowers, "Bvh lowers")
        check_vec3_array(uppers, "Bvh uppers", lowers.device)
        if len(lowers) != len(uppers):
            raise ValueError(f"Bvh needs as many lowers as uppers, got {len(lowers)} and "
                             f"{len(uppers)}")
        check_groups(groups, len(lowers), "box", lowers.device)
        self.leaf_size = operator.index(leaf_size)
        if self.leaf_size < 1:
            raise ValueError(f"leaf_size must be >= 1, got {leaf_size}")
        self._median = check_constructor(constructor)
        if groups is not None and _is_cubql(constructor):  # as Warp's cuBQL builder
            raise RuntimeError("Grouped BVHs are not supported with constructor='cubql'")
        self.device = lowers.device
        self.lowers, self.uppers = lowers, uppers
        self.groups = groups
        self._descriptor = zeros(bvh_lang.DESCRIPTOR_SIZE, dtype=T.uint8, device=self.device)
        self.id = self._descriptor.ptr
        self.rebuild()

    def rebuild(self, constructor: Any = None) -> None:
        """Builds the hierarchy anew from the current `lowers` and `uppers` (after large
        changes, where a refit would leave loose boxes)."""
        if constructor is not None:
            self._median = check_constructor(constructor)
            if self.groups is not None and _is_cubql(constructor):
                raise RuntimeError("Grouped BVHs are not supported with constructor='cubql'")
        lo = self.lowers.numpy().reshape(-1, 3)
        hi = self.uppers.numpy().reshape(-1, 3)
        groups = check_groups(self.groups, len(lo), "box", self.device)
        self._tree = Tree(build_topology(lo, hi, self.leaf_size, self._median, groups),
                          self.device, self.lowers, self.uppers)
        self.refit()
        raw = np.zeros(len(self._descriptor), np.uint8)
        self._tree.write_descriptor(raw)
        self._descriptor.assign(raw)

    def refit(self) -> None:
        """Recomputes the node bounds after `lowers` or `uppers` changed in place."""
        if len(self.lowers):
            self._tree.refit_items()

    @property
    def num_nodes(self) -> int:
        """Number of nodes of the hierarchy."""
        return self._tree.num_nodes

    def __repr__(self) -> str:
        return f"Bvh({len(self.lowers)} boxes, device={self.device})"

