"""Block-wide BVH and mesh queries (`tile_bvh_query_aabb`, `tile_bvh_query_ray`,
`tile_mesh_query_aabb`, their `_next` forms and `tile_query_valid`); special forms, see
`tile_forms`.

A tiled query is the ordinary query (`bvh_query_aabb`, ...) run once per block: each
`_next` hands every lane of the block the next result in a tile of shape (block_dim,) (1
with one lane per block), or -1 once the query is used up; `tile_query_valid` turns false
after a batch without results, as Warp's does.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend import tile_value as tv
from kernelc.frontend.builder import StorageHandle, Val
from kernelc.frontend.lower_expr import PyObj
from kernelc.frontend.tile_forms import form_table
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

form = form_table(globals())
_NAMES = itertools.count()


@dataclass(frozen=True)
class TileQuery(StorageHandle):
    """A query in progress: the names of the variables holding the scalar query and its
    index (so the ordinary `_next` form advances them in place), and the valid flag."""

    kind: str  # "bvh" or "mesh"
    query: str
    index: str
    valid: ir.Slot


def _start(lowerer, args, node, kind: str, scalar_form: str, params: tuple[str, str, str]):
    import kernelc

    b = lowerer.b
    values = [lowerer.visit(args[p]) for p in params]
    with lowerer.bound_names([PyObj(getattr(kernelc, scalar_form))]) as (callee,):
        query = lowerer.as_val(lowerer.call_on_values(callee, values, node), node)
    n = next(_NAMES)
    names = (f"__tile_query{n}", f"__tile_query_index{n}")
    for name, value in zip(names, (query.value, b.const(0, T.int32))):
        slot = b.new_slot(name, value.type)
        b.store(slot, value)
        lowerer.names[name] = slot
    valid = b.new_slot("query_valid", T.bool_)
    b.store(valid, b.const(True, T.bool_))
    return TileQuery(kind, *names, valid)


def _next(lowerer, args, node, kind: str, scalar_form: str):
    import kernelc

    q = lowerer.visit(args["query"])
    if not isinstance(q, TileQuery) or q.kind != kind:
        source = "tile_bvh_query_aabb() or tile_bvh_query_ray()" if kind == "bvh" \
            else "tile_mesh_query_aabb()"
        raise KernelError(f"{scalar_form.replace('query', 'tile_query', 1)}() needs a query "
                          f"from {source}")
    b = lowerer.b
    lanes = lowerer.ctx.lanes
    t = tv.new_tile(b, T.int32, (lanes,))
    b.store(q.valid, b.const(False, T.bool_))
    with tv.counted_loop(b, 0, lanes) as k:  # one result per lane of the block
        with lowerer.bound_names([PyObj(getattr(kernelc, scalar_form))]) as (callee,):
            # The query and index variables are advanced in place, as `bvh_query_next` does.
            call = ast.Call(func=callee, args=[ast.Name(id=q.query, ctx=ast.Load()),
                                               ast.Name(id=q.index, ctx=ast.Load())],
                            keywords=[])
            call = ast.fix_missing_locations(ast.copy_location(call, node))
            found = lowerer.as_val(lowerer.visit(call), node)
        index = b.load(lowerer.names[q.index])
        result = b.op(OpCode.SELECT, (found.value, index, b.const(-1, T.int32)), T.int32)
        b.store(q.valid, b.op(OpCode.BITOR, (b.load(q.valid), found.value), T.bool_))
        tv.store(b, t, [k], result)
    return t


@form("tile_bvh_query_aabb", "id, low, high",
      "A block-wide query of the BVH items whose box overlaps [low, high].")
def _tile_bvh_query_aabb(lowerer, args, node):
    return _start(lowerer, args, node, "bvh", "bvh_query_aabb", ("id", "low", "high"))


@form("tile_bvh_query_ray", "id, start, dir",
      "A block-wide query of the BVH items whose box the ray `start + t dir` (t >= 0) meets.")
def _tile_bvh_query_ray(lowerer, args, node):
    return _start(lowerer, args, node, "bvh", "bvh_query_ray", ("id", "start", "dir"))


@form("tile_bvh_query_next", "query", "The next result of a block-wide BVH query: an int "
      "tile of shape (block_dim,), -1 when there are no more.")
def _tile_bvh_query_next(lowerer, args, node):
    return _next(lowerer, args, node, "bvh", "bvh_query_next")


@form("tile_mesh_query_aabb", "id, low, high",
      "A block-wide query of the mesh faces whose box overlaps [low, high].")
def _tile_mesh_query_aabb(lowerer, args, node):
    return _start(lowerer, args, node, "mesh", "mesh_query_aabb", ("id", "low", "high"))


@form("tile_mesh_query_aabb_next", "query", "The next face of a block-wide mesh query: an "
      "int tile of shape (block_dim,), -1 when there are no more.")
def _tile_mesh_query_aabb_next(lowerer, args, node):
    return _next(lowerer, args, node, "mesh", "mesh_query_aabb_next")


@form("tile_query_valid", "query", "Whether a block-wide query may have more results: true "
      "at first and after a result, false after a step that found nothing.")
def _tile_query_valid(lowerer, args, node):
    q = lowerer.visit(args["query"])
    if not isinstance(q, TileQuery):
        raise KernelError("tile_query_valid() needs a query from tile_bvh_query_aabb(), "
                          "tile_bvh_query_ray() or tile_mesh_query_aabb()")
    return Val(lowerer.b.load(q.valid))


# Warp's names before 1.18, which Warp still accepts with a DeprecationWarning.
_DEPRECATED_ALIASES = {
    "bvh_query_aabb_tiled": "tile_bvh_query_aabb",
    "bvh_query_ray_tiled": "tile_bvh_query_ray",
    "bvh_query_next_tiled": "tile_bvh_query_next",
    "mesh_query_aabb_tiled": "tile_mesh_query_aabb",
    "mesh_query_aabb_next_tiled": "tile_mesh_query_aabb_next",
}


def _deprecated_alias(old: str, new: str):
    params = {"tile_bvh_query_aabb": "id, low, high", "tile_bvh_query_ray": "id, start, dir",
              "tile_mesh_query_aabb": "id, low, high"}.get(new, "query")
    handler = globals()[f"_{new}"]

    @form(old, params, f"Deprecated alias of `{new}` (Warp's name before 1.18).")
    def lower(lowerer, args, node):
        from kernelc.logger import log_warning

        loc = lowerer.source.loc(node)
        log_warning(f"{loc.file}:{loc.line}: wp.{old}() is deprecated (Warp 1.18); use "
                    f"wp.{new}() instead", DeprecationWarning, once=True)
        return handler(lowerer, args, node)

    return lower


for _old, _new in _DEPRECATED_ALIASES.items():
    _deprecated_alias(_old, _new)
