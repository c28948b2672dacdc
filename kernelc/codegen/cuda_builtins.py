"""CUDA lowering of the primitive builtins (the `key`s of `kernelc.builtins`).

Each entry gives a C expression template for float32 and one for float64; `{0}`, `{1}`
are the argument names. float16 uses the float32 form and rounds the result to half.
"""

from __future__ import annotations

from kernelc import types as T


def _unary(name: str) -> tuple[str, str]:
    return f"{name}f({{0}})", f"{name}({{0}})"


MATH: dict[str, tuple[str, str]] = {
    **{
        key: _unary(key)
        for key in (
            "sqrt", "cbrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
            "atan", "sinh", "cosh", "tanh", "floor", "ceil", "trunc", "fabs",
            # roundf rounds halfway cases away from zero, rintf to even: Python's
            # round() and Warp's round() differ, and the builtin table names both.
            "round", "rint",
        )
    },
    "atan2": ("atan2f({0}, {1})", "atan2({0}, {1})"),
    "frac": ("({0} - truncf({0}))", "({0} - trunc({0}))"),
}


def lower_math(key: str, args: list[str], result: T.Type) -> str:
    """The C expression of builtin `key` applied to the C expressions `args`.

    Raises:
        KeyError: `key` has no CUDA lowering.
        TypeError: the result type is not a float type.
    """
    f32, f64 = MATH[key]
    if not (isinstance(result, T.ScalarType) and result.is_float):
        raise TypeError(f"builtin '{key}' on {result!r}")
    if result.bits == 64:
        return f64.format(*args)
    expr = f32.format(*args)
    return f"kc_round_half({expr})" if result.bits == 16 else expr
