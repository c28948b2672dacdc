"""The sparse volume's kernel side, written in kernelc's own language.

A volume is a descriptor in device memory (`DESCRIPTOR_*`, from `volume_root`: the NanoVDB
grid's address, the byte layout of its nodes, which depends on the value type, and a hash
table of the root's tiles) that kernels receive as a `uint64` id. `locate` walks the
NanoVDB tree for a voxel: the root tile of the coordinate's top bits (one probe of the
hash table, where NanoVDB searches the root's table linearly), then an upper node (32^3
entries), a lower node (16^3) and a leaf (8^3). At each level a child-mask bit says whether
the entry is a child's byte offset or a value, so a walk ends at a leaf value, a tile value
of an internal node or root tile, or the background. The eight corners of a trilinear
sample go through `locate_cached`, which starts from the deepest node of the previous walk
that still holds the voxel (NanoVDB's read accessor; it also remembers the root's answer,
so corners in empty space share one root lookup). The value types are read by overloads
of `read` (`volume_values_lang`), which the generic samplers call with a zero of the
wanted type.

Arithmetic follows Warp's (NanoVDB's) operation by operation, so that results agree bit for
bit: nearest sampling rounds halfway away from zero, trilinear weights are products of
float32 factors taken x, y, z, and the eight corners are summed in the order
(0,0,0), (0,0,1), (0,1,0), ..., (1,1,1), starting from zero.
"""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc.autodiff.custom import adjoint, func_grad
from kernelc.builtins import BUILTINS
from kernelc.spatial.volume_root import (  # noqa: F401
    DESCRIPTOR_BACKGROUND,
    DESCRIPTOR_GRID,
    DESCRIPTOR_GRID_TYPE,
    DESCRIPTOR_HASH_MASK,
    DESCRIPTOR_HASH_PROBES,
    DESCRIPTOR_HASH_SHIFT,
    DESCRIPTOR_KIND,
    DESCRIPTOR_LEAF_SIZE,
    DESCRIPTOR_LEAF_TABLE,
    DESCRIPTOR_LEAVES,
    DESCRIPTOR_LOWER_TABLE,
    DESCRIPTOR_ROOT,
    DESCRIPTOR_SIZE,
    DESCRIPTOR_TABLE_STRIDE,
    DESCRIPTOR_TILE_COUNT,
    DESCRIPTOR_TILE_SIZE,
    DESCRIPTOR_TILE_VALUE,
    DESCRIPTOR_TILES,
    DESCRIPTOR_UPPER_TABLE,
    DESCRIPTOR_VALUE_SIZE,
    DESCRIPTOR_VOXEL_COUNT,
    EMPTY_KEY,
    HASH_MULTIPLIER,
    KIND_INDEX,
    KIND_ON_INDEX,
    KIND_UNSUPPORTED,
    KIND_VALUES,
)

# The descriptor's fields and the root hash table (`volume_root`), read here and by
# `volume_index_lang`.
from kernelc.spatial.volume_values_lang import grad_term, read, weigh  # noqa: F401

CLOSEST = 0
LINEAR = 1

# Grid offsets of the index-to-world map.
_MATF = (296 + 0) // 4
_INVMATF = (296 + 36) // 4
_VECF = (296 + 72) // 4
_MATD = (296 + 88) // 8
_INVMATD = (296 + 160) // 8
_VECD = (296 + 232) // 8

_load_i32 = BUILTINS["_load_int32"]
_load_u64 = BUILTINS["_load_uint64"]
_load_f32 = BUILTINS["_load_float32"]
_load_f64 = BUILTINS["_load_float64"]


@kc.struct
class RawView:
    """A one-element array view (data pointer, shape, byte stride) of a voxel's value, which
    `volume_store` reinterprets as an array to store through."""

    data: kc.uint64
    shape: kc.int64
    stride: kc.int64


@kc.func
def _field(volume: kc.uint64, offset: kc.int32) -> kc.int32:
    return _load_i32(volume, offset // 4)


@kc.func
def _offset(base: kc.uint64, bytes: kc.int32) -> kc.uint64:
    return base + kc.uint64(kc.int64(bytes))


@kc.func
def _bit(node: kc.uint64, mask_offset: kc.int32, n: kc.int32) -> bool:
    word = _load_i32(node, mask_offset // 4 + (n >> 5))
    return ((word >> (n & 31)) & 1) != 0


@kc.func
def _child(node: kc.uint64, table: kc.int32, stride: kc.int32, n: kc.int32) -> kc.uint64:
    # a signed byte offset from the node; uint64 arithmetic wraps, as two's complement does
    return node + _load_u64(_offset(node, table + n * stride), 0)


@kc.func
def coord_key(i: kc.int32, j: kc.int32, k: kc.int32) -> kc.uint64:
    """The root table's key: the top 20 bits of each coordinate, as unsigned numbers."""
    iu = kc.uint64(kc.uint32(i) >> kc.uint32(12))
    ju = kc.uint64(kc.uint32(j) >> kc.uint32(12))
    ku = kc.uint64(kc.uint32(k) >> kc.uint32(12))
    return ku | (ju << kc.uint64(21)) | (iu << kc.uint64(42))


@kc.func
def leaf_slot(i: kc.int32, j: kc.int32, k: kc.int32) -> kc.int32:
    return ((i & 7) << 6) | ((j & 7) << 3) | (k & 7)


@kc.struct
class Accessor:
    """The nodes of the last walk (NanoVDB's read accessor): a walk for a nearby voxel
    starts from the deepest cached node that still contains it. `top` is what the root
    gave for the key of (i, j, k) and `level` its level (2: an upper node, 3: a tile, 4:
    neither, the background), so that voxels of empty space share one root lookup too.
    Zero: nothing cached."""

    i: kc.int32
    j: kc.int32
    k: kc.int32
    level: kc.int32
    top: kc.uint64
    lower: kc.uint64
    leaf: kc.uint64


@kc.func
def find_tile(volume: kc.uint64, key: kc.uint64) -> kc.uint64:
    """The byte offset from the root of the root tile with `key`, 0 when there is none:
    a search of the root's table when it is short (`DESCRIPTOR_HASH_PROBES` 0), else a
    probe of the hash table that follows the descriptor."""
    probes = _field(volume, DESCRIPTOR_HASH_PROBES)
    if probes == 0:
        # every thread reads the same tiles here: vector code loads each key once
        root = _load_u64(volume, DESCRIPTOR_ROOT // 8)
        size = _field(volume, DESCRIPTOR_TILE_SIZE)
        offset = _field(volume, DESCRIPTOR_TILES)
        for _t in range(_field(volume, DESCRIPTOR_TILE_COUNT)):
            if _load_u64(_offset(root, offset), 0) == key:
                return kc.uint64(offset)
            offset += size
        return kc.uint64(0)
    mask = kc.uint64(_field(volume, DESCRIPTOR_HASH_MASK))
    slot = (key * kc.uint64(HASH_MULTIPLIER)) >> kc.uint64(_field(volume, DESCRIPTOR_HASH_SHIFT))
    for _probe in range(probes):
        at = kc.uint64(DESCRIPTOR_SIZE // 8) + slot * kc.uint64(2)
        entry = _load_u64(volume, at)
        if entry == key:
            return _load_u64(volume, at + kc.uint64(1))
        if entry == kc.uint64(EMPTY_KEY):
            return kc.uint64(0)
        slot = (slot + kc.uint64(1)) & mask
    return kc.uint64(0)


@kc.func
def _in_root(volume: kc.uint64, i: kc.int32, j: kc.int32, k: kc.int32):
    """(node, level): the upper node holding (i, j, k) (level 2), a constant root tile (3),
    or the root itself, when no tile holds it (4)."""
    root = _load_u64(volume, DESCRIPTOR_ROOT // 8)
    offset = find_tile(volume, coord_key(i, j, k))
    if offset == kc.uint64(0):
        return root, 4
    tile = root + offset
    child = _load_u64(tile, 1)
    if child == kc.uint64(0):
        return tile, 3
    return root + child, 2


@kc.func
def _in_upper(volume: kc.uint64, upper: kc.uint64, i: kc.int32, j: kc.int32, k: kc.int32):
    """(lower node, True, slot) when a child holds (i, j, k), else (upper, False, slot)."""
    n = (((i & 4095) >> 7) << 10) | (((j & 4095) >> 7) << 5) | ((k & 4095) >> 7)
    if not _bit(upper, 4128, n):
        return upper, False, n
    stride = _field(volume, DESCRIPTOR_TABLE_STRIDE)
    return _child(upper, _field(volume, DESCRIPTOR_UPPER_TABLE), stride, n), True, n


@kc.func
def _in_lower(volume: kc.uint64, lower: kc.uint64, i: kc.int32, j: kc.int32, k: kc.int32):
    """(leaf, True, slot) when a leaf holds (i, j, k), else (lower, False, slot)."""
    m = (((i & 127) >> 3) << 8) | (((j & 127) >> 3) << 4) | ((k & 127) >> 3)
    if not _bit(lower, 544, m):
        return lower, False, m
    stride = _field(volume, DESCRIPTOR_TABLE_STRIDE)
    return _child(lower, _field(volume, DESCRIPTOR_LOWER_TABLE), stride, m), True, m


@kc.func
def locate(volume: kc.uint64, i: kc.int32, j: kc.int32, k: kc.int32):
    """(node, level, slot) holding voxel (i, j, k): a leaf (level 0), lower (1) or upper (2)
    node and the slot of its table, a root tile (3), or the root, for the background (4)."""
    node, level = _in_root(volume, i, j, k)
    if level != 2:
        return node, level, 0
    node, down, n = _in_upper(volume, node, i, j, k)
    if not down:
        return node, 2, n
    node, down, m = _in_lower(volume, node, i, j, k)
    if not down:
        return node, 1, m
    return node, 0, leaf_slot(i, j, k)


@kc.func
def locate_cached(volume: kc.uint64, acc: Accessor, i: kc.int32, j: kc.int32, k: kc.int32):
    """`locate` through the accessor `acc`; returns its result and the updated accessor."""
    dirty = (i ^ acc.i) | (j ^ acc.j) | (k ^ acc.k)
    if acc.leaf != kc.uint64(0) and (dirty & -8) == 0:
        return acc.leaf, 0, leaf_slot(i, j, k), acc
    acc.leaf = kc.uint64(0)
    lower = acc.lower
    if lower == kc.uint64(0) or (dirty & -128) != 0:
        acc.lower = kc.uint64(0)
        if acc.level == 0 or (dirty & -4096) != 0:  # another root key
            top, level = _in_root(volume, i, j, k)
            acc.top = top
            acc.level = level
            acc.i = i
            acc.j = j
            acc.k = k
        if acc.level != 2:
            return acc.top, acc.level, 0, acc
        node, down, n = _in_upper(volume, acc.top, i, j, k)
        acc.i = i
        acc.j = j
        acc.k = k
        if not down:
            return node, 2, n, acc
        lower = node
        acc.lower = lower
    node, down, m = _in_lower(volume, lower, i, j, k)
    if not down:
        return node, 1, m, acc
    acc.leaf = node
    acc.i = i
    acc.j = j
    acc.k = k
    return node, 0, leaf_slot(i, j, k), acc


@kc.func
def value_address(volume: kc.uint64, node: kc.uint64, level: kc.int32, slot: kc.int32
                  ) -> kc.uint64:
    """The address of the value `locate` found."""
    if level == 0:
        return _offset(node, _field(volume, DESCRIPTOR_LEAF_TABLE)
                       + slot * _field(volume, DESCRIPTOR_VALUE_SIZE))
    stride = _field(volume, DESCRIPTOR_TABLE_STRIDE)
    if level == 1:
        return _offset(node, _field(volume, DESCRIPTOR_LOWER_TABLE) + slot * stride)
    if level == 2:
        return _offset(node, _field(volume, DESCRIPTOR_UPPER_TABLE) + slot * stride)
    if level == 3:
        return _offset(node, _field(volume, DESCRIPTOR_TILE_VALUE))
    return _offset(node, _field(volume, DESCRIPTOR_BACKGROUND))


@kc.func
def has_type(volume: kc.uint64, grid_type: kc.int32) -> bool:
    return _field(volume, DESCRIPTOR_GRID_TYPE) == grid_type


@kc.func
def lookup(volume: kc.uint64, i: kc.int32, j: kc.int32, k: kc.int32, zero: Any,
           grid_type: kc.int32):
    """The value at voxel (i, j, k); `zero` when the grid holds another type."""
    if not has_type(volume, grid_type):
        return zero
    node, level, slot = locate(volume, i, j, k)
    return read(value_address(volume, node, level, slot), zero)


@kc.func
def store_address(volume: kc.uint64, i: kc.int32, j: kc.int32, k: kc.int32,
                  grid_type: kc.int32) -> kc.uint64:
    """Where `volume_store` writes voxel (i, j, k): its leaf value, or 0 (no store) when the
    voxel has no leaf or the grid holds another type."""
    if not has_type(volume, grid_type):
        return kc.uint64(0)
    node, level, slot = locate(volume, i, j, k)
    if level != 0:
        return kc.uint64(0)
    return value_address(volume, node, level, slot)


@kc.func
def closest_voxel(uvw: kc.vec3f):
    # roundf: halfway cases away from zero, as Warp
    return kc.int32(kc.round(uvw[0])), kc.int32(kc.round(uvw[1])), kc.int32(kc.round(uvw[2]))


@kc.func
def corner_weights(frac: kc.vec3f, c: kc.int32):
    """The trilinear weight of corner c (x = bit 2, y = bit 1, z = bit 0) and its gradient."""
    dx = (c >> 2) & 1
    dy = (c >> 1) & 1
    dz = c & 1
    wx = kc.where(dx == 1, frac[0], 1.0 - frac[0])
    wy = kc.where(dy == 1, frac[1], 1.0 - frac[1])
    wz = kc.where(dz == 1, frac[2], 1.0 - frac[2])
    sx = kc.float32(2 * dx - 1)
    sy = kc.float32(2 * dy - 1)
    sz = kc.float32(2 * dz - 1)
    return wx * wy * wz, kc.vec3f(sx * wy * wz, sy * wx * wz, sz * wx * wy)


@kc.func
def sample(volume: kc.uint64, uvw: kc.vec3f, mode: kc.int32, zero: Any, grid_type: kc.int32):
    """The value at index-space point `uvw`: nearest voxel or trilinear."""
    if not has_type(volume, grid_type):
        return zero
    if mode == CLOSEST:
        ci, cj, ck = closest_voxel(uvw)
        return lookup(volume, ci, cj, ck, zero, grid_type)
    if mode != LINEAR:
        return zero
    base = kc.vec3f(kc.floor(uvw[0]), kc.floor(uvw[1]), kc.floor(uvw[2]))
    frac = uvw - base
    i = kc.int32(base[0])
    j = kc.int32(base[1])
    k = kc.int32(base[2])
    acc = Accessor()
    value = zero
    for c in range(8):
        w, gw = corner_weights(frac, c)
        node, at, n, acc = locate_cached(volume, acc, i + ((c >> 2) & 1), j + ((c >> 1) & 1),
                                         k + (c & 1))
        value = value + weigh(w, read(value_address(volume, node, at, n), zero))
    return value


@kc.func
def sample_grad(volume: kc.uint64, uvw: kc.vec3f, mode: kc.int32, zero: Any, grad_zero: Any,
                grid_type: kc.int32):
    """(value, gradient w.r.t. uvw) at index-space point `uvw`; the gradient is zero for
    nearest sampling."""
    if not has_type(volume, grid_type):
        return zero, grad_zero
    if mode == CLOSEST:
        ci, cj, ck = closest_voxel(uvw)
        return lookup(volume, ci, cj, ck, zero, grid_type), grad_zero
    if mode != LINEAR:
        return zero, grad_zero
    base = kc.vec3f(kc.floor(uvw[0]), kc.floor(uvw[1]), kc.floor(uvw[2]))
    frac = uvw - base
    i = kc.int32(base[0])
    j = kc.int32(base[1])
    k = kc.int32(base[2])
    acc = Accessor()
    value = zero
    grad = grad_zero
    for c in range(8):
        w, gw = corner_weights(frac, c)
        node, at, n, acc = locate_cached(volume, acc, i + ((c >> 2) & 1), j + ((c >> 1) & 1),
                                         k + (c & 1))
        v = read(value_address(volume, node, at, n), zero)
        value = value + weigh(w, v)
        grad = grad + grad_term(v, gw)
    return value, grad


# ---- index <-> world transforms: the grid's map, float32 or float64 -----------------------


@kc.func
def _map_f(grid: kc.uint64, at: kc.int32, v: kc.vec3f) -> kc.vec3f:
    # row by row, products summed left to right, as NanoVDB's map
    return kc.vec3f(
        v[0] * _load_f32(grid, at) + v[1] * _load_f32(grid, at + 1)
        + v[2] * _load_f32(grid, at + 2),
        v[0] * _load_f32(grid, at + 3) + v[1] * _load_f32(grid, at + 4)
        + v[2] * _load_f32(grid, at + 5),
        v[0] * _load_f32(grid, at + 6) + v[1] * _load_f32(grid, at + 7)
        + v[2] * _load_f32(grid, at + 8))


@kc.func
def _map_d(grid: kc.uint64, at: kc.int32, v: kc.vec3d) -> kc.vec3d:
    return kc.vec3d(
        v[0] * _load_f64(grid, at) + v[1] * _load_f64(grid, at + 1)
        + v[2] * _load_f64(grid, at + 2),
        v[0] * _load_f64(grid, at + 3) + v[1] * _load_f64(grid, at + 4)
        + v[2] * _load_f64(grid, at + 5),
        v[0] * _load_f64(grid, at + 6) + v[1] * _load_f64(grid, at + 7)
        + v[2] * _load_f64(grid, at + 8))


@kc.func
def _translation_f(grid: kc.uint64) -> kc.vec3f:
    return kc.vec3f(_load_f32(grid, _VECF), _load_f32(grid, _VECF + 1),
                    _load_f32(grid, _VECF + 2))


@kc.func
def _translation_d(grid: kc.uint64) -> kc.vec3d:
    return kc.vec3d(_load_f64(grid, _VECD), _load_f64(grid, _VECD + 1),
                    _load_f64(grid, _VECD + 2))


@kc.func
def _grid(volume: kc.uint64) -> kc.uint64:
    return _load_u64(volume, DESCRIPTOR_GRID // 8)


@kc.func
def _linear_f(volume: kc.uint64, at: kc.int32, v: kc.vec3f) -> kc.vec3f:
    return _map_f(_grid(volume), at, v)


@func_grad(_linear_f)
def _linear_f_grad(volume: kc.uint64, at: kc.int32, v: kc.vec3f, adj_ret: kc.vec3f):
    # Warp's float32 transforms pass the adjoint through the map itself, not through its
    # transpose (the float64 ones use the transpose); kept so that gradients agree
    adjoint[v] += _map_f(_grid(volume), at, adj_ret)


@kc.func
def index_to_world(volume: kc.uint64, uvw: kc.vec3f) -> kc.vec3f:
    return _linear_f(volume, _MATF, uvw) + _translation_f(_grid(volume))


@kc.func
def index_to_world(volume: kc.uint64, uvw: kc.vec3d) -> kc.vec3d:  # noqa: F811
    grid = _grid(volume)
    return _map_d(grid, _MATD, uvw) + _translation_d(grid)


@kc.func
def world_to_index(volume: kc.uint64, xyz: kc.vec3f) -> kc.vec3f:
    return _linear_f(volume, _INVMATF, xyz - _translation_f(_grid(volume)))


@kc.func
def world_to_index(volume: kc.uint64, xyz: kc.vec3d) -> kc.vec3d:  # noqa: F811
    grid = _grid(volume)
    return _map_d(grid, _INVMATD, xyz - _translation_d(grid))


@kc.func
def index_to_world_dir(volume: kc.uint64, uvw: kc.vec3f) -> kc.vec3f:
    return _linear_f(volume, _MATF, uvw)


@kc.func
def index_to_world_dir(volume: kc.uint64, uvw: kc.vec3d) -> kc.vec3d:  # noqa: F811
    return _map_d(_grid(volume), _MATD, uvw)


@kc.func
def world_to_index_dir(volume: kc.uint64, xyz: kc.vec3f) -> kc.vec3f:
    return _linear_f(volume, _INVMATF, xyz)


@kc.func
def world_to_index_dir(volume: kc.uint64, xyz: kc.vec3d) -> kc.vec3d:  # noqa: F811
    return _map_d(_grid(volume), _INVMATD, xyz)
