"""Vector utilities and helpers with Warp's names: argmin / argmax, ddot, the norms of
`warp.math` (norm_l1, norm_l2, norm_huber, norm_pseudo_huber, smooth_normalize),
lower_bound, the expect_* test helpers, len and cast.

All are expansions into existing IR ops except `cast`, a bit reinterpretation (the
`bitcast` primitive), whose dtype argument is a type: the front end lowers it as a special
form (`cast_form` below). `len` in kernels is the front end's form for Python's `len()`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelc import types as T
from kernelc.builtins import indexed_array
from kernelc.builtins.aggregate import (
    binop,
    build,
    comps,
    fma_dot,
    is_aggregate,
    require,
    scalar_fits,
    total,
)
from kernelc.builtins.registry import BUILTINS, Builtin, Overload, register, unify
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode, Value

GROUP = "vector math"


# ---- argmin / argmax ------------------------------------------------------------------------


def _arg_rule(types, weak):
    (a,) = types
    require(isinstance(a, T.VectorType) and a.kind == "vec", f"expected a vector, got {a!r}")
    return (a,), T.uint32


def _arg_extreme(better: OpCode):
    def expand(em, a: Value) -> Value:
        """The first index of the smallest (largest) element; NaN elements are skipped, and
        an all-NaN vector gives 0 (as in Warp)."""
        values = comps(em, a)
        t = a.type.dtype
        best, index = values[0], em.const(0, T.uint32)
        found = em.op(OpCode.EQ, (best, best), T.bool_)  # False only for a NaN
        for i, v in enumerate(values[1:], start=1):
            wins = em.op(better, (v, best), T.bool_)  # strict: ties keep the first index
            take = em.op(OpCode.SELECT, (found, wins, em.const(True, T.bool_)), T.bool_)
            if t.is_float:
                is_number = em.op(OpCode.EQ, (v, v), T.bool_)
                take = em.op(OpCode.SELECT, (is_number, take, em.const(False, T.bool_)),
                             T.bool_)
                found = em.op(OpCode.SELECT, (is_number, em.const(True, T.bool_), found),
                              T.bool_)
            best = em.op(OpCode.SELECT, (take, v, best), t)
            index = em.op(OpCode.SELECT, (take, em.const(i, T.uint32), index), T.uint32)
        return index

    return expand


register("argmin", GROUP, "The index (uint32) of the smallest element of a vector.",
         Overload(("a",), _arg_rule, _arg_extreme(OpCode.LT)))
register("argmax", GROUP, "The index (uint32) of the largest element of a vector.",
         Overload(("a",), _arg_rule, _arg_extreme(OpCode.GT)))


# ---- ddot -----------------------------------------------------------------------------------


def _ddot_rule(types, weak):
    a, b = types
    require(isinstance(a, T.MatrixType), f"expected a matrix, got {a!r}")
    require(a == b, f"both arguments must have the same type, got {a!r} and {b!r}")
    return (a, b), a.dtype


def _ddot(em, a: Value, b: Value) -> Value:
    return fma_dot(em, comps(em, a), comps(em, b))


register("ddot", GROUP, "The double dot product of two matrices, sum of a[i, j] * b[i, j].",
         Overload(("a", "b"), _ddot_rule, _ddot))


# ---- norms (warp.math) ------------------------------------------------------------------------


def _norm_rule(with_delta: bool, vector_result: bool = False):
    def rule(types, weak):
        v = types[0]
        require(isinstance(v, T.VectorType) and v.kind == "vec" and v.dtype.is_float,
                f"expected a float vector, got {v!r}")
        if with_delta:
            require(isinstance(types[1], T.ScalarType) and scalar_fits(types[1], weak[1], v.dtype),
                    f"delta must be a {v.dtype!r}, got {types[1]!r}")
        params = (v, v.dtype) if with_delta else (v,)
        return params, (v if vector_result else v.dtype)

    return rule


def _dot_self(em, v: Value) -> Value:
    return em.call("dot", (v, v))


def _norm_l1(em, v: Value) -> Value:
    return total(em, [em.call("abs", (c,)) for c in comps(em, v)])


def _norm_l2(em, v: Value) -> Value:
    return em.call("length", (v,))


def _with_default_delta(expand):
    """The one-argument overload: delta = 1."""
    return lambda em, v: expand(em, v, em.const(1.0, v.type.dtype))


def _norm_huber(em, v: Value, delta: Value) -> Value:
    """0.5 |v|^2 where |v| <= delta, else delta (|v| - delta / 2)."""
    t = v.type.dtype
    a = _dot_self(em, v)
    inner = em.op(OpCode.LE, (a, binop(em, OpCode.MUL, delta, delta)), T.bool_)
    quadratic = binop(em, OpCode.MUL, em.const(0.5, t), a)
    half = binop(em, OpCode.MUL, em.const(0.5, t), delta)
    linear = binop(em, OpCode.MUL, delta, binop(em, OpCode.SUB, em.call("sqrt", (a,)), half))
    return em.op(OpCode.SELECT, (inner, quadratic, linear), t)


def _norm_pseudo_huber(em, v: Value, delta: Value) -> Value:
    """delta sqrt(1 + |v|^2 / delta^2)."""
    t = v.type.dtype
    ratio = binop(em, OpCode.DIV, _dot_self(em, v), binop(em, OpCode.MUL, delta, delta))
    root = em.call("sqrt", (binop(em, OpCode.ADD, em.const(1.0, t), ratio),))
    return binop(em, OpCode.MUL, delta, root)


def _smooth_normalize(em, v: Value, delta: Value) -> Value:
    norm = _norm_pseudo_huber(em, v, delta)
    return build(em, v.type, [binop(em, OpCode.DIV, c, norm) for c in comps(em, v)])


register("norm_l1", GROUP, "The L1 norm of a vector, the sum of |v[i]|.",
         Overload(("v",), _norm_rule(False), _norm_l1))
register("norm_l2", GROUP, "The L2 norm of a vector, length(v).",
         Overload(("v",), _norm_rule(False), _norm_l2))
for _name, _fn, _vector, _doc in (
    ("norm_huber", _norm_huber, False,
     "The Huber norm of a vector: 0.5 |v|^2 where |v| <= delta, else delta (|v| - delta / 2)."),
    ("norm_pseudo_huber", _norm_pseudo_huber, False,
     "The pseudo-Huber norm of a vector, delta sqrt(1 + |v|^2 / delta^2)."),
    ("smooth_normalize", _smooth_normalize, True,
     "v divided by its pseudo-Huber norm norm_pseudo_huber(v, delta)."),
):
    register(_name, GROUP, _doc,
             Overload(("v",), _norm_rule(False, _vector), _with_default_delta(_fn)),
             Overload(("v", "delta"), _norm_rule(True, _vector), _fn))


# ---- lower_bound ------------------------------------------------------------------------------


def _lower_bound_rule(ranged: bool):
    def rule(types, weak):
        arr, value = types[0], types[-1]
        require(isinstance(arr, T.ArrayType) and arr.ndim == 1
                and isinstance(arr.dtype, T.ScalarType) and not arr.dtype.is_bool,
                f"expected a 1-d array of scalars, got {arr!r}")
        for t, w in zip(types[1:-1], weak[1:-1]):
            require(scalar_fits(t, w, T.int32), f"the range bounds must be int32, got {t!r}")
        require(scalar_fits(value, weak[-1], arr.dtype),
                f"value of type {value!r} for an array of {arr.dtype!r}")
        return ((arr, T.int32, T.int32, arr.dtype) if ranged else (arr, arr.dtype)), T.int32

    return rule


def _lower_bound_range(em, arr: Value, begin: Value, end: Value, value: Value) -> Value:
    """Binary search of [begin, end) for the first element not less than value; like Warp's,
    it never returns more than end - 1 (so a value above every element gives end - 1)."""
    i32 = T.int32
    lower, upper = em.new_slot("lb_lower", i32), em.new_slot("lb_upper", i32)
    em.store(lower, begin)
    em.store(upper, em.op(OpCode.SUB, (end, em.const(1, i32)), i32))
    with em.region() as cond_body:
        cond = em.op(OpCode.LT, (em.load(lower), em.load(upper)), T.bool_)
    with em.region() as body:
        lo, hi = em.load(lower), em.load(upper)
        half = em.op(OpCode.DIV, (em.op(OpCode.SUB, (hi, lo), i32), em.const(2, i32)), i32)
        mid = em.op(OpCode.ADD, (lo, half), i32)
        element = em.op(OpCode.ARRAY_LOAD, (arr, mid), arr.type.dtype)
        less = em.op(OpCode.LT, (element, value), T.bool_)
        with em.region() as then:
            em.store(lower, em.op(OpCode.ADD, (mid, em.const(1, i32)), i32))
        with em.region() as other:
            em.store(upper, mid)
        em.append(ir.If(em.loc, less, tuple(then), tuple(other)))
    em.append(ir.While(em.loc, tuple(cond_body), cond, tuple(body)))
    return em.load(lower)


def _lower_bound(em, arr: Value, value: Value) -> Value:
    end = em.op(OpCode.ARRAY_SHAPE, (arr,), T.int32, 0)
    return _lower_bound_range(em, arr, em.const(0, T.int32), end, value)


register("lower_bound", "utility",
         "Binary search of a sorted 1-d array for the first element >= value (its index; "
         "as in Warp, at most the last index of the range searched, [arr_begin, arr_end)).",
         Overload(("arr", "value"), _lower_bound_rule(False), _lower_bound),
         Overload(("arr", "arr_begin", "arr_end", "value"), _lower_bound_rule(True),
                  _lower_bound_range))


# ---- expect_eq / expect_neq / expect_near -----------------------------------------------------

_PRINTF = {
    "int8": "%d", "int16": "%d", "int32": "%d", "int64": "%lld", "uint8": "%u", "uint16": "%u",
    "uint32": "%u", "uint64": "%llu", "float16": "%g", "bfloat16": "%g", "float32": "%g",
    "float64": "%g", "bool": "%d",
}


def _printed(em, v: Value) -> tuple[str, list[Value]]:
    """Warp's print() of a value: a scalar and a newline; vector components each followed
    by a space, then a newline; a matrix row by row that way."""
    if not is_aggregate(v.type):
        return _PRINTF[v.type.name] + "\n", [v]
    code = _PRINTF[v.type.dtype.name] + " "
    values = comps(em, v)
    if isinstance(v.type, T.MatrixType):
        rows, cols = v.type.shape
        return (code * cols + "\n") * rows, values
    return code * len(values) + "\n", values


def _report_if(em, cond: Value, parts: list[tuple[str, Value | None]]) -> None:
    """Prints `parts` (text, and a value printed as Warp's print() does) where cond holds."""
    fmt, args = "", []
    with em.region() as body:
        for text, value in parts:
            fmt += text
            if value is not None:
                more, values = _printed(em, value)
                fmt += more
                args.extend(values)
        em.append(ir.Print(em.loc, fmt, tuple(args)))
    em.append(ir.If(em.loc, cond, tuple(body)))


def _expect_rule(types, weak):
    a, b = types
    if isinstance(a, T.ScalarType) and isinstance(b, T.ScalarType):
        t = unify(types, weak)
        return (t, t), T.void
    require(is_aggregate(a) and a == b,
            f"expected two values of one type, got {a!r} and {b!r}")
    return (a, b), T.void


def _all_equal(em, a: Value, b: Value) -> Value:
    pairs = list(zip(comps(em, a), comps(em, b))) if is_aggregate(a.type) else [(a, b)]
    same = None
    for x, y in pairs:
        eq = em.op(OpCode.EQ, (x, y), T.bool_)
        same = eq if same is None else em.op(OpCode.SELECT, (same, eq, same), T.bool_)
    return same


def _expect(name: str, report_when_equal: bool):
    def expand(em, a: Value, b: Value) -> None:
        same = _all_equal(em, a, b)
        cond = same if report_when_equal else em.op(OpCode.NOT, (same,), T.bool_)
        _report_if(em, cond, [(f"Error, {name}() failed:\n\t Expected: ", b),
                              ("\t Actual: ", a)])
        return None

    return expand


def _expect_near_rule(with_tolerance: bool):
    def rule(types, weak):
        a, b = types[:2]
        if isinstance(a, T.ScalarType) and isinstance(b, T.ScalarType):
            a = b = scalar = unify(types[:2], weak[:2])
        else:
            require(is_aggregate(a) and a == b,
                    f"expected two values of one type, got {a!r} and {b!r}")
            scalar = a.dtype
        require(scalar.is_float, f"expected float values, got {a!r}")
        if with_tolerance:
            require(isinstance(types[2], T.ScalarType) and
                    scalar_fits(types[2], weak[2], scalar),
                    f"the tolerance must be a {scalar!r}, got {types[2]!r}")
        return ((a, b, scalar) if with_tolerance else (a, b)), T.void

    return rule


def _expect_near(em, a: Value, b: Value, tolerance: Value | None = None) -> None:
    """Warp prints when |a - b| > tolerance (for aggregates the largest component
    difference, NaN differences ignored): never for a NaN scalar difference."""
    t = a.type.dtype if is_aggregate(a.type) else a.type
    if tolerance is None:
        tolerance = em.const(1.0e-6, t)
    if is_aggregate(a.type):
        diff = em.const(0.0, t)
        for x, y in zip(comps(em, a), comps(em, b)):
            d = em.call("abs", (binop(em, OpCode.SUB, x, y),))
            diff = em.op(OpCode.SELECT, (em.op(OpCode.GT, (d, diff), T.bool_), d, diff), t)
        label = "    Max absolute difference: "
    else:
        diff = em.call("abs", (binop(em, OpCode.SUB, a, b),))
        label = "    Absolute difference: "
    cond = em.op(OpCode.GT, (diff, tolerance), T.bool_)
    _report_if(em, cond, [("Error, expect_near() failed with tolerance ", tolerance),
                          ("    Expected: ", b), ("    Actual: ", a), (label, diff)])
    return None


register("expect_eq", "utility", "Prints an error (Warp's text) if a != b.",
         Overload(("a", "b"), _expect_rule, _expect("expect_eq", False)))
register("expect_neq", "utility", "Prints an error (Warp's text) if a == b.",
         Overload(("a", "b"), _expect_rule, _expect("expect_neq", True)))
register("expect_near", "utility",
         "Prints an error (Warp's text) if a and b differ by more than tolerance (default "
         "1e-6; for vectors, matrices and quaternions, in any component).",
         Overload(("a", "b"), _expect_near_rule(False), _expect_near),
         Overload(("a", "b", "tolerance"), _expect_near_rule(True), _expect_near))


# ---- len and cast: special forms with a table entry -------------------------------------------


@dataclass(frozen=True, repr=False)
class FormBuiltin(Builtin):
    """A builtin whose calls in kernels the front end lowers itself, as the special form
    named `form` (see kernelc.frontend.special); the table entry gives its name, signature
    and docs, and its overloads serve host calls and other builtins' expansions."""

    form: str = ""

    @property
    def _kc_special(self) -> str:
        return self.form


def _register_form(name: str, doc: str, *overloads: Overload) -> None:
    if name in BUILTINS:
        raise ValueError(f"builtin {name} registered twice")
    BUILTINS[name] = FormBuiltin(name, "utility", doc, overloads, form=name)


def _len_rule(types, weak):
    (a,) = types
    require(isinstance(a, (T.VectorType, T.MatrixType, T.ArrayType, T.IndexedArrayType)),
            f"expected a vector, matrix, quaternion, transform or array, got {a!r}")
    return (a,), T.int32


def _len(em, a: Value) -> Value:
    if isinstance(a.type, T.ArrayType):
        return em.op(OpCode.ARRAY_SHAPE, (a,), T.int32, 0)
    if isinstance(a.type, T.IndexedArrayType):
        return indexed_array.dim_size(em, a, 0)
    n = a.type.shape[0] if isinstance(a.type, T.MatrixType) else a.type.length
    return em.const(n, T.int32)


# In kernels `kc.len(x)` is Python's `len(x)` (the front end's "len" form, local arrays too).
_register_form(
    "len", "The number of elements of a vector, quaternion or transform, the rows of a "
    "matrix, or the first dimension of an array (Python's len() in kernels).",
    Overload(("a",), _len_rule, _len))


def _cast_rule(types, weak):
    raise TypeError("cast(a, dtype) takes a type as dtype; it is lowered as a special form")


_register_form(
    "cast", "The bits of a reinterpreted as a value of type dtype, which must have the same "
    "size (e.g. cast(int32(0x40000000), float32) == 2.0).",
    Overload(("a", "dtype"), _cast_rule))


def cast_form(lowerer, node):
    """`cast(a, dtype)` in a kernel: the `bitcast` primitive from a's type to dtype."""
    from kernelc.errors import KernelError
    from kernelc.frontend.builder import Val

    keywords = {k.arg: k.value for k in node.keywords}
    if len(node.args) + len(keywords) != 2 or not set(keywords) <= {"a", "dtype"}:
        raise KernelError("cast() takes a value and a type: cast(a, dtype)")
    a_node = node.args[0] if node.args else keywords["a"]
    dtype_node = node.args[1] if len(node.args) > 1 else keywords["dtype"]
    dtype = lowerer.eval_annotation(dtype_node)
    v = lowerer.as_val(lowerer.visit(a_node), a_node)
    v = lowerer.coerce(v, v.type)
    source = v.type
    kinds = (T.ScalarType, T.VectorType, T.MatrixType, T.StructType)
    if not isinstance(source, kinds) or not isinstance(dtype, kinds):
        raise KernelError(f"cast() reinterprets scalars, vectors, matrices and structs, "
                          f"not {source!r} as {dtype!r}")
    if source.size != dtype.size:
        raise KernelError(f"cast() needs types of the same size: {source!r} has "
                          f"{source.size} bytes, {dtype!r} has {dtype.size}")
    if source == dtype:
        return Val(v.value)
    return Val(lowerer.b.op(OpCode.CALL, (v.value,), dtype, "bitcast"))


# The special form's handler, for kernelc.frontend.special's table of forms.
SPECIAL_FORMS = {"cast": cast_form}


def _bitcast_rule(types, weak):
    raise TypeError("_bitcast is emitted by cast() only")


register("_bitcast", "internal", "The bits of a value as another type of the same size.",
         Overload(("a",), _bitcast_rule, key="bitcast"), public=False)
