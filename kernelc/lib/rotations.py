"""Rotation helpers of Warp's utilities, with Warp's names and results.

- `quat_between_vectors(a, b)`: the shortest-arc rotation taking the direction of `a` onto
  that of `b`, a func (kernels and the host alike). It builds the quaternion
  (a x b, 1 + a . b) from the unit vectors and normalises it, which halves the angle
  without a trigonometric call. Opposite directions (1 + a . b = 0) have no unique answer
  and give a zero quaternion's normalisation, as in Warp: use `quat_from_axis_angle` with an
  axis perpendicular to `a` and an angle of pi there.
- `transform_expand(t)`: a transform from a flat sequence of 7 numbers (position, then the
  quaternion's x, y, z, w), on the host.
"""

from __future__ import annotations

from collections.abc import Sequence

import kernelc as kc

__all__ = ["quat_between_vectors", "transform_expand"]


@kc.func
def quat_between_vectors(a: kc.vec3, b: kc.vec3) -> kc.quat:
    """The unit quaternion that rotates the direction of `a` onto the direction of `b`."""
    ua = kc.normalize(a)
    ub = kc.normalize(b)
    c = kc.cross(ua, ub)
    return kc.normalize(kc.quat(c[0], c[1], c[2], 1.0 + kc.dot(ua, ub)))


def transform_expand(t: Sequence[float]) -> kc.transform:
    """A transform from 7 numbers: the position, then the rotation quaternion (x, y, z, w).

    Args:
        t: A sequence (list, tuple, NumPy array) of at least 7 numbers.

    Returns:
        The transform (float32).
    """
    values = [float(v) for v in t]
    if len(values) < 7:
        raise ValueError(f"transform_expand needs 7 numbers (position and quaternion), "
                         f"got {len(values)}")
    return kc.transform(kc.vec3(*values[0:3]), kc.quat(*values[3:7]))
