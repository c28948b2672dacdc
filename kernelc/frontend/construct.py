"""Construction of vectors, matrices, quaternions, transforms and structs inside kernels.

`kc.vec3(x, y, z)`, `kc.vec3(s)` (fill), `kc.vec3()` (zero), `kc.vec3d(v)` (component-wise
cast of another vector of the same length), `kc.mat22(a, b, c, d)`, `kc.transform(p, q)`,
`MyStruct()` (all fields zero), `MyStruct(a, b, c=...)` (every field given), and the keyword forms `kc.vector(..., length=, dtype=)`,
`kc.matrix(..., shape=, dtype=)` and `kc.identity(n=, dtype=)`.
"""

from __future__ import annotations

import ast
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend.builder import Val
from kernelc.ir.nodes import OpCode, Value
from kernelc.types_vec import matrix, quaternion, transformation, vector


class ConstructLowering:
    """The `construct` hook of ExprLowering for aggregate types."""

    def construct(self, target: T.Type, node: ast.Call):
        if isinstance(target, T.StructType):
            zero = self.b.op(OpCode.CONST, (), target, None)
            if not node.args and not node.keywords:
                return Val(zero)
            value = zero
            for index, (arg, field_type) in enumerate(self.struct_fields(target, node)):
                v = self.coerce(self.as_val(self.visit(arg), arg), field_type).value
                value = self.b.op(OpCode.INSERT, (value, v), target, index)
            return Val(value)
        if not isinstance(target, (T.VectorType, T.MatrixType)):
            return super().construct(target, node)
        if node.keywords:  # transform(p=..., q=...), as on the host
            return Val(self.transform_from_keywords(target, node))
        args = [self.as_val(self.visit(a), a) for a in node.args]
        return Val(self.build_aggregate(target, args))

    def struct_fields(self, target: T.StructType, node: ast.Call) -> list[tuple[ast.expr, T.Type]]:
        """`S(a, b, c=...)`: one expression per field, in field order (every field given,
        positionally or by name, as Warp's value constructor takes them)."""
        names = [name for name, _ in target.fields]
        given: dict[str, ast.expr] = {}
        if len(node.args) > len(names):
            raise KernelError(f"{target!r}() takes {len(names)} field values "
                              f"({', '.join(names)}) or none, got {len(node.args)}")
        given.update(zip(names, node.args))
        for kw in node.keywords:
            if kw.arg not in names:
                raise KernelError(f"{target!r} has no field '{kw.arg}' (fields: "
                                  f"{', '.join(names)})")
            if kw.arg in given:
                raise KernelError(f"{target!r}() got two values for field '{kw.arg}'")
            given[kw.arg] = kw.value
        missing = [name for name in names if name not in given]
        if missing:
            raise KernelError(f"{target!r}() takes a value for every field or none; missing "
                              f"{', '.join(missing)}")
        return [(given[name], field_type) for name, field_type in target.fields]

    def build_aggregate(self, target: T.VectorType | T.MatrixType, args: list[Val]) -> Value:
        n, dtype = target.count, target.dtype
        if not args:
            return self.b.op(OpCode.BUILD, [self.b.const(0, dtype)] * n, target)
        if len(args) == 1 and not isinstance(args[0].type, T.ScalarType):
            return self.convert_aggregate(target, args[0])
        if getattr(target, "kind", None) == "transform" and len(args) == 2:
            args = self.transform_parts(target, args)
        elif (getattr(target, "kind", None) == "quat" and len(args) == 2
              and isinstance(args[0].type, T.VectorType) and args[0].type.length == 3):
            # quat(v, w): the imaginary part from a 3-vector, then the real part
            args = [*self.components_of(vector(3, target.dtype), [args[0]], "(v, w)"),
                    args[1]]
        elif (target.name.startswith("spatial_vector") and len(args) == 2
              and all(isinstance(a.type, T.VectorType) for a in args)):
            args = self.spatial_parts(target, args)
        for a in args:  # a non-scalar component is reported before any count mismatch
            if not isinstance(a.type, T.ScalarType):
                self.coerce_component(a, dtype, target)  # raises, with a hint
        if len(args) == 1:
            fill = self.coerce_component(args[0], dtype, target)
            return self.b.op(OpCode.BUILD, [fill] * n, target)
        if len(args) != n:
            raise KernelError(f"{target!r}() takes {n} components, 1 (fill) or none, "
                              f"got {len(args)} arguments")
        parts = [self.coerce_component(a, dtype, target) for a in args]
        return self.b.op(OpCode.BUILD, parts, target)

    def coerce_component(self, v: Val, dtype: T.ScalarType, target: T.Type) -> Value:
        if not isinstance(v.type, T.ScalarType):
            what = "matrix" if isinstance(target, T.MatrixType) else "vector"
            hint = (" (use matrix_from_rows() or matrix_from_cols())"
                    if isinstance(target, T.MatrixType) else "")
            raise KernelError(f"{target!r}() takes scalar components, got a {v.type!r} "
                              f"for a {what}{hint}")
        if v.type != dtype and not v.weak:
            raise KernelError(f"{target!r}() needs {dtype!r} components, got {v.type!r}; "
                              f"cast explicitly, e.g. {dtype!r}(x)")
        return self.coerce(v, dtype).value

    def convert_aggregate(self, target: T.Type, v: Val) -> Value:
        src = v.type
        same_shape = (isinstance(src, T.VectorType) and isinstance(target, T.VectorType)
                      and src.length == target.length) or (
            isinstance(src, T.MatrixType) and isinstance(target, T.MatrixType)
            and src.shape == target.shape)
        if not same_shape:
            raise KernelError(f"cannot construct {target!r} from a {src!r}")
        if src == target:
            return v.value
        parts = [self.b.cast(self.b.op(OpCode.EXTRACT, (v.value,), src.dtype, i), target.dtype)
                 for i in range(target.count)]
        return self.b.op(OpCode.BUILD, parts, target)

    def transform_from_keywords(self, target: T.VectorType, node: ast.Call) -> Value:
        """`transform(p, q=...)`, `transform(p=...)`: a missing `p` is zero, a missing `q`
        the identity rotation."""
        given = dict(zip(("p", "q"), node.args))
        if len(node.args) > 2:
            raise KernelError(f"{target!r}() takes p and q when given by keyword")
        for k in node.keywords:
            if k.arg not in ("p", "q"):
                raise KernelError(f"{target!r}() got an unexpected keyword argument '{k.arg}'")
            if k.arg in given:
                raise KernelError(f"{target!r}() got multiple values for argument '{k.arg}'")
            given[k.arg] = k.value
        dtype = target.dtype
        zero, one = self.b.const(0, dtype), self.b.const(1, dtype)
        parts = []
        for name, part in (("p", vector(3, dtype)), ("q", quaternion(dtype))):
            if name in given:
                v = self.coerce(self.as_val(self.visit(given[name]), given[name]), part)
                parts += [self.b.op(OpCode.EXTRACT, (v.value,), dtype, i)
                          for i in range(part.length)]
            else:
                parts += [zero] * (part.length - 1) + [one if name == "q" else zero]
        return self.b.op(OpCode.BUILD, parts, target)

    def transform_parts(self, target: T.VectorType, args: list[Val]) -> list[Val]:
        """transform(p, q): the 3 + 4 components of a translation and a rotation."""
        p, q = args
        if not (isinstance(p.type, T.VectorType) and p.type.length == 3 and p.type.kind == "vec"
                and isinstance(q.type, T.VectorType) and q.type.kind == "quat"):
            raise KernelError(f"{target!r}(p, q) needs a 3-vector and a quaternion, "
                              f"got {p.type!r} and {q.type!r}")
        return self.components_of(target, (p, q), "(p, q)")

    def spatial_parts(self, target: T.VectorType, args: list[Val]) -> list[Val]:
        """spatial_vector(w, v): an angular and a linear 3-vector, as in Warp's kernels."""
        if not all(a.type.kind == "vec" and a.type.length == 3 for a in args):
            raise KernelError(f"{target!r}(w, v) needs two 3-vectors, got {args[0].type!r} "
                              f"and {args[1].type!r}")
        return self.components_of(target, args, "(w, v)")

    def components_of(self, target: T.VectorType, parts, form: str) -> list[Val]:
        out = []
        for v in parts:
            if v.type.dtype != target.dtype:
                raise KernelError(f"{target!r}{form} needs {target.dtype!r} components, "
                                  f"got {v.type!r}")
            out += [Val(self.b.op(OpCode.EXTRACT, (v.value,), v.type.dtype, i))
                    for i in range(v.type.length)]
        return out


# ---- keyword special forms -------------------------------------------------------------------


def _keywords(node: ast.Call, allowed: tuple[str, ...], what: str) -> dict[str, ast.expr]:
    out = {}
    for k in node.keywords:
        if k.arg not in allowed:
            raise KernelError(f"{what}() got an unexpected keyword argument '{k.arg}'")
        out[k.arg] = k.value
    return out


def _dtype_of(lowerer, kwargs: dict, args: list[Val]) -> T.ScalarType:
    if "dtype" in kwargs:
        t = lowerer.eval_annotation(kwargs["dtype"])
        if not isinstance(t, T.ScalarType):
            raise KernelError(f"dtype must be a scalar type, got {t!r}")
        return t
    strong = [a.type for a in args if not a.weak and isinstance(a.type, T.ScalarType)]
    if strong:
        return strong[0]
    if any(isinstance(a.type, T.ScalarType) and a.type.is_int for a in args) and not any(
            a.type.is_float for a in args if isinstance(a.type, T.ScalarType)):
        return T.int32
    return T.float32


def vector_form(lowerer, node: ast.Call):
    kwargs = _keywords(node, ("length", "dtype"), "vector")
    args = [lowerer.as_val(lowerer.visit(a), a) for a in node.args]
    dtype = _dtype_of(lowerer, kwargs, args)
    if "length" in kwargs:
        length = lowerer.static_int(kwargs["length"], "vector length")
    elif len(args) == 1 and isinstance(args[0].type, T.VectorType):
        length = args[0].type.length  # vector(v, dtype=float64): a cast, as in Warp
    elif args:
        length = len(args)
    else:
        raise KernelError("vector() needs components or length=")
    if not 1 <= length <= 64:
        raise KernelError(f"vector length must be between 1 and 64, got {length}")
    return Val(lowerer.build_aggregate(vector(length, dtype), args))


def matrix_form(lowerer, node: ast.Call):
    kwargs = _keywords(node, ("shape", "dtype"), "matrix")
    args = [lowerer.as_val(lowerer.visit(a), a) for a in node.args]
    dtype = _dtype_of(lowerer, kwargs, args)
    if "shape" not in kwargs and len(args) == 1 and isinstance(args[0].type, T.MatrixType):
        return Val(lowerer.build_aggregate(matrix(args[0].type.shape, dtype), args))  # a cast
    if "shape" not in kwargs:
        raise KernelError("matrix() needs shape=(rows, cols)")
    shape = lowerer.visit(kwargs["shape"])
    items = getattr(shape, "items", None)
    if items is None or len(items) != 2 or not all(isinstance(getattr(v, "const", None), int)
                                                   for v in items):
        raise KernelError("matrix() shape must be a tuple of two constant ints")
    return Val(lowerer.build_aggregate(matrix((items[0].const, items[1].const), dtype), args))


def identity_form(lowerer, node: ast.Call):
    from kernelc.builtins.matrix import identity_value

    kwargs = _keywords(node, ("n", "dtype"), "identity")
    if len(node.args) > 2:
        raise KernelError("identity() takes n and dtype")
    if node.args:
        kwargs.setdefault("n", node.args[0])
    if len(node.args) > 1:
        kwargs.setdefault("dtype", node.args[1])
    if "n" not in kwargs:
        raise KernelError("identity() needs n=")
    n = lowerer.static_int(kwargs["n"], "size of identity()")
    dtype = _dtype_of(lowerer, kwargs, [])
    if not 1 <= n <= 64:
        raise KernelError(f"identity() size must be between 1 and 64, got {n}")
    return Val(identity_value(lowerer.b, n, dtype))


def _typed_form(make: Any, what: str):
    """`kc.types.quaternion(..., dtype=)` / `kc.types.transformation(..., dtype=)` in a
    kernel: a value (zero, one fill value, components, or a cast of another one)."""

    def form(lowerer, node: ast.Call):
        kwargs = _keywords(node, ("dtype",), what)
        args = [lowerer.as_val(lowerer.visit(a), a) for a in node.args]
        if "dtype" in kwargs:
            dtype = _dtype_of(lowerer, kwargs, args)
        elif len(args) == 1 and isinstance(args[0].type, T.VectorType):
            dtype = args[0].type.dtype
        else:
            dtype = _dtype_of(lowerer, kwargs, args)
        return Val(lowerer.build_aggregate(make(dtype), args))

    return form


def _identity_of(what: str):
    """`kc.quat_identity(dtype=)` and `kc.transform_identity(dtype=)` in a kernel."""

    def form(lowerer, node: ast.Call):
        kwargs = _keywords(node, ("dtype",), what)
        if len(node.args) > 1 or (node.args and kwargs):
            raise KernelError(f"{what}() takes one argument, dtype")
        if node.args:
            kwargs["dtype"] = node.args[0]
        dtype = _dtype_of(lowerer, kwargs, []) if kwargs else T.float32
        if not dtype.is_float:
            raise KernelError(f"{what}() needs a float dtype, got {dtype!r}")
        t = quaternion(dtype) if what == "quat_identity" else transformation(dtype)
        parts = [lowerer.b.const(0, dtype)] * (t.length - 1) + [lowerer.b.const(1, dtype)]
        return Val(lowerer.b.op(OpCode.BUILD, parts, t))

    return form


SPECIAL_FORMS: dict[str, Any] = {
    "vector": vector_form, "matrix": matrix_form, "identity": identity_form,
    "quaternion": _typed_form(quaternion, "quaternion"),
    "transformation": _typed_form(transformation, "transformation"),
    "quat_identity": _identity_of("quat_identity"),
    "transform_identity": _identity_of("transform_identity"),
}


# ---- host side ----------------------------------------------------------------------------


def identity(n: int, dtype: Any = float) -> Any:
    """The n x n identity matrix (on the host a NumPy-backed matrix value)."""
    scalar = T.as_type(dtype)
    return matrix((n, n), scalar)(*(1 if r == c else 0 for r in range(n) for c in range(n)))


identity._kc_special = "identity"
quaternion._kc_special = "quaternion"
transformation._kc_special = "transformation"
vector._kc_special = "vector"
matrix._kc_special = "matrix"
