"""Tile types in annotations: `kc.tile[float, M, N]` for a func parameter or result that is
a tile, and `kc.tile_stack(capacity=C, dtype=int)` for one that is a tile stack. Funcs with
such parameters are lowered into their caller (`tile_funcs`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TileAnnotation:
    """`kc.tile[dtype, *shape]`."""

    dtype: Any
    shape: tuple[int, ...]

    def __repr__(self) -> str:
        name = getattr(self.dtype, "__name__", repr(self.dtype))
        return f"tile[{', '.join([name, *map(str, self.shape)])}]"


@dataclass(frozen=True)
class TileStackAnnotation:
    """`kc.tile_stack(capacity=..., dtype=...)` written outside a kernel."""

    capacity: int
    dtype: Any


class SubscriptableForm:
    """The host-side `kc.tile`: called outside a kernel it raises (as every tile form does);
    subscripted it gives the annotation `kc.tile[dtype, *shape]`."""

    def __init__(self, stub) -> None:
        functools.update_wrapper(self, stub)
        self._stub = stub
        self._kc_special = stub._kc_special

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._stub(*args, **kwargs)

    def __getitem__(self, params: Any) -> TileAnnotation:
        params = params if isinstance(params, tuple) else (params,)
        if len(params) < 2:
            raise TypeError("tile[...] takes a dtype and one to four dimensions, e.g. "
                            "tile[float, 16, 16]")
        try:
            shape = tuple(_dim(n) for n in params[1:])
        except (TypeError, ValueError):
            raise TypeError(f"tile[...] dimensions must be positive ints, got "
                            f"{params[1:]!r}") from None
        return TileAnnotation(params[0], shape)


def _dim(n: Any) -> int:
    if isinstance(n, bool) or int(n) != n or int(n) <= 0:
        raise ValueError(n)
    return int(n)


def stack_annotation(name: str):
    """The host-side `kc.tile_stack`: called with capacity and dtype it gives the annotation
    for a func parameter holding a stack."""

    def tile_stack(capacity: int, dtype: Any) -> TileStackAnnotation:
        return TileStackAnnotation(_dim(capacity), dtype)

    tile_stack.__name__ = tile_stack.__qualname__ = name
    tile_stack._kc_special = name
    return tile_stack
