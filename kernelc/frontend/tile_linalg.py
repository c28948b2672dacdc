"""Tile linear algebra (special forms; see `tile_forms`): matrix products, dot and axpy,
Cholesky factorisation and triangular solves, with Warp's names and semantics.

Every form is written as plain loops over the tiles' local storage, in the order Warp's
one-lane (CPU) implementation uses, so results agree with Warp's to rounding and the
autodiff transform differentiates them like any other code. FFTs, scans and sorts are in
`tile_fft_scan`.
"""

from __future__ import annotations

import ast

from kernelc import types as T
from kernelc.errors import KernelError, WarpCodegenValueError
from kernelc.frontend import tile_value as tv
from kernelc.frontend.builder import Val
from kernelc.frontend.lower_expr import PyObj
from kernelc.frontend.tile_forms import form_table
from kernelc.frontend.tile_value import Tile
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

form = form_table(globals())

_MATMUL_TYPES = (T.float16, T.float32, T.float64)
_SOLVER_TYPES = (T.float32, T.float64)


# ---- shared helpers -----------------------------------------------------------------------

def constant_string(lowerer, node: ast.AST | None, what: str, choices: tuple[str, ...],
                    default: str) -> str:
    """A compile-time string argument (a literal or a module-level constant)."""
    if node is None:
        return default
    value = node.value if isinstance(node, ast.Constant) else None
    if value is None:
        v = lowerer.visit(node)
        value = v.obj if isinstance(v, PyObj) else None
    if value not in choices:
        options = " or ".join(repr(c) for c in choices)
        got = repr(value) if isinstance(value, str) else \
            f"a non-literal argument ({ast.unparse(node)})"
        raise WarpCodegenValueError(f"{what} must be the string literal {options}, got {got}")
    return value


def scalar_arg(lowerer, node: ast.AST, dtype: T.ScalarType, what: str,
               lowered: object = None) -> Val:
    """A scalar argument converted to `dtype` (Warp converts alpha and beta to the
    accumulator's type); `lowered` is its value when already visited."""
    v = lowerer.as_val(lowerer.visit(node) if lowered is None else lowered, node)
    if v.weak:
        return lowerer.coerce(v, dtype)
    if not (isinstance(v.type, T.ScalarType) and v.type.is_float):
        raise KernelError(f"{what} must be a float, got a {v.type!r}")
    return Val(lowerer.b.cast(v.value, dtype), const=v.const)


def float_tile(lowerer, node: ast.AST, what: str, ndims: tuple[int, ...],
               dtypes: tuple[T.Type, ...], lowered: Tile | None = None) -> Tile:
    t = lowered if lowered is not None else lowerer.tile_operand(node, what)
    if t.ndim not in ndims:
        dims = " or ".join(f"{n}-d" for n in ndims)
        raise KernelError(f"{what} needs a {dims} tile, got shape {t.shape}")
    if t.dtype not in dtypes:
        names = ", ".join(repr(d) for d in dtypes)
        raise KernelError(f"{what} needs a tile of {names}, got {t.dtype!r}")
    return t


def _op(lowerer, code: OpCode, x: ir.Value, y: ir.Value) -> ir.Value:
    return lowerer.b.op(code, (x, y), x.type)


def _muladd(lowerer, x: ir.Value, y: ir.Value, acc: ir.Value) -> ir.Value:
    """acc + x * y, rounded once for float32/64 as Warp's scalar GEMM does (C's fma)."""
    if acc.type in (T.float32, T.float64):
        return lowerer.b.call("_fma", [x, y, acc])
    return _op(lowerer, OpCode.ADD, acc, _op(lowerer, OpCode.MUL, x, y))


def _is_const(v: Val, number: float) -> bool:
    return v.const is not None and not isinstance(v.const, bool) and float(v.const) == number


# ---- matrix products ----------------------------------------------------------------------

@form("tile_matmul", "a, b, *args, out=, alpha=, beta=, precision=",
      "tile_matmul(a, b, out, alpha=1.0, beta=1.0) sets out = alpha * a @ b + beta * out in "
      "place (out is not read when beta is zero); tile_matmul(a, b, alpha=1.0) returns "
      "alpha * a @ b as a new tile of a's type. a is (M, K), b (K, N); float16, float32 or "
      "float64, each product summed over k in ascending order in out's type.")
def _tile_matmul(lowerer, args, node):
    a = _matmul_operand(lowerer, args["a"], "a")
    b = _matmul_operand(lowerer, args["b"], "b")
    extra = list(args.get("args", []))
    first = lowerer.visit(extra[0]) if extra else None
    # Warp's two overloads: (a, b, out, alpha, beta, precision) and (a, b, alpha, precision).
    accumulate = "out" in args or isinstance(first, Tile)
    names = ("out", "alpha", "beta", "precision") if accumulate else ("alpha", "precision")
    if len(extra) > len(names):
        raise KernelError(f"tile_matmul() takes at most {2 + len(names)} arguments")
    for name, arg in zip(names, extra):
        if name in args:
            raise KernelError(f"tile_matmul() got multiple values for argument '{name}'")
        args[name] = arg
    if "beta" in args and not accumulate:
        raise KernelError("tile_matmul(a, b) takes no beta: pass an output tile to accumulate")
    if accumulate:
        out = first if extra else lowerer.visit(args["out"])
        if not isinstance(out, Tile):
            raise KernelError("tile_matmul() out must be a tile")
    else:
        if a.shape[1] != b.shape[0]:
            raise KernelError(f"tile_matmul(): shapes {a.shape} and {b.shape} do not agree "
                              f"for a matrix product (a's columns must equal b's rows)")
        out = tv.new_tile(lowerer.b, a.dtype, (a.shape[0], b.shape[1]), "matmul")
    _check_matmul(lowerer, args, a, b, out)
    seen = first if extra and not accumulate else None  # alpha, visited above
    alpha = scalar_arg(lowerer, args["alpha"], out.dtype, "alpha", seen) if "alpha" in args \
        else Val(lowerer.b.const(1.0, out.dtype), const=1.0)
    beta = None
    if accumulate:
        beta = scalar_arg(lowerer, args["beta"], out.dtype, "beta") if "beta" in args \
            else Val(lowerer.b.const(1.0, out.dtype), const=1.0)
    gemm(lowerer, a, b, out, alpha, beta)
    return PyObj(None) if accumulate else out


def _matmul_operand(lowerer, node: ast.AST, name: str) -> Tile:
    """An input of tile_matmul(): bfloat16 is allowed here (its products are summed in
    out's type), not for out."""
    t = lowerer.tile_operand(node, f"tile_matmul() {name}")
    _reject_complex(t)
    return float_tile(lowerer, node, f"tile_matmul() {name}", (2,),
                      (*_MATMUL_TYPES, T.bfloat16), lowered=t)


def _reject_complex(t: Tile) -> None:
    if isinstance(t.dtype, T.VectorType) and t.dtype.length == 2 and t.dtype.dtype.is_float:
        raise KernelError(f"tile_matmul() does not support complex tiles (a tile of "
                          f"{t.dtype!r}); multiply the real and imaginary parts separately")


def _check_matmul(lowerer, args, a: Tile, b: Tile, out: Tile) -> None:
    _reject_complex(out)
    if out.dtype == T.bfloat16:
        raise KernelError("tile_matmul() does not support a bfloat16 'out' tile (the "
                          "accumulator); use float16, float32 or float64")
    if out.ndim != 2 or out.dtype not in _MATMUL_TYPES:
        raise KernelError(f"tile_matmul() out must be a 2-d tile of float16, float32 or "
                          f"float64, got {out!r}")
    if a.shape[1] != b.shape[0] or out.shape != (a.shape[0], b.shape[1]):
        raise KernelError(f"tile_matmul(): shapes {a.shape} @ {b.shape} -> {out.shape} do not "
                          f"agree for a matrix product (need (M, K) @ (K, N) -> (M, N))")
    precision = constant_string(lowerer, args.get("precision"), "tile_matmul() precision",
                                ("default", "tf32"), "default")
    if precision == "tf32" and any(t.dtype != T.float32 for t in (a, b, out)):
        raise KernelError("tile_matmul() precision='tf32' requires float32 tiles for a, b "
                          "and out")
    # tf32 only changes the inputs' rounding on tensor cores; one lane computes in float32.


def gemm(lowerer, a: Tile, b: Tile, out: Tile, alpha: Val, beta: Val | None) -> None:
    """out = alpha * a @ b (+ beta * out unless beta is None or a constant zero)."""
    bld = lowerer.b
    m, n = out.shape
    reads_out = beta is not None and not _is_const(beta, 0.0)
    # A loop that reads and rewrites `out` nonlinearly (beta * out) would make the reverse
    # sweep replay it; results go through a staging tile instead, copied after.
    staged = reads_out and not _is_const(beta, 1.0)
    target = tv.new_tile(bld, out.dtype, out.shape, "gemm") if staged else out
    # Row by row, k outside j: each out[i, j] still sums its products in ascending k with a
    # multiply-add (Warp's order, so the same bits), but the innermost loop runs over j,
    # independent lanes that vectorise.
    row = tv.new_tile(bld, out.dtype, (n,), "gemm_row")
    with tv.counted_loop(bld, 0, m) as i:
        tv.fill(bld, row, bld.const(0, out.dtype))
        with tv.counted_loop(bld, 0, a.shape[1]) as k:
            x = bld.cast(tv.load(bld, a, [i, k]), out.dtype)
            with tv.counted_loop(bld, 0, n) as j:
                y = bld.cast(tv.load(bld, b, [k, j]), out.dtype)
                tv.store(bld, row, [j], _muladd(lowerer, x, y, tv.load(bld, row, [j])))
        with tv.counted_loop(bld, 0, n) as j:
            result = tv.load(bld, row, [j])
            if not _is_const(alpha, 1.0):
                result = _op(lowerer, OpCode.MUL, alpha.value, result)
            if reads_out:
                old = tv.load(bld, out, [i, j])
                scaled = old if not staged else _op(lowerer, OpCode.MUL, beta.value, old)
                blended = _op(lowerer, OpCode.ADD, result, scaled)
                if beta.const is None:  # as in BLAS, out is ignored when beta is zero
                    nonzero = bld.op(OpCode.NE, (beta.value, bld.const(0, out.dtype)), T.bool_)
                    blended = bld.op(OpCode.SELECT, (nonzero, blended, result), out.dtype)
                result = blended
            tv.store(bld, target, [i, j], result)
    if staged:
        tv.copy(bld, out, target)


# ---- element-wise helpers of Warp's tile library --------------------------------------------

def _same_tiles(lowerer, args, first: str, second: str, what: str) -> tuple[Tile, Tile]:
    x = lowerer.tile_operand(args[first], what)
    y = lowerer.tile_operand(args[second], what)
    if x.shape != y.shape or x.dtype != y.dtype:
        raise KernelError(f"{what} needs two tiles of one shape and type, got {x!r} and {y!r}")
    return x, y


@form("tile_dot", "a, b",
      "The dot product of two tiles of one shape and type, summed over every element: "
      "vector elements contract with dot(), matrix elements as the Frobenius product. A "
      "tile of shape (1,) holding the element's scalar type.")
def _tile_dot(lowerer, args, node):
    a, b = _same_tiles(lowerer, args, "a", "b", "tile_dot()")
    if not isinstance(a.dtype, (T.ScalarType, T.VectorType, T.MatrixType)) or a.dtype == T.bool_:
        raise KernelError(f"tile_dot() needs scalar, vector or matrix elements, not {a.dtype!r}")
    bld = lowerer.b
    scalar = tv.scalar_of(a.dtype)
    acc = bld.new_slot("dot_acc", scalar)
    bld.store(acc, bld.const(0, scalar))
    with tv.loop_nest(bld, a.shape) as idx:
        x, y = tv.load(bld, a, idx), tv.load(bld, b, idx)
        total = bld.load(acc)
        for c in range(tv.components(a.dtype)):
            xc, yc = x, y
            if tv.components(a.dtype) > 1:
                xc = bld.op(OpCode.EXTRACT, (x,), scalar, c)
                yc = bld.op(OpCode.EXTRACT, (y,), scalar, c)
            total = _op(lowerer, OpCode.ADD, total, _op(lowerer, OpCode.MUL, xc, yc))
        bld.store(acc, total)
    out = tv.new_tile(bld, scalar, (1,), "dot")
    tv.store(bld, out, [tv.const(bld, 0)], bld.load(acc))
    return out


@form("tile_axpy", "alpha, src, dest",
      "dest += alpha * src, element by element and in place; alpha has the tiles' scalar "
      "type.")
def _tile_axpy(lowerer, args, node):
    src, dest = _same_tiles(lowerer, args, "src", "dest", "tile_axpy()")
    scalar = tv.scalar_of(dest.dtype)
    alpha = lowerer.as_val(lowerer.visit(args["alpha"]), node)
    if alpha.type != scalar:
        if not alpha.weak:
            raise KernelError(f"tile_axpy() alpha must be a {scalar!r} for a tile of "
                              f"{dest.dtype!r}, got a {alpha.type!r}")
        alpha = lowerer.coerce(alpha, scalar)
    bld = lowerer.b
    with tv.loop_nest(bld, dest.shape) as idx:
        scaled = lowerer.binary(OpCode.MUL, alpha, Val(tv.load(bld, src, idx)), node)
        total = lowerer.binary(OpCode.ADD, Val(tv.load(bld, dest, idx)), scaled, node)
        tv.store(bld, dest, idx, lowerer.as_val(total, node).value)
    return PyObj(None)


@form("tile_diag_add", "a, d",
      "A copy of the square tile a with the 1-d tile d added to its diagonal.")
def _tile_diag_add(lowerer, args, node):
    a = lowerer.tile_operand(args["a"], "tile_diag_add()")
    d = lowerer.tile_operand(args["d"], "tile_diag_add()")
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise KernelError(f"tile_diag_add() needs a square tile, got shape {a.shape}")
    if d.shape != (a.shape[0],) or d.dtype != a.dtype:
        raise KernelError(f"tile_diag_add(): the diagonal must be a 1-d tile of {a.shape[0]} "
                          f"{a.dtype!r}, got {d!r}")
    bld = lowerer.b
    out = tv.materialise(bld, a, "diag_add")
    with tv.counted_loop(bld, 0, a.shape[0]) as i:
        total = lowerer.binary(OpCode.ADD, Val(tv.load(bld, out, [i, i])),
                               Val(tv.load(bld, d, [i])), node)
        tv.store(bld, out, [i, i], lowerer.as_val(total, node).value)
    return out


# ---- Cholesky factorisation ---------------------------------------------------------------

def _square(lowerer, node: ast.AST, what: str) -> Tile:
    t = float_tile(lowerer, node, what, (2,), _SOLVER_TYPES)
    if t.shape[0] != t.shape[1]:
        raise KernelError(f"{what} needs a square tile, got shape {t.shape}")
    return t


def _transposed(t: Tile) -> Tile:
    return t.view(t.shape[::-1], t.strides[::-1])


def cholesky(lowerer, a: Tile, out: Tile) -> None:
    """Writes the lower factor of `a` (only its lower triangle read) into `out`, zeroing
    out's upper triangle; `out` may be `a` itself. Warp's column order: the diagonal
    first, then the column below it scaled by the diagonal's reciprocal."""
    bld = lowerer.b
    n = a.shape[0]
    dtype = a.dtype
    acc = bld.new_slot("chol_acc", dtype)
    # Column j is built in `column` and copied into `out` after, so the loops that read
    # `out` do not also write it (their reverse sweep then needs no replays).
    column = tv.new_tile(bld, dtype, (n,), "chol_column")
    with tv.counted_loop(bld, 0, n) as j:
        bld.store(acc, tv.load(bld, a, [j, j]))
        with tv.counted_loop(bld, 0, j) as k:
            r = tv.load(bld, out, [j, k])
            bld.store(acc, _op(lowerer, OpCode.SUB, bld.load(acc), _op(lowerer, OpCode.MUL, r, r)))
        diag = bld.call("sqrt", [bld.load(acc)])
        inverse = _op(lowerer, OpCode.DIV, bld.const(1.0, dtype), diag)
        tv.store(bld, column, [j], diag)
        below = bld.op(OpCode.ADD, (j, tv.const(bld, 1)), T.int32)
        with tv.counted_loop(bld, below, n) as i:
            bld.store(acc, tv.load(bld, a, [i, j]))
            with tv.counted_loop(bld, 0, j) as k:
                term = _op(lowerer, OpCode.MUL, tv.load(bld, out, [i, k]),
                           tv.load(bld, out, [j, k]))
                bld.store(acc, _op(lowerer, OpCode.SUB, bld.load(acc), term))
            tv.store(bld, column, [i], _op(lowerer, OpCode.MUL, bld.load(acc), inverse))
        with tv.counted_loop(bld, j, n) as i:
            tv.store(bld, out, [i, j], tv.load(bld, column, [i]))
        with tv.counted_loop(bld, below, n) as k:
            tv.store(bld, out, [j, k], bld.const(0, dtype))


def _fill_mode(lowerer, args) -> bool:
    """True for fill_mode="upper"."""
    return constant_string(lowerer, args.get("fill_mode"), "fill_mode", ("lower", "upper"),
                           "lower") == "upper"


@form("tile_cholesky", "A, fill_mode=",
      "The Cholesky factor of a symmetric positive-definite float32/float64 tile as a new "
      "tile: lower L with L @ L.T = A (fill_mode=\"lower\", the default) or upper U with "
      "U.T @ U = A (\"upper\"). Only that triangle of A is read; the other triangle of the "
      "result is zero.")
def _tile_cholesky(lowerer, args, node):
    a = _square(lowerer, args["A"], "tile_cholesky()")
    out = tv.new_tile(lowerer.b, a.dtype, a.shape, "cholesky")
    # U.T @ U = A is the lower factorisation of A.T, stored transposed.
    upper = _fill_mode(lowerer, args)
    cholesky(lowerer, _transposed(a) if upper else a, _transposed(out) if upper else out)
    return out


@form("tile_cholesky_inplace", "A, fill_mode=",
      "Factors A in place as tile_cholesky() does: the chosen triangle becomes the factor, "
      "the other is set to zero.")
def _tile_cholesky_inplace(lowerer, args, node):
    a = _square(lowerer, args["A"], "tile_cholesky_inplace()")
    a = _transposed(a) if _fill_mode(lowerer, args) else a
    cholesky(lowerer, a, a)
    return PyObj(None)


# ---- triangular solves --------------------------------------------------------------------

def _rhs(lowerer, node: ast.AST, factor: Tile, what: str) -> Tile:
    y = float_tile(lowerer, node, what, (1, 2), _SOLVER_TYPES)
    if y.shape[0] != factor.shape[0]:
        raise KernelError(f"{what}: the right-hand side has {y.shape[0]} rows, the matrix "
                          f"{factor.shape[0]}")
    if y.dtype != factor.dtype:
        raise KernelError(f"{what}: a {factor.dtype!r} matrix and a {y.dtype!r} right-hand "
                          f"side")
    return y


def _as_columns(y: Tile) -> Tile:
    """A 1-d right-hand side as one column (a view)."""
    return y if y.ndim == 2 else y.view((y.shape[0], 1), (y.strides[0], 0))


def substitute(lowerer, m: Tile, x: Tile, lower: bool) -> None:
    """Solves m @ z = x in place for triangular m (only its triangle read), one column of x
    at a time; forward for lower m, backward for upper. A zero diagonal entry leaves the
    row unscaled, as in Warp."""
    bld = lowerer.b
    x = _as_columns(x)
    n, columns = x.shape
    dtype = x.dtype
    acc = bld.new_slot("solve_acc", dtype)
    with tv.counted_loop(bld, 0, columns) as c:
        rows = tv.counted_loop(bld, 0, n) if lower else tv.counted_loop(bld, n - 1, -1, -1)
        with rows as i:
            bld.store(acc, tv.load(bld, x, [i, c]))
            if lower:
                known = tv.counted_loop(bld, 0, i)
            else:
                known = tv.counted_loop(bld, bld.op(OpCode.ADD, (i, tv.const(bld, 1)), T.int32), n)
            with known as j:
                term = _op(lowerer, OpCode.MUL, tv.load(bld, m, [i, j]), tv.load(bld, x, [j, c]))
                bld.store(acc, _op(lowerer, OpCode.SUB, bld.load(acc), term))
            diag = tv.load(bld, m, [i, i])
            nonzero = bld.op(OpCode.NE, (diag, bld.const(0, dtype)), T.bool_)
            divisor = bld.op(OpCode.SELECT, (nonzero, diag, bld.const(1, dtype)), dtype)
            tv.store(bld, x, [i, c], _op(lowerer, OpCode.DIV, bld.load(acc), divisor))


def _solve_form(name: str, matrix: str, rhs: str, in_place: bool, doc: str, steps) -> None:
    """Registers a solve; `steps(lowerer, args, m, x)` solves into x (a copy of the
    right-hand side unless in place)."""
    params = f"{matrix}, {rhs}" + (", fill_mode=" if "cholesky" in name else "")

    @form(name, params, doc)
    def handler(lowerer, args, node):
        m = _square(lowerer, args[matrix], f"{name}()")
        y = _rhs(lowerer, args[rhs], m, f"{name}()")
        x = y if in_place else tv.materialise(lowerer.b, y, "solve")
        steps(lowerer, args, m, x)
        return PyObj(None) if in_place else x


def _cholesky_steps(lowerer, args, m: Tile, x: Tile) -> None:
    # L @ L.T x = y: forward with L, then backward with L.T; an upper factor U (U.T @ U)
    # swaps the roles of the two views.
    upper = _fill_mode(lowerer, args)
    substitute(lowerer, _transposed(m) if upper else m, x, lower=True)
    substitute(lowerer, m if upper else _transposed(m), x, lower=False)


def _lower_steps(lowerer, args, m: Tile, x: Tile) -> None:
    substitute(lowerer, m, x, lower=True)


def _upper_steps(lowerer, args, m: Tile, x: Tile) -> None:
    substitute(lowerer, m, x, lower=False)


_RHS_DOC = ("; the right-hand side is a 1-d tile (M,) or a 2-d tile (M, NRHS) solved column "
            "by column, of the matrix's type (float32 or float64)")
_solve_form("tile_cholesky_solve", "L", "y", False,
            "x solving A x = y, A given by its Cholesky factor L (L @ L.T = A, or U.T @ U = A "
            "with fill_mode=\"upper\"; only that triangle read), as a new tile" + _RHS_DOC + ".",
            _cholesky_steps)
_solve_form("tile_cholesky_solve_inplace", "L", "y", True,
            "tile_cholesky_solve() writing x over y" + _RHS_DOC + ".", _cholesky_steps)
_solve_form("tile_lower_solve", "L", "y", False,
            "z solving L z = y for lower-triangular L (its strict upper triangle ignored) by "
            "forward substitution, as a new tile" + _RHS_DOC + ".", _lower_steps)
_solve_form("tile_lower_solve_inplace", "L", "y", True,
            "tile_lower_solve() writing z over y" + _RHS_DOC + ".", _lower_steps)
_solve_form("tile_upper_solve", "U", "z", False,
            "x solving U x = z for upper-triangular U (its strict lower triangle ignored) by "
            "back substitution, as a new tile" + _RHS_DOC + ".", _upper_steps)
_solve_form("tile_upper_solve_inplace", "U", "z", True,
            "tile_upper_solve() writing x over z" + _RHS_DOC + ".", _upper_steps)
