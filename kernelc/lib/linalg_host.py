"""`svd3`, `svd2`, `qr3` and `eig3` called on the host (`U, sigma, V = kc.svd3(A)`), as Warp
allows: a one-thread kernel runs the same kernelc code as in kernels, so the factors are
bit for bit those a kernel computes. Only the returning form exists on the host (as in
Warp: a host value cannot be assigned in place through a call)."""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc import types as T


@kc.kernel
def _svd3_once(a: kc.array(dtype=Any), u: kc.array(dtype=Any), s: kc.array(dtype=Any),
               v: kc.array(dtype=Any)):
    u[0], s[0], v[0] = kc.svd3(a[0])


@kc.kernel
def _svd2_once(a: kc.array(dtype=Any), u: kc.array(dtype=Any), s: kc.array(dtype=Any),
               v: kc.array(dtype=Any)):
    u[0], s[0], v[0] = kc.svd2(a[0])


@kc.kernel
def _qr3_once(a: kc.array(dtype=Any), q: kc.array(dtype=Any), r: kc.array(dtype=Any)):
    q[0], r[0] = kc.qr3(a[0])


@kc.kernel
def _eig3_once(a: kc.array(dtype=Any), q: kc.array(dtype=Any), d: kc.array(dtype=Any)):
    q[0], d[0] = kc.eig3(a[0])


# name -> (kernel, matrix size, the factors: "m" a matrix like A, "v" a vector)
_FORMS = {
    "svd3": (_svd3_once, 3, "mvm"),
    "svd2": (_svd2_once, 2, "mvm"),
    "qr3": (_qr3_once, 3, "mm"),
    "eig3": (_eig3_once, 3, "mv"),
}
_FLOATS = (T.float16, T.float32, T.float64)


def decompose(name: str, a: Any, outputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """The factors of host matrix `a` by decomposition `name`, as host values."""
    kernel, size, factors = _FORMS[name]
    t = getattr(a, "_kc_type", None)
    given = ", ".join(_type_name(x) for x in (a, *outputs))
    if outputs or not (isinstance(t, T.MatrixType) and t.shape == (size, size)
                       and t.dtype in _FLOATS):
        raise RuntimeError(f"Couldn't find a function '{name}' compatible with the arguments "
                           f"'{given}'")
    vec = T.VectorType(size, t.dtype)
    arrays = [kc.empty(1, dtype=t if f == "m" else vec, device="cpu") for f in factors]
    kc.launch(kernel, dim=1, inputs=[kc.array([a], dtype=t, device="cpu"), *arrays],
              device="cpu")
    return tuple(kc.types.vector(size, t.dtype)(*x.numpy()[0]) if f == "v"
                 else kc.types.matrix((size, size), t.dtype)(x.numpy()[0])
                 for f, x in zip(factors, arrays))


def _type_name(x: Any) -> str:
    t = getattr(x, "_kc_type", None)
    return repr(t) if t is not None else type(x).__name__
