"""Funcs that take or return tiles (or tile stacks): lowered into the caller.

A tile lives in the calling thread's local storage (`tile_value`), so a func annotated
`t: kc.tile[float, M, N]` cannot be an IR function of its own; its body is lowered in
place, with its parameters naming the caller's tiles. As in Warp, a tile parameter is the
caller's tile (writes through it are seen by the caller), while rebinding the name inside
the func is local to it. Such a func may return only from its last statement.
"""

from __future__ import annotations

import ast
import typing
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.builder import Val
from kernelc.frontend.lower_expr import PyObj
from kernelc.frontend.tile_types import TileAnnotation, TileStackAnnotation
from kernelc.frontend.tile_value import Tile

_TILE_KINDS = (TileAnnotation, TileStackAnnotation)


def takes_tiles(func: Any) -> bool:
    """Whether a func's annotations name a tile or a tile stack."""
    return any(_tiled(v) for v in func.variants)


def _tiled(variant: Any) -> bool:
    try:
        annotations = variant.annotations
    except KernelError:  # reported by the ordinary call path, if this variant is chosen
        return False
    return any(isinstance(a, _TILE_KINDS) for a in annotations.values())


def call_inline(lowerer, func: Any, node: ast.Call) -> Any:
    """`func(...)` lowered into the caller: the result is what its final `return` gives."""
    func = _variant(func)
    args = [lowerer.visit(a) for a in node.args]
    keywords = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise KernelError("'**' unpacking is not supported in func calls")
        keywords[kw.arg] = lowerer.visit(kw.value)
    bound = func.bind(args, keywords, lambda name, value: lowerer.from_python(value, None))
    inner = _inner_lowerer(lowerer, func)
    for name, value in zip(func.arg_names, bound):
        _bind(lowerer, inner, func, name, value, node)
    tree = func.source.tree
    body, last = list(tree.body), None
    if body and isinstance(body[-1], ast.Return):
        last = body.pop()
    for stmt in body:
        if any(isinstance(n, ast.Return) for n in ast.walk(stmt)):
            raise KernelError(f"func '{func.__name__}' takes a tile, so it is lowered into its "
                              f"caller and may return only from its last statement",
                              func.source.loc(stmt), lowerer.ctx.kernel_name)
        inner.visit(stmt)
    if last is None or last.value is None:
        return PyObj(None)
    result = inner.visit(last.value)
    _check_result(func, result, func.source.loc(last), lowerer)
    return result


def _variant(func: Any) -> Any:
    tiled = [v for v in func.variants if _tiled(v)]
    if len(tiled) > 1:
        raise KernelError(f"func '{func.__name__}' has several overloads taking tiles; "
                          f"kernelc supports one")
    return tiled[0]


def _inner_lowerer(lowerer, func: Any):
    from kernelc.frontend.lower import FunctionLowerer

    inner = FunctionLowerer(lowerer.ctx, func.source, (), is_kernel=False,
                            name=f"{func.__name__}_inlined")
    inner.b = lowerer.b  # the body's statements go where the call is
    return inner


def _bind(lowerer, inner, func: Any, name: str, value: Any, node: ast.AST) -> None:
    ann = func.arg_annotation(name)
    b = lowerer.b
    if isinstance(ann, TileAnnotation):
        if not isinstance(value, Tile):
            raise KernelError(f"parameter '{name}' of func '{func.__name__}' is a {ann!r}; "
                              f"got {_describe(value)}")
        dtype = T.as_type(ann.dtype)
        if value.shape != ann.shape or (dtype is not None and value.dtype != dtype):
            raise KernelError(f"parameter '{name}' of func '{func.__name__}' is a {ann!r}; "
                              f"got a {value!r}")
        inner.names[name] = value
        inner.tile_homes[name] = b.current_block()  # rebinding it in the body is local
        return
    if isinstance(ann, TileStackAnnotation):
        from kernelc.frontend.tile_indexed import TileStack

        if not isinstance(value, TileStack):
            raise KernelError(f"parameter '{name}' of func '{func.__name__}' is a tile stack; "
                              f"got {_describe(value)}")
        inner.names[name] = value
        return
    value = lowerer.as_val(value, node)
    want = None if ann is typing.Any else T.as_type(ann)
    if want is None and ann is not typing.Any:
        raise KernelError(f"parameter '{name}' of '{func.__name__}' has no kernelc type")
    if want is not None and value.type != want:
        if not value.weak:
            raise KernelError(f"parameter '{name}' of func '{func.__name__}' is a {want!r}; "
                              f"got a {value.type!r}")
        value = lowerer.coerce(value, want)
    # a slot, so the body may assign to its parameter as to any local
    slot = b.new_slot(name, value.type)
    b.store(slot, value.value)
    inner.names[name] = slot


def _check_result(func: Any, result: Any, loc, lowerer) -> None:
    ann = func.annotations.get("return")
    if not isinstance(ann, TileAnnotation):
        return
    if not isinstance(result, Tile) or result.shape != ann.shape:
        raise KernelError(f"func '{func.__name__}' is annotated to return a {ann!r}; it "
                          f"returns {_describe(result)}", loc, lowerer.ctx.kernel_name)


def _describe(v: Any) -> str:
    if isinstance(v, Tile):
        return f"a {v!r}"
    if isinstance(v, Val):
        return f"a {v.type!r}"
    return type(v).__name__
