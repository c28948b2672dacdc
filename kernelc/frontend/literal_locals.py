"""Which locals of a kernel or func stay literals (Warp's constant locals).

`x = 0.1` makes `x` a literal wherever it is read, as in Warp (`kc.float64(x)` is 0.1 to double
precision, `v[:n]` takes `n = 2` as a constant bound), but only when nothing else can change
it: the name is stored to once in the whole function, and it is never passed by name to a
call that might write into its argument (`kc.randf(state)`, `quat_to_axis_angle(q, axis,
angle)`, `hash_grid_query_next(query, index)`). Passing it to a type (`kc.float64(x)`,
`float(x)`, `kc.vec3d(x, 0.0, 0.0)`), to a func without `kc.ref` parameters (its arguments
are copies) or to a tile operation (`kc.tile_arange(n)`, `kc.tile_load(a, shape=n)`) does
not count: those write nothing back.
"""

from __future__ import annotations

import ast
from typing import Any

from kernelc import types as T

_PYTHON_CASTS = (int, float, bool)


def assigned_once(tree: ast.AST) -> frozenset[str]:
    """The names stored to exactly once in `tree` (so a constant first value is their only
    value, unless a call writes into them)."""
    stores: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
    return frozenset(name for name, count in stores.items() if count == 1)


def literal_locals(tree: ast.AST, source: Any) -> frozenset[str]:
    """The names of `assigned_once(tree)` that no call can write into (see the module
    docstring); `source.lookup_global` resolves callees."""
    passed: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _writes_nothing_back(node.func, source):
            continue
        for arg in (*node.args, *(k.value for k in node.keywords)):
            if isinstance(arg, ast.Name):
                passed.add(arg.id)
    return assigned_once(tree) - passed


def _writes_nothing_back(callee: ast.expr, source: Any) -> bool:
    """Whether the call of `callee` cannot write into a name passed to it: a type (`kc.float64`,
    `float`, `vec3d`), a func without `kc.ref` parameters or a tile operation, resolved from
    the function's globals; anything not resolvable counts as a call that may write back."""
    from kernelc.frontend import refs
    from kernelc.frontend.decorators import Func

    value = _resolved(callee, source)
    if value is _UNKNOWN:
        return False
    if isinstance(value, Func):
        try:
            return not refs.has_refs(value)
        except Exception:  # annotations that do not evaluate: reported where it is lowered
            return False
    if callable(value) and getattr(value, "__module__", "").startswith("kernelc.frontend.tile"):
        return True
    try:
        return value in _PYTHON_CASTS or isinstance(value, (T.ScalarType, T.VectorType,
                                                            T.MatrixType))
    except TypeError:  # an unhashable value
        return False


_UNKNOWN = object()


def _resolved(callee: ast.expr, source: Any) -> Any:
    """The object a callee expression (`name`, `kc.name`) names in the function's globals,
    or _UNKNOWN."""
    path = []
    while isinstance(callee, ast.Attribute):
        path.append(callee.attr)
        callee = callee.value
    if not isinstance(callee, ast.Name):
        return _UNKNOWN
    found, value = source.lookup_global(callee.id)
    if not found:
        return _UNKNOWN
    try:
        for attr in reversed(path):
            value = getattr(value, attr)
    except AttributeError:
        return _UNKNOWN
    return value
