"""Node numbering of B-spline spaces (Warp's `GridBSplineSpaceTopology` on `Grid2D` and
`Grid3D`, `NanogridBSplineSpaceTopology` on `Nanogrid`).

B-spline nodes sit on the vertices of the cells and of a layer of `PADDING` cells around
them (see shape_bspline.py); node n of a cell is the vertex at the cell's corner plus the
shape's node offset n.

- Grids: the nodes form one (res + 2 PADDING + 1) box of vertices, numbered with the last
  axis fastest from the corner (-PADDING, ...), as Warp numbers them.
- Sparse grids: the nodes are the voxels of an index grid holding every cell's
  NODES_PER_DIM^3 node voxels (cell voxel + offset, in the vertex grid's convention, where
  voxel v is the vertex at index-space position v - 1/2), numbered in that grid's voxel
  order; without padding (degree 1) it is the geometry's vertex grid. Warp builds the
  same set (its rebuildable variant with a capacity of NODES_PER_DIM^3 nodes per cell,
  which its node count reports; kernelc counts the nodes there are). A rebuilt Nanogrid's
  spaces number their nodes again when `topology.rebuild()` runs.
- Adaptive sparse grids have no B-spline spaces (Warp's error), nor do meshes.
"""

from functools import cached_property

import numpy as np

import kernelc as kc
from kernelc.fem.geometry import Geometry
from kernelc.fem.shape_bspline import BSplineShapeFunctions
from kernelc.fem.topology import SpaceTopology


class GridBSplineTopology(SpaceTopology):
    """B-spline nodes on a `Grid2D` or `Grid3D`: a padded box of vertices."""

    _shape: BSplineShapeFunctions

    def _node_res(self) -> list[int]:
        return [int(r) + 2 * self._shape.PADDING + 1 for r in self._geometry.res]

    def node_count(self) -> int:
        return int(np.prod(self._node_res()))

    def _cell_node_indices(self) -> np.ndarray:
        res = [int(r) for r in self._geometry.res]
        dim = len(res)
        cells = np.indices(res).reshape(dim, -1).T  # Warp's cell order, last axis fastest
        # a cell's node block starts at its own corner in the padded box
        nodes = cells[:, None, :] + (self._shape.node_offsets() + self._shape.PADDING)[None]
        node_res = self._node_res()
        strides = np.array([int(np.prod(node_res[a + 1:])) for a in range(dim)])
        return nodes @ strides


class NanogridBSplineTopology(SpaceTopology):
    """B-spline nodes on a `Nanogrid`: the voxels of an index grid of padded vertices."""

    _shape: BSplineShapeFunctions

    @cached_property
    def node_grid(self) -> kc.Volume:
        """The index grid whose voxel order numbers the nodes."""
        geo = self._geometry
        if self._shape.PADDING == 0:
            return geo.vertex_grid
        voxels = np.unique(self._node_voxels().reshape(-1, 3), axis=0)
        return geo._index_grid(voxels)

    def _node_voxels(self) -> np.ndarray:
        """(cells, nodes per cell, 3): the node voxel of each node of each cell."""
        offsets = self._shape.node_offsets().astype(np.int32)
        return self._geometry._cell_ijk_host[:, None, :] + offsets[None, :, :]

    def node_count(self) -> int:
        return self.node_grid.get_voxel_count()

    def _cell_node_indices(self) -> np.ndarray:
        from kernelc.fem.nanogrid import lookup_voxels

        voxels = self._node_voxels()
        return lookup_voxels(self.node_grid, voxels.reshape(-1, 3)).reshape(voxels.shape[:2])

    def rebuild(self) -> None:
        """Numbers the nodes again after `Nanogrid.rebuild` (only on a rebuildable grid,
        as in Warp)."""
        if not getattr(self._geometry, "_rebuildable", False):
            raise RuntimeError("B-spline topology was not constructed from a rebuildable "
                               "Nanogrid")
        super().rebuild()


def make_bspline_topology(geometry: Geometry, shape: BSplineShapeFunctions) -> SpaceTopology:
    """The continuous B-spline topology of `shape` on `geometry` (a grid or a `Nanogrid`).

    Raises:
        ValueError: on an `AdaptiveNanogrid` (Warp's error) or any other geometry.
    """
    from kernelc.fem.grid2d import Grid2D
    from kernelc.fem.grid3d import Grid3D
    from kernelc.fem.nanogrid import Nanogrid
    from kernelc.fem.nanogrid_adaptive import AdaptiveNanogrid

    if isinstance(geometry, Grid2D | Grid3D):
        return GridBSplineTopology(geometry, shape)
    if isinstance(geometry, AdaptiveNanogrid):
        raise ValueError(f"Adaptive Nanogrid does not support {shape.name}")
    if isinstance(geometry, Nanogrid):
        return NanogridBSplineTopology(geometry, shape)
    raise ValueError(f"B-spline spaces (ElementBasis.BSPLINE) need a Grid2D, Grid3D or "
                     f"Nanogrid geometry; {geometry.name} has no B-spline nodes (a "
                     f"discontinuous space, discontinuous=True, works on any square or cube "
                     f"cells)")
