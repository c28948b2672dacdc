"""Custom gradients: `@kc.func_grad(f)` replaces the derived adjoint of a func.

The gradient function takes `f`'s parameters and then the gradient of each of `f`'s
results (`adj_ret`), and adds into `kc.adjoint[x]`, the gradient of parameter `x`:

    @kc.func_grad(safe_sqrt)
    def adj_safe_sqrt(x: float, adj_ret: float):
        if x > 0.0:
            kc.adjoint[x] += adj_ret / (2.0 * kc.sqrt(x))

It is lowered as a func that returns those gradients (each starting at zero), which is the
contract of every adjoint func (see `adjoint.py`); a backward kernel calls it where it would
call the derived one.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError

__all__ = ["adjoint", "func_grad", "func_replay"]


class _Adjoints:
    """`kc.adjoint[x]`: inside a `@kc.func_grad` function, the gradient of parameter x."""

    def __getitem__(self, key: Any) -> Any:
        raise RuntimeError("kc.adjoint[...] can only be used inside a @kc.func_grad function")

    def __repr__(self) -> str:
        return "kc.adjoint"


adjoint = _Adjoints()


def func_grad(forward: Any):
    """Decorator: the decorated function is the gradient of the `@kc.func` `forward`."""
    from kernelc.frontend.decorators import Func

    if not isinstance(forward, Func):
        raise TypeError(f"func_grad() expects a @kc.func, got {type(forward).__name__}")

    def wrap(grad_fn: Any) -> Func:
        grad = Func(grad_fn)
        names = grad.arg_names
        n = len(forward.arg_names)
        if len(names) < n:
            raise TypeError(f"the gradient of '{forward.__name__}' takes its {n} parameters "
                            f"and then the gradients of its results; "
                            f"'{grad_fn.__name__}' has {len(names)} parameters")
        # Of overloads, the one whose parameter types the gradient's first ones repeat.
        chosen = [v for v in forward.variants if _leading_types_match(v, grad)]
        for variant in chosen if len(forward.variants) > 1 and chosen else forward.variants:
            variant.custom_grad = grad
        return grad

    return wrap


def _leading_types_match(forward: Any, grad: Any) -> bool:
    """Whether `grad` starts with the parameter types of the func (overload) `forward`."""
    try:
        mine = [forward.annotations.get(a) for a in forward.arg_names]
        theirs = [grad.annotations.get(a) for a in grad.arg_names[:len(mine)]]
    except KernelError:  # annotations not evaluable yet: no overload chosen by them
        return False
    return len(theirs) == len(mine) and all(a == b for a, b in zip(mine, theirs))


def func_replay(forward: Any):
    """Decorator: the decorated function (same parameters and results as the `@kc.func`
    `forward`) stands in for `forward` where a backward kernel replays the forward pass,
    as Warp's `wp.func_replay` does (to skip side effects, or recompute more cheaply)."""
    from kernelc.frontend.decorators import Func

    if not isinstance(forward, Func):
        raise TypeError(f"func_replay() expects a @kc.func, got {type(forward).__name__}")

    def wrap(replay_fn: Any) -> Func:
        replay = Func(replay_fn)
        if len(replay.arg_names) != len(forward.arg_names):
            raise TypeError(f"the replay of '{forward.__name__}' takes its "
                            f"{len(forward.arg_names)} parameters; '{replay_fn.__name__}' "
                            f"has {len(replay.arg_names)}")
        for variant in forward.variants:
            variant.custom_replay = replay
        return replay

    return wrap


def _adjoint_name(param: str) -> str:
    return f"adj__{param}"


class _Rewrite(ast.NodeTransformer):
    """`kc.adjoint[x]` -> a local holding x's gradient (also `kc.adjoint[s.field]`); of an
    array, the parameter holding its gradient array; every `return` returns the locals."""

    def __init__(self, source, params: list[str], returned: ast.expr):
        self.source = source
        self.params = params
        self.returned = returned

    def visit_Subscript(self, node: ast.Subscript):
        self.generic_visit(node)
        if not _is_adjoint(self.source, node.value):
            return node
        fields = []
        key = node.slice
        while isinstance(key, ast.Attribute):  # `kc.adjoint[s.vec]`: a struct's field
            fields.append(key.attr)
            key = key.value
        if not (isinstance(key, ast.Name) and key.id in self.params):
            raise KernelError("kc.adjoint[...] takes a parameter of the function (or a field "
                              "of one)", self.source.loc(node), self.source.name)
        out: ast.expr = ast.Name(_adjoint_name(key.id), ast.Load())
        for name in reversed(fields):
            out = ast.Attribute(out, name, ast.Load())
        out.ctx = node.ctx
        return ast.copy_location(out, node)

    def visit_Return(self, node: ast.Return):
        if node.value is not None:
            raise KernelError("a gradient function returns nothing: it adds into "
                              "kc.adjoint[x]", self.source.loc(node), self.source.name)
        return ast.copy_location(ast.Return(self.returned), node)


def _is_adjoint(source, node: ast.expr) -> bool:
    """Whether the expression names `kc.adjoint` (evaluated in the function's globals)."""
    try:
        value = eval(compile(ast.Expression(node), "<adjoint>", "eval"),  # noqa: S307
                     dict(source.globals))
    except Exception:
        return False
    return value is adjoint


def lower_custom_grad(ctx, grad: Any, forward_types: tuple[T.Type, ...],
                      result_types: tuple[T.Type, ...], loc):
    """The IR func of a custom gradient for a func with these parameter and result types,
    its differentiable parameters and its array parameters with gradients: parameters
    (f's, the gradient arrays of those arrays, then one gradient per result); results: the
    gradients of the differentiable parameters."""
    from kernelc.autodiff.values import differentiable, zero
    from kernelc.frontend.lower import FunctionLowerer

    source = grad.source
    names = [a.arg for a in source.tree.args.args]
    n = len(forward_types)
    if len(names) != n + len(result_types):
        raise KernelError(f"the gradient function '{grad.__name__}' must take the func's "
                          f"parameters ({n}) and then one gradient per result "
                          f"({len(result_types)}); it has {len(names)} parameters",
                          loc, ctx.kernel_name)
    diff = [k for k, t in enumerate(forward_types) if differentiable(t)]
    # `kc.adjoint[a][i] += g` adds into the gradient array of array parameter `a`
    arrays = [k for k, t in enumerate(forward_types)
              if isinstance(t, T.ArrayType) and differentiable(t.dtype)]
    if not diff and not arrays:
        raise KernelError(f"'{grad.__name__}': the func has no parameter with a gradient",
                          loc, ctx.kernel_name)
    items = [ast.Name(_adjoint_name(names[k]), ast.Load()) for k in diff]
    returned = None if not items else items[0] if len(items) == 1 else \
        ast.Tuple(items, ast.Load())
    tree = _Rewrite(source, names[:n], returned).visit(_copy(source.tree))
    tree.body.append(ast.copy_location(ast.Return(returned), tree.body[-1]))
    tree.args.args[n:n] = [ast.arg(_adjoint_name(names[k])) for k in arrays]
    ast.fix_missing_locations(tree)
    rewritten = dataclasses.replace(source, tree=tree)
    types = (*forward_types, *(forward_types[k] for k in arrays), *result_types)

    class GradLowerer(FunctionLowerer):
        def bind_params(self, fn_tree):
            params = super().bind_params(fn_tree)
            for k in diff:  # every gradient starts at zero
                slot = self.b.new_slot(_adjoint_name(names[k]), forward_types[k])
                self.b.store(slot, zero(self.b, forward_types[k]))
                self.names[_adjoint_name(names[k])] = slot
            return params

    name = f"{grad.__name__}_{ctx._next_id}"
    ctx._next_id += 1
    lowerer = GradLowerer(ctx, rewritten, types, is_kernel=False, name=name)
    return lowerer.lower(), tuple(diff), tuple(arrays)


def _copy(tree: ast.FunctionDef) -> ast.FunctionDef:
    import copy

    return copy.deepcopy(tree)
