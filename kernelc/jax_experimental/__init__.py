"""kernelc kernels as JAX operations (Warp's `warp.jax_experimental`).

`jax_kernel` wraps one kernel, `jax_callable` a Python function that launches kernels, and
`register_ffi_callback` any Python function over XLA buffers. Importing this package does
not import JAX; the functions do, when called. See docs/jax.md.
"""

from kernelc.jax_experimental.ffi import (
    ExecutionContext,
    FfiBuffer,
    JaxCallableGraphMode,
    JaxModulePreloadMode,
    clear_jax_callable_graph_cache,
    jax_callable,
    jax_kernel,
    register_ffi_callback,
)

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
