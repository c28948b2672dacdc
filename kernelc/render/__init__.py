"""`kernelc.render`: Warp's `warp.render`, writing OpenUSD stages.

`UsdRenderer` writes the stages Warp's USD renderer writes (same prims, attributes and time
samples); it needs OpenUSD's Python bindings (`pip install usd-core`), imported only when a
renderer is made. `OpenGLRenderer` exists so Warp programs that name it import; kernelc has
no OpenGL viewer, and constructing one raises `OpenGLUnavailableError`. See docs/render.md.
"""

from kernelc.render.opengl import OpenGLRenderer, OpenGLUnavailableError
from kernelc.render.usd import UsdRenderer
from kernelc.render.utils import bourke_color_map, solidify_mesh, tab10_color_map

__all__ = ["OpenGLRenderer", "OpenGLUnavailableError", "UsdRenderer", "bourke_color_map",
           "solidify_mesh", "tab10_color_map"]
