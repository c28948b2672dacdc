"""`jax_kernel` without gradients: a kernel launched as an XLA FFI target.

Tracing a call checks the JAX arguments, works out the result shapes and emits an
`ffi_call` whose `call_id` attribute names what the call needs besides its buffers (the
scalar arguments, the launch shape). When XLA runs the call, the target wraps the XLA
buffers in kernelc arrays (no copy) and launches the kernel on them: on the CPU directly,
on a GPU on XLA's CUDA stream.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import IntEnum
from typing import Any

import numpy as np

from kernelc.jax_experimental import xla_ffi
from kernelc.jax_experimental.ffi_args import (
    FfiArg,
    input_output_aliases,
    output_types,
    split_args,
)
from kernelc.runtime.device import Device, get_device


class JaxModulePreloadMode(IntEnum):
    """Where `jax_kernel` and `jax_callable` compile their kernels before the first call."""

    NONE = 0  # compile on first use, inside the call
    CURRENT_DEVICE = 1  # the kernelc device of JAX's current device
    ALL_DEVICES = 2  # the CPU and every local GPU JAX has


class CallTable:
    """Numbers the distinct non-buffer parts of calls (scalars, launch shape): equal calls
    share a number, so eager calls reuse JAX's compiled computation."""

    def __init__(self) -> None:
        self._ids: dict[Any, int] = {}
        self._entries: list[Any] = []

    def id_for(self, entry: Any) -> int:
        found = self._ids.get(entry)
        if found is None:
            found = self._ids[entry] = len(self._entries)
            self._entries.append(entry)
        return found

    def __getitem__(self, call_id: int) -> Any:
        return self._entries[call_id]


_target_counts: dict[str, int] = {}


def target_name(what: str) -> str:
    """A new FFI target name for `what` (a kernel's or function's qualified name)."""
    base = "kernelc_" + re.sub(r"\W", "_", what)
    count = _target_counts[base] = _target_counts.get(base, 0) + 1
    return f"{base}_{count}"


def call_device(frame: xla_ffi.CallFrame, platform: str) -> tuple[Device, Any]:
    """The kernelc device and stream of an FFI call (stream None on the CPU)."""
    if platform == "cpu":
        return get_device("cpu"), None
    from kernelc.runtime.streams import Stream

    device = get_device(f"cuda:{xla_ffi.device_ordinal(frame)}")
    return device, Stream(device, cuda_stream=xla_ffi.cuda_stream(frame))


def preload_devices(mode: JaxModulePreloadMode) -> list[Device]:
    """The kernelc devices `mode` asks to compile for (those JAX can map)."""
    import jax

    from kernelc.interop.jax import current_jax_device, device_from_jax

    if mode == JaxModulePreloadMode.NONE:
        return []
    if mode == JaxModulePreloadMode.CURRENT_DEVICE:
        candidates = [current_jax_device()]
    elif mode == JaxModulePreloadMode.ALL_DEVICES:
        candidates = []
        for backend in ("cpu", "cuda"):
            try:
                candidates += jax.local_devices(backend=backend)
            except RuntimeError:  # no such backend in this JAX
                continue
    else:
        raise ValueError(f"unknown module preload mode {mode!r}")
    devices: list[Device] = []
    for candidate in candidates:
        try:
            device = device_from_jax(candidate)
        except RuntimeError:
            continue
        if device not in devices:
            devices.append(device)
    return devices


def compile_for(kernel: Any, device: Device) -> None:
    """Compiles `kernel` for its declared parameter types on `device` (as a launch would)."""
    if device.is_cpu:
        from kernelc.runtime.compiler import get_cpu_kernel

        get_cpu_kernel(kernel, kernel.param_types)
    else:
        from kernelc.runtime.cuda_launch import load_cuda_kernel

        load_cuda_kernel(kernel, kernel.param_types, device)


def normalize_dims(dims: Any, what: str) -> tuple[int, ...]:
    shape = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    if not 1 <= len(shape) <= 4 or any(not isinstance(d, (int, np.integer)) or d < 0
                                       for d in shape):
        raise ValueError(f"{what} must be an int or 1 to 4 non-negative ints, got {dims!r}")
    return tuple(int(d) for d in shape)


def bind_call(frame: xla_ffi.CallFrame, platform: str, inputs: list[FfiArg],
              outputs: list[FfiArg], statics: Sequence[Any], skip_results: int = 0
              ) -> tuple[list[Any], int, Device, Any]:
    """The arguments of a call over its buffers: the values (inputs, then outputs; arrays
    are kernelc arrays over XLA's buffers), the vmap batch size folded into the arrays'
    first dimension, the device and the stream. The first `skip_results` results are
    in-out buffers, which XLA also passes as inputs."""
    ins, outs = xla_ffi.buffers(frame.args), xla_ffi.buffers(frame.rets)
    num_arrays = sum(arg.is_array for arg in inputs)
    if len(ins) != num_arrays or len(outs) != len(outputs) + skip_results:
        raise xla_ffi.FfiError(f"expected {num_arrays} input and {len(outputs) + skip_results} "
                               f"output buffers, got {len(ins)} and {len(outs)}")
    device, stream = call_device(frame, platform)
    values: list[Any] = []
    batch = 1
    buffers, scalars = iter(ins), iter(statics)
    for arg in inputs:
        if not arg.is_array:
            values.append(next(scalars))
            continue
        view, size = arg.view(next(buffers), device)
        batch = size if batch == 1 else batch
        values.append(view)
    for arg, buffer in zip(outputs, outs[skip_results:]):
        values.append(arg.view(buffer, device)[0])
    return values, batch, device, stream


class FfiKernel:
    """A kernel callable from JAX (what `jax_kernel` returns without `enable_backward`).

    Calling it with the input arguments (JAX arrays, and static scalars) returns the list of
    its outputs: the in-out arguments, then the output arguments.
    """

    def __init__(self, kernel: Any, num_outputs: int, vmap_method: str | None,
                 launch_dims: Any, output_dims: Any, in_out_argnames: Sequence[str] | None,
                 module_preload_mode: JaxModulePreloadMode, has_side_effect: bool,
                 block_dim: int | None) -> None:
        self.kernel = kernel
        self.num_outputs = num_outputs
        self.vmap_method = vmap_method
        self.launch_dims = launch_dims
        self.output_dims = output_dims
        self.module_preload_mode = module_preload_mode
        self.has_side_effect = has_side_effect
        self.block_dim = block_dim
        params = [(n, kernel.arg_annotation(n)) for n in kernel.arg_names]
        self.inputs, self.outputs = split_args(params, num_outputs, in_out_argnames)
        self.num_in_out = sum(arg.in_out for arg in self.inputs)
        self.first_array = next((i for i, a in enumerate(self.inputs) if a.is_array), None)
        self.aliases = input_output_aliases(self.inputs)
        self.calls = CallTable()
        self._preloaded = False
        self.name = target_name(kernel.key)
        xla_ffi.register_target(self.name, self._run)

    def __call__(self, *args: Any, output_dims: Any = None, launch_dims: Any = None,
                 vmap_method: str | None = None) -> list[Any]:
        import jax

        arrays, statics, fixed_dims = self.trace_inputs(args, launch_dims)
        dims = fixed_dims or self.inputs[self.first_array].kc_shape(args[self.first_array].shape)
        output_dims = self.output_dims if output_dims is None else output_dims
        types = output_types(self.inputs, self.outputs, args,
                             dims if output_dims is None else output_dims)
        call = jax.ffi.ffi_call(self.name, types, input_output_aliases=self.aliases,
                                vmap_method=self.vmap_method if vmap_method is None
                                else vmap_method, has_side_effect=self.has_side_effect)
        self.preload()
        call_id = self.calls.id_for((statics, fixed_dims))
        return call(*arrays, call_id=np.int64(call_id))

    def trace_inputs(self, args: Sequence[Any], launch_dims: Any
                     ) -> tuple[list[Any], tuple[Any, ...], tuple[int, ...] | None]:
        """(array arguments, static scalar values, launch shape or None to infer it from the
        first array input when the call runs)."""
        if len(args) != len(self.inputs):
            names = ", ".join(arg.name for arg in self.inputs)
            raise ValueError(f"kernel '{self.kernel.__name__}' takes {len(self.inputs)} inputs "
                             f"({names}), {len(args)} given")
        arrays, statics = [], []
        for arg, value in zip(self.inputs, args):
            if arg.is_array:
                arg.check_input(value)
                arrays.append(value)
            else:
                statics.append(arg.static_value(value))
        launch_dims = self.launch_dims if launch_dims is None else launch_dims
        if launch_dims is not None:
            return arrays, tuple(statics), normalize_dims(launch_dims, "launch_dims")
        if self.first_array is None:
            raise RuntimeError(f"kernel '{self.kernel.__name__}' has no input array to take "
                               f"the launch dimensions from: pass launch_dims")
        return arrays, tuple(statics), None

    def preload(self) -> None:
        if not self._preloaded:
            self._preloaded = True
            for device in preload_devices(self.module_preload_mode):
                compile_for(self.kernel, device)

    def run_dims(self, values: Sequence[Any], fixed_dims: tuple[int, ...] | None,
                 batch: int) -> tuple[int, ...]:
        """The launch shape of a running call: the first input array's kernelc shape, or the
        fixed one with the vmap batch folded into its first dimension."""
        if fixed_dims is None:
            return values[self.first_array].shape
        return (fixed_dims[0] * batch, *fixed_dims[1:])

    def _run(self, frame: xla_ffi.CallFrame, platform: str) -> None:
        from kernelc.runtime.launch import launch

        statics, fixed_dims = self.calls[xla_ffi.call_id(frame)]
        values, batch, device, stream = bind_call(frame, platform, self.inputs, self.outputs,
                                                  statics, self.num_in_out)
        dims = self.run_dims(values, fixed_dims, batch)
        count = len(self.inputs)
        launch(self.kernel, dims, inputs=values[:count], outputs=values[count:], device=device,
               stream=stream, block_dim=self.block_dim, record_tape=False)
