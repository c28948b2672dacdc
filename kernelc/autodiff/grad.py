"""`kc.grad(f)(args)` inside kernels and funcs: the gradient of a func at a point.

The call runs the func's adjoint (the same one a backward kernel uses) with an incoming
gradient of one for each result, and gives the gradient of every parameter: one value for
a one-parameter func, else a tuple. As in Warp, the call is forward-only: a backward
kernel treats its result as a constant.
"""

from __future__ import annotations

import ast
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

__all__ = ["grad"]


class GradOf:
    """What `kc.grad(f)` returns: callable with `f`'s arguments inside a kernel."""

    _kc_special = "grad_call"

    def __init__(self, func: Any):
        self.func = func

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("kc.grad(f)(...) can only be called inside kernels and funcs")

    def __repr__(self) -> str:
        return f"kc.grad({self.func.__name__})"


def grad(func: Any) -> GradOf:
    """The gradient of the `@kc.func` (or builtin) `func`: `kc.grad(f)(x, y)` inside a
    kernel gives (df/dx, df/dy) at (x, y), for an incoming gradient of 1 on each result."""
    from kernelc.builtins.registry import Builtin
    from kernelc.frontend.decorators import Func

    if not isinstance(func, (Func, Builtin)):
        raise TypeError(f"grad() expects a @kc.func or a builtin, got {type(func).__name__}")
    return GradOf(func)


grad._kc_special = "grad"


def _grad_form(lw, node: ast.Call):
    """`kc.grad(f)`: evaluated while compiling, to the GradOf the outer call uses."""
    from kernelc.frontend.lower_expr import PyObj

    if len(node.args) != 1 or node.keywords:
        raise KernelError("grad() takes one argument, a @kc.func")
    target = lw.visit(node.args[0])
    try:
        return PyObj(grad(getattr(target, "obj", None)))
    except TypeError as err:
        raise KernelError(str(err)) from None


def _grad_call_form(lw, node: ast.Call):
    """`kc.grad(f)(args)`: a call of f's adjoint with unit incoming gradients."""
    from kernelc.autodiff.adjoint import gradient_func
    from kernelc.autodiff.values import differentiable, has_arrays, zero
    from kernelc.frontend.lower_expr import PyObj, TupleVal, Val

    grad_of = lw.visit(node.func).obj
    if node.keywords:
        raise KernelError("grad(f)(...) takes positional arguments")
    from kernelc.frontend.func_values import FunctionArg, FunctionValueType, function_arg

    def argument(value: Any, a: ast.expr):  # a value, or a func or builtin (kc.Function)
        function = function_arg(value.obj, lw.special_form) if isinstance(value, PyObj) \
            else None
        return function if function is not None else lw.as_val(value, a)

    args = [argument(lw.visit(a), a) for a in node.args]

    def default(name: str, value: Any):
        return function_arg(value, lw.special_form) or lw.from_python(value, None)

    from kernelc.builtins.registry import Builtin

    if isinstance(grad_of.func, Builtin):
        func = grad_of.func
        param_types, callee = _builtin_as_func(lw, func, args)
        bound = args
    else:
        func, bound, param_types = grad_of.func.resolve(args, {}, default)
        callee = None
    if any(has_arrays(t) for t in param_types):
        raise KernelError(f"grad() of '{func.__name__}': funcs taking arrays have no "
                          "gradient here")
    coerced = [lw.coerce(a, t).value for a, t in zip(bound, param_types)
               if not isinstance(a, FunctionArg)]
    if callee is None:
        callee = lw.ctx.lower_func(func, param_types, lw.b.loc)
    # a func or builtin argument is no parameter of the lowered func, nor has a gradient
    param_types = tuple(t for t in param_types if not isinstance(t, FunctionValueType))
    info = gradient_func(lw.ctx, callee)
    if not info.diff_results:
        raise KernelError(f"grad() of '{func.__name__}': it returns no float value")
    b = lw.b
    seeds = [_ones(b, callee.return_types[k]) for k in info.diff_results]
    out_types = [param_types[k] for k in info.diff_params]
    rtype = T.void if not out_types else out_types[0] if len(out_types) == 1 \
        else T.TupleType(tuple(out_types))
    result = b.op(OpCode.CALL_FUNC, (*coerced, *seeds), rtype, info.name)
    grads = {}
    for j, k in enumerate(info.diff_params):
        grads[k] = result if len(out_types) == 1 else \
            b.op(OpCode.EXTRACT, (result,), out_types[j], j)
    values = [Val(grads[k]) if k in grads else
              Val(zero(b, t) if differentiable(t) or isinstance(t, T.ScalarType)
                  else _no_gradient(func, t))
              for k, t in enumerate(param_types)]
    if len(values) == 1:
        return values[0]
    return TupleVal(tuple(values)) if values else PyObj(None)


def _builtin_as_func(lw, builtin, args) -> tuple[tuple[T.Type, ...], ir.Function]:
    """A func whose body is one call of `builtin` with arguments of these types, so that
    `kc.grad(kc.atan2)` differentiates like a func."""
    from kernelc.builtins.registry import Expansion
    from kernelc.frontend.builder import IRBuilder

    overload = builtin.overload_for(len(args))
    if overload is None:
        raise KernelError(f"{builtin.name}() takes {' or '.join(builtin.signatures())}")
    try:
        params, result = overload.rule(tuple(a.type for a in args), tuple(a.weak for a in args))
    except TypeError as err:
        raise KernelError(f"{builtin.name}(): {err}") from None
    b = IRBuilder()
    b.loc = lw.b.loc
    values = tuple(b.new_value(t) for t in params)
    out = b.op(OpCode.CALL, values, result, overload.key) if overload.expand is None \
        else overload.expand(b, *values)
    if isinstance(out, Expansion):
        if out.writeback:
            raise KernelError(f"grad() of {builtin.name}(): it changes its arguments")
        out = out.value
    if not isinstance(out, ir.Value):
        raise KernelError(f"grad() of {builtin.name}(): it needs one result")
    b.append(ir.Return(b.loc, (out,)))
    ctx = lw.ctx
    name = f"{builtin.name}_{ctx._next_id}"
    ctx._next_id += 1
    fn = ir.Function(name, values, tuple(f"x{k}" for k in range(len(values))), (result,),
                     b.body(), tuple(b.slots), False, b.loc)
    ctx.funcs.append(fn)
    return tuple(params), fn


def _no_gradient(func: Any, t: T.Type):
    raise KernelError(f"grad() of '{func.__name__}': a parameter of type {t!r} has no gradient")


def _ones(b, t: T.Type) -> ir.Value:
    if isinstance(t, T.ScalarType):
        return b.const(1, t)
    if isinstance(t, (T.VectorType, T.MatrixType)):
        return b.op(OpCode.BUILD, [b.const(1, t.dtype)] * t.count, t)
    raise KernelError(f"grad() needs float, vector or matrix results, not {t!r}")


SPECIAL_FORMS = {"grad": _grad_form, "grad_call": _grad_call_form}
