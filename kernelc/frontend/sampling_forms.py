"""The random samplers in kernels: `sample_unit_disk(state)`, `poisson(state, lam)`, ...

They are special forms because, as in Warp (and as `randf(state)`), they advance their
state argument in place, which a func call cannot do. Each form calls the sampler's func
of `kernelc.lib.sampling`, which returns (sample, new state), and stores the new state
in the variable passed. A state that is not a variable (`states[i]`, `rand_init(...)`) is
read and left as it is: Warp hands such an argument over as a temporary too.
"""

from __future__ import annotations

import ast
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.builder import Val


def _samplers() -> dict[str, tuple[Any, tuple[str, ...]]]:
    from kernelc.lib.sampling import SAMPLERS

    return SAMPLERS


def _bind(name: str, params: tuple[str, ...], node: ast.Call) -> list[ast.expr]:
    """The argument nodes in parameter order (Warp's parameter names as keywords)."""
    signature = f"{name}({', '.join(params)})"
    if len(node.args) > len(params):
        raise KernelError(f"{signature} takes {len(params)} argument"
                          f"{'s' if len(params) > 1 else ''} ({len(node.args)} given)")
    bound: dict[str, ast.expr] = dict(zip(params, node.args))
    for kw in node.keywords:
        if kw.arg is None:
            raise KernelError("'**' unpacking is not supported in kernels")
        if kw.arg not in params:
            raise KernelError(f"{name}() got an unexpected keyword argument '{kw.arg}'")
        if kw.arg in bound:
            raise KernelError(f"{name}() got two values for argument '{kw.arg}'")
        bound[kw.arg] = kw.value
    missing = [p for p in params if p not in bound]
    if missing:
        raise KernelError(f"{signature} is missing argument '{missing[0]}'")
    return [bound[p] for p in params]


def _state(lowerer, name: str, node: ast.expr) -> Val:
    state = lowerer.as_val(lowerer.visit(node), node)
    if state.type != T.uint32 and not (state.weak and isinstance(state.type, T.ScalarType)
                                       and state.type.is_int):
        raise KernelError(f"{name}() needs a uint32 random state (from rand_init), "
                          f"got a {state.type!r}")
    return lowerer.coerce(state, T.uint32)


def _argument(lowerer, name: str, param: str, node: ast.expr) -> Val:
    """`lam` (a float) or `cdf` (a 1-d float array), checked here so that errors name the
    public function rather than the func behind it."""
    v = lowerer.as_val(lowerer.visit(node), node)
    if param == "cdf":
        if not (isinstance(v.type, T.ArrayType) and v.type.ndim == 1
                and v.type.dtype == T.float32):
            raise KernelError(f"{name}() needs a 1-d float32 array as cdf, got a {v.type!r}")
        return v
    if v.type != T.float32 and not (v.weak and isinstance(v.type, T.ScalarType)):
        raise KernelError(f"{name}() needs a float32 {param}, got a {v.type!r}")
    return lowerer.coerce(v, T.float32)


def _form(name: str):
    def handler(lowerer, node: ast.Call) -> Val:
        func, params = _samplers()[name]
        arg_nodes = _bind(name, params, node)
        args = [_state(lowerer, name, arg_nodes[0])]
        args += [_argument(lowerer, name, p, a) for p, a in zip(params[1:], arg_nodes[1:])]
        value, new_state = lowerer.call_func(func, args).items
        if isinstance(arg_nodes[0], ast.Name):  # advance the caller's variable, as Warp
            lowerer.assign_name(arg_nodes[0].id, new_state, arg_nodes[0])
        return value

    handler.__name__ = f"_{name}"
    return handler


_NAMES = ("sample_unit_ring", "sample_unit_disk", "sample_unit_sphere_surface",
          "sample_unit_sphere", "sample_unit_hemisphere_surface", "sample_unit_hemisphere",
          "sample_unit_square", "sample_unit_cube", "sample_triangle", "poisson", "sample_cdf")

SPECIAL_FORMS = {name: _form(name) for name in _NAMES}
