"""Mesh and BVH queries in kernels: Warp's `mesh_*` and `bvh_*` names.

Every name is a special form so that it can take Warp's keyword arguments and defaults, check
its arguments with errors at the offending argument, offer Warp's older out-parameter
overloads (`mesh_query_point(id, p, d, inside, face, u, v)` assigns the variables passed,
when a face is found), advance a query in place (`bvh_query_next(query, index)`), and serve
as the iterable of `for index in mesh_query_aabb(...)`. Each form calls a func of
`kernelc.spatial.mesh_lang`, `mesh_sign_lang` or `bvh_lang`, so the queries themselves are
ordinary kernelc code that every backend compiles.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.builder import Val
from kernelc.frontend.lower_expr import PyObj
from kernelc.frontend.special import kernel_only, lower_query_while
from kernelc.ir import nodes as ir

_REQUIRED = object()
_VEC3 = T.VectorType(3, T.float32)
_FLT_MAX = 3.4028234663852886e38  # bvh_query_next's default max_dist: no bound


@dataclass(frozen=True)
class _Form:
    """One overload: parameters (name, kind, default), the func it calls as "module.func",
    for an out-parameter overload the result fields the out parameters receive, and for a
    query that searches for a face the search func ("module.func", given the first
    `search_args` arguments), whose face the query func gets as its last argument.

    The search is a call of its own at the kernel's level so that a backward pass replays
    it once and differentiates only the query's computation on the face found."""

    params: tuple[tuple[str, str, Any], ...]
    func: str
    outs: tuple[str, ...] = ()
    search: str = ""
    search_args: int = 3

    @property
    def least(self) -> int:
        return sum(1 for p in self.params if p[2] is _REQUIRED)

    def signature(self, name: str) -> str:
        return f"{name}({', '.join(p[0] for p in self.params)})"


def _p(spec: str) -> tuple[tuple[str, str, Any], ...]:
    """Parameters from "name:kind, name:kind=default" (defaults are Python literals)."""
    out = []
    for part in spec.split(","):
        head, _, default = part.strip().partition("=")
        name, kind = head.split(":")
        out.append((name, kind, _REQUIRED if not default else ast.literal_eval(default)))
    return tuple(out)


_POINT = "id:id, point:vec3, max_dist:float"
_SIGN_OUT = "inside:out_float, face:out_int, bary_u:out_float, bary_v:out_float"
_NO_SIGN_OUT = "face:out_int, bary_u:out_float, bary_v:out_float"
_RAY_OUT = ("t:out_float, bary_u:out_float, bary_v:out_float, sign:out_float, "
            "normal:out_vec3, face:out_int")

_CLOSEST = "mesh_lang.closest_face_index"
_FURTHEST = "mesh_sign_lang.furthest_face_index"


def _point_forms(func: str, extra: str = "", search: str = _CLOSEST,
                 point: str = _POINT, out: str = _SIGN_OUT,
                 outs: tuple[str, ...] = ("sign", "face", "u", "v")) -> tuple[_Form, _Form]:
    """A point query and its out-parameter overload."""
    tail = f", {extra}" if extra else ""
    return (_Form(_p(point + tail), func, search=search),
            _Form(_p(f"{point}, {out}{tail}"), func, outs, search=search))


_FORMS: dict[str, tuple[_Form, ...]] = {
    "mesh_query_point": _point_forms("mesh_sign_lang.query_point"),
    "mesh_query_point_no_sign": _point_forms("mesh_sign_lang.query_point_no_sign",
                                             out=_NO_SIGN_OUT, outs=("face", "u", "v")),
    "mesh_query_furthest_point_no_sign": _point_forms(
        "mesh_sign_lang.query_furthest_point_no_sign", search=_FURTHEST,
        point="id:id, point:vec3, min_dist:float", out=_NO_SIGN_OUT, outs=("face", "u", "v")),
    "mesh_query_point_sign_normal": _point_forms("mesh_sign_lang.query_point_sign_normal",
                                                 "epsilon:float=1e-3"),
    "mesh_query_point_sign_winding_number": _point_forms(
        "mesh_sign_lang.query_point_sign_winding_number",
        "accuracy:float=2.0, threshold:float=0.5"),
    "mesh_query_point_sign_parity": _point_forms(
        "mesh_sign_lang.query_point_sign_parity", "n_sample:int=1, perturbation_scale:float=0.1"),
    "mesh_query_ray": (
        _Form(_p("id:id, start:vec3, dir:vec3, max_t:float, root:int=-1"),
              "mesh_lang.hit_on_face", search="mesh_lang.first_hit_face", search_args=5),
        _Form(_p(f"id:id, start:vec3, dir:vec3, max_t:float, {_RAY_OUT}, root:int=-1"),
              "mesh_lang.hit_on_face", ("t", "u", "v", "sign", "normal", "face"),
              search="mesh_lang.first_hit_face", search_args=5)),
    "mesh_query_ray_anyhit": (
        _Form(_p("id:id, start:vec3, dir:vec3, max_t:float, root:int=-1"), "mesh_lang.any_hit"),),
    "mesh_query_ray_count_intersections": (
        _Form(_p("id:id, start:vec3, dir:vec3, root:int=-1"), "mesh_lang.count_hits"),),
    "mesh_query_aabb": (_Form(_p("id:id, low:vec3, high:vec3"), "mesh_lang.mesh_aabb_query"),),
    "mesh_query_sphere": (
        _Form(_p("id:id, center:vec3, radius:float"), "mesh_lang.mesh_sphere_query"),),
    "mesh_eval_position": (
        _Form(_p("id:id, face:int, bary_u:float, bary_v:float"), "mesh_lang.eval_position"),),
    "mesh_eval_velocity": (
        _Form(_p("id:id, face:int, bary_u:float, bary_v:float"), "mesh_lang.eval_velocity"),),
    "mesh_eval_face_normal": (_Form(_p("id:id, face:int"), "mesh_lang.eval_face_normal"),),
    "mesh_get_point": (_Form(_p("id:id, index:int"), "mesh_lang.get_point"),),
    "mesh_get_velocity": (_Form(_p("id:id, index:int"), "mesh_lang.get_velocity"),),
    "mesh_get_index": (_Form(_p("id:id, index:int"), "mesh_lang.get_index"),),
    "mesh_get_bvh": (_Form(_p("id:id"), "mesh_lang.get_bvh"),),
    "mesh_get": (_Form(_p("id:id"), "mesh_arrays_lang.get_arrays"),),
    "bvh_query_aabb": (
        _Form(_p("id:id, low:vec3, high:vec3, root:int=-1"), "bvh_lang.bvh_aabb_query"),),
    "bvh_query_ray": (
        _Form(_p("id:id, start:vec3, dir:vec3, root:int=-1"), "bvh_lang.bvh_ray_query"),),
    "bvh_query_sphere": (
        _Form(_p("id:id, center:vec3, radius:float, root:int=-1"), "bvh_lang.bvh_sphere_query"),),
    "bvh_query_capsule": (
        _Form(_p("id:id, start:vec3, dir:vec3, radius:float, root:int=-1"),
              "bvh_lang.bvh_capsule_query"),),
    "bvh_get_group_root": (_Form(_p("id:id, group:int"), "bvh_lang.group_root"),),
    "mesh_get_group_root": (_Form(_p("id:id, group:int"), "bvh_lang.group_root"),),
}

# Queries advanced in place: name -> (query struct, "module.func" of the step).
_NEXT_FORMS = {
    "bvh_query_next": ("bvh_lang.BvhQuery", "bvh_lang.bvh_query_step"),
    "mesh_query_next": ("mesh_lang.MeshQueryAABB", "mesh_lang.mesh_query_step"),
    "mesh_query_aabb_next": ("mesh_lang.MeshQueryAABB", "mesh_lang.mesh_query_step"),
}
# The forms whose value a for loop iterates, and the step that advances it.
_LOOP_FORMS = {"bvh_query_aabb": "bvh_query_next", "bvh_query_ray": "bvh_query_next",
               "bvh_query_sphere": "bvh_query_next", "bvh_query_capsule": "bvh_query_next",
               "mesh_query_aabb": "mesh_query_next",
               "mesh_query_sphere": "mesh_query_next"}

_DOCS = {
    "mesh_query_point": "Closest face to `point` strictly within `max_dist`, with an "
                        "inside/outside sign from three axis rays: a `MeshQueryPoint`.",
    "mesh_query_point_no_sign": "Closest face to `point` (no sign, the fastest).",
    "mesh_query_furthest_point_no_sign": "Furthest point of the mesh from `point`, "
                                         "strictly beyond `min_dist`.",
    "mesh_query_point_sign_normal": "Closest face, signed by the angle-weighted "
                                    "pseudo-normal of the closest feature.",
    "mesh_query_point_sign_winding_number": "Closest face, signed by the winding number "
                                            "(needs `Mesh(support_winding_number=True)`).",
    "mesh_query_point_sign_parity": "Closest face, signed by the parity of crossings of "
                                    "`n_sample` perturbed rays.",
    "mesh_query_ray": "Closest face hit by the ray `start + t dir`, 0 <= t < max_t: a "
                      "`MeshQueryRay`.",
    "mesh_query_ray_anyhit": "Whether the ray hits any face with 0 <= t < max_t.",
    "mesh_query_ray_count_intersections": "Number of faces the ray hits with t >= 0.",
    "mesh_query_aabb": "A query of the faces whose box overlaps [low, high]: iterate it.",
    "mesh_query_sphere": "A query of the faces within `radius` of `center`: iterate it.",
    "mesh_query_next": "Advances a mesh query; stores the next face in `index`.",
    "mesh_query_aabb_next": "Advances a mesh query; stores the next face in `index`.",
    "mesh_eval_position": "u * p0 + v * p1 + (1 - u - v) * p2 on face `face`.",
    "mesh_eval_velocity": "The velocities interpolated like `mesh_eval_position`.",
    "mesh_eval_face_normal": "The unit normal of face `face` (counter-clockwise front).",
    "mesh_get_point": "The point at face-vertex slot `index` (points[indices[index]]).",
    "mesh_get_velocity": "The velocity at face-vertex slot `index`.",
    "mesh_get_index": "The vertex index at face-vertex slot `index` (indices[index]).",
    "mesh_get_bvh": "The id of the mesh's BVH over its faces, for `bvh_query_*`.",
    "mesh_get": "The mesh's arrays: `m.points`, `m.velocities` (empty without velocities) "
                "and `m.indices` (3 per face).",
    "bvh_query_aabb": "A query of the items whose box overlaps [low, high]: iterate it.",
    "bvh_query_ray": "A query of the items whose box the ray `start + t dir` meets.",
    "bvh_query_sphere": "A query of the items whose box lies within `radius` of `center`.",
    "bvh_query_capsule": "A query of the items whose box, grown by `radius`, the segment "
                         "`start + t dir` meets (t <= max_dist of `bvh_query_next`).",
    "bvh_query_next": "Advances a BVH query; stores the next item in `index` (`max_dist` "
                      "bounds a ray or capsule query's entry distance).",
    "bvh_get_group_root": "The root node of the group's subtree in a BVH built with "
                          "`groups=`, for a query's `root`; -1 (the whole tree) if no box "
                          "is in the group.",
    "mesh_get_group_root": "The root node of the group's subtree in a mesh built with "
                           "`groups=`, for a query's `root`; -1 if no face is in the group.",
}


__all__ = sorted(_DOCS)
globals().update({name: kernel_only(name, _DOCS[name]) for name in __all__})


def _resolve(path: str) -> Any:
    module, name = path.split(".")
    return getattr(importlib.import_module(f"kernelc.spatial.{module}"), name)


def _struct_type(path: str) -> T.StructType:
    return _resolve(path)._kc_type


# ---- arguments -----------------------------------------------------------------------------


def _fail(lowerer, node: ast.AST, message: str) -> KernelError:
    return KernelError(message, lowerer.source.loc(node), lowerer.ctx.kernel_name)


def _value(lowerer, name: str, param: str, kind: str, node: ast.expr) -> Val:
    v = lowerer.as_val(lowerer.visit(node), node)
    t = v.type
    scalar = isinstance(t, T.ScalarType)
    if kind == "id":
        if t == T.uint64 or (v.weak and scalar and t.is_int):
            return lowerer.coerce(v, T.uint64)
        raise _fail(lowerer, node, f"{name}() takes the mesh or BVH as its uint64 id "
                                   f"(mesh.id), got a {t!r} for '{param}'")
    if kind == "vec3":
        if t == _VEC3:
            return v
        raise _fail(lowerer, node, f"'{param}' of {name}() must be a vec3 (float32), got {t!r}")
    want = T.float32 if kind == "float" else T.int32
    if scalar and (t == want or (v.weak and (t.is_int or want == T.float32))):
        return lowerer.coerce(v, want)
    raise _fail(lowerer, node, f"'{param}' of {name}() must be a {want!r}, got {t!r}")


def _bind(lowerer, name: str, node: ast.Call) -> tuple[_Form, dict[str, ast.expr]]:
    """The overload taking this many arguments, and each parameter's argument node."""
    given = len(node.args) + len(node.keywords)
    forms = _FORMS[name]
    form = next((f for f in forms if f.least <= given <= len(f.params)), None)
    if form is None:
        options = " or ".join(f.signature(name) for f in forms)
        raise KernelError(f"{name}() takes {options}; got {given} arguments")
    names = [p[0] for p in form.params]
    bound = dict(zip(names, node.args))
    for kw in node.keywords:
        if kw.arg not in names or kw.arg in bound:
            what = "an unexpected" if kw.arg not in names else "a repeated"
            raise _fail(lowerer, kw.value, f"{name}() got {what} argument '{kw.arg}'")
        bound[kw.arg] = kw.value
    missing = [p[0] for p in form.params if p[2] is _REQUIRED and p[0] not in bound]
    if missing:
        raise KernelError(f"{name}() is missing argument '{missing[0]}': "
                          f"{form.signature(name)}")
    return form, bound


def _out_slot(lowerer, name: str, param: str, kind: str, node: ast.expr) -> ir.Slot:
    want = {"out_float": T.float32, "out_int": T.int32, "out_vec3": _VEC3}[kind]
    slot = lowerer.names.get(node.id) if isinstance(node, ast.Name) else None
    if not isinstance(slot, ir.Slot):
        raise _fail(lowerer, node, f"'{param}' of {name}() receives a result: pass a variable "
                                   f"assigned before the call (e.g. {param} = {want!r}(0))")
    if slot.type != want:
        raise _fail(lowerer, node, f"'{param}' of {name}() must be a {want!r} variable, "
                                   f"got a {slot.type!r}")
    return slot


def _lower_form(lowerer, node: ast.Call, name: str) -> Val:
    form, bound = _bind(lowerer, name, node)
    args, outs = [], []
    for param, kind, default in form.params:
        arg = bound.get(param)
        if kind.startswith("out_"):
            outs.append(_out_slot(lowerer, name, param, kind, arg))
        elif arg is None:
            want = T.float32 if kind == "float" else T.int32
            args.append(lowerer.coerce(lowerer.from_python(default, None), want))
        else:
            args.append(_value(lowerer, name, param, kind, arg))
    if form.search:
        args.append(lowerer.call_func(_resolve(form.search), args[:form.search_args]))
    result = lowerer.call_func(_resolve(form.func), args)
    if not form.outs:
        return result
    # Warp's out-parameter overload: the variables change only when something was found.
    struct = result.type
    found = Val(lowerer.component(result.value, struct.field_index("result")))
    with lowerer.b.region() as then:
        for field, slot in zip(form.outs, outs):
            lowerer.b.store(slot, lowerer.component(result.value, struct.field_index(field)))
    lowerer.b.append(ir.If(lowerer.b.loc, found.value, tuple(then), ()))
    return found


# ---- queries advanced in place, and loops over them ----------------------------------------


def _lower_next(lowerer, node: ast.Call, name: str) -> Val:
    struct_path, step = _NEXT_FORMS[name]
    bvh = name == "bvh_query_next"
    params = "(query, index, max_dist)" if bvh else "(query, index)"
    keywords_ok = all(bvh and k.arg == "max_dist" for k in node.keywords)
    count = len(node.args) + len(node.keywords)
    if not keywords_ok or len(node.args) < 2 or count > (3 if bvh else 2):
        raise KernelError(f"{name}() takes {params}")
    for arg in node.args[:2]:
        if not isinstance(arg, ast.Name):
            raise _fail(lowerer, arg, f"{name}() advances its query and index in place: "
                                      "pass two variables")
    query = lowerer.as_val(lowerer.visit(node.args[0]), node.args[0])
    if query.type != _struct_type(struct_path):
        source = "bvh_query_aabb/ray/sphere/capsule()" if bvh else "mesh_query_aabb/sphere()"
        raise _fail(lowerer, node.args[0], f"{name}() needs a query from {source}, got a "
                                           f"{query.type!r}")
    index = lowerer.as_val(lowerer.visit(node.args[1]), node.args[1])
    if index.type != T.int32:
        raise _fail(lowerer, node.args[1], f"the index of {name}() must be an int32 variable "
                                           f"(e.g. index = int(0)), got a {index.type!r}")
    args = [query, index]
    if bvh:
        given = node.args[2:] + [k.value for k in node.keywords]
        args.append(_value(lowerer, name, "max_dist", "float", given[0]) if given
                    else Val(lowerer.b.const(_FLT_MAX, T.float32)))
    found, new_query, new_index = lowerer.call_func(_resolve(step), args).items
    lowerer.assign_name(node.args[0].id, new_query, node.args[0])
    lowerer.assign_name(node.args[1].id, new_index, node.args[1])
    return found


def loop_lowering(lowerer, iterable: ast.expr):
    """How to lower `for index in iterable` when `iterable` is a mesh or BVH query (a
    query-making call, or a variable holding a query), else None."""
    if isinstance(iterable, ast.Call):
        callee = lowerer.visit(iterable.func)
        name = getattr(callee.obj, "_kc_special", None) if isinstance(callee, PyObj) else None
        return _lower_query_loop if name in _LOOP_FORMS else None
    if isinstance(iterable, ast.Name) and _query_slot(lowerer, iterable) is not None:
        return _lower_query_loop
    return None


def _query_slot(lowerer, node: ast.Name):
    bound = lowerer.names.get(node.id)
    if isinstance(bound, ir.Slot):
        for struct_path, step in _NEXT_FORMS.values():
            if bound.type == _struct_type(struct_path):
                return bound, step
    return None


def _lower_query_loop(lowerer, node: ast.For) -> None:
    """`for index in query: body` as a while loop whose condition advances the query.
    Looping over a query variable advances that variable, as in Warp."""
    b = lowerer.b
    found_slot = _query_slot(lowerer, node.iter) if isinstance(node.iter, ast.Name) else None
    if found_slot is None:
        callee = lowerer.visit(node.iter.func)
        name = callee.obj._kc_special
        query = _lower_form(lowerer, node.iter, name)
        step = _NEXT_FORMS[_LOOP_FORMS[name]][1]
        slot = b.new_slot("query", query.type)
        b.store(slot, query.value)
    else:
        slot, step = found_slot
    extra = ((Val(b.const(_FLT_MAX, T.float32)),) if step == "bvh_lang.bvh_query_step"
             else ())
    lower_query_while(lowerer, node, slot, _resolve(step), extra)


def _handler(name: str):
    if name in _NEXT_FORMS:
        return lambda lowerer, node: _lower_next(lowerer, node, name)
    return lambda lowerer, node: _lower_form(lowerer, node, name)


SPECIAL_FORMS = {name: _handler(name) for name in __all__}
