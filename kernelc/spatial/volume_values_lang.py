"""The value types of a volume in kernels: reading a voxel's value and weighing it.

One overload per value type (int32, int64, uint32, float32, float64, vec3f/d, vec4f/d) of
`read` (the value at an address; the second argument, a zero of the type, selects it),
`weigh` (a trilinear weight times a value, in the value's own scalar type, as NanoVDB) and
`grad_term` (a corner's part of the gradient). `volume_lang`'s generic samplers call them.
"""

from __future__ import annotations

import kernelc as kc
from kernelc.builtins import BUILTINS

_load_i32 = BUILTINS["_load_int32"]
_load_u64 = BUILTINS["_load_uint64"]
_load_f32 = BUILTINS["_load_float32"]
_load_f64 = BUILTINS["_load_float64"]


# ---- reading values: one overload per value type (the second argument selects it) --------


@kc.func
def read(address: kc.uint64, zero: kc.float32) -> kc.float32:
    return _load_f32(address, 0)


@kc.func
def read(address: kc.uint64, zero: kc.float64) -> kc.float64:  # noqa: F811
    return _load_f64(address, 0)


@kc.func
def read(address: kc.uint64, zero: kc.int32) -> kc.int32:  # noqa: F811
    return _load_i32(address, 0)


@kc.func
def read(address: kc.uint64, zero: kc.int64) -> kc.int64:  # noqa: F811
    return kc.int64(_load_u64(address, 0))


@kc.func
def read(address: kc.uint64, zero: kc.uint32) -> kc.uint32:  # noqa: F811
    return kc.uint32(_load_i32(address, 0))


@kc.func
def read(address: kc.uint64, zero: kc.vec3f) -> kc.vec3f:  # noqa: F811
    return kc.vec3f(_load_f32(address, 0), _load_f32(address, 1), _load_f32(address, 2))


@kc.func
def read(address: kc.uint64, zero: kc.vec3d) -> kc.vec3d:  # noqa: F811
    return kc.vec3d(_load_f64(address, 0), _load_f64(address, 1), _load_f64(address, 2))


@kc.func
def read(address: kc.uint64, zero: kc.vec4f) -> kc.vec4f:  # noqa: F811
    return kc.vec4f(_load_f32(address, 0), _load_f32(address, 1), _load_f32(address, 2),
                    _load_f32(address, 3))


@kc.func
def read(address: kc.uint64, zero: kc.vec4d) -> kc.vec4d:  # noqa: F811
    return kc.vec4d(_load_f64(address, 0), _load_f64(address, 1), _load_f64(address, 2),
                    _load_f64(address, 3))


# ---- weights: trilinear interpolation in the value's own scalar type ----------------------


@kc.func
def weigh(w: kc.float32, v: kc.float32) -> kc.float32:
    return w * v


@kc.func
def weigh(w: kc.float32, v: kc.float64) -> kc.float64:  # noqa: F811
    return kc.float64(w) * v


@kc.func
def weigh(w: kc.float32, v: kc.int32) -> kc.int32:  # noqa: F811
    return kc.int32(w) * v


@kc.func
def weigh(w: kc.float32, v: kc.int64) -> kc.int64:  # noqa: F811
    return kc.int64(w) * v


@kc.func
def weigh(w: kc.float32, v: kc.uint32) -> kc.uint32:  # noqa: F811
    return kc.uint32(w) * v


@kc.func
def weigh(w: kc.float32, v: kc.vec3f) -> kc.vec3f:  # noqa: F811
    return w * v


@kc.func
def weigh(w: kc.float32, v: kc.vec3d) -> kc.vec3d:  # noqa: F811
    return kc.float64(w) * v


@kc.func
def weigh(w: kc.float32, v: kc.vec4f) -> kc.vec4f:  # noqa: F811
    return w * v


@kc.func
def weigh(w: kc.float32, v: kc.vec4d) -> kc.vec4d:  # noqa: F811
    return kc.float64(w) * v


@kc.func
def grad_term(v: kc.float32, gw: kc.vec3f) -> kc.vec3f:
    """A corner's part of the gradient: its value times the weight's gradient (a row per
    component for vector values), in the value's scalar type."""
    return v * gw


@kc.func
def grad_term(v: kc.float64, gw: kc.vec3f) -> kc.vec3d:  # noqa: F811
    return v * kc.vec3d(gw)


@kc.func
def grad_term(v: kc.int32, gw: kc.vec3f) -> kc.vec3i:  # noqa: F811
    return v * kc.vec3i(kc.int32(gw[0]), kc.int32(gw[1]), kc.int32(gw[2]))


@kc.func
def grad_term(v: kc.int64, gw: kc.vec3f) -> kc.vec3l:  # noqa: F811
    return v * kc.vec3l(kc.int64(gw[0]), kc.int64(gw[1]), kc.int64(gw[2]))


@kc.func
def grad_term(v: kc.uint32, gw: kc.vec3f) -> kc.vec3ui:  # noqa: F811
    return v * kc.vec3ui(kc.uint32(gw[0]), kc.uint32(gw[1]), kc.uint32(gw[2]))


@kc.func
def grad_term(v: kc.vec3f, gw: kc.vec3f) -> kc.mat33f:  # noqa: F811
    return kc.outer(v, gw)


@kc.func
def grad_term(v: kc.vec3d, gw: kc.vec3f) -> kc.mat33d:  # noqa: F811
    return kc.outer(v, kc.vec3d(gw))


@kc.func
def grad_term(v: kc.vec4f, gw: kc.vec3f) -> kc.types.matrix((4, 3), kc.float32):  # noqa: F811
    return kc.outer(v, gw)


@kc.func
def grad_term(v: kc.vec4d, gw: kc.vec3f) -> kc.types.matrix((4, 3), kc.float64):  # noqa: F811
    return kc.outer(v, kc.vec3d(gw))
