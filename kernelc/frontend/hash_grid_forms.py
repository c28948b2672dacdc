"""Hash-grid queries in kernels: `hash_grid_query`, `hash_grid_query_next`, `hash_grid_point_id`.

They are special forms because `hash_grid_query_next(query, index)` advances both of its
variables in place, as in Warp, and `for index in hash_grid_query(...)` is a loop over a
query. Each form calls a func of `kernelc.spatial.hash_grid_lang`, so the query itself is
ordinary kernelc code that every backend compiles.
"""

from __future__ import annotations

import ast
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.builder import Val
from kernelc.frontend.special import lower_query_while, special
from kernelc.ir import nodes as ir


@special("hash_grid_query")
def hash_grid_query(grid: int, point: Any, max_dist: float) -> Any:
    """Starts a query of the points of `HashGrid` `grid` (its `.id`) in the cells overlapping
    the sphere of radius `max_dist` around `point`; advance it with `hash_grid_query_next`,
    or loop over it: `for index in hash_grid_query(grid, point, max_dist)`.
    Candidates may lie farther than `max_dist`: test the distance yourself."""
    raise RuntimeError("kernelc.hash_grid_query() can only be called inside a kernel")


@special("hash_grid_query_next")
def hash_grid_query_next(query: Any, index: int) -> bool:
    """Moves `query` to its next point and stores that point's index in `index` (both must be
    variables); returns False when no points remain."""
    raise RuntimeError("kernelc.hash_grid_query_next() can only be called inside a kernel")


@special("hash_grid_point_id")
def hash_grid_point_id(grid: int, index: int) -> int:
    """The original index of the point in sorted slot `index` of a built grid (-1 if the grid
    was never built). Launching over `point_id(grid, tid())` visits points cell by cell."""
    raise RuntimeError("kernelc.hash_grid_point_id() can only be called inside a kernel")


def _lang():
    from kernelc.spatial import hash_grid_lang

    return hash_grid_lang


def _grid_id(lowerer, node: ast.expr) -> Val:
    v = lowerer.as_val(lowerer.visit(node), node)
    if v.type == T.uint64 or (v.weak and isinstance(v.type, T.ScalarType) and v.type.is_int):
        return lowerer.coerce(v, T.uint64)
    raise KernelError(f"a hash grid is passed as its uint64 id (grid.id), got a {v.type!r}")


_QUERY_STARTS = {T.float16: "query_f16", T.float32: "query_f32", T.float64: "query_f64"}


def _query_value(lowerer, node: ast.Call) -> Val:
    if node.keywords or len(node.args) not in (3, 4):
        raise KernelError("hash_grid_query() takes 3 or 4 arguments: (grid, point, max_dist) "
                          "or (grid, point, max_dist, group)")
    grid = _grid_id(lowerer, node.args[0])
    point = lowerer.as_val(lowerer.visit(node.args[1]), node.args[1])
    t = point.type
    if not (isinstance(t, T.VectorType) and t.length == 3 and t.dtype in _QUERY_STARTS):
        raise KernelError(f"hash_grid_query() needs a vec3h, vec3 or vec3d point, got {t!r}")
    radius = lowerer.as_val(lowerer.visit(node.args[2]), node.args[2])
    if not (isinstance(radius.type, T.ScalarType) and (radius.weak or radius.type == t.dtype)):
        raise KernelError(f"hash_grid_query() needs a {t.dtype!r} max_dist, got {radius.type!r}")
    radius = lowerer.coerce(radius, t.dtype)
    if len(node.args) == 4:  # only the points of this group (of a grid built with groups)
        group = lowerer.as_val(lowerer.visit(node.args[3]), node.args[3])
        if not (isinstance(group.type, T.ScalarType) and group.type.is_int
                and (group.weak or group.type == T.int32)):
            raise KernelError(f"hash_grid_query() needs an int32 group, got {group.type!r}")
        group, grouped = lowerer.coerce(group, T.int32), lowerer.from_python(1, node)
    else:
        group = grouped = lowerer.from_python(0, node)
    start = getattr(_lang(), _QUERY_STARTS[t.dtype])
    return lowerer.call_func(start, [grid, point, radius, group, grouped])


def _query_next(lowerer, node: ast.Call) -> Val:
    if node.keywords or len(node.args) != 2:
        raise KernelError("hash_grid_query_next() takes 2 arguments: (query, index)")
    names = []
    for arg in node.args:
        if not isinstance(arg, ast.Name):
            raise KernelError("hash_grid_query_next() advances its arguments in place: "
                              "pass two variables")
        names.append(arg.id)
    query = lowerer.as_val(lowerer.visit(node.args[0]), node.args[0])
    if query.type != _lang().HashGridQuery._kc_type:
        raise KernelError(f"hash_grid_query_next() needs a query from hash_grid_query(), "
                          f"got a {query.type!r}")
    index = lowerer.as_val(lowerer.visit(node.args[1]), node.args[1])
    if index.type != T.int32:
        raise KernelError(f"the index of hash_grid_query_next() must be an int32 variable "
                          f"(e.g. index = int(0)), got a {index.type!r}")
    found, new_query, new_index = lowerer.call_func(_lang().query_next, [query, index]).items
    lowerer.assign_name(names[0], new_query, node.args[0])
    lowerer.assign_name(names[1], new_index, node.args[1])
    return found


def _point_id(lowerer, node: ast.Call) -> Val:
    if node.keywords or len(node.args) != 2:
        raise KernelError("hash_grid_point_id() takes 2 arguments: (grid, index)")
    grid = _grid_id(lowerer, node.args[0])
    index = lowerer.as_val(lowerer.visit(node.args[1]), node.args[1])
    if not (isinstance(index.type, T.ScalarType) and index.type.is_int):
        raise KernelError(f"hash_grid_point_id() needs an int index, got {index.type!r}")
    return lowerer.call_func(_lang().point_id, [grid, lowerer.coerce(index, T.int32)])


def query_slot(lowerer, node: ast.expr):
    """The slot of `q` in `for index in q`, when `q` is a variable holding a query."""
    if isinstance(node, ast.Name):
        bound = lowerer.names.get(node.id)
        if isinstance(bound, ir.Slot) and bound.type == _lang().HashGridQuery._kc_type:
            return bound
    return None


def lower_query_loop(lowerer, node: ast.For) -> None:
    """`for index in hash_grid_query(grid, point, max_dist): body` as a while loop whose
    condition advances the query. Looping over a query variable advances that variable,
    as in Warp: a second loop over it finds nothing more."""
    b = lowerer.b
    slot = query_slot(lowerer, node.iter)
    if slot is None:
        slot = b.new_slot("query", _lang().HashGridQuery._kc_type)
        b.store(slot, _query_value(lowerer, node.iter).value)
    lower_query_while(lowerer, node, slot, _lang().query_next)


SPECIAL_FORMS = {"hash_grid_query": _query_value, "hash_grid_query_next": _query_next,
                 "hash_grid_point_id": _point_id}
