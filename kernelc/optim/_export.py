"""Makes `kc.optim` an attribute of `kernelc` on first use (see `_LAZY_MODULES` there)."""

from kernelc import optim

__all__ = ["optim"]
