"""XLA's FFI C API (`xla/ffi/api/c_api.h`) in ctypes, and FFI targets written in Python.

An XLA FFI handler is a C function `XLA_FFI_Error* handler(XLA_FFI_CallFrame*)`. The call
frame holds the argument and result buffers (device pointers with dtype and dims), the
attributes of the call, and the `XLA_FFI_Api` table through which the handler creates
errors and asks for its CUDA stream and device. `register_target` turns a Python function
into such a handler (a ctypes callback in a PyCapsule) and registers it with JAX.
"""

from __future__ import annotations

import ctypes
import threading
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

_size_t, _i64, _int, _ptr = ctypes.c_size_t, ctypes.c_int64, ctypes.c_int, ctypes.c_void_p

# XLA_FFI_DataType -> NumPy dtype (the types kernelc and JAX share, plus a few more to decode
# attributes). bfloat16 comes from ml_dtypes, which JAX depends on.
XLA_DTYPES: dict[int, Any] = {
    1: np.bool_, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.uint8,
    7: np.uint16, 8: np.uint32, 9: np.uint64, 10: np.float16, 11: np.float32, 12: np.float64,
    15: np.complex64, 18: np.complex128,
}

ERROR_UNKNOWN, ERROR_INVALID_ARGUMENT, ERROR_UNIMPLEMENTED = 2, 3, 12
EXTENSION_METADATA = 1
TRAIT_COMMAND_BUFFER_COMPATIBLE = 1
ATTR_ARRAY, ATTR_DICTIONARY, ATTR_SCALAR, ATTR_STRING = 1, 2, 3, 4


class ExtensionBase(ctypes.Structure):
    pass


ExtensionBase._fields_ = [("struct_size", _size_t), ("type", _int),
                          ("next", ctypes.POINTER(ExtensionBase))]


class ApiVersion(ctypes.Structure):
    _fields_ = [("struct_size", _size_t), ("extension_start", _ptr),
                ("major_version", _int), ("minor_version", _int)]


class Metadata(ctypes.Structure):
    _fields_ = [("struct_size", _size_t), ("api_version", ApiVersion),
                ("traits", ctypes.c_uint32), ("state_type_id", _i64)]


class MetadataExtension(ctypes.Structure):
    _fields_ = [("extension_base", ExtensionBase), ("metadata", ctypes.POINTER(Metadata))]


class Buffer(ctypes.Structure):
    _fields_ = [("struct_size", _size_t), ("extension_start", _ptr), ("dtype", _int),
                ("data", _ptr), ("rank", _i64), ("dims", ctypes.POINTER(_i64))]


class Args(ctypes.Structure):  # XLA_FFI_Args and XLA_FFI_Rets share this layout
    _fields_ = [("struct_size", _size_t), ("extension_start", _ptr), ("size", _i64),
                ("types", ctypes.POINTER(_int)), ("items", ctypes.POINTER(_ptr))]


class ByteSpan(ctypes.Structure):
    _fields_ = [("ptr", _ptr), ("len", _size_t)]


class Scalar(ctypes.Structure):
    _fields_ = [("dtype", _int), ("value", _ptr)]


class Array(ctypes.Structure):
    _fields_ = [("dtype", _int), ("size", _size_t), ("data", _ptr)]


class Attrs(ctypes.Structure):
    _fields_ = [("struct_size", _size_t), ("extension_start", _ptr), ("size", _i64),
                ("types", ctypes.POINTER(_int)), ("names", ctypes.POINTER(ctypes.POINTER(ByteSpan))),
                ("attrs", ctypes.POINTER(_ptr))]


class ErrorCreateArgs(ctypes.Structure):
    _fields_ = [("struct_size", _size_t), ("extension_start", _ptr), ("message", ctypes.c_char_p),
                ("errc", _int)]


class StreamGetArgs(ctypes.Structure):
    _fields_ = [("struct_size", _size_t), ("extension_start", _ptr), ("ctx", _ptr),
                ("stream", _ptr)]


class DeviceOrdinalGetArgs(ctypes.Structure):
    _fields_ = [("struct_size", _size_t), ("extension_start", _ptr), ("ctx", _ptr),
                ("device_ordinal", ctypes.c_int32)]


_API_FUNCTIONS = (
    "error_create", "error_get_message", "error_destroy", "handler_register", "stream_get",
    "type_register", "execution_context_get", "state_set", "state_get",
    "device_memory_allocate", "device_memory_free", "thread_pool_schedule",
    "thread_pool_num_threads", "future_create", "future_set_available", "future_set_error",
    "run_id_get", "device_ordinal_get",
)


class Api(ctypes.Structure):
    _fields_ = [("struct_size", _size_t), ("extension_start", _ptr), ("api_version", ApiVersion),
                ("internal_api", _ptr), *((name, _ptr) for name in _API_FUNCTIONS)]


class CallFrame(ctypes.Structure):
    _fields_ = [("struct_size", _size_t), ("extension_start", ctypes.POINTER(ExtensionBase)),
                ("api", ctypes.POINTER(Api)), ("ctx", _ptr), ("stage", _int), ("args", Args),
                ("rets", Args), ("attrs", Attrs), ("future", _ptr)]


HANDLER = ctypes.CFUNCTYPE(_ptr, ctypes.POINTER(CallFrame))
_ERROR_CREATE = ctypes.CFUNCTYPE(_ptr, ctypes.POINTER(ErrorCreateArgs))
_STREAM_GET = ctypes.CFUNCTYPE(_ptr, ctypes.POINTER(StreamGetArgs))
_DEVICE_ORDINAL_GET = ctypes.CFUNCTYPE(_ptr, ctypes.POINTER(DeviceOrdinalGetArgs))

# The ctypes callbacks must outlive every compiled computation that calls them.
_HANDLERS: dict[tuple[str, str], Any] = {}
# XLA may call handlers from several threads at once (pmap, independent ops).
CALL_LOCK = threading.Lock()


class FfiError(Exception):
    """An error a handler reports to XLA with a specific XLA error code."""

    def __init__(self, message: str, code: int = ERROR_INVALID_ARGUMENT) -> None:
        super().__init__(message)
        self.code = code


# ---- reading a call frame ----------------------------------------------------------------


def buffers(args: Args) -> list[Buffer]:
    """The buffers of a call frame's `args` or `rets`."""
    return [ctypes.cast(args.items[i], ctypes.POINTER(Buffer)).contents for i in range(args.size)]


def buffer_shape(buffer: Buffer) -> tuple[int, ...]:
    return tuple(buffer.dims[i] for i in range(buffer.rank))


def _text(span: ByteSpan) -> str:
    return ctypes.string_at(span.ptr, span.len).decode()


def _values(dtype: int, ptr: int, count: int) -> np.ndarray:
    np_dtype = np.dtype(XLA_DTYPES[dtype])
    return np.frombuffer(ctypes.string_at(ptr, count * np_dtype.itemsize), dtype=np_dtype)


def decode_attrs(attrs: Attrs) -> dict[str, Any]:
    """The attributes of a call as Python values: NumPy scalars and arrays, strings, dicts."""
    result: dict[str, Any] = {}
    for i in range(attrs.size):
        kind, raw = attrs.types[i], attrs.attrs[i]
        if kind == ATTR_SCALAR:
            scalar = ctypes.cast(raw, ctypes.POINTER(Scalar)).contents
            value: Any = _values(scalar.dtype, scalar.value, 1)[0]
        elif kind == ATTR_ARRAY:
            values = ctypes.cast(raw, ctypes.POINTER(Array)).contents
            value = _values(values.dtype, values.data, values.size)
        elif kind == ATTR_STRING:
            value = _text(ctypes.cast(raw, ctypes.POINTER(ByteSpan)).contents)
        elif kind == ATTR_DICTIONARY:
            value = decode_attrs(ctypes.cast(raw, ctypes.POINTER(Attrs)).contents)
        else:
            raise FfiError(f"attribute kind {kind} is not known to kernelc")
        result[_text(attrs.names[i].contents)] = value
    return result


def call_id(frame: CallFrame) -> int:
    """The `call_id` attribute that kernelc's targets are called with."""
    for i in range(frame.attrs.size):
        if _text(frame.attrs.names[i].contents) == "call_id":
            scalar = ctypes.cast(frame.attrs.attrs[i], ctypes.POINTER(Scalar)).contents
            return int(_values(scalar.dtype, scalar.value, 1)[0])
    raise FfiError("the FFI call has no 'call_id' attribute")


def cuda_stream(frame: CallFrame) -> int:
    """The CUstream XLA runs this call on (CUDA platform only)."""
    args = StreamGetArgs(ctypes.sizeof(StreamGetArgs), None, frame.ctx, None)
    _check(_STREAM_GET(frame.api.contents.stream_get)(ctypes.byref(args)), "stream")
    return int(args.stream or 0)


def device_ordinal(frame: CallFrame) -> int:
    """The ordinal of the GPU XLA runs this call on (CUDA platform only)."""
    args = DeviceOrdinalGetArgs(ctypes.sizeof(DeviceOrdinalGetArgs), None, frame.ctx, 0)
    _check(_DEVICE_ORDINAL_GET(frame.api.contents.device_ordinal_get)(ctypes.byref(args)),
           "device ordinal")
    return int(args.device_ordinal)


def _check(error: int | None, what: str) -> None:
    if error:  # an XLA_FFI_Error* (left to XLA to free): report our own instead
        raise FfiError(f"XLA could not tell the call's {what}", ERROR_UNKNOWN)


def _error(frame: CallFrame, message: str, code: int) -> int:
    args = ErrorCreateArgs(ctypes.sizeof(ErrorCreateArgs), None, message.encode(), code)
    return _ERROR_CREATE(frame.api.contents.error_create)(ctypes.byref(args))


# ---- targets -----------------------------------------------------------------------------


def _answer_metadata(frame: CallFrame, traits: int) -> bool:
    """Answers XLA's query for the handler's API version and traits, if this is one."""
    extension = frame.extension_start
    if not extension or extension.contents.type != EXTENSION_METADATA:
        return False
    metadata = ctypes.cast(extension, ctypes.POINTER(MetadataExtension)).contents.metadata
    metadata.contents.api_version.major_version = 0
    metadata.contents.api_version.minor_version = 1
    metadata.contents.traits = traits
    return True


def register_target(name: str, run: Callable[[CallFrame, str], None],
                    platforms: tuple[str, ...] = ("cpu", "CUDA"),
                    graph_compatible: bool = False) -> None:
    """Registers `run(frame, platform)` with JAX as the FFI target `name`.

    Exceptions raised by `run` become XLA errors (so JAX raises `JaxRuntimeError` with the
    message) instead of crossing the C boundary. `graph_compatible` lets XLA record the
    call's CUDA work in its command buffers (CUDA graphs).
    """
    import jax

    for platform in platforms:
        traits = TRAIT_COMMAND_BUFFER_COMPATIBLE if graph_compatible and platform == "CUDA" else 0

        def handler(frame_ptr, platform=platform, traits=traits):
            frame = frame_ptr.contents
            try:
                if _answer_metadata(frame, traits):
                    return None
                with CALL_LOCK:
                    run(frame, platform)
                return None
            except FfiError as err:
                return _error(frame, f"{name}: {err}", err.code)
            except Exception as err:  # noqa: BLE001  (reported to XLA, which raises it)
                message = f"{name}: {type(err).__name__}: {err}"
                if not type(err).__module__.startswith("kernelc"):  # kernelc's say where
                    message += "\n" + traceback.format_exception(err)[-2].strip()
                return _error(frame, message, ERROR_UNKNOWN)

        callback = HANDLER(handler)
        _HANDLERS[(name, platform)] = callback
        address = ctypes.cast(callback, ctypes.c_void_p).value
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(address), platform=platform)
