"""Constant propagation: ops whose operands are all constants become constants, a select
on a constant condition becomes the operand it picks."""

from __future__ import annotations

import dataclasses

from kernelc import types as T
from kernelc.ir import nodes as ir
from kernelc.ir import semantics
from kernelc.ir.nodes import OpCode
from kernelc.ir.passes.rewrite import map_regions, substitute, with_body
from kernelc.ir.signs import never_negative


def constant_propagation(fn: ir.Function) -> ir.Function:
    consts: dict[int, object] = {}
    defs: dict[int, ir.Op | ir.For] = {}
    subst: dict[ir.Value, ir.Value] = {}

    def block(b: ir.Block) -> ir.Block:
        out = []
        for s in b:
            s = substitute(s, subst)
            if isinstance(s, ir.For):
                defs[s.var.id] = s
            # (again after the regions: a while's condition is made in its cond_body)
            s = substitute(map_regions(s, block), subst)
            if isinstance(s, ir.Op):
                s = _fold(_fold_sign_test(s, defs), consts)
                if s.opcode == OpCode.SELECT and s.args[0].id in consts:
                    subst[s.result] = s.args[1] if consts[s.args[0].id] else s.args[2]
                    continue
                if s.opcode == OpCode.CONST:
                    consts[s.result.id] = s.attr
                if s.result is not None:
                    defs[s.result.id] = s
            out.append(s)
        return tuple(out)

    return with_body(fn, block(fn.body))


def _fold_sign_test(s: ir.Op, defs: dict[int, ir.Op | ir.For]) -> ir.Op:
    """`x < 0` is false for an `x` that is never negative (the test a negative array index
    brings, `builtins/array_index.py`, once slot forwarding shows the index is `tid()`)."""
    if s.opcode != OpCode.LT or s.args[1].id not in defs:
        return s
    zero = defs[s.args[1].id]
    if not isinstance(zero, ir.Op) or zero.opcode != OpCode.CONST or zero.attr != 0 \
            or not s.args[0].type.is_int \
            or not never_negative(defs, s.args[0]):
        return s
    return dataclasses.replace(s, opcode=OpCode.CONST, args=(), attr=False)


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
