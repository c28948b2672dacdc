"""Matrix builtins (Warp's names): transpose, determinant, inverse, trace, diag, outer, skew.

Matrices are row-major: component (r, c) of an R x C matrix is flat component r * C + c.
"""

from __future__ import annotations

from kernelc import types as T
from kernelc.builtins.aggregate import binop, build, comps, require, total
from kernelc.builtins.registry import Overload, register
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


# ---- determinant and inverse by cofactor expansion (unrolled at compile time) ---------------


def det_values(em, rows: list[list[Value]]) -> Value:
    """Determinant of a small square matrix given as rows of scalar values."""
    n = len(rows)
    if n == 1:
        return rows[0][0]
    if n == 2:
        return binop(em, OpCode.SUB, binop(em, OpCode.MUL, rows[0][0], rows[1][1]),
                     binop(em, OpCode.MUL, rows[0][1], rows[1][0]))
    acc = None
    for c in range(n):
        term = binop(em, OpCode.MUL, rows[0][c], det_values(em, _minor(rows, 0, c)))
        if acc is None:
            acc = term
        else:
            acc = binop(em, OpCode.SUB if c % 2 else OpCode.ADD, acc, term)
    return acc


def _minor(rows: list[list[Value]], r: int, c: int) -> list[list[Value]]:
    return [row[:c] + row[c + 1:] for i, row in enumerate(rows) if i != r]


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


def _inverse(em, m: Value) -> Value:
    """adjugate / det; a singular matrix (det == 0) gives the zero matrix, as in Warp."""
    rows = rows_of(em, m)
    n, t = len(rows), m.type.dtype
    det = det_values(em, rows)
    zero = em.const(0.0, t)
    singular = em.op(OpCode.EQ, (det, zero), T.bool_)
    safe = em.op(OpCode.SELECT, (singular, em.const(1.0, t), det), t)
    inv_det = binop(em, OpCode.DIV, em.const(1.0, t), safe)
    out = []
    for r in range(n):
        for c in range(n):
            # inverse[r][c] = cofactor[c][r] / det
            cof = det_values(em, _minor(rows, c, r))
            if (r + c) % 2:
                cof = em.op(OpCode.NEG, (cof,), t)
            value = binop(em, OpCode.MUL, cof, inv_det)
            out.append(em.op(OpCode.SELECT, (singular, zero, value), t))
    return build(em, m.type, out)


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
