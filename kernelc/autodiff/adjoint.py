"""The backward kernel of a kernel: an IR -> IR transform, so every backend compiles it.

A backward kernel (and the adjoint of each func it reaches) has two parts:

- the *forward replay*: the primal computation again, without its stores to arrays (those
  already happened) and its atomics (read instead), so every primal value is known;
- the *reverse sweep*: the statements in reverse order, each adding the gradient of its
  result into the gradients of its operands (`rules.py`). Every SSA value and every slot
  with a gradient has an adjoint slot; gradients of array reads go atomically into the
  gradient arrays (the *shadows* of the arrays, passed as the adjoint parameters).

Regions: a value defined inside an `if` is not visible where its reverse code runs, so
the replay also stores it in a *stash* slot. A loop is replayed in full; its reverse runs
the iterations backwards and recomputes each iteration's body before reversing it. When
an iteration's values depend on slots carried from earlier iterations (`x = x * a[i]`),
the carried slots are restored from a snapshot and the earlier iterations replayed first,
so gradients are exact there too (quadratic in the trip count).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelc import types as T
from kernelc.autodiff import native
from kernelc.autodiff.exits import lower_exits
from kernelc.autodiff.local_arrays import check_call, local_backed
from kernelc.autodiff.sweep import FunctionAD
from kernelc.autodiff.values import differentiable, has_arrays
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


@dataclass(frozen=True)
class AdjointFacts:
    """What a backward launch fixes that its kernel can be specialised on.

    `mask`: the launch's `adj_store_mask`. `present`: per parameter, True for an array
    parameter whose adjoint is a non-empty array, False for one whose adjoint is missing
    or empty, None for other parameters (their gradient arrays are tested as the kernel
    runs). Launches keep these the same from step to step, and a kernel that knows them
    has no per-thread tests of them: its loop over threads can vectorise.
    """

    mask: int
    present: tuple[bool | None, ...]


def adjoint_module(module: ir.Module, facts: AdjointFacts | None = None) -> ir.Module:
    """The module whose kernel is the backward kernel of `module.kernel`.

    Its parameters: the primal's, one adjoint per primal parameter, and a uint64 mask
    (bit k: the adjoint of array parameter k is that array's own gradient, so a store
    into the array consumes the gradient it reads). With `facts`, the kernel is only
    right for launches with those facts (the mask parameter is then unused).
    """
    mad = _ModuleAD(module)
    kernel = lower_exits(module.kernel)
    ad = FunctionAD(mad, kernel)
    adj_params = tuple(ad.b.new_value(p.type) for p in kernel.params)
    mask = ad.b.new_value(T.uint64)
    for k, (p, a) in enumerate(zip(kernel.params, adj_params)):
        ad.env[p.id] = p
        if has_arrays(p.type):
            ad.shadow[p.id] = a
            ad.param_bit[p.id] = k
            present = None if facts is None else facts.present[k]
            if present is not None:  # known at launch: no per-thread test of it
                (ad.nonempty if present else ad.empty).add(a.id)
    ad.mask = mask
    ad.known_mask = None if facts is None else facts.mask
    body = ad.run()
    fn = ir.Function(
        f"{kernel.name}_backward", (*kernel.params, *adj_params, mask),
        (*kernel.param_names, *(f"adj_{n}" for n in kernel.param_names), "adj_store_mask"),
        (), body, tuple(ad.b.slots), True, kernel.loc, kernel.lanes)
    return ir.Module(fn, tuple(mad.out))


def gradient_func(ctx, callee: ir.Function) -> _AdjointFunc:
    """The adjoint of `callee` for `kc.grad(f)(...)` in a forward kernel: made from the
    funcs lowered so far (`ctx.funcs`), and added to them with what it calls."""
    mad = getattr(ctx, "autodiff", None)
    if mad is None:
        mad = ctx.autodiff = _ModuleAD(ir.Module(callee, ()))
    mad.primal.update((f.name, f) for f in ctx.funcs)
    mad.custom.update(ctx.custom_adjoints)
    mad.custom_replays.update(ctx.custom_replays)
    info = mad.adjoint_func(callee.name)
    known = {f.name for f in ctx.funcs}
    ctx.funcs.extend(f for f in mad.out if f.name not in known)
    return info


_ADJOINT_SUFFIX = "_adjoint"


@dataclass
class _AdjointFunc:
    """The adjoint of a func: `name(params..., shadows..., adj_results...)` returns the
    gradients of the differentiable parameters."""

    name: str
    diff_params: tuple[int, ...]
    shadow_params: tuple[int, ...]
    diff_results: tuple[int, ...]


class _ModuleAD:
    """The funcs of a backward kernel's module: replays and adjoints, made on demand."""

    def __init__(self, module: ir.Module):
        self.primal = {f.name: f for f in module.funcs}
        self.custom = dict(module.custom_adjoints)
        self.custom_replays = dict(module.custom_replays)
        self.out: list[ir.Function] = []
        self.names: set[str] = set()
        self.replays: dict[str, str] = {}
        self.adjoints: dict[str, _AdjointFunc] = {}
        self.shadows: dict[str, tuple[str, tuple[int, ...]] | None] = {}
        self._effects: dict[str, bool] = {}
        self._own_gradients: dict[str, bool] = {}

    def reads_own_gradients(self, name: str) -> bool:
        """Whether func `name` (or one it calls) reads an array whose gradient array it
        finds itself (`ARRAY_AT` "grad", e.g. `mesh_get(id).points`): its adjoint then adds
        into gradients even when none of its parameters has one."""
        found = self._own_gradients.get(name)
        if found is None:
            self._own_gradients[name] = False  # (no recursion in funcs; guards cycles)
            found = any(
                isinstance(s, ir.Op) and (
                    (s.opcode is OpCode.ARRAY_AT and s.attr == "grad") or
                    (s.opcode is OpCode.CALL_FUNC and s.attr in self.primal and
                     self.reads_own_gradients(s.attr)))
                for s in ir.walk(self.primal[name].body))
            self._own_gradients[name] = found
        return found

    def is_gradient(self, name: str) -> bool:
        """Whether func `name` is the adjoint of another, called by `kc.grad` in the
        forward kernel: forward-only, so the backward kernel treats it as a constant."""
        if any(grad.name == name for grad, *_ in self.custom.values()):
            return True
        return name.endswith(_ADJOINT_SUFFIX) and name[:-len(_ADJOINT_SUFFIX)] in self.primal

    def require(self, fn: ir.Function) -> None:
        """Emits `fn` after the funcs it calls (as they are: no replay)."""
        for s in ir.walk(fn.body):
            if isinstance(s, ir.Op) and s.opcode is OpCode.CALL_FUNC and s.attr not in self.names:
                self.require(self.primal[s.attr])
        self.emit(fn)

    def emit(self, fn: ir.Function) -> None:
        if fn.name not in self.names:
            self.names.add(fn.name)
            self.out.append(fn)

    def has_effects(self, name: str) -> bool:
        if name not in self._effects:
            self._effects[name] = False  # recursion guard (funcs do not recurse)
            fn = self.primal[name]
            self._effects[name] = any(
                isinstance(s, (ir.ArrayStore, ir.Print)) or (
                    isinstance(s, ir.Op) and (s.opcode in (OpCode.ATOMIC, OpCode.NATIVE) or (
                        s.opcode is OpCode.CALL_FUNC and self.has_effects(s.attr))))
                for s in ir.walk(fn.body))
        return self._effects[name]

    def replay_name(self, name: str) -> str:
        """A func to call in a forward replay: `name` itself, or a copy without effects."""
        found = self.replays.get(name)
        if found is not None:
            return found
        if name in self.custom_replays:  # a @kc.func_replay stands in for it
            found = self.replays[name] = self.replay_name(self.custom_replays[name])
            return found
        fn = self.primal[name]
        if not self.has_effects(name):
            for s in ir.walk(fn.body):
                if isinstance(s, ir.Op) and s.opcode is OpCode.CALL_FUNC:
                    self.replay_name(s.attr)
            self.emit(fn)
            self.replays[name] = name
            return name
        body = self._replay_block(fn.body, local_backed(fn))
        replay = ir.Function(f"{name}_replay", fn.params, fn.param_names, fn.return_types,
                             body, fn.slots, False, fn.loc)
        self.emit(replay)
        self.replays[name] = replay.name
        return replay.name

    def _replay_block(self, block: ir.Block, backed: frozenset[int]) -> ir.Block:
        """`block` without its effects, but for those on the func's own local arrays."""
        out = []
        for s in block:
            if isinstance(s, ir.ArrayStore) and s.array.id in backed:
                out.append(s)
                continue
            if isinstance(s, (ir.ArrayStore, ir.Print, ir.Assert)):
                continue
            if isinstance(s, ir.Op) and s.opcode is OpCode.ATOMIC and s.args[0].id in backed:
                out.append(s)
            elif isinstance(s, ir.Op) and s.opcode is OpCode.ATOMIC:
                if s.result is not None:
                    nd = s.args[0].type.ndim
                    out.append(ir.Op(s.loc, s.result, OpCode.ARRAY_LOAD, s.args[:1 + nd]))
                continue
            if isinstance(s, ir.Op) and s.opcode is OpCode.NATIVE:
                out.append(native.replay_op(s))
            elif isinstance(s, ir.Op) and s.opcode is OpCode.CALL_FUNC:
                if s.attr in self.primal:
                    check_call(s, self.primal[s.attr], self.primal, backed, s.attr)
                out.append(ir.Op(s.loc, s.result, s.opcode, s.args, self.replay_name(s.attr)))
            elif isinstance(s, ir.If):
                out.append(ir.If(s.loc, s.cond, self._replay_block(s.then_body, backed),
                                 self._replay_block(s.else_body, backed)))
            elif isinstance(s, ir.For):
                out.append(ir.For(s.loc, s.var, s.start, s.stop, s.step,
                                  self._replay_block(s.body, backed)))
            elif isinstance(s, ir.While):
                out.append(ir.While(s.loc, self._replay_block(s.cond_body, backed), s.cond,
                                    self._replay_block(s.body, backed)))
            else:
                out.append(s)
        return tuple(out)

    def shadow_func(self, name: str) -> tuple[str, tuple[int, ...]] | None:
        """(name, shadowed parameters) of the shadow twin of func `name`, which returns
        arrays (or structs holding them): `twin(params..., shadows...)` replays `name` and
        returns what it returns with each array replaced by its gradient array, so that
        reads through the returned arrays send their gradients where they belong. None
        when the gradient arrays of what it returns are not known (no gradient flows)."""
        if name in self.shadows:
            return self.shadows[name]
        fn = lower_exits(self.primal[name])
        ad = FunctionAD(self, fn)
        shadowed = tuple(k for k, p in enumerate(fn.params) if has_arrays(p.type))
        shadows = [ad.b.new_value(fn.params[k].type) for k in shadowed]
        for p in fn.params:
            ad.env[p.id] = p
        for k, s in zip(shadowed, shadows):
            ad.shadow[fn.params[k].id] = s
        found = self.shadows[name] = (name + "_shadow", shadowed)
        with ad.b.region() as body:
            ad.b.loc = fn.loc
            ad.fwd_block(fn.body)
            values = []
            for v, t in zip(ad.returned, fn.return_types):
                shadow = ad.sh(v) if has_arrays(t) else None
                if has_arrays(t) and shadow is None:
                    self.shadows[name] = None
                    return None
                values.append(shadow if shadow is not None else ad.val(v))
            ad.b.append(ir.Return(fn.loc, tuple(values)))
        self.emit(ir.Function(
            found[0], (*fn.params, *shadows),
            (*fn.param_names, *(f"adj_{fn.param_names[k]}" for k in shadowed)),
            fn.return_types, tuple(body), tuple(ad.b.slots), False, fn.loc))
        return found

    def adjoint_func(self, name: str) -> _AdjointFunc:
        found = self.adjoints.get(name)
        if found is not None:
            return found
        if name in self.custom:  # a @kc.func_grad gradient
            grad, diff, arrays = self.custom[name]
            self.require(grad)
            results = tuple(range(len(self.primal[name].return_types)))
            info = self.adjoints[name] = _AdjointFunc(grad.name, diff, arrays, results)
            return info
        fn = lower_exits(self.primal[name])
        ad = FunctionAD(self, fn)
        diff = tuple(k for k, p in enumerate(fn.params) if differentiable(p.type))
        shadowed = tuple(k for k, p in enumerate(fn.params) if has_arrays(p.type))
        results = tuple(k for k, t in enumerate(fn.return_types) if differentiable(t))
        shadows = [ad.b.new_value(fn.params[k].type) for k in shadowed]
        seeds = [ad.b.new_value(fn.return_types[k]) for k in results]
        for p in fn.params:
            ad.env[p.id] = p
        for k, s in zip(shadowed, shadows):
            ad.shadow[fn.params[k].id] = s
        info = _AdjointFunc(name + _ADJOINT_SUFFIX, diff, shadowed, results)
        self.adjoints[name] = info
        body = ad.run(seeds={k: s for k, s in zip(results, seeds)},
                      returns=[fn.params[k] for k in diff])
        self.emit(ir.Function(
            info.name, (*fn.params, *shadows, *seeds),
            (*fn.param_names, *(f"adj_{fn.param_names[k]}" for k in shadowed),
             *(f"adj_result{k}" for k in results)),
            tuple(fn.params[k].type for k in diff), body, tuple(ad.b.slots), False, fn.loc))
        return info
