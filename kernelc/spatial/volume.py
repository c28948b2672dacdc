"""`kc.Volume`: a sparse volume in NanoVDB format that kernels sample through `volume.id`.

The volume keeps a NanoVDB grid buffer on its device (`volume.array()`) and, next to it, a
small descriptor (`kernelc.spatial.volume_root`: the grid's address, the byte layout of its
nodes and a hash table of its root's tiles) whose address is the `uint64` id kernels
receive. Grids come from
`.nvdb` files, from buffers, or are built on the host with NumPy (`load_from_numpy`,
`allocate`, `allocate_by_tiles`, `allocate_by_voxels`) in the node order Warp's builder
uses, on every device.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from kernelc import types as T
from kernelc.runtime.array import array, zeros
from kernelc.runtime.device import get_device
from kernelc.spatial import nanovdb as nv
from kernelc.spatial import nanovdb_validate as nvv
from kernelc.spatial import volume_rebuild as rb
from kernelc.spatial.nanovdb_build import build_grid
from kernelc.spatial.volume_grids import (
    allocation_type,
    dense_leaves,
    normalize_voxel_size,
    points_to_coords,
    transform_of,
)
from kernelc.spatial.volume_root import descriptor
from kernelc.spatial.voxel_sets import unique_rows
from kernelc.types_vec import TYPES

__all__ = ["Volume"]

# What `Volume.dtype` reports for each NanoVDB value type: Warp's named types (`kc.vec3f`).
_DTYPES = {"float": T.float32, "double": T.float64, "int16": T.int16, "int32": T.int32,
           "int64": T.int64, "Vec3f": TYPES["vec3f"], "Vec3d": TYPES["vec3d"],
           "Half": T.float16, "uint32": T.uint32, "bool": T.bool_, "Vec4f": TYPES["vec4f"],
           "Vec4d": TYPES["vec4d"], "Vec3u8": TYPES["vec3ub"], "Vec3u16": TYPES["vec3us"],
           "uint8": T.uint8}


class Volume:
    """A sparse volume (a NanoVDB grid) that kernels read and write through `volume.id`.

    Args:
        data: Contiguous `kc.uint8` array of NanoVDB grids (no file header): the first is used.
        copy: Copy the buffer (True) or use it in place (False: keep it alive).

    Attributes:
        id: The `uint64` to pass to kernels.
        device: The device of the volume.
    """

    CLOSEST: ClassVar[int] = 0
    """Nearest-voxel sampling (halfway cases round away from zero)."""
    LINEAR: ClassVar[int] = 1
    """Trilinear sampling."""
    # The flags `status` receives from a rebuildable allocation or a `rebuild`.
    REBUILD_SUCCESS: ClassVar[int] = rb.SUCCESS
    REBUILD_LEAF_CAPACITY_EXCEEDED: ClassVar[int] = rb.LEAF_CAPACITY_EXCEEDED
    REBUILD_LOWER_CAPACITY_EXCEEDED: ClassVar[int] = rb.LOWER_CAPACITY_EXCEEDED
    REBUILD_UPPER_CAPACITY_EXCEEDED: ClassVar[int] = rb.UPPER_CAPACITY_EXCEEDED
    REBUILD_VOXEL_CAPACITY_EXCEEDED: ClassVar[int] = rb.VOXEL_CAPACITY_EXCEEDED
    REBUILD_INVALID_INPUT: ClassVar[int] = rb.INVALID_INPUT

    class GridInfo(NamedTuple):
        """Grid metadata: name, size in bytes, position in its buffer, value type name and
        the index-to-world transform (float32)."""

        name: str
        size_in_bytes: int
        grid_index: int
        grid_count: int
        type_str: str
        translation: Any
        transform_matrix: Any

    class ActiveStats(NamedTuple):
        """Topology counts of the grid as it is now."""

        voxel_count: int
        leaf_node_count: int
        lower_node_count: int
        upper_node_count: int

    class RebuildInfo(NamedTuple):
        """What a rebuildable volume reserves: `kind` ("voxels", "tiles"; None for other
        volumes, whose counts are 0) and the most voxels, leaves, lower and upper nodes."""

        kind: str | None
        max_voxel_count: int
        max_leaf_node_count: int
        max_lower_node_count: int
        max_upper_node_count: int

    class FeatureArrayInfo(NamedTuple):
        """A blind-data array stored with the grid."""

        name: str
        ptr: int
        value_size: int
        value_count: int
        type_str: str

    def __init__(self, data: array | None, copy: bool = True) -> None:
        self.id = None
        self._capacity: rb.Capacity | None = None
        if data is None:
            return
        if not isinstance(data, array) or data.ndim != 1 or not data.is_contiguous:
            raise TypeError("Volume data must be a contiguous 1-d kc.array of bytes")
        self._source = data  # a buffer used in place stays alive with the volume
        if data.dtype != T.uint8:
            data = array(ptr=data.ptr, dtype=T.uint8, shape=data.size * data.dtype.size,
                         device=data.device)
        self.device = data.device
        host = data.numpy()
        self._header = nvv.validate(host)
        self._features = nvv.feature_infos(host, self._header)
        self._buffer = array(data, copy=True) if copy else data
        self._write_descriptor(host)

    def _write_descriptor(self, host: np.ndarray) -> None:
        raw = descriptor(host, self._header, self._buffer.ptr)
        self._descriptor = array(raw, dtype=T.uint8, device=self.device)
        self.id = self._descriptor.ptr

    def _host(self) -> np.ndarray:
        """The grid's bytes on the host (a view for CPU volumes, a copy otherwise)."""
        return self.array().numpy()

    def _check(self) -> None:
        if not self.id:
            raise RuntimeError("Invalid Volume")

    # ---- metadata ------------------------------------------------------------------------

    def array(self) -> array:
        """The volume's buffer (its grid and any grids after it), as an array of bytes on
        the volume's device (a view that keeps the volume's memory alive)."""
        self._check()
        if self._capacity is not None:  # storage reserved for rebuilds: the grid in it
            return self._buffer[:self._header.grid_size]
        return self._buffer

    def get_grid_info(self) -> Volume.GridInfo:
        """The grid's name, size, index and count in its buffer, type and transform."""
        self._check()
        h = nv.read_header(self._host()[:nv.GRID_SIZE + nv.TREE_SIZE])

        return Volume.GridInfo(h.name, h.grid_size, h.grid_index, h.grid_count, h.type_str,
                               TYPES["vec3f"](*h.vecf), TYPES["mat33f"](*h.matf))

    def get_voxel_size(self) -> tuple[float, float, float]:
        """The voxel size in world units (float32 precision, as Warp reports it)."""
        self._check()
        return tuple(float(np.float32(v)) for v in self._header.voxel_size)

    @property
    def dtype(self) -> Any:
        """The type of the grid's values (None for index grids and other special types)."""
        return _DTYPES.get(self._header.type_str)

    @property
    def is_index(self) -> bool:
        """Whether the grid is an index grid (no values: a linear index per voxel)."""
        return self._header.grid_type in nv.INDEX_TYPES

    @property
    def is_rebuildable(self) -> bool:
        """Whether the volume was allocated with capacity for `rebuild`."""
        return self._capacity is not None

    def get_rebuild_info(self) -> Volume.RebuildInfo:
        """The capacity reserved for rebuilds (kind None and zeros if not rebuildable)."""
        if self._capacity is None:
            return Volume.RebuildInfo(None, 0, 0, 0, 0)
        return Volume.RebuildInfo(*self._capacity)

    def rebuild(self, points: Any, status: Any = None, point_mask: Any = None) -> Any:
        """Rebuilds the topology in place from `points`: voxel points for a volume from
        `allocate_by_voxels`, tile points for one from `allocate_by_tiles` (index-space ints
        or world-space floats, as there; points whose `point_mask` entry is 0 are ignored).

        The id, transform, value type, background and capacity stay; values of a value
        grid start again at the background. A topology beyond the capacity leaves the
        volume as it was. `status` (a one-element `uint32` array) receives the
        `REBUILD_*` flags; returns it (or None).
        """
        if self._capacity is None:
            raise RuntimeError("Volume is not rebuildable (allocate it with rebuildable=True)")
        status = rb.checked_status(status, self.device)
        what = "voxel_points" if self._capacity.kind == "voxels" else "tile_points"
        spec = self._spec
        coords = points_to_coords(points, point_mask, spec.matrix, spec.translation, what,
                                  allow_empty=True)
        if _point_count(points) == 0:
            return rb.report(status, rb.INVALID_INPUT)  # no points at all, as Warp
        grid, flags = self._grid_within_capacity(coords)
        if grid is not None:
            self._install(grid)
        return rb.report(status, flags)

    def get_tile_count(self) -> int:
        """The number of tiles (NanoVDB leaves, 8^3 voxels each); for a rebuildable volume,
        as in Warp, the most it may hold (`get_active_stats` has the current count)."""
        self._check()
        if self._capacity is not None:
            return self._capacity.leaves
        return self._header.node_counts[0]

    def get_voxel_count(self) -> int:
        """The number of indexable voxels: the active voxels of an OnIndex grid (from
        `allocate_by_voxels`), else 512 per tile; for a rebuildable volume, as in Warp,
        the most it may hold (`get_active_stats` has the current count)."""
        self._check()
        if self._capacity is not None:
            return self._capacity.voxels
        return nv.indexable_voxel_count(self._header)

    def get_active_stats(self) -> Volume.ActiveStats:
        """Voxel, leaf, lower-node and upper-node counts of the grid as it is now."""
        self._check()
        return Volume.ActiveStats(nv.indexable_voxel_count(self._header),
                                  *self._header.node_counts)

    def _out(self, out: array | None, rows: np.ndarray, count: int) -> array:
        """`rows` in a new (count, 3) array or in `out`. A rebuildable volume reports its
        capacity's worth (`count`) of tiles or voxels, as Warp's: rows past the current ones
        are zero in a new array and left as they were in `out`."""
        if out is None:
            padded = np.zeros((max(count, len(rows)), 3), np.int32)
            padded[:len(rows)] = rows
            return array(padded, dtype=T.int32, device=self.device)
        vec3i = T.VectorType(3, T.int32)
        shape_ok = (out.ndim == 1 and out.dtype == vec3i) or (
            out.ndim == 2 and out.dtype == T.int32 and out.shape[1] == 3)
        need = max(count, len(rows))
        if not isinstance(out, array) or out.device != self.device or len(out) < need:
            raise RuntimeError(f"'out' must be an array with at least {need} rows on "
                               f"device {self.device}")
        if not shape_ok or not out.is_contiguous:
            raise RuntimeError("'out' must be a contiguous 1D array with type vec3i or a 2D "
                               "array of type int32 with shape (N, 3)")
        if len(rows):
            flat = array(ptr=out.ptr, dtype=T.int32, shape=(len(rows), 3), device=self.device)
            flat.assign(np.ascontiguousarray(rows))
        return out

    def get_tiles(self, out: array | None = None) -> array:
        """The origins of the tiles, in storage order: an (n, 3) int32 array (or `out`)."""
        self._check()
        return self._out(out, nv.leaf_origins(self._host(), self._header), self.get_tile_count())

    def get_voxels(self, out: array | None = None) -> array:
        """The coordinates of the indexable voxels, by linear index: (n, 3) int32."""
        self._check()
        host, h = self._host(), self._header
        origins = nv.leaf_origins(host, h)
        coords = (origins[:, None, :] + nv.leaf_offsets_to_coords()[None]).reshape(-1, 3)
        if nv.INDEX_TYPES.get(h.grid_type) == 2:
            coords = coords[nv.active_masks(host, h).reshape(-1)]
        coords = coords[:nv.indexable_voxel_count(h)]
        return self._out(out, coords, self.get_voxel_count())

    # ---- blind data ----------------------------------------------------------------------

    def get_feature_array_count(self) -> int:
        """The number of blind-data arrays stored with the grid."""
        self._check()
        return self._header.blind_count

    def get_feature_array_info(self, feature_index: int) -> Volume.FeatureArrayInfo:
        """Name, address, value size and count, and type of blind-data array `feature_index`
        (as validated when the volume was made)."""
        self._check()
        index = operator.index(feature_index)
        if not 0 <= index < len(self._features):
            raise RuntimeError("Invalid feature array")
        f = self._features[index]
        return Volume.FeatureArrayInfo(f.name, self._buffer.ptr + f.offset, f.value_size,
                                       f.value_count, nv.GRID_TYPES.get(f.grid_type, ("?",))[0])

    def feature_array(self, feature_index: int, dtype: Any = None) -> array:
        """Blind-data array `feature_index` as an array (of `dtype`, or of its stored type)."""
        info = self.get_feature_array_info(feature_index)
        t = T.as_type(dtype) if dtype is not None else _DTYPES.get(info.type_str, T.uint8)
        count, size = info.value_count, info.value_size
        if t.size == 1:  # any data as bytes
            count, size = count * size, 1
        elif size == 1 and count % t.size == 0:  # bytes as any type
            count, size = count // t.size, t.size
        if t.size != size:
            raise RuntimeError(f"Cannot cast feature data of size {size} to array dtype {t!r}")
        # A view of the volume's buffer, which it keeps alive (the volume may go first).
        return array._over(self._buffer._alloc, info.ptr, (count,), (t.size,), t)

    # ---- files and buffers ---------------------------------------------------------------

    @classmethod
    def load_from_nvdb(cls, file_or_buffer: Any, device: Any = None) -> Volume:
        """A volume from a `.nvdb` file (an open binary file or its bytes), uncompressed or
        zlib-compressed (blosc too, when the `blosc` module is installed)."""
        read = getattr(file_or_buffer, "read", None)
        data = read() if read is not None else file_or_buffer
        if isinstance(data, np.ndarray):
            data = data.tobytes()
        grids = np.frombuffer(nv.read_nvdb(bytes(data)), np.uint8)
        nvv.split_grids(grids)  # every grid of the buffer, before anything is allocated
        return cls(array(grids, dtype=T.uint8, device=device), copy=False)

    def save_to_nvdb(self, path: Any, codec: str = "none") -> Any:
        """Writes the grids of the volume's buffer to a `.nvdb` file (codec "none", "zip"
        or "blosc"); returns `path`."""
        self._check()
        if self._header.grid_index > 0:
            raise RuntimeError("Saving of aliased Volumes is not supported. Use `save_to_nvdb` "
                               "on the original volume, before any `load_next_grid` calls.")
        blob = nv.write_nvdb(self.array().numpy(), codec)
        with open(path, "wb") as f:
            f.write(blob)
        return path

    @classmethod
    def load_from_address(cls, grid_ptr: int, buffer_size: int = 0, device: Any = None
                          ) -> Volume:
        """A volume using, in place, the grid buffer at address `grid_ptr` on `device`
        (`buffer_size` bytes; 0: the size of the grid found there)."""
        if not grid_ptr:
            raise RuntimeError("Invalid grid buffer pointer")
        if not buffer_size:
            head = array(ptr=grid_ptr, dtype=T.uint8, shape=nv.GRID_SIZE + nv.TREE_SIZE,
                         device=device).numpy()
            buffer_size = nv.read_header(head).grid_size
        return cls(array(ptr=grid_ptr, dtype=T.uint8, shape=buffer_size, device=device),
                   copy=False)

    def load_next_grid(self) -> Volume | None:
        """The next grid of the volume's buffer as a volume (None after the last one)."""
        self._check()
        h = self._header
        rest = self._buffer.size - h.grid_size
        if h.grid_index + 1 >= h.grid_count or rest <= 0:
            return None
        if h.grid_size % 32:
            raise RuntimeError(f"Invalid NanoVDB grid structure: grid size {h.grid_size} is "
                               f"not a multiple of 32, so the next grid is misaligned")
        volume = Volume.load_from_address(self._buffer.ptr + h.grid_size, rest, self.device)
        volume._previous_grid = self  # the buffer is this volume's
        return volume

    # ---- building volumes on the host ----------------------------------------------------

    @classmethod
    def _allocate(cls, spec: rb.Spec, points: Any, point_mask: Any, capacity: Any,
                  status: Any, device: Any) -> Volume:
        """The volume of `allocate_by_voxels` / `allocate_by_tiles`: exact, or with storage
        reserved for `capacity` (a `volume_rebuild.Capacity`) when it is rebuildable."""
        what = "voxel_points" if spec.kind == "voxels" else "tile_points"
        coords = points_to_coords(points, point_mask, spec.matrix, spec.translation, what,
                                  allow_empty=capacity is not None)
        if capacity is None:
            if spec.kind == "voxels":
                coords = unique_rows(coords)
            return cls(array(rb.host_grid(spec, coords), dtype=T.uint8, device=device),
                       copy=False)
        status = rb.checked_status(status, device)
        if _point_count(points) == 0:
            rb.report(status, rb.INVALID_INPUT)
            raise RuntimeError(f"Failed to create volume: no {what} to allocate")
        volume = cls(data=None)
        volume.device, volume._spec, volume._capacity = device, spec, capacity
        grid, flags = volume._grid_within_capacity(coords)
        if grid is None:  # it does not fit: an empty grid, as Warp's
            grid = rb.host_grid(spec, coords[:0])
        volume._buffer = zeros(rb.grid_bytes(spec.grid_type, capacity.leaves, capacity.lowers,
                                             capacity.uppers), dtype=T.uint8, device=device)
        volume._descriptor = zeros(rb.descriptor_bytes(capacity.uppers), dtype=T.uint8,
                                   device=device)
        volume.id = volume._descriptor.ptr
        volume._install(grid)
        rb.report(status, flags)
        return volume

    def _grid_within_capacity(self, coords: np.ndarray) -> tuple[np.ndarray | None, int]:
        """(the host grid of `coords`, SUCCESS), or (None, the overflow flags)."""
        if self._spec.kind == "voxels":
            coords = unique_rows(coords)
        flags = rb.overflow(rb.topology_counts(coords, self._spec.kind), self._capacity)
        return (None, flags) if flags else (rb.host_grid(self._spec, coords), rb.SUCCESS)

    def _install(self, grid: np.ndarray) -> None:
        """Copies a host grid and its descriptor into the reserved storage (same id)."""
        self._header = nvv.validate(grid)
        self._features = nvv.feature_infos(grid, self._header)
        self._buffer[:len(grid)].assign(grid)
        raw = descriptor(grid, self._header, self._buffer.ptr)
        self._descriptor[:len(raw)].assign(raw)

    @classmethod
    def _build(cls, origins: np.ndarray, grid_type: int, background: bytes,
               values: np.ndarray | None, active: np.ndarray, matrix: np.ndarray,
               translation: Any, device: Any) -> Volume:
        buf = build_grid(origins, grid_type, background, values, active, matrix,
                         np.asarray(translation, np.float32))
        return cls(array(buf, dtype=T.uint8, device=device), copy=False)

    @classmethod
    def load_from_numpy(cls, ndarray: np.ndarray, min_world: Sequence[float] = (0.0, 0.0, 0.0),
                        voxel_size: Any = 1.0, bg_value: Any = 0.0, device: Any = None
                        ) -> Volume:
        """A dense volume from a 3-d array of values (4-d with a last axis of 3 for vec3).

        Voxel (i, j, k) holds `ndarray[i, j, k]` and lies at `min_world + (i, j, k) *
        voxel_size` in world space. A sequence `bg_value` makes a vec3f volume, a Python
        int an int32 volume, anything else a float32 volume; the tiles are padded with it.

        Args:
            ndarray: The values.
            min_world: World position of voxel (0, 0, 0).
            voxel_size: Voxel size: a number, or one per axis.
            bg_value: The value outside the array (also the volume's type, see above).
            device: The device of the volume.
        """
        sizes = normalize_voxel_size(voxel_size)
        data = np.asarray(ndarray)
        vector = hasattr(bg_value, "__len__")
        if data.ndim != (4 if vector else 3) or (vector and data.shape[3] != 3):
            want = "(X, Y, Z, 3) for vec3 values" if vector else "(X, Y, Z)"
            raise ValueError(f"load_from_numpy() needs an array of shape {want}, got "
                             f"{data.shape}")
        dtype = np.float32 if vector or not isinstance(bg_value, int) else np.int32
        grid_type = 6 if vector else (4 if dtype is np.int32 else 1)
        shape = data.shape[:3]
        high = [min_world[a] + (-(-shape[a] // 8) * 8 - 1) * sizes[a] for a in range(3)]
        lo, hi = _index_box(min_world, high, sizes, min_world)
        origins = _tile_origins(lo, hi)
        background = np.asarray(bg_value, dtype).reshape(-1)
        values = dense_leaves(data, origins, background, dtype)
        active = np.ones((len(origins), nv.LEAF_TABLE), bool)
        return cls._build(origins, grid_type, background.tobytes(), values, active,
                          np.diag(sizes), min_world, device)

    @classmethod
    def allocate(cls, min: Sequence[float], max: Sequence[float], voxel_size: Any,  # noqa: A002
                 bg_value: Any = 0.0, translation: Sequence[float] = (0.0, 0.0, 0.0),
                 points_in_world_space: bool = False, device: Any = None) -> Volume:
        """A volume whose tiles cover the voxels from `min` to `max` (inclusive).

        Args:
            min: Lower corner, in index space (or world space, see below).
            max: Upper corner, inclusive.
            voxel_size: Voxel size: a number, or one per axis.
            bg_value: The background value, which also sets the value type (None: an index grid).
            translation: World position of voxel (0, 0, 0).
            points_in_world_space: `min` and `max` are world positions (rounded to voxels).
            device: The device of the volume.
        """
        sizes = normalize_voxel_size(voxel_size)
        if points_in_world_space:
            lo, hi = _index_box(min, max, sizes, translation)
        else:
            lo, hi = np.asarray(min, np.int32), np.asarray(max, np.int32)
        origins = _tile_origins(lo, hi)
        return cls.allocate_by_tiles(array(origins, dtype=T.int32, device="cpu"), sizes,
                                     bg_value, translation, device)

    @classmethod
    def allocate_by_tiles(cls, tile_points: Any, voxel_size: Any = None, bg_value: Any = 0.0,
                          translation: Sequence[float] = (0.0, 0.0, 0.0), device: Any = None,
                          transform: Any = None, rebuildable: bool = False,
                          max_tiles: int | None = None, max_lower_nodes: int | None = None,
                          max_upper_nodes: int | None = None, status: Any = None,
                          point_mask: Any = None) -> Volume:
        """A volume with a tile (8^3 active voxels, set to `bg_value`) around each point.

        Args:
            tile_points: Index-space vec3i / (n, 3) int32, or world-space vec3f / (n, 3) float32.
            voxel_size: Voxel size: a number, or one per axis (or give `transform`).
            bg_value: Background and initial value; sets the value type (None: index grid).
            translation: World position of voxel (0, 0, 0).
            device: The device of the volume.
            transform: 3x3 index-to-world linear transform, instead of `voxel_size`.
            rebuildable: Reserve storage so that `rebuild(tile_points)` can change the
                tiles in place (also implied by any capacity below).
            max_tiles: Most tiles (leaves) a rebuild may make; default: the point count.
            max_lower_nodes: Most lower nodes; default: `max_tiles`.
            max_upper_nodes: Most upper nodes; default: `max_lower_nodes`.
            status: A one-element `uint32` array receiving the `REBUILD_*` flags of a
                rebuildable allocation (a topology beyond the capacity gives an empty grid).
            point_mask: Optional int32 array, one per point: points where it is 0 are ignored.
        """
        matrix = transform_of(voxel_size, transform)
        grid_type, background = allocation_type(bg_value)
        spec = rb.Spec("tiles", grid_type, background, matrix,
                       np.asarray(translation, np.float32))
        capacity = None
        if rebuildable or any(c is not None for c in (max_tiles, max_lower_nodes,
                                                        max_upper_nodes)):
            capacity = rb.tile_capacity(_point_count(tile_points), max_tiles, max_lower_nodes,
                                        max_upper_nodes)
        return cls._allocate(spec, tile_points, point_mask, capacity, status,
                             _device_of(tile_points, device))

    @classmethod
    def allocate_by_voxels(cls, voxel_points: Any, voxel_size: Any = None,
                           translation: Sequence[float] = (0.0, 0.0, 0.0), device: Any = None,
                           transform: Any = None, rebuildable: bool = False,
                           max_active_voxels: int | None = None,
                           max_leaf_nodes: int | None = None, max_lower_nodes: int | None = None,
                           max_upper_nodes: int | None = None, status: Any = None,
                           point_mask: Any = None) -> Volume:
        """An index volume (OnIndex grid) with an active voxel at each point.

        Args:
            voxel_points: Index-space vec3i / (n, 3) int32, or world-space vec3f / (n, 3) float32.
            voxel_size: Voxel size: a number, or one per axis (or give `transform`).
            translation: World position of voxel (0, 0, 0).
            device: The device of the volume.
            transform: 3x3 index-to-world linear transform, instead of `voxel_size`.
            rebuildable: Reserve storage so that `rebuild(voxel_points)` can change the
                active voxels in place (also implied by any capacity below).
            max_active_voxels: Most active voxels a rebuild may make; default: the point
                count.
            max_leaf_nodes: Most leaves; default: `max_active_voxels` (each voxel may have
                a leaf of its own: give a tighter bound for dense sets).
            max_lower_nodes: Most lower nodes; default: `max_leaf_nodes`.
            max_upper_nodes: Most upper nodes; default: `max_lower_nodes`.
            status: A one-element `uint32` array receiving the `REBUILD_*` flags of a
                rebuildable allocation (a topology beyond the capacity gives an empty grid).
            point_mask: Optional int32 array, one per point: points where it is 0 are ignored.
        """
        spec = rb.Spec("voxels", 20, b"", transform_of(voxel_size, transform),
                       np.asarray(translation, np.float32))
        capacity = None
        if rebuildable or any(c is not None for c in (max_active_voxels, max_leaf_nodes,
                                                        max_lower_nodes, max_upper_nodes)):
            capacity = rb.voxel_capacity(_point_count(voxel_points), max_active_voxels,
                                         max_leaf_nodes, max_lower_nodes, max_upper_nodes)
        return cls._allocate(spec, voxel_points, point_mask, capacity, status,
                             _device_of(voxel_points, device))

    def __repr__(self) -> str:
        if not self.id:
            return "Volume(None)"
        h = self._header
        return (f"Volume({h.type_str!r} grid {h.name!r}, {h.node_counts[0]} tiles, "
                f"device={self.device})")


def _index_box(low: Any, high: Any, sizes: tuple[float, ...], translation: Any):
    """World corners to voxel coordinates, rounded halfway to even (as Warp's host code)."""
    scale = np.asarray(sizes, np.float32)
    shift = np.asarray(translation, np.float64)
    lo = np.around((np.asarray(low, np.float32) - shift) / scale)
    hi = np.around((np.asarray(high, np.float32) - shift) / scale)
    return lo.astype(np.int32), hi.astype(np.int32)


def _tile_origins(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Origins of the tiles covering voxels lo..hi (inclusive), x slowest."""
    axes = [np.arange(lo[a] // 8, hi[a] // 8 + 1, dtype=np.int32) * 8 for a in range(3)]
    if any(len(a) == 0 for a in axes):
        raise ValueError(f"the box from {tuple(lo)} to {tuple(hi)} holds no voxels")
    grid = np.meshgrid(*axes, indexing="ij")
    return np.stack([g.reshape(-1) for g in grid], axis=1)


def _point_count(points: Any) -> int:
    """The number of points given (before any mask): rows of an (n, 3) array, or items."""
    shape = getattr(points, "shape", None)
    return int(shape[0]) if shape else len(points)


def _device_of(points: Any, device: Any) -> Any:
    # as Warp: the given (or current) device, whatever the points' device
    return get_device(device)
