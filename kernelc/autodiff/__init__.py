"""Reverse-mode automatic differentiation: adjoint kernels generated from the typed IR."""
