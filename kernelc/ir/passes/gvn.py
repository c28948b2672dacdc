"""Value numbering: a pure op identical to one already computed in scope reuses its value."""

from __future__ import annotations

from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode
from kernelc.ir.passes.rewrite import map_regions, substitute, with_body

# Ops that read memory or slots (which change) or have effects are never merged.
_IMPURE = frozenset({OpCode.LOAD_SLOT, OpCode.ARRAY_LOAD, OpCode.LOCAL_LOAD, OpCode.ATOMIC,
                     OpCode.CALL_FUNC, OpCode.LOAD_ADDRESS, OpCode.NATIVE})


def value_numbering(fn: ir.Function) -> ir.Function:
    subst: dict[ir.Value, ir.Value] = {}

    def block(b: ir.Block, seen: dict) -> ir.Block:
        seen = dict(seen)  # values of outer blocks are visible, inner ones are not
        out = []
        for s in b:
            s = substitute(s, subst)
            s = map_regions(s, lambda inner: block(inner, seen))
            if isinstance(s, ir.Op) and s.result is not None and s.opcode not in _IMPURE:
                key = (s.opcode, s.args, _hashable(s.attr), s.result.type)
                if key in seen:
                    subst[s.result] = seen[key]
                    continue
                seen[key] = s.result
            out.append(s)
        return tuple(out)

    return with_body(fn, block(fn.body, {}))


def _hashable(attr):
    if isinstance(attr, float):
        return ("f", repr(attr))  # keeps 0.0 and -0.0 (and NaN) apart
    try:
        hash(attr)
        return attr
    except TypeError:
        return repr(attr)
