"""Kernel launches on CUDA devices: load the image, pack the parameters once, launch.

Parameter passing. The generated entry point takes its parameters by value in the layout of
`kernelc.codegen.cuda_layout.ParamLayout`. Each `CudaLaunch` packs them once into one
8-byte-aligned host buffer and builds, also once, the `void*[]` array of pointers to each
parameter inside that buffer; `cuLaunchKernel` gets that array's address as `kernelParams`.
`kernelParams` is preferred over `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE/END) because
cuda.bindings takes an integer `kernelParams` as a ready `void**` as is, whereas an `extra`
list is converted into a fresh C array on every call; and the driver copies the parameter
values at launch time, so the same buffer can be repacked and relaunched at once. Nothing is
allocated per launch.

Grid. `grid = min(ceil(size / block_dim), sm_count * blocks_per_sm)`: one full wave of the
GPU at most, since the kernel covers any remaining threads with its grid-stride loop.
"""

from __future__ import annotations

import ctypes
import math
import time
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.codegen.cuda_layout import ERROR_SIZE, ArrayArg, ParamLayout
from kernelc.runtime import cuda, cuda_module
from kernelc.runtime.context import get_runtime
from kernelc.runtime.cpu import ErrorRecord, raise_kernel_error
from kernelc.runtime.launch_cmd import ParamSetters

DEFAULT_BLOCK_DIM = 256
from kernelc.runtime.launch import CUDA_MEMO, launch_activity  # noqa: E402
from kernelc.timing.history import JitFlag  # noqa: E402

_KERNEL_HISTORY_BIT = int(JitFlag.KernelHistory)


class CudaKernel:
    """A kernel specialisation loaded on one device."""

    def __init__(self, kernel: Any, types: tuple[T.Type, ...], device: Any, image: Any,
                 function: Any, load_time: float) -> None:
        self.kernel = kernel
        self.types = types
        self.device = device
        self.function = function
        self.params: ParamLayout = image.source.params
        self.check_locs = image.source.check_locs
        self.hash = image.key
        self.source = image.source.text
        self.codegen_time = image.codegen_time
        self.backend_time = image.backend_time + load_time
        self.cache = image.cache
        self.occupancy: dict[int, int] = {}  # block_dim -> resident blocks per SM
        self.error: Any = None  # the debug-mode kc_error record (an Allocation)
        # Ids of arrays with order-dependent atomics (see `check_deterministic_cuda`).
        self.order_dependent: frozenset[int] | None = None

    def blocks_per_sm(self, block_dim: int) -> int:
        found = self.occupancy.get(block_dim)
        if found is None:
            found = self.occupancy[block_dim] = cuda_module.blocks_per_sm(self.function, block_dim)
        return found


def load_cuda_kernel(kernel: Any, types: Sequence[T.Type], device: Any) -> CudaKernel:
    """The kernel specialised for `types`, compiled (or cached) and loaded on `device`."""
    from kernelc.runtime.cuda_compile import build_cuda_image, cuda_options

    options = cuda_options()
    key = ("cuda-loaded", tuple(types), device.alias, options)
    found = kernel.compiled.get(key)
    if found is not None:
        return found
    image = build_cuda_image(kernel, tuple(types), device.arch)
    t0 = time.perf_counter()
    _, function = cuda_module.load_module(device, image.image, image.format, image.source.entry)
    compiled = CudaKernel(kernel, tuple(types), device, image, function,
                          (time.perf_counter() - t0) * 1e3)
    if options.debug:
        # One record per loaded kernel, made here so that no launch (and no graph capture)
        # allocates; a check that fails writes it, the launcher reads and clears it.
        compiled.error = cuda.memory_backend().alloc(device, ERROR_SIZE, False)
        info = cuda.device_info(device)
        cuda.fill_linear(cuda.stream_handle(info), compiled.error.ptr, b"\0", ERROR_SIZE)
    kernel.compiled[key] = compiled
    return compiled


def _arg_value(t: T.Type, value: Any) -> Any:
    """A kernel argument as `ParamLayout.pack` takes it."""
    if isinstance(t, T.ArrayType):
        if value is None:
            return ArrayArg(0, (0,) * t.ndim, (0,) * t.ndim)
        return ArrayArg(int(value.ptr), tuple(value.shape), tuple(value.strides))
    if not isinstance(t, T.ScalarType):
        return value  # vectors, matrices, structs: ParamLayout.pack lays out their bytes
    if t.is_bool:
        return bool(value)
    if t.is_float:
        return float(value)
    bits = t.bits
    wrapped = int(value) & ((1 << bits) - 1)  # fixed-width integers wrap, as in kernels
    if t.kind != "uint" and wrapped >= 1 << (bits - 1):
        wrapped -= 1 << bits
    return wrapped


class CudaLaunch(ParamSetters):
    """A CUDA launch with its parameters packed once; `.launch()` reruns it.

    Returned by `kc.launch(..., record_cmd=True)` on a CUDA device. The packed buffer and the
    pointer array live as long as this object and are reused by every `.launch()`.
    """

    def __init__(self, kernel: Any, compiled: CudaKernel, dims: tuple[int, ...],
                 values: Sequence[Any], device: Any, stream: Any = None,
                 block_dim: int | None = None) -> None:
        self.kernel = kernel
        self.compiled = compiled
        self.dims = dims
        self.device = device
        self.stream = stream
        self.values = list(values)  # keeps the arrays alive while their addresses are packed
        self.recorded = False
        self.size = math.prod(dims)
        self.block_dim = int(block_dim or DEFAULT_BLOCK_DIM)
        if not 1 <= self.block_dim <= 1024:
            raise ValueError(f"block_dim must be 1 to 1024, got {self.block_dim}")
        layout = compiled.params
        self.buffer = (ctypes.c_uint64 * (layout.size // 8))()
        base = ctypes.addressof(self.buffer)
        self.pointers = (ctypes.c_void_p * len(layout.fields))(
            *[base + field.offset for field in layout.fields])
        self.params_address = ctypes.addressof(self.pointers)
        self.packs_structs = any(isinstance(field.type, T.StructType)
                                 for field in layout.fields[1:])
        info = self.info = cuda.device_info(device)
        self.grid = cuda_module.grid_size(self.size, self.block_dim, info.sm_count,
                                   compiled.blocks_per_sm(self.block_dim))
        self.pack()

    def pack(self) -> None:
        """(Re)writes the parameter buffer in place from `values` and `dims`."""
        types = [field.type for field in self.compiled.params.fields[1:]]
        error_ptr = self.compiled.error.ptr if self.compiled.error is not None else 0
        data = self.compiled.params.pack(
            self.dims, error_ptr, [_arg_value(t, v) for t, v in zip(types, self.values)])
        ctypes.memmove(self.buffer, data, len(data))

    def set_param_at_index(self, index: int, value: Any, adjoint: bool = False) -> None:
        """Replaces one kernel argument (checked as by `kc.launch`: same type) and repacks
        the same buffer. Adjoints are set on backward launches only."""
        from kernelc.runtime.launch_cmd import forward_argument

        index, self.values[index] = forward_argument(
            self, index, value, adjoint, lambda k: self.compiled.params.fields[k + 1].type)
        self.pack()

    def set_params(self, values: Sequence[Any]) -> None:
        """Replaces every argument, in parameter order."""
        if len(values) != len(self.values):
            raise ValueError(f"kernel '{self.kernel.__name__}' takes {len(self.values)} "
                             f"arguments, {len(values)} given")
        self.values = list(values)
        self.pack()

    def set_dim(self, dim: int | tuple[int, ...]) -> None:
        """Changes the launch shape (the grid follows) without repacking the arguments."""
        from kernelc.runtime.launch import normalize_dim

        self.dims = normalize_dim(self.kernel, dim)
        self.size = math.prod(self.dims)
        info = cuda.device_info(self.device)
        self.grid = cuda_module.grid_size(self.size, self.block_dim, info.sm_count,
                                   self.compiled.blocks_per_sm(self.block_dim))
        self.pack()

    def launch(self, stream: Any = None) -> None:
        """Launches on `stream`, else the stream given at record time, else the current one.
        A recorded launch with struct arguments packs them again first: as in Warp, changes
        to a struct instance show up in the launches recorded with it."""
        if self.size == 0:
            return
        if self.recorded and self.packs_structs:
            self.pack()
        run_cuda(self, stream if stream is not None else self.stream)


def run_cuda(cmd: CudaLaunch, stream: Any) -> None:
    """Issues one launch, with activity timing, kernel history and the debug check."""
    info = cuda.device_info(cmd.device)
    handle = cuda.stream_handle(info, stream)
    rt = get_runtime()
    rec = rt.recorder
    history = rt.flags & _KERNEL_HISTORY_BIT
    if (rec is None or not rec.wants(launch_activity(cmd.kernel)[0])) and not history:
        _issue(cmd, handle)
    else:
        _issue_observed(cmd, info, stream, handle, rec, history)
    if info.capturing:
        info.capture_refs.append(cmd)  # the graph keeps the argument arrays alive
    elif cmd.compiled.error is not None:
        _check_error(cmd, handle)
    cmd.compiled.cache = "memory"  # later launches find it in memory


def _issue(cmd: CudaLaunch, handle: Any) -> None:
    cuda.call(cuda.cu.cuLaunchKernel, cmd.compiled.function, cmd.grid, 1, 1, cmd.block_dim, 1,
              1, 0, handle, cmd.params_address, 0)


def _issue_observed(cmd: CudaLaunch, info: Any, stream: Any, handle: Any, rec: Any,
                    history: int) -> None:
    # The recorder and the history events go on the device's current stream; make the
    # launch's stream current meanwhile, so they bracket this launch and nothing else.
    saved = info.current_stream
    if stream is not None:
        info.current_stream = stream
    try:
        kind, name = launch_activity(cmd.kernel)
        token = rec.begin(cmd.device, name, kind) if rec is not None and rec.wants(kind) \
            else None
        events = None
        if history:
            events = (cuda.make_event(info.ordinal, True, False),
                      cuda.make_event(info.ordinal, True, False))
            events[0].record(None)
        _issue(cmd, handle)
        if events is not None:
            events[1].record(None)
        if token is not None:
            rec.end(token)
    finally:
        info.current_stream = saved
    if events is not None:
        get_runtime().history.append(_history_record(cmd, events))


def _history_record(cmd: CudaLaunch, events: tuple[Any, Any]) -> dict[str, Any]:
    from kernelc.timing.history import launch_record

    start, end = events

    def execution_time() -> float:  # read when kernel_history() is called, not now
        end.synchronize()
        return start.elapsed_time(end)

    return launch_record(cmd.kernel, cmd.compiled, cmd.compiled.types, cmd.dims, cmd.device,
                         execution_time)


def _check_error(cmd: CudaLaunch, handle: Any) -> None:
    """Debug mode: waits for the launch and raises if a check wrote the error record."""
    record = ErrorRecord()
    ptr = cmd.compiled.error.ptr
    cuda.call(cuda.cu.cuMemcpyDtoHAsync, ctypes.addressof(record), ptr, ERROR_SIZE, handle)
    cuda.call(cuda.cu.cuStreamSynchronize, handle)
    if record.code:
        cuda.fill_linear(handle, ptr, b"\0", ERROR_SIZE)  # ready for the next launch
        raise_kernel_error(cmd.kernel, cmd.compiled, record)


def check_deterministic_cuda(kernel: Any, compiled: Any) -> None:
    """Raises `WarpDeterminismError` for a kernel with order-dependent atomics when its
    deterministic mode is set: the CUDA backend cannot order its threads' updates yet."""
    from kernelc.runtime.expand import deterministic_mode

    mode = deterministic_mode(kernel)
    if not mode:
        return
    found = compiled.order_dependent
    if found is None:
        from kernelc.ir.analysis import order_dependent_atomics, thread_private_params
        from kernelc.runtime.compiler import optimized_ir

        fn = optimized_ir(kernel, compiled.types).kernel
        found = compiled.order_dependent = order_dependent_atomics(
            fn, thread_private_params(fn))
    if found:
        from kernelc.errors import WarpDeterminismError

        loc = kernel.source.loc(kernel.source.tree)
        raise WarpDeterminismError(
            f"{loc.file}:{loc.line}: kernel '{kernel.__name__}' has atomics whose result "
            f"depends on the order its threads run (float adds, compare-and-swap, exchange "
            f"or counters), and kc.DeterministicMode.{mode.name} is set: kernelc orders them "
            f"on the CPU only. Launch it on the CPU, or set the mode to "
            f"kc.DeterministicMode.NOT_GUARANTEED for its module")


def launch_cuda(kernel: Any, dims: tuple[int, ...], values: Sequence[Any],
                types: tuple[T.Type, ...], device: Any, stream: Any, block_dim: int | None,
                record_cmd: bool, call: tuple | None = None) -> CudaLaunch | None:
    """`kc.launch` on a CUDA device, after the arguments were checked. `call` is the
    launch's (dim, device, block_dim) as given, which `relaunch` compares next time."""
    compiled = load_cuda_kernel(kernel, types, device)
    check_deterministic_cuda(kernel, compiled)
    cmd = CudaLaunch(kernel, compiled, dims, values, device, stream, block_dim)
    if record_cmd:
        cmd.recorded = True  # packs its struct arguments again at each launch, as in Warp
        return cmd
    refs = _reuse_refs(values) if call is not None and not cmd.info.capturing else None
    cmd.launch()
    if refs is not None:
        kernel.compiled[_MEMO] = CudaMemo(call, stream, refs, cmd)
        cmd.values = None  # the memo holds the arrays weakly; cuLaunchKernel has copied them
    return None


_MEMO = CUDA_MEMO  # in `kernel.compiled`, so that whatever clears the code clears it


class CudaMemo:
    """A kernel's last CUDA launch, kept so that a simulation loop's next launch with the
    same argument objects skips the checks and the packing. It holds the arrays weakly."""

    __slots__ = ("call", "stream", "refs", "cmd", "settings")

    def __init__(self, call: tuple, stream: Any, refs: list, cmd: CudaLaunch):
        self.call, self.stream, self.refs, self.cmd = call, stream, refs, cmd
        self.settings = _settings(cmd.kernel)


def _settings(kernel: Any) -> tuple:
    """The settings a packed CUDA launch depends on besides its arguments."""
    from kernelc.config import config

    rt = get_runtime()
    options = rt.extras.get("module_options")
    return (config.mode, config.lineinfo, config.line_directives, config.verify_fp,
            config.deterministic_epoch, rt.current_device,
            options and options.get(kernel.module, {}).get("block_dim"))


def relaunch(kernel: Any, dim: Any, device: Any, stream: Any, block_dim: Any,
             values: Sequence[Any]) -> CudaLaunch | None:
    """Reruns the kernel's last CUDA launch if this one is the same call with the same
    arrays (and settings); Python numbers may be new ones of the same type (a time step),
    which are packed again in place. Returns the command, else None (nothing ran)."""
    memo = kernel.compiled.get(_MEMO)
    if memo is None or memo.call[0] != dim or memo.call[1] != device \
            or memo.call[2] != block_dim or memo.stream is not stream \
            or len(memo.refs) != len(values):
        return None
    refs, new_numbers = memo.refs, []
    for i, v in enumerate(values):
        r = refs[i]
        if type(r) is weakref.ReferenceType:
            if r() is not v:
                return None
        elif r is not v:
            if type(r) is not type(v):
                return None
            new_numbers.append(i)
    cmd = memo.cmd
    if memo.settings != _settings(kernel) or cmd.info.capturing:
        # A capture records a command of its own, and keeps it: no memo while it is open.
        del kernel.compiled[_MEMO]
        return None
    cmd.values = list(values)
    if new_numbers:
        for i in new_numbers:
            refs[i] = values[i]
        cmd.pack()  # cuLaunchKernel copies the parameters: rewriting them in place is safe
    try:
        cmd.launch()
    finally:
        cmd.values = None  # the memo holds the arrays weakly
    return cmd


def _reuse_refs(values: Sequence[Any]) -> list | None:
    """What the next launch compares its arguments with to reuse this packing: weak
    references to the arrays (a memo must not keep them alive) and the scalars themselves;
    None when an argument could change in place (a struct, a vector), which forbids reuse."""
    from kernelc.runtime.launch_reuse import _array_class

    array, refs = _array_class(), []
    for v in values:
        if isinstance(v, array) or isinstance(getattr(v, "_kc_type", None), T.IndexedArrayType):
            refs.append(weakref.ref(v))
        elif isinstance(v, (int, float, np.generic)):
            refs.append(v)
        else:
            return None
    return refs
