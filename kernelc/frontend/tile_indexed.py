"""Gathers and scatters through a tile of indices, random tiles, per-lane writes into a
tile, tile stacks, gathers from a tile (`t[indices, :]`), and the block queries
(`block_dim`, `tile_from_thread`); special forms, see `tile_forms`."""

from __future__ import annotations

from dataclasses import dataclass

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend import tile_value as tv
from kernelc.frontend.builder import StorageHandle, Val
from kernelc.frontend.lower_expr import PyObj, TupleVal
from kernelc.frontend.tile_forms import (
    array_operand,
    atomic_add_element,
    check_atomic_add_dtype,
    check_storage,
    form_table,
    lane_index,
    offsets_operand,
)
from kernelc.frontend.tile_types import stack_annotation
from kernelc.frontend.tile_value import Tile
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

form = form_table(globals())


@form("block_dim", "", "The number of lanes in a block: 1 unless the CPU runs blocks of "
      "several (`config.enable_cpu_blocks`).")
def _block_dim(lowerer, args, node):
    lanes = lowerer.ctx.lanes
    return Val(lowerer.b.const(lanes, T.int32), const=lanes)


@form("tile_from_thread", "shape, value, thread_idx=, storage=",
      "A tile of `shape` filled with the value of lane `thread_idx` (default 0).")
def _tile_from_thread(lowerer, args, node):
    check_storage(lowerer, args)
    b = lowerer.b
    with b.collective_code(False):  # each lane's own value
        v = lowerer.as_val(lowerer.visit(args["value"]), node)
    source = None
    if "thread_idx" in args:
        source = lowerer.int32_value(lowerer.visit(args["thread_idx"]), node)
    shape = lowerer.static_shape(args["shape"])
    if lowerer.ctx.lanes > 1:  # lane `thread_idx` hands its value over through the block
        shared = tv.new_tile(b, v.type, (1,))
        with b.collective_code(False):
            picked = b.op(OpCode.EQ, (lane_index(b, lowerer.ctx.lanes),
                                      source if source is not None else tv.const(b, 0)),
                          T.bool_)
            with b.region() as then:
                tv.store(b, shared, [tv.const(b, 0)], v.value)
            b.append(ir.If(b.loc, picked, tuple(then)))
        v = Val(tv.load(b, shared, [tv.const(b, 0)]))
    t = tv.new_tile(b, v.type, shape)
    tv.fill(b, t, v.value)
    return t


def _indexed(lowerer, args, node, what: str, shape: tuple[int, ...] | None, element) -> Tile:
    """Loops over the tile's elements with the array position of each: `offset[d] + c[d]`,
    and `offset[axis] + indices[c[axis]]` along `axis`; elements whose position falls
    outside the array are handed `ok` false. Returns the array."""
    arr = array_operand(lowerer, args["a"], what)
    indices = lowerer.tile_operand(args["indices"], what)
    if indices.ndim != 1 or indices.dtype != T.int32:
        raise KernelError(f"{what}: the indices must be a 1-d tile of int32, got {indices!r}")
    axis = lowerer.static_int(args["axis"], "axis") if "axis" in args else 0
    if not 0 <= axis < arr.ndim:
        raise KernelError(f"{what}: axis {axis} out of range for a {arr.ndim}-d array")
    if len(shape) != arr.ndim:
        raise KernelError(f"{what}: a {len(shape)}-d tile for a {arr.ndim}-d array")
    if shape[axis] != indices.shape[0]:
        raise KernelError(f"{what}: {indices.shape[0]} indices for {shape[axis]} elements "
                          f"along axis {axis}")
    offsets = offsets_operand(lowerer, args, arr.ndim)
    b = lowerer.b
    with tv.loop_nest(b, shape) as idx:
        where = []
        for d, (o, c) in enumerate(zip(offsets, idx)):
            step = tv.load(b, indices, [c]) if d == axis else c
            where.append(b.op(OpCode.ADD, (o, step), T.int32))
        ok = None
        for d, w in enumerate(where):
            inside = b.op(OpCode.BITAND, (b.op(OpCode.GE, (w, tv.const(b, 0)), T.bool_),
                                          b.op(OpCode.LT, (w, arr.extent(b, d)), T.bool_)),
                          T.bool_)
            ok = inside if ok is None else b.op(OpCode.BITAND, (ok, inside), T.bool_)
        element(arr, idx, where, ok)
    return arr


@form("tile_load_indexed", "a, indices, shape, offset=, axis=, storage=",
      "A tile gathered from `a`: along `axis` the positions come from the 1-d int tile "
      "`indices`; positions outside the array read as zero.")
def _tile_load_indexed(lowerer, args, node):
    check_storage(lowerer, args)
    shape = lowerer.static_shape(args["shape"])
    b = lowerer.b
    out: list[Tile] = []

    def element(arr, idx, where, ok):
        if not out:
            out.append(tv.new_tile(b, arr.dtype, shape))
        with b.region() as then:
            tv.store(b, out[0], idx, b.op(OpCode.ARRAY_LOAD, arr.args(where), arr.dtype))
        with b.region() as other:
            tv.store(b, out[0], idx, tv.zero_value(b, arr.dtype))
        b.append(ir.If(b.loc, ok, tuple(then), tuple(other)))

    _indexed(lowerer, args, node, "tile_load_indexed()", shape, element)
    return out[0]


def _scatter(lowerer, args, node, what: str, write):
    t = lowerer.tile_operand(args["t"], what)
    b = lowerer.b

    def element(arr, idx, where, ok):
        if t.dtype != arr.dtype:
            raise KernelError(f"{what}: a tile of {t.dtype!r} and an array of {arr.dtype!r}")
        with b.region() as then:
            write(arr, idx, where, tv.load(b, t, idx))
        b.append(ir.If(b.loc, ok, tuple(then)))

    _indexed(lowerer, args, node, what, t.shape, element)
    return t


@form("tile_store_indexed", "a, indices, t, offset=, axis=",
      "Scatters tile `t` into `a`: along `axis` the positions come from the 1-d int tile "
      "`indices`; elements whose position falls outside the array (e.g. -1) are skipped.")
def _tile_store_indexed(lowerer, args, node):
    b = lowerer.b

    def write(arr, idx, where, value):
        b.append(ir.ArrayStore(b.loc, arr.value, arr.args(where)[1:], value))

    _scatter(lowerer, args, node, "tile_store_indexed()", write)
    return PyObj(None)


@form("tile_atomic_add_indexed", "a, indices, t, offset=, axis=",
      "Atomically adds tile `t` into `a` at positions gathered through `indices` along "
      "`axis` (repeats accumulate); returns a tile of the values replaced.")
def _tile_atomic_add_indexed(lowerer, args, node):
    b = lowerer.b
    t = lowerer.tile_operand(args["t"], "tile_atomic_add_indexed()")
    check_atomic_add_dtype(t.dtype, "tile_atomic_add_indexed()")
    old = tv.new_tile(b, t.dtype, t.shape)
    tv.fill(b, old, tv.zero_value(b, t.dtype))

    def write(arr, idx, where, value):
        tv.store(b, old, idx, atomic_add_element(b, arr.args(where), value))

    _scatter(lowerer, args, node, "tile_atomic_add_indexed()", write)
    return old


# ---- random tiles -------------------------------------------------------------------------

def _random_tile(lowerer, args, node, name: str, dtype: T.ScalarType):
    """Elements drawn from streams seeded with the hash of `rng` plus a lane, each lane
    taking every `lanes`-th element, leaving `rng` itself unchanged, as Warp does."""
    check_storage(lowerer, args)
    from kernelc.builtins.random import pcg

    b = lowerer.b
    shape = lowerer.static_shape(args["shape"])
    rng = lowerer.as_val(lowerer.visit(args["rng"]), node)
    if rng.type != T.uint32:
        raise KernelError(f"{name}(): rng must be a uint32 state from rand_init(), "
                          f"got {rng.type!r}")
    bounds = [args.get("min"), args.get("max")]
    if (bounds[0] is None) != (bounds[1] is None):
        raise KernelError(f"{name}() takes both min and max, or neither")
    extra = [] if bounds[0] is None else [_value(lowerer, n, dtype) for n in bounds]
    state = b.new_slot("tile_rng", T.uint32)
    t = tv.new_tile(b, dtype, shape)
    flat = t.view((t.size,), (1,))
    # Lane L draws elements L, L + lanes, ... from the stream seeded with rng + L.
    lanes = min(lowerer.ctx.lanes, t.size)
    with tv.counted_loop(b, 0, lanes) as lane:
        seed = b.op(OpCode.ADD, (rng.value, b.cast(lane, T.uint32)), T.uint32)
        b.store(state, pcg(b, seed))
        with tv.counted_loop(b, lane, t.size, lanes) as k:
            draw = b.call("randf" if dtype == T.float32 else "randi", [b.load(state), *extra])
            b.store(state, pcg(b, b.load(state)))
            tv.store(b, flat, [k], draw)
    return t


def _value(lowerer, node, dtype: T.ScalarType):
    v = lowerer.as_val(lowerer.visit(node), node)
    v = lowerer.coerce(v, dtype) if v.weak else v
    if v.type != dtype:
        raise KernelError(f"expected a {dtype!r} bound, got {v.type!r}")
    return v.value


@form("tile_randf", "shape, rng, min=, max=, storage=",
      "A float32 tile of uniform values in [0, 1) (or [min, max)) drawn from `rng`, which "
      "is left unchanged.")
def _tile_randf(lowerer, args, node):
    return _random_tile(lowerer, args, node, "tile_randf", T.float32)


@form("tile_randi", "shape, rng, min=, max=, storage=",
      "An int32 tile of random values (or values in [min, max)) drawn from `rng`, which is "
      "left unchanged.")
def _tile_randi(lowerer, args, node):
    return _random_tile(lowerer, args, node, "tile_randi", T.int32)


# ---- per-lane writes into a tile ----------------------------------------------------------

def _lane_write(lowerer, args, node, name: str, accumulate: bool):
    with lowerer.b.collective_code(False):  # every lane writes its own value
        result = _lane_write_here(lowerer, args, node, name, accumulate)
    lowerer.b.barrier()
    return result


def _lane_write_here(lowerer, args, node, name: str, accumulate: bool):
    t = lowerer.tile_operand(args["a"], f"{name}()")
    rest = list(args.get("args", []))
    for key in ("value", "has_value"):
        if key in args:
            rest.append(args[key])
    if len(rest) != t.ndim + 2:
        raise KernelError(f"{name}() takes {t.ndim} index(es), a value and has_value for a "
                          f"{t.ndim}-d tile")
    b = lowerer.b
    idx = lowerer.tile_indices(t, [lowerer.as_val(lowerer.visit(n), n) for n in rest[:-2]])
    value = lowerer.as_val(lowerer.visit(rest[-2]), node)
    value = lowerer.coerce(value, t.dtype) if value.weak else value
    if value.type != t.dtype:
        raise KernelError(f"{name}(): a {value.type!r} value for a tile of {t.dtype!r}")
    flag = lowerer.truth(lowerer.visit(rest[-1]), node)
    with b.region() as then:
        new = value
        if accumulate:
            new = lowerer.as_val(lowerer.element_binary(OpCode.ADD, Val(tv.load(b, t, idx)),
                                                        value, node), node)
        tv.store(b, t, idx, new.value)
    b.append(ir.If(b.loc, flag.value, tuple(then)))
    return PyObj(None)


@form("tile_scatter_add", "a, *args, value=, has_value=, atomic=",
      "tile_scatter_add(t, i[, j[, k]], value, has_value): adds `value` to t[i, ...] when "
      "has_value is true (each lane's contribution).")
def _tile_scatter_add(lowerer, args, node):
    return _lane_write(lowerer, args, node, "tile_scatter_add", True)


@form("tile_scatter_masked", "a, *args, value=, has_value=",
      "tile_scatter_masked(t, i[, j[, k]], value, has_value): sets t[i, ...] to `value` when "
      "has_value is true.")
def _tile_scatter_masked(lowerer, args, node):
    return _lane_write(lowerer, args, node, "tile_scatter_masked", False)


# ---- tile stacks ---------------------------------------------------------------------------

@dataclass(frozen=True)
class TileStack(StorageHandle):
    """A block's stack: `capacity` elements in a tile, and the count in a slot."""

    data: Tile
    count: ir.Slot


def _stack(lowerer, node, what: str) -> TileStack:
    s = lowerer.visit(node)
    if not isinstance(s, TileStack):
        raise KernelError(f"{what} needs a stack from tile_stack()")
    return s


@form("tile_stack", "capacity, dtype", "An empty stack of up to `capacity` elements of "
      "`dtype` shared by the block's lanes.")
def _tile_stack(lowerer, args, node):
    capacity = lowerer.static_ints(args["capacity"], "stack capacity")
    if len(capacity) != 1 or capacity[0] <= 0:
        raise KernelError(f"tile_stack() capacity must be a positive integer constant, got "
                          f"{capacity[0] if len(capacity) == 1 else capacity}")
    b = lowerer.b
    data = tv.new_tile(b, lowerer.eval_annotation(args["dtype"]), capacity, "stack")
    tv.fill(b, data, tv.zero_value(b, data.dtype))
    count = b.new_block_slot("stack_count", T.int32)
    b.store(count, tv.const(b, 0))
    return TileStack(data, count)


# Outside kernels `kc.tile_stack(capacity=..., dtype=...)` is the type of a func parameter
# that takes a stack.
_annotation = stack_annotation("tile_stack")
_annotation.__doc__, _annotation.__module__ = globals()["tile_stack"].__doc__, __name__
globals()["tile_stack"] = _annotation


@form("tile_stack_push", "s, value, has_value", "Pushes `value` when has_value is true and "
      "the stack has room; returns the slot written, or -1.")
def _tile_stack_push(lowerer, args, node):
    with lowerer.b.collective_code(False):  # each lane pushes its own value
        result = _push(lowerer, args, node)
    lowerer.b.barrier()
    return result


def _push(lowerer, args, node):
    s = _stack(lowerer, args["s"], "tile_stack_push()")
    b = lowerer.b
    value = lowerer.as_val(lowerer.visit(args["value"]), node)
    # a literal converts, but not a float literal onto a stack of ints (as in Warp)
    if value.weak and not (isinstance(value.type, T.ScalarType) and value.type.is_float
                           and isinstance(s.data.dtype, T.ScalarType) and s.data.dtype.is_int):
        value = lowerer.coerce(value, s.data.dtype)
    if value.type != s.data.dtype:
        raise KernelError(f"tile_stack_push(): a {value.type!r} onto a stack of "
                          f"{s.data.dtype!r}: the value type does not match the stack's")
    flag = lowerer.truth(lowerer.visit(args["has_value"]), node)
    n = b.load(s.count)
    room = b.op(OpCode.LT, (n, tv.const(b, s.data.shape[0])), T.bool_)
    pushes = b.op(OpCode.BITAND, (flag.value, room), T.bool_)
    slot = b.new_slot("pushed", T.int32)
    b.store(slot, tv.const(b, -1))
    with b.region() as then:
        tv.store(b, s.data, [n], value.value)
        b.store(s.count, b.op(OpCode.ADD, (n, tv.const(b, 1)), T.int32))
        b.store(slot, n)
    b.append(ir.If(b.loc, pushes, tuple(then)))
    return Val(b.load(slot))


@form("tile_stack_pop", "s", "Pops the element pushed last: (value, slot), with slot -1 "
      "(and a zero value) when the stack is empty.")
def _tile_stack_pop(lowerer, args, node):
    with lowerer.b.collective_code(False):  # each lane pops its own element
        result = _pop(lowerer, args, node)
    lowerer.b.barrier()
    return result


def _pop(lowerer, args, node):
    s = _stack(lowerer, args["s"], "tile_stack_pop()")
    b = lowerer.b
    value = b.new_slot("popped", s.data.dtype)
    slot = b.new_slot("popped_slot", T.int32)
    b.store(value, tv.zero_value(b, s.data.dtype))
    b.store(slot, tv.const(b, -1))
    n = b.load(s.count)
    with b.region() as then:
        top = b.op(OpCode.SUB, (n, tv.const(b, 1)), T.int32)
        b.store(value, tv.load(b, s.data, [top]))
        b.store(slot, top)
        b.store(s.count, top)
    b.append(ir.If(b.loc, b.op(OpCode.GT, (n, tv.const(b, 0)), T.bool_), tuple(then)))
    return TupleVal((Val(b.load(value)), Val(b.load(slot))))


@form("tile_stack_count", "s", "The number of elements in the stack.")
def _tile_stack_count(lowerer, args, node):
    s = _stack(lowerer, args["s"], "tile_stack_count()")
    return Val(lowerer.b.load(s.count))


@form("tile_stack_clear", "s", "Empties the stack.")
def _tile_stack_clear(lowerer, args, node):
    s = _stack(lowerer, args["s"], "tile_stack_clear()")
    lowerer.b.store(s.count, tv.const(lowerer.b, 0))
    return PyObj(None)


# ---- gathers from a tile -------------------------------------------------------------------

def gather_rows(lowerer, t: Tile, indices: Tile, axis: int) -> Tile:
    """A copy of `t` with its `axis` indexed by the 1-d int tile `indices` (a negative index
    counts from the end), as `t[indices, :]` does."""
    if indices.ndim != 1 or not (isinstance(indices.dtype, T.ScalarType)
                                 and indices.dtype.is_int):
        raise KernelError(f"a tile index must be a 1-d tile of ints, got {indices!r}")
    b = lowerer.b
    extent = t.shape[axis]
    shape = (*t.shape[:axis], indices.shape[0], *t.shape[axis + 1:])
    out = tv.new_tile(b, t.dtype, shape)
    with tv.loop_nest(b, shape) as idx:
        k = b.cast(tv.load(b, indices, [idx[axis]]), T.int32)
        wrapped = b.op(OpCode.ADD, (k, tv.const(b, extent)), T.int32)
        k = b.op(OpCode.SELECT, (b.op(OpCode.LT, (k, tv.const(b, 0)), T.bool_), wrapped, k),
                 T.int32)
        where = [*idx[:axis], k, *idx[axis + 1:]]
        tv.store(b, out, idx, tv.load(b, t, where))
    return out


@form("tile_slice_indexed", "t, indices", "The rows of `t` picked by the 1-d int tile "
      "`indices` (a copy; `t[indices, :]` in subscript form, any one axis).")
def _tile_slice_indexed(lowerer, args, node):
    t = lowerer.tile_operand(args["t"], "tile_slice_indexed()")
    return gather_rows(lowerer, t, lowerer.tile_operand(args["indices"],
                                                        "tile_slice_indexed()"), 0)
