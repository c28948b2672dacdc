"""Geometry queries written in kernelc's own language, with Warp's names and results.

- `closest_point_edge_edge`: the closest points of two segments, Ericson, *Real-Time Collision
  Detection* (2005), section 5.1.9, with the two differences of products evaluated without
  cancellation (as Warp does).
- `intersect_tri_tri`: Möller's interval-overlap triangle/triangle test, "A Fast
  Triangle-Triangle Intersection Test", Journal of Graphics Tools 2(2), 1997, in its
  division-free form, with the coplanar case handled by 2-D edge and containment tests.
"""

from __future__ import annotations

from typing import Any

import kernelc as kc

_PLANE_EPSILON = 1.0e-6  # |signed distance| below this counts as on the plane (Möller's)


# ---- closest points of two segments --------------------------------------------------------


@kc.func
def _fma(a: kc.float32, b: kc.float32, c: kc.float32) -> kc.float32:
    # a b + c rounded once to float32 (up to a double rounding, which needs the float64 sum to
    # fall exactly on a float32 tie): the product of two float32 is exact in float64
    return kc.float32(kc.float64(a) * kc.float64(b) + kc.float64(c))


@kc.func
def _diff_product(a: kc.float32, b: kc.float32, c: kc.float32, d: kc.float32) -> kc.float32:
    # a b - c d by Kahan's algorithm (Warp's): the rounding error of c d is exact with an FMA
    cd = c * d
    return _fma(a, b, -cd) + _fma(-c, d, cd)


@kc.func
def closest_point_edge_edge(p1: kc.vec3, q1: kc.vec3, p2: kc.vec3, q2: kc.vec3,
                            epsilon: kc.float32) -> kc.vec3:
    """The closest points of the segments [p1, q1] and [p2, q2], as vec3(s, t, d): the point
    p1 + s (q1 - p1) of the first, p2 + t (q2 - p2) of the second (s, t in [0, 1]) and their
    distance d. A segment whose squared length is <= epsilon counts as a point (weight 0)."""
    d1 = q1 - p1
    d2 = q2 - p2
    r = p1 - p2
    a = kc.dot(d1, d1)
    e = kc.dot(d2, d2)
    f = kc.dot(d2, r)
    s = 0.0
    t = 0.0
    if a <= epsilon and e <= epsilon:
        pass  # two points
    elif a <= epsilon:
        t = kc.clamp(f / e, 0.0, 1.0)  # the first segment is a point: project it
    elif e <= epsilon:
        s = kc.clamp(-kc.dot(d1, r) / a, 0.0, 1.0)
    else:
        c = kc.dot(d1, r)
        b = kc.dot(d1, d2)
        denom = _diff_product(a, e, b, b)  # |d1|² |d2|² sin²: >= 0
        s_line = 0.0  # parallel: any s will do, t corrects it
        if denom > 0.0:
            s_line = kc.clamp(_diff_product(b, f, c, e) / denom, 0.0, 1.0)
        t_line = (b * s_line + f) / e
        if t_line < 0.0:
            s = kc.clamp(-c / a, 0.0, 1.0)
        elif t_line > 1.0:
            s = kc.clamp((b - c) / a, 0.0, 1.0)
            t = 1.0
        else:
            s = s_line
            t = t_line
    return kc.vec3(s, t, kc.length((p2 + t * d2) - (p1 + s * d1)))


# ---- triangle / triangle -------------------------------------------------------------------


@kc.func
def _snap(x: Any):
    # Möller's robustness test, in float64 as in Warp (a double constant there)
    if kc.float64(kc.abs(x)) < _PLANE_EPSILON:
        return x - x
    return x


@kc.func
def _plane_distances(a0: Any, a1: Any, a2: Any, b0: Any, b1: Any, b2: Any):
    """The normal of triangle a and the signed distances (times |normal|) of b's vertices
    to a's plane, tiny ones snapped to 0."""
    n = kc.cross(a1 - a0, a2 - a0)
    d = -kc.dot(n, a0)
    return n, _snap(kc.dot(n, b0) + d), _snap(kc.dot(n, b1) + d), _snap(kc.dot(n, b2) + d)


@kc.func
def _interval(p0: Any, p1: Any, p2: Any, d0: Any, d1: Any, d2: Any):
    """Where triangle (projections p, plane distances d) crosses the other plane, as Möller's
    division-free (a, b, c, x0, x1): the ends are a + b / x0 and a + c / x1. The first result
    is False when all distances are 0 (coplanar triangles)."""
    d0d1 = d0 * d1
    d0d2 = d0 * d2
    if d0d1 > 0.0:  # d0, d1 on one side, d2 on the other (or on the plane)
        return True, p2, (p0 - p2) * d2, (p1 - p2) * d2, d2 - d0, d2 - d1
    if d0d2 > 0.0:
        return True, p1, (p0 - p1) * d1, (p2 - p1) * d1, d1 - d0, d1 - d2
    if d1 * d2 > 0.0 or d0 != 0.0:
        return True, p0, (p1 - p0) * d0, (p2 - p0) * d0, d0 - d1, d0 - d2
    if d1 != 0.0:
        return True, p1, (p0 - p1) * d1, (p2 - p1) * d1, d1 - d0, d1 - d2
    if d2 != 0.0:
        return True, p2, (p0 - p2) * d2, (p1 - p2) * d2, d2 - d0, d2 - d1
    return False, p0, p0, p0, p0, p0


@kc.func
def _edge_crosses_edge(v0: Any, ax: Any, ay: Any, u0: Any, u1: Any, i0: kc.int32,
                       i1: kc.int32) -> bool:
    # Antonio's segment test ("Faster Line Segment Intersection", Graphics Gems III) of the
    # edge v0 + (ax, ay) against [u0, u1], in the projection plane (i0, i1)
    bx = u0[i0] - u1[i0]
    by = u0[i1] - u1[i1]
    cx = v0[i0] - u0[i0]
    cy = v0[i1] - u0[i1]
    f = ay * bx - ax * by
    d = by * cx - bx * cy
    if (f > 0.0 and d >= 0.0 and d <= f) or (f < 0.0 and d <= 0.0 and d >= f):
        e = ax * cy - ay * cx
        if f > 0.0:
            return e >= 0.0 and e <= f
        return e <= 0.0 and e >= f
    return False


@kc.func
def _edge_crosses_triangle(v0: Any, v1: Any, u0: Any, u1: Any, u2: Any, i0: kc.int32,
                           i1: kc.int32) -> bool:
    ax = v1[i0] - v0[i0]
    ay = v1[i1] - v0[i1]
    return (_edge_crosses_edge(v0, ax, ay, u0, u1, i0, i1)
            or _edge_crosses_edge(v0, ax, ay, u1, u2, i0, i1)
            or _edge_crosses_edge(v0, ax, ay, u2, u0, i0, i1))


@kc.func
def _edge_side(p: Any, e0: Any, e1: Any, i0: kc.int32, i1: kc.int32):
    # the line through e0, e1 as a x + b y + c = 0, evaluated at p
    a = e1[i1] - e0[i1]
    b = -(e1[i0] - e0[i0])
    c = -a * e0[i0] - b * e0[i1]
    return a * p[i0] + b * p[i1] + c


@kc.func
def _point_in_triangle(p: Any, u0: Any, u1: Any, u2: Any, i0: kc.int32, i1: kc.int32) -> bool:
    d0 = _edge_side(p, u0, u1, i0, i1)
    d1 = _edge_side(p, u1, u2, i0, i1)
    d2 = _edge_side(p, u2, u0, i0, i1)
    return d0 * d1 > 0.0 and d0 * d2 > 0.0


@kc.func
def _coplanar(n: Any, v0: Any, v1: Any, v2: Any, u0: Any, u1: Any, u2: Any) -> kc.int32:
    # project onto the axis plane where the triangles have the largest area
    ax = kc.abs(n[0])
    ay = kc.abs(n[1])
    az = kc.abs(n[2])
    i0 = 0
    i1 = 1
    if ax > ay:
        if ax > az:
            i0 = 1
            i1 = 2
    elif not az > ay:
        i1 = 2
    if (_edge_crosses_triangle(v0, v1, u0, u1, u2, i0, i1)
            or _edge_crosses_triangle(v1, v2, u0, u1, u2, i0, i1)
            or _edge_crosses_triangle(v2, v0, u0, u1, u2, i0, i1)):
        return 1
    if _point_in_triangle(v0, u0, u1, u2, i0, i1) or _point_in_triangle(u0, v0, v1, v2, i0, i1):
        return 1
    return 0


@kc.func
def _largest_axis(d: Any) -> kc.int32:
    axis = 0
    largest = kc.abs(d[0])
    if kc.abs(d[1]) > largest:
        largest = kc.abs(d[1])
        axis = 1
    if kc.abs(d[2]) > largest:
        axis = 2
    return axis


@kc.func
def _tri_tri(v0: Any, v1: Any, v2: Any, u0: Any, u1: Any, u2: Any) -> kc.int32:
    n1, du0, du1, du2 = _plane_distances(v0, v1, v2, u0, u1, u2)
    if du0 * du1 > 0.0 and du0 * du2 > 0.0:
        return 0  # u entirely on one side of v's plane
    n2, dv0, dv1, dv2 = _plane_distances(u0, u1, u2, v0, v1, v2)
    if dv0 * dv1 > 0.0 and dv0 * dv2 > 0.0:
        return 0
    # project onto the axis closest to the planes' intersection line
    k = _largest_axis(kc.cross(n1, n2))
    ok, a, b, c, x0, x1 = _interval(v0[k], v1[k], v2[k], dv0, dv1, dv2)
    if not ok:
        return _coplanar(n1, v0, v1, v2, u0, u1, u2)
    ok, d, e, f, y0, y1 = _interval(u0[k], u1[k], u2[k], du0, du1, du2)
    if not ok:
        return _coplanar(n1, v0, v1, v2, u0, u1, u2)
    xx = x0 * x1
    yy = y0 * y1
    xxyy = xx * yy
    lo1 = a * xxyy + b * x1 * yy
    hi1 = a * xxyy + c * x0 * yy
    lo2 = d * xxyy + e * xx * y1
    hi2 = d * xxyy + f * xx * y0
    if lo1 > hi1:
        lo1, hi1 = hi1, lo1
    if lo2 > hi2:
        lo2, hi2 = hi2, lo2
    if hi1 < lo2 or hi2 < lo1:
        return 0
    return 1


@kc.func
def intersect_tri_tri(v0: kc.vec3, v1: kc.vec3, v2: kc.vec3, u0: kc.vec3, u1: kc.vec3,
                      u2: kc.vec3) -> int:
    """1 if the triangles (v0, v1, v2) and (u0, u1, u2) intersect (touching and coplanar
    overlap count), else 0: Möller's test. The vec3d overload is more robust near degenerate
    configurations."""
    return _tri_tri(v0, v1, v2, u0, u1, u2)


@kc.func
def intersect_tri_tri(v0: kc.vec3d, v1: kc.vec3d, v2: kc.vec3d, u0: kc.vec3d,  # noqa: F811
                      u1: kc.vec3d, u2: kc.vec3d) -> int:
    return _tri_tri(v0, v1, v2, u0, u1, u2)
