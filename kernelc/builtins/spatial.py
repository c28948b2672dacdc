"""Spatial-vector algebra (Warp's names and parameter names, Featherstone's conventions).

A spatial vector has 6 components: an angular part on top (components 0-2: angular
velocity of a twist, torque of a wrench) and a linear part at the bottom (components 3-5:
linear velocity, force). Any float 6-vector is accepted, as in Warp.
"""

from __future__ import annotations

from kernelc.builtins.aggregate import build, comps, warp_dot
from kernelc.builtins.quat import add, args_rule, rotate_values, split
from kernelc.builtins.registry import Overload, register
from kernelc.builtins.vector import cross_values
from kernelc.ir.nodes import Value
from kernelc.types_vec import matrix, vector

GROUP = "spatial math"


def _halves(em, s: Value) -> tuple[list[Value], list[Value]]:
    c = comps(em, s)
    return c[:3], c[3:]


def _spatial(em, s: Value, top: list[Value], bottom: list[Value]) -> Value:
    return build(em, vector(6, s.type.dtype), [*top, *bottom])


def _part(bottom: bool):
    def expand(em, svec: Value) -> Value:
        return build(em, vector(3, svec.type.dtype), _halves(em, svec)[bottom])

    return expand


register("spatial_top", GROUP, "The angular part (components 0-2) of a spatial vector.",
         Overload(("svec",), args_rule("vec6", result="vec3"), _part(False)))
register("spatial_bottom", GROUP, "The linear part (components 3-5) of a spatial vector.",
         Overload(("svec",), args_rule("vec6", result="vec3"), _part(True)))


def _spatial_dot(em, a: Value, b: Value) -> Value:
    return warp_dot(em, comps(em, a), comps(em, b))


register("spatial_dot", GROUP,
         "The dot product of two spatial vectors (a wrench with a twist: the power).",
         Overload(("a", "b"), args_rule("vec6", "vec6", result="scalar"), _spatial_dot))


def _spatial_cross(em, a: Value, b: Value) -> Value:
    """Motion cross product: (wa x wb, va x wb + wa x vb)."""
    (wa, va), (wb, vb) = _halves(em, a), _halves(em, b)
    linear = add(em, cross_values(em, va, wb), cross_values(em, wa, vb))
    return _spatial(em, a, cross_values(em, wa, wb), linear)


def _spatial_cross_dual(em, a: Value, b: Value) -> Value:
    """Force cross product of twist a = (w, v) and wrench b = (n, f): (w x n + v x f, w x f)."""
    (w, v), (n, f) = _halves(em, a), _halves(em, b)
    angular = add(em, cross_values(em, w, n), cross_values(em, v, f))
    return _spatial(em, a, angular, cross_values(em, w, f))


register("spatial_cross", GROUP,
         "The spatial (motion) cross product of two twists: (wa x wb, va x wb + wa x vb).",
         Overload(("a", "b"), args_rule("vec6", "vec6", result="vec6"), _spatial_cross))
register("spatial_cross_dual", GROUP,
         "The spatial force cross product of twist `a` = (w, v) and wrench `b` = (n, f): "
         "(w x n + v x f, w x f).",
         Overload(("a", "b"), args_rule("vec6", "vec6", result="vec6"), _spatial_cross_dual))


def _spatial_adjoint(em, r: Value, s: Value) -> Value:
    t = r.type.dtype
    rc, sc = comps(em, r), comps(em, s)
    zero = em.const(0.0, t)
    rows = []
    for i in range(3):
        rows.append([*rc[3 * i:3 * i + 3], zero, zero, zero])
    for i in range(3):
        rows.append([*sc[3 * i:3 * i + 3], *rc[3 * i:3 * i + 3]])
    return build(em, matrix((6, 6), t), [x for row in rows for x in row])


register("spatial_adjoint", GROUP,
         "The 6x6 block matrix [[r, 0], [s, r]] (with r = R and s = skew(p) R: the twist "
         "transform of (R, p)).",
         Overload(("r", "s"), args_rule("mat33", "mat33", result="mat66"), _spatial_adjoint))


def _velocity_at_point(em, qd: Value, r: Value) -> Value:
    w, v = _halves(em, qd)
    return build(em, r.type, add(em, v, cross_values(em, w, comps(em, r))))


register("velocity_at_point", GROUP,
         "The linear velocity v + w x r of the point at offset `r` on a body with twist "
         "`qd` = (w, v).",
         Overload(("qd", "r"), args_rule("vec6", "vec3", result="vec3"), _velocity_at_point))


def _transform_twist(em, xform: Value, x: Value) -> Value:
    """(R w, R v + p x R w) for the transform (p, R) and the twist (w, v)."""
    p, q = split(em, xform)
    w, v = (rotate_values(em, q, part) for part in _halves(em, x))
    return _spatial(em, x, w, add(em, v, cross_values(em, p, w)))


def _transform_wrench(em, xform: Value, x: Value) -> Value:
    """(R tau + p x R f, R f) for the transform (p, R) and the wrench (tau, f)."""
    p, q = split(em, xform)
    tau, f = (rotate_values(em, q, part) for part in _halves(em, x))
    return _spatial(em, x, add(em, tau, cross_values(em, p, f)), f)


register("transform_twist", GROUP,
         "A twist (w, v) mapped by the transform `t` = (p, R): (R w, R v + p x R w).",
         Overload(("t", "x"), args_rule("transform", "vec6", result="vec6"), _transform_twist))
register("transform_wrench", GROUP,
         "A wrench (tau, f) mapped by the transform `t` = (p, R): (R tau + p x R f, R f).",
         Overload(("t", "x"), args_rule("transform", "vec6", result="vec6"), _transform_wrench))
