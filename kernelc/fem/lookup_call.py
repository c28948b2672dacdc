"""`fem.lookup(domain, x, ...)` inside integrands: which of Warp's call forms a call is,
told apart by its arguments' types when the integrand is compiled, then the matching
`cell_lookup` overload of the geometry (`lookup.py`) called.

    fem.lookup(domain, x)
    fem.lookup(domain, x, max_dist)                            max_dist: a float
    fem.lookup(domain, x, guess)                               guess: a Sample
    fem.lookup(domain, x, filter_array, filter_target)         max_dist 0
    fem.lookup(domain, x, max_dist, filter_array, filter_target)

    fem.lookup(domain, x, env_index)                           env_index: an int
    fem.lookup(domain, x, max_dist, env_index)
    fem.lookup(domain, x[, max_dist], filter_array, filter_target, env_index)

The arguments after x may also be passed by keyword (`guess=s`, `max_dist=0.5`, ...).
The env_index forms search one environment of a geometry of several (sparse grids built
by `from_environment_voxels`); there, a lookup must name its environment or give a guess
sample. An int right after x is an environment index, as in Warp (write `0.5`, not `1`,
for a max_dist). On a geometry of one environment the index is ignored, as Warp does.
"""

import ast
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.fem.types import sample_type, vec_type

NAMES = ("guess", "max_dist", "filter_array", "filter_target", "env_index")
FORMS = ((), ("max_dist",), ("guess",), ("filter_array", "filter_target"),
         ("max_dist", "filter_array", "filter_target"), ("env_index",),
         ("max_dist", "env_index"), ("filter_array", "filter_target", "env_index"),
         ("max_dist", "filter_array", "filter_target", "env_index"))
USAGE = ("fem.lookup(domain, x[, max_dist | guess]) or fem.lookup(domain, x[, max_dist], "
         "filter_array, filter_target), each with an env_index last on geometries of several "
         "environments")


class LookupCall:
    """What an integrand's `fem.lookup` on a domain calls: the geometry's `cell_lookup`
    overloads, with the position and sample types a call must pass; `environments` is the
    geometry's environment count, `env_forms` whether its lookups take an env_index."""

    _kc_special = "fem_lookup"

    def __init__(self, func: Any, dimension: int, scalar: Any, environments: int = 1,
                 env_forms: bool = False) -> None:
        self.func = func
        self.dimension = dimension
        self.scalar = scalar
        self.environments = environments
        self.env_forms = env_forms

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("fem.lookup can only be called inside an integrand")


def _error(lowerer: Any, message: str, node: ast.AST) -> KernelError:
    return KernelError(message, lowerer.source.loc(node), lowerer.ctx.kernel_name)


def _is_int(t: Any) -> bool:
    return isinstance(t, T.ScalarType) and t.is_int


def _positional_names(lowerer: Any, extras: list) -> tuple[str, ...]:
    """The parameter names of the arguments after x, from their count and types: an int
    where Warp's forms allow one is the environment index."""
    types = [v.type for _, v in extras]
    array_first = bool(types) and isinstance(types[0], T.ArrayType)
    if len(extras) == 1:
        if isinstance(types[0], T.StructType):
            return ("guess",)
        if _is_int(types[0]):
            return ("env_index",)
        return ("max_dist",)
    if len(extras) == 2:
        if array_first:
            return ("filter_array", "filter_target")
        if _is_int(types[1]):
            return ("max_dist", "env_index")
        raise _error(lowerer, f"fem.lookup(domain, x, filter_array, filter_target): "
                     f"filter_array must be an array, got {types[0]!r}", extras[0][0])
    if len(extras) == 3:
        if array_first:
            return ("filter_array", "filter_target", "env_index")
        return ("max_dist", "filter_array", "filter_target")
    if len(extras) == 4:
        return ("max_dist", "filter_array", "filter_target", "env_index")
    return ()


def _bind(lowerer: Any, node: ast.Call) -> dict[str, tuple]:
    """The arguments after x by parameter name: (node, lowered value)."""
    extras = [(a, lowerer.func_arg(lowerer.visit(a), a)) for a in node.args[2:]]
    bound = dict(zip(_positional_names(lowerer, extras), extras))
    for keyword in node.keywords:
        if keyword.arg not in NAMES:
            raise _error(lowerer, f"fem.lookup has no parameter '{keyword.arg}' (it takes "
                         f"{', '.join(NAMES)})", keyword.value)
        if keyword.arg in bound:
            raise _error(lowerer, f"fem.lookup got two values for '{keyword.arg}'",
                         keyword.value)
        bound[keyword.arg] = (keyword.value, lowerer.func_arg(lowerer.visit(keyword.value),
                                                              keyword.value))
    form = tuple(name for name in NAMES if name in bound)
    if tuple(sorted(form)) not in {tuple(sorted(f)) for f in FORMS}:
        raise _error(lowerer, f"fem.lookup: ({', '.join(form)}) is not a call form; use "
                     f"{USAGE}", node)
    return bound


def _env_index(lowerer: Any, call: LookupCall, bound: dict, node: ast.Call) -> Any:
    """The environment index argument, checked against the geometry."""
    if "env_index" not in bound:
        if call.environments > 1 and "guess" not in bound:
            raise _error(lowerer, f"fem.lookup on a geometry of {call.environments} "
                         "environments needs the environment to search: pass an env_index "
                         "(an int) last, or a guess sample", node)
        return None
    env_node, env = bound["env_index"]
    if not _is_int(env.type):
        raise _error(lowerer, f"fem.lookup: env_index must be an int, got {env.type!r}",
                     env_node)
    if call.environments <= 1 or not call.env_forms:
        return None  # one environment: every cell is in it
    return lowerer.coerce(env, T.int32) if env.weak else lowerer.cast(env, T.int32)


def _max_dist(lowerer: Any, arg_node: ast.AST, value: Any) -> Any:
    t = value.type
    if isinstance(t, T.ScalarType) and (t.is_float or (value.weak and t.is_int)):
        return lowerer.cast(value, T.float32) if not value.weak else lowerer.coerce(
            value, T.float32)
    raise _error(lowerer, f"fem.lookup: max_dist must be a float, got {t!r}", arg_node)


def _filter(lowerer: Any, bound: dict) -> list:
    (array_node, array), (target_node, target) = bound["filter_array"], bound["filter_target"]
    if not isinstance(array.type, T.ArrayType) or array.type.ndim != 1:
        raise _error(lowerer, f"fem.lookup: filter_array must be a 1-d array (one value per "
                     f"cell), got {array.type!r}", array_node)
    dtype = array.type.dtype
    if not isinstance(dtype, T.ScalarType):
        raise _error(lowerer, f"fem.lookup: filter_array must hold scalars, got {dtype!r}",
                     array_node)
    literal = target.weak and isinstance(target.type, T.ScalarType) and (
        dtype.is_float or not target.type.is_float)  # a float literal is no int target
    if target.type != dtype and not literal:
        raise _error(lowerer, f"fem.lookup: filter_target must have filter_array's dtype "
                     f"({dtype!r}), got {target.type!r}", target_node)
    return [array, lowerer.coerce(target, dtype)]


def lower_lookup(lowerer: Any, node: ast.Call) -> Any:
    """The special form: `node` calls a LookupCall with (domain part, x, ...)."""
    call = lowerer.visit(node.func).obj
    geo = lowerer.func_arg(lowerer.visit(node.args[0]), node.args[0])
    x_node = node.args[1]
    pos = lowerer.func_arg(lowerer.visit(x_node), x_node)
    want = T.as_type(vec_type(call.dimension, call.scalar))
    if pos.type != want:
        raise _error(lowerer, f"fem.lookup: the position must be a {want!r}, got "
                     f"{pos.type!r}", x_node)
    bound = _bind(lowerer, node)
    args = [geo, pos]
    if "guess" in bound:
        guess_node, guess = bound["guess"]
        sample = T.as_type(sample_type(call.scalar))
        if guess.type != sample:
            raise _error(lowerer, f"fem.lookup: guess must be a {sample!r} (a sample of the "
                         f"geometry), got {guess.type!r}", guess_node)
        args.append(guess)
    if "max_dist" in bound:
        args.append(_max_dist(lowerer, *bound["max_dist"]))
    elif "filter_array" in bound:
        args.append(lowerer.coerce(lowerer.from_python(0.0, node), T.float32))
    if "filter_array" in bound:
        args += _filter(lowerer, bound)
    env = _env_index(lowerer, call, bound, node)
    if env is not None:
        if "max_dist" not in bound and "filter_array" not in bound:
            args.append(lowerer.coerce(lowerer.from_python(0.0, node), T.float32))
        args.append(env)
    return lowerer.call_func(call.func, args)


SPECIAL_FORMS = {"fem_lookup": lower_lookup}

__all__ = ["LookupCall", "SPECIAL_FORMS"]
