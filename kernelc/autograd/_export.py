"""Makes `kc.autograd` an attribute of `kernelc` on first use (see `_LAZY_MODULES` there)."""

from kernelc import autograd

__all__ = ["autograd"]
