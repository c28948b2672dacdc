"""Sparse-volume builtins in kernels: Warp's `volume_*` names.

Every name is a special form so that it can take Warp's keyword arguments, a type argument
(`volume_sample(id, uvw, mode, dtype=float)`), write its gradient into the variable passed
(`volume_sample_grad_f(id, uvw, mode, grad)`), check its arguments with errors at the
offending argument, and store into a volume. Each form calls a func of
`kernelc.spatial.volume_lang` or `volume_index_lang`, so the tree walks and interpolation
are ordinary kernelc code that every backend compiles.

The IR has no store to a raw address, so `volume_store` reinterprets (`bitcast`) a
(pointer, shape, stride) struct as a one-element array view of the voxel's value and stores
through it: plain IR that both backends already lower.
"""

from __future__ import annotations

import ast

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.builder import Val
from kernelc.frontend.special import kernel_only
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

_VEC3 = T.VectorType(3, T.float32)
_VEC3D = T.VectorType(3, T.float64)
# Value types kernels can read, and their NanoVDB grid type codes.
GRID_TYPES: dict[T.Type, int] = {
    T.float32: 1, T.float64: 2, T.int32: 4, T.int64: 5, _VEC3: 6, _VEC3D: 7, T.uint32: 10,
    T.VectorType(4, T.float32): 17, T.VectorType(4, T.float64): 18,
}
_SUPPORTED = "int32, int64, uint32, float32, float64, vec3f, vec3d, vec4f or vec4d"

_SAMPLE = ("id", "uvw", "sampling_mode")
_IJK = ("id", "i", "j", "k")
_INDEX = ("id", "uvw", "sampling_mode", "voxel_data", "background")
# name -> (parameters, the form's lowering, its fixed value type or None)
_FORMS: dict[str, tuple[tuple[str, ...], str, T.Type | None]] = {
    "volume_sample": ((*_SAMPLE, "dtype"), "sample", None),
    "volume_sample_f": (_SAMPLE, "sample", T.float32),
    "volume_sample_v": (_SAMPLE, "sample", _VEC3),
    "volume_sample_i": (("id", "uvw"), "sample", T.int32),
    "volume_sample_grad": ((*_SAMPLE, "grad", "dtype"), "sample_grad", None),
    "volume_sample_grad_f": ((*_SAMPLE, "grad"), "sample_grad", T.float32),
    "volume_lookup": ((*_IJK, "dtype"), "lookup", None),
    "volume_lookup_f": (_IJK, "lookup", T.float32),
    "volume_lookup_v": (_IJK, "lookup", _VEC3),
    "volume_lookup_i": (_IJK, "lookup", T.int32),
    "volume_store": ((*_IJK, "value"), "store", None),
    "volume_store_f": ((*_IJK, "value"), "store", T.float32),
    "volume_store_v": ((*_IJK, "value"), "store", _VEC3),
    "volume_store_i": ((*_IJK, "value"), "store", T.int32),
    "volume_sample_index": (_INDEX, "sample_index", None),
    "volume_sample_grad_index": ((*_INDEX, "grad"), "sample_grad_index", None),
    "volume_lookup_index": (_IJK, "lookup_index", None),
    "volume_voxel_count": (("id",), "voxel_count", None),
    "volume_index_to_world": (("id", "uvw"), "transform", None),
    "volume_world_to_index": (("id", "xyz"), "transform", None),
    "volume_index_to_world_dir": (("id", "uvw"), "transform", None),
    "volume_world_to_index_dir": (("id", "xyz"), "transform", None),
}

_DOCS = {
    "volume_sample": "The value of type `dtype` at index-space point `uvw`: the nearest "
                     "voxel (`Volume.CLOSEST`) or trilinear (`Volume.LINEAR`).",
    "volume_sample_f": "`volume_sample` of a float32 volume.",
    "volume_sample_v": "`volume_sample` of a vec3 volume.",
    "volume_sample_i": "The int32 value of the voxel nearest to `uvw`.",
    "volume_sample_grad": "`volume_sample`, writing the gradient w.r.t. `uvw` into `grad`.",
    "volume_sample_grad_f": "`volume_sample_grad` of a float32 volume (`grad` a vec3).",
    "volume_lookup": "The value of type `dtype` of voxel (i, j, k) (background when none).",
    "volume_lookup_f": "`volume_lookup` of a float32 volume.",
    "volume_lookup_v": "`volume_lookup` of a vec3 volume.",
    "volume_lookup_i": "`volume_lookup` of an int32 volume.",
    "volume_store": "Stores `value` at voxel (i, j, k) if a leaf holds it (no allocation).",
    "volume_store_f": "`volume_store` of a float32 value.",
    "volume_store_v": "`volume_store` of a vec3 value.",
    "volume_store_i": "`volume_store` of an int32 value.",
    "volume_sample_index": "`volume_sample` reading voxel values from `voxel_data` by their "
                           "linear index (`background` where a voxel has none).",
    "volume_sample_grad_index": "`volume_sample_index`, writing the gradient into `grad`.",
    "volume_lookup_index": "The linear index of voxel (i, j, k), -1 when it has none.",
    "volume_voxel_count": "The number of indexable voxels of the volume.",
    "volume_index_to_world": "Index-space point `uvw` in world space (vec3 or vec3d).",
    "volume_world_to_index": "World-space point `xyz` in index space (vec3 or vec3d).",
    "volume_index_to_world_dir": "Index-space direction `uvw` in world space.",
    "volume_world_to_index_dir": "World-space direction `xyz` in index space.",
}


__all__ = sorted(_FORMS)
globals().update({name: kernel_only(name, _DOCS[name]) for name in __all__})


def _lang():
    from kernelc.spatial import volume_index_lang, volume_lang

    return volume_lang, volume_index_lang


# ---- arguments -----------------------------------------------------------------------------


def _fail(lowerer, node: ast.AST, message: str) -> KernelError:
    return KernelError(message, lowerer.source.loc(node), lowerer.ctx.kernel_name)


def _bind(name: str, node: ast.Call) -> dict[str, ast.expr]:
    params = _FORMS[name][0]
    signature = f"{name}({', '.join(params)})"
    if len(node.args) > len(params):
        raise KernelError(f"{signature} takes {len(params)} arguments ({len(node.args)} given)")
    bound = dict(zip(params, node.args))
    for kw in node.keywords:
        if kw.arg is None or kw.arg not in params:
            raise KernelError(f"{name}() got an unexpected keyword argument '{kw.arg}'")
        if kw.arg in bound:
            raise KernelError(f"{name}() got two values for argument '{kw.arg}'")
        bound[kw.arg] = kw.value
    missing = [p for p in params if p not in bound]
    if missing:
        raise KernelError(f"{signature} is missing argument '{missing[0]}'")
    return bound


def _value(lowerer, node: ast.expr) -> Val:
    return lowerer.as_val(lowerer.visit(node), node)


def _id(lowerer, name: str, node: ast.expr) -> Val:
    v = _value(lowerer, node)
    if v.type == T.uint64 or (v.weak and isinstance(v.type, T.ScalarType) and v.type.is_int):
        return lowerer.coerce(v, T.uint64)
    raise _fail(lowerer, node, f"{name}() takes the volume as its uint64 id (volume.id), "
                               f"got a {v.type!r}")


def _scalar(lowerer, name: str, param: str, node: ast.expr, want: T.ScalarType) -> Val:
    v = _value(lowerer, node)
    if v.type == want or (v.weak and isinstance(v.type, T.ScalarType)
                          and (v.type.is_int or want.is_float)):
        return lowerer.coerce(v, want)
    raise _fail(lowerer, node, f"'{param}' of {name}() must be a {want!r}, got a {v.type!r}")


def _vec3(lowerer, name: str, param: str, node: ast.expr, doubles: bool = False) -> Val:
    v = _value(lowerer, node)
    if v.type == _VEC3 or (doubles and v.type == _VEC3D):
        return v
    want = "vec3 or vec3d" if doubles else "vec3 (float32)"
    raise _fail(lowerer, node, f"'{param}' of {name}() must be a {want}, got a {v.type!r}")


def _dtype(lowerer, name: str, node: ast.expr) -> T.Type:
    t = lowerer.eval_annotation(node)
    if t not in GRID_TYPES:
        raise _fail(lowerer, node, f"unsupported volume type {t!r} for {name}(): the value "
                                   f"type must be {_SUPPORTED}")
    return t


def _zero(lowerer, t: T.Type) -> Val:
    b = lowerer.b
    if isinstance(t, T.ScalarType):
        return Val(b.const(0, t))
    zero = b.const(0, t.dtype)
    return Val(b.op(OpCode.BUILD, (zero,) * t.count, t))


def grad_type(t: T.Type) -> T.Type:
    """The gradient of a value of type t w.r.t. uvw: a 3-vector, or a (length, 3) matrix
    (by its kernelc name, `vec3d`, `mat33f`, when it has one)."""
    from kernelc.types_vec import TYPES

    if isinstance(t, T.ScalarType):
        grad = T.VectorType(3, t)
    else:
        grad = T.MatrixType((t.length, 3), t.dtype)
    return next((named for named in TYPES.values() if named == grad), grad)


def _grad_target(lowerer, name: str, node: ast.expr, value_type: T.Type) -> str:
    """The variable `grad` names, checked against the gradient type of `value_type`."""
    want = grad_type(value_type)
    if not isinstance(node, ast.Name):
        raise _fail(lowerer, node, f"'grad' of {name}() receives the gradient: pass a variable "
                                   f"(e.g. grad = {want!r}())")
    got = _value(lowerer, node).type
    if got != want:
        from kernelc.types_query import type_repr

        raise _fail(lowerer, node, f"Incompatible gradient type, expected {type_repr(want)}, "
                                   f"got {type_repr(got)} (the 'grad' variable of {name}())")
    return node.id


def _ijk(lowerer, name: str, bound: dict[str, ast.expr]) -> list[Val]:
    return [_scalar(lowerer, name, p, bound[p], T.int32) for p in "ijk"]


# ---- the forms -----------------------------------------------------------------------------


def _sampled_type(lowerer, name: str, bound: dict, fixed: T.Type | None) -> T.Type:
    return fixed if fixed is not None else _dtype(lowerer, name, bound["dtype"])


def _mode(lowerer, name: str, bound: dict) -> Val:
    if "sampling_mode" not in bound:  # volume_sample_i: nearest only
        return Val(lowerer.b.const(0, T.int32))
    return _scalar(lowerer, name, "sampling_mode", bound["sampling_mode"], T.int32)


def _sample(lowerer, name: str, bound: dict, fixed: T.Type | None) -> Val:
    vl, _ = _lang()
    t = _sampled_type(lowerer, name, bound, fixed)
    args = [_id(lowerer, name, bound["id"]), _vec3(lowerer, name, "uvw", bound["uvw"]),
            _mode(lowerer, name, bound), _zero(lowerer, t),
            Val(lowerer.b.const(GRID_TYPES[t], T.int32))]
    return lowerer.call_func(vl.sample, args)


def _sample_grad(lowerer, name: str, bound: dict, fixed: T.Type | None) -> Val:
    vl, _ = _lang()
    t = _sampled_type(lowerer, name, bound, fixed)
    volume = _id(lowerer, name, bound["id"])
    uvw = _vec3(lowerer, name, "uvw", bound["uvw"])
    mode = _mode(lowerer, name, bound)
    target = _grad_target(lowerer, name, bound["grad"], t)
    args = [volume, uvw, mode, _zero(lowerer, t), _zero(lowerer, grad_type(t)),
            Val(lowerer.b.const(GRID_TYPES[t], T.int32))]
    value, grad = lowerer.call_func(vl.sample_grad, args).items
    lowerer.assign_name(target, grad, bound["grad"])
    return value


def _lookup(lowerer, name: str, bound: dict, fixed: T.Type | None) -> Val:
    vl, _ = _lang()
    t = _sampled_type(lowerer, name, bound, fixed)
    args = [_id(lowerer, name, bound["id"]), *_ijk(lowerer, name, bound), _zero(lowerer, t),
            Val(lowerer.b.const(GRID_TYPES[t], T.int32))]
    return lowerer.call_func(vl.lookup, args)


def _store_value(lowerer, name: str, node: ast.expr, fixed: T.Type | None) -> Val:
    v = _value(lowerer, node)
    if fixed is not None:
        if v.type != fixed and not (v.weak and isinstance(fixed, T.ScalarType)):
            raise _fail(lowerer, node, f"'value' of {name}() must be a {fixed!r}, got a "
                                       f"{v.type!r}")
        return lowerer.coerce(v, fixed)
    if v.weak and isinstance(v.type, T.ScalarType):  # literals: int32 or float32, as Warp
        return lowerer.coerce(v, T.float32 if v.type.is_float else T.int32)
    if v.type not in GRID_TYPES:
        raise _fail(lowerer, node, f"unsupported volume type {v.type!r} for {name}(): the "
                                   f"value must be a {_SUPPORTED}")
    return v


def _store(lowerer, name: str, bound: dict, fixed: T.Type | None) -> Val:
    from kernelc.spatial.volume_lang import RawView

    vl, _ = _lang()
    volume = _id(lowerer, name, bound["id"])
    ijk = _ijk(lowerer, name, bound)
    value = _store_value(lowerer, name, bound["value"], fixed)
    grid_type = Val(lowerer.b.const(GRID_TYPES[value.type], T.int32))
    address = lowerer.call_func(vl.store_address, [volume, *ijk, grid_type]).value
    b = lowerer.b
    found = b.op(OpCode.NE, (address, b.const(0, T.uint64)), T.bool_)
    with b.region() as then:
        view = b.op(OpCode.BUILD, (address, b.const(1, T.int64),
                                   b.const(value.type.size, T.int64)), RawView._kc_type)
        target = b.op(OpCode.CALL, (view,), T.ArrayType(value.type, 1), "bitcast")
        b.append(ir.ArrayStore(b.loc, target, (b.const(0, T.int32),), value.value))
    b.append(ir.If(b.loc, found, tuple(then), ()))
    return Val(b.const(0, T.int32))


def _index_data(lowerer, name: str, bound: dict) -> tuple[Val, Val, T.Type]:
    data = _value(lowerer, bound["voxel_data"])
    t = data.type
    if not isinstance(t, T.ArrayType) or t.dtype not in GRID_TYPES:
        raise _fail(lowerer, bound["voxel_data"], f"'voxel_data' of {name}() must be an array "
                                                  f"of {_SUPPORTED}, got a {t!r}")
    background = _value(lowerer, bound["background"])
    if background.type != t.dtype and not (background.weak
                                           and isinstance(t.dtype, T.ScalarType)):
        raise _fail(lowerer, bound["background"], f"the voxel_data array and the background "
                                                  f"value of {name}() must have the same dtype:"
                                                  f" {t.dtype!r} and {background.type!r}")
    return data, lowerer.coerce(background, t.dtype), t.dtype


def _sample_index(lowerer, name: str, bound: dict, fixed: T.Type | None) -> Val:
    _, il = _lang()
    volume = _id(lowerer, name, bound["id"])
    uvw = _vec3(lowerer, name, "uvw", bound["uvw"])
    mode = _mode(lowerer, name, bound)
    data, background, t = _index_data(lowerer, name, bound)
    return lowerer.call_func(il.sample_index,
                             [volume, uvw, mode, data, background, _zero(lowerer, t)])


def _sample_grad_index(lowerer, name: str, bound: dict, fixed: T.Type | None) -> Val:
    _, il = _lang()
    volume = _id(lowerer, name, bound["id"])
    uvw = _vec3(lowerer, name, "uvw", bound["uvw"])
    mode = _mode(lowerer, name, bound)
    data, background, t = _index_data(lowerer, name, bound)
    target = _grad_target(lowerer, name, bound["grad"], t)
    args = [volume, uvw, mode, data, background, _zero(lowerer, t),
            _zero(lowerer, grad_type(t))]
    value, grad = lowerer.call_func(il.sample_grad_index, args).items
    lowerer.assign_name(target, grad, bound["grad"])
    return value


def _lookup_index(lowerer, name: str, bound: dict, fixed: T.Type | None) -> Val:
    _, il = _lang()
    args = [_id(lowerer, name, bound["id"]), *_ijk(lowerer, name, bound)]
    return lowerer.call_func(il.lookup_index, args)


def _voxel_count(lowerer, name: str, bound: dict, fixed: T.Type | None) -> Val:
    _, il = _lang()
    return lowerer.call_func(il.voxel_count, [_id(lowerer, name, bound["id"])])


def _transform(lowerer, name: str, bound: dict, fixed: T.Type | None) -> Val:
    vl, _ = _lang()
    param = "uvw" if "uvw" in bound else "xyz"
    args = [_id(lowerer, name, bound["id"]), _vec3(lowerer, name, param, bound[param], True)]
    return lowerer.call_func(getattr(vl, name.removeprefix("volume_")), args)


_LOWERINGS = {"sample": _sample, "sample_grad": _sample_grad, "lookup": _lookup,
              "store": _store, "sample_index": _sample_index,
              "sample_grad_index": _sample_grad_index, "lookup_index": _lookup_index,
              "voxel_count": _voxel_count, "transform": _transform}


def _handler(name: str):
    _, kind, fixed = _FORMS[name]

    def lower(lowerer, node: ast.Call) -> Val:
        return _LOWERINGS[kind](lowerer, name, _bind(name, node), fixed)

    lower.__name__ = f"_{name}"
    return lower


SPECIAL_FORMS = {name: _handler(name) for name in __all__}
