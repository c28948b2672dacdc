"""`launch_tiled`: a launch with a trailing block dimension, for tile kernels."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from kernelc.config import config
from kernelc.errors import KernelError
from kernelc.frontend.tile_value import LANES
from kernelc.runtime.cpu_blocks import cpu_lanes
from kernelc.runtime.device import get_device
from kernelc.runtime.launch import launch

__all__ = ["launch_tiled"]

# A block has one lane on every device unless a CPU launch asks for blocks of several
# (`config.enable_cpu_blocks`), so the appended block dimension has length LANES (1) or
# that block_dim.


def launch_tiled(kernel, dim: Any, inputs: Sequence[Any] = (), outputs: Sequence[Any] = (),
                 *args: Any, block_dim: int | None = None, **kwargs: Any):
    """Launches `kernel` over `dim` blocks (an int or up to 3 ints), appending the block
    dimension, so `i, j = tid()` reads the block's index and `i, j, lane = tid()` the lane
    too (0 unless the CPU runs blocks of `block_dim` lanes). `block_dim` is passed on to
    the launch, as in `launch`."""
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)  # NumPy ints too
    if not 1 <= len(dims) <= 3:
        raise KernelError(f"launch_tiled() takes a grid of 1 to 3 dimensions, got {len(dims)}")
    return launch(kernel, (*dims, _lanes(block_dim, args, kwargs)), inputs, outputs, *args,
                  block_dim=block_dim, **kwargs)


def _lanes(block_dim: int | None, args: tuple, kwargs: dict) -> int:
    if block_dim is None or block_dim <= 1 or not config.enable_cpu_blocks:
        return LANES
    # launch()'s parameters after the outputs: adj_inputs, adj_outputs, device, stream
    stream = kwargs.get("stream", args[3] if len(args) > 3 else None)
    device = stream.device if stream is not None else kwargs.get(
        "device", args[2] if len(args) > 2 else None)
    return cpu_lanes(block_dim) if get_device(device).is_cpu else LANES
