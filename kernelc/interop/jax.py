"""JAX arrays, devices and dtypes to and from kernelc's (Warp's `wp.from_jax`, `wp.to_jax`, ...).

Arrays cross through DLPack and share memory wherever JAX allows it. JAX is imported only
when one of these functions is called, so `import kernelc` never loads it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.jax_experimental.ffi import (
    JaxCallableGraphMode,
    JaxModulePreloadMode,
    clear_jax_callable_graph_cache,
    jax_callable,
    jax_kernel,
)
from kernelc.runtime.array import array
from kernelc.runtime.array_interop import over_host_memory
from kernelc.runtime.device import Device, get_device
from kernelc.runtime.memory import MAX_DIMS, element_layout, resolve_dtype

# Warp 1.19 also has its JAX operations at the top level (`wp.jax_kernel`).
__all__ = [
    "JaxCallableGraphMode",
    "JaxModulePreloadMode",
    "clear_jax_callable_graph_cache",
    "device_from_jax",
    "device_to_jax",
    "dtype_from_jax",
    "dtype_to_jax",
    "from_jax",
    "jax_callable",
    "jax_kernel",
    "to_jax",
]


def device_to_jax(device: Device | str | None) -> Any:
    """The JAX device of a kernelc device (`"cpu"` -> JAX's first CPU device).

    A CUDA device maps to the local JAX GPU with the same ordinal
    (`jax.Device.local_hardware_id`).

    Args:
        device (Device | str | None): A kernelc device or identifier (None: the current one).

    Returns:
        The `jax.Device`.

    Raises:
        RuntimeError: JAX has no such device in this process.
    """
    import jax

    target = get_device(device)
    try:
        candidates = jax.local_devices(backend="cuda" if target.is_cuda else "cpu")
    except RuntimeError:  # JAX has no backend of that kind here
        candidates = []
    for candidate in candidates:
        if target.is_cpu or candidate.local_hardware_id == target.ordinal:
            return candidate
    raise RuntimeError(f"JAX has no device corresponding to kernelc's '{target}' in this "
                       f"process")


def device_from_jax(jax_device: Any) -> Device:
    """The kernelc device of a JAX device: the CPU, or `cuda:N` for the local GPU N.

    Args:
        jax_device (jax.Device): A JAX device.

    Returns:
        The kernelc `Device`.

    Raises:
        RuntimeError: The device is neither a CPU nor a GPU, or is a GPU of another process.
    """
    if jax_device.platform == "cpu":
        return get_device("cpu")
    if jax_device.platform == "gpu":
        import jax

        if jax_device.process_index != jax.process_index() or \
                jax_device.local_hardware_id is None:
            raise RuntimeError(f"JAX device '{jax_device}' belongs to process "
                               f"{jax_device.process_index}, not to this one "
                               f"({jax.process_index()})")
        return get_device(f"cuda:{jax_device.local_hardware_id}")
    raise RuntimeError(f"JAX devices of platform '{jax_device.platform}' have no kernelc "
                       f"equivalent")


def current_jax_device() -> Any:
    """The device JAX puts new arrays on: `jax.default_device` if set, else the first one."""
    import jax

    device = jax.config.jax_default_device
    if isinstance(device, str):  # a platform name
        return jax.local_devices(backend=device)[0]
    return device if device is not None else jax.local_devices()[0]


def dtype_to_jax(dtype: Any) -> Any:
    """The JAX scalar type of a kernelc scalar type (`kc.float32` -> `jnp.float32`).

    Args:
        dtype (Any): A kernelc scalar type (or `float`, `int`, `bool`).

    Returns:
        The `jax.numpy` scalar type.

    Raises:
        TypeError: `dtype` is not a scalar type (vectors and matrices have no JAX type).
    """
    import jax.numpy as jnp

    scalar = T.as_type(dtype)
    if not isinstance(scalar, T.ScalarType):
        raise TypeError(f"cannot convert {dtype!r} to a JAX type")
    return jnp.bool_ if scalar.is_bool else getattr(jnp, scalar.name)


def dtype_from_jax(jax_dtype: Any) -> T.ScalarType:
    """The kernelc scalar type of a JAX dtype (`jnp.float32` or `jnp.dtype("float32")`).

    Args:
        jax_dtype (Any): A JAX scalar type or dtype.

    Returns:
        The kernelc scalar type.

    Raises:
        TypeError: kernelc has no such type (complex types, ...).
    """
    import jax.numpy as jnp

    try:
        return T.from_numpy_dtype(jnp.dtype(jax_dtype))
    except TypeError:
        raise TypeError(f"cannot convert {jax_dtype!r} to a kernelc type") from None


def to_jax(arr: array) -> Any:
    """A JAX array with the values of a kernelc array, sharing its memory where JAX can.

    JAX takes the memory without a copy when the array is contiguous and 64-byte aligned
    (every kernelc allocation is); a strided view is first made contiguous. Vector and
    matrix elements become trailing axes. JAX treats its arrays as immutable, so the
    kernelc array should not be written while the JAX array is in use. In JAX's default
    32-bit mode, 64-bit values are converted (copied) to 32 bits. A CUDA array becomes a
    JAX array on the same GPU, which JAX uses after the work queued so far on kernelc's
    current stream.

    Args:
        arr (array): The kernelc array.

    Returns:
        The `jax.Array`.
    """
    import jax.dlpack

    if not isinstance(arr, array):
        raise TypeError(f"to_jax() needs a kernelc array, got {type(arr).__name__}")
    result = jax.dlpack.from_dlpack(arr if arr.is_contiguous else arr.contiguous())
    if getattr(arr.dtype, "dtype", arr.dtype) == T.bfloat16:  # exported as its bits
        import jax.numpy as jnp

        result = jax.lax.bitcast_convert_type(result, jnp.bfloat16)
    return result


def from_jax(jax_array: Any, dtype: Any = None) -> array:
    """A kernelc array over the memory of a JAX array, without a copy.

    A vector or matrix `dtype` (`kc.vec3`) turns the trailing axes into elements: a (n, 3)
    JAX array becomes n `vec3`s.

    Args:
        jax_array (jax.Array): The JAX array.
        dtype (Any): The element type; None takes the JAX array's scalar type.

    Returns:
        The kernelc array. It keeps the JAX buffer alive; as JAX assumes its arrays never
        change, do not write to it while JAX still uses the array.

    Raises:
        TypeError: `dtype` does not fit the JAX array's scalar type or trailing axes.
    """
    scalar = dtype_from_jax(jax_array.dtype)
    have = element_layout(scalar)[0]  # (bfloat16: its bits, uint16)
    elem = scalar if dtype is None else resolve_dtype(dtype)
    np_dtype, inner = element_layout(elem)
    if np_dtype != have:
        raise TypeError(f"cannot view a JAX array of {have} as {elem!r}")
    shape = tuple(jax_array.shape)
    outer = len(shape) - len(inner)
    if outer < 1 or shape[outer:] != inner:
        raise TypeError(f"a JAX array of shape {shape} does not end in the element shape "
                        f"{inner} of {elem!r}")
    if outer > MAX_DIMS:
        raise ValueError(f"kernelc arrays have at most {MAX_DIMS} dimensions; the JAX array "
                         f"has {outer} outside the element shape")
    kind, _ = jax_array.__dlpack_device__()
    if kind not in (1, 3):  # kDLCPU, kDLCUDAHost: a GPU array takes kernelc's DLPack import
        from kernelc.runtime.array_interop import from_dlpack

        return from_dlpack(jax_array, dtype=elem)
    if scalar == T.bfloat16:  # NumPy takes no DLPack bfloat16: view the bits instead
        import jax
        import jax.numpy as jnp

        jax_array = jax.lax.bitcast_convert_type(jax_array, jnp.uint16)
    host = np.from_dlpack(jax_array)  # read-only view of JAX's buffer; it holds the buffer
    shared = over_host_memory(host, elem)
    if shared is None:
        raise TypeError(f"cannot view a JAX array with strides {host.strides} as {elem!r}")
    return shared
