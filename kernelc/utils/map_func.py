"""What `kc.map` calls: a `@kc.func`, a builtin, a kernelc type, or a Python function or
lambda compiled as kernel code.

Python functions become generic funcs (every parameter `typing.Any`, as Warp treats them).
A lambda has no `def` to read, so its source is found in its file: the `lambda` node on
the code object's first line whose body spans the code's instruction positions.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import linecache
import sys
import types
import typing
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.builtins import BUILTINS, Builtin
from kernelc.errors import KernelError
from kernelc.frontend.decorators import Func, Kernel
from kernelc.frontend.source import Source

# Python's own functions that kernels read as kernelc builtins (`min(a, b)` in a kernel).
_PYTHON_BUILTINS = {min: "min", max: "max", abs: "abs", pow: "pow", round: "round"}


@dataclass(frozen=True)
class MapTarget:
    """A mapped callable, ready to be called from generated code."""

    callee: Any  # what the generated code calls: a Func, a Builtin or a kernelc type
    arg_names: tuple[str, ...]  # one per input (the func's own names where it has them)
    name: str  # for messages and the generated module's name
    key: Hashable  # equal keys compile to the same code


def map_target(func: Any, nargs: int, funcs: dict[Hashable, Func]) -> MapTarget:
    """The target for mapping `func` over `nargs` inputs.

    Args:
        func: What the user passed to `kc.map`.
        nargs: The number of inputs.
        funcs: The cache of funcs made from Python functions (by `python_key`).

    Returns:
        The target.

    Raises:
        TypeError: `func` cannot be mapped, or not over `nargs` inputs.
    """
    if isinstance(func, types.BuiltinFunctionType) and func in _PYTHON_BUILTINS:
        func = BUILTINS[_PYTHON_BUILTINS[func]]
    if isinstance(func, Builtin):
        overload = func.overload_for(nargs)
        if overload is None:
            raise TypeError(f"kc.map: builtin '{func.name}' takes {_counts(func)} arguments, "
                            f"{nargs} inputs given ({' or '.join(func.signatures())})")
        return MapTarget(func, tuple(overload.params), func.name, func)
    if isinstance(func, Func):
        return MapTarget(func, _func_arg_names(func, nargs), func.__name__, func)
    if isinstance(func, Kernel):
        raise TypeError(f"kc.map maps funcs, not kernels: make '{func.__name__}' a @kc.func")
    kc_type = T.as_type(func) if not isinstance(func, types.FunctionType) else None
    if kc_type is not None and not isinstance(kc_type, T.ArrayType):
        # `kc.map(kc.float64, a)` converts; `kc.map(kc.vec3, x, y, z)` builds vectors.
        names = tuple(f"arg{i}" for i in range(nargs))
        return MapTarget(func, names, repr(kc_type).replace(" ", ""), ("type", kc_type))
    if isinstance(func, types.FunctionType):
        key = python_key(func)
        wrapped = funcs.get(key)
        if wrapped is None:
            wrapped = funcs[key] = PythonFunc(func)
        return MapTarget(wrapped, _func_arg_names(wrapped, nargs), wrapped.__name__, key)
    if not callable(func):
        raise TypeError(f"kc.map: func must be a callable or a kc.func, got "
                        f"{type(func).__name__}")
    raise TypeError(f"kc.map: cannot compile {func!r}; pass a @kc.func, a kernelc builtin, or "
                    f"a Python function or lambda defined in a file")


def _counts(builtin: Builtin) -> str:
    return " or ".join(str(n) for n in sorted({len(ov.params) for ov in builtin.overloads}))


def _func_arg_names(func: Func, nargs: int) -> tuple[str, ...]:
    """The parameter names a call with `nargs` positional arguments fills (of the overload
    with that many parameters, if the func has several)."""
    for variant in func.variants:
        names = variant.arg_names
        required = sum(1 for n in names if n not in variant.defaults)
        if required <= nargs <= len(names):
            return names[:nargs]
    counts = sorted({len(v.arg_names) for v in func.variants})
    raise TypeError(f"Number of input arguments ({nargs}) does not match expected number of "
                    f"function arguments ({' or '.join(str(c) for c in counts)})")


# ---- Python functions and lambdas --------------------------------------------------------

class PythonFunc(Func):
    """A plain Python function (or lambda) used as a generic `@kc.func`."""

    def __init__(self, fn: types.FunctionType) -> None:
        super().__init__(fn)
        if fn.__name__ == "<lambda>":
            self.__name__ = "lambda"
            self.__dict__["source"] = lambda_source(fn)
        else:
            _ = self.source  # read now: a function without a file fails here, plainly
        # Every parameter is generic: specialised for the element types of each map.
        self.__dict__["annotations"] = {name: typing.Any for name in
                                        inspect.signature(fn).parameters}


def create_warp_function(func: types.FunctionType) -> tuple[Func, Any]:
    """Makes a generic `kc.func` of a Python function or lambda (Warp's
    `wp.utils.create_warp_function`, what `kc.map` does with Python functions).

    Every parameter is generic (`typing.Any`). On the host the result calls `func`; in
    kernels it compiles `func`'s source (a lambda's from its file, as `kc.map` reads it).

    Args:
        func: A Python function or lambda defined in a file.

    Returns:
        The func and its module (`kc.get_module("map_" + key)`). The func's `key` is the
        function's qualified name with `.`, spaces and `<>` replaced, or for a lambda
        `func_` and the first 16 hex digits of the SHA-256 of its body's source, the same
        in every process.

    Raises:
        TypeError: `func` is not a Python function.
        KernelError: A lambda's source cannot be read.
    """
    from kernelc.runtime.module import get_module

    if not isinstance(func, types.FunctionType):
        raise TypeError(f"create_warp_function() takes a Python function, got "
                        f"{type(func).__name__}")
    made = PythonFunc(func)
    if func.__name__ == "<lambda>":
        body = ast.unparse(made.source.tree.body[0].value)
        key = f"func_{hashlib.sha256(body.encode()).hexdigest()[:16]}"
    else:
        key = func.__qualname__
        for old, new in ((".", "_"), (" ", "_"), ("<", ""), (">", "_")):
            key = key.replace(old, new)
    made.key = key
    return made, get_module(f"map_{key}")


def python_key(fn: types.FunctionType) -> Hashable:
    """Equal for functions that compile to the same code: a lambda made again on each pass
    of a loop maps with the kernel it made the first time. Captured variables are folded
    into the code as constants, so their values are part of the key."""
    cells = fn.__closure__ or ()
    captured = []
    for cell in cells:
        try:
            captured.append(_value_key(cell.cell_contents))
        except ValueError:  # an empty cell
            captured.append(("empty",))
    defaults = tuple(_value_key(v) for v in fn.__defaults__ or ())
    # Module-level numbers and vectors are folded in too (`lambda x: x * scale` in a loop
    # over `scale` at module level); other globals (modules, funcs) are looked up by name.
    folded = []
    for name in sorted(_names(fn.__code__)):
        value = fn.__globals__.get(name)
        if isinstance(value, (int, float, np.generic, np.ndarray)):
            folded.append((name, _value_key(value)))
    return ("python", fn.__code__, tuple(captured), defaults, tuple(folded),
            id(fn.__globals__))


def _names(code: types.CodeType) -> set[str]:
    """The global (and attribute) names `code` and the code nested in it refer to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _value_key(value: Any) -> Hashable:
    if isinstance(value, np.ndarray):  # host vectors, matrices, transforms: by contents
        return ("ndarray", type(value), value.dtype.str, value.shape, value.tobytes())
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))  # the cached func keeps the object alive: ids stay unique
    return (type(value), value)


def lambda_source(fn: types.FunctionType) -> Source:
    """The source of a lambda as a `def` whose body returns the lambda's expression, with
    the positions of the lambda in its file (so errors point there)."""
    code = fn.__code__
    where = f"the lambda on line {code.co_firstlineno} of {code.co_filename}"
    try:
        file = inspect.getsourcefile(fn) or code.co_filename
    except TypeError:
        file = code.co_filename
    lines = linecache.getlines(file, fn.__globals__)
    try:
        tree = ast.parse("".join(lines)) if lines else None
    except SyntaxError:
        tree = None
    if tree is None:
        raise KernelError(f"cannot read the source of {where}; kc.map compiles lambdas from "
                          f"their file")
    params = list(code.co_varnames[:code.co_argcount])
    candidates = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
                  and n.lineno == code.co_firstlineno
                  and [a.arg for a in n.args.posonlyargs + n.args.args] == params]
    node = _pick_lambda(candidates, code)
    if node is None:
        raise KernelError(f"cannot tell which lambda is meant among the {len(candidates)} on "
                          f"line {code.co_firstlineno} of {code.co_filename}; define it with "
                          f"`def` or on a line of its own")
    body = ast.Return(value=node.body)
    ast.copy_location(body, node.body)
    extra = {"type_params": []} if sys.version_info >= (3, 12) else {}
    tree_def = ast.FunctionDef(name="lambda", args=node.args, body=[body], decorator_list=[],
                               returns=None, type_comment=None, **extra)
    ast.copy_location(tree_def, node)
    tree_def.end_lineno, tree_def.end_col_offset = node.end_lineno, node.end_col_offset
    closure = {}
    for var, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            closure[var] = cell.cell_contents
        except ValueError:  # an empty cell: a name assigned after the lambda
            pass
    return Source("<lambda>", file, 1, 0, tree_def, fn.__globals__, closure)


def _pick_lambda(candidates: list[ast.Lambda], code: types.CodeType) -> ast.Lambda | None:
    """The lambda node whose body holds every instruction position of `code`: several
    lambdas on one line differ by column (Python 3.11+ records columns)."""
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    positions = getattr(code, "co_positions", None)
    spans = [] if positions is None else [
        (line, col, end_line, end_col) for line, end_line, col, end_col in positions()
        if None not in (line, end_line, col, end_col) and (line, col) != (end_line, end_col)]
    if not spans:
        return None

    def holds(node: ast.Lambda) -> bool:
        b = node.body
        return all((b.lineno, b.col_offset) <= (s[0], s[1])
                   and (s[2], s[3]) <= (b.end_lineno, b.end_col_offset) for s in spans)

    found = [n for n in candidates if holds(n)]
    if not found:
        return None
    # A lambda inside another one's body: both hold its instructions; the inner one is it.
    return min(found, key=lambda n: (n.body.end_lineno - n.body.lineno,
                                     n.body.end_col_offset - n.body.col_offset))
