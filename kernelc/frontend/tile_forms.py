"""Tile operations in kernels, with Warp's names and argument orders.

kernelc runs a tile kernel with one lane per block, as Warp does on the CPU: `launch_tiled`
appends a block dimension of 1, `tile(x)` makes a tile of shape (1,) and `untile` reads it
back (B instead of 1 with CPU blocks of B lanes, see `ir/lanes.py`). Shapes are
compile-time constants; every operation becomes loops over the thread's local storage (see
`tile_value`), so tile kernels run on both backends and differentiate like any other code.
Outside kernels these names raise.
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend import tile_structs
from kernelc.frontend import tile_value as tv
from kernelc.frontend.builder import Val
from kernelc.frontend.lower_expr import ArrayView, PyObj, TupleVal
from kernelc.frontend.tile_types import SubscriptableForm
from kernelc.frontend.tile_value import Tile
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


def form_table(namespace: dict[str, Any]):
    """A `form` decorator for the module whose globals are `namespace`: it fills the
    module's SPECIAL_FORMS and `__all__`."""
    forms = namespace.setdefault("SPECIAL_FORMS", {})
    exports = namespace.setdefault("__all__", [])

    def form(name: str, params: str, doc: str):
        """Registers a handler as the special form `name` and publishes a host-side stub
        (which raises) under that name. `params` lists Warp's parameters; `*args` takes
        the rest; a trailing `=` marks an optional one. The handler is called as
        handler(lowerer, {parameter: argument node}, call node)."""
        names = [p.strip() for p in params.split(",") if p.strip()]

        def register(handler):
            def lowered(lowerer, node: ast.Call):
                args = _bind(name, names, node)
                with lowerer.b.collective_code():  # a block's work (see ir/lanes.py)
                    result = handler(lowerer, args, node)
                storage = args.get("storage")
                if isinstance(result, Tile) and isinstance(storage, ast.Constant) \
                        and storage.value == "shared":
                    result = dataclasses.replace(result, storage="shared")
                return result

            def stub(*args: Any, **kwargs: Any) -> Any:
                raise RuntimeError(f"kernelc.{name}() can only be called inside a kernel")

            stub.__name__ = stub.__qualname__ = name
            stub.__doc__ = doc
            stub.__module__ = namespace["__name__"]
            stub._kc_special = name
            forms[name] = lowered
            namespace[name] = stub
            exports.append(name)
            return handler

        return register

    return form


form = form_table(globals())


def _bind(name: str, params: list[str], node: ast.Call) -> dict[str, Any]:
    """Call arguments by parameter name (`*args` collects a list of nodes)."""
    bound: dict[str, Any] = {}
    positional = list(node.args)
    for p in params:
        key = p.split("=")[0]
        if key == "*args":
            bound["args"], positional = positional, []
        elif positional:
            bound[key] = positional.pop(0)
    if positional:
        raise KernelError(f"{name}() takes at most {len(params)} arguments")
    known = {p.split("=")[0] for p in params}
    for k in node.keywords:
        if k.arg not in known or k.arg in bound:
            raise KernelError(f"{name}() got an unexpected keyword argument '{k.arg}'")
        bound[k.arg] = k.value
    for p in params:
        if "=" not in p and p != "*args" and p not in bound:
            raise KernelError(f"{name}() missing required argument '{p}'")
    return bound


def _dtype(lowerer, args: dict, default: T.Type | None = T.float32) -> T.Type | None:
    node = args.get("dtype")
    return default if node is None else lowerer.eval_annotation(node)


def check_storage(lowerer, args: dict) -> None:
    node = args.get("storage")
    if node is not None and not (isinstance(node, ast.Constant)
                                 and node.value in ("register", "shared")):
        raise KernelError("storage must be \"register\" or \"shared\"")


def _flag(lowerer, args: dict, key: str, default: bool) -> bool:
    node = args.get(key)
    if node is None:
        return default
    v = lowerer.visit(node)
    value = v.const if isinstance(v, Val) else getattr(v, "obj", None)
    if not isinstance(value, bool):
        raise KernelError(f"{key} must be a constant True or False")
    return value


def _value(lowerer, node: ast.AST, dtype: T.Type) -> ir.Value:
    v = lowerer.as_val(lowerer.visit(node), node)
    if v.type != dtype:
        if not v.weak:
            raise KernelError(f"expected a value of type {dtype!r}, got {v.type!r}")
        v = lowerer.coerce(v, dtype)
    return v.value


# ---- construction -------------------------------------------------------------------------

def _filled(lowerer, args, dtype: T.Type, value: ir.Value | None) -> Tile:
    check_storage(lowerer, args)
    t = tv.new_tile(lowerer.b, dtype, lowerer.static_shape(args["shape"]))
    tv.fill(lowerer.b, t, tv.zero_value(lowerer.b, dtype) if value is None else value)
    return t


@form("tile_zeros", "shape, dtype=, storage=", "A tile of zeros: tile_zeros(shape, dtype=float).")
def _tile_zeros(lowerer, args, node):
    return _filled(lowerer, args, _dtype(lowerer, args), None)


@form("tile_empty", "shape, dtype=, storage=",
      "A tile whose contents the kernel sets before reading (kernelc zeroes it).")
def _tile_empty(lowerer, args, node):
    return _filled(lowerer, args, _dtype(lowerer, args), None)


@form("tile_ones", "shape, dtype=, storage=", "A tile of ones: tile_ones(shape, dtype=float).")
def _tile_ones(lowerer, args, node):
    dtype = _dtype(lowerer, args)
    if tile_structs.is_struct(dtype):
        raise KernelError(f"tile_ones() does not support Warp struct (@struct) dtypes such as "
                          f"{dtype!r}; use tile_full() with an explicit value")
    one = lowerer.b.const(1, tv.scalar_of(dtype))
    if tv.components(dtype) > 1:
        one = lowerer.b.op(OpCode.BUILD, [one] * tv.components(dtype), dtype)
    return _filled(lowerer, args, dtype, one)


@form("tile_full", "shape, value, dtype=, storage=",
      "A tile with every element `value`; its type is `dtype`, else the value's.")
def _tile_full(lowerer, args, node):
    v = lowerer.as_val(lowerer.visit(args["value"]), node)
    dtype = _dtype(lowerer, args, None) or v.type
    if v.type != dtype:
        if tile_structs.is_struct(dtype) or tile_structs.is_struct(v.type):
            raise KernelError(f"tile_full() value must have dtype {dtype!r} when filling "
                              f"struct tile elements, got {v.type!r}")
        if not (v.weak or isinstance(v.type, T.ScalarType) and isinstance(dtype, T.ScalarType)):
            raise KernelError(f"tile_full(): the value is a {v.type!r}, the tile {dtype!r}")
        v = Val(lowerer.b.cast(v.value, dtype))
    return _filled(lowerer, args, dtype, v.value)


@form("tile", "x, preserve_type=",
      "The per-lane value `x` as a tile: shape (block_dim,) for a scalar (1 with one lane "
      "per block); a vector gives (length, block_dim) and a matrix (rows, cols, block_dim) "
      "unless preserve_type=True.")
def _tile(lowerer, args, node):
    b = lowerer.b
    with b.collective_code(False):  # each lane's own value
        v = lowerer.as_val(lowerer.visit(args["x"]), node)
    lanes = lowerer.ctx.lanes
    whole = isinstance(v.type, (T.ScalarType, T.StructType)) or _flag(lowerer, args,
                                                                       "preserve_type", False)
    if not (whole or isinstance(v.type, (T.VectorType, T.MatrixType))):
        raise KernelError(f"tile() takes a scalar, vector or matrix, not {v.type!r}")
    if whole:
        t = tv.new_tile(b, v.type, (lanes,))
        parts = [((), v.value)]
    else:
        shape = v.type.shape if isinstance(v.type, T.MatrixType) else (v.type.length,)
        t = tv.new_tile(b, v.type.dtype, (*shape, lanes))
        positions = [(r, c) for r in range(shape[0]) for c in range(shape[1])] \
            if len(shape) == 2 else [(c,) for c in range(shape[0])]
        parts = [(pos, k) for k, pos in enumerate(positions)]
    if lanes > 1:  # the entries of lanes past the launch's end read as zeros
        tv.fill(b, t, tv.zero_value(b, t.dtype))
    with b.collective_code(False):
        lane = lane_index(b, lanes)
        for pos, part in parts:
            if isinstance(part, int):
                part = b.op(OpCode.EXTRACT, (v.value,), v.type.dtype, part)
            tv.store(b, t, [*(tv.const(b, p) for p in pos), lane], part)
    b.barrier()
    return t


def lane_index(b, lanes: int) -> ir.Value:
    """The lane's index in its block (int32): 0 with one lane per block."""
    return tv.const(b, 0) if lanes == 1 else b.op(OpCode.LANE, (), T.int32)


globals()["tile"] = SubscriptableForm(globals()["tile"])  # also `kc.tile[float, M, N]`


@form("untile", "a", "The lane's value of a tile made by tile(): a scalar for shape "
      "(block_dim,), a vector for (length, block_dim), a matrix for (rows, cols, block_dim).")
def _untile(lowerer, args, node):
    t = lowerer.tile_operand(args["a"], "untile()")
    with lowerer.b.collective_code(False):  # each lane reads its own entry
        return _lane_entry(lowerer, t)


def _lane_entry(lowerer, t: Tile):
    b = lowerer.b
    lanes = lowerer.ctx.lanes
    if t.shape[-1] != lanes:
        raise KernelError(f"untile() needs a tile whose last dimension is the block size "
                          f"({lanes}), got shape {t.shape}")
    zero = lane_index(b, lanes)
    if t.ndim == 1:
        return Val(tv.load(b, t, [zero]))
    if t.ndim == 2:
        if not isinstance(t.dtype, T.ScalarType):
            raise KernelError("untile() of a 2-d tile needs scalar elements")
        from kernelc.types_vec import vector

        parts = [tv.load(b, t, [tv.const(b, r), zero]) for r in range(t.shape[0])]
        return Val(b.op(OpCode.BUILD, parts, vector(t.shape[0], t.dtype)))
    if t.ndim == 3 and isinstance(t.dtype, T.ScalarType):  # tile() of a matrix
        from kernelc.types_vec import matrix

        rows, cols = t.shape[:2]
        parts = [tv.load(b, t, [tv.const(b, r), tv.const(b, c), zero])
                 for r in range(rows) for c in range(cols)]
        return Val(b.op(OpCode.BUILD, parts, matrix((rows, cols), t.dtype)))
    raise KernelError(f"untile() takes a 1-d, 2-d or 3-d tile, got shape {t.shape}")


# ---- global memory ------------------------------------------------------------------------

@dataclass(frozen=True)
class _ArrayRef:
    """An array argument of a tile load or store; `prefix` holds the leading indices of a
    row taken from a bigger array (`a[i]` of a 2-d `a` is a 1-d array in Warp)."""

    value: ir.Value
    prefix: tuple[ir.Value, ...]
    ndim: int
    dtype: T.Type

    def extent(self, b, k: int) -> ir.Value:
        return b.op(OpCode.ARRAY_SHAPE, (self.value,), T.int32, len(self.prefix) + k)

    def args(self, where) -> tuple[ir.Value, ...]:
        return (self.value, *self.prefix, *where)


def array_operand(lowerer, node: ast.AST, what: str) -> _ArrayRef:
    v = lowerer.visit(node)
    if isinstance(v, ArrayView):
        t = v.array.type
        prefix = tuple(lowerer.b.cast(i.value, T.int32) for i in v.indices)
        return _ArrayRef(v.array.value, prefix, t.ndim - len(prefix), t.dtype)
    v = lowerer.as_val(v, node)
    if not isinstance(v.type, T.ArrayType):
        raise KernelError(f"{what} needs an array, got a {v.type!r}")
    return _ArrayRef(v.value, (), v.type.ndim, v.type.dtype)


def offsets_operand(lowerer, args: dict, ndim: int) -> list[ir.Value]:
    node = args.get("offset")
    if node is None:
        return [tv.const(lowerer.b, 0)] * ndim
    v = lowerer.visit(node)
    items = list(v.items) if isinstance(v, TupleVal) else [v]
    if len(items) != ndim:
        raise KernelError(f"the offset needs {ndim} value(s), one per array dimension, "
                          f"got {len(items)}")
    return [lowerer.int32_value(x, node) for x in items]


def _tile_shape_for(lowerer, args: dict, arr: Val) -> tuple[int, ...]:
    shape = lowerer.static_shape(args["shape"])
    if len(shape) != arr.ndim:
        raise KernelError(f"a {len(shape)}-d tile shape for a {arr.ndim}-d array; "
                          f"they must match")
    return shape


def _guarded(lowerer, arr: _ArrayRef, offsets, shape, bounds_check: bool, element) -> None:
    """Loops over `shape`, calling `element(idx, array_indices, in_bounds)`; with bounds
    checks, a tile wholly inside the array takes a loop without per-element tests."""
    b = lowerer.b

    def loop(checked: bool):
        with tv.loop_nest(b, shape) as idx:
            where = [b.op(OpCode.ADD, (o, i), T.int32) for o, i in zip(offsets, idx)]
            ok = None
            if checked:
                for k, w in enumerate(where):
                    extent = arr.extent(b, k)
                    inside = b.op(OpCode.BITAND, (
                        b.op(OpCode.GE, (w, tv.const(b, 0)), T.bool_),
                        b.op(OpCode.LT, (w, extent), T.bool_)), T.bool_)
                    ok = inside if ok is None else b.op(OpCode.BITAND, (ok, inside), T.bool_)
            element(idx, where, ok)

    if not bounds_check:
        loop(False)
        return
    whole = None
    for k, (o, n) in enumerate(zip(offsets, shape)):
        extent = arr.extent(b, k)
        end = b.op(OpCode.ADD, (o, tv.const(b, n)), T.int32)
        inside = b.op(OpCode.BITAND, (b.op(OpCode.GE, (o, tv.const(b, 0)), T.bool_),
                                      b.op(OpCode.LE, (end, extent), T.bool_)), T.bool_)
        whole = inside if whole is None else b.op(OpCode.BITAND, (whole, inside), T.bool_)
    with b.region() as fast:
        loop(False)
    with b.region() as slow:
        loop(True)
    b.append(ir.If(b.loc, whole, tuple(fast), tuple(slow)))


@form("tile_load", "a, shape, offset=, storage=, bounds_check=, aligned=",
      "A tile of `shape` read from array `a` at `offset` (one index per dimension); with "
      "bounds_check (the default) elements outside the array read as zero.")
def _tile_load(lowerer, args, node):
    check_storage(lowerer, args)
    arr = array_operand(lowerer, args["a"], "tile_load()")
    shape = _tile_shape_for(lowerer, args, arr)
    offsets = offsets_operand(lowerer, args, arr.ndim)
    b = lowerer.b
    t = tv.new_tile(b, arr.dtype, shape)

    def element(idx, where, ok):
        def read():
            return b.op(OpCode.ARRAY_LOAD, arr.args(where), arr.dtype)

        if ok is None:
            tv.store(b, t, idx, read())
            return
        with b.region() as then:
            tv.store(b, t, idx, read())
        with b.region() as other:
            tv.store(b, t, idx, tv.zero_value(b, arr.dtype))
        b.append(ir.If(b.loc, ok, tuple(then), tuple(other)))

    _guarded(lowerer, arr, offsets, shape, _flag(lowerer, args, "bounds_check", True), element)
    return t


def _store_like(lowerer, args, what: str, write) -> None:
    arr = array_operand(lowerer, args["a"], what)
    t = lowerer.tile_operand(args["t"], what)
    if t.ndim != arr.ndim:
        raise KernelError(f"{what}: a {t.ndim}-d tile and a {arr.ndim}-d array")
    if t.dtype != arr.dtype:
        raise KernelError(f"{what}: a tile of {t.dtype!r} and an array of {arr.dtype!r}")
    offsets = offsets_operand(lowerer, args, arr.ndim)
    b = lowerer.b

    def element(idx, where, ok):
        if ok is None:
            write(arr, t, idx, where)
            return
        with b.region() as then:
            write(arr, t, idx, where)
        b.append(ir.If(b.loc, ok, tuple(then)))

    _guarded(lowerer, arr, offsets, t.shape, _flag(lowerer, args, "bounds_check", True), element)
    return arr, t


@form("tile_store", "a, t, offset=, bounds_check=, aligned=",
      "Writes tile `t` into array `a` at `offset`; elements outside the array are skipped.")
def _tile_store(lowerer, args, node):
    b = lowerer.b

    def write(arr, t, idx, where):
        b.append(ir.ArrayStore(b.loc, arr.value, arr.args(where)[1:], tv.load(b, t, idx)))

    _store_like(lowerer, args, "tile_store()", write)
    return PyObj(None)


@form("tile_atomic_add", "a, t, offset=, bounds_check=",
      "Atomically adds tile `t` into array `a` at `offset`; returns a tile of the values "
      "replaced (zero where outside the array).")
def _tile_atomic_add(lowerer, args, node):
    b = lowerer.b
    t = lowerer.tile_operand(args["t"], "tile_atomic_add()")
    check_atomic_add_dtype(t.dtype, "tile_atomic_add()")
    old = tv.new_tile(b, t.dtype, t.shape)
    tv.fill(b, old, tv.zero_value(b, t.dtype))

    def write(arr, t, idx, where):
        tv.store(b, old, idx, atomic_add_element(b, arr.args(where), tv.load(b, t, idx)))

    _store_like(lowerer, args, "tile_atomic_add()", write)
    return old


_ATOMIC_ADD_SCALARS = (T.int32, T.uint32, T.int64, T.uint64, T.float16, T.bfloat16, T.float32,
                       T.float64)


def check_atomic_add_dtype(dtype: T.Type, what: str) -> None:
    """Atomic adds of tiles take the scalar types with a hardware atomic add (as Warp's),
    and structs (whose other fields are left alone, see `tile_structs`)."""
    if not tile_structs.is_struct(dtype) and tv.scalar_of(dtype) not in _ATOMIC_ADD_SCALARS:
        raise KernelError(f"{what} only supports tiles with [u]int32, [u]int64, float16, "
                          f"bfloat16, float32 or float64 as the underlying scalar type, but "
                          f"got {dtype!r}")


def atomic_add_element(b, where: tuple[ir.Value, ...], value: ir.Value) -> ir.Value:
    """Atomically adds `value` into the array element `where` (array, indices); returns the
    element's previous value."""
    if tile_structs.is_struct(value.type):
        return tile_structs.atomic_add(b, where, value)
    return b.op(OpCode.ATOMIC, (*where, value), value.type, "add")


# ---- element-wise maps and reductions -----------------------------------------------------

@form("tile_map", "op, *args",
      "A tile of op(a[i], b[i], ...) over tiles of one shape (other arguments are passed "
      "as they are); op is a builtin or a func.")
def _tile_map(lowerer, args, node):
    operands = [lowerer.visit(n) for n in args.get("args", [])]
    if not any(isinstance(x, Tile) for x in operands):
        raise KernelError("tile_map() needs a function and at least one tile")
    # Arguments that are not tiles (a mesh id, a seed) are passed to every call as they are.
    operands = [x if isinstance(x, Tile) else lowerer.as_val(x, node) for x in operands]
    return lowerer.elementwise(
        operands, lambda *xs: lowerer.call_on_values(args["op"], list(xs), node), node)


def _fold(lowerer, t: Tile, step, node, axis: int | None = None) -> Tile:
    """Reduces `t` (over all elements, or along `axis`) with `step(acc, x) -> Val`, the
    first element starting the accumulator; elements are taken in row-major order."""
    b = lowerer.b
    if axis is None:
        out_shape, src, keep = (1,), tv.flat(b, t), 0
    else:
        if not -t.ndim <= axis < t.ndim:
            raise KernelError(f"axis {axis} out of range for a {t.ndim}-d tile")
        axis %= t.ndim
        keep_shape = t.shape[:axis] + t.shape[axis + 1:]
        out_shape = keep_shape or (1,)
        # move the reduced axis last
        order = [k for k in range(t.ndim) if k != axis] + [axis]
        src = t.view(tuple(t.shape[k] for k in order), tuple(t.strides[k] for k in order))
        keep = len(keep_shape)
    acc_slot = None
    out = None
    with tv.loop_nest(b, src.shape[:keep]) as outer:
        first = Val(tv.load(b, src, [*outer, tv.const(b, 0)]))
        acc_slot = b.new_slot("acc", first.type)
        b.store(acc_slot, first.value)
        with tv.counted_loop(b, 1, src.shape[keep]) as k:
            x = Val(tv.load(b, src, [*outer, k]))
            acc = step(Val(b.load(acc_slot)), x, k)
            b.store(acc_slot, lowerer.as_val(acc, node).value)
        result = b.load(acc_slot)
        out = tv.new_tile(b, result.type, out_shape)
        tv.store(b, out, outer if keep else [tv.const(b, 0)], result)
    return out


def axis_operand(lowerer, args) -> int | None:
    node = args.get("axis")
    return None if node is None else lowerer.static_int(node, "axis")


@form("tile_sum", "a, axis=", "The sum of a tile's elements as a tile of shape (1,), or "
      "along `axis`.")
def _tile_sum(lowerer, args, node):
    t = lowerer.tile_operand(args["a"], "tile_sum()")
    return _fold(lowerer, t, lambda acc, x, k: lowerer.element_binary(OpCode.ADD, acc, x, node),
                 node, axis_operand(lowerer, args))


def _extremum(name: str, builtin: str):
    @form(name, "a, axis=", f"The {builtin}imum of a tile's elements as a tile of shape (1,), "
          f"or along `axis`.")
    def handler(lowerer, args, node):
        t = lowerer.tile_operand(args["a"], f"{name}()")
        tile_structs.reject(f"{name}()", t.dtype)
        if not isinstance(t.dtype, T.ScalarType):
            raise KernelError(f"{name}() needs scalar elements")
        return _fold(lowerer, t, lambda acc, x, k: Val(lowerer.b.call(builtin, [acc.value,
                                                                                x.value])),
                     node, axis_operand(lowerer, args))


_extremum("tile_min", "min")
_extremum("tile_max", "max")


def _arg_extremum(name: str, opcode: OpCode, what: str):
    @form(name, "a", f"The linear index of the first {what} element, as an int tile of shape "
          f"(1,).")
    def handler(lowerer, args, node):
        t = lowerer.tile_operand(args["a"], f"{name}()")
        tile_structs.reject(f"{name}()", t.dtype)
        if not isinstance(t.dtype, T.ScalarType):
            raise KernelError(f"{name}() needs scalar elements")
        b = lowerer.b
        flat = tv.flat(b, t)
        best = b.new_slot("best", t.dtype)
        where = b.new_slot("where", T.int32)
        b.store(best, tv.load(b, flat, [tv.const(b, 0)]))
        b.store(where, tv.const(b, 0))
        with tv.counted_loop(b, 1, t.size) as k:
            x = tv.load(b, flat, [k])
            better = b.op(opcode, (x, b.load(best)), T.bool_)
            with b.region() as then:
                b.store(best, x)
                b.store(where, k)
            b.append(ir.If(b.loc, better, tuple(then)))
        out = tv.new_tile(b, T.int32, (1,))
        tv.store(b, out, [tv.const(b, 0)], b.load(where))
        return out


_arg_extremum("tile_argmin", OpCode.LT, "smallest")
_arg_extremum("tile_argmax", OpCode.GT, "largest")


@form("tile_reduce", "op, a, axis=",
      "Folds a tile with op(acc, x) (a builtin or func) in row-major order; a tile of shape "
      "(1,), or reduced along `axis`.")
def _tile_reduce(lowerer, args, node):
    t = lowerer.tile_operand(args["a"], "tile_reduce()")
    if tile_structs.is_struct(t.dtype):
        return _fold(lowerer, t, lambda acc, x, k: _struct_reduce_step(lowerer, args["op"], acc,
                                                                      x, node),
                     node, axis_operand(lowerer, args))
    return _fold(lowerer, t, lambda acc, x, k: lowerer.call_on_values(args["op"], [acc, x],
                                                                      node),
                 node, axis_operand(lowerer, args))


def _struct_reduce_step(lowerer, op: ast.expr, acc: Val, x: Val, node) -> Val:
    """op(acc, x) for struct elements: op must take two of them and return one."""
    name = ast.unparse(op)
    try:
        result = lowerer.as_val(lowerer.call_on_values(op, [acc, x], node), node)
    except KernelError as err:
        raise KernelError(f"tile_reduce() operator {name} has no overload accepting Warp "
                          f"struct tile element type {acc.type!r}: {err.message}") from None
    if result.type != acc.type:
        raise KernelError(f"tile_reduce() operator {name} must return the tile element type "
                          f"{acc.type!r}, got {result.type!r}")
    return result
