"""Dead code elimination: pure ops whose results nobody reads are dropped."""

from __future__ import annotations

from kernelc.ir import nodes as ir
from kernelc.ir.passes.rewrite import map_block, operands, with_body


def dead_code_elimination(fn: ir.Function) -> ir.Function:
    body = fn.body
    while True:
        used = {v for s in ir.walk(body) for v in operands(s)}

        def keep(s: ir.Stmt, used=used):
            if isinstance(s, ir.Op) and s.result is not None and s.result not in used \
                    and s.opcode not in ir.EFFECT_OPS:
                return None
            return s

        new_body = map_block(body, keep)
        if new_body == body:
            return with_body(fn, body)
        body = new_body
