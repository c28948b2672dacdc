"""What the USD renderer needs besides the stage: the optional `pxr` import, host copies of
array-like inputs, and the transforms it writes (xform ops, line segments, ground planes).

Nothing here imports `pxr` at module level, so `import kernelc.render` works without it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

INSTALL_HINT = 'pip install usd-core (or pip install "kernelc[usd]")'


def import_pxr() -> SimpleNamespace:
    """The OpenUSD modules the renderer uses, or an ImportError that says what to install."""
    try:
        from pxr import Gf, Sdf, Usd, UsdGeom, UsdLux, Vt
    except ImportError as err:
        raise ImportError(
            "kernelc.render.UsdRenderer writes OpenUSD stages and needs OpenUSD's Python "
            f"bindings (the `pxr` package), which are not installed: {INSTALL_HINT}"
        ) from err
    return SimpleNamespace(Gf=Gf, Sdf=Sdf, Usd=Usd, UsdGeom=UsdGeom, UsdLux=UsdLux, Vt=Vt)


def host_array(value: Any, dtype: Any = np.float64) -> np.ndarray:
    """`value` (a kernelc or Warp array, a NumPy array, a vector, a list) as a NumPy array."""
    if not isinstance(value, np.ndarray) and callable(getattr(value, "numpy", None)):
        value = value.numpy()  # device arrays: `.numpy()` copies them to the host
    return np.asarray(value, dtype=dtype)


def is_single_color(colors: Any) -> bool:
    """Whether `colors` is one RGB color (three numbers) rather than one color per element."""
    values = host_array(colors)
    return values.ndim == 1 and values.size == 3


def vec3f_array(pxr: SimpleNamespace, values: Any) -> Any:
    """A `Vt.Vec3fArray` (points, normals, colors, scales) from rows of three numbers."""
    rows = np.ascontiguousarray(host_array(values, np.float32).reshape(-1, 3))
    return pxr.Vt.Vec3fArray.FromNumpy(rows)


def int_array(pxr: SimpleNamespace, values: Any) -> Any:
    """A flat `Vt.IntArray` from any integer array-like."""
    flat = np.ascontiguousarray(host_array(values, np.int32).reshape(-1))
    return pxr.Vt.IntArray.FromNumpy(flat)


def visibility(visible: bool) -> str:
    """The `visibility` token for a prim that is shown (or not)."""
    return "inherited" if visible else "invisible"


def add_xform_ops(pxr: SimpleNamespace, schema: Any) -> None:
    """Gives a prim the op stack translate, orient, scale (in that order), values unset."""
    xformable = pxr.UsdGeom.Xformable(schema.GetPrim())
    # Cleared first so calling this again on an existing prim keeps exactly three ops.
    xformable.ClearXformOpOrder()
    xformable.AddTranslateOp()
    xformable.AddOrientOp()
    xformable.AddScaleOp()


def set_xform(pxr: SimpleNamespace, schema: Any, pos: Any = None, rot: Any = None,
              scale: Any = None, time: float = 0.0) -> None:
    """Writes position, rotation (x, y, z, w) and scale into the ops of `add_xform_ops`."""
    ops = pxr.UsdGeom.Xformable(schema.GetPrim()).GetOrderedXformOps()
    if pos is not None:
        p = host_array(pos).reshape(3)
        ops[0].Set(pxr.Gf.Vec3d(float(p[0]), float(p[1]), float(p[2])), time)
    if rot is not None:
        q = host_array(rot).reshape(4)
        ops[1].Set(pxr.Gf.Quatf(float(q[3]), float(q[0]), float(q[1]), float(q[2])), time)
    if scale is not None:
        s = host_array(scale).reshape(3)
        ops[2].Set(pxr.Gf.Vec3d(float(s[0]), float(s[1]), float(s[2])), time)


def segment_transforms(start: np.ndarray, end: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Places a unit-height capsule along +Z (USD's default) on each segment start -> end.

    Args:
        start: (n, 3) first points of the segments.
        end: (n, 3) second points of the segments.

    Returns:
        Midpoints (n, 3) float32, orientations (n, 4) as (x, y, z, w), scales (n, 3) float32.
    """
    # Midpoints and lengths in float32, as the single-precision USD types they end up in.
    p0 = start.astype(np.float32)
    p1 = end.astype(np.float32)
    mid = (p0 + p1) * np.float32(0.5)
    delta = p1 - p0
    height = np.sqrt(delta[:, 0] * delta[:, 0] + delta[:, 1] * delta[:, 1]
                     + delta[:, 2] * delta[:, 2])
    nonzero = height > 0.0
    direction = np.zeros_like(delta, dtype=np.float64)
    direction[nonzero] = delta[nonzero] / height[nonzero, None]
    direction /= np.maximum(np.linalg.norm(direction, axis=1), 1e-300)[:, None]
    # The shortest-arc rotation taking +Z into `direction`: axis z x d, angle acos(d.z).
    cos = direction[:, 2]
    quat = np.stack([-direction[:, 1], direction[:, 0], np.zeros_like(cos), 1.0 + cos], axis=1)
    # Opposite to +Z the axis is undefined: turn half a circle about +Y (z x (1, 0, 0)).
    opposite = nonzero & (cos < -1.0 + 1e-12)
    quat[opposite] = (0.0, 1.0, 0.0, 0.0)
    quat[~nonzero] = (0.0, 0.0, 0.0, 1.0)  # a point, not a segment: no rotation
    quat /= np.linalg.norm(quat, axis=1)[:, None]
    scales = np.ones_like(mid)
    scales[:, 2] = height
    return mid, quat, scales


# The ground's corners and normal for each up axis; faces are wound 0, 2, 3, 1.
_GROUND_CORNERS = {
    "Y": ((-1.0, 0.0, -1.0), (1.0, 0.0, -1.0), (-1.0, 0.0, 1.0), (1.0, 0.0, 1.0)),
    "Z": ((-1.0, 1.0, 0.0), (1.0, 1.0, 0.0), (-1.0, -1.0, 0.0), (1.0, -1.0, 0.0)),
}
GROUND_INDICES = (0, 2, 3, 1)


def _quat_rotate(quat: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Rotates rows of `vectors` by the unit quaternion (x, y, z, w)."""
    axis, w = quat[:3], quat[3]
    twice_cross = 2.0 * np.cross(axis, vectors)
    return vectors + w * twice_cross + np.cross(axis, twice_cross)


def ground_geometry(up_axis: str, size: float, plane: Any = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The ground quad's points and normals (4, 3), optionally moved onto `plane`.

    Args:
        up_axis: "Y" or "Z".
        size: Half the quad's side length.
        plane: Optional (nx, ny, nz, d): the quad is turned to face n and moved d along it.
    """
    corners = np.array(_GROUND_CORNERS[up_axis], dtype=np.float64) * size
    up = np.zeros(3)
    up["XYZ".index(up_axis)] = 1.0
    normals = np.tile(up, (4, 1))
    if plane is None:
        return corners, normals
    plane = host_array(plane)
    normal = plane[:3] / np.linalg.norm(plane[:3])
    # Turn `up` onto the plane's normal along the shortest arc, then move the quad to the
    # plane {p : n.p = d}. (Warp 1.19 raises here; its intent is what is written.)
    cross = np.cross(up, normal)
    quat = np.concatenate([cross, [1.0 + float(np.dot(up, normal))]])
    if np.linalg.norm(quat) < 1e-9:  # n = -up: half a turn about the next axis
        quat = np.concatenate([np.roll(up, 1), [0.0]])
    quat /= np.linalg.norm(quat)
    return _quat_rotate(quat, corners) + plane[3] * normal, _quat_rotate(quat, normals)
