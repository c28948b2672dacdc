"""`jax_kernel(..., enable_backward=True)`: a kernel with a JAX gradient.

The forward call is the kernel's FFI target; a `jax.custom_vjp` pairs it with a second FFI
target that runs kernelc's backward kernel (`kc.launch(..., adjoint=True)`) on the inputs,
the forward outputs and the outputs' cotangents, writing the inputs' gradients into fresh
XLA buffers. Scalar arguments are static: they take no gradient.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kernelc.jax_experimental import xla_ffi
from kernelc.jax_experimental.ffi_args import FfiArg
from kernelc.jax_experimental.ffi_kernel import FfiKernel, bind_call, target_name

_MISSING = object()


class AdjointTarget:
    """The FFI target of a kernel's backward launch.

    Its call takes the forward call's array inputs, the forward outputs and their
    cotangents, and returns one gradient per array input (zero-filled, then accumulated
    into by the backward kernel).
    """

    def __init__(self, forward: FfiKernel) -> None:
        self.forward = forward
        outputs = forward.outputs
        self.call_inputs = [*forward.inputs, *outputs,
                            *(FfiArg(f"adj_{a.name}", a.kc_type) for a in outputs)]
        self.gradients = [FfiArg(f"adj_{a.name}", a.kc_type) for a in forward.inputs
                          if a.is_array]
        self.name = target_name(forward.kernel.key + ".adjoint")
        xla_ffi.register_target(self.name, self._run)

    def __call__(self, args: Sequence[Any], outputs: Sequence[Any],
                 cotangents: Sequence[Any]) -> list[Any]:
        import jax
        import jax.numpy as jnp

        arrays, statics, fixed_dims = self.forward.trace_inputs(args, None)
        # Integer outputs have float0 cotangents, which XLA cannot take: use zeros.
        cotangents = [jnp.zeros(out.shape, out.dtype) if ct.dtype == jax.dtypes.float0 else ct
                      for out, ct in zip(outputs, cotangents)]
        types = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays]
        call = jax.ffi.ffi_call(self.name, types, vmap_method=self.forward.vmap_method,
                                has_side_effect=self.forward.has_side_effect)
        call_id = self.forward.calls.id_for((statics, fixed_dims))
        return call(*arrays, *outputs, *cotangents, call_id=np.int64(call_id))

    def _run(self, frame: xla_ffi.CallFrame, platform: str) -> None:
        from kernelc.runtime.launch import launch
        from kernelc.runtime.streams import ScopedStream

        forward = self.forward
        statics, fixed_dims = forward.calls[xla_ffi.call_id(frame)]
        values, batch, device, stream = bind_call(frame, platform, self.call_inputs,
                                                  self.gradients, statics)
        count, num_outputs = len(forward.inputs), len(forward.outputs)
        inputs, rest = values[:count], values[count:]
        outputs, cotangents = rest[:num_outputs], rest[num_outputs:2 * num_outputs]
        gradients = iter(rest[2 * num_outputs:])
        adj_inputs = [next(gradients) if arg.is_array else None for arg in forward.inputs]
        scope = ScopedStream(stream, sync_enter=False) if stream is not None \
            else contextlib.nullcontext()
        with scope:
            for gradient in adj_inputs:
                if gradient is not None:
                    gradient.zero_()  # the backward kernel adds into it
            launch(forward.kernel, forward.run_dims(values, fixed_dims, batch), inputs=inputs,
                   outputs=outputs, adj_inputs=adj_inputs, adj_outputs=cotangents,
                   adjoint=True, device=device, stream=stream, block_dim=forward.block_dim,
                   record_tape=False)


def differentiable_kernel(forward: FfiKernel) -> Callable[..., list[Any]]:
    """A jitted function of the forward call's inputs with a `jax.custom_vjp` gradient."""
    import jax

    adjoint = AdjointTarget(forward)
    static_argnums = tuple(i for i, arg in enumerate(forward.inputs) if not arg.is_array)

    def with_statics(arrays: Sequence[Any], statics: Sequence[Any]) -> list[Any]:
        arrays, statics = iter(arrays), iter(statics)
        return [next(arrays) if arg.is_array else next(statics) for arg in forward.inputs]

    def primal(*args: Any) -> list[Any]:
        return forward(*args)

    def primal_with_residuals(*args: Any) -> tuple[list[Any], Any]:
        outputs = forward(*args)
        arrays = [value for arg, value in zip(forward.inputs, args) if arg.is_array]
        return outputs, (arrays, outputs)

    def backward(*rest: Any) -> tuple[Any, ...]:
        statics, (arrays, outputs), cotangents = rest[:-2], rest[-2], rest[-1]
        gradients = adjoint(with_statics(arrays, statics), outputs, cotangents)
        # Integer inputs take float0 cotangents in JAX.
        return tuple(np.zeros(g.shape, jax.dtypes.float0)
                     if not np.issubdtype(g.dtype, np.inexact) else g for g in gradients)

    function = jax.custom_vjp(primal, nondiff_argnums=static_argnums)
    function.defvjp(primal_with_residuals, backward)
    jitted = jax.jit(function, static_argnums=static_argnums)

    def call(*args: Any, launch_dims: Any = _MISSING, output_dims: Any = _MISSING,
             vmap_method: Any = _MISSING) -> list[Any]:
        for name, value in (("launch_dims", launch_dims), ("output_dims", output_dims),
                            ("vmap_method", vmap_method)):
            if value is not _MISSING:
                raise TypeError(f"jax_kernel(): {name} cannot be given per call when "
                                f"enable_backward=True; pass it to jax_kernel() instead")
        return jitted(*args)

    call.__name__ = forward.kernel.__name__
    call.__doc__ = forward.kernel.__doc__
    call.block_dim = forward.block_dim  # type: ignore[attr-defined]
    return call
