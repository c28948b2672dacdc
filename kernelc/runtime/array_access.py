"""Read marks of `kc.array` for `config.verify_autograd_array_access` (Warp's names).

While the option is on and a `kc.Tape` records, each launch marks the arrays its kernel
reads, and a later write to a marked array warns: the backward pass replays the recorded
launches with the arrays' current contents, so overwriting what an earlier launch read
makes its gradients wrong. A view's marks also reach the arrays it was made from.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class AccessMixin:
    """The read mark of an array and of the arrays it is a view of."""

    _is_read: bool = False
    _ref: Any = None  # the array this one is a view of, if any

    def mark_init(self) -> None:
        """Clears this array's read mark (its contents were just initialised)."""
        self._is_read = False

    def clear_read_marks(self) -> None:
        """Clears the read marks of this array and of the arrays it is a view of."""
        node = self
        while node is not None:
            node._is_read = False
            node = node._ref

    def mark_read(self) -> None:
        """Marks this array, and the arrays it is a view of, as read by a recorded launch."""
        node = self
        while node is not None:
            node._is_read = True
            node = node._ref

    def mark_write(self, **where: Any) -> None:
        """Warns when this array is written after a recorded launch read it.

        Args:
            where: Where the write happens: `arg_name`, `kernel_name`, `filename` and `lineno`
                for a kernel launch, or `operation`, `filename` and `lineno` for another write.
        """
        if not self._is_read:
            return
        if "kernel_name" in where:
            what = (f"argument '{where.get('arg_name')}' of kernel '{where['kernel_name']}' "
                    f"({where.get('filename')}:{where.get('lineno')})")
        elif "operation" in where:
            what = f"{where['operation']} ({where.get('filename')}:{where.get('lineno')})"
        else:
            what = "a write"
        warn_user(f"{self!r} is overwritten by {what} after a launch recorded on the tape "
                  f"read it; the backward pass will read the new values, so its gradients "
                  f"may be wrong")


def user_frame(depth: int = 1) -> tuple[Any, int]:
    """The first frame outside kernelc above the caller's (`depth` 1), and its stack level
    as `warnings.warn` counts from that caller."""
    level, frame = depth, sys._getframe(depth)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    return frame, level


def warn_user(message: str) -> None:
    """A UserWarning, through the active logger, attributed to the first caller outside
    kernelc."""
    from kernelc.logger import log_warning

    log_warning(message, UserWarning, stacklevel=user_frame(2)[1])
