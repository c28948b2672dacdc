"""The parameter layout of a generated CUDA entry point, and packing of argument buffers.

The entry takes `kc_launch` by value, then each kernel parameter by value: arrays as
`kc_array<T, N>` = {T* data; int64 shape[N]; int64 strides[N]} (byte strides), scalars as
their C storage type (bool: 1 byte, float16 and bfloat16: their 16 bits), vectors, matrices
and structs as their C structs (`cuda_types.py`), laid out as `kernelc.types` describes
them. Offsets are those of a packed argument buffer in which every parameter is aligned to
its own alignment, which is how CUDA lays out kernel parameters (cuLaunchKernel with
CU_LAUNCH_PARAM_BUFFER_POINTER), so the same bytes serve the driver (per-parameter pointers
into the buffer) and the host harness.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kernelc import types as T
from kernelc.types_bf16 import to_bits

# struct format characters for scalar storage (little-endian, as on every CUDA platform)
_FORMATS = {
    "bool": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B",
    "uint16": "H", "uint32": "I", "uint64": "Q", "float16": "e", "bfloat16": "H",
    "float32": "f", "float64": "d",
}
LAUNCH_SIZE = 48  # int64 dims[4]; int64 size; kc_error* error
ERROR_SIZE = 80  # int32 code, check_id, ndim, pad; int64 index[4]; int64 shape[4]
MAX_DIMS = 4


@dataclass(frozen=True, slots=True)
class ArrayArg:
    """A strided array argument: device (or host) address, shape, byte strides."""

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ParamField:
    """One parameter of the entry point.

    Attributes:
        name: "launch" for the launch struct, else the kernel parameter's Python name.
        kind: "launch", "array", "scalar" or "aggregate" (vector, matrix, struct, indexed
            array).
        type: the kernelc type (None for the launch struct).
        c_type: the C type of the parameter in the generated source.
        size: size in bytes.
        align: alignment in bytes.
        offset: offset in the packed argument buffer.
    """

    name: str
    kind: str
    type: T.Type | None
    c_type: str
    size: int
    align: int
    offset: int


@dataclass(frozen=True, slots=True)
class ParamLayout:
    """The entry point's parameters in order; `size` is the packed buffer's size."""

    fields: tuple[ParamField, ...]
    size: int

    def pack(self, dims: Sequence[int], error_ptr: int, args: Sequence[Any]) -> bytes:
        """The packed argument buffer for a launch.

        Args:
            dims: the launch shape (1 to 4 extents).
            error_ptr: address of the `kc_error` record (0 when not in debug mode).
            args: one value per kernel parameter: an `ArrayArg` for arrays, a Python or
                NumPy number for scalars; for aggregates what a CPU launch accepts (a host
                vector / matrix or sequence, a `@kc.struct` instance) or its packed bytes.
        """
        params = self.fields[1:]
        if len(args) != len(params):
            raise ValueError(f"{len(params)} arguments expected, {len(args)} given")
        out = bytearray(self.size)
        out[0:LAUNCH_SIZE] = pack_launch(dims, error_ptr)
        for spec, value in zip(params, args):
            out[spec.offset:spec.offset + spec.size] = _pack_param(spec, value)
        return bytes(out)


def pack_launch(dims: Sequence[int], error_ptr: int) -> bytes:
    """The bytes of a `kc_launch` value: dims padded with 1s, their product, the pointer."""
    if not 1 <= len(dims) <= MAX_DIMS:
        raise ValueError(f"a launch has 1 to {MAX_DIMS} dimensions, got {len(dims)}")
    size = 1
    for d in dims:
        size *= int(d)
    padded = [int(d) for d in dims] + [1] * (MAX_DIMS - len(dims))
    return struct.pack("<4qqQ", *padded, size, error_ptr)


def pack_array(arg: ArrayArg, ndim: int) -> bytes:
    if len(arg.shape) != ndim or len(arg.strides) != ndim:
        raise ValueError(f"a {ndim}-d array argument needs {ndim} extents and strides")
    return struct.pack(f"<Q{ndim}q{ndim}q", arg.ptr, *arg.shape, *arg.strides)


def _pack_param(spec: ParamField, value: Any) -> bytes:
    if spec.kind == "array":
        return pack_array(value, spec.type.ndim)
    if spec.kind == "aggregate":
        return _pack_aggregate(spec, value)
    fmt = _FORMATS[spec.type.name]
    if spec.type == T.bfloat16:
        value = to_bits(value)
    return struct.pack("<" + fmt, value.item() if hasattr(value, "item") else value)


def _pack_aggregate(spec: ParamField, value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:
        from kernelc.frontend.struct import struct_bytes  # the front end's C-layout packer

        data = struct_bytes(spec.type, value)
    if len(data) != spec.size:
        raise ValueError(f"parameter '{spec.name}': {spec.size} bytes expected, got {len(data)}")
    return data


def build_layout(params: Sequence[tuple[str, T.Type, str]]) -> ParamLayout:
    """The layout of the entry whose kernel parameters are (name, type, C type)."""
    fields = [ParamField("launch", "launch", None, "kc_launch", LAUNCH_SIZE, 8, 0)]
    offset = LAUNCH_SIZE
    for name, t, c_type in params:
        if isinstance(t, T.ArrayType):
            kind, size, align = "array", t.size, 8
        elif isinstance(t, T.ScalarType):
            kind, size, align = "scalar", t.size, t.size
        elif isinstance(t, (T.VectorType, T.MatrixType, T.StructType, T.IndexedArrayType)):
            kind, size, align = "aggregate", t.size, T.alignment(t)
        else:
            raise TypeError(f"kernel parameter '{name}' of type {t!r}")
        offset = (offset + align - 1) // align * align
        fields.append(ParamField(name, kind, t, c_type, size, align, offset))
        offset += size
    total = (offset + 7) // 8 * 8
    return ParamLayout(tuple(fields), total)
