"""The loop over a kernel's threads: the entry function's body around the kernel's.

A 1-d launch is one loop over [start, end); a multi-dimensional one runs as rows, the inner
loop along the last dimension, so that both vectorise the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir as ll

from kernelc.codegen.llvm_ops import I32, I64
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

Emitter = Any  # kernelc.codegen.llvm.FunctionEmitter (which imports this module)


def emit_loops(e: Emitter, start: ll.Value, end: ll.Value) -> None:
    """The threads [start, end) of the kernel `e` emits, each running its body once."""
    ndim = 0 if e.state.options.wide_launch else launch_ndim(e.fn)
    if ndim >= 2:
        emit_rows(e, start, end, ndim)
    else:
        emit_threads(e, non_negative(e.b, e.b.trunc(start, I32)), e.b.trunc(end, I32), None)


def threads_innermost(module: ir.Module) -> bool:
    """Whether the loop over threads is the innermost loop: no loop in the kernel or its
    funcs. LLVM vectorises innermost loops only, so only then is it a SIMD candidate."""
    return not any(isinstance(s, (ir.For, ir.While))
                   for fn in (module.kernel, *module.funcs) for s in ir.walk(fn.body))


def launch_ndim(fn: ir.Function) -> int:
    """The launch dimensionality the kernel's tid() calls unpack (0 if none say)."""
    found = {s.attr[1] for s in ir.walk(fn.body)
             if isinstance(s, ir.Op) and s.opcode == OpCode.TID}
    return found.pop() if len(found) == 1 else 0


def non_negative(b: ll.IRBuilder, first: ll.Value) -> ll.Value:
    """`first` (never negative) as LLVM can see it is not: then so is every thread index,
    and tests such as `i < 0` (an indexed array's index counted from the end) fold away."""
    return b.select(b.icmp_signed("<", first, I32(0)), I32(0), first)  # smax(first, 0)


def counted_loop(e: Emitter, first: ll.Value, stop: ll.Value, step: int, name: str,
                 body: Callable[[ll.Value, ll.Block], None]) -> None:
    """`for counter in range(first, stop, step)` over i32 with `nsw` increments (so that
    LLVM's scalar evolution sees affine indices); `body(counter, latch)` emits one
    iteration, branching to `latch` to continue (it falls through there too)."""
    b, f = e.b, e.llfn
    before = b.block
    cond_bb = f.append_basic_block(f"{name}.cond")
    body_bb = f.append_basic_block(f"{name}.body")
    latch_bb = f.append_basic_block(f"{name}.next")
    exit_bb = f.append_basic_block(f"{name}.exit")
    b.branch(cond_bb)
    b.position_at_end(cond_bb)
    counter = b.phi(I32, name)
    counter.add_incoming(first, before)
    b.cbranch(b.icmp_signed("<", counter, stop), body_bb, exit_bb)
    b.position_at_end(body_bb)
    body(counter, latch_bb)
    if not b.block.is_terminated:
        b.branch(latch_bb)
    b.position_at_end(latch_bb)
    counter.add_incoming(b.add(counter, I32(step), flags=["nsw"]), latch_bb)
    b.branch(cond_bb)
    b.position_at_end(exit_bb)


def launch_dims(e: Emitter, ndim: int) -> list[ll.Value]:
    """The launch's dimensions (i64) from the kernel's argument block."""
    return [e.b.load(e.b.gep(e.ctx, [I32(0), I32(0), I32(k)], source_etype=e.state.args_type),
                     typ=I64) for k in range(ndim)]


def emit_threads(e: Emitter, first: ll.Value, stop: ll.Value, parts: list | None) -> None:
    """The loop over threads [first, stop): the kernel body once per thread.

    `parts` gives the outer tid() components of a multi-dimensional launch (the last one
    is this loop's counter); None for a 1-d launch.
    """
    # The thread counter is 32-bit (launches stay below 2**31 threads, tid() is an int).
    def body(counter: ll.Value, latch: ll.Block) -> None:
        if parts is None:
            e.tid, e.tid_parts = counter, None
        else:
            row_base, outer = parts
            e.tid = e.b.add(row_base, counter, flags=["nsw"])
            e.tid_parts = [*outer, counter]
        e.thread_exit = latch
        e.zero_slots()
        e.emit_block(e.fn.body)

    counted_loop(e, first, stop, 1, "tid", body)


def emit_rows(e: Emitter, start: ll.Value, end: ll.Value, ndim: int) -> None:
    """A multi-dimensional launch as rows: the inner loop runs along the last dimension
    with tid()'s last component as its counter, so it vectorises like a 1-d launch; the
    other components are divided out once per row, not once per thread."""
    b, f = e.b, e.llfn
    dims = [b.trunc(d, I32) for d in launch_dims(e, ndim)]
    width = dims[-1]
    start32, end32 = non_negative(b, b.trunc(start, I32)), b.trunc(end, I32)
    before = b.block
    cond_bb = f.append_basic_block("row.cond")
    body_bb = f.append_basic_block("row.body")
    exit_bb = f.append_basic_block("row.exit")
    b.branch(cond_bb)
    b.position_at_end(cond_bb)
    t = b.phi(I32, "row.t")  # the linear index of the row's first thread
    t.add_incoming(start32, before)
    b.cbranch(b.icmp_signed("<", t, end32), body_bb, exit_bb)
    b.position_at_end(body_bb)
    row = b.sdiv(t, width)
    col = b.srem(t, width)
    row_base = b.mul(row, width, flags=["nsw"])
    row_end = b.add(row_base, width, flags=["nsw"])
    row_end = b.select(b.icmp_signed("<", row_end, end32), row_end, end32)
    outer, rest = [], row
    for k in range(ndim - 2, -1, -1):  # row = index over dims[:-1], row-major
        outer.insert(0, b.srem(rest, dims[k]))
        rest = b.sdiv(rest, dims[k])
    emit_threads(e, col, b.sub(row_end, row_base), (row_base, outer))
    t.add_incoming(row_end, b.block)
    b.branch(cond_bb)
    b.position_at_end(exit_bb)


def op_tid_at(e: Emitter, s: ir.Op):
    """tid()'s component `axis` of the thread whose linear index is the operand (a kernel
    run once per block of lanes, see `ir/lanes.py`): its coordinate in the launch's whole
    shape, as a scalar tid() of a wider launch gives the leading one."""
    b = e.b
    axis, _ = s.attr
    # 32-bit arithmetic: a launch has fewer than 2**31 threads, and 32-bit division is
    # several times faster than 64-bit division on most x86 cores.
    dims = [b.trunc(d, I32) for d in launch_dims(e, 4)]
    stride = I32(1)
    for d in dims[axis + 1:]:
        stride = b.mul(stride, d)
    index = b.udiv(e.v(s.args[0]), stride)
    return index if axis == 0 else b.urem(index, dims[axis])


def op_launch_size(e: Emitter, s: ir.Op):
    """The launch's thread count: the product of its (4-d, padded with 1s) shape."""
    dims = launch_dims(e, 4)
    total = dims[0]
    for d in dims[1:]:
        total = e.b.mul(total, d)
    return e.b.trunc(total, I32)
