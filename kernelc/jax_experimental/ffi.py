"""kernelc kernels and functions as JAX operations, through XLA's FFI (Warp's
`warp.jax_experimental.ffi`): `jax_kernel`, `jax_callable`, `register_ffi_callback`.

XLA calls the registered targets with its own buffers, which kernelc wraps without copying.
They run on the CPU; on a GPU they launch on XLA's CUDA stream.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kernelc.jax_experimental import xla_ffi
from kernelc.jax_experimental.ffi_callable import (
    JAX_CALLABLE_DEFAULT_GRAPH_CACHE_MAX,
    FfiCallable,
    JaxCallableGraphMode,
    clear_jax_callable_graph_cache,
)
from kernelc.jax_experimental.ffi_kernel import FfiKernel, JaxModulePreloadMode

__all__ = [
    "ExecutionContext",
    "FfiBuffer",
    "JaxCallableGraphMode",
    "JaxModulePreloadMode",
    "clear_jax_callable_graph_cache",
    "jax_callable",
    "jax_kernel",
    "register_ffi_callback",
]

# Wrappers by their arguments: asking twice for the same one registers one FFI target.
_KERNELS: dict[tuple, Any] = {}
_CALLABLES: dict[tuple, FfiCallable] = {}
_LOCK = threading.Lock()


def _check_jax() -> None:
    import jax

    if jax.__version_info__ < (0, 5, 0):
        raise RuntimeError(f"kernelc's JAX FFI support needs JAX 0.5.0 or newer, found "
                           f"{jax.__version__}")


def _frozen(value: Any) -> Any:
    """`value` as a dictionary key (dicts and sequences become tuples)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def registered_callables() -> list[FfiCallable]:
    with _LOCK:
        return list(_CALLABLES.values())


def jax_kernel(kernel: Any, num_outputs: int = 1, vmap_method: str | None = "broadcast_all",
               launch_dims: Any = None, output_dims: Any = None,
               in_out_argnames: Sequence[str] | None = None,
               module_preload_mode: JaxModulePreloadMode = JaxModulePreloadMode.CURRENT_DEVICE,
               enable_backward: bool = False, has_side_effect: bool = False,
               block_dim: int | None = None) -> Any:
    """A JAX operation that launches a kernelc kernel (Warp's `jax_kernel`).

    The kernel's parameters are its inputs followed by its outputs. Calling the result with
    the inputs (JAX arrays; scalars as static Python values) returns the list of outputs,
    usable inside `jax.jit` and `jax.vmap`. A vector or matrix array is a JAX array with
    the element's axes last ((n, 3) for n `vec3`). `launch_dims` defaults to the kernelc
    shape of the first input array, `output_dims` (one shape, or a dict by argument name)
    to the launch shape; both, and `vmap_method`, can also be given per call, except with
    `enable_backward`. Under `jax.vmap`, batch axes fold into the first kernelc dimension.

    Args:
        kernel (Kernel): The kernel; its array parameters need concrete dtypes.
        num_outputs (int): How many trailing parameters are outputs, in-out ones included.
        vmap_method (str | None): How the call behaves under `jax.vmap` (see `ffi_call`).
        launch_dims (Any): The launch shape (an int or a tuple of ints).
        output_dims (Any): The output shapes, in kernelc's or JAX's convention.
        in_out_argnames (Sequence[str] | None): Array inputs that are also outputs.
        module_preload_mode (JaxModulePreloadMode): Where to compile the kernel at first use.
        enable_backward (bool): Give the operation a JAX gradient (the backward kernel).
        has_side_effect (bool): Keep the call even when its outputs are unused.
        block_dim (int | None): Threads per CUDA block (None: the default).

    Returns:
        The JAX-callable wrapper.

    Raises:
        TypeError: A parameter is neither a concrete array nor a scalar, or an output is
            not an array.
        ValueError: `num_outputs` or `in_out_argnames` do not fit the parameters.
        NotImplementedError: `in_out_argnames` or `output_dims` with `enable_backward`.
    """
    from kernelc.frontend.decorators import Kernel

    _check_jax()
    if not isinstance(kernel, Kernel):
        raise TypeError(f"jax_kernel() needs a @kernelc.kernel, got {type(kernel).__name__}")
    if block_dim is not None:
        if isinstance(block_dim, bool):
            raise TypeError("jax_kernel(): block_dim must be an int or None")
        block_dim = operator.index(block_dim)
        if block_dim <= 0:
            raise ValueError("jax_kernel(): block_dim must be positive")
    if enable_backward and in_out_argnames:
        raise NotImplementedError("jax_kernel(): in_out_argnames cannot be differentiated "
                                  "(enable_backward=True)")
    if enable_backward and output_dims is not None:
        raise NotImplementedError("jax_kernel(): output_dims is not supported with "
                                  "enable_backward=True")
    key = (kernel, num_outputs, vmap_method, _frozen(launch_dims), _frozen(output_dims),
           tuple(in_out_argnames or ()), int(module_preload_mode), bool(enable_backward),
           bool(has_side_effect), block_dim)
    with _LOCK:
        wrapper = _KERNELS.get(key)
        if wrapper is None:
            wrapper = FfiKernel(kernel, num_outputs, vmap_method, launch_dims, output_dims,
                                in_out_argnames, module_preload_mode, has_side_effect,
                                block_dim)
            if enable_backward:
                from kernelc.jax_experimental.ffi_grad import differentiable_kernel

                wrapper = differentiable_kernel(wrapper)
            _KERNELS[key] = wrapper
    return wrapper


def jax_callable(func: Callable, num_outputs: int = 1,
                 graph_mode: JaxCallableGraphMode = JaxCallableGraphMode.JAX,
                 vmap_method: str | None = "broadcast_all", output_dims: Any = None,
                 in_out_argnames: Sequence[str] | None = None,
                 stage_in_argnames: Sequence[str] | None = None,
                 stage_out_argnames: Sequence[str] | None = None,
                 graph_cache_max: int | None = JAX_CALLABLE_DEFAULT_GRAPH_CACHE_MAX,
                 module_preload_mode: JaxModulePreloadMode = JaxModulePreloadMode.CURRENT_DEVICE,
                 has_side_effect: bool = False) -> FfiCallable:
    """A JAX operation that calls a Python function launching kernelc kernels (Warp's
    `jax_callable`).

    The function's parameters are annotated as a kernel's: inputs, then outputs. When XLA
    runs the call, the function gets kernelc arrays over XLA's buffers (no copy).
    `output_dims` defaults to the kernelc shape of the first input array. The `WARP*` graph
    modes are not supported (a call raises); `stage_in_argnames`, `stage_out_argnames` and
    `graph_cache_max` only matter to them and are accepted for Warp compatibility.

    Args:
        func (Callable): The function; it returns nothing.
        num_outputs (int): How many trailing parameters are outputs, in-out ones included.
        graph_mode (JaxCallableGraphMode): `JAX` or `NONE` (the same in kernelc).
        vmap_method (str | None): How the call behaves under `jax.vmap` (also per call).
        output_dims (Any): The output shapes (one, or a dict by name); also per call.
        in_out_argnames (Sequence[str] | None): Array inputs that are also outputs.
        stage_in_argnames (Sequence[str] | None): Accepted for Warp compatibility.
        stage_out_argnames (Sequence[str] | None): Accepted for Warp compatibility.
        graph_cache_max (int | None): Accepted for Warp compatibility.
        module_preload_mode (JaxModulePreloadMode): Where to compile the module at first use.
        has_side_effect (bool): Keep the call even when its outputs are unused.

    Returns:
        The JAX-callable wrapper.
    """
    _check_jax()
    key = (func, num_outputs, int(graph_mode), vmap_method, _frozen(output_dims),
           tuple(in_out_argnames or ()), _frozen(stage_in_argnames),
           _frozen(stage_out_argnames), int(module_preload_mode), bool(has_side_effect))
    with _LOCK:
        wrapper = _CALLABLES.get(key)
        if wrapper is None:
            wrapper = _CALLABLES[key] = FfiCallable(
                func, num_outputs, graph_mode, vmap_method, output_dims, in_out_argnames,
                stage_in_argnames, stage_out_argnames, graph_cache_max, module_preload_mode,
                has_side_effect)
        else:
            wrapper.graph_cache_max = graph_cache_max
    return wrapper


class FfiBuffer:
    """An XLA buffer passed to a `register_ffi_callback` function.

    Attributes:
        dtype (numpy.dtype): The scalar type.
        shape (tuple[int, ...]): The JAX shape.
        data (int): The address of the first element (host or device memory).
    """

    def __init__(self, buffer: xla_ffi.Buffer, platform: str) -> None:
        self.dtype = np.dtype(xla_ffi.XLA_DTYPES.get(buffer.dtype, np.void))
        self.shape = xla_ffi.buffer_shape(buffer)
        self.data = int(buffer.data or 0)
        self.platform = platform

    def _interface(self) -> dict[str, Any]:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.data, False),
                "strides": None}

    @property
    def __array_interface__(self) -> dict[str, Any]:
        if self.platform != "cpu":
            raise AttributeError("__array_interface__ is only defined for CPU buffers")
        return {**self._interface(), "version": 3}

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self.platform == "cpu":
            raise AttributeError("__cuda_array_interface__ is only defined for GPU buffers")
        return {**self._interface(), "version": 2}


class ExecutionContext:
    """Where a `register_ffi_callback` function runs.

    Attributes:
        stage (int): XLA's execution stage (3: execute).
        platform (str): "cpu" or "CUDA".
        stream (int): The CUstream of the call (0 on the CPU).
        device_ordinal (int): The GPU's ordinal (-1 on the CPU).
    """

    def __init__(self, frame: xla_ffi.CallFrame, platform: str) -> None:
        self.stage = int(frame.stage)
        self.platform = platform
        on_gpu = platform != "cpu"
        self.stream = xla_ffi.cuda_stream(frame) if on_gpu else 0
        self.device_ordinal = xla_ffi.device_ordinal(frame) if on_gpu else -1


def register_ffi_callback(name: str, func: Callable, graph_compatible: bool = True) -> None:
    """Registers `func(inputs, outputs, attrs, ctx)` as the XLA FFI target `name`, for
    `jax.ffi.ffi_call(name, ...)` (Warp's `register_ffi_callback`).

    `inputs` and `outputs` are lists of `FfiBuffer`, `attrs` a dict of the call's attributes,
    `ctx` an `ExecutionContext`. kernelc registers the target for the CPU and for CUDA.

    Args:
        name (str): The target name (unique in the process).
        func (Callable): The function.
        graph_compatible (bool): Whether XLA may record its CUDA work into CUDA graphs.
    """
    _check_jax()

    def run(frame: xla_ffi.CallFrame, platform: str) -> None:
        inputs = [FfiBuffer(b, platform) for b in xla_ffi.buffers(frame.args)]
        outputs = [FfiBuffer(b, platform) for b in xla_ffi.buffers(frame.rets)]
        func(inputs, outputs, xla_ffi.decode_attrs(frame.attrs),
             ExecutionContext(frame, platform))

    xla_ffi.register_target(name, run, graph_compatible=graph_compatible)
