"""kernelc: Warp-style Python kernels compiled to LLVM (CPU) and CUDA-C (NVIDIA GPUs).

Use it as `import kernelc as kc` (or `import kernelc as wp` for Warp programs).
"""

__version__ = "0.1.0"

# ---- types -------------------------------------------------------------------------------
from kernelc.types import (  # noqa: E402
    bool_ as bool,  # noqa: A001
    float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32,
    uint64, handle, dtype_from_numpy, dtype_to_numpy, fixedarray,
)
from kernelc.constants import *  # noqa: E402,F403  (pi, tau, e, inf, nan, ... as in Warp)
from kernelc.errors import (  # noqa: E402
    KernelError, KernelRuntimeError, WarpCodegenAttributeError, WarpCodegenError,
    WarpCodegenIndexError, WarpCodegenKeyError, WarpCodegenTypeError, WarpCodegenValueError,
    WarpDeterminismError,
)
from kernelc.config import DeterministicMode, ReduceMode, config  # noqa: E402
from kernelc.logger import (  # noqa: E402
    LOG_DEBUG, LOG_ERROR, LOG_INFO, LOG_WARNING, Logger, ScopedLogger, ScopedLogLevel,
    get_logger, set_logger,
)
from kernelc.typevars import Float, Int, Scalar  # noqa: E402  (generic func annotations)
from kernelc.types_ref import ref  # noqa: E402  (func parameters by reference)

# ---- language ----------------------------------------------------------------------------
from kernelc.frontend.decorators import Func as Function, Kernel, kernel, func  # noqa: E402
from kernelc.frontend.special import tid, static, printf  # noqa: E402
from kernelc.builtins import BUILTINS as _BUILTINS  # noqa: E402

globals().update({name: entry for name, entry in _BUILTINS.items() if entry.public})

# ---- vectors, matrices, quaternions, transforms, structs ---------------------------------
from kernelc.types_vec import TYPES as _VEC_TYPES, vector, matrix  # noqa: E402
from kernelc.frontend.construct import identity  # noqa: E402
from kernelc.frontend.struct import struct  # noqa: E402
from kernelc.frontend.generic import overload  # noqa: E402
from kernelc.frontend.hash_grid_forms import (  # noqa: E402
    hash_grid_point_id, hash_grid_query, hash_grid_query_next,
)

globals().update(_VEC_TYPES)

# ---- runtime: arrays and devices ---------------------------------------------------------
from kernelc.runtime.device import (  # noqa: E402
    Device, ScopedDevice, get_cuda_device_count, get_cuda_devices, get_device, get_devices,
    get_preferred_device, is_cpu_available, is_cuda_available, set_device, synchronize,
    synchronize_device,
)
from kernelc.runtime.array_annotations import array1d, array2d, array3d, array4d  # noqa: E402
from kernelc.runtime.mempool import (  # noqa: E402
    DeviceLike, ScopedMempool, ScopedMempoolAccess, ScopedPeerAccess, get_cuda_device,
    get_mempool_release_threshold, get_mempool_used_mem_current, get_mempool_used_mem_high,
    is_device_available, is_mempool_access_enabled, is_mempool_access_supported,
    is_mempool_enabled, is_mempool_supported, is_peer_access_enabled, is_peer_access_supported,
    set_mempool_access_enabled, set_mempool_enabled, set_mempool_release_threshold,
    set_peer_access_enabled,
)
from kernelc.runtime.array import (  # noqa: E402
    array, clone, empty, empty_like, full, full_like, ones, ones_like, zeros, zeros_like,
)
from kernelc.runtime.array_interop import from_dlpack, from_numpy, to_dlpack  # noqa: E402
from kernelc.runtime.memory import copy  # noqa: E402
from kernelc.runtime.indexedarray import (  # noqa: E402
    indexedarray, indexedarray1d, indexedarray2d, indexedarray3d, indexedarray4d,
)
from kernelc.runtime.allocators import (  # noqa: E402
    Allocator, CudaManagedAllocator, ScopedAllocator, get_device_allocator, set_cuda_allocator,
    set_device_allocator,
)
from kernelc.runtime.memory_kind import MemoryKind  # noqa: E402
from kernelc.runtime.alloc_tracker import (  # noqa: E402
    ScopedMemoryTracker, print_memory_report,
)

# ---- runtime: launch, compile, cache -----------------------------------------------------
from kernelc.runtime.launch import launch, Launch  # noqa: E402
from kernelc.runtime.compiler import compile_kernel as compile, CompiledKernel  # noqa: E402,A001
from kernelc.runtime.module import (  # noqa: E402
    Module, clear_kernel_cache, constant, force_load, get_module, get_module_options, init,
    load_module, set_module_options,
)
from typing import Any  # noqa: E402  (Warp re-exports typing.Any for generic kernels)

# ---- streams and graphs ---
from kernelc.runtime.streams import (  # noqa: E402
    ScopedStream, Stream, get_stream, set_stream, synchronize_stream, wait_stream,
)
from kernelc.runtime.graph import (  # noqa: E402
    CaptureMode, Graph, ScopedCapture, capture_begin, capture_end, capture_launch,
    is_conditional_graph_supported,
)
from kernelc.runtime.graph_conditional import capture_if, capture_while  # noqa: E402
from kernelc.spatial.hash_grid import HashGrid  # noqa: E402

# ---- timing and profiling ----------------------------------------------------------------
from kernelc.timing.flags import (  # noqa: E402
    TIMING_ALL, TIMING_GRAPH, TIMING_KERNEL, TIMING_KERNEL_BUILTIN, TIMING_MEMCPY, TIMING_MEMSET,
)
from kernelc.timing.activity import (  # noqa: E402
    TimingResult, timing_begin, timing_end, timing_print,
)
from kernelc.timing.timer import ScopedTimer  # noqa: E402
from kernelc.timing.events import (  # noqa: E402
    Event, get_event_elapsed_time, record_event, synchronize_event, wait_event,
)
from kernelc.timing.history import (  # noqa: E402
    JitFlag, flag, kernel_history, scoped_set_flag, set_flag,
)
from kernelc.timing.nvtx import profile_enable, profile_mark, profile_range  # noqa: E402
from kernelc.timing.trace import trace_begin, trace_end, trace_export  # noqa: E402


# Modules whose public names (their `__all__`) load on first use: they define kernels and
# funcs, which importing kernelc should not pay for.
_LAZY_MODULES = (
    # from_torch, to_torch, ...: first, as it loads in a millisecond (torch only when called)
    "kernelc.interop.torch",
    "kernelc.autodiff.tape",  # Tape
    "kernelc.autodiff.grad",  # grad
    "kernelc.autodiff.custom",  # func_grad, adjoint
    "kernelc.frontend.native_funcs",  # func_native
    "kernelc.frontend.address_of",  # address_of
    "kernelc.runtime.aot",  # compile_aot_module, load_aot_module
    "kernelc.lib.noise",
    "kernelc.lib.sampling",
    "kernelc.lib.rotations",  # quat_between_vectors, transform_expand
    "kernelc.frontend.linalg_forms",
    "kernelc.spatial.mesh",
    "kernelc.spatial.bvh",
    "kernelc.frontend.mesh_forms",
    "kernelc.frontend.tile_forms",  # tile_load, tile_store, tile_sum, ...
    "kernelc.frontend.tile_views",  # tile_transpose, tile_view, tile_reshape, ...
    "kernelc.frontend.tile_indexed",  # block_dim, tile_load_indexed, tile_store_indexed, ...
    "kernelc.frontend.tile_linalg",  # tile_matmul, tile_cholesky, ...
    "kernelc.frontend.tile_fft_scan",  # tile_fft, tile_scan_inclusive, tile_sort, ...
    "kernelc.frontend.tile_queries",  # tile_bvh_query_aabb, tile_mesh_query_aabb, ...
    "kernelc.frontend.tile_arange",  # tile_arange
    "kernelc.runtime.tiled",  # launch_tiled
    "kernelc.optim._export",  # `kc.optim`, the optimisers
    "kernelc.autograd._export",  # `kc.autograd`, gradient checks
    "kernelc.spatial.volume",  # Volume
    "kernelc.frontend.volume_forms",  # volume_sample, volume_lookup, ...
    "kernelc.spatial.texture",  # Texture1D/2D/3D, TextureFilterMode, TextureAddressMode
    "kernelc.frontend.texture_forms",  # texture_sample
    "kernelc.geometry._export",  # MarchingCubes (Warp's older name)
    "kernelc.runtime.diagnostics",  # print_diagnostics, get_cuda_driver_version, ...
    "kernelc.timing.cuda_profiler",  # cuda_profiler_start/stop, ScopedCudaProfiler
    "kernelc.interop.jax",  # from_jax, to_jax, jax_kernel, ... (imports jax only when called)
)

# Subpackages reachable as attributes without their own import, like Warp's.
_SUBMODULES = ("utils", "sparse", "render", "geometry", "fem", "jax_experimental")


def __getattr__(name: str):
    import importlib

    if name in _SUBMODULES:  # `kc.sparse`, `kc.render`, ... as after `import warp.sparse`
        return importlib.import_module(f"kernelc.{name}")
    if name == "map":  # `kc.map` (Warp's `wp.map`); loading it loads kernelc.utils
        from kernelc.utils.map import map

        globals()["map"] = map
        return map
    if name == "HashGridQuery":
        from kernelc.spatial.hash_grid_lang import HashGridQuery

        return HashGridQuery
    if not name.startswith("_"):
        for module_name in _LAZY_MODULES:
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as err:
                if err.name != module_name:
                    raise
                continue
            if name in getattr(module, "__all__", ()):
                value = getattr(module, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module 'kernelc' has no attribute {name!r}")
