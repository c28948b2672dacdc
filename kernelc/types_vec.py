"""Vector, matrix, quaternion and transform types with Warp's names, and their host values.

On the host, `kc.vec3(1, 2, 3)` returns a `HostValue`: a NumPy array (shape (3,), or (r, c)
for matrices) that remembers its kernelc type, so it can be passed as a kernel argument,
indexed, used in NumPy arithmetic and read back with `np.asarray`.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.types_bf16 import number_dtype, round_float32, storage

# Warp's dtype suffixes.
_SUFFIXES: dict[str, T.ScalarType] = {
    "h": T.float16, "f": T.float32, "d": T.float64, "b": T.int8, "ub": T.uint8,
    "s": T.int16, "us": T.uint16, "i": T.int32, "ui": T.uint32, "l": T.int64, "ul": T.uint64,
}
_FLOATS = {"h": T.float16, "f": T.float32, "d": T.float64}


def vector(length: Any, dtype: Any = T.float32) -> Any:
    """The vector type of `length` components of `dtype` (`vector(3, float)` is `vec3`).

    `length=typing.Any`, `dtype=typing.Any` or a constrained dtype (`kc.Float`, ...) give
    a generic annotation for funcs and kernels, matched per call or launch, as in Warp."""
    scalar = _component_type(dtype, "vector")
    if length is Any:
        return _generic("vec", (None,), scalar)
    if not isinstance(length, (int, np.integer)) or isinstance(length, bool) or length < 0:
        raise TypeError(f"vector length must be a non-negative int, got {length!r}")
    if not isinstance(scalar, T.ScalarType):
        return _generic("vec", (int(length),), scalar)
    length = int(length)
    return _NAMED.get(("vec", length, scalar)) or T.VectorType(length, scalar)


def matrix(shape: tuple[Any, Any], dtype: Any = T.float32) -> Any:
    """The matrix type of `shape` (rows, cols) of `dtype` (`matrix((3, 3), float)` is `mat33`).

    `typing.Any` for either size or the dtype, or a constrained dtype, give a generic
    annotation (see `vector`)."""
    scalar = _component_type(dtype, "matrix")
    shape = tuple(shape)
    if len(shape) != 2 or not all(n is Any or (isinstance(n, (int, np.integer))
                                               and not isinstance(n, bool) and n >= 0)
                                  for n in shape):
        raise TypeError(f"matrix shape must be two non-negative ints, got {shape!r}")
    if Any in shape or not isinstance(scalar, T.ScalarType):
        return _generic("mat", tuple(None if n is Any else int(n) for n in shape), scalar)
    shape = (int(shape[0]), int(shape[1]))
    return _NAMED.get(("mat", shape, scalar)) or T.MatrixType(shape, scalar)


def _component_type(dtype: Any, what: str) -> Any:
    """A vector or matrix dtype: a scalar type, a scalar constraint, or None (`Any`)."""
    if dtype is Any:
        return None
    scalar = T.as_type(dtype)
    from kernelc.typevars import ScalarConstraint

    if not isinstance(scalar, (T.ScalarType, ScalarConstraint)):
        raise TypeError(f"{what} components must be a scalar type, got {dtype!r}")
    return scalar


def _generic(kind: str, shape: tuple[int | None, ...], dtype: Any) -> T.Type:
    from kernelc.typevars import AggregateConstraint

    return AggregateConstraint(kind, shape, dtype)


def quaternion(dtype: Any = T.float32) -> T.VectorType:
    scalar = T.as_type(dtype)
    return T.VectorType(4, scalar, _name("quat", scalar), kind="quat")


def transformation(dtype: Any = T.float32) -> T.VectorType:
    scalar = T.as_type(dtype)
    return T.VectorType(7, scalar, _name("transform", scalar), kind="transform")


def _name(base: str, scalar: T.ScalarType) -> str:
    if scalar == T.float32:
        return base
    suffix = next(k for k, v in _SUFFIXES.items() if v == scalar)
    return base + suffix


_NAMED: dict[tuple, T.Type] = {}
TYPES: dict[str, T.Type] = {}  # every public type name -> type


def _define() -> None:
    for suffix, scalar in _SUFFIXES.items():
        for n in (2, 3, 4):
            t = T.VectorType(n, scalar, f"vec{n}" if scalar == T.float32 else f"vec{n}{suffix}")
            _NAMED[("vec", n, scalar)] = t
            TYPES[f"vec{n}{suffix}"] = t
    for suffix, scalar in _FLOATS.items():
        for n in (2, 3, 4):
            t = T.MatrixType((n, n), scalar, f"mat{n}{n}" if scalar == T.float32 else
                             f"mat{n}{n}{suffix}")
            _NAMED[("mat", (n, n), scalar)] = t
            TYPES[f"mat{n}{n}{suffix}"] = t
        TYPES[f"quat{suffix}"] = quaternion(scalar)
        TYPES[f"transform{suffix}"] = transformation(scalar)
        sv = T.VectorType(6, scalar, _name("spatial_vector", scalar))
        sm = T.MatrixType((6, 6), scalar, _name("spatial_matrix", scalar))
        _NAMED[("vec", 6, scalar)] = sv
        _NAMED[("mat", (6, 6), scalar)] = sm
        TYPES[f"spatial_vector{suffix}"] = sv
        TYPES[f"spatial_matrix{suffix}"] = sm
    for base in ("vec2", "vec3", "vec4", "mat22", "mat33", "mat44", "quat", "transform",
                 "spatial_vector", "spatial_matrix"):
        TYPES[base] = TYPES[base + "f"]


_define()


# ---- host values ---------------------------------------------------------------------------


_NUMPY_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
              "div": operator.truediv, "mod": operator.mod, "matmul": operator.matmul}


def _binary(name: str, reflected: bool = False):
    def op(self, other):
        a, b = (other, self) if reflected else (self, other)
        if self._kc_type is None:  # no longer a vector or matrix (reshaped to 3-d, ...)
            return _NUMPY_OPS[name](np.asarray(a), np.asarray(b))
        from kernelc.runtime import host_call

        if name == "matmul":
            return host_call.matmul(a, b, reflected)
        return host_call.binary(name, a, b, reflected)

    op.__name__ = f"__{'r' if reflected else ''}{name}__"
    return op


def _unsupported(symbol: str):
    def op(self, *args):
        raise TypeError(f"operator '{symbol}' is not defined for kernelc vectors and matrices "
                        f"(as in Warp); use np.asarray(value) for NumPy's element-wise version")

    return op


class HostValue(np.ndarray):
    """A vector or matrix value on the host: a NumPy array tagged with its kernelc type.

    Python's operators have Warp's meaning, which is the kernel meaning: `+ -` between
    values of one type, `* /` with a scalar, `*` (and `@` on matrices) as the matrix,
    matrix-vector, vector-matrix, quaternion (Hamilton) or transform product, `==`/`!=` as
    one bool. They are computed by the builtins (`add`, `mul`, ...) with kernel semantics;
    NumPy functions (`np.multiply(a, b)`, `np.asarray(v) * w`) keep NumPy's meaning.
    """

    _kc_base: T.Type | None = None

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("sub"), _binary("sub", True)
    __mul__, __rmul__ = _binary("mul"), _binary("mul", True)
    __truediv__, __rtruediv__ = _binary("div"), _binary("div", True)
    __mod__, __rmod__ = _binary("mod"), _binary("mod", True)
    __matmul__, __rmatmul__ = _binary("matmul"), _binary("matmul", True)
    # Warp's values have no in-place operators: `v += w` rebinds `v` to a new value.
    __iadd__, __isub__, __imul__ = __add__, __sub__, __mul__
    __itruediv__, __imod__, __imatmul__ = __truediv__, __mod__, __matmul__
    __floordiv__ = __rfloordiv__ = __ifloordiv__ = _unsupported("//")
    __pow__ = __rpow__ = __ipow__ = _unsupported("**")
    __lt__, __le__, __gt__, __ge__ = (_unsupported(s) for s in ("<", "<=", ">", ">="))
    __abs__ = _unsupported("abs")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy functions see plain arrays and return them, as with Warp's values
        (`np.sin(v)`, `np.float32(2) * v`, `positions - v` are NumPy arrays)."""
        inputs = tuple(np.asarray(x) if isinstance(x, HostValue) else x for x in inputs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(np.asarray(o) if isinstance(o, HostValue) else o for o in out)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __neg__(self) -> Any:
        if self._kc_type is None:
            return np.negative(self)
        from kernelc.runtime.host_call import negate

        return negate(self)

    def __pos__(self) -> Any:
        return self.copy()

    def __eq__(self, other: Any) -> bool:  # type: ignore[override]
        """Warp's equality: same shape and equal components (any sequence, any dtype).

        A NumPy array of another shape compares element-wise, as NumPy does with Warp's
        values (`positions == kc.vec3(0.0)` is a boolean array)."""
        if isinstance(other, np.ndarray) and not isinstance(other, HostValue) \
                and other.shape != self.shape:
            return NotImplemented
        try:
            values = np.asarray(other)
        except Exception:  # ragged sequences and the like are simply not equal
            return False
        if values.shape != self.shape or values.dtype.kind not in "biuf":
            return False
        return bool(np.all(np.asarray(self) == values))

    def __ne__(self, other: Any) -> bool:  # type: ignore[override]
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        return True  # as Warp's vectors and matrices (sequences that are never empty)

    def __str__(self) -> str:
        """As Warp prints its values: `[1.0, 2.0, 3.5]`, a matrix one row per line."""
        if self.ndim == 1:
            return "[" + ", ".join(str(x) for x in _components(self)) + "]"
        if self.ndim == 2:
            return "[" + ",\n ".join(str(HostValue.__str__(row)) for row in self) + "]"
        return str(np.asarray(self))

    def __repr__(self) -> str:
        """Warp's spelling: `vec3f([1.0, 2.0, 3.5])`, `mat22f([[1.0, 2.0], [3.0, 4.0]])`."""
        t = self._kc_type
        if t is None or self.ndim not in (1, 2):
            return repr(np.asarray(self))
        if self.ndim == 1:
            body = ", ".join(repr(x) for x in _components(self))
        else:
            body = ", ".join("[" + ", ".join(repr(x) for x in _components(row)) + "]"
                             for row in self)
        return f"{_class_name(t)}([{body}])"

    def __getitem__(self, key: Any) -> Any:
        out = super().__getitem__(key)
        if isinstance(out, HostValue):  # a row or slice: the class of what it now is
            if out.ndim == 2 and out.size == 0:
                out = out.reshape(0, 0)  # an empty matrix slice is 0 x 0, as in kernels
            t = out._kc_type
            wanted = host_class(t) if t is not None else HostValue
            if type(out) is not wanted:
                out = out.view(wanted)
        return out

    def __array_finalize__(self, obj: Any) -> None:
        self._kc_base = getattr(obj, "_kc_base", None)

    @property
    def _kc_type(self) -> T.Type | None:
        """The kernelc type (kept while the shape and dtype still fit it)."""
        base = self._kc_base
        if base is not None and self.shape == _shape_of(base) \
                and self.dtype == number_dtype(base.dtype):
            return base
        try:
            scalar = T.from_numpy_dtype(self.dtype)
        except TypeError:
            return None
        if self.ndim == 1:
            return vector(self.shape[0], scalar)
        if self.ndim == 2:
            return matrix(self.shape, scalar)
        return None

    def _component(self, i: int) -> Any:
        if self.ndim != 1 or i >= self.shape[0]:
            raise self._no_attribute("xyzw"[i])
        return self[i]

    def _set_component(self, i: int, value: Any) -> None:
        if self.ndim != 1 or i >= self.shape[0]:
            raise self._no_attribute("xyzw"[i])
        self[i] = value

    def __getattr__(self, name: str) -> Any:
        raise self._no_attribute(name)  # (only reached when the name is not found)

    def __setattr__(self, name: str, value: Any) -> None:
        if len(name) > 1 and set(name) <= set("xyzw"):  # a swizzle: read-only, as in Warp
            raise self._no_attribute(name)
        super().__setattr__(name, value)

    def _no_attribute(self, name: str) -> AttributeError:
        t = self._kc_type
        owner = _class_name(t) if t is not None else type(self).__name__
        return AttributeError(f"'{owner}' object has no attribute '{name}'")

    x = property(lambda self: self._component(0), lambda self, v: self._set_component(0, v))
    y = property(lambda self: self._component(1), lambda self, v: self._set_component(1, v))
    z = property(lambda self: self._component(2), lambda self, v: self._set_component(2, v))
    w = property(lambda self: self._component(3), lambda self, v: self._set_component(3, v))

    def _transform_part(self, name: str) -> None:
        if self.shape != (7,):  # only transforms have p and q
            raise self._no_attribute(name)

    @property
    def p(self) -> HostValue:
        """A transform's translation."""
        self._transform_part("p")
        return host_value(TYPES["vec3"] if self.dtype == np.float32 else
                          vector(3, T.from_numpy_dtype(self.dtype)), (self[:3],))

    @p.setter
    def p(self, value: Any) -> None:
        self._transform_part("p")
        self[:3] = value

    @property
    def q(self) -> HostValue:
        """A transform's rotation quaternion."""
        self._transform_part("q")
        return host_value(quaternion(T.from_numpy_dtype(self.dtype)), (self[3:7],))

    @q.setter
    def q(self, value: Any) -> None:
        self._transform_part("q")
        self[3:7] = value


def _components(row: np.ndarray) -> list[Any]:
    """The components as Warp's values give them: Python numbers for float32, int32 and
    bool, NumPy scalars for the other types."""
    if row.dtype in (np.float32, np.int32, np.bool_):
        return np.asarray(row).tolist()
    return list(np.asarray(row))


def _class_name(t: T.VectorType | T.MatrixType) -> str:
    """Warp's class name of a value type: `vec3f`, `mat22d`, `quatf`, `vec3ub`."""
    if t.name:
        return t.name + "f" if t.dtype == T.float32 else t.name
    if t.dtype == T.bfloat16:  # no named types, but Warp's short names: vec3bf, mat22bf
        from kernelc.types_query import type_repr

        return type_repr(t)
    if isinstance(t, T.MatrixType):
        return f"matrix(shape={t.shape}, dtype={t.dtype!r})"
    return f"vector(length={t.length}, dtype={t.dtype!r})"


def _shape_of(t: T.Type) -> tuple[int, ...]:
    return (t.length,) if isinstance(t, T.VectorType) else tuple(t.shape)


def _flatten(args: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for a in args:
        # (`__array__`: a Torch tensor or JAX array of components, as Warp takes them)
        if isinstance(a, (list, tuple, np.ndarray)) or hasattr(a, "__array__"):
            out.extend(np.asarray(a).reshape(-1).tolist())
        else:
            out.append(a)
    return out


@functools.cache
def host_class(t: T.VectorType | T.MatrixType) -> type:
    """The class of `t`'s host values, `type(kc.vec3f(1.0))`: a HostValue subclass with
    Warp's class name (`vec3f`, `transformd`) that constructs as `t` does, and stands for
    `t` wherever a type is taken (`types_equal(type(v), kc.vec3f)`, `type(v)(0.0)`)."""

    def construct(cls: type, *args: Any, **kwargs: Any) -> HostValue:
        return t(*args, **kwargs)

    return type(_class_name(t), (HostValue,),
                {"__new__": construct, "_kc_class_type": t, "__module__": "kernelc.types"})


def host_value(t: T.VectorType | T.MatrixType, args: tuple[Any, ...]) -> HostValue:
    """A host value of type `t` from components, one fill value, nothing (zero) or sequences."""
    comps = _flatten(args)
    count = t.count
    if not comps:
        comps = [0] * count
    elif len(comps) == 1:
        comps = comps * count
    if len(comps) != count:
        raise TypeError(f"{t!r} takes {count} components, got {len(comps)}")
    data = _numbers(comps, t.dtype).reshape(_shape_of(t))
    value = data.view(host_class(t))
    value._kc_base = t
    return value


def host_transform(t: T.VectorType, args: tuple[Any, ...], kwargs: dict[str, Any]) -> HostValue:
    """`kc.transform(p, q)`, `kc.transform(p=..., q=...)`, seven components, or nothing: the
    identity, as in Warp (a missing `p` is zero, a missing `q` the identity rotation)."""
    unknown = [k for k in kwargs if k not in ("p", "q")]
    if unknown:  # Python's wording for a call's keyword mistakes
        raise TypeError(f"got an unexpected keyword argument '{unknown[0]}'")
    if len(args) > 2 and kwargs:  # the components already give p and q
        raise TypeError(f"multiple values for argument '{next(iter(kwargs))}'")
    if len(args) == 1 and not kwargs and not _is_sequence(args[0]) and not _is_number(args[0]):
        raise TypeError("Invalid argument in transformation constructor: expected a scalar "
                        f"value, got {type(args[0]).__name__}")
    if len(args) > 2 or (len(args) == 1 and not kwargs and (
            not _is_sequence(args[0]) or len(_flatten(args)) == t.count)):
        return host_value(t, args)  # seven components, a sequence of seven, or a fill
    given = dict(zip(("p", "q"), args))
    for name, value in kwargs.items():
        if name in given:
            raise TypeError(f"multiple values for argument '{name}'")
        given[name] = value
    parts = []
    for name, default in (("p", (0, 0, 0)), ("q", (0, 0, 0, 1))):
        value = given.get(name, default)
        if not _is_sequence(value):
            raise TypeError(f"Invalid argument '{name}' in transformation constructor: "
                            f"expected a sequence, got {type(value).__name__}")
        comps = _flatten((value,))
        if len(comps) != len(default):
            raise TypeError(f"{t!r}(): '{name}' must have {len(default)} components, "
                            f"got {len(comps)}")
        parts += comps
    return host_value(t, tuple(parts))


def _is_sequence(value: Any) -> bool:
    """A list, tuple or array of components (NumPy, or a Torch tensor / JAX array)."""
    return isinstance(value, (list, tuple, np.ndarray)) or \
        (hasattr(value, "__array__") and getattr(value, "ndim", 0) > 0)


def _is_number(value: Any) -> bool:
    """A Python or NumPy number or bool: what fills every component."""
    return isinstance(value, (int, float, np.number, np.bool_))


def _numbers(comps: Any, scalar: T.ScalarType) -> np.ndarray:
    """Components as host numbers of `scalar`: bfloat16 ones as float32, rounded to it."""
    if scalar == T.bfloat16:
        return round_float32(np.array(comps, dtype=np.float32))
    try:
        return np.array(comps, dtype=scalar.np_dtype)
    except OverflowError:  # ints out of range wrap, as in Warp (`vec3ub(1, -2, 3)`: 254)
        mask = (1 << scalar.bits) - 1
        wrapped = [int(c) & mask for c in np.array(comps, dtype=object).reshape(-1)]
        return np.array(wrapped, dtype=np.uint64).astype(scalar.np_dtype)


def as_host_array(t: T.Type, value: Any) -> np.ndarray | None:
    """`value` as a NumPy array of `t`'s shape and dtype in memory (bfloat16 components as
    their bits), or None when it does not fit."""
    try:
        data = storage(value, t.dtype)
    except (TypeError, ValueError):
        return None
    if data.shape != _shape_of(t):
        return None
    return data
