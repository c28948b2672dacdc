"""`texture_sample` in kernels: Warp's sampling builtin for `kc.Texture1D/2D/3D`.

A special form, because it takes a type argument (`dtype=float`, `kc.vec2f` or `kc.vec4f`:
how many channels to read) and has Warp's overloads: a 1-d texture takes `u`; a 2-d one
`uv` (a vec2f) or `u, v`; a 3-d one `uvw` (a vec3f) or `u, v, w`; each then `dtype` and an
optional `lod` (default -1: the base level). The form checks the arguments, with errors at
the offending one, and calls a sampler of `kernelc.spatial.texture_lang` that returns the
first channels in a vec4f, of which it keeps what `dtype` asks for.
"""

from __future__ import annotations

import ast

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.builder import Val
from kernelc.frontend.special import kernel_only
from kernelc.ir.nodes import OpCode

_VEC = {n: T.VectorType(n, T.float32) for n in (2, 3, 4)}
# The result types texture_sample supports, and how many channels each reads.
_RESULTS = {T.float32: 1, _VEC[2]: 2, _VEC[4]: 4}

__all__ = ["texture_sample"]

texture_sample = kernel_only(
    "texture_sample",
    "`texture_sample(tex, u | uv | uvw | u, v[, w], dtype, lod=-1.0)`: the texture's value "
    "at the coordinates, filtered and addressed as the texture was created; `dtype` (float, "
    "vec2f or vec4f) says how many channels to read, and a non-negative `lod` picks or blends "
    "mip levels.")
texture_sample.__module__ = __name__  # where the form's handler is found (SPECIAL_FORMS)


def _fail(lowerer, node: ast.AST, message: str) -> KernelError:
    return KernelError(message, lowerer.source.loc(node), lowerer.ctx.kernel_name)


def _value(lowerer, node: ast.expr) -> Val:
    return lowerer.as_val(lowerer.visit(node), node)


def _texture(lowerer, node: ast.Call) -> tuple[Val, int]:
    """The texture argument and its number of axes."""
    from kernelc.spatial import texture_lang as lang

    if not node.args:
        raise KernelError("texture_sample() takes a texture as its first argument")
    tex = _value(lowerer, node.args[0])
    views = {lang.View1D._kc_type: 1, lang.View2D._kc_type: 2, lang.View3D._kc_type: 3}
    if tex.type not in views:
        raise _fail(lowerer, node.args[0], f"texture_sample() takes a kc.Texture1D, "
                                           f"Texture2D or Texture3D first, got {tex.type!r}")
    return tex, views[tex.type]


def _params(lowerer, node: ast.Call, ndim: int) -> tuple[tuple[str, ...], Val | None]:
    """The parameter names of the overload called (after `tex`), and the first coordinate
    if it had to be lowered to choose between the vector and the scalar overload."""
    axes = "uvw"[:ndim]
    scalars = (*axes, "dtype", "lod")
    if ndim == 1:
        return scalars, None
    vector = (axes, "dtype", "lod")
    keywords = {kw.arg for kw in node.keywords}
    if axes in keywords:
        return vector, None
    if "u" in keywords or len(node.args) < 2:
        return scalars, None
    first = _value(lowerer, node.args[1])
    return (vector if isinstance(first.type, T.VectorType) else scalars), first


def _bind(node: ast.Call, params: tuple[str, ...]) -> dict[str, ast.expr]:
    signature = f"texture_sample(tex, {', '.join(params[:-1])}, lod=-1.0)"
    args = node.args[1:]
    if len(args) > len(params):
        raise KernelError(f"{signature} takes {len(params) + 1} arguments ({len(node.args)} "
                          f"given)")
    bound = dict(zip(params, args))
    for kw in node.keywords:
        if kw.arg is None or kw.arg not in params:
            raise KernelError(f"{signature} got an unexpected keyword argument '{kw.arg}'")
        if kw.arg in bound:
            raise KernelError(f"texture_sample() got two values for argument '{kw.arg}'")
        bound[kw.arg] = kw.value
    missing = [p for p in params[:-1] if p not in bound]
    if missing:
        raise KernelError(f"{signature} is missing argument '{missing[0]}'")
    return bound


def _scalar(lowerer, param: str, node: ast.expr, v: Val | None = None) -> Val:
    v = v if v is not None else _value(lowerer, node)
    if v.type == T.float32 or (v.weak and isinstance(v.type, T.ScalarType)
                               and not v.type.is_bool):
        return lowerer.coerce(v, T.float32)
    raise _fail(lowerer, node, f"'{param}' of texture_sample() must be a float32, got "
                               f"{v.type!r}")


def _coords(lowerer, bound: dict[str, ast.expr], ndim: int, first: Val | None) -> list[Val]:
    axes = "uvw"[:ndim]
    if ndim > 1 and axes in bound:
        v = first if first is not None else _value(lowerer, bound[axes])
        if v.type != _VEC[ndim]:
            raise _fail(lowerer, bound[axes], f"'{axes}' of texture_sample() on a {ndim}-d "
                                              f"texture must be a vec{ndim}f, got {v.type!r}")
        b = lowerer.b
        return [Val(b.op(OpCode.EXTRACT, (v.value,), T.float32, k)) for k in range(ndim)]
    return [_scalar(lowerer, axis, bound[axis], first if axis == "u" else None)
            for axis in axes]


def _result_type(lowerer, node: ast.expr) -> T.Type:
    try:
        t = lowerer.eval_annotation(node)
    except KernelError:
        t = None
    if t not in _RESULTS:
        raise _fail(lowerer, node, f"unsupported dtype '{ast.unparse(node)}' for "
                                   f"texture_sample(): use float, vec2f or vec4f")
    return t


def _texture_sample(lowerer, node: ast.Call) -> Val:
    from kernelc.spatial import texture_lang as lang

    tex, ndim = _texture(lowerer, node)
    params, first = _params(lowerer, node, ndim)
    bound = _bind(node, params)
    coords = _coords(lowerer, bound, ndim, first)
    result = _result_type(lowerer, bound["dtype"])
    b = lowerer.b
    lod = (_scalar(lowerer, "lod", bound["lod"]) if "lod" in bound
           else Val(b.const(-1.0, T.float32)))
    sampler = (lang.sample_1d, lang.sample_2d, lang.sample_3d)[ndim - 1]
    count = _RESULTS[result]
    channels = lowerer.call_func(sampler, [tex, *coords, lod, Val(b.const(count, T.int32))])
    if count == 4:
        return channels
    parts = [b.op(OpCode.EXTRACT, (channels.value,), T.float32, k) for k in range(count)]
    return Val(parts[0] if count == 1 else b.op(OpCode.BUILD, tuple(parts), result))


SPECIAL_FORMS = {"texture_sample": _texture_sample}
