"""Activity kinds for `cuda_filter` / `timing_begin` (the same bit values as Warp's)."""

TIMING_KERNEL = 1
TIMING_KERNEL_BUILTIN = 2
TIMING_MEMCPY = 4
TIMING_MEMSET = 8
TIMING_GRAPH = 16
TIMING_ALL = 0xFFFFFFFF
