"""Which compiled variant a CPU launch runs, by whether its array arguments share memory.

A kernel's default CPU variant (`CpuOptions.disjoint_arrays`) is compiled for launches
whose array arguments share no memory: atomics on arrays each thread only touches at its
own element are plain updates, and loads and stores of array arguments carry alias scopes
(`codegen/llvm_alias.py`), which is what lets LLVM vectorise gathers such as a stencil's.
A launch whose arrays overlap (one array passed as input and output, two views of one
buffer) runs the variant compiled without those promises instead.

The check needs the byte ranges of the array arguments (kept on each array), so it is made
when a launch is packed; a launch that reuses its packing with the same arrays pays nothing,
and one that swaps arrays (`launch_reuse.py`) checks the new set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernelc import types as T
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


def makes_promises(kernel: Any, types: tuple[T.Type, ...], lanes: int = 1) -> bool:
    """Whether the default variant of `kernel` for `types` may assume disjoint arrays: it
    has two array parameters or more and stores into an array or updates one atomically.

    Read from the kernel's unoptimised IR, which has every store and atomic the optimised
    IR (which the code generator reads) has, so the answer errs on the safe side.
    """
    if sum(isinstance(t, (T.ArrayType, T.IndexedArrayType)) for t in types) < 2:
        return False
    known = getattr(kernel, "_kc_promises", None)  # by types (not in `kernel.compiled`,
    if known is None:  # which holds compiled code only)
        known = kernel._kc_promises = {}
    found = known.get((types, lanes))
    if found is None:
        module = kernel.get_ir(types, lanes=lanes)
        found = known[(types, lanes)] = any(_writes(fn) for fn in (module.kernel, *module.funcs))
    return found



def _writes(fn: ir.Function) -> bool:
    return any(isinstance(s, ir.ArrayStore)
               or (isinstance(s, ir.Op) and s.opcode == OpCode.ATOMIC) for s in ir.walk(fn.body))


def wide_launch(kernel: Any, types: tuple[T.Type, ...], dims: tuple[int, ...],
                lanes: int = 1) -> bool:
    """Whether a launch of shape `dims` has more dimensions than some tid() of the kernel
    unpacks (trailing dimensions of 1 do not count).

    The default variant is compiled for launches whose shape its tid() calls cover: a
    scalar tid() is the linear index, each thread owns the elements it indexes with its
    tid(), and 2-d to 4-d kernels loop over rows. Wider launches run the variant that
    reads every tid() from the launch's whole shape: a scalar tid() is then the leading
    index, as in Warp (`i = kc.tid()` in a (3, 4) launch runs 4 threads with each i).
    """
    ndim = len(dims)
    while ndim > 1 and dims[ndim - 1] == 1:
        ndim -= 1
    if ndim < 2:
        return False
    known = getattr(kernel, "_kc_tid_arity", None)
    if known is None:
        known = kernel._kc_tid_arity = {}
    arity = known.get((types, lanes))
    if arity is None:
        fn = kernel.get_ir(types, lanes=lanes).kernel
        if fn.lanes > 1:  # run once per block: every tid() reads the launch's whole shape
            known[(types, lanes)] = 4
            return False
        arity = known[(types, lanes)] = min((max(s.attr[1], 1) for s in ir.walk(fn.body)
                                    if isinstance(s, ir.Op) and s.opcode == OpCode.TID),
                                   default=4)
    return arity < ndim


def pick_variant(kernel: Any, types: tuple[T.Type, ...], values: Sequence[Any],
                 dims: tuple[int, ...], lanes: int = 1):
    """(the compiled kernel to run, disjoint): `disjoint` is True when the arrays were found
    to share no memory and the default variant relies on it, False when they overlap (the
    variant without promises runs), None when the kernel makes no such promise. A launch
    wider than the kernel's tid() runs the `wide_launch` variant; `lanes` > 1 asks for CPU
    blocks of that many threads."""
    from kernelc.runtime.compiler import get_cpu_kernel

    # The default variant first: its compile lowers the kernel (and reports the time).
    # A kernel run once per block reads tid() from the launch's whole shape anyway.
    wide = wide_launch(kernel, types, dims, lanes)
    compiled = get_cpu_kernel(kernel, types, wide_launch=wide, lanes=lanes)
    if not makes_promises(kernel, types, lanes):
        return compiled, None
    if overlapping(values, types):
        return get_cpu_kernel(kernel, types, disjoint_arrays=False, wide_launch=wide,
                              lanes=lanes), False
    return compiled, True


def repick_variant(kernel: Any, compiled: Any, disjoint: bool | None, values: Sequence[Any],
                   dims: tuple[int, ...]):
    """`pick_variant` for new `values` or `dims` of a launch that runs `compiled`, the
    variant that `disjoint` says: looked up again only when the answer changes."""
    wide = wide_launch(kernel, compiled.params, dims, compiled.lanes)
    if compiled.wide_launch == wide and (
            disjoint is None or overlapping(values, compiled.params) == (not disjoint)):
        return compiled, disjoint
    return pick_variant(kernel, compiled.params, values, dims, compiled.lanes)


def overlapping(values: Sequence[Any], types: Sequence[T.Type]) -> bool:
    """Whether any two array arguments share memory (by the byte ranges they span); an
    indexed array counts with the whole of its data array, and its index arrays, which may
    share memory with each other (not with anything else).

    On the path of every launch that swaps arrays: kept to a sort and one pass."""
    spans = [span_of(v, t.dtype.size) for v, t in zip(values, types)
             if v is not None and isinstance(t, T.ArrayType)]
    for v, t in zip(values, types):
        if v is not None and isinstance(t, T.IndexedArrayType):
            spans.append(span_of(v.data, t.dtype.size))
            # One span per distinct index array: `[I, I]` reuses one array.
            indices = {id(i): i for i in v.indices if i is not None}
            spans.extend(span_of(i, 4) for i in indices.values())
    spans.sort()
    end = 0
    for lo, hi in spans:
        if lo < end:
            return True
        end = hi
    return False


def span_of(v, itemsize: int) -> tuple[int, int]:
    """The byte range an array's elements cover (kept on the array: its layout is fixed)."""
    found = getattr(v, "_kc_span", None)
    if found is not None and found[0] == itemsize:
        return found[1]
    lo = hi = v.ptr
    for n, s in zip(v.shape, v.strides):
        reach = (n - 1) * s if n else 0
        lo, hi = (lo + reach, hi) if reach < 0 else (lo, hi + reach)
    span = (lo, hi + itemsize)
    if hasattr(v, "__dict__"):
        v._kc_span = (itemsize, span)
    return span
