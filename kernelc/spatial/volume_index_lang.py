"""Voxel indices in kernels: `volume_lookup_index`, `volume_sample_index`, ...

Every leaf voxel of a volume has a linear index into arrays the user keeps (one value per
voxel): in a grid of values, the dense index `leaf number * 512 + slot`; in an Index grid
(`allocate_by_tiles(bg_value=None)`), the leaf's stored offset plus the slot; in an OnIndex
grid (`allocate_by_voxels`), only active voxels have one, the leaf's offset plus the number
of active voxels before the slot (a popcount of the mask word below the slot, plus a prefix
sum of the earlier words packed nine bits apiece). NanoVDB stores these offsets one-based
(0 is the background), as `voxel_index` returns them.
"""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc.builtins import BUILTINS
from kernelc.spatial import volume_lang as vl

_load_u64 = BUILTINS["_load_uint64"]


@kc.func
def voxel_index(volume: kc.uint64, leaf: kc.uint64, slot: kc.int32) -> kc.uint64:
    """1 + the linear index of slot `slot` of `leaf`, or 0 when the voxel has none."""
    kind = vl._field(volume, vl.DESCRIPTOR_KIND)
    if kind == vl.KIND_VALUES:
        first = _load_u64(volume, vl.DESCRIPTOR_LEAVES // 8)
        number = (leaf - first) / kc.uint64(vl._field(volume, vl.DESCRIPTOR_LEAF_SIZE))
        return number * kc.uint64(512) + kc.uint64(slot + 1)
    offset = _load_u64(leaf, 10)  # at byte 80, after the box and the active mask
    if kind == vl.KIND_INDEX:
        return offset + kc.uint64(slot)
    if kind != vl.KIND_ON_INDEX:
        return kc.uint64(0)
    word = _load_u64(leaf, 2 + (slot >> 6))  # the active mask starts at byte 16
    bit = kc.uint64(1) << kc.uint64(slot & 63)
    if (word & bit) == kc.uint64(0):
        return kc.uint64(0)
    before = kc.bit_count(word & (bit - kc.uint64(1)))
    if slot >= 64:
        prefix = _load_u64(leaf, 11)  # at byte 88
        shift = kc.uint64(9 * ((slot >> 6) - 1))
        before += kc.int32((prefix >> shift) & kc.uint64(511))
    return offset + kc.uint64(before)


@kc.func
def lookup_index(volume: kc.uint64, i: kc.int32, j: kc.int32, k: kc.int32) -> kc.int32:
    """The linear index of voxel (i, j, k), -1 when it has none."""
    node, level, slot = vl.locate(volume, i, j, k)
    if level != 0:
        return -1
    return kc.int32(voxel_index(volume, node, slot)) - 1


@kc.func
def voxel_count(volume: kc.uint64) -> kc.int32:
    return vl._field(volume, vl.DESCRIPTOR_VOXEL_COUNT)


@kc.func
def index_value(volume: kc.uint64, node: kc.uint64, level: kc.int32, slot: kc.int32,
                data: kc.array(dtype=Any), background: Any):
    """The value of a voxel `locate` found: its element of `data`, else `background`."""
    if level == 0:
        index = voxel_index(volume, node, slot)
        if index != kc.uint64(0):
            return data[kc.int64(index) - kc.int64(1)]
    return background


@kc.func
def sample_index(volume: kc.uint64, uvw: kc.vec3f, mode: kc.int32, data: kc.array(dtype=Any),
                 background: Any, zero: Any):
    """`volume_sample` reading each voxel's value from `data` by its linear index."""
    if mode == vl.CLOSEST:
        ci, cj, ck = vl.closest_voxel(uvw)
        node, level, slot = vl.locate(volume, ci, cj, ck)
        return index_value(volume, node, level, slot, data, background)
    if mode != vl.LINEAR:
        return zero
    base = kc.vec3f(kc.floor(uvw[0]), kc.floor(uvw[1]), kc.floor(uvw[2]))
    frac = uvw - base
    i = kc.int32(base[0])
    j = kc.int32(base[1])
    k = kc.int32(base[2])
    acc = vl.Accessor()
    value = zero
    for c in range(8):
        w, gw = vl.corner_weights(frac, c)
        node, at, n, acc = vl.locate_cached(volume, acc, i + ((c >> 2) & 1),
                                            j + ((c >> 1) & 1), k + (c & 1))
        value = value + vl.weigh(w, index_value(volume, node, at, n, data, background))
    return value


@kc.func
def sample_grad_index(volume: kc.uint64, uvw: kc.vec3f, mode: kc.int32,
                      data: kc.array(dtype=Any), background: Any, zero: Any, grad_zero: Any):
    """`sample_index` and its gradient with respect to `uvw`."""
    if mode == vl.CLOSEST:
        ci, cj, ck = vl.closest_voxel(uvw)
        node, level, slot = vl.locate(volume, ci, cj, ck)
        return index_value(volume, node, level, slot, data, background), grad_zero
    if mode != vl.LINEAR:
        return zero, grad_zero
    base = kc.vec3f(kc.floor(uvw[0]), kc.floor(uvw[1]), kc.floor(uvw[2]))
    frac = uvw - base
    i = kc.int32(base[0])
    j = kc.int32(base[1])
    k = kc.int32(base[2])
    acc = vl.Accessor()
    value = zero
    grad = grad_zero
    for c in range(8):
        w, gw = vl.corner_weights(frac, c)
        node, at, n, acc = vl.locate_cached(volume, acc, i + ((c >> 2) & 1),
                                            j + ((c >> 1) & 1), k + (c & 1))
        v = index_value(volume, node, at, n, data, background)
        value = value + vl.weigh(w, v)
        grad = grad + vl.grad_term(v, gw)
    return value, grad
