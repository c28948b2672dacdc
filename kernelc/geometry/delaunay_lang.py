"""The kernels and funcs of the Delaunay tools, in kernelc's language.

Triangle `t` has three local edges: edge `j` joins its local vertices `(j + 1) % 3` and
`(j + 2) % 3` (it lies opposite vertex `j`), and half-edge `3 * t + j` names it.

Adjacency (`tri_tri_adjacency`): `half_edge_keys` keys each half-edge by its lower
endpoint, a stable radix sort groups them by that key (half-edges of one key stay in
half-edge order), and `pair_half_edges` walks each group and pairs the half-edges of each
undirected edge in that order: the first with the second, the third with the fourth, and
so on; a half-edge left over is a boundary edge (-1). That is Warp's pairing on the CPU
(where it runs one thread at a time), and here it holds on every device and thread count.

Flips (`delaunay_edge_flip`) run in passes of three kernels. `stake_flip_claims`: every
interior edge, seen from its lower-numbered triangle, that fails the in-circle test and
whose flip keeps both new triangles counter-clockwise claims the four triangles its flip
reads or writes (its two triangles and their two neighbours that change hands), with an
`atomic_max` of a priority unique to the edge. `apply_won_flips`: an edge that won all
four claims flips; the winners touch disjoint triangles, so the result does not depend on
the order in which threads run. `record_pass` adds up and decides whether to go on.
The priorities (the bit-reversed half-edge number plus one) and the float32 predicates,
operation for operation, are Warp's, so that the same edges flip as in Warp.
"""

from __future__ import annotations

import kernelc as kc


@kc.func
def signed_area(a: kc.vec2, b: kc.vec2, c: kc.vec2) -> float:
    """The signed area of triangle `abc`: positive when it turns counter-clockwise."""
    ab = b - a
    ac = c - a
    return 0.5 * (ab[0] * ac[1] - ab[1] * ac[0])


@kc.func
def in_circle_det(a: kc.vec2, b: kc.vec2, c: kc.vec2, d: kc.vec2) -> float:
    """The in-circle determinant of `d` against counter-clockwise triangle `abc`:
    positive inside the circumcircle, zero on it, negative outside (float32, not exact).

    The rows of the 3x3 determinant are each corner relative to `d`, lifted onto the
    paraboloid (x, y, x^2 + y^2); it is expanded along its first row.
    """
    u = a - d
    v = b - d
    w = c - d
    lift_u = kc.dot(u, u)
    lift_v = kc.dot(v, v)
    lift_w = kc.dot(w, w)
    minor_x = v[1] * lift_w - w[1] * lift_v
    minor_y = v[0] * lift_w - w[0] * lift_v
    minor_lift = v[0] * w[1] - v[1] * w[0]
    return u[0] * minor_x - u[1] * minor_y + lift_u * minor_lift


@kc.func
def in_circle(a: kc.vec2, b: kc.vec2, c: kc.vec2, d: kc.vec2) -> bool:
    """Whether `d` lies strictly inside the circumcircle of counter-clockwise `abc`."""
    return in_circle_det(a, b, c, d) > 0.0


@kc.func
def find_triangle_neighbor_edge_index(triangle_neighbors: kc.array2d(dtype=kc.int32),
                                      triangle: kc.int32, neighbor: kc.int32) -> kc.int32:
    """The local edge of `triangle` that it shares with `neighbor` (Warp's kernel API).

    Called with the two triangles swapped, it gives the entry of `neighbor_edge_indices`
    that `tri_tri_adjacency` would have returned, without keeping that array.

    Args:
        triangle_neighbors (array2d): The `(num_tris, 3)` `int32` adjacency of `tri_tri_adjacency`.
        triangle (int32): The triangle whose edges are searched.
        neighbor (int32): The triangle looked for among its neighbours.

    Returns:
        The first local edge `j` (0, 1 or 2) with `triangle_neighbors[triangle, j] ==
        neighbor`, or -1 when the two triangles are not adjacent.
    """
    for j in range(3):
        if triangle_neighbors[triangle, j] == neighbor:
            return j
    return -1


# ---- adjacency ---------------------------------------------------------------------------


@kc.func
def upper_endpoint(tri: kc.array2d(dtype=kc.int32), half_edge: int) -> int:
    t = half_edge // 3
    j = half_edge % 3
    return kc.max(tri[t, (j + 1) % 3], tri[t, (j + 2) % 3])


@kc.kernel(enable_backward=False)
def max_vertex_index(tri: kc.array2d(dtype=kc.int32), result: kc.array(dtype=kc.int32)):
    t = kc.tid()
    for j in range(3):
        kc.atomic_max(result, 0, tri[t, j])


@kc.kernel(enable_backward=False)
def half_edge_keys(tri: kc.array2d(dtype=kc.int32), vertex_count: int,
                   keys: kc.array(dtype=kc.int32), half_edges: kc.array(dtype=kc.int32)):
    # An edge with an endpoint outside [0, vertex_count) gets the key vertex_count, which
    # sorts after every real vertex and is never paired: such edges stay boundary edges.
    t = kc.tid()
    for j in range(3):
        v1 = tri[t, (j + 1) % 3]
        v2 = tri[t, (j + 2) % 3]
        lower = kc.min(v1, v2)
        key = lower
        if lower < 0 or kc.max(v1, v2) >= vertex_count:
            key = vertex_count
        keys[3 * t + j] = key
        half_edges[3 * t + j] = 3 * t + j


@kc.kernel(enable_backward=False)
def pair_half_edges(tri: kc.array2d(dtype=kc.int32), keys: kc.array(dtype=kc.int32),
                    half_edges: kc.array(dtype=kc.int32), count: int, vertex_count: int,
                    with_edge_indices: int, triangle_neighbors: kc.array2d(dtype=kc.int32),
                    neighbor_edge_indices: kc.array2d(dtype=kc.int32)):
    # The thread at the start of each key's group pairs the whole group, so the groups
    # are independent; a paired half-edge is marked -1 in the (scratch) sorted array.
    i = kc.tid()
    lower = keys[i]
    if lower >= vertex_count or (i > 0 and keys[i - 1] == lower):
        return
    end = i + 1
    while end < count and keys[end] == lower:
        end += 1
    for a in range(i, end):
        half_a = half_edges[a]
        if half_a < 0:
            continue
        upper = upper_endpoint(tri, half_a)
        for b in range(a + 1, end):
            half_b = half_edges[b]
            if half_b >= 0 and upper_endpoint(tri, half_b) == upper:
                triangle_neighbors[half_a // 3, half_a % 3] = half_b // 3
                triangle_neighbors[half_b // 3, half_b % 3] = half_a // 3
                if with_edge_indices != 0:
                    neighbor_edge_indices[half_a // 3, half_a % 3] = half_b % 3
                    neighbor_edge_indices[half_b // 3, half_b % 3] = half_a % 3
                half_edges[b] = -1
                break


# ---- flips -------------------------------------------------------------------------------


@kc.func
def swap_bit_groups(x: kc.uint32, shift: kc.uint32, mask: kc.uint32) -> kc.uint32:
    # Swap each group of `shift` bits selected by `mask` with the group above it.
    return ((x & mask) << shift) | ((x >> shift) & mask)


@kc.func
def reverse_bits(x: kc.uint32) -> kc.uint32:
    # Swap ever larger groups: bits, pairs, nibbles, bytes, then the two 16-bit halves.
    x = swap_bit_groups(x, kc.uint32(1), kc.uint32(0x55555555))
    x = swap_bit_groups(x, kc.uint32(2), kc.uint32(0x33333333))
    x = swap_bit_groups(x, kc.uint32(4), kc.uint32(0x0F0F0F0F))
    x = swap_bit_groups(x, kc.uint32(8), kc.uint32(0x00FF00FF))
    return (x << kc.uint32(16)) | (x >> kc.uint32(16))


@kc.func
def edge_priority(t: int, j: int) -> kc.uint32:
    # Unique and never 0 (the unclaimed mark). Reversing the bits spreads the winners of
    # conflicting claims over the mesh instead of always favouring low triangle numbers,
    # which would let a row-by-row numbered mesh flip only one row per pass.
    return reverse_bits(kc.uint32(3 * t + j) + kc.uint32(1))


@kc.func
def should_flip(tri: kc.array2d(dtype=kc.int32), pos: kc.array(dtype=kc.vec2),
                ref: kc.array(dtype=kc.vec2), has_ref: int, area_eps: float, ref_eps: float,
                t: int, j: int, n: int, jn: int) -> bool:
    # Triangle t is (c, a, b) from its vertex j, n has apex d opposite the shared edge ab;
    # a flip makes them (c, a, d) and (c, d, b).
    c = tri[t, j]
    a = tri[t, (j + 1) % 3]
    b = tri[t, (j + 2) % 3]
    d = tri[n, jn]
    count = pos.shape[0]
    if has_ref != 0:
        count = kc.min(count, ref.shape[0])
    if kc.min(kc.min(a, b), kc.min(c, d)) < 0 or kc.max(kc.max(a, b), kc.max(c, d)) >= count:
        return False  # a vertex without a position: leave the edge alone
    pa = pos[a]
    pb = pos[b]
    pc = pos[c]
    pd = pos[d]
    # Both new triangles must turn counter-clockwise (the quad acdb is convex).
    if signed_area(pc, pa, pd) <= area_eps or signed_area(pc, pd, pb) <= area_eps:
        return False
    if in_circle_det(pc, pa, pb, pd) <= 0.0:
        return False
    if has_ref != 0:
        if kc.abs(signed_area(ref[c], ref[a], ref[d])) <= ref_eps:
            return False
        if kc.abs(signed_area(ref[c], ref[d], ref[b])) <= ref_eps:
            return False
    return True


@kc.func
def stake_claim(claim: kc.array(dtype=kc.uint32), t: int, priority: kc.uint32):
    if t >= 0:
        kc.atomic_max(claim, t, priority)


@kc.kernel(enable_backward=False)
def stake_flip_claims(tri: kc.array2d(dtype=kc.int32),
                      triangle_neighbors: kc.array2d(dtype=kc.int32),
                      pos: kc.array(dtype=kc.vec2), ref: kc.array(dtype=kc.vec2), has_ref: int,
                      area_eps: float, ref_eps: float, claim: kc.array(dtype=kc.uint32)):
    t = kc.tid()
    for j in range(3):
        n = triangle_neighbors[t, j]
        if n <= t:
            continue  # a boundary edge (-1), or one its lower-numbered triangle handles
        jn = find_triangle_neighbor_edge_index(triangle_neighbors, n, t)
        if jn < 0:
            continue
        if not should_flip(tri, pos, ref, has_ref, area_eps, ref_eps, t, j, n, jn):
            continue
        priority = edge_priority(t, j)
        stake_claim(claim, t, priority)
        stake_claim(claim, n, priority)
        stake_claim(claim, triangle_neighbors[t, (j + 1) % 3], priority)
        stake_claim(claim, triangle_neighbors[n, (jn + 1) % 3], priority)


@kc.func
def owns(claim: kc.array(dtype=kc.uint32), t: int, priority: kc.uint32) -> bool:
    return t < 0 or claim[t] == priority


@kc.func
def repoint(triangle_neighbors: kc.array2d(dtype=kc.int32), t: int, old: int, new: int):
    # Triangle t (if any) now borders `new` where it bordered `old`.
    if t >= 0:
        slot = find_triangle_neighbor_edge_index(triangle_neighbors, t, old)
        if slot >= 0:
            triangle_neighbors[t, slot] = new


@kc.kernel(enable_backward=False)
def apply_won_flips(tri: kc.array2d(dtype=kc.int32),
                    triangle_neighbors: kc.array2d(dtype=kc.int32),
                    claim: kc.array(dtype=kc.uint32), num_flips: kc.array(dtype=kc.int32)):
    t = kc.tid()
    for j in range(3):
        priority = edge_priority(t, j)
        # Row t is read only once this edge owns it: another winner may be rewriting it.
        if claim[t] != priority:
            continue
        n = triangle_neighbors[t, j]
        if n <= t or claim[n] != priority:
            continue
        jn = find_triangle_neighbor_edge_index(triangle_neighbors, n, t)
        if jn < 0:
            continue
        # The neighbours across t's edge b-c and n's edge a-d move to the other triangle.
        across_bc = triangle_neighbors[t, (j + 1) % 3]
        across_ad = triangle_neighbors[n, (jn + 1) % 3]
        if not owns(claim, across_bc, priority) or not owns(claim, across_ad, priority):
            continue
        # t = (c, a, b) becomes (c, a, d) and n = (d, b, a) becomes (d, b, c): each keeps
        # its slot layout, and only the vertex after the shared edge's first end changes.
        c = tri[t, j]
        d = tri[n, jn]
        tri[t, (j + 2) % 3] = d
        tri[n, (jn + 2) % 3] = c
        triangle_neighbors[t, j] = across_ad
        triangle_neighbors[t, (j + 1) % 3] = n
        triangle_neighbors[n, jn] = across_bc
        triangle_neighbors[n, (jn + 1) % 3] = t
        repoint(triangle_neighbors, across_ad, n, t)
        repoint(triangle_neighbors, across_bc, t, n)
        kc.atomic_add(num_flips, 0, 1)


@kc.kernel(enable_backward=False)
def record_pass(num_flips: kc.array(dtype=kc.int32), max_passes: int,
                total_flips: kc.array(dtype=kc.int32), pass_count: kc.array(dtype=kc.int32),
                condition: kc.array(dtype=kc.int32)):
    # One thread: runs between passes on the device, so a captured loop needs no host.
    total_flips[0] = total_flips[0] + num_flips[0]
    pass_count[0] = pass_count[0] + 1
    condition[0] = kc.where(num_flips[0] > 0 and pass_count[0] < max_passes, 1, 0)
