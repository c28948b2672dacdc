"""`kernelc.geometry`: Warp's iso-surface extraction (`warp.geometry`).

`import warp.geometry` becomes `import kernelc.geometry`; after `import kernelc as wp`,
`wp.geometry.IsoSurfaceMarchingCubes` also works. The extractors run kernels written in
kernelc's own language, on the CPU and on CUDA devices, and give Warp's vertices and faces
in Warp's order. See docs/geometry.md.
"""

from kernelc.geometry.iso_surface import IsoSurfaceBase
from kernelc.geometry.marching_cubes import IsoSurfaceMarchingCubes
from kernelc.geometry.surface_nets import IsoSurfaceNets

__all__ = ["IsoSurfaceBase", "IsoSurfaceMarchingCubes", "IsoSurfaceNets"]
