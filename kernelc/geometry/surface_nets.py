"""`IsoSurfaceNets`: Warp's surface-nets extractor (OpenVDB's uniform mesher on a dense grid).

The kernels are in `surface_nets_lang.py`, the tables in `tables.py`. The output is Warp's,
vertex for vertex and index for index: a vertex per surface sheet in each cell that the
surface crosses, numbered in cell order, and a quad (or two triangles) per crossing
lattice edge away from the grid's boundary faces, in cell order.
"""

from __future__ import annotations

from typing import Literal

import kernelc as kc
from kernelc import types as T
from kernelc.geometry import surface_nets_lang as L
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
from kernelc.runtime.array import array

TOPOLOGIES = ("triangle", "quad")


def _edge_rows() -> tuple[int, ...]:
    """Per edge: its two corners, its lower corner's offset and its axis."""
    rows = []
    for (a, b), (dx, dy, dz, axis) in zip(tables.SN_EDGE_TO_CORNERS, tables.SN_EDGE_NODES):
        rows.extend((a, b, dx, dy, dz, axis))
    return tuple(rows)


def _edge_need() -> tuple[int, ...]:
    """Per edge, the `boundary_bits` it needs to be away from the grid's boundary faces:
    along each axis across it, a cell edge on the cell's low side needs a cell below, one
    on its high side a cell above."""
    need = []
    for dx, dy, dz, axis in tables.SN_EDGE_NODES:
        bits = 0
        for d, offset in enumerate((dx, dy, dz)):
            if d != axis:
                bits |= 1 << (2 * d + offset)
        need.append(bits)
    return tuple(need)


def _face_rows() -> tuple[int, ...]:
    """Row f (1-6; row 0 unused): the step to the neighbour across face f, and the number
    of that face as the neighbour sees it."""
    rows = [0, 0, 0, 0]
    for face in range(1, 7):
        rows.extend((*tables.SN_FACES[face][1], tables.SN_OPPOSITE_FACE[face]))
    return tuple(rows)


_EDGES = _edge_rows()
_EDGE_NEED = _edge_need()
_FACES = _face_rows()
_CORNERS = tuple(v for corner in tables.SN_CORNER_OFFSETS for v in corner)


def _check_topology(topology: str) -> None:
    if topology not in TOPOLOGIES:
        raise ValueError(f"Expected 'topology' to be one of {TOPOLOGIES}, but got "
                         f"{topology!r}.")


def surface_nets(field: array, threshold: float, lower: kc.vec3, delta: kc.vec3,
                 topology: str) -> tuple[array, array]:
    """Runs the extraction (arguments already checked); returns `(verts, indices)`."""
    device = field.device
    nx, ny, nz = (n - 1 for n in field.shape)  # cells
    groups = device_table(tables.SN_EDGE_GROUPS, device)
    threshold = T.float32.np_dtype.type(threshold)
    flags = kc.empty((nx, ny, nz), dtype=T.int32, device=device)
    counts = kc.empty(nx * ny, dtype=T.vec2i, device=device)
    with off_tape():
        launch(L.sn_classify, (nx, ny),
               [field, threshold, device_table(tables.SN_AMBIGUOUS_FACE, device),
                device_table(_FACES, device).reshape((7, 4)), groups,
                device_table(_EDGE_NEED, device), flags, counts], device)
        offsets, (num_points, num_quads) = scan_counts(counts)
    quads = topology == "quad"
    verts = kc.empty(num_points, dtype=T.vec3, device=device,
                     requires_grad=field.requires_grad)
    indices = kc.empty((4 if quads else 6) * num_quads, dtype=T.int32, device=device)
    if num_points == 0:
        return verts, indices
    cell_first = kc.empty((nx, ny, nz), dtype=T.int32, device=device)
    launch(L.sn_points, (nx, ny),
           [field, threshold, groups, device_table(_EDGES, device).reshape((12, 6)),
            device_table(_CORNERS, device).reshape((8, 3)), flags, offsets, counts, lower,
            delta, verts, cell_first], device, taped=True)
    if num_quads:
        with off_tape():
            launch(L.sn_faces, (nx, ny),
                   [groups, flags, cell_first, offsets, counts, quads, indices], device)
    return verts, indices


class IsoSurfaceNets(IsoSurfaceBase):
    """Surface-nets extraction of an iso-surface from a dense 3-d field (Warp's class).

    Each cell that the surface passes through gets a vertex per pass (usually one), at the
    mean of the points where that pass crosses the cell's edges, and each crossing lattice
    edge inside the grid gets a quad joining the vertices of the four cells around it. A
    surface inside the grid gives a closed mesh; one that leaves the grid stops up to half
    a cell short of its boundary. Inside a `kc.Tape`, the gradient of the vertex positions
    flows back to `field` (when it has `requires_grad`); the faces carry none.

    Args:
        nx: Number of grid nodes along x.
        ny: Number of grid nodes along y.
        nz: Number of grid nodes along z.
        lower: Position of node (0, 0, 0); the origin if None.
        upper: Position of node (nx - 1, ny - 1, nz - 1); its indices if None.
        topology: "triangle" (two triangles per quad) or "quad" (four indices per face).

    Attributes:
        topology: The face type that `surface` makes.
        verts: The vertex positions (`vec3`) of the last `surface` call.
        indices: The faces' vertex indices (`int32`, three or four per face).
    """

    def __init__(self, nx: int, ny: int, nz: int, *, lower: Bound = None, upper: Bound = None,
                 topology: Literal["triangle", "quad"] = "triangle") -> None:
        _check_topology(topology)
        super().__init__(nx, ny, nz, lower=lower, upper=upper)
        self.topology = topology

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
                                                upper=self.upper, topology=self.topology)

    @classmethod
    def extract(cls, field: array, threshold: float = 0.0, *, lower: Bound = None,
                upper: Bound = None, topology: Literal["triangle", "quad"] = "triangle"
                ) -> tuple[array, array]:
        """Extracts the level set `field == threshold` of a field of any size.

        Args:
            field: A 3-d float32 array of node values, at least 2 nodes on each axis.
            threshold: The field value of the surface.
            lower: Position of node (0, 0, 0); the origin if None.
            upper: Position of the last node; its integer indices if None.
            topology: "triangle" (three indices per face) or "quad" (four).

        Returns:
            `(verts, indices)`: the vertices (`vec3`) and a flat `int32` array of faces.

        Raises:
            ValueError: `field` is not 3-d, has fewer than two nodes on some axis, or
                `topology` is neither "triangle" nor "quad".
            TypeError: The field's dtype is not float32.
        """
        validate_field(field)
        _check_topology(topology)
        origin, delta = resolve_bounds(field.shape, lower, upper)
        return surface_nets(field, threshold, origin, delta, topology)
