"""`IsoSurfaceBase`: the interface that Warp's dense-grid iso-surface extractors share.

A field is a 3-d `float32` array of values at the nodes of a regular grid; node
`(i, j, k)` sits at `lower + (i, j, k) * delta`, where `delta = (upper - lower) / (n - 1)`
per axis. This module holds the interface, the checks on fields and bounds (with Warp's
exception types) and the host-side plumbing that both extractors use: lookup tables on
each device, the scan of per-row counts and launches kept off a recording `kc.Tape`.
"""

from __future__ import annotations

import contextlib
import functools
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

import kernelc as kc
from kernelc import types as T
from kernelc.runtime.array import array

Bound = Any  # a kc.vec3, a 3-tuple of floats, or None


def validate_field(field: Any) -> None:
    """Checks that `field` is a 3-d `float32` array with at least one cell.

    Raises:
        TypeError: `field` is not a kc.array, or its dtype is not float32.
        ValueError: `field` is not 3-d, or has fewer than two nodes on some axis.
    """
    if not isinstance(field, array):
        raise TypeError(f"Expected a kc.array for 'field', but got {type(field).__name__}.")
    if field.ndim != 3:
        raise ValueError(f"Expected a 3D array for 'field', but got an array with shape "
                         f"{field.shape}.")
    if min(field.shape) < 2:
        # Fewer than two nodes on an axis leaves no cell to extract from.
        raise ValueError(f"Expected 'field' to have at least 2 nodes on each axis, but got "
                         f"an array with shape {field.shape}.")
    if field.dtype != T.float32:
        raise TypeError(f"Expected a dtype of float32 for 'field', but got {field.dtype!r}.")
    if field.ptr is None:
        raise ValueError("'field' has no memory (an array without storage).")


def resolve_bounds(shape: Sequence[int], lower: Bound, upper: Bound) -> tuple[Any, Any]:
    """The position of node (0, 0, 0) and the spacing of the nodes along each axis.

    `lower` defaults to the origin and `upper` to the last node's integer indices, so that
    by default node (i, j, k) sits at (i, j, k). The spacing is computed in float32, as
    Warp computes it.
    """
    cells = np.array([n - 1 for n in shape[:3]], dtype=np.float32)
    low = np.zeros(3, np.float32) if lower is None else _as_float3(lower, "lower")
    high = cells.copy() if upper is None else _as_float3(upper, "upper")
    delta = (high - low) / cells
    return kc.vec3(*low.tolist()), kc.vec3(*delta.tolist())


def _as_float3(value: Any, what: str) -> np.ndarray:
    """A bound as three float32s; a single number stands for all three (as `vec3(x)`)."""
    if np.ndim(value) == 0:
        return np.full(3, float(value), np.float32)
    result = np.asarray([float(v) for v in value], dtype=np.float32)
    if result.shape != (3,):
        raise ValueError(f"'{what}' must be a vec3 or three floats, got {len(result)} "
                         f"values: {value!r}")
    return result


class IsoSurfaceBase(ABC):
    """Base class of the dense-grid iso-surface extractors (Warp's `IsoSurfaceBase`).

    An extractor is made for a grid size; `surface(field, threshold)` then extracts the
    level set `field == threshold` of a field of that size into `verts` (a `vec3` array)
    and `indices` (a flat `int32` array, three per triangle unless the extractor makes
    quads). The stateless `extract(field, threshold)` class method returns both instead.
    For a signed distance field (negative inside) the faces wind counter-clockwise seen
    from outside.

    Args:
        nx: Number of grid nodes along x.
        ny: Number of grid nodes along y.
        nz: Number of grid nodes along z.
        lower: Position of node (0, 0, 0); the origin if None.
        upper: Position of node (nx - 1, ny - 1, nz - 1); (nx - 1, ny - 1, nz - 1) if None.

    Attributes:
        nx: Number of grid nodes along x (likewise `ny`, `nz`).
        lower: The `lower` bound given (or None).
        upper: The `upper` bound given (or None).
        verts: The vertices of the last `surface` call (None before the first).
        indices: The face indices of the last `surface` call (None before the first).
    """

    def __init__(self, nx: int, ny: int, nz: int, *, lower: Bound = None,
                 upper: Bound = None) -> None:
        self.nx = nx
        self.ny = ny
        self.nz = nz
        self.lower = lower
        self.upper = upper
        self.verts: array | None = None
        self.indices: array | None = None

    def resize(self, nx: int, ny: int, nz: int) -> None:
        """Sets the grid size that the next `surface` call expects.

        Args:
            nx: New number of nodes along x.
            ny: New number of nodes along y.
            nz: New number of nodes along z.
        """
        self.nx = nx
        self.ny = ny
        self.nz = nz

    def _check_field_shape(self, field: Any) -> None:
        shape = getattr(field, "shape", None)
        if shape is None or tuple(shape) != (self.nx, self.ny, self.nz):
            raise ValueError(f"Field shape {shape} does not match context grid dimensions "
                             f"{(self.nx, self.ny, self.nz)}.")

    @abstractmethod
    def surface(self, field: array, threshold: float) -> None:
        """Extracts the level set `field == threshold` into `verts` and `indices`.

        Args:
            field: A 3-d float32 array of shape (nx, ny, nz).
            threshold: The field value of the surface.

        Raises:
            ValueError: The field's shape is not the extractor's grid size.
        """

    @classmethod
    @abstractmethod
    def extract(cls, field: array, threshold: float = 0.0, *, lower: Bound = None,
                upper: Bound = None) -> tuple[array, array]:
        """Extracts the level set `field == threshold` of a field of any size.

        Args:
            field: A 3-d float32 array of node values, at least 2 nodes on each axis.
            threshold: The field value of the surface.
            lower: Position of node (0, 0, 0); the origin if None.
            upper: Position of the last node; its integer indices if None.

        Returns:
            `(verts, indices)`: a `vec3` array and a flat `int32` array of face indices.

        Raises:
            ValueError: `field` is not 3-d, or has fewer than two nodes on some axis.
            TypeError: The field's dtype is not float32.
        """


# ---- plumbing shared by the extractors --------------------------------------------------


@functools.cache
def _table(values: tuple[int, ...], device_alias: str) -> array:
    return kc.array(np.asarray(values, dtype=np.int32), dtype=T.int32, device=device_alias)


def device_table(values: tuple[int, ...], device: Any) -> array:
    """A lookup table as an int32 array on `device`, made once per table and device."""
    return _table(values, str(device))


@contextlib.contextmanager
def off_tape() -> Iterator[None]:
    """Keeps launches made inside off a recording `kc.Tape`: the counting, scanning and
    face kernels produce integers only, so the tape's backward pass has nothing to do with
    them (as Warp's native scan is not recorded either)."""
    from kernelc.runtime.context import get_runtime

    extras = get_runtime().extras
    tape = extras.get("tape")
    extras["tape"] = None
    try:
        yield
    finally:
        extras["tape"] = tape


def scan_counts(counts: array) -> tuple[array, tuple[int, int]]:
    """Inclusive prefix sums of per-row `(first, second)` counts (a `vec2i` array), and the
    two totals (read back to the host: the one synchronisation of an extraction)."""
    offsets = kc.empty(counts.shape, dtype=T.vec2i, device=counts.device)
    kc.utils.array_scan(counts, offsets, inclusive=True)
    last = offsets[counts.shape[0] - 1:].numpy().reshape(-1)
    return offsets, (int(last[0]), int(last[1]))


def launch(kernel: Any, dim: Any, args: list[Any], device: Any, taped: bool = False) -> None:
    """Launches an extraction kernel; only `taped` ones (those writing vertex positions)
    are recorded on an active tape."""
    kc.launch(kernel, dim=dim, inputs=args, device=device, record_tape=taped)
