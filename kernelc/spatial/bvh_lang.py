"""The BVH's kernel side, written in kernelc's own language.

A built hierarchy is a descriptor in device memory (`DESCRIPTOR_*` byte offsets below) that
kernels receive as a `uint64` id. A mesh's descriptor starts with the descriptor of its
triangle BVH, so a mesh id is also the id of its BVH (`mesh_get_bvh`).

Nodes are stored in depth-first order: the left child of inner node `i` is `i + 1`, and every
node records `skip`, the node that follows its subtree. Iterator queries (`bvh_query_next`,
`mesh_query_aabb_next`) walk that order without a stack, so a query is a small struct that
kernels can copy and pass around; closest-hit and closest-point queries keep a local stack
to visit the nearer child first. The build bounds the depth (see `kernelc.spatial.bvh`), so
`STACK_SIZE` entries always suffice.
"""

from __future__ import annotations

import kernelc as kc
from kernelc.builtins import BUILTINS

# Descriptor layout (bytes). Address loads index in units of the loaded type.
DESCRIPTOR_BOUNDS = 0  # uint64: float32[num_nodes * NODE_FLOATS]
DESCRIPTOR_INFO = 8  # uint64: int32[num_nodes * NODE_INTS]
DESCRIPTOR_PRIMS = 16  # uint64: int32[num_items], item index by leaf slot
DESCRIPTOR_ITEM_LOWERS = 24  # uint64: float32[num_items * 3], each item's lower bound
DESCRIPTOR_ITEM_UPPERS = 32  # uint64: float32[num_items * 3]
DESCRIPTOR_NUM_NODES = 40  # int32
DESCRIPTOR_NUM_ITEMS = 44  # int32
DESCRIPTOR_GROUPS = 48  # uint64: int32[num_groups * 2], (group, root node) sorted by group
DESCRIPTOR_NUM_GROUPS = 56  # int32, 0 for a hierarchy built without groups
DESCRIPTOR_SIZE = 64  # a mesh's own fields follow

# A node's floats: lower xyz, upper xyz, the sum of its triangles' edge lengths (meshes), pad.
NODE_FLOATS = 8
# A node's ints: right child (inner) or first leaf slot (leaf), item count (0: inner node),
# skip (the node after this subtree), depth.
NODE_INTS = 4
STACK_SIZE = 64

KIND_AABB = 0
KIND_RAY = 1
KIND_SPHERE = 2
KIND_CAPSULE = 3

FLT_MAX = 3.4028234663852886e38

_load_i32 = BUILTINS["_load_int32"]
_load_u64 = BUILTINS["_load_uint64"]
_load_f32 = BUILTINS["_load_float32"]


@kc.struct
class BvhQuery:
    """The state of a BVH query: the next node in depth-first order and the leaf being read."""

    bounds: kc.uint64
    info: kc.uint64
    prims: kc.uint64
    item_lowers: kc.uint64
    item_uppers: kc.uint64
    node: kc.int32
    end: kc.int32
    prim_cur: kc.int32
    prim_end: kc.int32
    kind: kc.int32
    lower: kc.vec3  # box lower corner; ray or capsule start; sphere centre
    upper: kc.vec3  # box upper corner; ray or capsule direction
    radius: kc.float32
    radius_sq: kc.float32
    bounds_nr: kc.int32  # the last item found (-1 before the first)


# ---- node and item access ------------------------------------------------------------------


@kc.func
def load_vec3(address: kc.uint64, index: kc.int32) -> kc.vec3:
    return kc.vec3(_load_f32(address, 3 * index), _load_f32(address, 3 * index + 1),
                   _load_f32(address, 3 * index + 2))


@kc.func
def node_lower(bounds: kc.uint64, node: kc.int32) -> kc.vec3:
    base = node * NODE_FLOATS
    return kc.vec3(_load_f32(bounds, base), _load_f32(bounds, base + 1),
                   _load_f32(bounds, base + 2))


@kc.func
def node_upper(bounds: kc.uint64, node: kc.int32) -> kc.vec3:
    base = node * NODE_FLOATS + 3
    return kc.vec3(_load_f32(bounds, base), _load_f32(bounds, base + 1),
                   _load_f32(bounds, base + 2))


@kc.func
def node_int(info: kc.uint64, node: kc.int32, field: kc.int32) -> kc.int32:
    return _load_i32(info, node * NODE_INTS + field)


@kc.func
def root_node(bvh: kc.uint64, root: kc.int32) -> kc.int32:
    """The node a query starts from: `root`, or node 0 when `root` is -1 or out of range."""
    n = _load_i32(bvh, DESCRIPTOR_NUM_NODES // 4)
    if root < 0 or root >= n:
        return 0
    return root


# ---- overlap tests -------------------------------------------------------------------------


@kc.func
def box_overlap(lo_a: kc.vec3, hi_a: kc.vec3, lo_b: kc.vec3, hi_b: kc.vec3) -> bool:
    # Closed boxes: touching faces overlap.
    return not (lo_a[0] > hi_b[0] or lo_a[1] > hi_b[1] or lo_a[2] > hi_b[2]
                or hi_a[0] < lo_b[0] or hi_a[1] < lo_b[1] or hi_a[2] < lo_b[2])


@kc.func
def box_distance_sq(p: kc.vec3, lo: kc.vec3, hi: kc.vec3) -> kc.float32:
    dx = kc.min(hi[0], kc.max(lo[0], p[0])) - p[0]
    dy = kc.min(hi[1], kc.max(lo[1], p[1])) - p[1]
    dz = kc.min(hi[2], kc.max(lo[2], p[2])) - p[2]
    return dx * dx + dy * dy + dz * dz


@kc.func
def safe_inverse(d: kc.vec3) -> kc.vec3:
    # A zero component would give inf and then 0 * inf = NaN in the slab test; the slab
    # test treats zero components separately, so their inverse is never used.
    ix = 0.0
    iy = 0.0
    iz = 0.0
    if d[0] != 0.0:
        ix = 1.0 / d[0]
    if d[1] != 0.0:
        iy = 1.0 / d[1]
    if d[2] != 0.0:
        iz = 1.0 / d[2]
    return kc.vec3(ix, iy, iz)


@kc.func
def _slab(start: kc.float32, d: kc.float32, inv: kc.float32, lo: kc.float32, hi: kc.float32,
          t_min: kc.float32, t_max: kc.float32):
    if d == 0.0:
        # Parallel to the slab: inside it for every t, or never.
        if start < lo or start > hi:
            return 1.0, -1.0
        return t_min, t_max
    t1 = (lo - start) * inv
    t2 = (hi - start) * inv
    return kc.max(t_min, kc.min(t1, t2)), kc.min(t_max, kc.max(t1, t2))


@kc.func
def ray_box(start: kc.vec3, d: kc.vec3, inv: kc.vec3, lo: kc.vec3, hi: kc.vec3):
    """(hit, entry t): the ray start + t d, t >= 0, meets the box. Entry t may be negative
    when the ray starts inside."""
    t_min = float(-FLT_MAX)
    t_max = float(FLT_MAX)
    t_min, t_max = _slab(start[0], d[0], inv[0], lo[0], hi[0], t_min, t_max)
    t_min, t_max = _slab(start[1], d[1], inv[1], lo[1], hi[1], t_min, t_max)
    t_min, t_max = _slab(start[2], d[2], inv[2], lo[2], hi[2], t_min, t_max)
    return t_max >= 0.0 and t_max >= t_min, t_min


# ---- iterator queries ----------------------------------------------------------------------


@kc.func
def _bvh_query_start(bvh: kc.uint64, root: kc.int32, kind: kc.int32, a: kc.vec3, b: kc.vec3,
           radius: kc.float32) -> BvhQuery:
    q = BvhQuery()
    q.bounds = _load_u64(bvh, DESCRIPTOR_BOUNDS // 8)
    q.info = _load_u64(bvh, DESCRIPTOR_INFO // 8)
    q.prims = _load_u64(bvh, DESCRIPTOR_PRIMS // 8)
    q.item_lowers = _load_u64(bvh, DESCRIPTOR_ITEM_LOWERS // 8)
    q.item_uppers = _load_u64(bvh, DESCRIPTOR_ITEM_UPPERS // 8)
    q.node = 0
    q.end = 0
    if _load_i32(bvh, DESCRIPTOR_NUM_NODES // 4) > 0:
        q.node = root_node(bvh, root)
        q.end = node_int(q.info, q.node, 2)
    q.prim_cur = 0
    q.prim_end = 0
    q.kind = kind
    q.lower = a
    q.upper = b
    q.radius = kc.max(radius, 0.0)
    q.radius_sq = q.radius * q.radius
    q.bounds_nr = -1
    return q


@kc.func
def bvh_aabb_query(bvh: kc.uint64, low: kc.vec3, high: kc.vec3, root: kc.int32) -> BvhQuery:
    return _bvh_query_start(bvh, root, KIND_AABB, low, high, 0.0)


@kc.func
def bvh_ray_query(bvh: kc.uint64, start: kc.vec3, d: kc.vec3, root: kc.int32) -> BvhQuery:
    return _bvh_query_start(bvh, root, KIND_RAY, start, d, 0.0)


@kc.func
def bvh_sphere_query(bvh: kc.uint64, center: kc.vec3, radius: kc.float32,
                 root: kc.int32) -> BvhQuery:
    return _bvh_query_start(bvh, root, KIND_SPHERE, center, center, radius)


@kc.func
def bvh_capsule_query(bvh: kc.uint64, start: kc.vec3, d: kc.vec3, radius: kc.float32,
                      root: kc.int32) -> BvhQuery:
    return _bvh_query_start(bvh, root, KIND_CAPSULE, start, d, radius)


@kc.func
def group_root(bvh: kc.uint64, group: kc.int32) -> kc.int32:
    """The root of `group`'s subtree (a binary search of the sorted table), or -1 (the
    whole tree, as in Warp) for a group that has no items or a hierarchy without groups."""
    table = _load_u64(bvh, DESCRIPTOR_GROUPS // 8)
    lo = kc.int32(0)
    hi = _load_i32(bvh, DESCRIPTOR_NUM_GROUPS // 4)
    found = kc.int32(-1)
    while lo < hi:
        mid = (lo + hi) // 2
        g = _load_i32(table, 2 * mid)
        if g == group:
            found = _load_i32(table, 2 * mid + 1)
            hi = lo
        elif g < group:
            lo = mid + 1
        else:
            hi = mid
    return found


@kc.func
def bvh_query_test(q: BvhQuery, lo: kc.vec3, hi: kc.vec3, max_dist: kc.float32) -> bool:
    if q.kind == KIND_RAY:
        hit, t = ray_box(q.lower, q.upper, safe_inverse(q.upper), lo, hi)
        return hit and t < max_dist
    if q.kind == KIND_SPHERE:
        return box_distance_sq(q.lower, lo, hi) <= q.radius_sq
    if q.kind == KIND_CAPSULE:
        # The segment against the box grown by the radius: conservative near the corners.
        r = kc.vec3(q.radius, q.radius, q.radius)
        hit, t = ray_box(q.lower, q.upper, safe_inverse(q.upper), lo - r, hi + r)
        return hit and not t > max_dist
    return box_overlap(q.lower, q.upper, lo, hi)


@kc.func
def bvh_query_step(query: BvhQuery, index: kc.int32, max_dist: kc.float32):
    """(found, advanced query, the next item); `index` comes back unchanged when done.
    `max_dist` bounds the entry distance of ray queries, in multiples of the direction."""
    # A local copy: the front end gives a parameter a slot only when it is assigned by name.
    q = query
    while True:
        if q.prim_cur < q.prim_end:
            item = _load_i32(q.prims, q.prim_cur)
            q.prim_cur += 1
            if bvh_query_test(q, load_vec3(q.item_lowers, item), load_vec3(q.item_uppers, item),
                          max_dist):
                q.bounds_nr = item
                return True, q, item
            continue
        if q.node >= q.end:
            return False, q, index
        node = q.node
        if bvh_query_test(q, node_lower(q.bounds, node), node_upper(q.bounds, node), max_dist):
            count = node_int(q.info, node, 1)
            if count == 0:
                q.node = node + 1  # an inner node: its left child is next
            else:
                q.node = node_int(q.info, node, 2)
                first = node_int(q.info, node, 0)
                if count == 1:
                    # A one-item leaf's box is the item's box, which just passed.
                    item = _load_i32(q.prims, first)
                    q.bounds_nr = item
                    return True, q, item
                q.prim_cur = first
                q.prim_end = first + count
        else:
            q.node = node_int(q.info, node, 2)
    return False, q, index


# ---- refit ---------------------------------------------------------------------------------


@kc.kernel
def refit_item_leaves(leaves: kc.array(dtype=kc.int32), info: kc.array(dtype=kc.int32),
                      prims: kc.array(dtype=kc.int32), lowers: kc.array(dtype=kc.vec3),
                      uppers: kc.array(dtype=kc.vec3), bounds: kc.array(dtype=kc.float32)):
    node = leaves[kc.tid()]
    first = info[node * NODE_INTS]
    count = info[node * NODE_INTS + 1]
    lo = lowers[prims[first]]
    hi = uppers[prims[first]]
    for slot in range(first + 1, first + count):
        item = prims[slot]
        lo = kc.min(lo, lowers[item])
        hi = kc.max(hi, uppers[item])
    base = node * NODE_FLOATS
    for k in range(3):
        bounds[base + k] = lo[k]
        bounds[base + 3 + k] = hi[k]
    bounds[base + 6] = 0.0


@kc.kernel
def refit_inner(nodes: kc.array(dtype=kc.int32), offset: kc.int32,
                info: kc.array(dtype=kc.int32), bounds: kc.array(dtype=kc.float32)):
    # One launch per depth, deepest first: both children are final when a parent is merged.
    node = nodes[offset + kc.tid()]
    left = (node + 1) * NODE_FLOATS
    right = info[node * NODE_INTS] * NODE_FLOATS
    base = node * NODE_FLOATS
    for k in range(3):
        bounds[base + k] = kc.min(bounds[left + k], bounds[right + k])
        bounds[base + 3 + k] = kc.max(bounds[left + 3 + k], bounds[right + 3 + k])
    bounds[base + 6] = bounds[left + 6] + bounds[right + 6]


# A build or refit is library work: its launches report as TIMING_KERNEL_BUILTIN activities.
for _kernel in (refit_item_leaves, refit_inner):
    _kernel.is_builtin = True
