"""`mesh_get(id)`: a mesh's arrays in kernels (Warp's in-kernel `Mesh`), as views built
from the pointers and counts in the mesh's descriptor (`mesh_lang.DESCRIPTOR_*`)."""

from __future__ import annotations

import kernelc as kc
from kernelc.builtins import BUILTINS
from kernelc.spatial.mesh_lang import (
    DESCRIPTOR_INDICES,
    DESCRIPTOR_NUM_POINTS,
    DESCRIPTOR_NUM_TRIS,
    DESCRIPTOR_POINTS,
    DESCRIPTOR_POINTS_GRAD,
    DESCRIPTOR_VELOCITIES,
    DESCRIPTOR_VELOCITIES_GRAD,
)

_load_i32 = BUILTINS["_load_int32"]
_load_u64 = BUILTINS["_load_uint64"]


@kc.struct
class MeshArrays:
    """What `mesh_get(id)` returns (Warp's in-kernel `Mesh`): views of the mesh's arrays;
    `velocities` is empty when the mesh has none."""

    points: kc.array(dtype=kc.vec3)
    velocities: kc.array(dtype=kc.vec3)
    indices: kc.array(dtype=kc.int32)


@kc.func
def get_arrays(mesh: kc.uint64) -> MeshArrays:
    out = MeshArrays()
    num_points = _load_i32(mesh, DESCRIPTOR_NUM_POINTS // 4)
    out.points = kc.array(ptr=_load_u64(mesh, DESCRIPTOR_POINTS // 8), shape=(num_points,),
                          dtype=kc.vec3, _grad_ptr=_load_u64(mesh, DESCRIPTOR_POINTS_GRAD // 8))
    velocities = _load_u64(mesh, DESCRIPTOR_VELOCITIES // 8)
    out.velocities = kc.array(ptr=velocities,
                              shape=(kc.where(velocities == kc.uint64(0), 0, num_points),),
                              dtype=kc.vec3,
                              _grad_ptr=_load_u64(mesh, DESCRIPTOR_VELOCITIES_GRAD // 8))
    out.indices = kc.array(ptr=_load_u64(mesh, DESCRIPTOR_INDICES // 8),
                           shape=(3 * _load_i32(mesh, DESCRIPTOR_NUM_TRIS // 4),),
                           dtype=kc.int32)
    return out
