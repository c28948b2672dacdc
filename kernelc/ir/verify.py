"""IR verifier: structural invariants every pass must keep."""

from __future__ import annotations

from kernelc import types as T
from kernelc.ir import nodes as ir
from kernelc.ir.passes.rewrite import operands


class IRVerifyError(AssertionError):
    pass


def verify(module: ir.Module) -> None:
    names = {f.name for f in module.funcs}
    for fn in (*module.funcs, module.kernel):
        _verify_function(fn, names)


def _verify_function(fn: ir.Function, func_names: set[str]) -> None:
    slots = {s.id for s in fn.slots}

    def block(b: ir.Block, defined: set, loop_depth: int) -> None:
        defined = set(defined)
        for s in b:
            for v in operands(s):
                if isinstance(s, ir.While) and v == s.cond:
                    continue  # defined by the loop's own cond_body; checked below
                if v not in defined:
                    raise IRVerifyError(f"{fn.name}: {v!r} used before definition in {s}")
            if isinstance(s, ir.Op):
                _verify_op(fn, s, slots, func_names)
                if s.result is not None:
                    if s.result in defined:
                        raise IRVerifyError(f"{fn.name}: {s.result!r} defined twice")
                    defined.add(s.result)
            elif isinstance(s, (ir.StoreSlot, ir.LocalStore)) and s.slot.id not in slots:
                raise IRVerifyError(f"{fn.name}: unknown slot {s.slot!r}")
            elif isinstance(s, ir.StoreSlot) and s.value.type != s.slot.type:
                raise IRVerifyError(f"{fn.name}: store of {s.value.type!r} into {s.slot!r}")
            elif isinstance(s, (ir.Break, ir.Continue)) and loop_depth == 0:
                raise IRVerifyError(f"{fn.name}: {type(s).__name__} outside a loop")
            elif isinstance(s, ir.If):
                block(s.then_body, defined, loop_depth)
                block(s.else_body, defined, loop_depth)
            elif isinstance(s, ir.For):
                block(s.body, defined | {s.var}, loop_depth + 1)
            elif isinstance(s, ir.While):
                block(s.cond_body, defined, loop_depth)
                inner = defined | {x.result for x in ir.walk(s.cond_body)
                                   if isinstance(x, ir.Op) and x.result is not None}
                if s.cond not in inner:
                    raise IRVerifyError(f"{fn.name}: while condition not defined")
                block(s.body, inner, loop_depth + 1)

    block(fn.body, set(fn.params), 0)


def _verify_op(fn: ir.Function, s: ir.Op, slots: set, func_names: set[str]) -> None:
    if s.opcode in ir.BINARY_OPS or s.opcode in ir.COMPARE_OPS:
        a, b = s.args
        if a.type != b.type:
            raise IRVerifyError(f"{fn.name}: {s.opcode.value} of {a.type!r} and {b.type!r}")
    if s.opcode in ir.COMPARE_OPS and s.result.type != T.bool_:
        raise IRVerifyError(f"{fn.name}: comparison must give bool")
    if s.opcode == ir.OpCode.LOAD_SLOT and s.attr.id not in slots:
        raise IRVerifyError(f"{fn.name}: load of unknown slot {s.attr!r}")
    if s.opcode == ir.OpCode.LOAD_ADDRESS:
        address, index = s.args
        if address.type != T.uint64 or not (isinstance(index.type, T.ScalarType)
                                             and index.type.is_int):
            raise IRVerifyError(f"{fn.name}: load_address needs (uint64, int) operands")
        if not isinstance(s.result.type, T.ScalarType) or s.result.type == T.bool_:
            raise IRVerifyError(f"{fn.name}: load_address gives a scalar")
    if s.opcode == ir.OpCode.CALL_FUNC and s.attr not in func_names:
        raise IRVerifyError(f"{fn.name}: call of unknown func {s.attr}")
