"""Closest points of simplices with one vertex at the origin, behind the cell lookups of
triangle and tetrahedron meshes.

The arithmetic follows the steps Warp's lookups take, in the same order, so that a point
on a vertex or an edge of a cell gets Warp's coordinates bit for bit (exactly 1 for a
vertex it sits on, 0 for the others). The funcs are made once per scalar type: a func
cannot build a zero of its argument's type.
"""

from functools import cache
from types import SimpleNamespace
from typing import Any

import kernelc as kc
from kernelc.fem.types import coords_type


@cache
def closest_point_funcs(scalar: Any) -> SimpleNamespace:
    """For `scalar`: `on_segment(p, edge, edge_len_sq) -> (dist², t)`,
    `on_triangle(p, a, b) -> (dist², barycentric coords)` and
    `on_tetrahedron(p, a, b, c) -> (dist², (l1, l2, l3))`; the simplices are spanned from
    the origin by their edge vectors `edge` / `a, b` / `a, b, c`."""
    Coords = coords_type(scalar)
    zero, one = scalar(0.0), scalar(1.0)
    # Relative size of the Gram determinant below which a triangle counts as degenerate.
    flat = scalar(1.0e-12 if scalar == kc.float64 else 1.0e-6)

    @kc.func
    def on_segment(p: Any, edge: Any, edge_len_sq: Any):
        t = kc.clamp(kc.dot(p, edge) / edge_len_sq, zero, one)
        return kc.length_sq(p - t * edge), t

    @kc.func
    def on_triangle(p: Any, a: Any, b: Any):
        aa = kc.dot(a, a)
        ab = kc.dot(a, b)
        bb = kc.dot(b, b)
        gram = aa * bb - ab * ab
        if gram > aa * bb * flat:
            pa = kc.dot(a, p)
            pb = kc.dot(b, p)
            u = (bb * pa - ab * pb) / gram
            v = (aa * pb - ab * pa) / gram
            if u >= zero and v >= zero and u + v <= one:
                # The foot of the perpendicular is inside (off the plane of a surface's
                # triangle the distance is not zero).
                return kc.length_sq(p - u * a - v * b), Coords(one - u - v, u, v)
        # Otherwise the closest point is on an edge: the nearest of the three, the first
        # listed winning ties.
        da, ta = on_segment(p, a, aa)
        db, tb = on_segment(p, b, bb)
        dab, tab = on_segment(p - a, b - a, kc.length_sq(b - a))
        if da <= db and da <= dab:
            return da, Coords(one - ta, ta, zero)
        if da > db and db <= dab:
            return db, Coords(one - tb, zero, tb)
        return dab, Coords(zero, one - tab, tab)

    @kc.func
    def on_tetrahedron(p: Any, a: Any, b: Any, c: Any):
        local = kc.inverse(kc.matrix_from_cols(a, b, c)) * p
        if kc.min(kc.min(local[0], local[1]), local[2]) >= zero \
                and local[0] + local[1] + local[2] <= one:
            return zero, Coords(local[0], local[1], local[2])
        # Outside: the nearest of the closest points of the four faces, in this order.
        d_ab, on_ab = on_triangle(p, a, b)
        d_bc, on_bc = on_triangle(p, b, c)
        d_ca, on_ca = on_triangle(p, c, a)
        d_far, on_far = on_triangle(p - a, b - a, c - a)
        nearest = kc.min(kc.min(d_ab, d_bc), kc.min(d_ca, d_far))
        if nearest == d_ab:
            return nearest, Coords(on_ab[1], on_ab[2], zero)
        if nearest == d_bc:
            return nearest, Coords(zero, on_bc[1], on_bc[2])
        if nearest == d_ca:
            return nearest, Coords(on_ca[2], zero, on_ca[1])
        return nearest, on_far

    return SimpleNamespace(on_segment=on_segment, on_triangle=on_triangle,
                           on_tetrahedron=on_tetrahedron)


__all__ = ["closest_point_funcs"]
