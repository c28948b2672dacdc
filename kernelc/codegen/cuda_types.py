"""C types of kernelc types in generated CUDA-C, and the definitions of the aggregate ones.

Scalars map to kernelc's fixed-width typedefs (values: bool and float, float16 and bfloat16
computed in float; memory: one byte per bool, the 16 bits of a half or a bfloat16).
Aggregates are small C structs, defined once per distinct type a module uses, so values copy
by assignment and pass by value:

    struct kc_vec3_float32 { float v[3]; };          vectors (quaternions, transforms too)
    struct kc_mat3x3_float32 { float v[9]; };        matrices, row-major: v[r * cols + c]
    struct kc_struct_Body_1a2b3c4d { ... };          @kc.struct classes, fields in order
    struct kc_indexed_2d_1a2b3c4d { ... };           indexed arrays: their record's fields

Components and fields are held in memory form, so one struct serves both as a value and as
an array element, and its layout equals `kernelc.types.StructType`'s (checked with
`static_assert`s in the generated source).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

from kernelc import types as T
from kernelc.ir import nodes as ir

# C type of a scalar value held in a variable (float16 and bfloat16 are computed in float).
VALUE_C = {
    "bool": "bool", "int8": "kc_int8", "int16": "kc_int16", "int32": "kc_int32",
    "int64": "kc_int64", "uint8": "kc_uint8", "uint16": "kc_uint16", "uint32": "kc_uint32",
    "uint64": "kc_uint64", "float16": "float", "bfloat16": "float", "float32": "float",
    "float64": "double",
}
# C type of a scalar in memory: one byte per bool, the 16 bits of a half or a bfloat16.
STORAGE_C = {**VALUE_C, "bool": "kc_uint8", "float16": "kc_uint16", "bfloat16": "kc_uint16"}

AGGREGATES = (T.VectorType, T.MatrixType, T.StructType, T.IndexedArrayType)
# Types laid out as C structs of named fields (`m_<name>` members).
_RECORDS = (T.StructType, T.IndexedArrayType)


class UnsupportedError(Exception):
    """Something in the IR that the CUDA backend cannot lower (the caller adds the place)."""


def _clean(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _signature(t: T.Type) -> str:
    """A text that determines a type's C layout and identity (for struct names)."""
    if isinstance(t, T.StructType):
        fields = ",".join(f"{n}:{_signature(f)}" for n, f in t.fields)
        return f"{t.name}{{{fields}}}"
    if isinstance(t, T.IndexedArrayType):
        return f"indexedarray({_signature(t.dtype)},{t.ndim})"
    return repr(t) if not isinstance(t, T.ArrayType) else f"array({_signature(t.dtype)},{t.ndim})"


def _vector_name(t: T.VectorType) -> str:
    return f"kc_vec{t.length}_{t.dtype.name}"


def _matrix_name(t: T.MatrixType) -> str:
    return f"kc_mat{t.shape[0]}x{t.shape[1]}_{t.dtype.name}"


def _struct_name(t: T.StructType) -> str:
    digest = hashlib.sha1(_signature(t).encode()).hexdigest()[:8]
    return f"kc_struct_{_clean(t.name)}_{digest}"


def _indexed_name(t: T.IndexedArrayType) -> str:
    digest = hashlib.sha1(_signature(t).encode()).hexdigest()[:8]
    return f"kc_indexed_{t.ndim}d_{digest}"


_AGGREGATE_NAMES: dict[type, Callable[[T.Type], str]] = {
    T.VectorType: _vector_name, T.MatrixType: _matrix_name, T.StructType: _struct_name,
    T.IndexedArrayType: _indexed_name,
}


def aggregate_name(t: T.Type) -> str:
    """The C struct name of a vector, matrix or struct type (deterministic)."""
    namer = _AGGREGATE_NAMES.get(type(t))
    if namer is None:
        raise UnsupportedError(f"values of type {t!r} are not supported by the CUDA backend")
    return namer(t)


def value_type(t: T.Type) -> str:
    """The C type of an SSA value or slot of type `t`."""
    if isinstance(t, T.ScalarType):
        return VALUE_C[t.name]
    if isinstance(t, T.ArrayType):
        return array_type(t)
    return aggregate_name(t)


def storage_type(t: T.Type) -> str:
    """The C type of a value of type `t` in memory (array element, struct field, parameter)."""
    if isinstance(t, T.ScalarType):
        return STORAGE_C[t.name]
    if isinstance(t, T.ArrayType):
        return array_type(t)
    return aggregate_name(t)


def array_type(t: T.ArrayType) -> str:
    return f"kc_array<{storage_type(t.dtype)}, {t.ndim}>"


def member(t: T.Type, index: int) -> str:
    """The C member access (`.v[3]`, `.m_mass`) of element `index` of aggregate `t`."""
    if isinstance(t, _RECORDS):
        return f".m_{t.fields[index][0]}"
    if isinstance(t, T.TupleType):
        return f".f{index}"
    return f".v[{index}]"


def element_type(t: T.Type, index: int) -> T.Type:
    """The type of element `index` of a struct, tuple, vector or matrix."""
    if isinstance(t, _RECORDS):
        return t.fields[index][1]
    if isinstance(t, T.TupleType):
        return t.elements[index]
    return t.dtype


# ---- definitions ---------------------------------------------------------------------------


def _children(t: T.Type) -> Iterable[T.Type]:
    """The types `t`'s C definition refers to."""
    if isinstance(t, _RECORDS):
        return (f for _, f in t.fields)
    if isinstance(t, (T.ArrayType, T.LocalArrayType)):
        return (t.dtype,)
    if isinstance(t, T.TupleType):
        return t.elements
    return ()


def _module_types(module: ir.Module) -> Iterable[T.Type]:
    for fn in (*module.funcs, module.kernel):
        yield from (p.type for p in fn.params)
        yield from fn.return_types
        yield from (s.type for s in fn.slots)
        for stmt in ir.walk(fn.body):
            if isinstance(stmt, ir.Op) and stmt.result is not None:
                yield stmt.result.type


def _definition(t: T.Type) -> str:
    name = aggregate_name(t)
    if isinstance(t, _RECORDS):
        body = " ".join(f"{storage_type(f)} m_{n};" for n, f in t.fields) or "char padding;"
        label = getattr(t, "name", "indexedarray")
        offsets = "".join(
            f'\nstatic_assert(__builtin_offsetof({name}, m_{n}) == {off}, "{label}.{n}");'
            for (n, _), off in zip(t.fields, t.offsets)
        )
    else:
        body = f"{STORAGE_C[t.dtype.name]} v[{t.count}];"
        offsets = ""
    if offsets:
        # NVRTC 13.0 has no __builtin_offsetof; the host harness (g++) still checks them.
        offsets = f"\n#ifndef __CUDACC_RTC__{offsets}\n#endif"
    return (f"struct {name} {{ {body} }};\n"
            f"static_assert(sizeof({name}) == {t.size} && alignof({name}) == "
            f'{T.alignment(t)}, "layout of {t!r}");{offsets}')


def type_definitions(module: ir.Module) -> str:
    """The C definitions of every aggregate type `module` uses, each after the types it
    contains (empty when it uses none)."""
    done: set[str] = set()
    out: list[str] = []

    def visit(t: T.Type) -> None:
        for child in _children(t):
            visit(child)
        if isinstance(t, AGGREGATES):
            name = aggregate_name(t)
            if name not in done:
                done.add(name)
                out.append(_definition(t))

    for t in _module_types(module):
        visit(t)
    if not out:
        return ""
    return "// ---- aggregate types ----\n" + "\n".join(out) + "\n"
