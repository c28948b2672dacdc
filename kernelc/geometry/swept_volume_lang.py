"""The kernels of the swept-volume tools, in kernelc's language.

`swept_volume_sdf` is also public (Warp's kernel API): a `@kc.func` that user kernels call.
The sign modes are the integer values of `SweptVolumeSignMode` (NORMAL 0, WINDING_NUMBER
1, PARITY 2, NO_SIGN 3), written out here because a kernel compares plain integers.
"""

from __future__ import annotations

import kernelc as kc


@kc.func
def swept_volume_sdf(point: kc.vec3, mesh_ids: kc.array(dtype=kc.uint64),
                     transforms: kc.array2d(dtype=kc.transform), max_dist: kc.float32,
                     sign_mode: kc.int32) -> kc.float32:
    """The swept-volume pseudo signed distance at `point` (Warp's kernel API).

    The minimum, over every mesh `m` and pose sample `s`, of the mesh's signed distance at
    `transforms[m, s]^-1 * point`: the motion is rigid, so the point moves back into the
    rest frame instead of the mesh moving. A query that finds no face within `max_dist`
    contributes nothing, so a point deep inside gets `+max_dist` as one far away does;
    give a bound that spans the region of interest. Not differentiable.

    Args:
        point (vec3): Query point, in world space.
        mesh_ids (array): The rest-pose meshes' ids (`uint64`).
        transforms (array2d): Per mesh and sample, the rigid pose (rest to world).
        max_dist (float32): Bound on the closest-point search.
        sign_mode (int32): How inside is told from outside: an `int(SweptVolumeSignMode)`.

    Returns:
        The pseudo signed distance (float32).
    """
    best = max_dist
    for m in range(mesh_ids.shape[0]):
        mesh = mesh_ids[m]
        for s in range(transforms.shape[1]):
            local = kc.transform_point(kc.transform_inverse(transforms[m, s]), point)
            sign = 1.0
            if sign_mode == 1:
                query = kc.mesh_query_point_sign_winding_number(mesh, local, max_dist)
                sign = query.sign
            elif sign_mode == 2:
                query = kc.mesh_query_point_sign_parity(mesh, local, max_dist)
                sign = query.sign
            elif sign_mode == 3:
                # Unsigned distances only improve the minimum from below it: search less.
                query = kc.mesh_query_point_no_sign(mesh, local, best)
            else:
                query = kc.mesh_query_point_sign_normal(mesh, local, max_dist)
                sign = query.sign
            if query.result:
                closest = kc.mesh_eval_position(mesh, query.face, query.u, query.v)
                best = kc.min(best, sign * kc.length(local - closest))
    return best


@kc.kernel(enable_backward=False)
def swept_field(mesh_ids: kc.array(dtype=kc.uint64), transforms: kc.array2d(dtype=kc.transform),
                origin: kc.vec3, spacing: kc.vec3, max_dist: kc.float32, sign_mode: kc.int32,
                field: kc.array3d(dtype=kc.float32)):
    i, j, k = kc.tid()
    point = origin + kc.cw_mul(spacing, kc.vec3(float(i), float(j), float(k)))
    field[i, j, k] = swept_volume_sdf(point, mesh_ids, transforms, max_dist, sign_mode)


@kc.kernel(enable_backward=False)
def mesh_box(points: kc.array(dtype=kc.vec3), slot: int, lower: kc.array(dtype=kc.vec3),
             upper: kc.array(dtype=kc.vec3)):
    # Float min/max are order independent, so the atomics give a deterministic box.
    i = kc.tid()
    kc.atomic_min(lower, slot, points[i])
    kc.atomic_max(upper, slot, points[i])


@kc.kernel(enable_backward=False)
def posed_boxes(mesh_lower: kc.array(dtype=kc.vec3), mesh_upper: kc.array(dtype=kc.vec3),
                transforms: kc.array2d(dtype=kc.transform), lower: kc.array(dtype=kc.vec3),
                upper: kc.array(dtype=kc.vec3)):
    # A rigid map's image of a box is bounded by its eight mapped corners.
    m, s = kc.tid()
    lo = mesh_lower[m]
    hi = mesh_upper[m]
    if lo[0] > hi[0]:
        return  # an empty mesh: its box was never reduced
    pose = transforms[m, s]
    for corner in range(8):
        x = kc.where((corner & 1) == 0, lo[0], hi[0])
        y = kc.where((corner & 2) == 0, lo[1], hi[1])
        z = kc.where((corner & 4) == 0, lo[2], hi[2])
        p = kc.transform_point(pose, kc.vec3(x, y, z))
        kc.atomic_min(lower, 0, p)
        kc.atomic_max(upper, 0, p)
