"""Which locals of a kernel or func stay literals (Warp's constant locals).

`x = 0.1` makes `x` a literal wherever it is read, as in Warp (`kc.float64(x)` is 0.1 to double
precision, `v[:n]` takes `n = 2` as a constant bound), but only when nothing else can change
it: the name is stored to once in the whole function, and it is never passed by name to a
call that might write into its argument (`kc.randf(state)`, `quat_to_axis_angle(q, axis,
angle)`, `hash_grid_query_next(query, index)`). Passing it to a type (`kc.float64(x)`,
`float(x)`, `kc.vec3d(x, 0.0, 0.0)`) does not count: a constructor writes nothing back.
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
        if not isinstance(node, ast.Call) or _is_type(node.func, source):
            continue
        for arg in (*node.args, *(k.value for k in node.keywords)):
            if isinstance(arg, ast.Name):
                passed.add(arg.id)
    return assigned_once(tree) - passed


def _is_type(callee: ast.expr, source: Any) -> bool:
    """Whether `callee` (`kc.float64`, `float`, `vec3d`) names a type when resolved from the
    function's globals; anything not resolvable counts as a call that may write back."""
    path = []
    while isinstance(callee, ast.Attribute):
        path.append(callee.attr)
        callee = callee.value
    if not isinstance(callee, ast.Name):
        return False
    found, value = source.lookup_global(callee.id)
    if not found:
        return False
    try:
        for attr in reversed(path):
            value = getattr(value, attr)
    except AttributeError:
        return False
    return value in _PYTHON_CASTS or isinstance(value, (T.ScalarType, T.VectorType,
                                                        T.MatrixType))
