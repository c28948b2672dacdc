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
import weakref
from collections.abc import Sequence
from typing import Any

from kernelc import types as T
from kernelc.runtime import launch as L
from kernelc.runtime.launch_alias import overlapping

_GONE = object()  # what a dead weak reference compares as: nothing a caller can pass
_WeakRef = weakref.ReferenceType


class LaunchMemo:
    """A kernel's last CPU launch, kept so that the next one can reuse its packing.

    It must not keep the arrays it was given alive (their memory would outlive the
    caller's last reference until the kernel's next launch), so it holds them weakly and
    its packed launch drops its own references once it has run (`park`). A later launch
    that passes the same objects keeps them alive itself while the packing is reused.
    A launch given NumPy arrays or torch tensors, or one that expands atomics into private
    copies, holds its views strongly, as before. A tensor's memory and layout can change
    while it stays the same object (`t.data = ...`, `t.t_()`), so `tensors` records them,
    and the packing is reused only while they are unchanged.
    """

    __slots__ = ("dim", "device", "mode", "epoch", "refs", "cmd", "weak", "tensors")

    def __init__(self, dim: Any, device: Any, mode: str, values: list, cmd: Any):
        self.dim, self.device, self.mode, self.cmd = dim, device, mode, cmd
        self.epoch = L.config.deterministic_epoch  # the deterministic settings packed under
        self.weak = cmd.expand is None and all(a is v for a, v in zip(cmd.values, values))
        self.tensors = None if self.weak else tuple(
            (i, tensor_layout(v)) for i, v in enumerate(values) if L.is_torch_tensor(v)) or None
        self.remember(values)

    def remember(self, values: list) -> None:
        """Records `values` as the arguments of the packing (weakly where possible)."""
        self.refs = held_weakly(values) if self.weak else values

    def update(self, values: list, changed: list[int]) -> None:
        """Records the arguments at the indices `changed`, replaced in the packing."""
        if not self.weak:
            self.refs = values
            return
        for i in changed:  # (only arrays and Python numbers are ever replaced)
            v = values[i]
            self.refs[i] = v if type(v) is float or type(v) is int else weakref.ref(v)

    def previous_at(self, index: int) -> Any:
        """The argument last packed at `index` (see `previous`)."""
        r = self.refs[index]
        if type(r) is _WeakRef:
            r = r()
            return _GONE if r is None else r
        return r

    def previous(self) -> list:
        """The arguments last packed; a dead array compares unequal to everything."""
        return dereferenced(self.refs) if self.weak else self.refs

    def park(self, kernel) -> None:
        """After a run: the packing stops holding the arrays (unless a graph took it)."""
        if self.weak and kernel.last_launch is self:
            self.cmd.values = None


def tensor_layout(tensor: Any) -> tuple:
    """What a launch packed of a torch tensor: its memory and layout."""
    return (tensor.data_ptr(), tensor.shape, tensor.stride(), tensor.dtype,
            tensor.requires_grad)


def held_weakly(values: Sequence[Any]) -> list:
    """`values` with each kernelc array (and indexed array) replaced by a weak reference."""
    array = _array_class()
    return [weakref.ref(v) if isinstance(v, array) or isinstance(
        getattr(v, "_kc_type", None), T.IndexedArrayType) else v for v in values]


def dereferenced(refs: list) -> list:
    """The values of `held_weakly`; a dead array becomes a marker equal to nothing."""
    out = []
    for r in refs:
        if type(r) is _WeakRef:
            r = r()
            if r is None:
                r = _GONE
        out.append(r)
    return out


def same_or_repacked(kernel, last: LaunchMemo, values: list) -> bool:
    """Whether a launch can reuse the last one's packed arguments: every argument is the
    same object, or, for a CPU launch, a Python number replacing one of the same Python
    type (a time passed each substep) or an array replacing an array of the same type
    (buffers swapped each substep), which are then checked like any launch's arguments
    and written into the packed arguments."""
    cmd = last.cmd
    # (a weak reference to the same array counts as the same: `r() is v`)
    changed = [i for i, (r, v) in enumerate(zip(last.refs, values))
               if r is not v and (type(r) is not _WeakRef or r() is not v)]
    if last.tensors is not None and any(i in changed or tensor_layout(values[i]) != layout
                                        for i, layout in last.tensors):
        return False  # a tensor was replaced, or its memory or layout changed
    by_value = getattr(cmd, "by_value", ())
    if cmd.values is None:  # parked: the same objects, or replacements, are passed again
        current = values
    else:
        current = cmd.values
    if not changed and not by_value:
        cmd.values = current
        return True
    if not (isinstance(cmd, L.Launch) and cmd.device.is_cpu) or cmd.expand is not None \
            or cmd.thread != threading.get_ident():
        return False
    if not changed:  # structs, vectors and matrices may have changed in place: repack them
        cmd.values = current
        _repack_by_value(cmd, by_value)
        return True
    array = _array_class()
    params = cmd.compiled.params
    swapped = []
    prev = {}
    for i in changed:
        kind = type(values[i])
        prev[i] = last.previous_at(i)
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
        new_values = list(current)
        for i in swapped:
            new_values[i] = values[i]
        # The variant depends on whether the arrays overlap: if that changed, the slow
        # path packs the launch again with the other variant.
        if overlapping(new_values, params) == cmd.disjoint:
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
        current[i] = v
    cmd.values = current
    _repack_by_value(cmd, [i for i in by_value if i not in changed])
    last.update(values, changed)
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
                   adjoints: Sequence[Any], lanes: int = 1) -> bool:
    """Runs a backward launch again with the last one's packing when its arrays and
    adjoints are the same objects (only Python numbers may differ): the adjoint arguments
    and the store mask are then the same too. Tape.backward repeats launches this way.
    `lanes`: the CPU block size asked for (the packing must be compiled for it)."""
    last, memo = backward.last_launch, getattr(backward, "last_adjoints", None)
    if last is None or memo is None or last.dim != dim or last.device is not device \
            or last.mode != L.config.mode or last.epoch != L.config.deterministic_epoch \
            or last.cmd.compiled.lanes != lanes:
        return False
    given, adj_values = dereferenced(memo[0]), dereferenced(memo[1])
    n = len(values)
    prev = last.previous()
    if len(adjoints) != len(given) or len(prev) != 2 * n + 1 \
            or any(a is not b and not isinstance(a, (int, float)) for a, b in zip(adjoints, given)):
        return False  # (the adjoints of numbers are placeholders: any value does)
    array = _array_class()
    for i, v in enumerate(values):
        own_grad = i >= len(adjoints) or adjoints[i] is None  # the adjoint is v.grad
        if isinstance(v, array) and (v is not prev[i] or (
                own_grad and getattr(v, "grad", None) is not adj_values[i])):
            return False  # another array, or an array whose own gradient was replaced
    if not same_or_repacked(backward, last, [*values, *adj_values, memo[2]]):
        return False
    try:
        L._run_or_capture(backward, last.cmd)
    finally:
        last.park(backward)
    return True
