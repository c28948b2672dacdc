"""Spatial data structures kernels can query: `HashGrid` (uniform hash grid of points)."""
