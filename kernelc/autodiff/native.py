"""Backward passes through `@kc.func_native` snippets (NATIVE ops, see ir/nodes.py).

A native func's IR body is one NATIVE op, so its adjoint func (built by `adjoint.py` like
any other) holds that op's reverse: a NATIVE "adjoint" op calling the `adj_snippet`. It
gets the parameters, the gradient of each (starting at zero, the gradient array of an array,
and for a `kc.ref[T]` parameter the gradient of the value it handed back) and the gradient
of the result (`adj_ret`); it returns the gradients of the value parameters, which flow on
as any func's do.

The forward replay of a native func runs its `replay_snippet` instead of its snippet
where Warp does (a snippet returning nothing); the adjoint func does not run the forward
snippet again (the adjoint snippet reads only the parameters), so that a snippet's side
effects (an atomic counter) happen once per replay, as in Warp.

A snippet without an `adj_snippet` through which a gradient could flow (a float parameter,
array or result) makes differentiating it a KernelError rather than a silent zero.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kernelc import types as T
from kernelc.autodiff.values import zero
from kernelc.errors import KernelError
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


def replay_op(s: ir.Op) -> ir.Op:
    """The op a forward replay runs for the NATIVE op `s`: its replay snippet where the
    native func has one and returns no value (as Warp replays), else `s` itself."""
    call = s.attr
    spec = call.spec
    if call.kind != "forward" or spec.replay_snippet is None or spec.result is not None:
        return s
    return dataclasses.replace(s, attr=dataclasses.replace(call, kind="replay"))


def skip_forward(ad: Any, s: ir.Op) -> bool:
    """In an adjoint func's forward replay: stands in zeros for a NATIVE op's outputs
    (and the elements taken from them) instead of running the snippet; False for other ops."""
    if s.opcode is OpCode.NATIVE:
        ad.native_results.add(s.result.id if s.result is not None else -1)
    elif not (s.opcode is OpCode.EXTRACT and s.args[0].id in ad.native_results):
        return False
    t = s.result.type if s.result is not None else None
    if t is not None and not isinstance(t, T.TupleType):
        ad.env[s.result.id] = zero(ad.b, t)
    return True


def reverse(ad: Any, s: ir.Op) -> None:
    """The reverse of the NATIVE op `s`: its adjoint snippet's gradients, accumulated."""
    spec = s.attr.spec
    if spec.adj_snippet is None:
        if spec.differentiable:
            raise KernelError(
                f"native func '{spec.name}' has no adj_snippet, so a backward kernel cannot "
                f"differentiate it; give @kc.func_native an adj_snippet (or launch the "
                f"kernel without gradients: enable_backward=False)", spec.loc)
        return
    b = ad.b
    r = s.result
    outputs = spec.output_types

    def output_slot(k: int):
        if r is None:
            return None
        if isinstance(r.type, T.TupleType):
            return ad.adj_elements.get((r.id, k))
        return ad.adj_values.get(r.id) if k == 0 else None

    def gradient(k: int, t: T.Type) -> ir.Value:
        slot = output_slot(k)
        return b.load(slot) if slot is not None else zero(b, t)

    first_ref = 1 if spec.result is not None else 0
    adjoints = []
    for k, p in enumerate(spec.params):
        if isinstance(p.type, T.ArrayType):
            shadow = ad.sh(s.args[k])
            adjoints.append(shadow if shadow is not None else zero(b, p.type))
        elif k in spec.ref_outputs:
            adjoints.append(gradient(first_ref + spec.ref_outputs.index(k), p.type))
        else:
            adjoints.append(zero(b, p.type))
    if spec.result is not None:
        adjoints.append(gradient(0, spec.result))
    call = dataclasses.replace(s.attr, kind="adjoint")
    args = [ad.val(a) for a in s.args]
    grads = b.op(OpCode.NATIVE, (*args, *adjoints), call.output_type(), call)
    for j, k in enumerate(spec.adjoint_outputs):
        g = grads if len(spec.adjoint_outputs) == 1 else \
            b.op(OpCode.EXTRACT, (grads,), spec.params[k].type, j)
        ad.acc(s.args[k], g)
    for k, t in enumerate(outputs):  # consumed: ready for the next iteration of a loop
        slot = output_slot(k)
        if slot is not None:
            b.store(slot, zero(b, t))
