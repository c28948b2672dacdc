"""Constant propagation: ops whose operands are all constants become constants."""

from __future__ import annotations

import dataclasses

from kernelc import types as T
from kernelc.ir import nodes as ir
from kernelc.ir import semantics
from kernelc.ir.nodes import OpCode
from kernelc.ir.passes.rewrite import map_regions, with_body


def constant_propagation(fn: ir.Function) -> ir.Function:
    consts: dict[int, object] = {}

    def block(b: ir.Block) -> ir.Block:
        out = []
        for s in b:
            s = map_regions(s, block)
            if isinstance(s, ir.Op):
                s = _fold(s, consts)
                if s.opcode == OpCode.CONST:
                    consts[s.result.id] = s.attr
            out.append(s)
        return tuple(out)

    return with_body(fn, block(fn.body))


def _fold(s: ir.Op, consts: dict[int, object]) -> ir.Op:
    if s.opcode == OpCode.CONST or not s.args or any(a.id not in consts for a in s.args):
        return s
    vals = [consts[a.id] for a in s.args]
    t = s.args[0].type
    if not all(isinstance(a.type, T.ScalarType) for a in s.args):
        return s
    try:
        if s.opcode in ir.BINARY_OPS:
            value = semantics.eval_binary(s.opcode, vals[0], vals[1], t)
        elif s.opcode in ir.COMPARE_OPS:
            value = semantics.eval_compare(s.opcode, vals[0], vals[1])
        elif s.opcode in ir.UNARY_OPS:
            value = semantics.eval_unary(s.opcode, vals[0], t)
        elif s.opcode == OpCode.CAST:
            value = semantics.to_type(vals[0], s.result.type)
        elif s.opcode == OpCode.SELECT:
            value = vals[1] if vals[0] else vals[2]
        else:
            return s
    except (ArithmeticError, ValueError, KeyError):
        return s
    return dataclasses.replace(s, opcode=OpCode.CONST, args=(), attr=value)
