"""`config.verify_autograd_array_access`: marks and checks of arrays around recorded work.

A launch recorded on a tape marks the arrays its kernel reads and checks the ones it
writes (`kc.array.mark_write` warns when a recorded launch read one before); a kernel that
writes an array parameter after reading it warns once, at its first checked launch. The
end of a backward pass, and `Tape.reset`, clear the marks of the tape's arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernelc import types as T
from kernelc.ir.access import ParamAccess, array_access
from kernelc.runtime.array import array
from kernelc.runtime.array_access import user_frame, warn_user


def check_launch(kernel: Any, values: Sequence[Any], types: Sequence[T.Type]) -> None:
    """Marks and checks the array arguments of a launch being recorded on a tape."""
    access = _access(kernel, tuple(types))
    loc = kernel.source.loc(kernel.source.tree)
    for name, value, used in zip(kernel.arg_names, values, access):
        if not isinstance(value, array):
            continue
        if used.written:  # (writes first: a kernel may read what it wrote itself)
            value.mark_write(arg_name=name, kernel_name=kernel.__name__, filename=loc.file,
                             lineno=loc.line)
        if used.read:
            value.mark_read()


def check_copy(dest: array, src: array) -> None:
    """Marks and checks the arrays of a copy recorded on a tape."""
    if dest._is_read:
        frame = user_frame()[0]
        dest.mark_write(operation="an array copy", filename=frame.f_code.co_filename,
                        lineno=frame.f_lineno)
    src.mark_read()


def clear_marks(launches: Sequence[Any]) -> None:
    """Clears the read marks of the arrays passed to recorded launches (and of the
    arrays those are views of): once gradients are computed, writes can no longer harm
    them."""
    for entry in launches:
        if callable(entry):
            continue
        for value in (*entry[3], *entry[4]):
            if isinstance(value, array):
                value.clear_read_marks()


def _access(kernel: Any, types: tuple[T.Type, ...]) -> tuple[ParamAccess, ...]:
    memo = kernel.__dict__.setdefault("_array_access", {})
    found = memo.get(types)
    if found is None:
        found = memo[types] = array_access(kernel.get_ir(types))
        for name, used in zip(kernel.arg_names, found):
            if used.written_after_read is not None:
                at = used.written_after_read
                warn_user(f"kernel '{kernel.__name__}' writes its array argument '{name}' "
                          f"after reading it ({at.file}:{at.line}); the backward pass "
                          f"replays the read with the new values, so its gradients may be "
                          f"wrong")
    return found
