"""`ReduceMode.Expand` on the CPU: contended atomics go to per-worker private copies.

A kernel launched with `ReduceMode.Expand` whose array parameters are only updated through
atomics (see `ir.analysis.reduction_targets`) runs its thread blocks with those arrays
replaced by private copies, one per block that runs at the same time: the blocks never
contend, and their atomics hit memory no other thread touches. After the run the copies are
combined into the arrays (summed for add/sub, the minimum or maximum for min/max, the
bitwise and / or / xor for those atomics). The result is the same as with direct atomics
up to the order of floating-point additions, which atomics do not fix either.
Compare-and-swap and exchange are never expanded (their result depends on the order).

`DeterministicMode.RUN_TO_RUN` uses the same copies over fixed thread ranges instead of
blocks taken as workers free up (see `deterministic_run`).
"""

from __future__ import annotations

import ctypes
import queue
from collections.abc import Sequence
from typing import Any

import numpy as np

from kernelc.config import DeterministicMode, ReduceMode, config
from kernelc.runtime.context import get_runtime
from kernelc.runtime.memory import contiguous_strides


def reduce_mode(kernel: Any) -> ReduceMode:
    """The kernel's `reduce_mode` option, else `kc.config.reduce_mode`."""
    mode = kernel.options.get("reduce_mode") or config.reduce_mode
    if not isinstance(mode, ReduceMode):
        raise TypeError(f"reduce_mode must be a kc.ReduceMode, got {mode!r}")
    return mode


def deterministic_mode(kernel: Any) -> DeterministicMode:
    """The kernel's module's `deterministic` option (`kc.set_module_options`), else
    `kc.config.deterministic`."""
    options = get_runtime().extras.get("module_options", {}).get(kernel.module)
    mode = None if options is None else options.get("deterministic")
    return config.deterministic if mode is None else mode


def plan_atomics(kernel: Any, compiled: Any, args: ctypes.Structure, values: Sequence[Any],
                 size: int, one_thread: bool) -> tuple[ExpandedRun | None, Any, bool]:
    """How a CPU launch carries out its atomics: (private copies or None, the compiled
    variant to run, whether its threads run one after another), from the deterministic
    mode, the reduce mode and the launch's size (`one_thread`: one thread runs it all)."""
    mode = (deterministic_mode(kernel) if compiled.order_dependent and not one_thread
            else DeterministicMode.NOT_GUARANTEED)
    chosen = kernel.options.get("reduce_mode") or config.reduce_mode is not ReduceMode.Direct
    if not (mode or chosen or (compiled.order_dependent and not one_thread)):
        return None, compiled, False
    from kernelc.runtime.launch_alias import overlapping

    aliased = overlapping(values, compiled.params)
    if not (mode or chosen):
        # The default mode: small accumulators are cheaper summed in private copies.
        plan = small_targets_run(kernel, compiled, args, values, size, aliased)
    elif mode:
        plan = (deterministic_run(kernel, compiled, args, values, aliased)
                if mode is DeterministicMode.RUN_TO_RUN else None)
        if plan is None:
            return None, single_thread_variant(kernel, compiled, values, aliased,
                                               any_mode=True), True
    elif one_thread:
        # One thread runs it all: nothing contends, so nothing to expand.
        if compiled.has_loops or size >= 16384:
            return None, single_thread_variant(kernel, compiled, values, aliased), False
        return None, compiled, False
    else:
        plan = expanded_run(kernel, compiled, args, values, aliased)
    if plan is not None:
        from kernelc.runtime.compiler import get_cpu_kernel

        # Each worker owns its copies: the variant whose atomics on them are plain.
        plan.cfunc = get_cpu_kernel(kernel, compiled.params, expanded=True,
                                     wide_launch=compiled.wide_launch,
                                     lanes=compiled.lanes).cfunc
    return plan, compiled, False


def expanded_run(kernel: Any, compiled: Any, args: ctypes.Structure, values: Sequence[Any],
                 overlapping: bool) -> ExpandedRun | None:
    """The private-copy plan of a CPU launch in `ReduceMode.Expand`, or None when there is
    nothing to expand (no qualifying array, arrays that share memory, one worker)."""
    if reduce_mode(kernel) is not ReduceMode.Expand or overlapping or config.num_threads < 2:
        return None
    targets = reduction_params(kernel, compiled, values)
    return ExpandedRun(args, values, targets) if targets else None


def deterministic_run(kernel: Any, compiled: Any, args: ctypes.Structure,
                      values: Sequence[Any], overlapping: bool) -> ExpandedRun | None:
    """The fixed-range private-copy plan of a launch in `DeterministicMode.RUN_TO_RUN`, or
    None when some order-dependent atomic updates an array that is not a reduction target
    (the launch then runs its threads in order)."""
    if overlapping or -1 in compiled.order_dependent:
        return None
    targets = reduction_params(kernel, compiled, values)
    if not all(targets.get(i) == "add" for i in compiled.order_dependent
               if values[i] is not None):
        return None
    return ExpandedRun(args, values, targets, fixed_ranges=True)


def small_targets_run(kernel: Any, compiled: Any, args: ctypes.Structure,
                      values: Sequence[Any], size: int, overlapping: bool) -> ExpandedRun | None:
    """The fixed-range private-copy plan of a launch in the default mode, for reduction
    targets small enough that zeroing and combining a copy per worker costs less than the
    launch's threads (at most `size` elements in all the copies), or None.

    Contended atomics are slow (a float add is a compare-and-swap loop on x86), and plain
    adds into private copies are not; fixed ranges also make the sums repeat run to run.
    """
    if overlapping:
        return None
    targets = reduction_params(kernel, compiled, values)
    budget = size // config.num_threads
    small = {}
    for i, kind in sorted(targets.items(), key=lambda t: values[t[0]].size):
        budget -= values[i].size
        if budget < 0:
            break
        small[i] = kind
    return ExpandedRun(args, values, small, fixed_ranges=True) if small else None


def single_thread_variant(kernel: Any, compiled: Any, values: Sequence[Any],
                          overlapping: bool, any_mode: bool = False) -> Any:
    """The variant to run when one thread runs a whole `ReduceMode.Expand` launch.

    Nothing contends then, so the variant whose updates of reduction targets are plain
    read-modify-writes (built for private copies) can run on the arrays themselves: an
    atomic float add is a compare-and-swap loop on x86, several times a plain add. Only
    launches with loops or many threads switch, so that a small launch does not pay for
    compiling a second variant. `any_mode`: whatever the reduce mode (a deterministic
    launch that runs its threads in order).
    """
    if ((reduce_mode(kernel) is not ReduceMode.Expand and not any_mode) or overlapping
            or not reduction_params(kernel, compiled, values)):
        return compiled
    from kernelc.runtime.compiler import get_cpu_kernel

    return get_cpu_kernel(kernel, compiled.params, expanded=True,
                          wide_launch=compiled.wide_launch, lanes=compiled.lanes)


def reduction_params(kernel: Any, compiled: Any, values: Sequence[Any]) -> dict[int, str]:
    """The launch's reduction targets: parameter index -> combining operation."""
    from kernelc.ir.analysis import reduction_targets

    found = getattr(compiled, "reduction_targets", None)
    if found is None:  # analysed once per compiled kernel: by parameter index
        fn = kernel.get_ir(compiled.params, lanes=compiled.lanes).kernel
        index = {p.id: i for i, p in enumerate(fn.params)}
        # Thread-private arrays (`compiled.private_params`, by value id) see no contention.
        found = {index[pid]: kind for pid, kind in reduction_targets(fn).items()
                 if pid not in compiled.private_params}
        compiled.reduction_targets = found
    return {i: kind for i, kind in found.items() if values[i] is not None}


class ExpandedRun:
    """Private copies of a launch's reduction targets and the argument blocks that use them."""

    def __init__(self, args: ctypes.Structure, values: Sequence[Any], targets: dict[int, str],
                 fixed_ranges: bool = False):
        self.targets = [(i, kind, values[i].numpy()) for i, kind in sorted(targets.items())]
        self.cfunc: Any = None  # the kernel variant to run on the copies (set by the launcher)
        # Fixed ranges: copy k always takes the k-th of `num_threads` equal thread ranges,
        # so each copy's sum, and their combination in copy order, repeats bit for bit.
        self.fixed_ranges = fixed_ranges
        # Otherwise one copy per thread that can run a block: the workers and the caller.
        copies = config.num_threads + (0 if fixed_ranges else 1)
        self.copies: list[list[np.ndarray]] = []
        self.free: queue.SimpleQueue = queue.SimpleQueue()
        self.blocks: list[tuple[ctypes.Structure, int]] = []  # argument blocks, copy order
        for _ in range(copies):
            block_args = type(args).from_buffer_copy(args)
            own = []
            for i, _kind, view in self.targets:
                private = np.empty(view.shape, view.dtype)
                field = getattr(block_args, f"p{i}")
                field.data = private.ctypes.data
                outer = values[i].ndim
                elem = values[i].dtype.size
                for k, stride in enumerate(contiguous_strides(values[i].shape, elem)[:outer]):
                    field.strides[k] = stride
                own.append(private)
            self.copies.append(own)
            self.blocks.append((block_args, ctypes.addressof(block_args)))  # keeps them alive
            self.free.put(self.blocks[-1])

    def run(self, cfunc: Any, size: int, pool: Any) -> None:
        """Runs threads [0, size) on the pool with private copies, then combines them."""
        for own in self.copies:
            for private, (_i, kind, view) in zip(own, self.targets):
                if kind in ("add", "or", "xor"):  # start from the identity element
                    private.fill(0)
                elif kind == "and":
                    private.fill(0)
                    np.invert(private, out=private)
                else:
                    private[...] = view

        if self.fixed_ranges:
            # Taking every block keeps a concurrent run of this launch out; range k always
            # goes to copy k, which the combination below sums in order.
            for _ in self.blocks:
                self.free.get()
            entries = self.blocks
            bounds = [size * k // len(entries) for k in range(len(entries) + 1)]

            def ranges(_args: int, first: int, last: int) -> None:
                for k in range(first, last):
                    cfunc(entries[k][1], bounds[k], bounds[k + 1])

            try:
                pool.run(ranges, 0, len(entries), 1)
            finally:
                for entry in entries:
                    self.free.put(entry)
        else:
            def block(_args: int, start: int, end: int) -> None:
                entry = self.free.get()
                try:
                    cfunc(entry[1], start, end)
                finally:
                    self.free.put(entry)

            pool.run(block, 0, size, 1)
        # Copy by copy, in copy order: no temporaries, and the same sums every time.
        for k, (_i, kind, view) in enumerate(self.targets):
            combine = _COMBINE[kind]
            for own in self.copies:
                combine(view, own[k], out=view)


_COMBINE = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
            "or": np.bitwise_or, "xor": np.bitwise_xor}
