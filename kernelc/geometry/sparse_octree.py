"""`lipschitz_octree`: the cells near a level set of a Lipschitz-bounded implicit function.

The implicit function is a *batched* callable, `evaluate(points) -> values`, from a `vec3`
array of query points to a `float32` array of values on the same device (Warp's contract).
The octree is built top-down from one root cell: at each depth every cell's centre is
evaluated, and a cell survives when `|f(centre) - threshold| <= L * (half its diagonal)`,
which a function with Lipschitz bound L must satisfy if its level set meets the cell.
Survivors split into eight children until `max_depth`. The host arithmetic (cell widths,
bands) is float32 where Warp's is, so the same cells survive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import kernelc as kc
from kernelc import types as T
from kernelc.geometry import sparse_lang as L
from kernelc.geometry.iso_surface import off_tape
from kernelc.runtime.array import array

Evaluator = Callable[[array], array]


def make_evaluator(field: Any, device: Any) -> Evaluator:
    """Wraps the user's batched implicit function with Warp's checks on what it returns.

    Raises:
        TypeError: `field` is a single-point `@kc.func`, or not callable.
    """
    if isinstance(field, kc.Function):
        raise TypeError(
            "`field` must be a batched callable evaluate(points: kc.array(dtype=kc.vec3)) -> "
            "kc.array(dtype=kc.float32), not a single-point @kc.func. Wrap the function in a "
            "kernel that evaluates it at points[i] into values[i], and pass a Python function "
            "that launches that kernel over the batch and returns the values.")
    if not callable(field):
        raise TypeError("`field` must be a callable mapping a kc.array of vec3 query points "
                        f"to a kc.array of float32 values, but got {type(field)}.")

    def evaluate(points: array) -> array:
        values = field(points)
        if not isinstance(values, array):
            raise TypeError("The implicit function callable must return a kc.array of "
                            f"float32 values, but returned {type(values)}.")
        if values.shape[0] != points.shape[0]:
            raise ValueError(f"The implicit function returned {values.shape[0]} values for "
                             f"{points.shape[0]} query points.")
        # Refused rather than copied: a hidden transfer per call would dominate the run.
        if values.device != points.device:
            raise ValueError(f"The implicit function returned values on device "
                             f"'{values.device}', but the query points are on device "
                             f"'{points.device}'. Evaluate the field on the points' device.")
        if values.dtype != T.float32:
            raise TypeError("The implicit function must return a kc.array of float32 "
                            f"values, got {values.dtype!r}.")
        return values

    return evaluate


def scan_total(flags: array) -> tuple[array, int]:
    """The inclusive scan of an int32 array and its total (read back to the host)."""
    scan = kc.empty(flags.shape[0], dtype=T.int32, device=flags.device)
    with off_tape():
        kc.utils.array_scan(flags, scan, inclusive=True)
    return scan, int(scan[flags.shape[0] - 1:].numpy()[0])


def launch(kernel: Any, dim: Any, args: list[Any], device: Any, taped: bool = False) -> None:
    """Launches a kernel of `sparse_lang`; only the differentiable ones go on a tape."""
    kc.launch(kernel, dim=dim, inputs=args, device=device, record_tape=taped)


def compact(cells: array, keep: array) -> array:
    """The cells whose `keep` flag is set, in order."""
    scan, total = scan_total(keep)
    out = kc.empty(total, dtype=T.vec3i, device=cells.device)
    if total:
        launch(L.compact_cells, cells.shape[0], [cells, keep, scan, out], cells.device)
    return out


def half_diagonal(width: np.ndarray) -> float:
    """Half the length of a float32 vector, the length in float32 as Warp computes it."""
    x, y, z = (np.float32(w) for w in width)
    return 0.5 * float(np.sqrt(np.float32(np.float32(x * x + y * y) + z * z)))


def build_octree(evaluate: Evaluator, origin: np.ndarray, root_width: np.ndarray,
                 max_depth: int, threshold: float, lipschitz_bound: float,
                 device: Any) -> array | None:
    """The leaf cells (`vec3i` subscripts at resolution 2**max_depth) that may hold the
    level set, in octree order; None when the root itself is ruled out at some depth."""
    cells = kc.array(np.zeros((1, 3), np.int32), dtype=T.vec3i, device=device)
    origin_vec = kc.vec3(*origin.tolist())
    for depth in range(max_depth + 1):
        width = (root_width * np.float32(1.0 / float(1 << depth))).astype(np.float32)
        band = np.float32(lipschitz_bound * half_diagonal(width))
        n = cells.shape[0]
        centers = kc.empty(n, dtype=T.vec3, device=device)
        launch(L.octree_centers, n, [cells, origin_vec, kc.vec3(*width.tolist()), centers],
               device)
        values = evaluate(centers)
        keep = kc.empty(n, dtype=T.int32, device=device)
        launch(L.octree_keep, n, [values, np.float32(threshold), band, keep], device)
        cells = compact(cells, keep)
        if cells.shape[0] == 0:
            return None
        if depth < max_depth:
            children = kc.empty(8 * cells.shape[0], dtype=T.vec3i, device=device)
            launch(L.subdivide_cells, cells.shape[0], [cells, children], device)
            cells = children
    return cells


def lipschitz_octree(field: Evaluator, origin: Any, root_width: float, max_depth: int,
                     threshold: float = 0.0, lipschitz_bound: float = 1.0,
                     device: Any = None) -> tuple[array, float]:
    """The finest cells of an octree that may meet a level set of a Lipschitz field.

    A cell of width `h` centred at `c` is kept, and split, while
    `|field(c) - threshold| <= lipschitz_bound * sqrt(3) / 2 * h`; the cells left at
    `max_depth` form a thin shell around the level set. Cell selection is discrete: it
    carries no gradient.

    Args:
        field (Callable): Batched implicit function: a `vec3` array of points in, a `float32` array of values (same length, same device) out.
        origin (vec3): Minimum corner of the cubic root cell.
        root_width (float): Side length of the root cell.
        max_depth (int): Octree depth; leaves have width `root_width / 2**max_depth`.
        threshold (float): Level of the surface.
        lipschitz_bound (float): Upper bound of the field's Lipschitz constant.
        device (Device): Device to run on; the current device if None.

    Returns:
        `(cells, cell_width)`: the leaves' minimum-corner subscripts as a `vec3i` array
        (cell `(i, j, k)` spans `origin + cell_width * (i, j, k)` to
        `origin + cell_width * (i + 1, j + 1, k + 1)`; empty when no cell survives) and
        the leaves' width.

    Raises:
        ValueError: `max_depth` is negative, `root_width` not positive or
            `lipschitz_bound` negative.
        TypeError: `field` is not a batched callable.
    """
    if max_depth < 0:
        raise ValueError(f"max_depth must be non-negative, got {max_depth}.")
    if root_width <= 0.0:
        raise ValueError(f"root_width must be positive, got {root_width}.")
    if lipschitz_bound < 0.0:
        raise ValueError(f"lipschitz_bound must be non-negative, got {lipschitz_bound}.")
    device = kc.get_device(device)
    origin_np = as_float3(origin, "origin")
    root = np.full(3, float(root_width), np.float32)
    cell_width = float(root_width) / float(1 << max_depth)
    evaluate = make_evaluator(field, device)
    cells = build_octree(evaluate, origin_np, root, max_depth, threshold, lipschitz_bound,
                         device)
    if cells is None:
        return kc.empty(0, dtype=T.vec3i, device=device), cell_width
    return cells, cell_width


def as_float3(value: Any, what: str) -> np.ndarray:
    """A point as three float32s (one number stands for all three, as `vec3(x)`)."""
    if np.ndim(value) == 0:
        return np.full(3, float(value), np.float32)
    result = np.asarray([float(v) for v in value], dtype=np.float32)
    if result.shape != (3,):
        raise ValueError(f"'{what}' must be a vec3 or three floats, got {value!r}")
    return result
