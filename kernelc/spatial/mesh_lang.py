"""The triangle mesh's kernel side, written in kernelc's own language.

A mesh is a descriptor in device memory that starts with the descriptor of its triangle
BVH (`bvh_lang.DESCRIPTOR_*`, items = faces, item boxes = face bounds) and continues with
the mesh's own fields (`DESCRIPTOR_*` below). Closest-point and closest-hit queries walk the
BVH with a local stack, nearer child first; the AABB and sphere iterators reuse the BVH's
stackless iterator. Barycentric `(u, v)` are the weights of a face's first and second
vertex, as in Warp: the point is `u * p0 + v * p1 + (1 - u - v) * p2`.
"""

from __future__ import annotations

import kernelc as kc
from kernelc.builtins import BUILTINS
from kernelc.spatial import bvh_lang as bvh
from kernelc.spatial.bvh_lang import FLT_MAX, NODE_FLOATS, NODE_INTS, STACK_SIZE

# Mesh descriptor fields (bytes), after the BVH's.
DESCRIPTOR_POINTS = 64  # uint64: float32[num_points * 3]
DESCRIPTOR_VELOCITIES = 72  # uint64: float32[num_points * 3], 0 without velocities
DESCRIPTOR_INDICES = 80  # uint64: int32[num_tris * 3]
DESCRIPTOR_NUM_POINTS = 88  # int32
DESCRIPTOR_NUM_TRIS = 92  # int32
DESCRIPTOR_WINDING = 96  # uint64: float32[num_nodes * WINDING_FLOATS], 0 without support
DESCRIPTOR_POINTS_GRAD = 104  # uint64: the points' gradient array, 0 without one
DESCRIPTOR_VELOCITIES_GRAD = 112  # uint64: the velocities' gradient array, 0 without one
DESCRIPTOR_SIZE = 120

_load_i32 = BUILTINS["_load_int32"]
_load_u64 = BUILTINS["_load_uint64"]
_load_f32 = BUILTINS["_load_float32"]

SLIVER_RATIO = 1.0e-6


@kc.struct
class MeshQueryPoint:
    """The result of a closest-point query (Warp's `MeshQueryPoint`)."""

    result: bool
    sign: kc.float32
    face: kc.int32
    u: kc.float32
    v: kc.float32


@kc.struct
class MeshQueryRay:
    """The result of a ray query (Warp's `MeshQueryRay`)."""

    result: bool
    sign: kc.float32
    face: kc.int32
    t: kc.float32
    u: kc.float32
    v: kc.float32
    normal: kc.vec3


@kc.struct
class MeshQueryAABB:
    """The state of a mesh AABB or sphere query: a BVH query over the faces' boxes, plus
    what the sphere query's exact test needs."""

    bvh: bvh.BvhQuery
    points: kc.uint64
    indices: kc.uint64
    sphere: bool
    face: kc.int32


# ---- access --------------------------------------------------------------------------------


@kc.func
def face_points(mesh: kc.uint64, face: kc.int32):
    """The three vertices of `face`."""
    points = _load_u64(mesh, DESCRIPTOR_POINTS // 8)
    indices = _load_u64(mesh, DESCRIPTOR_INDICES // 8)
    return (bvh.load_vec3(points, _load_i32(indices, 3 * face)),
            bvh.load_vec3(points, _load_i32(indices, 3 * face + 1)),
            bvh.load_vec3(points, _load_i32(indices, 3 * face + 2)))


@kc.func
def _vertex_attribute(mesh: kc.uint64, field: kc.int32, face: kc.int32, u: kc.float32,
                      v: kc.float32) -> kc.vec3:
    data = _load_u64(mesh, field // 8)
    if data == kc.uint64(0):
        return kc.vec3(0.0, 0.0, 0.0)
    indices = _load_u64(mesh, DESCRIPTOR_INDICES // 8)
    a = bvh.load_vec3(data, _load_i32(indices, 3 * face))
    b = bvh.load_vec3(data, _load_i32(indices, 3 * face + 1))
    c = bvh.load_vec3(data, _load_i32(indices, 3 * face + 2))
    return a * u + b * v + c * (1.0 - u - v)


@kc.func
def eval_position(mesh: kc.uint64, face: kc.int32, u: kc.float32, v: kc.float32) -> kc.vec3:
    return _vertex_attribute(mesh, DESCRIPTOR_POINTS, face, u, v)


@kc.func
def eval_velocity(mesh: kc.uint64, face: kc.int32, u: kc.float32, v: kc.float32) -> kc.vec3:
    return _vertex_attribute(mesh, DESCRIPTOR_VELOCITIES, face, u, v)


@kc.func
def eval_face_normal(mesh: kc.uint64, face: kc.int32) -> kc.vec3:
    a, b, c = face_points(mesh, face)
    return kc.normalize(kc.cross(b - a, c - a))


@kc.func
def _corner_attribute(mesh: kc.uint64, field: kc.int32, index: kc.int32) -> kc.vec3:
    data = _load_u64(mesh, field // 8)
    if data == kc.uint64(0):
        return kc.vec3(0.0, 0.0, 0.0)
    return bvh.load_vec3(data, _load_i32(_load_u64(mesh, DESCRIPTOR_INDICES // 8), index))


@kc.func
def get_point(mesh: kc.uint64, index: kc.int32) -> kc.vec3:
    return _corner_attribute(mesh, DESCRIPTOR_POINTS, index)


@kc.func
def get_velocity(mesh: kc.uint64, index: kc.int32) -> kc.vec3:
    return _corner_attribute(mesh, DESCRIPTOR_VELOCITIES, index)


@kc.func
def get_index(mesh: kc.uint64, index: kc.int32) -> kc.int32:
    return _load_i32(_load_u64(mesh, DESCRIPTOR_INDICES // 8), index)


@kc.func
def get_bvh(mesh: kc.uint64) -> kc.uint64:
    return mesh  # the descriptor starts with its BVH's


# ---- triangle geometry ---------------------------------------------------------------------


@kc.func
def is_sliver(a: kc.vec3, b: kc.vec3, c: kc.vec3) -> bool:
    """Degenerate or nearly so relative to the edge lengths: point queries skip it."""
    e0 = b - a
    e1 = c - a
    e2 = c - b
    area2 = kc.length(kc.cross(e0, e1))
    return area2 / (kc.dot(e0, e0) + kc.dot(e1, e1) + kc.dot(e2, e2)) < SLIVER_RATIO


@kc.func
def closest_point_triangle(a: kc.vec3, b: kc.vec3, c: kc.vec3, p: kc.vec3):
    """(weight of b, weight of c) of the point of triangle abc closest to p: the Voronoi
    regions of the vertices, then of the edges, then the interior."""
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = kc.dot(ab, ap)
    d2 = kc.dot(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return 0.0, 0.0
    bp = p - b
    d3 = kc.dot(ab, bp)
    d4 = kc.dot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return 1.0, 0.0
    area_c = d1 * d4 - d3 * d2
    if area_c <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        return d1 / (d1 - d3), 0.0
    cp = p - c
    d5 = kc.dot(ab, cp)
    d6 = kc.dot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return 0.0, 1.0
    area_b = d5 * d2 - d1 * d6
    if area_b <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        return 0.0, d2 / (d2 - d6)
    area_a = d3 * d6 - d5 * d4
    if area_a <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        wc = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return 1.0 - wc, wc
    scale = 1.0 / (area_a + area_b + area_c)
    return area_b * scale, area_c * scale


@kc.func
def ray_triangle(start: kc.vec3, d: kc.vec3, a: kc.vec3, b: kc.vec3, c: kc.vec3):
    """(hit, t, u, v, det): the watertight ray-triangle test of Woop, Benthin and Wald
    (JCGT 2013). The ray is sheared onto +z along its dominant axis, so a ray through a
    shared edge hits at least one of the two faces; `det` > 0 when it meets the front
    (counter-clockwise) side. The 2-d edge functions are evaluated in float64, where the
    products of float32 values are exact."""
    kz = 0
    if kc.abs(d[1]) > kc.abs(d[0]):
        kz = 1
    if kc.abs(d[2]) > kc.abs(d[kz]):
        kz = 2
    kx = (kz + 1) % 3
    ky = (kx + 1) % 3
    if d[kz] < 0.0:  # keep the winding: a mirrored axis order would flip det
        kx, ky = ky, kx
    sx = d[kx] / d[kz]
    sy = d[ky] / d[kz]
    sz = 1.0 / d[kz]
    pa = a - start
    pb = b - start
    pc = c - start
    ax = kc.float64(pa[kx] - sx * pa[kz])
    ay = kc.float64(pa[ky] - sy * pa[kz])
    bx = kc.float64(pb[kx] - sx * pb[kz])
    by = kc.float64(pb[ky] - sy * pb[kz])
    cx = kc.float64(pc[kx] - sx * pc[kz])
    cy = kc.float64(pc[ky] - sy * pc[kz])
    eu = kc.float32(cx * by - cy * bx)
    ev = kc.float32(ax * cy - ay * cx)
    ew = kc.float32(bx * ay - by * ax)
    if (eu < 0.0 or ev < 0.0 or ew < 0.0) and (eu > 0.0 or ev > 0.0 or ew > 0.0):
        return False, 0.0, 0.0, 0.0, 0.0
    det = eu + ev + ew
    if det == 0.0:
        return False, 0.0, 0.0, 0.0, 0.0
    scaled_t = eu * (sz * pa[kz]) + ev * (sz * pb[kz]) + ew * (sz * pc[kz])
    if (det > 0.0 and scaled_t < 0.0) or (det < 0.0 and scaled_t > 0.0):
        return False, 0.0, 0.0, 0.0, 0.0
    inv = 1.0 / det
    return True, scaled_t * inv, eu * inv, ev * inv, det


# ---- closest points -----------------------------------------------------------


@kc.func
def closest_face(mesh: kc.uint64, point: kc.vec3, max_dist: kc.float32):
    """(found, face, u, v): the non-sliver face closest to `point`, strictly closer than
    `max_dist`."""
    return closest_on_face(mesh, point, closest_face_index(mesh, point, max_dist))


@kc.func
def closest_on_face(mesh: kc.uint64, point: kc.vec3, face: kc.int32):
    """(found, face, u, v) for the face a closest-point search found (-1: none).

    The searches return only a face, and the point queries compute (u, v) from it in a
    separate call: a backward pass then replays the search once, at the caller's level, and
    differentiates one closest-point computation (a derived gradient of the search itself
    would replay its traversal loop for every step of it)."""
    if face < 0:
        return False, face, 0.0, 0.0
    a, b, c = face_points(mesh, face)
    v, w = closest_point_triangle(a, b, c, point)
    return True, face, 1.0 - v - w, v


@kc.func
def closest_face_index(mesh: kc.uint64, point: kc.vec3, max_dist: kc.float32) -> kc.int32:
    """The non-sliver face closest to `point`, strictly closer than `max_dist` (-1: none);
    the nearer child of every node is visited first."""
    bounds = _load_u64(mesh, bvh.DESCRIPTOR_BOUNDS // 8)
    info = _load_u64(mesh, bvh.DESCRIPTOR_INFO // 8)
    prims = _load_u64(mesh, bvh.DESCRIPTOR_PRIMS // 8)
    best = max_dist * max_dist
    face = -1
    stack = kc.zeros(shape=STACK_SIZE, dtype=kc.int32)
    # Each pushed node's box distance, computed when it was pushed: popped nodes are
    # tested against the best distance found since without reading their bounds again.
    stack_d = kc.zeros(shape=STACK_SIZE, dtype=kc.float32)
    count = 0
    if _load_i32(mesh, bvh.DESCRIPTOR_NUM_NODES // 4) > 0:
        count = 1
        stack_d[0] = bvh.box_distance_sq(point, bvh.node_lower(bounds, 0),
                                         bvh.node_upper(bounds, 0))
    while count > 0:
        count -= 1
        node = stack[count]
        if stack_d[count] > best:
            continue
        items = bvh.node_int(info, node, 1)
        if items > 0:
            first = bvh.node_int(info, node, 0)
            for slot in range(first, first + items):
                f = _load_i32(prims, slot)
                a, b, c = face_points(mesh, f)
                v, w = closest_point_triangle(a, b, c, point)
                u = 1.0 - v - w
                d2 = kc.length_sq(u * a + v * b + w * c - point)
                # Slivers are skipped; testing only faces that would be closer finds the
                # same face with fewer square roots and divisions.
                if d2 < best and not is_sliver(a, b, c):
                    best = d2
                    face = f
        else:
            left = node + 1
            right = bvh.node_int(info, node, 0)
            dl = bvh.box_distance_sq(point, bvh.node_lower(bounds, left),
                                     bvh.node_upper(bounds, left))
            dr = bvh.box_distance_sq(point, bvh.node_lower(bounds, right),
                                     bvh.node_upper(bounds, right))
            near = right
            far = left
            d_near = dr
            d_far = dl
            if dl < dr:
                near = left
                far = right
                d_near = dl
                d_far = dr
            if d_far < best:  # pushed first: popped after the nearer child
                stack[count] = far
                stack_d[count] = d_far
                count += 1
            if d_near < best:
                stack[count] = near
                stack_d[count] = d_near
                count += 1
    return face


# ---- rays ----------------------------------------------------------------------------------


@kc.func
def closest_hit(mesh: kc.uint64, start: kc.vec3, d: kc.vec3, max_t: kc.float32,
                root: kc.int32) -> MeshQueryRay:
    """The first face the ray `start + t d` meets with 0 <= t < max_t."""
    return hit_on_face(mesh, start, d, max_t, root, first_hit_face(mesh, start, d, max_t, root))


@kc.func
def hit_on_face(mesh: kc.uint64, start: kc.vec3, d: kc.vec3, max_t: kc.float32,
                root: kc.int32, face: kc.int32) -> MeshQueryRay:
    """The hit of the ray on the face `first_hit_face` found (-1: none; `max_t` and `root`
    were the search's). A separate call for the reason given at `closest_on_face`."""
    hit = MeshQueryRay()
    if face >= 0:
        a, b, c = face_points(mesh, face)
        found, t, u, v, det = ray_triangle(start, d, a, b, c)
        hit.result = True
        hit.face = face
        hit.t = t
        hit.u = u
        hit.v = v
        hit.sign = det
        hit.normal = kc.normalize(kc.cross(b - a, c - a))
    return hit


@kc.func
def first_hit_face(mesh: kc.uint64, start: kc.vec3, d: kc.vec3, max_t: kc.float32,
                    root: kc.int32) -> kc.int32:
    """The first face the ray meets with 0 <= t < max_t (-1: none); the nearer child of
    every node is entered first, and postponed nodes that start beyond the best hit so far
    are dropped when popped."""
    bounds = _load_u64(mesh, bvh.DESCRIPTOR_BOUNDS // 8)
    info = _load_u64(mesh, bvh.DESCRIPTOR_INFO // 8)
    prims = _load_u64(mesh, bvh.DESCRIPTOR_PRIMS // 8)
    face = -1
    best = max_t
    inv = bvh.safe_inverse(d)
    stack = kc.zeros(shape=STACK_SIZE, dtype=kc.int32)
    stack_t = kc.zeros(shape=STACK_SIZE, dtype=kc.float32)
    count = 0
    node = 0
    active = False
    if _load_i32(mesh, bvh.DESCRIPTOR_NUM_NODES // 4) > 0:
        node = bvh.root_node(mesh, root)
        inside, t_root = bvh.ray_box(start, d, inv, bvh.node_lower(bounds, node),
                                     bvh.node_upper(bounds, node))
        active = inside and t_root < best
    while active:
        items = bvh.node_int(info, node, 1)
        if items > 0:
            first = bvh.node_int(info, node, 0)
            for slot in range(first, first + items):
                f = _load_i32(prims, slot)
                a, b, c = face_points(mesh, f)
                found, t, u, v, det = ray_triangle(start, d, a, b, c)
                if found and t < best and t >= 0.0:
                    best = t
                    face = f
        else:
            left = node + 1
            right = bvh.node_int(info, node, 0)
            h0, t0 = bvh.ray_box(start, d, inv, bvh.node_lower(bounds, left),
                                 bvh.node_upper(bounds, left))
            h1, t1 = bvh.ray_box(start, d, inv, bvh.node_lower(bounds, right),
                                 bvh.node_upper(bounds, right))
            h0 = h0 and t0 < best
            h1 = h1 and t1 < best
            if h0 and h1:
                if t0 < t1:
                    stack[count] = right
                    stack_t[count] = t1
                    node = left
                else:
                    stack[count] = left
                    stack_t[count] = t0
                    node = right
                count += 1
                continue
            if h0:
                node = left
                continue
            if h1:
                node = right
                continue
        active = False
        while count > 0:
            count -= 1
            if stack_t[count] < best:
                node = stack[count]
                active = True
                break
    return face


@kc.func
def any_hit(mesh: kc.uint64, start: kc.vec3, d: kc.vec3, max_t: kc.float32,
            root: kc.int32) -> bool:
    """Whether any face meets the ray with 0 <= t < max_t (stops at the first found)."""
    bounds = _load_u64(mesh, bvh.DESCRIPTOR_BOUNDS // 8)
    info = _load_u64(mesh, bvh.DESCRIPTOR_INFO // 8)
    prims = _load_u64(mesh, bvh.DESCRIPTOR_PRIMS // 8)
    inv = bvh.safe_inverse(d)
    node = 0
    end = 0
    if _load_i32(mesh, bvh.DESCRIPTOR_NUM_NODES // 4) > 0:
        node = bvh.root_node(mesh, root)
        end = bvh.node_int(info, node, 2)
    while node < end:
        skip = bvh.node_int(info, node, 2)
        inside, t_box = bvh.ray_box(start, d, inv, bvh.node_lower(bounds, node),
                                    bvh.node_upper(bounds, node))
        if not (inside and t_box < max_t):
            node = skip
            continue
        items = bvh.node_int(info, node, 1)
        if items == 0:
            node += 1
            continue
        first = bvh.node_int(info, node, 0)
        for slot in range(first, first + items):
            a, b, c = face_points(mesh, _load_i32(prims, slot))
            found, t, u, v, det = ray_triangle(start, d, a, b, c)
            if found and t >= 0.0 and t < max_t:
                return True
        node = skip
    return False


@kc.func
def count_hits(mesh: kc.uint64, start: kc.vec3, d: kc.vec3, root: kc.int32) -> kc.int32:
    """The number of faces the ray meets with t >= 0."""
    bounds = _load_u64(mesh, bvh.DESCRIPTOR_BOUNDS // 8)
    info = _load_u64(mesh, bvh.DESCRIPTOR_INFO // 8)
    prims = _load_u64(mesh, bvh.DESCRIPTOR_PRIMS // 8)
    inv = bvh.safe_inverse(d)
    total = 0
    node = 0
    end = 0
    if _load_i32(mesh, bvh.DESCRIPTOR_NUM_NODES // 4) > 0:
        node = bvh.root_node(mesh, root)
        end = bvh.node_int(info, node, 2)
    while node < end:
        skip = bvh.node_int(info, node, 2)
        inside, t_box = bvh.ray_box(start, d, inv, bvh.node_lower(bounds, node),
                                    bvh.node_upper(bounds, node))
        if not inside:
            node = skip
            continue
        items = bvh.node_int(info, node, 1)
        if items == 0:
            node += 1
            continue
        first = bvh.node_int(info, node, 0)
        for slot in range(first, first + items):
            a, b, c = face_points(mesh, _load_i32(prims, slot))
            found, t, u, v, det = ray_triangle(start, d, a, b, c)
            if found and t >= 0.0:
                total += 1
        node = skip
    return total


# ---- AABB and sphere iterators -------------------------------------------------------------


@kc.func
def mesh_aabb_query(mesh: kc.uint64, low: kc.vec3, high: kc.vec3) -> MeshQueryAABB:
    q = MeshQueryAABB()
    q.bvh = bvh.bvh_aabb_query(mesh, low, high, -1)
    q.points = _load_u64(mesh, DESCRIPTOR_POINTS // 8)
    q.indices = _load_u64(mesh, DESCRIPTOR_INDICES // 8)
    q.sphere = False
    q.face = -1
    return q


@kc.func
def mesh_sphere_query(mesh: kc.uint64, center: kc.vec3, radius: kc.float32) -> MeshQueryAABB:
    q = mesh_aabb_query(mesh, center, center)
    q.bvh = bvh.bvh_sphere_query(mesh, center, radius, -1)
    q.sphere = True
    return q


@kc.func
def _touches_sphere(q: MeshQueryAABB, face: kc.int32) -> bool:
    a = bvh.load_vec3(q.points, _load_i32(q.indices, 3 * face))
    b = bvh.load_vec3(q.points, _load_i32(q.indices, 3 * face + 1))
    c = bvh.load_vec3(q.points, _load_i32(q.indices, 3 * face + 2))
    center = q.bvh.lower
    closest = a
    ab = b - a
    ac = c - a
    n = kc.cross(ab, ac)
    if kc.dot(n, n) == 0.0:
        # A degenerate face is a segment (its longest edge) or a point.
        bc = c - b
        lab = kc.dot(ab, ab)
        lac = kc.dot(ac, ac)
        lbc = kc.dot(bc, bc)
        p = a
        e = ab
        le = lab
        if lac > le:
            e = ac
            le = lac
        if lbc > le:
            p = b
            e = bc
            le = lbc
        s = 0.0
        if le > 0.0:
            s = kc.clamp(kc.dot(center - p, e) / le, 0.0, 1.0)
        closest = p + s * e
    else:
        v, w = closest_point_triangle(a, b, c, center)
        closest = a * (1.0 - v - w) + b * v + c * w
    return kc.length_sq(closest - center) <= q.bvh.radius_sq


@kc.func
def mesh_query_step(query: MeshQueryAABB, index: kc.int32):
    """(found, advanced query, next face): faces whose box overlaps the query box, or (a
    sphere query) faces within the radius of the centre."""
    q = query  # a local copy, see bvh_lang.bvh_query_step
    while True:
        found, inner, face = bvh.bvh_query_step(q.bvh, index, FLT_MAX)
        q.bvh = inner
        if not found:
            return False, q, index
        if not q.sphere or _touches_sphere(q, face):
            q.face = face
            return True, q, face
    return False, q, index


# ---- refit ---------------------------------------------------------------------------------


@kc.kernel
def refit_face_leaves(leaves: kc.array(dtype=kc.int32), info: kc.array(dtype=kc.int32),
                      prims: kc.array(dtype=kc.int32), points: kc.array(dtype=kc.vec3),
                      indices: kc.array(dtype=kc.int32), face_lowers: kc.array(dtype=kc.vec3),
                      face_uppers: kc.array(dtype=kc.vec3), bounds: kc.array(dtype=kc.float32)):
    # Each leaf's faces: their boxes (the items of the mesh's BVH), the leaf's box, and the
    # sum of their edge lengths (summed up the tree: the root's sum gives the average edge
    # length that `mesh_query_point_sign_normal` scales its epsilon by).
    node = leaves[kc.tid()]
    first = info[node * NODE_INTS]
    count = info[node * NODE_INTS + 1]
    lo = kc.vec3(FLT_MAX, FLT_MAX, FLT_MAX)
    hi = kc.vec3(-FLT_MAX, -FLT_MAX, -FLT_MAX)
    edges = 0.0
    for slot in range(first, first + count):
        face = prims[slot]
        a = points[indices[3 * face]]
        b = points[indices[3 * face + 1]]
        c = points[indices[3 * face + 2]]
        face_lo = kc.min(a, kc.min(b, c))
        face_hi = kc.max(a, kc.max(b, c))
        face_lowers[face] = face_lo
        face_uppers[face] = face_hi
        lo = kc.min(lo, face_lo)
        hi = kc.max(hi, face_hi)
        edges += kc.length(a - b) + kc.length(a - c) + kc.length(c - b)
    base = node * NODE_FLOATS
    for k in range(3):
        bounds[base + k] = lo[k]
        bounds[base + 3 + k] = hi[k]
    bounds[base + 6] = edges


refit_face_leaves.is_builtin = True
