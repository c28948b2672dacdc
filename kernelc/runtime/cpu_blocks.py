"""CPU blocks of several threads (`config.enable_cpu_blocks`): the block size a launch gets.

A kernel that uses tile operations then runs once per block (see `ir/lanes.py`); others run
thread by thread, with `block_dim()` the block size.
"""

from __future__ import annotations

from kernelc.config import config

__all__ = ["ResolvedBlockDim", "cpu_lanes"]


class ResolvedBlockDim(int):
    """The block size a CPU launch ran with, as a Tape records it: its backward launch uses
    it whatever `config.enable_cpu_blocks` says by then."""


def cpu_lanes(block_dim: int | None) -> int:
    """The threads per block of a CPU launch: `block_dim` with `config.enable_cpu_blocks`,
    else 1 (each thread on its own, as Warp's CPU default)."""
    if isinstance(block_dim, ResolvedBlockDim):
        return int(block_dim)
    if block_dim is None or block_dim <= 1:
        return 1
    if block_dim > 1024:
        raise ValueError(f"block_dim must be at most 1024 on CPU, got {block_dim}")
    return block_dim if config.enable_cpu_blocks else 1
