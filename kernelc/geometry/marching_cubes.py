"""`IsoSurfaceMarchingCubes`: Warp's marching-cubes extractor (also `kc.MarchingCubes`).

The kernels are in `marching_cubes_lang.py`, the tables in `tables.py`. The output is
Warp's, vertex for vertex and index for index: one vertex per lattice edge that crosses
the threshold, numbered in (i, j, k, axis) order, and each cell's triangles from the
classic table, in cell order.
"""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc import types as T
from kernelc.geometry import marching_cubes_lang as L
from kernelc.geometry import tables
from kernelc.geometry.iso_surface import (
    Bound,
    IsoSurfaceBase,
    device_table,
    launch,
    off_tape,
    resolve_bounds,
    scan_counts,
    validate_field,
)
from kernelc.logger import log_warning
from kernelc.runtime.array import array

# Each slot of TRI_LOCAL_INDICES as its edge's node offset in the cell (bits 0-2: x, y, z)
# and axis (bits 3-4), so that the face kernel reads one table entry per index.
_TRI_NODES = tuple(dx | dy << 1 | dz << 2 | axis << 3
                   for dx, dy, dz, axis in (tables.MC_EDGE_NODES[e]
                                            for e in tables.TRI_LOCAL_INDICES))


class _Unset:
    """Marks a deprecated keyword argument as not given (None is a valid value)."""

    def __repr__(self) -> str:
        return "None"


_UNSET: Any = _Unset()


def _deprecated(message: str, stacklevel: int = 3) -> None:
    log_warning(message, DeprecationWarning, stacklevel=stacklevel)


def marching_cubes(field: array, threshold: float, lower: Any, delta: Any
                   ) -> tuple[array, array]:
    """Runs the extraction (arguments already checked); returns `(verts, indices)`."""
    device = field.device
    nx, ny, nz = field.shape
    ranges = device_table(tables.CASE_TO_TRI_RANGE, device)
    threshold = T.float32.np_dtype.type(threshold)
    counts = kc.empty(nx * ny, dtype=T.vec2i, device=device)
    with off_tape():
        launch(L.mc_count, (nx, ny), [field, threshold, ranges, counts], device)
        offsets, (num_verts, num_tris) = scan_counts(counts)
    verts = kc.empty(num_verts, dtype=T.vec3, device=device, requires_grad=field.requires_grad)
    indices = kc.empty(3 * num_tris, dtype=T.int32, device=device)
    if num_verts == 0 and num_tris == 0:
        return verts, indices
    node_first = kc.empty((nx, ny, nz), dtype=T.int32, device=device)
    node_mask = kc.zeros((nx, ny, nz), dtype=T.uint8, device=device)
    launch(L.mc_vertices, (nx, ny), [field, threshold, lower, delta, offsets, counts, verts,
                                     node_first, node_mask], device, taped=True)
    if num_tris:
        with off_tape():
            launch(L.mc_faces, (nx - 1, ny - 1),
                   [field, threshold, ranges, device_table(_TRI_NODES, device), offsets,
                    counts, node_first, node_mask, indices], device)
    return verts, indices


class IsoSurfaceMarchingCubes(IsoSurfaceBase):
    """Marching-cubes extraction of an iso-surface from a dense 3-d field (Warp's class).

    Make one for a grid size and call `surface(field, threshold)` for each field of that
    size (results in `verts` and `indices`), or call the class method `extract` once.
    Vertices lie on the grid's edges, interpolated linearly between the two nodes' values;
    the triangles come from the classic case table. Inside a `kc.Tape`, the gradient of
    the vertex positions flows back to `field` (when it has `requires_grad`) through that
    interpolation; the triangles carry none.

    Args:
        nx: Number of grid nodes along x.
        ny: Number of grid nodes along y.
        nz: Number of grid nodes along z.
        lower: Position of node (0, 0, 0); the origin if None.
        upper: Position of node (nx - 1, ny - 1, nz - 1); its indices if None.
        domain_bounds_lower_corner: Deprecated name of `lower`.
        domain_bounds_upper_corner: Deprecated name of `upper`.

    Attributes:
        verts: The vertex positions (`vec3`) of the last `surface` call.
        indices: The triangles' vertex indices (`int32`, three per triangle).
    """

    CUBE_CORNER_OFFSETS = tables.CUBE_CORNER_OFFSETS
    """The (x, y, z) offset of each cell corner; corner c is bit c of a case."""

    EDGE_TO_CORNERS = tables.EDGE_TO_CORNERS
    """The two corners each of the 12 cell edges joins."""

    CASE_TO_TRI_RANGE = tables.CASE_TO_TRI_RANGE
    """257 offsets: case c's triangles are `TRI_LOCAL_INDICES[r[c]:r[c + 1]]`."""

    TRI_LOCAL_INDICES = tables.TRI_LOCAL_INDICES
    """The edge numbers of every case's triangles, three per triangle (2460 in all)."""

    def __init__(self, nx: int, ny: int, nz: int, lower: Bound = None, upper: Bound = None,
                 *, domain_bounds_lower_corner: Bound = _UNSET,
                 domain_bounds_upper_corner: Bound = _UNSET) -> None:
        lower = self._old_bound(lower, domain_bounds_lower_corner, "lower")
        upper = self._old_bound(upper, domain_bounds_upper_corner, "upper")
        super().__init__(nx, ny, nz, lower=lower, upper=upper)

    @staticmethod
    def _old_bound(value: Bound, old: Bound, name: str) -> Bound:
        if old is _UNSET:
            return value
        if value is not None and old is not None:
            raise TypeError(f"Cannot specify both `{name}` and `domain_bounds_{name}_corner`.")
        _deprecated(f"IsoSurfaceMarchingCubes() argument `domain_bounds_{name}_corner` is "
                    f"deprecated and will be removed in a future version. Use `{name}` instead.",
                    stacklevel=4)
        return value if old is None else old

    @property
    def domain_bounds_lower_corner(self) -> Bound:
        """Deprecated name of `lower`."""
        _deprecated("IsoSurfaceMarchingCubes.domain_bounds_lower_corner is deprecated and will be "
                    "removed in a future version. Use `lower` instead.")
        return self.lower

    @domain_bounds_lower_corner.setter
    def domain_bounds_lower_corner(self, value: Bound) -> None:
        _deprecated("IsoSurfaceMarchingCubes.domain_bounds_lower_corner is deprecated and will be "
                    "removed in a future version. Use `lower` instead.")
        self.lower = value

    @property
    def domain_bounds_upper_corner(self) -> Bound:
        """Deprecated name of `upper`."""
        _deprecated("IsoSurfaceMarchingCubes.domain_bounds_upper_corner is deprecated and will be "
                    "removed in a future version. Use `upper` instead.")
        return self.upper

    @domain_bounds_upper_corner.setter
    def domain_bounds_upper_corner(self, value: Bound) -> None:
        _deprecated("IsoSurfaceMarchingCubes.domain_bounds_upper_corner is deprecated and will be "
                    "removed in a future version. Use `upper` instead.")
        self.upper = value

    def surface(self, field: array, threshold: float) -> None:
        """Extracts the level set `field == threshold` into `verts` and `indices`.

        Args:
            field: A 3-d float32 array of shape (nx, ny, nz).
            threshold: The field value of the surface.

        Raises:
            ValueError: The field's shape is not the extractor's grid size.
        """
        self._check_field_shape(field)
        self.verts, self.indices = self.extract(field, threshold, lower=self.lower,
                                                upper=self.upper)

    @classmethod
    def extract(cls, field: array, threshold: float = 0.0, *, lower: Bound = None,
                upper: Bound = None) -> tuple[array, array]:
        """Extracts the level set `field == threshold` of a field of any size.

        Args:
            field: A 3-d float32 array of node values, at least 2 nodes on each axis.
            threshold: The field value of the surface.
            lower: Position of node (0, 0, 0); the origin if None.
            upper: Position of the last node; its integer indices if None.

        Returns:
            `(verts, indices)`: the vertices (`vec3`) and a flat `int32` array of
            triangles, three indices each.

        Raises:
            ValueError: `field` is not 3-d, or has fewer than two nodes on some axis.
            TypeError: The field's dtype is not float32.
        """
        validate_field(field)
        origin, delta = resolve_bounds(field.shape, lower, upper)
        return marching_cubes(field, threshold, origin, delta)

    @staticmethod
    def extract_surface_marching_cubes(field: array, threshold: float = 0.0,
                                       domain_bounds_lower_corner: Bound = None,
                                       domain_bounds_upper_corner: Bound = None
                                       ) -> tuple[array, array]:
        """Deprecated name of `extract` (with the old names of the bounds).

        Args:
            field: A 3-d float32 array of node values.
            threshold: The field value of the surface.
            domain_bounds_lower_corner: Position of node (0, 0, 0).
            domain_bounds_upper_corner: Position of the last node.

        Returns:
            `(verts, indices)`, as `extract` returns them.
        """
        _deprecated("IsoSurfaceMarchingCubes.extract_surface_marching_cubes() is deprecated; "
                    "use IsoSurfaceMarchingCubes.extract() instead.")
        return IsoSurfaceMarchingCubes.extract(field, threshold,
                                               lower=domain_bounds_lower_corner,
                                               upper=domain_bounds_upper_corner)
