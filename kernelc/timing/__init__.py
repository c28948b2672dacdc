"""Timing and profiling: ScopedTimer, activity timing, events, kernel history, NVTX, traces."""
