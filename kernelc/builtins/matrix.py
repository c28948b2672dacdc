"""Matrix builtins (Warp's names): transpose, determinant, inverse, trace, diag, outer, skew.

Matrices are row-major: component (r, c) of an R x C matrix is flat component r * C + c.
"""

from __future__ import annotations

from kernelc import types as T
from kernelc.builtins.aggregate import binop, build, comps, dot_values, require, total
from kernelc.builtins.registry import Overload, register
from kernelc.builtins.vector import cross_values
from kernelc.ir.nodes import OpCode, Value
from kernelc.types_vec import matrix, vector

GROUP = "matrix math"


def _matrix_arg(square: bool = False, sizes: tuple[int, ...] | None = None):
    def rule(types, weak):
        (m,) = types
        require(isinstance(m, T.MatrixType), f"expected a matrix, got {m!r}")
        rows, cols = m.shape
        require(not square or rows == cols, f"expected a square matrix, got {m!r}")
        require(sizes is None or rows in sizes,
                f"supported for {', '.join(f'{n}x{n}' for n in sizes or ())} matrices, "
                f"got {m!r}")
        return (m,), m

    return rule


def rows_of(em, m: Value) -> list[list[Value]]:
    rows, cols = m.type.shape
    flat = comps(em, m)
    return [flat[r * cols:(r + 1) * cols] for r in range(rows)]


def _transpose_rule(types, weak):
    (m,), _ = _matrix_arg()(types, weak)
    return (m,), matrix((m.shape[1], m.shape[0]), m.dtype)


def _transpose(em, m: Value) -> Value:
    rows = rows_of(em, m)
    out = [rows[r][c] for c in range(m.type.shape[1]) for r in range(m.type.shape[0])]
    return build(em, matrix((m.type.shape[1], m.type.shape[0]), m.type.dtype), out)


register("transpose", GROUP, "The transpose of a matrix.",
         Overload(("m",), _transpose_rule, _transpose))


def _trace_rule(types, weak):
    (m,), _ = _matrix_arg(square=True)(types, weak)
    return (m,), m.dtype


def _trace(em, m: Value) -> Value:
    rows = rows_of(em, m)
    return total(em, [rows[i][i] for i in range(len(rows))])


register("trace", GROUP, "Sum of the diagonal of a square matrix.",
         Overload(("m",), _trace_rule, _trace))


# ---- determinant and inverse, in Warp's order of operations -----------------------------


def _mul(em, a: Value, b: Value) -> Value:
    return binop(em, OpCode.MUL, a, b)


def _diff(em, a: Value, b: Value, c: Value, d: Value) -> Value:
    """a * b - c * d."""
    return binop(em, OpCode.SUB, _mul(em, a, b), _mul(em, c, d))


def _det3(em, r: list[list[Value]]) -> Value:
    """dot(row 0, cross(row 1, row 2)), the form Warp evaluates."""
    return dot_values(em, r[0], cross_values(em, r[1], r[2]))


# The 4x4 determinant and inverse by 2x2 sub-determinants of column pairs (Warp's method):
# y_ab = x_a0 x_b1 - x_b0 x_a1 over the rows a < b of two columns, then each 3x3 cofactor
# z = x y -+ x y -+ x y, summed left to right from the terms below, each term given as
# ((row, column) of x, the rows (a, b) of y, the sign it is added with).
_PAIRS = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))
_COFACTORS_HI = {  # cofactors of the third and fourth columns, from y of the first two
    (3, 3): (((0, 2), (1, 2), "+"), ((1, 2), (0, 2), "-"), ((2, 2), (0, 1), "+")),
    (2, 3): (((1, 2), (0, 3), "+"), ((3, 2), (0, 1), "-"), ((0, 2), (1, 3), "-")),
    (1, 3): (((0, 2), (2, 3), "+"), ((2, 2), (0, 3), "-"), ((3, 2), (0, 2), "+")),
    (0, 3): (((2, 2), (1, 3), "+"), ((3, 2), (1, 2), "-"), ((1, 2), (2, 3), "-")),
    (3, 2): (((1, 3), (0, 2), "+"), ((2, 3), (0, 1), "-"), ((0, 3), (1, 2), "-")),
    (2, 2): (((0, 3), (1, 3), "+"), ((1, 3), (0, 3), "-"), ((3, 3), (0, 1), "+")),
    (1, 2): (((2, 3), (0, 3), "+"), ((3, 3), (0, 2), "-"), ((0, 3), (2, 3), "-")),
    (0, 2): (((1, 3), (2, 3), "+"), ((2, 3), (1, 3), "-"), ((3, 3), (1, 2), "+")),
}
_COFACTORS_LO = {  # cofactors of the first and second columns, from y of the last two
    (3, 0): (((1, 1), (0, 2), "+"), ((2, 1), (0, 1), "-"), ((0, 1), (1, 2), "-")),
    (2, 0): (((0, 1), (1, 3), "+"), ((1, 1), (0, 3), "-"), ((3, 1), (0, 1), "+")),
    (1, 0): (((2, 1), (0, 3), "+"), ((3, 1), (0, 2), "-"), ((0, 1), (2, 3), "-")),
    (0, 0): (((1, 1), (2, 3), "+"), ((2, 1), (1, 3), "-"), ((3, 1), (1, 2), "+")),
    (3, 1): (((0, 0), (1, 2), "+"), ((1, 0), (0, 2), "-"), ((2, 0), (0, 1), "+")),
    (2, 1): (((1, 0), (0, 3), "+"), ((3, 0), (0, 1), "-"), ((0, 0), (1, 3), "-")),
    (1, 1): (((0, 0), (2, 3), "+"), ((2, 0), (0, 3), "-"), ((3, 0), (0, 2), "+")),
    (0, 1): (((2, 0), (1, 3), "+"), ((3, 0), (1, 2), "-"), ((1, 0), (2, 3), "-")),
}


class _Wide:
    """Warp keeps the 2x2 sub-determinants and half of the cofactors of a 4x4 matrix in
    double: float32 components are widened for those products and sums. (float16 ones
    are not: its mixed half-double products round to half at once.)"""

    def __init__(self, em, t: T.ScalarType):
        self.em = em
        self.w = T.float64 if t.bits >= 32 else t

    def cast(self, v: Value, to: T.ScalarType) -> Value:
        return v if v.type == to else self.em.op(OpCode.CAST, (v,), to)

    def pair_dets(self, rows: list[list[Value]], c0: int, c1: int) -> dict:
        """y for the column pair (c0, c1): computed in the component type, kept wide."""
        return {(a, b): self.cast(_diff(self.em, rows[a][c0], rows[b][c1], rows[b][c0],
                                        rows[a][c1]), self.w) for a, b in _PAIRS}

    def cofactor(self, rows: list[list[Value]], y: dict, terms) -> Value:
        acc = None
        for (r, c), pair, sign in terms:
            term = binop(self.em, OpCode.MUL, self.cast(rows[r][c], self.w), y[pair])
            acc = term if acc is None else binop(
                self.em, OpCode.ADD if sign == "+" else OpCode.SUB, acc, term)
        return acc


def _det4_parts(em, rows: list[list[Value]]) -> tuple[Value, dict[tuple[int, int], Value]]:
    """The determinant (component type) and the cofactors of the first two columns."""
    t = rows[0][0].type
    wide = _Wide(em, t)
    y = wide.pair_dets(rows, 2, 3)
    z = {k: wide.cast(wide.cofactor(rows, y, v), t) for k, v in _COFACTORS_LO.items()}
    det = total(em, [_mul(em, rows[r][0], z[(r, 0)]) for r in (3, 2, 1, 0)])
    return det, z


def det_values(em, rows: list[list[Value]]) -> Value:
    """Determinant of a 2x2, 3x3 or 4x4 matrix given as rows of scalar values."""
    n = len(rows)
    if n == 2:
        return _diff(em, rows[0][0], rows[1][1], rows[1][0], rows[0][1])
    if n == 3:
        return _det3(em, rows)
    return _det4_parts(em, rows)[0]


def _det_rule(types, weak):
    (m,), _ = _matrix_arg(square=True, sizes=(2, 3, 4))(types, weak)
    require(m.dtype.is_float, f"expected a float matrix, got {m!r}")
    return (m,), m.dtype


def _determinant(em, m: Value) -> Value:
    return det_values(em, rows_of(em, m))


register("determinant", GROUP, "Determinant of a 2x2, 3x3 or 4x4 matrix.",
         Overload(("m",), _det_rule, _determinant))


def _inverse_rule(types, weak):
    (m,), _ = _det_rule(types, weak)
    return (m,), m


def _scaled_or_zero(em, invertible: Value, values: list[Value], scale: Value) -> list[Value]:
    zero = em.const(0.0, scale.type)
    return [em.op(OpCode.SELECT, (invertible, _mul(em, v, scale), zero), v.type)
            for v in values]


def _inverse2(em, r: list[list[Value]]) -> list[Value]:
    t = r[0][0].type
    det = det_values(em, r)
    zero = em.const(0.0, t)
    invertible = em.op(OpCode.BITOR, (em.op(OpCode.GT, (det, zero), T.bool_),
                                      em.op(OpCode.LT, (det, zero), T.bool_)), T.bool_)
    rcp = binop(em, OpCode.DIV, em.const(1.0, t), det)
    adjugate = [r[1][1], em.op(OpCode.NEG, (r[0][1],), t), em.op(OpCode.NEG, (r[1][0],), t),
                r[0][0]]
    return _scaled_or_zero(em, invertible, adjugate, rcp)


# The adjugate of a 3x3 matrix, entry by entry, as (a, b, c, d) for a * b - c * d.
_ADJUGATE3 = (((1, 1), (2, 2), (1, 2), (2, 1)), ((0, 2), (2, 1), (0, 1), (2, 2)),
              ((0, 1), (1, 2), (0, 2), (1, 1)), ((1, 2), (2, 0), (1, 0), (2, 2)),
              ((0, 0), (2, 2), (0, 2), (2, 0)), ((0, 2), (1, 0), (0, 0), (1, 2)),
              ((1, 0), (2, 1), (1, 1), (2, 0)), ((0, 1), (2, 0), (0, 0), (2, 1)),
              ((0, 0), (1, 1), (0, 1), (1, 0)))


def _inverse3(em, r: list[list[Value]]) -> list[Value]:
    t = r[0][0].type
    det = det_values(em, r)
    invertible = em.op(OpCode.NE, (det, em.const(0.0, t)), T.bool_)  # NaN passes, as in Warp
    rcp = binop(em, OpCode.DIV, em.const(1.0, t), det)
    adjugate = [_diff(em, *(r[i][j] for i, j in entry)) for entry in _ADJUGATE3]
    return _scaled_or_zero(em, invertible, adjugate, rcp)


def _inverse4(em, r: list[list[Value]]) -> list[Value]:
    """Cofactors over the determinant, with the reciprocal of the determinant and the last
    products in double (rounded back to the component type)."""
    t = r[0][0].type
    wide = _Wide(em, t)
    y = wide.pair_dets(r, 0, 1)
    z = {k: wide.cast(wide.cofactor(r, y, v), T.float64) for k, v in _COFACTORS_HI.items()}
    det, low = _det4_parts(em, r)
    z.update({k: wide.cast(v, T.float64) for k, v in low.items()})
    det = wide.cast(det, T.float64)
    zero = em.const(0.0, T.float64)
    invertible = em.op(OpCode.GT, (em.call("fabs", (det,)), zero), T.bool_)
    rcp = binop(em, OpCode.DIV, em.const(1.0, T.float64), det)
    # inverse[i][j] is cofactor (j, i) over the determinant.
    out = [wide.cast(_mul(em, z[(j, i)], rcp), t) for i in range(4) for j in range(4)]
    zero = em.const(0.0, t)
    return [em.op(OpCode.SELECT, (invertible, v, zero), t) for v in out]


def _inverse(em, m: Value) -> Value:
    """Warp's inverse; a singular matrix gives the zero matrix (a 2x2 or 4x4 one whose
    determinant is NaN too)."""
    rows = rows_of(em, m)
    make = {2: _inverse2, 3: _inverse3, 4: _inverse4}[len(rows)]
    return build(em, m.type, make(em, rows))


register("inverse", GROUP, "Inverse of a 2x2, 3x3 or 4x4 matrix (zero if it is singular).",
         Overload(("m",), _inverse_rule, _inverse))
register("inverse_approx", GROUP,
         "An approximate inverse of a 2x2, 3x3 or 4x4 float matrix. Warp may use faster, "
         "less accurate arithmetic on GPUs; kernelc computes inverse(a) everywhere.",
         Overload(("a",), _inverse_rule, _inverse))


# ---- constructors from vectors -----------------------------------------------------------


def _diag_rule(types, weak):
    (v,) = types
    require(isinstance(v, T.VectorType) and v.kind == "vec", f"expected a vector, got {v!r}")
    return (v,), matrix((v.length, v.length), v.dtype)


def _diag(em, v: Value) -> Value:
    n, t = v.type.length, v.type.dtype
    d = comps(em, v)
    zero = em.const(0, t)
    return build(em, matrix((n, n), t), [d[r] if r == c else zero for r in range(n)
                                         for c in range(n)])


register("diag", GROUP, "The square matrix with vector d on its diagonal.",
         Overload(("d",), _diag_rule, _diag))


def _get_diag_rule(types, weak):
    (m,), _ = _matrix_arg(square=True)(types, weak)
    return (m,), vector(m.shape[0], m.dtype)


def _get_diag(em, m: Value) -> Value:
    rows = rows_of(em, m)
    return build(em, vector(len(rows), m.type.dtype), [rows[i][i] for i in range(len(rows))])


register("get_diag", GROUP, "The diagonal of a square matrix as a vector.",
         Overload(("m",), _get_diag_rule, _get_diag))


def _outer_rule(types, weak):
    a, b = types
    for v in (a, b):
        require(isinstance(v, T.VectorType) and v.kind == "vec", f"expected a vector, got {v!r}")
    require(a.dtype == b.dtype, f"vectors of different types: {a!r} and {b!r}")
    return (a, b), matrix((a.length, b.length), a.dtype)


def _outer(em, a: Value, b: Value) -> Value:
    x, y = comps(em, a), comps(em, b)
    out = [binop(em, OpCode.MUL, xi, yj) for xi in x for yj in y]
    return build(em, matrix((len(x), len(y)), a.type.dtype), out)


register("outer", GROUP, "Outer product a b^T of two vectors.",
         Overload(("a", "b"), _outer_rule, _outer))


def _skew_rule(types, weak):
    (v,) = types
    require(isinstance(v, T.VectorType) and v.kind == "vec" and v.length == 3,
            f"skew() needs a 3-vector, got {v!r}")
    return (v,), matrix((3, 3), v.dtype)


def _skew(em, v: Value) -> Value:
    """The cross-product matrix: skew(a) @ b == cross(a, b)."""
    x, y, z = comps(em, v)
    t = v.type.dtype
    zero = em.const(0, t)

    def neg(a: Value) -> Value:
        return em.op(OpCode.NEG, (a,), t)

    return build(em, matrix((3, 3), t), [zero, neg(z), y, z, zero, neg(x), neg(y), x, zero])


register("skew", GROUP, "The skew-symmetric matrix of a 3-vector.",
         Overload(("a",), _skew_rule, _skew))


def identity_value(em, n: int, t: T.ScalarType) -> Value:
    one, zero = em.const(1, t), em.const(0, t)
    return build(em, matrix((n, n), t), [one if r == c else zero for r in range(n)
                                         for c in range(n)])


def _from_vectors(columns: bool):
    def rule(types, weak):
        first = types[0]
        require(isinstance(first, T.VectorType) and first.kind == "vec",
                f"expected vectors, got {first!r}")
        for t in types:
            require(t == first, f"all vectors must have the same type, got {t!r} and {first!r}")
        n, m = len(types), first.length
        return tuple(types), matrix((m, n) if columns else (n, m), first.dtype)

    def expand(em, *vs: Value) -> Value:
        lists = [comps(em, v) for v in vs]
        n, m, t = len(vs), vs[0].type.length, vs[0].type.dtype
        if columns:
            flat = [lists[c][r] for r in range(m) for c in range(n)]
            return build(em, matrix((m, n), t), flat)
        return build(em, matrix((n, m), t), [x for row in lists for x in row])

    return rule, expand


for _name, _cols in (("matrix_from_rows", False), ("matrix_from_cols", True)):
    _rule, _expand = _from_vectors(_cols)
    register(_name, GROUP, f"A matrix whose {'columns' if _cols else 'rows'} are the vectors.",
             *(Overload(tuple(f"v{i}" for i in range(n)), _rule, _expand)
               for n in range(1, 7)))
