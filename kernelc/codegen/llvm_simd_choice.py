"""Which kernels run their threads as SIMD lanes (`config.cpu_simd`, llvm_simd.py)."""

from __future__ import annotations

from kernelc.codegen import llvm_simd_ops
from kernelc.codegen.llvm_loops import threads_innermost
from kernelc.ir import nodes as ir
from kernelc.ir import varying
from kernelc.ir.nodes import OpCode


def lane_analysis(module: ir.Module, options) -> varying.Varying | None:
    """The kernel's uniform/varying analysis if it runs as SIMD lanes (`options.simd`, see
    `config.cpu_simd`), else None.

    "auto" picks kernels that have a loop (else LLVM vectorises the loop over threads
    itself) and whose loops hold no op that would run one lane at a time and no read of
    a runtime structure at per-lane addresses (`_not_for_lanes`)."""
    if options.debug or options.simd == "off" or options.wide_launch or \
            _uses_addresses(module):
        return None
    if options.simd == "all":
        return varying.analyse(module)
    if threads_innermost(module):
        return None
    if _atomic_count(module.kernel, module) > 1:
        # Lane by lane, a packet runs one atomic for all its lanes before the next: with
        # two, floats would be summed in another order than thread after thread.
        return None
    info = varying.analyse(module)
    if _loops_not_for_lanes(module.kernel.body, info, module):
        return None
    return info


def _loops_not_for_lanes(body: ir.Block, info: varying.Varying, module: ir.Module) -> bool:
    """Whether a loop of `body`, or of a func it calls with varying arguments (a mesh or
    BVH query called once per thread), holds a statement that makes lanes not pay."""
    for s in ir.walk(body):
        if isinstance(s, (ir.For, ir.While)):
            if any(_not_for_lanes(x, info, module) for x in ir.walk((s,))):
                return True
        elif isinstance(s, ir.Op) and s.opcode == OpCode.CALL_FUNC and (
                s.attr in info.lane_funcs or any(a.id in info.values for a in s.args)):
            callee = module.func(s.attr)
            if _loops_not_for_lanes(callee.body, callee_info(callee, s, info), module):
                return True
    return False


# (a native snippet, too, takes its operands by address and runs one thread at a time;
# a kernel run once per block of lanes, TID_AT / LAUNCH_SIZE, already loops over its lanes)
_ADDRESS_OPS = frozenset({OpCode.LOCAL_ARRAY, OpCode.ARRAY_ADDRESS, OpCode.ARRAY_AT,
                          OpCode.NATIVE, OpCode.SLOT_ADDRESS, OpCode.ELEMENT_ADDRESS,
                          OpCode.TID_AT, OpCode.LAUNCH_SIZE})


def _uses_addresses(module: ir.Module) -> bool:
    """Whether a function uses a local array as an array (its address then differs per
    lane) or works with raw addresses: the lane-wise code models neither."""
    return any(isinstance(s, ir.Op) and s.opcode in _ADDRESS_OPS
               for fn in (module.kernel, *module.funcs) for s in ir.walk(fn.body))


def _atomic_count(fn: ir.Function, module: ir.Module) -> int:
    """Atomic ops in `fn` and (per call) in the funcs it calls."""
    count = 0
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Op) and s.opcode == OpCode.ATOMIC:
            count += 1
        elif isinstance(s, ir.Op) and s.opcode == OpCode.CALL_FUNC:
            count += _atomic_count(module.func(s.attr), module)
    return count


def _not_for_lanes(s: ir.Stmt, info: varying.Varying, module: ir.Module) -> bool:
    """Whether `s`, in a loop, makes lanes not pay: it runs one lane at a time, or it
    reads a runtime structure (hash grid, mesh, volume) at per-lane addresses. Such
    reads are gathers inside traversals whose lanes diverge: with lanes, Warp's
    example_sph spent 1.5 to 2 times as long in its neighbour queries."""
    if isinstance(s, ir.Op) and s.opcode == OpCode.CALL_FUNC and (
            s.attr in info.lane_funcs or any(a.id in info.values for a in s.args)):
        callee = module.func(s.attr)
        inner = callee_info(callee, s, info)
        return any(_not_for_lanes(x, inner, module) for x in ir.walk(callee.body))
    if isinstance(s, ir.Print):
        return True
    if isinstance(s, ir.LocalStore):
        return s.slot.id in info.slots
    if isinstance(s, ir.ArrayStore):
        varies = any(v.id in info.values for v in (s.array, *s.indices, s.value))
        return varies and not llvm_simd_ops.plain_array(s.array.type)
    if not isinstance(s, ir.Op) or s.result is None:
        return isinstance(s, ir.Op) and s.opcode == OpCode.CALL_FUNC and s.attr in info.lane_funcs
    if s.result.id not in info.values:
        return False
    return s.opcode == OpCode.LOAD_ADDRESS or not llvm_simd_ops.lane_wise(s, info)


def callee_info(callee: ir.Function, call: ir.Op, info: varying.Varying) -> varying.Varying:
    """The analysis of `callee` for this call: its parameters vary where the arguments do."""
    params = frozenset(p.id for p, a in zip(callee.params, call.args) if a.id in info.values)
    return varying.analyse_function(callee, params, info.lane_funcs)
