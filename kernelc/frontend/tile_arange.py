"""`tile_arange()`: a 1-d tile of evenly spaced values, as numpy.arange (a special form; see
`tile_forms`).

The bounds are compile-time constants. As in Warp, they are first represented in the output
type (a float32 range is counted from the float32 values, a float bound for an int range
must be integral), and the element count comes from those values, so the tile holds exactly
the elements the run-time fill `start + i * step` produces below `stop`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from kernelc import types as T
from kernelc.errors import KernelError, WarpCodegenValueError
from kernelc.frontend import tile_value as tv
from kernelc.frontend.builder import Val
from kernelc.frontend.tile_forms import _dtype as dtype_operand
from kernelc.frontend.tile_forms import check_storage, form_table
from kernelc.ir.nodes import OpCode

form = form_table(globals())

_NAMES = {1: ("stop",), 2: ("start", "stop"), 3: ("start", "stop", "step")}


@form("tile_arange", "*args, dtype=, storage=",
      "tile_arange(stop), (start, stop) or (start, stop, step): a 1-d tile of evenly "
      "spaced values, as numpy.arange; the bounds are compile-time constants and the "
      "element type is float32 unless `dtype` says otherwise.")
def _tile_arange(lowerer, args, node):
    check_storage(lowerer, args)
    nodes = args.get("args", [])
    if not nodes:
        raise KernelError("tile_arange() requires at least one positional argument (stop)")
    if len(nodes) > 3:
        raise KernelError(f"tile_arange() accepts at most 3 positional arguments, got "
                          f"{len(nodes)}")
    given = {}
    for name, n in zip(_NAMES[len(nodes)], nodes):
        given[name] = _constant(lowerer.local_constant(n, lowerer.visit(n)), name)
    dtype = dtype_operand(lowerer, args, None) or T.float32
    if not isinstance(dtype, T.ScalarType) or dtype == T.bool_:
        raise KernelError(f"tile_arange() requires a numeric scalar dtype, got {dtype!r}")
    start = _represent("start", given.get("start", 0), dtype)
    stop = _represent("stop", given["stop"], dtype)
    step = _represent("step", given.get("step", 1), dtype)
    count = _count(start, stop, step, dtype)
    b = lowerer.b
    t = tv.new_tile(b, dtype, (count,))
    with tv.loop_nest(b, t.shape) as (i,):
        x = b.cast(i, dtype)
        x = b.op(OpCode.MUL, (x, b.const(step, dtype)), dtype) if step != 1 else x
        x = b.op(OpCode.ADD, (x, b.const(start, dtype)), dtype) if start != 0 else x
        tv.store(b, t, [i], x)
    return t


def _constant(v, name: str) -> int | float:
    c = v.const if isinstance(v, Val) else getattr(v, "obj", None)
    if not isinstance(c, (int, float)) or isinstance(c, bool):
        raise KernelError(f"tile_arange() arguments must be compile time constants, but "
                          f"{name} is not")
    return c


def _represent(name: str, value: int | float, dtype: T.ScalarType) -> int | float:
    """`value` as `dtype` holds it; an error names the bound when it has no such value."""
    out_of_range = f"tile_arange() {name}={value} is out of range for the output type {dtype!r}"
    if dtype.is_int:
        if isinstance(value, float):
            if not value.is_integer():
                raise WarpCodegenValueError(f"tile_arange() {name}={value} has a fractional "
                                            f"part, which the integer output type {dtype!r} "
                                            f"cannot represent")
            value = int(value)
        info = np.iinfo(dtype.np_dtype)
        if not info.min <= value <= info.max:
            raise WarpCodegenValueError(out_of_range)
        return value
    if isinstance(value, int) and not -2**64 < value < 2**64:
        raise WarpCodegenValueError(f"tile_arange() {name}={value} is too wide to use as an "
                                    f"integer bound; write it as a floating-point literal to "
                                    f"build a {dtype!r} range")
    # bfloat16 has no numpy type: its values are float32's, rounded when the tile is filled
    held = _round_float(value, np.dtype(np.float32 if dtype == T.bfloat16 else dtype.np_dtype))
    if math.isfinite(value) and not math.isfinite(held):
        raise WarpCodegenValueError(out_of_range)
    return held


def _round_float(value: int | float, np_dtype: np.dtype) -> float:
    """The nearest value of a float type to `value` (ties to even), rounding once: an int
    goes straight to the type, not through float64 first."""
    with np.errstate(over="ignore"):
        guess = np_dtype.type(float(value))
    if not np.isfinite(guess) or isinstance(value, float) and np_dtype == np.float64:
        return float(guess)
    exact = Fraction(value)
    candidates = [guess, np.nextafter(guess, np_dtype.type(np.inf)),
                  np.nextafter(guess, np_dtype.type(-np.inf))]
    candidates = [c for c in candidates if np.isfinite(c)]

    def distance(c):
        even = int(np.frombuffer(c.tobytes(), dtype=f"u{np_dtype.itemsize}")[0]) & 1
        return abs(Fraction(float(c)) - exact), even

    return float(min(candidates, key=distance))


def _count(start, stop, step, dtype: T.ScalarType) -> int:
    if step == 0:
        raise WarpCodegenValueError("tile_arange() step cannot be zero (or rounds to zero in "
                                    f"{dtype!r})")
    if (step > 0 and start >= stop) or (step < 0 and start <= stop):
        raise WarpCodegenValueError(f"tile_arange() requires a non-empty range, but start="
                                    f"{start}, stop={stop}, step={step} produces no elements; "
                                    f"zero-length tile dimensions are not supported")
    if dtype.is_int:
        return max(1, -((stop - start) // -step))
    # The quotient held in the output type, as the fill computes: (0.0, 0.3, 0.1) in float32
    # divides to a hair above 3, and ceiling that would add an element past the stop.
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        wide = np.float32 if dtype == T.bfloat16 else dtype.np_dtype
        quotient = float(np.dtype(wide).type((stop - start) / step))
    if not math.isfinite(quotient):
        raise WarpCodegenValueError(f"tile_arange() start={start}, stop={stop}, step={step} "
                                    f"spans more elements than can be counted; the step is "
                                    f"too small for the range")
    return max(1, math.ceil(quotient))
