"""`kc.MarchingCubes`: Warp's deprecated top-level name of `IsoSurfaceMarchingCubes`.

`kernelc.__getattr__` finds the name in `__all__` here and reads it, which runs the module
`__getattr__` below: it warns, as Warp does, and gives the class itself. kernelc then keeps
the class as its attribute, so the warning comes once per process (Warp also warns once).
"""

from __future__ import annotations

from typing import Any

__all__ = ["MarchingCubes"]  # noqa: F822 (given by the module __getattr__ below)


def __getattr__(name: str) -> Any:
    if name == "MarchingCubes":
        from kernelc.geometry.marching_cubes import IsoSurfaceMarchingCubes
        from kernelc.logger import log_warning

        log_warning("wp.MarchingCubes is deprecated; use "
                    "wp.geometry.IsoSurfaceMarchingCubes instead.", DeprecationWarning,
                    stacklevel=3)
        return IsoSurfaceMarchingCubes
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
