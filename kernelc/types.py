"""The type vocabulary shared by the front end, the IR, the backends and the runtime.

Types are immutable, hashable values. The scalar types double as the public names
(`kc.float32`, `kc.int64`, ...): calling one on the host converts a Python value to the
matching NumPy scalar, as Warp's scalar types do.
"""

from __future__ import annotations

import builtins
import math
import typing
from dataclasses import dataclass, field
from typing import Any as _Any

import numpy as np

from kernelc import types_bf16 as _bf16
from kernelc.types_host_scalar import HostScalar, host_scalar_class


class Type:
    """Base of every kernelc type."""

    __slots__ = ()

    @property
    def size(self) -> int:
        """Size in bytes of one value in memory."""
        raise NotImplementedError

    @property
    def __name__(self) -> str:
        """The name Warp's type classes have (`float32`, `vec3f`, `mat22d`), for code that
        names things after a dtype (`f"kernel_{dtype.__name__}"`)."""
        from kernelc.types_query import class_name

        return class_name(self)

    # `kc.vec3 | None` in a host function's annotations, as with Warp's type classes.
    def __or__(self, other: object) -> object:
        import typing

        return typing.Union[self, other]  # noqa: UP007 (this is `|` itself)

    def __ror__(self, other: object) -> object:
        import typing

        return typing.Union[other, self]  # noqa: UP007


@dataclass(frozen=True, slots=True)
class ScalarType(Type):
    """A scalar: `kind` is "int", "uint", "float" or "bool"; `bits` its width."""

    name: str
    kind: str
    bits: int

    @property
    def size(self) -> int:
        return 1 if self.kind == "bool" else self.bits // 8

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind in ("int", "float")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(_NP_NAMES.get(self.name, self.name))

    def __call__(self, value: _Any = 0) -> _Any:
        """Host-side conversion, e.g. `kc.float32(1.5)` -> `numpy.float32(1.5)` (of the
        subclass that also marks it a `HostScalar`); `kc.float32()` is zero, as in Warp."""
        make = _HOST_SCALARS.get(self.name, self.np_dtype.type)
        try:
            return make(value)
        except OverflowError:
            if not self.is_int or not isinstance(value, (int, np.integer)):
                raise
        # An int out of range wraps to the type's width, as a C cast does (`uint8(-1)` is
        # 255), which is what Warp's builtins see for such a value.
        wrapped = int(value) & ((1 << self.bits) - 1)
        if self.is_signed and wrapped >= 1 << (self.bits - 1):
            wrapped -= 1 << self.bits
        return make(wrapped)

    def __instancecheck__(self, obj: _Any) -> bool:
        """`isinstance(x, kc.float32)`, as with Warp's scalar classes: true for this type's
        host values (NumPy scalars of its dtype), false for Python numbers."""
        if self == bfloat16 or isinstance(obj, _HOST_SCALARS["bfloat16"]):
            return self == bfloat16 and isinstance(obj, _HOST_SCALARS["bfloat16"])
        return isinstance(obj, np.generic) and obj.dtype == self.np_dtype

    def __repr__(self) -> str:
        return self.name

    # Warp's type classes are ctypes arrays; code written for Warp reads these attributes.
    @property
    def _length_(self) -> int:
        return 1

    @property
    def _type_(self) -> type:
        from kernelc.types_query import type_ctype

        return type_ctype(self)


class _CompositeAttrs:
    """The attributes of Warp's vector and matrix classes (ctypes arrays) that code written
    for Warp reads: `_length_` components, `_wp_scalar_type_`, `_type_` (ctypes)."""

    __slots__ = ()

    @property
    def _length_(self) -> int:
        return self.count

    @property
    def _wp_scalar_type_(self) -> ScalarType:
        return self.dtype

    @property
    def _type_(self) -> type:
        from kernelc.types_query import type_ctype

        return type_ctype(self.dtype)


@dataclass(frozen=True, slots=True)
class VectorType(_CompositeAttrs, Type):
    """A fixed-length vector of scalars (`vec3` = VectorType(3, float32))."""

    length: int
    dtype: ScalarType
    # The display name does not take part in equality: `vector(3, float32)` is `vec3`.
    name: str = field(default="", compare=False)
    # "vec", or "quat" / "transform": same layout, different arithmetic (as in Warp).
    kind: str = "vec"

    @property
    def size(self) -> int:
        return self.length * self.dtype.size

    @property
    def count(self) -> int:
        """Number of scalar components."""
        return self.length

    def __call__(self, *args: _Any, **kwargs: _Any) -> _Any:
        """Host-side construction, e.g. `kc.vec3(1, 2, 3)` -> a small NumPy array;
        transforms also take `p=` and `q=`, and are the identity when given nothing."""
        from kernelc.types_vec import host_transform, host_value

        if self.kind == "transform":
            return host_transform(self, args, kwargs)
        if kwargs:
            raise TypeError(f"{self!r}() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        return host_value(self, args)

    def __instancecheck__(self, obj: _Any) -> bool:
        """`isinstance(v, kc.vec3)`: `v` is a host value of this type (and kind: a quaternion
        is not a `vec4`), as with Warp's vector classes."""
        return _is_host_value_of(obj, self)

    def __repr__(self) -> str:
        return self.name or f"vector({self.length}, {self.dtype.name})"

    @property
    def _shape_(self) -> tuple[int]:
        return (self.length,)


@dataclass(frozen=True, slots=True)
class MatrixType(_CompositeAttrs, Type):
    """A row-major matrix of scalars (`mat33` = MatrixType((3, 3), float32))."""

    shape: tuple[int, int]
    dtype: ScalarType
    name: str = field(default="", compare=False)

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1] * self.dtype.size

    @property
    def count(self) -> int:
        """Number of scalar components (row-major order)."""
        return self.shape[0] * self.shape[1]

    def __call__(self, *args: _Any) -> _Any:
        """Host-side construction, e.g. `kc.mat22(1, 2, 3, 4)` -> a (2, 2) NumPy array."""
        from kernelc.types_vec import host_value

        return host_value(self, args)

    def __instancecheck__(self, obj: _Any) -> bool:
        """`isinstance(m, kc.mat22)`: `m` is a host value of this type."""
        return _is_host_value_of(obj, self)

    def __repr__(self) -> str:
        return self.name or f"matrix({self.shape}, {self.dtype.name})"

    @property
    def _shape_(self) -> tuple[int, int]:
        return self.shape

    @property
    def _wp_row_type_(self) -> VectorType:
        from kernelc.types_vec import vector

        return vector(self.shape[1], self.dtype)

    @property
    def _wp_col_type_(self) -> VectorType:
        from kernelc.types_vec import vector

        return vector(self.shape[0], self.dtype)


def _is_host_value_of(obj: _Any, t: Type) -> bool:
    from kernelc.types_vec import HostValue

    return isinstance(obj, HostValue) and obj._kc_type == t


@dataclass(frozen=True, slots=True)
class StructType(Type):
    """A `@kc.struct` class: named fields in C layout (natural alignment, as Warp's ctypes)."""

    name: str
    fields: tuple[tuple[str, Type], ...]
    # The Python class; two classes with equal fields are still different types.
    cls: _Any = field(default=None, repr=False)

    @property
    def offsets(self) -> tuple[int, ...]:
        return _struct_layout(self)[0]

    @property
    def size(self) -> int:
        return _struct_layout(self)[1]

    def field_index(self, name: str) -> int:
        for i, (n, _) in enumerate(self.fields):
            if n == name:
                return i
        raise KeyError(name)

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        """Equal to the same struct's type, and to its `@kc.struct` class (so that
        `a.dtype == Particle` holds for an array of them, as in Warp)."""
        if isinstance(other, StructType):
            return (self.name, self.fields, self.cls) == (other.name, other.fields, other.cls)
        return self.cls is not None and other is self.cls


_LAYOUTS: dict[int, tuple[StructType, tuple[int, ...], int]] = {}


def _struct_layout(t: StructType) -> tuple[tuple[int, ...], int]:
    """A struct's field offsets and size, computed once per struct type (launches pack
    struct arguments every time)."""
    found = _LAYOUTS.get(id(t))
    if found is not None and found[0] is t:
        return found[1], found[2]
    out, pos = [], 0
    for _, f in t.fields:
        pos = -(-pos // alignment(f)) * alignment(f)
        out.append(pos)
        pos += f.size
    if not t.fields:
        size = 1  # C++'s size of an empty struct: one padding byte on every backend
    else:
        size = -(-pos // alignment(t)) * alignment(t)
    _LAYOUTS[id(t)] = (t, tuple(out), size)
    return tuple(out), size


def alignment(t: Type) -> int:
    """C alignment of a type in memory (arrays inside structs hold 64-bit fields)."""
    if isinstance(t, ScalarType):
        return t.size
    if isinstance(t, (VectorType, MatrixType)):
        return t.dtype.size
    if isinstance(t, StructType):
        return max((alignment(f) for _, f in t.fields), default=1)
    return 8


@dataclass(frozen=True, slots=True)
class ArrayType(Type):
    """A strided view of device memory, as seen by a kernel."""

    dtype: Type
    ndim: int

    @property
    def size(self) -> int:
        # data pointer + shape + byte strides, all 64-bit.
        return 8 + 16 * self.ndim

    def __repr__(self) -> str:
        return f"array(dtype={self.dtype!r}, ndim={self.ndim})"


@dataclass(frozen=True, slots=True)
class IndexedArrayType(Type):
    """An array seen through per-dimension index arrays (Warp's `indexedarray`).

    In memory (and in the IR) it is a record of `fields`: the data array; per dimension k
    a 1-d int32 array `indices{k}` whose shape is the size of dimension k (its pointer is
    null where dimension k is not indexed); and `indexed`, a bit mask of the indexed
    dimensions. The front end lowers every access to loads of these parts (see
    `kernelc/builtins/indexed_array.py`), so backends only lay the record out.
    """

    dtype: Type | None
    ndim: int

    @property
    def fields(self) -> tuple[tuple[str, Type], ...]:
        index = ArrayType(int32, 1)
        return (("data", ArrayType(self.dtype, self.ndim)),  # type: ignore[arg-type]
                *((f"indices{k}", index) for k in range(self.ndim)), ("indexed", int32))

    @property
    def offsets(self) -> tuple[int, ...]:
        data = 8 + 16 * self.ndim
        return (0, *(data + 24 * k for k in range(self.ndim)), data + 24 * self.ndim)

    @property
    def size(self) -> int:
        return 16 + 40 * self.ndim  # the mask's 4 bytes padded to the 8-byte alignment

    def __repr__(self) -> str:
        return f"indexedarray(dtype={self.dtype!r}, ndim={self.ndim})"


def is_generic(t: Type | None) -> bool:
    """Whether a parameter type still needs specialising: `typing.Any` (None), or an array
    or indexed array of any dtype."""
    return t is None or (isinstance(t, (ArrayType, IndexedArrayType)) and t.dtype is None)


@dataclass(frozen=True, slots=True)
class LocalArrayType(Type):
    """A fixed-size array living in a thread's registers/stack (`kc.zeros` in a kernel),
    `length` elements of `dtype` (any type an array holds)."""

    dtype: Type
    length: int

    @property
    def size(self) -> int:
        return self.length * self.dtype.size

    def __repr__(self) -> str:
        return f"local_array({self.dtype!r}, {self.length})"


@dataclass(frozen=True, slots=True)
class FixedArraySpec:
    """What a fixed-size array returned by a func is: its element type and shape."""

    dtype: Type
    shape: tuple[int, ...]

    @property
    def length(self) -> int:
        return math.prod(self.shape)


def fixedarray(dtype: _Any = _Any, shape: int | tuple[int, ...] | None = None) -> StructType:
    """The type of a fixed-size array a func returns (Warp's `fixedarray`), for a return
    annotation: `-> kc.fixedarray(shape=(2, 3), dtype=float)`. A func returns its local
    array by value, as a record of its elements the caller copies into its own."""
    t = as_type(dtype)
    if t is None or dtype is _Any:
        raise TypeError(f"fixedarray() needs a concrete dtype, got {dtype!r}")
    if shape is None:
        raise TypeError("fixedarray() needs a shape, e.g. fixedarray(shape=(2, 3), dtype=float)")
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if not dims or len(dims) > 4 or not all(isinstance(d, (int, np.integer)) and d > 0
                                            for d in dims):
        raise TypeError(f"fixedarray() needs one to four positive dimensions, got {shape!r}")
    spec = FixedArraySpec(t, tuple(int(d) for d in dims))
    name = "fixedarray_" + "x".join(str(d) for d in spec.shape)
    fields = tuple((f"e{k}", t) for k in range(spec.length))
    return StructType(f"{name}_{_clean_name(t)}", fields, spec)


def contiguous_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Row-major byte strides of a dense block of `shape`. A zero-length axis zeroes the
    strides of the axes before it, as in Warp (`(1, 0)` of float32 has strides (0, 4))."""
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def holds_arrays(t: Type) -> bool:
    """Whether `t` is an array or indexed array, or a struct with one among its fields
    (nested ones too)."""
    if isinstance(t, (ArrayType, IndexedArrayType)):
        return True
    return isinstance(t, StructType) and any(holds_arrays(f) for _, f in t.fields)


def fixed_array_spec(t: Type) -> FixedArraySpec | None:
    """The element type and shape of `t` if it is a func's returned fixed-size array."""
    return t.cls if isinstance(t, StructType) and isinstance(t.cls, FixedArraySpec) else None


def _clean_name(t: Type) -> str:
    return "".join(c if c.isalnum() else "_" for c in repr(t))


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    """Several values at once: a func returning more than one value, `kc.tid()` in N-D."""

    elements: tuple[Type, ...]

    @property
    def size(self) -> int:
        return builtins.sum(t.size for t in self.elements)

    def __repr__(self) -> str:
        return "tuple(" + ", ".join(repr(t) for t in self.elements) + ")"


@dataclass(frozen=True, slots=True)
class VoidType(Type):
    @property
    def size(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "void"


void = VoidType()

bool_ = ScalarType("bool", "bool", 8)
int8 = ScalarType("int8", "int", 8)
int16 = ScalarType("int16", "int", 16)
int32 = ScalarType("int32", "int", 32)
int64 = ScalarType("int64", "int", 64)
uint8 = ScalarType("uint8", "uint", 8)
uint16 = ScalarType("uint16", "uint", 16)
uint32 = ScalarType("uint32", "uint", 32)
uint64 = ScalarType("uint64", "uint", 64)
# Warp's type for Mesh, Volume and BVH ids in parameters, fields and arrays: a uint64.
handle = uint64
float16 = ScalarType("float16", "float", 16)
float32 = ScalarType("float32", "float", 32)
float64 = ScalarType("float64", "float", 64)
bfloat16 = ScalarType("bfloat16", "float", 16)

# NumPy's dtype of a scalar type in memory: its name, but bfloat16's 16 bits (types_bf16).
_NP_NAMES = {"bfloat16": "uint16"}

SCALAR_TYPES: tuple[ScalarType, ...] = (bool_, int8, int16, int32, int64, uint8, uint16, uint32,
                                        uint64, float16, bfloat16, float32, float64)


_HOST_SCALARS = {t.name: host_scalar_class(t) for t in SCALAR_TYPES
                 if not t.is_bool and t is not bfloat16}
_HOST_SCALARS["bfloat16"] = _bf16.host_scalar_class(HostScalar)
# (uint16 data is uint16: bfloat16 bits are read as such only where a dtype says so)
_BY_NP_DTYPE = {t.np_dtype: t for t in SCALAR_TYPES if t is not bfloat16}

# Python's own names used as annotations mean Warp's defaults.
_PYTHON_TYPES = {int: int32, float: float32, bool: bool_}


def from_numpy_dtype(dtype: _Any) -> ScalarType:
    """The scalar type of a NumPy dtype; raises TypeError for dtypes kernelc lacks."""
    try:
        found = np.dtype(dtype)
        return bfloat16 if is_ml_bfloat16(found) else _BY_NP_DTYPE[found]
    except (KeyError, TypeError, ValueError):  # NumPy raises ValueError for some classes
        raise TypeError(f"NumPy dtype {dtype!r} has no kernelc equivalent") from None


def is_ml_bfloat16(dtype: np.dtype) -> bool:
    """Whether `dtype` is the bfloat16 of the ml_dtypes package (as JAX's arrays have)."""
    return dtype.name == "bfloat16" and dtype.kind == "V" and dtype.itemsize == 2


def number_type(value: np.generic) -> ScalarType:
    """The scalar type of a NumPy number: its dtype's, but bfloat16 for `kc.bfloat16(x)`
    (a float32 underneath, as NumPy has no bfloat16)."""
    if isinstance(value, _HOST_SCALARS["bfloat16"]):
        return bfloat16
    return from_numpy_dtype(value.dtype)


def dtype_from_numpy(numpy_dtype: _Any) -> ScalarType:
    """The kernelc scalar type of a NumPy dtype (`np.float32` -> `kc.float32`), as in Warp.

    Raises:
        TypeError: The dtype has no kernelc equivalent (complex, strings, objects, ...).
    """
    return from_numpy_dtype(numpy_dtype)


def dtype_to_numpy(dtype: _Any) -> type:
    """The NumPy scalar type of a kernelc scalar type (`kc.float32` -> `np.float32`).

    Raises:
        TypeError: `dtype` is not a scalar type (Warp has no NumPy type for vectors either).
    """
    t = as_type(dtype)
    if not isinstance(t, ScalarType):
        raise TypeError(f"cannot convert {dtype!r} to a NumPy type")
    return t.np_dtype.type


def as_type(obj: _Any) -> Type | None:
    """The kernelc type an annotation or dtype argument denotes, or None."""
    if isinstance(obj, Type):
        return obj
    if isinstance(obj, type) and obj in _PYTHON_TYPES:
        return _PYTHON_TYPES[obj]
    class_type = getattr(obj, "_kc_class_type", None)  # `type(v)` of a host vector value
    if isinstance(obj, type) and isinstance(class_type, Type):
        return class_type
    kc_type = getattr(obj, "_kc_type", None)  # structs and array annotations carry one
    if isinstance(kc_type, Type):
        return kc_type
    if typing.get_origin(obj) is tuple:  # `tuple[vec3, float]`, `tuple[int, ...]`
        return _tuple_annotation(typing.get_args(obj))
    if isinstance(obj, (np.dtype, type)):
        try:
            return from_numpy_dtype(obj)
        except TypeError:
            return None
    return None


def _tuple_annotation(items: tuple) -> Type | None:
    if len(items) == 2 and items[1] is Ellipsis:
        from kernelc.typevars import TupleConstraint

        item = None if items[0] is _Any else as_type(items[0])
        return None if item is None and items[0] is not _Any else TupleConstraint(item)
    types = tuple(as_type(a) for a in items)
    return None if any(t is None for t in types) else TupleType(types)


def is_numeric(t: Type) -> bool:
    return isinstance(t, ScalarType) and not t.is_bool


def type_size_in_bytes(dtype: _Any) -> int:
    """Size in bytes of one value of `dtype` (Warp's `warp.types.type_size_in_bytes`)."""
    return as_type(dtype).size


def __getattr__(name: str) -> _Any:
    # `kc.types.vector(3, float)`, `kc.types.matrix((3, 3), float)` and the named vector and
    # matrix types live in kernelc.types_vec, Warp's introspection (`type_is_vector`, ...) in
    # kernelc.types_query (both build on this module).
    from kernelc import types_vec

    if name in ("vector", "matrix", "quaternion", "transformation"):
        return getattr(types_vec, name)
    if name in types_vec.TYPES:
        return types_vec.TYPES[name]
    from kernelc import types_query

    if name in types_query.NAMES:
        return getattr(types_query, name)
    raise AttributeError(f"module 'kernelc.types' has no attribute '{name}'")
