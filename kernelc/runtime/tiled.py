"""`launch_tiled`: a launch with a trailing block dimension, for tile kernels."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from kernelc.errors import KernelError
from kernelc.frontend.tile_value import LANES
from kernelc.runtime.launch import launch

__all__ = ["launch_tiled"]

# kernelc runs tile operations with one lane per block on every device (Warp's CPU
# default), so the appended block dimension has length LANES (1) whatever block_dim says.


def launch_tiled(kernel, dim: Any, inputs: Sequence[Any] = (), outputs: Sequence[Any] = (),
                 *args: Any, block_dim: int | None = None, **kwargs: Any):
    """Launches `kernel` over `dim` blocks (an int or up to 3 ints), appending the block
    dimension, so `i, j = tid()` reads the block's index and `i, j, lane = tid()` the lane
    too (always 0 in kernelc). `block_dim` is passed on to the launch, as in `launch`."""
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)  # NumPy ints too
    if not 1 <= len(dims) <= 3:
        raise KernelError(f"launch_tiled() takes a grid of 1 to 3 dimensions, got {len(dims)}")
    return launch(kernel, (*dims, LANES), inputs, outputs, *args, block_dim=block_dim,
                  **kwargs)
