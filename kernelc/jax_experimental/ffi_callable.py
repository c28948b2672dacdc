"""`jax_callable`: a Python function that launches kernelc kernels, called from JAX.

The function's parameters are annotated like a kernel's. When XLA runs the call, the
function is called with kernelc arrays over XLA's buffers (and the static scalars), with
the call's device current (and on a GPU, XLA's stream).
"""

from __future__ import annotations

import collections
import contextlib
import inspect
from collections.abc import Callable, Sequence
from enum import IntEnum
from typing import Any

import numpy as np

from kernelc.jax_experimental import xla_ffi
from kernelc.jax_experimental.ffi_args import input_output_aliases, output_types, split_args
from kernelc.jax_experimental.ffi_kernel import (
    CallTable,
    JaxModulePreloadMode,
    bind_call,
    preload_devices,
    target_name,
)


class JaxCallableGraphMode(IntEnum):
    """How a `jax_callable` relates to CUDA graphs (Warp's modes).

    kernelc runs `NONE` and `JAX` alike: the function runs on every call, outside any graph
    (on a GPU, XLA is told the call cannot be recorded into its command buffers). The
    `WARP*` modes, which capture kernelc graphs, are not supported: a call raises.
    """

    NONE = 0
    JAX = 1
    WARP = 2
    WARP_STAGED = 3
    WARP_STAGED_EX = 4


JAX_CALLABLE_DEFAULT_GRAPH_CACHE_MAX = 32


def _parameters(func: Callable) -> list[tuple[str, Any]]:
    """(name, annotation) of each parameter; every one must be annotated, nothing returned."""
    annotations = inspect.get_annotations(func, eval_str=True)
    names = list(inspect.signature(func).parameters)
    missing = [n for n in names if n not in annotations]
    if missing:
        raise RuntimeError(f"function '{func.__qualname__}' needs type annotations on every "
                           f"argument, as a kernel; missing: {', '.join(missing)}")
    if annotations.get("return") is not None:
        raise TypeError(f"function '{func.__qualname__}' must not return a value: its "
                        f"outputs are its output arguments")
    return [(n, annotations[n]) for n in names]


class FfiCallable:
    """A Python function callable from JAX (what `jax_callable` returns).

    Calling it with the input arguments returns the list of its outputs: the in-out
    arguments, then the output arguments.
    """

    def __init__(self, func: Callable, num_outputs: int, graph_mode: JaxCallableGraphMode,
                 vmap_method: str | None, output_dims: Any,
                 in_out_argnames: Sequence[str] | None, stage_in_argnames: Any,
                 stage_out_argnames: Any, graph_cache_max: int | None,
                 module_preload_mode: JaxModulePreloadMode, has_side_effect: bool) -> None:
        self.func = func
        self.num_outputs = num_outputs
        self.graph_mode = JaxCallableGraphMode(graph_mode)
        self.vmap_method = vmap_method
        self.output_dims = output_dims
        self.stage_in_argnames = stage_in_argnames
        self.stage_out_argnames = stage_out_argnames
        self.module_preload_mode = module_preload_mode
        self.has_side_effect = has_side_effect
        self.inputs, self.outputs = split_args(_parameters(func), num_outputs, in_out_argnames)
        self.num_in_out = sum(arg.in_out for arg in self.inputs)
        self.first_array = next((i for i, a in enumerate(self.inputs) if a.is_array), None)
        self.aliases = input_output_aliases(self.inputs)
        self.calls = CallTable()
        # Graphs captured per call (`WARP` mode); kept for Warp's cache API, empty here.
        self.captures: collections.OrderedDict = collections.OrderedDict()
        self._graph_cache_max = graph_cache_max
        self._preloaded = False
        self.name = target_name(f"{func.__module__}.{func.__qualname__}")
        xla_ffi.register_target(self.name, self._run)

    @property
    def graph_cache_max(self) -> int | None:
        """The most graphs kept for `JaxCallableGraphMode.WARP` (None: no limit)."""
        return self._graph_cache_max

    @graph_cache_max.setter
    def graph_cache_max(self, value: int | None) -> None:
        self._graph_cache_max = value

    @property
    def graph_cache_size(self) -> int:
        """The number of graphs kept."""
        return len(self.captures)

    def __call__(self, *args: Any, output_dims: Any = None,
                 vmap_method: str | None = None) -> list[Any]:
        import jax

        if len(args) != len(self.inputs):
            names = ", ".join(arg.name for arg in self.inputs)
            raise ValueError(f"'{self.func.__qualname__}' takes {len(self.inputs)} inputs "
                             f"({names}), {len(args)} given")
        arrays, statics = [], []
        for arg, value in zip(self.inputs, args):
            if arg.is_array:
                arg.check_input(value)
                arrays.append(value)
            else:
                statics.append(arg.static_value(value))
        output_dims = self.output_dims if output_dims is None else output_dims
        if output_dims is None:
            if self.first_array is None:
                raise ValueError(f"'{self.func.__qualname__}' has no input array to take the "
                                 f"output dimensions from: pass output_dims")
            output_dims = self.inputs[self.first_array].kc_shape(args[self.first_array].shape)
        types = output_types(self.inputs, self.outputs, args, output_dims)
        call = jax.ffi.ffi_call(self.name, types, input_output_aliases=self.aliases,
                                vmap_method=self.vmap_method if vmap_method is None
                                else vmap_method, has_side_effect=self.has_side_effect)
        self._preload()
        call_id = self.calls.id_for(tuple(statics))
        return call(*arrays, call_id=np.int64(call_id))

    def _preload(self) -> None:
        if not self._preloaded:
            from kernelc.runtime.module import load_module

            self._preloaded = True
            for device in preload_devices(self.module_preload_mode):
                load_module(self.func.__module__, device)

    def _run(self, frame: xla_ffi.CallFrame, platform: str) -> None:
        from kernelc.runtime.device import ScopedDevice
        from kernelc.runtime.streams import ScopedStream

        if self.graph_mode not in (JaxCallableGraphMode.NONE, JaxCallableGraphMode.JAX):
            raise xla_ffi.FfiError(f"JaxCallableGraphMode.{self.graph_mode.name} is not "
                                   f"supported by kernelc; use NONE or JAX",
                                   xla_ffi.ERROR_UNIMPLEMENTED)
        statics = self.calls[xla_ffi.call_id(frame)]
        values, _, device, stream = bind_call(frame, platform, self.inputs, self.outputs,
                                              statics, self.num_in_out)
        scope = ScopedStream(stream, sync_enter=False) if stream is not None \
            else contextlib.nullcontext()
        with ScopedDevice(device), scope:
            self.func(*values)


def clear_jax_callable_graph_cache(callable: FfiCallable | None = None) -> None:  # noqa: A002
    """Drops the graphs kept by one `jax_callable` (None: by all of them)."""
    from kernelc.jax_experimental.ffi import registered_callables

    for target in [callable] if callable is not None else registered_callables():
        target.captures.clear()
