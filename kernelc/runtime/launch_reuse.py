"""Launches that reuse the last packing of a kernel's arguments (see `launch.launch`).

A simulation loop launches the same kernel again and again with the same arrays, with a
new time or position, or with its buffers swapped: such a launch rewrites the changed
arguments in place instead of checking and packing everything again. Only the thread that
made a packing rewrites it (another may be running it), and struct, vector and matrix
arguments are repacked every time, since their Python objects can change in place.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from typing import Any

from kernelc import types as T
from kernelc.runtime import launch as L


def same_or_repacked(kernel, last: tuple, values: list) -> bool:
    """Whether a launch can reuse the last one's packed arguments: every argument is the
    same object, or, for a CPU launch, a Python number replacing one of the same Python
    type (a time passed each substep) or an array replacing an array of the same type
    (buffers swapped each substep), which are then checked like any launch's arguments
    and written into the packed arguments."""
    prev, cmd = last[3], last[4]
    changed = [i for i, (a, b) in enumerate(zip(prev, values)) if a is not b]
    by_value = getattr(cmd, "by_value", ())
    if not changed and not by_value:
        return True
    if not (isinstance(cmd, L.Launch) and cmd.device.is_cpu) or cmd.expand is not None \
            or cmd.thread != threading.get_ident():
        return False
    if not changed:  # structs, vectors and matrices may have changed in place: repack them
        _repack_by_value(cmd, by_value)
        return True
    array = _array_class()
    params = cmd.compiled.params
    swapped = []
    for i in changed:
        kind = type(values[i])
        if isinstance(params[i], T.ArrayType):
            if not (isinstance(values[i], array) and isinstance(prev[i], array)):
                return False
            swapped.append(i)
        elif (kind is not float and kind is not int) or type(prev[i]) is not kind \
                or not isinstance(params[i], T.ScalarType):
            return False
    names = kernel.arg_names
    for i in changed:  # the full check of a launch, for these arguments only
        v, p = values[i], prev[i]
        if i in swapped:
            # An array like the one it replaces has the type that one was checked to have.
            alike = (v.dtype is p.dtype or v.dtype == p.dtype) and v.ndim == p.ndim \
                and v.device is p.device and type(v) is type(p)
            if not alike and L.arg_type(kernel, names[i], kernel.param_types[i], v,
                                      cmd.device) != params[i]:
                return False
            size = params[i].dtype.size
            if any(st % size for st in v.strides):
                return False  # the slow path reports it
            continue
        if L.arg_type(kernel, names[i], kernel.param_types[i], v, cmd.device) != params[i]:
            return False
    if swapped and cmd.disjoint is not None:
        new_values = list(cmd.values)
        for i in swapped:
            new_values[i] = values[i]
        # The variant depends on whether the arrays overlap: if that changed, the slow
        # path packs the launch again with the other variant.
        if L.overlapping(new_values, params) == cmd.disjoint:
            return False
    for i in changed:
        v = values[i]
        if i in swapped:  # the packed array: data pointer, shape, byte strides
            words = cmd.array_words(i)
            nd = params[i].ndim
            words[0] = v.ptr
            for k in range(nd):
                words[1 + k] = v.shape[k]
                words[1 + nd + k] = v.strides[k]
        else:
            setattr(cmd.args, f"p{i}", L._scalar_bits(params[i], v))
        cmd.values[i] = v
    _repack_by_value(cmd, [i for i in by_value if i not in changed])
    kernel.last_launch = (*last[:3], values, cmd)
    return True


def _repack_by_value(cmd, indices) -> None:
    """Writes the current bytes of struct, vector and matrix arguments into the packing."""
    from kernelc.frontend.struct import struct_bytes

    for i in indices:
        data = struct_bytes(cmd.compiled.params[i], cmd.values[i])
        offset = getattr(type(cmd.args), f"p{i}").offset
        ctypes.memmove(cmd._args_ptr + offset, data, len(data))


_ARRAY_CLASS = None


def _array_class():
    global _ARRAY_CLASS
    if _ARRAY_CLASS is None:
        from kernelc.runtime.array import array

        _ARRAY_CLASS = array
    return _ARRAY_CLASS


def rerun_adjoint(backward, dim: Any, device: Any, values: list[Any],
                   adjoints: Sequence[Any]) -> bool:
    """Runs a backward launch again with the last one's packing when its arrays and
    adjoints are the same objects (only Python numbers may differ): the adjoint arguments
    and the store mask are then the same too. Tape.backward repeats launches this way."""
    last, memo = backward.last_launch, getattr(backward, "last_adjoints", None)
    if last is None or memo is None or last[0] != dim or last[1] is not device \
            or last[2] != L.config.mode:
        return False
    given, adj_values, mask = memo
    n = len(values)
    if len(adjoints) != len(given) or len(last[3]) != 2 * n + 1 \
            or any(a is not b and not isinstance(a, (int, float)) for a, b in zip(adjoints, given)):
        return False  # (the adjoints of numbers are placeholders: any value does)
    array = _array_class()
    for i, v in enumerate(values):
        own_grad = i >= len(adjoints) or adjoints[i] is None  # the adjoint is v.grad
        if isinstance(v, array) and (v is not last[3][i] or (
                own_grad and getattr(v, "grad", None) is not adj_values[i])):
            return False  # another array, or an array whose own gradient was replaced
    if not same_or_repacked(backward, last, [*values, *adj_values, mask]):
        return False
    L._run_or_capture(backward, last[4])
    return True
