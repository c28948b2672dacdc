"""CUDA lowering of the primitive builtins (the `key`s of `kernelc.builtins`).

Most entries give a C expression template for float32 and one for float64; `{0}`, `{1}`
are the argument names. float16 and bfloat16 use the float32 form and round the result.
Entries that depend on other types are functions of (argument names, argument types,
result type) returning the C expression.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kernelc import types as T

TypedForm = Callable[[Sequence[str], Sequence[T.Type], T.Type], str]


def _unary(name: str) -> tuple[str, str]:
    return f"{name}f({{0}})", f"{name}({{0}})"


def _popcount(args: Sequence[str], types: Sequence[T.Type], result: T.Type) -> str:
    # The builtin hands over an unsigned 64-bit value (narrower ints zero-extended).
    return f"((kc_int32)__popcll((kc_uint64)({args[0]})))"


def _bitcast(args: Sequence[str], types: Sequence[T.Type], result: T.Type) -> str:
    """The bits of a value as another type of the same size (`kc.cast`)."""
    from kernelc.codegen.cuda_ops import from_storage, to_storage
    from kernelc.codegen.cuda_types import storage_type

    (src,) = types
    bits = to_storage(args[0], src) if isinstance(src, T.ScalarType) else args[0]
    expr = f"kc_bitcast<{storage_type(result)}>({bits})"
    return from_storage(expr, result) if isinstance(result, T.ScalarType) else expr


MATH: dict[str, tuple[str, str] | TypedForm] = {
    **{
        key: _unary(key)
        for key in (
            "sqrt", "cbrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
            "atan", "sinh", "cosh", "tanh", "floor", "ceil", "trunc", "fabs", "erf", "erfc",
            # roundf rounds halfway cases away from zero, rintf to even: Python's
            # round() and Warp's round() differ, and the builtin table names both.
            "round", "rint",
        )
    },
    "atan2": ("atan2f({0}, {1})", "atan2({0}, {1})"),
    "copysign": ("copysignf({0}, {1})", "copysign({0}, {1})"),
    "fma": ("fmaf({0}, {1}, {2})", "fma({0}, {1}, {2})"),
    "frac": ("({0} - truncf({0}))", "({0} - trunc({0}))"),
    "popcount": _popcount,
    "bitcast": _bitcast,
}


def lower_math(key: str, args: list[str], result: T.Type,
               arg_types: Sequence[T.Type] = ()) -> str:
    """The C expression of builtin `key` applied to the C expressions `args`.

    Raises:
        KeyError: `key` has no CUDA lowering.
        TypeError: the result type is not a float type (for a float-only key).
    """
    form = MATH[key]
    if callable(form):
        return form(args, arg_types, result)
    f32, f64 = form
    if not (isinstance(result, T.ScalarType) and result.is_float):
        raise TypeError(f"builtin '{key}' on {result!r}")
    if result.bits == 64:
        return f64.format(*args)
    from kernelc.codegen.cuda_ops import rounded

    return rounded(f32.format(*args), result)
