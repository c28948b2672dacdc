"""Matrix decompositions in kernels: `svd3`, `svd2`, `qr3`, `eig3`; and the geometry queries
`closest_point_edge_edge` and `intersect_tri_tri`.

As in Warp, each decomposition has two forms: `U, sigma, V = svd3(A)` returns its factors, and
`svd3(A, U, sigma, V)` stores them into the caller's variables, which must exist already
(`U = wp.mat33()` first; Warp reports an undefined symbol otherwise) and have the factor's
type. They are special forms because a func cannot assign its caller's variables; the math
itself is ordinary kernelc code in `kernelc.lib.linalg`. The geometry queries are plain
funcs (`kernelc.lib.geometry`), re-exported here.
"""

from __future__ import annotations

import ast
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.builder import Val
from kernelc.frontend.lower_expr import PyObj
from kernelc.frontend.special import special
from kernelc.lib.geometry import closest_point_edge_edge, intersect_tri_tri

__all__ = ["svd3", "svd2", "qr3", "eig3", "closest_point_edge_edge", "intersect_tri_tri"]

_FLOATS = (T.float16, T.float32, T.float64)


@special("svd3")
def svd3(A: Any, U: Any = None, sigma: Any = None, V: Any = None) -> Any:
    """Singular value decomposition of a 3x3 float matrix: `U, sigma, V = svd3(A)`, or
    `svd3(A, U, sigma, V)` into existing variables. A = U diag(sigma) Vᵀ with U and V
    rotations (det +1), |sigma| decreasing, sigma[0], sigma[1] >= 0 and sigma[2] carrying the
    sign of det(A) (McAdams et al.'s Jacobi method, as in Warp)."""
    return _on_host("svd3", A, U, sigma, V)


@special("svd2")
def svd2(A: Any, U: Any = None, sigma: Any = None, V: Any = None) -> Any:
    """Singular value decomposition of a 2x2 float matrix: `U, sigma, V = svd2(A)`, or
    `svd2(A, U, sigma, V)` into existing variables. A = U diag(sigma) Vᵀ, sigma >= 0 and
    decreasing, U and V orthogonal (closed form from the eigenvectors of AᵀA, as in Warp)."""
    return _on_host("svd2", A, U, sigma, V)


@special("qr3")
def qr3(A: Any, Q: Any = None, R: Any = None) -> Any:
    """QR decomposition of a 3x3 float matrix: `Q, R = qr3(A)`, or `qr3(A, Q, R)` into
    existing variables. A = Q R, Q a rotation (det +1), R upper triangular up to rounding
    (three Givens rotations, as in Warp)."""
    return _on_host("qr3", A, Q, R)


@special("eig3")
def eig3(A: Any, Q: Any = None, d: Any = None) -> Any:
    """Eigen-decomposition of a symmetric 3x3 float matrix: `Q, d = eig3(A)`, or
    `eig3(A, Q, d)` into existing variables. A = Q diag(d) Qᵀ, Q a rotation, d unsorted
    (Jacobi iterations on the lower triangle, as in Warp)."""
    return _on_host("eig3", A, Q, d)


def _on_host(name: str, a: Any, *outputs: Any) -> tuple[Any, ...]:
    from kernelc.lib.linalg_host import decompose

    return decompose(name, a, tuple(x for x in outputs if x is not None))


def _lib():
    from kernelc.lib import linalg

    return linalg


# name -> (size of the input matrix, Warp's names of the outputs)
_SIGNATURES: dict[str, tuple[int, tuple[str, ...]]] = {
    "svd3": (3, ("U", "sigma", "V")),
    "svd2": (2, ("U", "sigma", "V")),
    "qr3": (3, ("Q", "R")),
    "eig3": (3, ("Q", "d")),
}


def _bind(name: str, node: ast.Call) -> list[ast.expr]:
    """The argument nodes in parameter order: just A, or A and every output."""
    _, outputs = _SIGNATURES[name]
    params = ("A", *outputs)
    usage = f"{name}(A) or {name}({', '.join(params)})"
    if len(node.args) > len(params):
        raise KernelError(f"{name}() takes 1 or {len(params)} arguments: {usage}")
    bound: dict[str, ast.expr] = dict(zip(params, node.args))
    for kw in node.keywords:
        if kw.arg not in params or kw.arg in bound:
            what = "a second value for" if kw.arg in bound else "an unexpected keyword"
            raise KernelError(f"{name}() got {what} '{kw.arg}': {usage}")
        bound[kw.arg] = kw.value
    if len(bound) not in (1, len(params)) or "A" not in bound:
        raise KernelError(f"{name}() takes 1 or {len(params)} arguments: {usage}")
    return [bound[p] for p in params if p in bound]


def _matrix_arg(lowerer, name: str, node: ast.expr, size: int) -> Val:
    a = lowerer.as_val(lowerer.visit(node), node)
    lowerer.b.loc = lowerer.source.loc(node)
    t = a.type
    if not (isinstance(t, T.MatrixType) and t.shape == (size, size) and t.dtype in _FLOATS):
        raise KernelError(f"{name}() needs a {size}x{size} float matrix "
                          f"(mat{size}{size}, mat{size}{size}d or mat{size}{size}h), got {t!r}")
    return a


def _store(lowerer, name: str, param: str, node: ast.expr, value: Val) -> None:
    """Assigns a factor to the caller's variable `node`, which must exist with its type."""
    if not isinstance(node, ast.Name):
        raise KernelError(f"{name}() stores {param} into its argument in place: pass a "
                          f"variable (e.g. {param} = {value.type!r}() first), not an expression")
    bound = lowerer.names.get(node.id)
    if bound is None:
        raise KernelError(f"{name}() stores {param} into '{node.id}', which is not a local "
                          f"variable; declare it first, e.g. {node.id} = {value.type!r}()")
    current = getattr(bound, "type", None)
    if current != value.type:
        what = f"a {current!r}" if isinstance(current, T.Type) else "not a variable of that type"
        raise KernelError(f"{name}() stores a {value.type!r} into {param}, but '{node.id}' "
                          f"is {what}")
    lowerer.assign_name(node.id, value, node)


def _decomposition(name: str):
    size, outputs = _SIGNATURES[name]

    def lower(lowerer, node: ast.Call):
        args = _bind(name, node)
        call_loc = lowerer.b.loc
        a = _matrix_arg(lowerer, name, args[0], size)
        lowerer.b.loc = call_loc
        factors = lowerer.call_func(getattr(_lib(), name), [a])
        if len(args) == 1:
            return factors  # a tuple: U, sigma, V = svd3(A)
        for param, target, value in zip(outputs, args[1:], factors.items):
            lowerer.b.loc = lowerer.source.loc(target)  # errors point at this argument
            _store(lowerer, name, param, target, value)
        return PyObj(None)

    lower.__name__ = f"_lower_{name}"
    return lower


SPECIAL_FORMS: dict[str, Any] = {name: _decomposition(name) for name in _SIGNATURES}
