"""DLPack capsules given directly (`kc.from_dlpack(torch.utils.dlpack.to_dlpack(t))`), as
Warp accepts them: the device is read from the capsule's tensor, and the capsule is handed
to NumPy's importer through an object with the `__dlpack__` protocol."""

from __future__ import annotations

import ctypes
from typing import Any

_NAMES = (b"dltensor", b"dltensor_versioned")

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                               ctypes.c_char_p]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLTensorHead(ctypes.Structure):  # the leading fields of DLTensor
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice)]


class _VersionedHead(ctypes.Structure):  # DLManagedTensorVersioned up to its DLTensor
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64)]


def is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


class CapsuleSource:
    """A DLPack capsule as an object NumPy's `from_dlpack` takes."""

    def __init__(self, capsule: Any):
        name = _get_name(capsule)
        if name not in _NAMES:
            raise ValueError(f"a DLPack capsule is named 'dltensor' (or 'dltensor_versioned'), "
                             f"not {name.decode() if name else None!r}: it was consumed "
                             f"already, or is not a DLPack tensor")
        address = _get_pointer(capsule, name)
        if name == b"dltensor_versioned":
            address += ctypes.sizeof(_VersionedHead)
        head = _DLTensorHead.from_address(address)  # DLManagedTensor starts with DLTensor
        self.device = (head.device.device_type, head.device.device_id)
        self.capsule = capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, **_: Any) -> Any:  # NumPy passes stream/max_version/copy
        return self.capsule
