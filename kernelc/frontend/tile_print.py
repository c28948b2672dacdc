"""`print(t)` / `wp.print(t)` of a tile, laid out as Warp prints one: nested brackets, the
elements of a row separated by spaces, then ` = tile(shape=(...), storage=...)`. A tile is
the block's: it prints once per block."""

from __future__ import annotations

from kernelc import types as T
from kernelc.frontend import tile_value as tv
from kernelc.frontend.builder import Val
from kernelc.frontend.tile_value import Tile
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


def print_tile(lowerer, t: Tile) -> None:
    b = lowerer.b
    with b.collective_code():
        _values(lowerer, t, 0, [])
        dims = ",".join(str(n) for n in t.shape)
        _text(b, f" = tile(shape=({dims}), storage={t.storage})\n")


def _text(b, text: str) -> None:
    b.append(ir.Print(b.loc, text.replace("%", "%%"), ()))


def _between(b, i: ir.Value, count: int, text: str) -> None:
    """`text` after every item but the last of a loop over `count`."""
    more = b.op(OpCode.LT, (i, tv.const(b, count - 1)), T.bool_)
    with b.region() as then:
        _text(b, text)
    b.append(ir.If(b.loc, more, tuple(then)))


def _values(lowerer, t: Tile, level: int, index: list) -> None:
    b = lowerer.b
    n = t.ndim
    _text(b, "[")
    with tv.counted_loop(b, 0, t.shape[level]) as i:
        if level == n - 1:
            _element(lowerer, t, [*index, i])
            _between(b, i, t.shape[level], " ")
        elif level == n - 2:  # a matrix: one row per line
            _text(b, "[")
            with tv.counted_loop(b, 0, t.shape[level + 1]) as j:
                _element(lowerer, t, [*index, i, j])
                _between(b, j, t.shape[level + 1], " ")
            _text(b, "]")
            _between(b, i, t.shape[level], "\n" + " " * (n - 1))
        else:
            _values(lowerer, t, level + 1, [*index, i])
            _between(b, i, t.shape[level], "\n\n" + " " * (level + 1))
    _text(b, "]")


def _element(lowerer, t: Tile, index: list) -> None:
    from kernelc.frontend.special import _PRINTF_CODES

    b = lowerer.b
    v = Val(tv.load(b, t, index))
    if isinstance(v.type, T.ScalarType):
        value = v.value if v.type != T.bool_ else b.cast(v.value, T.int32)
        b.append(ir.Print(b.loc, _PRINTF_CODES[v.type.name], (value,)))
        return
    args: list = []
    fmt = lowerer.format_value(v, args)
    b.append(ir.Print(b.loc, fmt.rstrip(), tuple(args)))
