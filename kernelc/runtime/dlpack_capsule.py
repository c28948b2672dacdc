"""DLPack capsules given directly (`kc.from_dlpack(torch.utils.dlpack.to_dlpack(t))`), as
Warp accepts them: the device is read from the capsule's tensor, and the capsule is handed
to NumPy's importer through an object with the `__dlpack__` protocol.

NumPy, which exports and imports kernelc's CPU memory, has no DLPack bfloat16: a bfloat16
array is exported as its 16-bit words with the capsule's type code then set to bfloat16,
and a bfloat16 capsule is imported the other way round (see `mark_bfloat16`).

The ctypes views of the DLPack structs here also serve the CUDA exchange (dlpack_cuda.py),
which reads and writes capsules' tensors itself."""

from __future__ import annotations

import ctypes
from typing import Any

_NAMES = (b"dltensor", b"dltensor_versioned")

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                               ctypes.c_char_p]
# A prototype of our own: argtypes set on the shared `ctypes.pythonapi` attribute would
# change every other user's calls too.
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", ctypes.pythonapi))
# The capsule keeps a pointer to its name: these bytes live as long as the module.
_USED_NAMES = {False: b"used_dltensor", True: b"used_dltensor_versioned"}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_UINT, _BFLOAT = 1, 4  # DLPack type codes (kDLUInt, kDLBfloat)


class VersionedHead(ctypes.Structure):  # DLManagedTensorVersioned up to its DLTensor
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64)]


class ManagedTail(ctypes.Structure):  # DLManagedTensor after its DLTensor
    _fields_ = [("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


def is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


class CapsuleSource:
    """A DLPack capsule as an object NumPy's `from_dlpack` takes."""

    def __init__(self, capsule: Any):
        head = tensor_of(capsule)
        self.device = (head.device.device_type, head.device.device_id)
        self.capsule = capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, **_: Any) -> Any:  # NumPy passes stream/max_version/copy
        return self.capsule


def managed_tensor(capsule: Any) -> tuple[int, bool]:
    """The address of the capsule's DLManagedTensor (or DLManagedTensorVersioned), and
    whether it is the versioned one; raises ValueError for a consumed capsule."""
    name = _get_name(capsule)
    if name not in _NAMES:
        raise ValueError(f"a DLPack capsule is named 'dltensor' (or 'dltensor_versioned'), "
                         f"not {name.decode() if name else None!r}: it was consumed "
                         f"already, or is not a DLPack tensor")
    return _get_pointer(capsule, name), name == b"dltensor_versioned"


def mark_used(capsule: Any, versioned: bool) -> None:
    """Renames a capsule as consumed, as DLPack asks of consumers that took its tensor: its
    destructor then leaves the tensor (and its deleter) to the consumer."""
    _set_name(capsule, _USED_NAMES[versioned])


def tensor_of(capsule: Any) -> DLTensor:
    """The capsule's DLTensor, in place: writes change the tensor the consumer will read."""
    address, versioned = managed_tensor(capsule)
    if versioned:
        address += ctypes.sizeof(VersionedHead)
    return DLTensor.from_address(address)  # DLManagedTensor starts with DLTensor



def mark_bfloat16(capsule: Any) -> Any:
    """`capsule` (NumPy's export of bfloat16 bits as uint16) retyped as bfloat16, as
    Torch and JAX read it; the capsule is not consumed yet, so its tensor is ours to edit."""
    tensor_of(capsule).dtype.code = _BFLOAT
    return capsule


def take_bfloat16(capsule: Any) -> bool:
    """Whether `capsule` holds bfloat16 values; if so they are retyped as uint16 (their
    bits, which NumPy imports), as the consumer that now owns the tensor may."""
    dtype = tensor_of(capsule).dtype
    if (dtype.code, dtype.bits, dtype.lanes) != (_BFLOAT, 16, 1):
        return False
    dtype.code = _UINT
    return True
