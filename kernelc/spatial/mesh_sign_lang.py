"""Point queries of a mesh (closest and furthest points, inside/outside signs), in kernelc's
language.

Four ways to tell inside from outside, as in Warp:
- three rays (`mesh_query_point`): rays along +x, +y and +z; the point is inside when at
  least two of them first meet a face from behind;
- parity (`mesh_query_point_sign_parity`): `n_sample` rays along (1, 1, 1) perturbed with
  Warp's random stream (seed 42); inside when at least half cross an odd number of faces;
- the angle-weighted pseudo-normal (`mesh_query_point_sign_normal`) of the closest feature:
  a second pass gathers every face within epsilon of the closest distance and weights its
  normal by its angle at the shared vertex (or by pi on an edge, 2 pi inside a face);
- the winding number (`mesh_query_point_sign_winding_number`, Barill et al. 2018): exact solid
  angles of near faces plus a second-order dipole expansion of far subtrees, whose moments
  the kernels at the end of this file compute, one launch per tree level.
"""

from __future__ import annotations

import kernelc as kc
from kernelc.builtins import BUILTINS
from kernelc.spatial import bvh_lang as bvh
from kernelc.spatial import mesh_lang as mesh
from kernelc.spatial.bvh_lang import NODE_INTS, STACK_SIZE
from kernelc.spatial.mesh_lang import MeshQueryPoint

# Per node: area-weighted centroid P (3), area (1), area-weighted normal sum N (3), radius of
# a ball around P holding the node's vertices (1), second moment M[i][j] = sum area n_i
# (centroid - P)_j (9), pad (3).
WINDING_FLOATS = 20
_P, _AREA, _N, _RADIUS, _M = 0, 3, 4, 7, 8

PI = 3.14159265358979
_INV_4PI = 0.0795774715459477

_load_i32 = BUILTINS["_load_int32"]
_load_u64 = BUILTINS["_load_uint64"]
_load_f32 = BUILTINS["_load_float32"]


# ---- three rays, parity --------------------------------------------------------------------


@kc.func
def _ray_votes_inside(m: kc.uint64, p: kc.vec3, d: kc.vec3) -> kc.int32:
    hit = mesh.closest_hit(m, p, d, bvh.FLT_MAX, -1)
    if hit.result and hit.sign < 0.0:
        return 1
    return 0


@kc.func
def inside_three_rays(m: kc.uint64, p: kc.vec3) -> kc.float32:
    # Each ray is cast with a constant direction, so its slab and shear setup folds away,
    # and the z ray is cast only when the x and y rays disagree: two votes either way
    # already decide the majority.
    votes = _ray_votes_inside(m, p, kc.vec3(1.0, 0.0, 0.0))
    votes += _ray_votes_inside(m, p, kc.vec3(0.0, 1.0, 0.0))
    if votes == 1:
        votes += _ray_votes_inside(m, p, kc.vec3(0.0, 0.0, 1.0))
    if votes >= 2:
        return -1.0
    return 1.0


@kc.func
def inside_parity(m: kc.uint64, p: kc.vec3, n_sample: kc.int32,
                  perturbation_scale: kc.float32) -> kc.float32:
    state = kc.rand_init(42)
    votes = 0
    s = perturbation_scale
    for _sample in range(n_sample):
        d = kc.vec3(0.0, 0.0, 0.0)
        while True:
            x = kc.randf(state, -s, s)
            y = kc.randf(state, -s, s)
            z = kc.randf(state, -s, s)
            d = kc.vec3(1.0 + x, 1.0 + y, 1.0 + z)
            if kc.length_sq(d) >= 1.0e-8:
                break
        if mesh.count_hits(m, p, d, -1) % 2 == 1:
            votes += 1
    if votes * 2 >= n_sample:
        return -1.0
    return 1.0


# ---- pseudo-normal -------------------------------------------------------------------------


@kc.func
def _angle(a: kc.vec3, b: kc.vec3) -> kc.float32:
    return kc.acos(kc.clamp(kc.dot(kc.normalize(a), kc.normalize(b)), -1.0, 1.0))


@kc.func
def _near_line(offset: kc.vec3, edge: kc.vec3, eps_sq: kc.float32) -> bool:
    # squared distance of a point (at `offset` from the line's origin) to the line < eps^2
    e2 = kc.dot(edge, edge)
    along = kc.dot(edge, offset)
    return kc.dot(offset, offset) * e2 - along * along < eps_sq * e2


@kc.func
def _feature_weight(a: kc.vec3, b: kc.vec3, c: kc.vec3, x: kc.vec3,
                    eps_sq: kc.float32) -> kc.float32:
    """The angle the face spans at the feature of it nearest to x: its angle at a vertex,
    pi on an edge, 2 pi inside."""
    e0 = b - a
    e1 = c - a
    e2 = c - b
    if kc.length_sq(x - a) < eps_sq:
        return _angle(e0, e1)
    if kc.length_sq(x - b) < eps_sq:
        return _angle(e2, -e0)
    if kc.length_sq(x - c) < eps_sq:
        return _angle(-e1, -e2)
    if _near_line(x - a, e0, eps_sq) or _near_line(x - b, e2, eps_sq) or _near_line(
            x - a, e1, eps_sq):
        return PI
    return 2.0 * PI


@kc.func
def pseudo_normal_sign(m: kc.uint64, point: kc.vec3, closest: kc.vec3,
                       epsilon: kc.float32) -> kc.float32:
    """-1 (inside) or 1 from the angle-weighted normals of all faces within
    epsilon * (average edge length) of the closest distance."""
    bounds = _load_u64(m, bvh.DESCRIPTOR_BOUNDS // 8)
    info = _load_u64(m, bvh.DESCRIPTOR_INFO // 8)
    prims = _load_u64(m, bvh.DESCRIPTOR_PRIMS // 8)
    num_tris = _load_i32(m, mesh.DESCRIPTOR_NUM_TRIS // 4)
    eps = _load_f32(bounds, 6) / kc.float32(3 * num_tris) * epsilon  # the root's edge sum
    limit = kc.length(closest - point) + eps
    normal = kc.vec3(0.0, 0.0, 0.0)
    node = 0
    end = _load_i32(m, bvh.DESCRIPTOR_NUM_NODES // 4)
    while node < end:
        skip = bvh.node_int(info, node, 2)
        if bvh.box_distance_sq(point, bvh.node_lower(bounds, node),
                               bvh.node_upper(bounds, node)) > limit * limit:
            node = skip
            continue
        items = bvh.node_int(info, node, 1)
        if items == 0:
            node += 1
            continue
        first = bvh.node_int(info, node, 0)
        for slot in range(first, first + items):
            a, b, c = mesh.face_points(m, _load_i32(prims, slot))
            if mesh.is_sliver(a, b, c):
                continue
            v, w = mesh.closest_point_triangle(a, b, c, point)
            x = (1.0 - v - w) * a + v * b + w * c
            if kc.length(x - point) <= limit:
                weight = _feature_weight(a, b, c, x, eps * eps)
                normal += weight * kc.normalize(kc.cross(b - a, c - a))
        node = skip
    if kc.dot(normal, point - closest) > 0.0:
        return 1.0
    return -1.0


# ---- winding number ------------------------------------------------------------------------


@kc.func
def _props_vec3(props: kc.uint64, node: kc.int32, field: kc.int32) -> kc.vec3:
    base = node * WINDING_FLOATS + field
    return kc.vec3(_load_f32(props, base), _load_f32(props, base + 1),
                   _load_f32(props, base + 2))


@kc.func
def _solid_angle(a: kc.vec3, b: kc.vec3, c: kc.vec3, p: kc.vec3) -> kc.float32:
    # Van Oosterom and Strackee: tan(omega / 2) = det[a b c] / (|a||b||c| + ...)
    pa = a - p
    pb = b - p
    pc = c - p
    la = kc.length(pa)
    lb = kc.length(pb)
    lc = kc.length(pc)
    num = kc.dot(pa, kc.cross(pb, pc))
    den = la * lb * lc + kc.dot(pa, pb) * lc + kc.dot(pa, pc) * lb + kc.dot(pb, pc) * la
    return 2.0 * kc.atan2(num, den)


@kc.func
def _far_solid_angle(props: kc.uint64, node: kc.int32, d: kc.vec3,
                     dist_sq: kc.float32) -> kc.float32:
    # The subtree's faces seen from far away, to second order in (centroid - P):
    # N.d / r^3 + (trace M - 3 d^T M d / r^2) / r^3, with d the vector from the query to P.
    inv_r = 1.0 / kc.sqrt(dist_sq)
    dn = d * inv_r
    base = node * WINDING_FLOATS + _M
    trace = 0.0
    quad = 0.0
    for i in range(3):
        trace += _load_f32(props, base + 4 * i)
        for j in range(3):
            quad += dn[i] * _load_f32(props, base + 3 * i + j) * dn[j]
    n = _props_vec3(props, node, _N)
    return (kc.dot(n, dn) + (trace - 3.0 * quad) * inv_r) * inv_r * inv_r


@kc.func
def winding_number(m: kc.uint64, p: kc.vec3, accuracy: kc.float32) -> kc.float32:
    """The generalised winding number of the mesh at p (1 inside a closed, outward-facing
    mesh, 0 outside). Subtrees farther than `accuracy` times their radius are expanded."""
    info = _load_u64(m, bvh.DESCRIPTOR_INFO // 8)
    prims = _load_u64(m, bvh.DESCRIPTOR_PRIMS // 8)
    props = _load_u64(m, mesh.DESCRIPTOR_WINDING // 8)
    total = 0.0
    node = 0
    end = _load_i32(m, bvh.DESCRIPTOR_NUM_NODES // 4)
    while node < end:
        skip = bvh.node_int(info, node, 2)
        items = bvh.node_int(info, node, 1)
        if items == 0:
            d = _props_vec3(props, node, _P) - p
            dist_sq = kc.length_sq(d)
            radius = _load_f32(props, node * WINDING_FLOATS + _RADIUS) * accuracy
            if dist_sq > radius * radius:
                total += _far_solid_angle(props, node, d, dist_sq)
                node = skip
            else:
                node += 1
            continue
        first = bvh.node_int(info, node, 0)
        for slot in range(first, first + items):
            a, b, c = mesh.face_points(m, _load_i32(prims, slot))
            total += _solid_angle(a, b, c, p)
        node = skip
    return total * _INV_4PI


# ---- furthest points ------------------------------------------------------------------


@kc.func
def furthest_point_triangle(a: kc.vec3, b: kc.vec3, c: kc.vec3, p: kc.vec3):
    """(weight of b, weight of c) of the vertex of abc furthest from p; on ties the later
    vertex wins, as in Warp."""
    da = kc.length_sq(p - a)
    db = kc.length_sq(p - b)
    dc = kc.length_sq(p - c)
    if da > db and da > dc:
        return 0.0, 0.0
    if db > dc:
        return 1.0, 0.0
    return 0.0, 1.0


@kc.func
def _furthest_box_distance_sq(p: kc.vec3, lo: kc.vec3, hi: kc.vec3) -> kc.float32:
    dx = kc.max(kc.abs(p[0] - lo[0]), kc.abs(p[0] - hi[0]))
    dy = kc.max(kc.abs(p[1] - lo[1]), kc.abs(p[1] - hi[1]))
    dz = kc.max(kc.abs(p[2] - lo[2]), kc.abs(p[2] - hi[2]))
    return dx * dx + dy * dy + dz * dz


@kc.func
def furthest_on_face(m: kc.uint64, point: kc.vec3, face: kc.int32):
    """(found, face, u, v) for the face `furthest_face_index` found (-1: none); see
    `mesh_lang.closest_on_face` for why this is a call of its own."""
    if face < 0:
        return False, face, 0.0, 0.0
    a, b, c = mesh.face_points(m, face)
    v, w = furthest_point_triangle(a, b, c, point)
    return True, face, 1.0 - v - w, v


@kc.func
def furthest_face_index(m: kc.uint64, point: kc.vec3, min_dist: kc.float32) -> kc.int32:
    """The non-sliver face with the point furthest from `point`, strictly further than
    `min_dist` (-1: none); the further child of every node is visited first."""
    bounds = _load_u64(m, bvh.DESCRIPTOR_BOUNDS // 8)
    info = _load_u64(m, bvh.DESCRIPTOR_INFO // 8)
    prims = _load_u64(m, bvh.DESCRIPTOR_PRIMS // 8)
    best = min_dist * min_dist
    face = -1
    stack = kc.zeros(shape=STACK_SIZE, dtype=kc.int32)
    count = 0
    if _load_i32(m, bvh.DESCRIPTOR_NUM_NODES // 4) > 0:
        count = 1
    while count > 0:
        count -= 1
        node = stack[count]
        if _furthest_box_distance_sq(point, bvh.node_lower(bounds, node),
                                     bvh.node_upper(bounds, node)) < best:
            continue
        items = bvh.node_int(info, node, 1)
        if items > 0:
            first = bvh.node_int(info, node, 0)
            for slot in range(first, first + items):
                f = _load_i32(prims, slot)
                a, b, c = mesh.face_points(m, f)
                if mesh.is_sliver(a, b, c):
                    continue
                v, w = furthest_point_triangle(a, b, c, point)
                u = 1.0 - v - w
                d2 = kc.length_sq(u * a + v * b + w * c - point)
                if d2 > best:
                    best = d2
                    face = f
        else:
            left = node + 1
            right = bvh.node_int(info, node, 0)
            dl = _furthest_box_distance_sq(point, bvh.node_lower(bounds, left),
                                           bvh.node_upper(bounds, left))
            dr = _furthest_box_distance_sq(point, bvh.node_lower(bounds, right),
                                           bvh.node_upper(bounds, right))
            first_node = left
            second = right
            d_first = dl
            d_second = dr
            if dl > dr:
                first_node = right
                second = left
                d_first = dr
                d_second = dl
            if d_first > best:
                stack[count] = first_node
                count += 1
            if d_second > best:
                stack[count] = second
                count += 1
    return face


# ---- point queries -------------------------------------------------------------------------


# Each point query takes the face its search found (`mesh_lang.closest_face_index` or
# `furthest_face_index`, called first by the query's special form) as its last argument.


@kc.func
def _closest(m: kc.uint64, point: kc.vec3, face: kc.int32) -> MeshQueryPoint:
    r = MeshQueryPoint()
    found, face, u, v = mesh.closest_on_face(m, point, face)
    if found:
        r.result = True
        r.face = face
        r.u = u
        r.v = v
    return r


@kc.func
def query_point_no_sign(m: kc.uint64, point: kc.vec3, max_dist: kc.float32,
                        face: kc.int32) -> MeshQueryPoint:
    return _closest(m, point, face)


@kc.func
def query_furthest_point_no_sign(m: kc.uint64, point: kc.vec3, min_dist: kc.float32,
                                 face: kc.int32) -> MeshQueryPoint:
    r = MeshQueryPoint()
    found, face, u, v = furthest_on_face(m, point, face)
    if found:
        r.result = True
        r.face = face
        r.u = u
        r.v = v
    return r


@kc.func
def query_point(m: kc.uint64, point: kc.vec3, max_dist: kc.float32,
                face: kc.int32) -> MeshQueryPoint:
    r = _closest(m, point, face)
    if r.result:
        r.sign = inside_three_rays(m, point)
    return r


@kc.func
def query_point_sign_parity(m: kc.uint64, point: kc.vec3, max_dist: kc.float32,
                            n_sample: kc.int32, perturbation_scale: kc.float32,
                            face: kc.int32) -> MeshQueryPoint:
    r = _closest(m, point, face)
    if r.result:
        r.sign = inside_parity(m, point, n_sample, perturbation_scale)
    return r


@kc.func
def query_point_sign_normal(m: kc.uint64, point: kc.vec3, max_dist: kc.float32,
                            epsilon: kc.float32, face: kc.int32) -> MeshQueryPoint:
    r = _closest(m, point, face)
    if r.result:
        closest = mesh.eval_position(m, r.face, r.u, r.v)
        r.sign = pseudo_normal_sign(m, point, closest, epsilon)
    return r


@kc.func
def query_point_sign_winding_number(m: kc.uint64, point: kc.vec3, max_dist: kc.float32,
                                    accuracy: kc.float32, threshold: kc.float32,
                                    face: kc.int32) -> MeshQueryPoint:
    r = _closest(m, point, face)
    if r.result:
        if _load_u64(m, mesh.DESCRIPTOR_WINDING // 8) == kc.uint64(0):
            r.sign = inside_three_rays(m, point)  # built without support: Warp's fallback
        elif winding_number(m, point, accuracy) > threshold:
            r.sign = -1.0
        else:
            r.sign = 1.0
    return r


# ---- winding-number moments ----------------------------------------------------------------


@kc.func
def _store_props(props: kc.array(dtype=kc.float32), node: kc.int32, p: kc.vec3,
                 area: kc.float32, n: kc.vec3, radius: kc.float32, m: kc.mat33):
    base = node * WINDING_FLOATS
    for i in range(3):
        props[base + _P + i] = p[i]
        props[base + _N + i] = n[i]
        for j in range(3):
            props[base + _M + 3 * i + j] = m[i, j]
    props[base + _AREA] = area
    props[base + _RADIUS] = radius


@kc.kernel
def winding_leaves(leaves: kc.array(dtype=kc.int32), info: kc.array(dtype=kc.int32),
                   prims: kc.array(dtype=kc.int32), points: kc.array(dtype=kc.vec3),
                   indices: kc.array(dtype=kc.int32), props: kc.array(dtype=kc.float32)):
    node = leaves[kc.tid()]
    first = info[node * NODE_INTS]
    count = info[node * NODE_INTS + 1]
    area = 0.0
    weighted = kc.vec3(0.0, 0.0, 0.0)
    centroids = kc.vec3(0.0, 0.0, 0.0)
    n = kc.vec3(0.0, 0.0, 0.0)
    for slot in range(first, first + count):
        face = prims[slot]
        a = points[indices[3 * face]]
        b = points[indices[3 * face + 1]]
        c = points[indices[3 * face + 2]]
        half = 0.5 * kc.cross(b - a, c - a)
        centroid = (a + b + c) / 3.0
        area += kc.length(half)
        weighted += kc.length(half) * centroid
        centroids += centroid
        n += half
    p = centroids / kc.float32(count)
    if area > 0.0:
        p = weighted / area
    m = kc.mat33(0.0)
    radius_sq = 0.0
    for slot in range(first, first + count):
        face = prims[slot]
        a = points[indices[3 * face]]
        b = points[indices[3 * face + 1]]
        c = points[indices[3 * face + 2]]
        m += kc.outer(0.5 * kc.cross(b - a, c - a), (a + b + c) / 3.0 - p)
        radius_sq = kc.max(radius_sq, kc.max(kc.length_sq(a - p),
                                             kc.max(kc.length_sq(b - p), kc.length_sq(c - p))))
    _store_props(props, node, p, area, n, kc.sqrt(radius_sq), m)


@kc.func
def _load_props(props: kc.array(dtype=kc.float32), node: kc.int32):
    base = node * WINDING_FLOATS
    p = kc.vec3(props[base + _P], props[base + _P + 1], props[base + _P + 2])
    n = kc.vec3(props[base + _N], props[base + _N + 1], props[base + _N + 2])
    m = kc.mat33(0.0)
    for i in range(3):
        for j in range(3):
            m[i, j] = props[base + _M + 3 * i + j]
    return p, props[base + _AREA], n, props[base + _RADIUS], m


@kc.kernel
def winding_inner(nodes: kc.array(dtype=kc.int32), offset: kc.int32,
                  info: kc.array(dtype=kc.int32), props: kc.array(dtype=kc.float32)):
    # Moments about the parent's centroid: M = M_l + N_l (P_l - P)^T + M_r + N_r (P_r - P)^T.
    node = nodes[offset + kc.tid()]
    pl, al, nl, rl, ml = _load_props(props, node + 1)
    pr, ar, nr, rr, mr = _load_props(props, info[node * NODE_INTS])
    area = al + ar
    p = 0.5 * (pl + pr)
    if area > 0.0:
        p = (al * pl + ar * pr) / area
    m = ml + kc.outer(nl, pl - p) + mr + kc.outer(nr, pr - p)
    radius = kc.max(kc.length(pl - p) + rl, kc.length(pr - p) + rr)
    _store_props(props, node, p, area, nl + nr, radius, m)


for _kernel in (winding_leaves, winding_inner):
    _kernel.is_builtin = True
