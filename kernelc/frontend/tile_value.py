"""Tiles as the front end sees them: a view of a local array, plus the loops over it.

A tile is a block of elements whose shape is known when the kernel compiles. kernelc runs
a tile operation with one lane per block (as Warp does on the CPU; CPU blocks of several
lanes share the block's storage, see `ir/lanes.py`), so a tile lives in the
thread's own storage: a local fixed-size array of scalars, an element of vector or matrix
type taking its components in a row (a struct element is one element of a local array of
structs, see `tile_structs`). `Tile` describes a view of that storage (shape,
strides and offset counted in elements), so transposes and broadcasts copy nothing. Every
tile operation becomes ordinary loops over local arrays in the IR; the backends and the
autodiff transform see nothing new.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.builder import IRBuilder
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

MAX_TILE_ELEMENTS = 65536  # a local array's limit, in scalar components
LANES = 1  # lanes per block, unless the CPU runs blocks of several (`ir/lanes.py`)


def components(dtype: T.Type) -> int:
    """How many scalars one element of `dtype` takes."""
    if isinstance(dtype, (T.VectorType, T.MatrixType)):
        return dtype.count
    return 1


def scalar_of(dtype: T.Type) -> T.ScalarType:
    return dtype.dtype if isinstance(dtype, (T.VectorType, T.MatrixType)) else dtype


def row_major(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


@dataclass(frozen=True)
class Tile:
    """A view of a local array as a tile of `dtype` elements.

    `offset` is the constant part of the first element's position; a view taken at a
    run-time index (`t[i]`, `tile_view(t, offset=(i, 0))`) keeps the rest in `shift`, an
    int32 slot (a slot rather than a value, so the view stays usable in any block the name
    is visible from)."""

    slot: ir.Slot
    dtype: T.Type
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0
    shift: ir.Slot | None = None
    storage: str = "register"  # as asked for (what `print` shows); kernelc stores both alike

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0) -> Tile:
        return Tile(self.slot, self.dtype, shape, strides, self.offset + offset, self.shift)

    def __repr__(self) -> str:
        dims = ", ".join(str(n) for n in self.shape)
        return f"tile({self.dtype!r}, ({dims}))"


def check_shape(shape: Sequence[int]) -> tuple[int, ...]:
    shape = tuple(int(n) for n in shape)
    if not 1 <= len(shape) <= 4:
        raise KernelError(f"a tile has 1 to 4 dimensions, got {len(shape)}")
    if any(n <= 0 for n in shape):
        raise KernelError(f"tile dimensions must be positive, got {shape}")
    return shape


def new_tile(b: IRBuilder, dtype: T.Type, shape: Sequence[int], name: str = "tile") -> Tile:
    """Fresh, uninitialised, row-major storage for a tile."""
    shape = check_shape(shape)
    if not isinstance(dtype, (T.ScalarType, T.VectorType, T.MatrixType, T.StructType)):
        raise KernelError(f"tiles hold scalars, vectors, matrices or structs, not {dtype!r}")
    length = math.prod(shape) * components(dtype)
    if length > MAX_TILE_ELEMENTS:
        raise KernelError(f"a tile of shape {shape} and {dtype!r} holds {length} scalars; "
                          f"kernelc allows at most {MAX_TILE_ELEMENTS} per tile")
    slot = b.new_block_slot(name, T.LocalArrayType(scalar_of(dtype), length))
    return Tile(slot, dtype, shape, row_major(shape))


def const(b: IRBuilder, n: int) -> ir.Value:
    return b.const(n, T.int32)


def shifted(b: IRBuilder, tile: Tile, delta: ir.Value) -> Tile:
    """The same view moved by `delta` (int32) elements, known only at run time."""
    if tile.shift is not None:
        delta = b.op(OpCode.ADD, (b.load(tile.shift), delta), T.int32)
    slot = b.new_block_slot("view_offset", T.int32)
    b.store(slot, delta)
    return dataclasses.replace(tile, shift=slot)


@contextmanager
def counted_loop(b: IRBuilder, start: ir.Value | int, stop: ir.Value | int,
                 step: int = 1) -> Iterator[ir.Value]:
    """`for i in range(start, stop, step)`: yields `i`; statements emitted inside the
    `with` form the body."""
    i = b.new_value(T.int32)
    start = const(b, start) if isinstance(start, int) else start
    stop = const(b, stop) if isinstance(stop, int) else stop
    with b.region() as body:
        yield i
    b.append(ir.For(b.loc, i, start, stop, const(b, step), tuple(body)))


@contextmanager
def loop_nest(b: IRBuilder, shape: Sequence[int]) -> Iterator[list[ir.Value]]:
    """Nested loops over every index of `shape` (the last index fastest)."""
    indices: list[ir.Value] = []
    with _nest(b, list(shape), indices):
        yield indices


@contextmanager
def _nest(b: IRBuilder, shape: list[int], indices: list[ir.Value]) -> Iterator[None]:
    if not shape:
        yield
        return
    with counted_loop(b, 0, shape[0]) as i:
        indices.append(i)
        with _nest(b, shape[1:], indices):
            yield


def position(b: IRBuilder, tile: Tile, indices: Sequence[ir.Value]) -> ir.Value:
    """The element position of `tile[indices]` in its storage (int32)."""
    if len(indices) != tile.ndim:
        raise KernelError(f"a {tile.ndim}-d tile needs {tile.ndim} indices, got {len(indices)}")
    pos = const(b, tile.offset)
    if tile.shift is not None:
        pos = b.op(OpCode.ADD, (pos, b.load(tile.shift)), T.int32)
    for i, stride in zip(indices, tile.strides):
        if stride == 0:
            continue
        term = i if stride == 1 else b.op(OpCode.MUL, (i, const(b, stride)), T.int32)
        pos = b.op(OpCode.ADD, (pos, term), T.int32)
    return pos


def load_at(b: IRBuilder, tile: Tile, pos: ir.Value) -> ir.Value:
    """The element at storage position `pos`."""
    scalar, n = scalar_of(tile.dtype), components(tile.dtype)
    if n == 1:
        return b.op(OpCode.LOCAL_LOAD, (pos,), scalar, tile.slot)
    base = b.op(OpCode.MUL, (pos, const(b, n)), T.int32)
    parts = [b.op(OpCode.LOCAL_LOAD, (b.op(OpCode.ADD, (base, const(b, c)), T.int32),),
                  scalar, tile.slot) for c in range(n)]
    return b.op(OpCode.BUILD, parts, tile.dtype)


def store_at(b: IRBuilder, tile: Tile, pos: ir.Value, value: ir.Value) -> None:
    n = components(tile.dtype)
    if n == 1:
        b.append(ir.LocalStore(b.loc, tile.slot, pos, value))
        return
    base = b.op(OpCode.MUL, (pos, const(b, n)), T.int32)
    for c in range(n):
        part = b.op(OpCode.EXTRACT, (value,), scalar_of(tile.dtype), c)
        b.append(ir.LocalStore(b.loc, tile.slot, b.op(OpCode.ADD, (base, const(b, c)), T.int32),
                               part))


def load(b: IRBuilder, tile: Tile, indices: Sequence[ir.Value]) -> ir.Value:
    return load_at(b, tile, position(b, tile, indices))


def store(b: IRBuilder, tile: Tile, indices: Sequence[ir.Value], value: ir.Value) -> None:
    store_at(b, tile, position(b, tile, indices), value)


def zero_value(b: IRBuilder, dtype: T.Type) -> ir.Value:
    if isinstance(dtype, T.StructType):
        from kernelc.frontend import tile_structs

        return tile_structs.zero(b, dtype)
    scalar = scalar_of(dtype)
    z = b.const(0, scalar)
    if components(dtype) == 1:
        return z
    return b.op(OpCode.BUILD, [z] * components(dtype), dtype)


def fill(b: IRBuilder, tile: Tile, value: ir.Value) -> None:
    with loop_nest(b, tile.shape) as idx:
        store(b, tile, idx, value)


def copy(b: IRBuilder, dest: Tile, src: Tile) -> None:
    """dest[...] = src[...], element by element (shapes and types already checked)."""
    with loop_nest(b, dest.shape) as idx:
        store(b, dest, idx, load(b, src, idx))


def materialise(b: IRBuilder, tile: Tile, name: str = "tile") -> Tile:
    """A row-major copy of `tile` in fresh storage (for views that must not alias)."""
    out = new_tile(b, tile.dtype, tile.shape, name)
    copy(b, out, tile)
    return out


def in_order(tile: Tile) -> bool:
    """Whether the tile's elements lie in its storage in row-major order."""
    return tile.strides == row_major(tile.shape)


def flat(b: IRBuilder, tile: Tile) -> Tile:
    """The tile as a 1-d row-major view, copied first when its elements are not in order."""
    src = tile if in_order(tile) else materialise(b, tile)
    return src.view((tile.size,), (1,))
