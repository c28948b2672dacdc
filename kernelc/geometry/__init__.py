"""`kernelc.geometry`: Warp's iso-surfaces, swept volumes and Delaunay tools (`warp.geometry`).

`import warp.geometry` becomes `import kernelc.geometry`; after `import kernelc as wp`,
`wp.geometry.IsoSurfaceMarchingCubes` also works. Everything runs kernels written in
kernelc's own language, on the CPU and on CUDA devices, and gives Warp's results in Warp's
order. See docs/geometry.md.
"""

from kernelc.geometry.delaunay import delaunay_edge_flip, tri_tri_adjacency
from kernelc.geometry.delaunay_lang import find_triangle_neighbor_edge_index
from kernelc.geometry.iso_surface import IsoSurfaceBase
from kernelc.geometry.marching_cubes import IsoSurfaceMarchingCubes
from kernelc.geometry.sparse_marching_cubes import (
    sparse_marching_cubes,
    sparse_marching_cubes_from_cells,
)
from kernelc.geometry.sparse_octree import lipschitz_octree
from kernelc.geometry.surface_nets import IsoSurfaceNets
from kernelc.geometry.swept_volume import (
    SweptVolumeSignMode,
    swept_volume_bounds,
    swept_volume_field,
    swept_volume_mesh,
)
from kernelc.geometry.swept_volume_lang import swept_volume_sdf

__all__ = ["IsoSurfaceBase", "IsoSurfaceMarchingCubes", "IsoSurfaceNets", "SweptVolumeSignMode",
           "delaunay_edge_flip", "find_triangle_neighbor_edge_index", "lipschitz_octree",
           "sparse_marching_cubes", "sparse_marching_cubes_from_cells", "swept_volume_bounds",
           "swept_volume_field", "swept_volume_mesh", "swept_volume_sdf", "tri_tri_adjacency"]
