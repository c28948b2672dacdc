"""The low-level array descriptor that `from_torch(..., return_ctype=True)` returns, as
Warp's `array_t`: the data and gradient addresses, `ndim`, `shape` and byte `strides`.

kernelc keeps the array behind it, so a descriptor launches like the array itself
(`kc.launch(k, dim=n, inputs=[desc])`) and keeps the tensor's memory alive.
"""

from __future__ import annotations

from typing import Any


class ArrayDescriptor:
    """An array's addresses and layout (`data`, `grad`, `ndim`, `shape`, `strides`), as
    plain numbers; a null gradient is 0. Anything else is read from the array."""

    def __init__(self, arr: Any):
        self._kc_source = arr  # what recorded launches' `set_param_*_from_ctype` pass
        self.data: int = arr.ptr or 0
        self.grad: int = arr.grad.ptr if arr.grad is not None else 0
        self.ndim: int = arr.ndim
        self.shape: tuple[int, ...] = arr.shape
        self.strides: tuple[int, ...] = arr.strides

    def __getattr__(self, name: str) -> Any:
        # (only for names not set above: launches read `ptr`, `device`, `dtype`, ...)
        if name == "_kc_source":
            raise AttributeError(name)
        return getattr(self._kc_source, name)

    def __repr__(self) -> str:
        return (f"ArrayDescriptor(data=0x{self.data:x}, grad=0x{self.grad:x}, "
                f"shape={self.shape}, strides={self.strides})")
