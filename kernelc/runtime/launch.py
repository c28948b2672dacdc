"""`kc.launch`: check the arguments, get the compiled kernel, pack, run, report."""

from __future__ import annotations

import ctypes
import math
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.config import config
from kernelc.errors import KernelError
from kernelc.runtime.array_interop import is_torch_tensor
from kernelc.runtime.context import get_runtime
from kernelc.runtime.cpu import CpuKernel, ErrorRecord, cpu_state, raise_kernel_error
from kernelc.runtime.cpu_blocks import ResolvedBlockDim, cpu_lanes
from kernelc.runtime.launch_alias import pick_variant, repick_variant
from kernelc.runtime.launch_args import (
    composite_arg_type,
    filled_composites,
    fills_composite,
    struct_arg_type,
)
from kernelc.runtime.launch_cmd import ParamSetters, forward_argument, launch_adjoint
from kernelc.timing.flags import TIMING_KERNEL, TIMING_KERNEL_BUILTIN
from kernelc.timing.history import JitFlag, launch_record  # noqa: E402
from kernelc.timing.trace import active_sink
from kernelc.types_bf16 import to_bits

_KERNEL_HISTORY_BIT = int(JitFlag.KernelHistory)


def normalize_dim(kernel, dim: Any) -> tuple[int, ...]:
    """The launch shape as a tuple of 1 to 4 non-negative ints."""
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim) if isinstance(
        dim, (tuple, list)) else None
    if dims is None or not all(isinstance(d, (int, np.integer)) for d in dims):
        raise KernelError(f"launch dim must be an int or a tuple of ints, got {dim!r}",
                          kernel=kernel.__name__)
    if not 1 <= len(dims) <= 4:
        raise KernelError(f"launch dim must have 1 to 4 dimensions, got {len(dims)}",
                          kernel=kernel.__name__)
    if any(d < 0 for d in dims):
        raise KernelError(f"launch dim must not be negative, got {tuple(dims)}",
                          kernel=kernel.__name__)
    return tuple(int(d) for d in dims)


def arg_type(kernel, name: str, want: T.Type | None, value: Any, device) -> T.Type:
    """The type `value` has as the kernel's parameter `name`; raises KernelError if it cannot."""
    def fail(msg: str):
        return KernelError(f"argument '{name}': {msg}", kernel._param_loc(name), kernel.__name__)

    if isinstance(want, T.IndexedArrayType) or (
            want is None and isinstance(getattr(value, "_kc_type", None), T.IndexedArrayType)):
        from kernelc.runtime.indexedarray import indexed_arg_type

        return indexed_arg_type(want, value, device, fail)
    if want is None or isinstance(want, T.ArrayType):
        kc_type = getattr(value, "_kc_type", None)
        if isinstance(kc_type, T.ArrayType) and getattr(value, "device", None) is None:
            raise fail("got a type-only array (an annotation such as kc.array(dtype=float)); "
                       "pass an array with data")
        if isinstance(kc_type, T.ArrayType) and hasattr(value, "ptr"):
            if want is not None:
                if kc_type.ndim != want.ndim:
                    raise fail(f"expected a {want.ndim}-d array, got a {kc_type.ndim}-d array")
                if want.dtype is not None and kc_type.dtype != want.dtype:
                    raise fail(f"expected an array of {want.dtype!r}, got an array of "
                               f"{kc_type.dtype!r}")
            if value.device != device:
                raise fail(f"array is on device '{value.device}' but the launch is on "
                           f"'{device}'")
            return kc_type
        if value is None and isinstance(want, T.ArrayType) and want.dtype is not None:
            return want  # a null array, as Warp allows
        if isinstance(value, np.ndarray) and want is not None and kc_type is None:
            return _numpy_arg_type(want, value, device, fail)
        if want is None and isinstance(kc_type, (T.VectorType, T.MatrixType)):
            return kc_type  # a host vector/matrix value (`kc.vec3(...)`) for an `Any`
        if isinstance(value, np.ndarray):
            raise fail("expected a kernelc array, got a numpy.ndarray (wrap it with kc.array)")
        if want is not None and kc_type is None and is_torch_tensor(value):
            from kernelc.interop.torch import tensor_arg_type

            return tensor_arg_type(want, value, device, fail)
        if want is not None and isinstance(kc_type, T.IndexedArrayType):
            raise fail(f"expected {want!r}, got a kc.indexedarray (declare the parameter "
                       f"kc.indexedarray(dtype=...), or pass its .contiguous() copy)")
        if want is not None:
            raise fail(f"expected {want!r}, got {type(value).__name__}")
        return _scalar_type_of(value, fail)
    if getattr(want, "admits", None) is not None:  # kc.Float, vector(Any, float), ...
        got = _scalar_type_of(value, fail)
        if not want.admits(got):
            raise fail(f"expected {want!r}, got {type(value).__name__} {value!r}")
        return got
    if isinstance(want, T.ScalarType):
        if isinstance(value, (bool, np.bool_)):
            ok = True
        elif isinstance(value, (int, np.integer)):
            ok = not want.is_bool
        elif isinstance(value, (float, np.floating)):
            ok = want.is_float
        else:
            ok = False
        if not ok:
            raise fail(f"expected {want!r}, got {type(value).__name__} {value!r}")
        return want
    if isinstance(want, T.StructType):
        return struct_arg_type(kernel, name, want, value, fail)
    if isinstance(want, (T.VectorType, T.MatrixType)):
        return composite_arg_type(kernel, name, want, value, fail)
    return _other_arg_type(want, value, fail)


def _numpy_arg_type(want: T.ArrayType, value: np.ndarray, device, fail) -> T.ArrayType:
    """The array type a NumPy array has as a kernel argument. As in Warp, a CPU launch uses
    its memory in place (the kernel's writes show up in it); its dtype must be the
    parameter's exactly (`(n, 3)` float32 for `vec3`), nothing is converted."""
    from kernelc.runtime.memory import aliasable, element_layout

    if not device.is_cpu:
        raise fail(f"a NumPy array can only be used in place by a CPU launch, not on "
                   f"'{device}' (as in Warp); copy it there with kc.array(x, device=...)")
    if want.dtype is None or getattr(want.dtype, "kinds", None) is not None:
        # A generic array parameter (`Any`, `kc.Float`, ...): the NumPy scalar type.
        try:
            elem = T.from_numpy_dtype(value.dtype)
        except TypeError:
            raise fail(f"NumPy dtype {value.dtype} has no kernelc equivalent") from None
        if want.dtype is not None and want.dtype != elem:
            raise fail(f"expected an array of {want.dtype!r}, got a NumPy array of "
                       f"{value.dtype}")
    else:
        elem = want.dtype
    np_dtype, inner = element_layout(elem)
    if value.dtype != np_dtype:
        raise fail(f"expected an array of {elem!r}, got a NumPy array of {value.dtype} "
                   f"(NumPy data is used in place, never converted)")
    ndim = value.ndim - len(inner)
    if ndim != want.ndim or value.shape[ndim:] != inner:
        what = f"shape {value.shape}" if inner else f"a {value.ndim}-d NumPy array"
        trailing = f" of shape (..., {', '.join(map(str, inner))})" if inner else ""
        raise fail(f"expected a {want.ndim}-d array{trailing}, got {what}")
    if not aliasable(value, np_dtype, inner):
        raise fail("this NumPy array cannot be used in place (read-only, misaligned, "
                   "negative strides or unpacked elements); pass kc.array(x) for a copy")
    return T.ArrayType(elem, want.ndim)


def _in_place_arrays(values: Sequence[Any], types: Sequence[T.Type]) -> list[Any]:
    """`values` with each NumPy array or torch tensor argument replaced by a kernelc array
    over its memory."""
    if not any(isinstance(v, np.ndarray) or is_torch_tensor(v) for v in values):
        return list(values)
    from kernelc.interop.torch import tensor_as_array
    from kernelc.runtime.array import array

    return [v if not isinstance(t, T.ArrayType) else
            array(v, dtype=t.dtype, device="cpu", copy=False) if isinstance(v, np.ndarray) else
            tensor_as_array(v, t.dtype) if is_torch_tensor(v) else v
            for v, t in zip(values, types)]


def _scalar_type_of(value: Any, fail) -> T.Type:
    if isinstance(value, (bool, np.bool_)):
        return T.bool_
    if isinstance(value, np.generic):
        return T.number_type(value)
    if isinstance(value, int):
        return T.int32
    if isinstance(value, float):
        return T.float32
    kc_type = getattr(value, "_kc_type", None)
    if kc_type is not None:
        return kc_type
    raise fail(f"cannot pass a {type(value).__name__} to a kernel")


def _other_arg_type(want: T.Type, value: Any, fail) -> T.Type:
    kc_type = getattr(value, "_kc_type", None)
    if kc_type == want:
        return want
    got = repr(kc_type) if kc_type is not None else type(value).__name__
    raise fail(f"expected {want!r}, got {got}")


def pack_args(compiled: CpuKernel, values: Sequence[Any], dims: tuple[int, ...]):
    args = compiled.args_type()
    for k, d in enumerate(dims):
        args.dims[k] = d
    for k in range(len(dims), 4):
        args.dims[k] = 1
    for i, (t, v) in enumerate(zip(compiled.params, values)):
        field = f"p{i}"
        if isinstance(t, T.ArrayType):
            a = getattr(args, field)
            if v is None:
                continue
            a.data = v.ptr
            for k in range(t.ndim):
                a.shape[k] = v.shape[k]
                a.strides[k] = v.strides[k]
        elif isinstance(t, T.ScalarType):
            setattr(args, field, _scalar_bits(t, v))
        else:  # vectors, matrices, structs: their C-layout bytes
            from kernelc.frontend.struct import struct_bytes

            data = struct_bytes(t, v)
            offset = getattr(type(args), field).offset
            ctypes.memmove(ctypes.addressof(args) + offset, data, len(data))
    return args


def _scalar_bits(t: T.ScalarType, v: Any):
    if t.name == "float16":
        return int(np.float16(v).view(np.uint16))
    if t.name == "bfloat16":
        return int(to_bits(v))
    if t.is_float:
        return float(v)
    if t.is_bool:
        return int(bool(v))
    return int(v) & ((1 << t.bits) - 1) if t.kind == "uint" else int(v)


class Launch(ParamSetters):
    """A launch with its arguments packed once (`record_cmd=True`); `.launch()` reruns it.

    Its arguments are replaced with `set_param_at_index`, `set_param_by_name` (checked as
    by `kc.launch`), `set_params` and Warp's `set_param_*_from_ctype`, its shape with
    `set_dim`. Made directly, as Warp's constructor does, it has dim 0 and default
    arguments (null arrays, zeros, new struct instances) to be set before `.launch()`.

    `disjoint` says which variant `compiled` is for these arrays (see `launch_alias.py`):
    True, the one assuming they share no memory; False, the one without; None, the kernel
    makes no such assumption. Replacing an argument checks it again.
    """

    def __new__(cls, kernel: Any, device: Any = None, *, max_blocks: int = 0,
                block_dim: int | None = None, adjoint: bool = False):
        from kernelc.runtime.launch_cmd import record_empty

        return record_empty(kernel, device, adjoint, block_dim)

    def __init__(self, kernel: Any, device: Any = None, *, max_blocks: int = 0,
                 block_dim: int | None = None, adjoint: bool = False) -> None:
        """A recorded launch of `kernel` with default arguments (made by `__new__`).

        Args:
            kernel: A `@kc.kernel` whose parameters have concrete types.
            device: Where it runs (default: the current device). On a CUDA device the
                result is the CUDA launch object, with the same methods.
            max_blocks: Accepted for Warp compatibility.
            block_dim: The block size (on the CPU, see `config.enable_cpu_blocks`).
            adjoint: Launch the backward kernel instead: the setters take
                `adjoint=True` to set an argument's adjoint (an array left None has its
                own `.grad` as adjoint).
        """

    @property
    def block_dim(self) -> int:
        """The threads per block it runs with (1 unless the CPU runs blocks)."""
        return self.compiled.lanes

    @classmethod
    def packed(cls, kernel, compiled: CpuKernel, dims, values, device,
               disjoint: bool | None, recorded: bool = False) -> Launch:
        """The launch of `compiled` with these checked arguments, packed. A `recorded` one
        (returned to the user) packs its struct arguments again at each `.launch()`: as
        in Warp, changes to a struct instance show up in the launches recorded with it."""
        self = object.__new__(cls)
        self.recorded = recorded
        self._setup(kernel, compiled, dims, values, device, disjoint)
        return self

    def _setup(self, kernel, compiled: CpuKernel, dims, values, device,
               disjoint: bool | None) -> None:
        self.kernel = kernel
        self.compiled = compiled
        self.disjoint = disjoint
        self.dims = dims
        self.device = device
        self.values = list(values)  # keeps the arrays alive while the packed pointers exist
        self.size = compiled.threads(math.prod(dims))  # entry runs: threads, or CPU blocks
        self.error = ErrorRecord()
        # Only the thread that made it rewrites its packed arguments: another thread may be
        # running it at that moment.
        self.thread = threading.get_ident()
        self._repack(recheck=False)

    def set_param_at_index(self, index: int, value: Any, adjoint: bool = False) -> None:
        """Replaces argument `index`; the value must have the type the launch was
        compiled for (a NumPy array is used in place, as by `launch`). Adjoints are set on
        backward launches only (`adjoint=True` when recording)."""
        index, self.values[index] = forward_argument(
            self, index, value, adjoint, lambda k: self.compiled.params[k])
        self._repack()

    def set_params(self, values: Sequence[Any]) -> None:
        """Replaces every argument, in parameter order."""
        if len(values) != len(self.values):
            raise ValueError(f"kernel '{self.kernel.__name__}' takes {len(self.values)} "
                             f"arguments, {len(values)} given")
        for i, v in enumerate(values):
            self.set_param_at_index(i, v)

    def set_dim(self, dim: Any) -> None:
        """Changes the launch shape (an int or a tuple of up to 4 ints)."""
        self.dims = normalize_dim(self.kernel, dim)
        self._repack()
        self.size = self.compiled.threads(math.prod(self.dims))

    def array_words(self, index: int):
        """The packed array argument `index` as 64-bit words: data, shape, strides."""
        words = self._words.get(index)
        if words is None:
            nd = self.compiled.params[index].ndim
            offset = getattr(type(self.args), f"p{index}").offset
            words = (ctypes.c_int64 * (1 + 2 * nd)).from_buffer(self.args, offset)
            self._words[index] = words
        return words

    def _repack(self, recheck: bool = True) -> None:
        if recheck:  # an argument changed: it may need the other variant
            self.compiled, self.disjoint = repick_variant(self.kernel, self.compiled,
                                                          self.disjoint, self.values, self.dims)
        self._words: dict[int, Any] = {}
        # Arguments passed by value whose Python objects can change in place.
        self.by_value = [i for i, t in enumerate(self.compiled.params)
                         if isinstance(t, (T.StructType, T.VectorType, T.MatrixType))]
        self.args = pack_args(self.compiled, self.values, self.dims)
        self.args.error = ctypes.addressof(self.error)
        self._args_ptr = ctypes.addressof(self.args)
        # How atomics run: per-worker copies (`expand`), the plain-update variant, in order.
        from kernelc.runtime.expand import plan_atomics

        self.expand, self.variant, self.in_order = plan_atomics(
            self.kernel, self.compiled, self.args, self.values, self.size,
            runs_inline(self.compiled, self.size) or config.num_threads < 2)

    def launch(self) -> None:
        if self.size == 0:
            return
        if self.recorded and self.values is not None:
            for i in self.by_value:
                t = self.compiled.params[i]
                if isinstance(t, T.StructType):
                    from kernelc.frontend.struct import struct_bytes

                    data = struct_bytes(t, self.values[i])
                    offset = getattr(type(self.args), f"p{i}").offset
                    ctypes.memmove(self._args_ptr + offset, data, len(data))
        run_cpu(self.kernel, self.variant, self._args_ptr, self.size, self.error, self.dims,
                self.device, self.expand, self.in_order)


def run_cpu(kernel, compiled: CpuKernel, args_ptr: int, size: int, error: ErrorRecord,
            dims, device, expand=None, in_order: bool = False) -> None:
    rt = get_runtime()
    rec = rt.recorder
    token = None
    if rec is not None:
        kind, name = launch_activity(kernel)
        if rec.wants(kind):
            token = rec.begin(device, name, kind)
    history = rt.flags & _KERNEL_HISTORY_BIT
    trace = rt.trace if rt.trace is not None or not config.compile_time_trace else active_sink()
    t0 = time.perf_counter_ns() if (history or trace is not None) else 0
    if in_order or runs_inline(compiled, size):
        compiled.cfunc(args_ptr, 0, size)
    elif expand is not None:
        expand.run(expand.cfunc, size, cpu_state(config.num_threads).pool)
    else:
        cpu_state(config.num_threads).pool.run(compiled.cfunc, args_ptr, size, 8 if compiled.has_loops else 1)
    if compiled.has_print:
        _flush_c_stdout()
    if token is not None:
        rec.end(token)
    if t0:
        t1 = time.perf_counter_ns()
        if history:
            rt.history.append(launch_record(kernel, compiled, compiled.params, dims, device,
                                            (t1 - t0) / 1e6))
        if trace is not None:
            trace.event(launch_activity(kernel)[1], "launch", t0, t1,
                           {"dim": list(dims), "device": str(device)})
    compiled.cache = "memory"  # later launches find it in memory
    if error.code:
        raise_kernel_error(kernel, compiled, error)


def runs_inline(compiled: CpuKernel, size: int) -> bool:
    """Whether a launch of `size` threads runs on the calling thread alone: waking the
    workers costs more than a small launch takes."""
    return size < (64 if compiled.has_loops else 16384)


def launch_activity(kernel) -> tuple[int, str]:
    """The activity kind and name a launch of `kernel` is reported under.

    Kernels marked `is_builtin` (kernelc's own utility kernels, see `kernelc.utils`) are
    `TIMING_KERNEL_BUILTIN` activities named "builtin kernel NAME", as Warp names its
    internal kernels; backward kernels (`kc.Tape`, `launch(adjoint=True)`) are
    "backward kernel NAME", with the name of the kernel they differentiate; all others are
    `TIMING_KERNEL` activities, "forward kernel NAME".
    """
    if getattr(kernel, "is_builtin", False):
        return TIMING_KERNEL_BUILTIN, f"builtin kernel {kernel.__name__}"
    if getattr(kernel, "is_adjoint", False):
        return TIMING_KERNEL, f"backward kernel {kernel.primal.__name__}"
    return TIMING_KERNEL, f"forward kernel {kernel.__name__}"


_libc = None


def _flush_c_stdout() -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None)
    _libc.fflush(None)


CUDA_MEMO = "cuda-last-launch"  # the key of a kernel's `CudaMemo` in `kernel.compiled`


def launch(kernel, dim: Any, inputs: Sequence[Any] = (), outputs: Sequence[Any] = (),
           adj_inputs: Sequence[Any] = (), adj_outputs: Sequence[Any] = (), device: Any = None,
           stream: Any = None, adjoint: bool = False, record_tape: bool = True,
           record_cmd: bool = False, max_blocks: int = 0, block_dim: int | None = None):
    """Runs `kernel` over a grid of `dim` threads (an int or a tuple of up to 4 ints).

    Every argument is checked before anything is compiled or run. With `record_cmd=True`
    nothing runs: a `Launch` whose `.launch()` reuses the packed arguments is returned.
    While a `kc.Tape` records (and `record_tape` is True), the launch is recorded on it.

    With `adjoint=True` the kernel's backward kernel runs instead, with the same
    `inputs` and `outputs` and their adjoints `adj_inputs` and `adj_outputs` (one per
    argument, or fewer: the rest are None). An array adjoint that is None means the
    array's own `.grad` (or no gradient if it has none); adjoints of values passed by
    value are ignored. Gradients of array reads are added into the adjoint arrays.
    `max_blocks` is accepted for Warp compatibility.
    """
    from kernelc.frontend.decorators import Kernel
    from kernelc.runtime.device import get_device

    if not isinstance(kernel, Kernel):
        raise TypeError(f"launch() needs a @kernelc.kernel, got {type(kernel).__name__}")
    if config.print_launches:  # Warp's debugging switch: a line per launch
        from kernelc.logger import log_launch

        log_launch(kernel.__name__, dim, inputs, outputs,
                   stream.device if stream is not None else get_device(device))
    if adjoint:
        if record_cmd:
            from kernelc.runtime.launch_cmd import AdjointLaunch

            return AdjointLaunch(kernel, dim, [*inputs, *outputs], [*adj_inputs, *adj_outputs],
                                 device, stream, block_dim)
        return launch_adjoint(kernel, dim, [*inputs, *outputs], [*adj_inputs, *adj_outputs],
                              device, stream, record_cmd, block_dim)
    values = [*inputs, *outputs]
    if not record_cmd and CUDA_MEMO in kernel.compiled:
        from kernelc.runtime.cuda_launch import relaunch

        cmd = relaunch(kernel, dim, device, stream, block_dim, values)
        if cmd is not None:
            if record_tape and (tape := get_runtime().extras.get("tape")) is not None:
                tape.record_launch(kernel, dim, max_blocks, inputs, outputs, cmd.device,
                                   block_dim)
            return None
    last = kernel.last_launch
    if last is not None and last.dim == dim and last.device is device \
            and last.mode == config.mode and last.epoch == config.deterministic_epoch \
            and len(last.refs) == len(values) and same_or_repacked(kernel, last, values) \
            and last.cmd.compiled.lanes == cpu_lanes(block_dim):
        # The same argument objects as last time (a simulation loop), or new Python numbers
        # in place of old ones (repacked in place): reuse the packing.
        cmd = last.cmd
        if record_cmd:
            recorded = Launch.packed(kernel, cmd.compiled, cmd.dims, cmd.values, cmd.device,
                                     cmd.disjoint, recorded=True)
            last.park(kernel)
            return recorded
        try:
            _run_or_capture(kernel, cmd)
        finally:
            last.park(kernel)
        if record_tape and (tape := get_runtime().extras.get("tape")) is not None:
            tape.record_launch(kernel, dim, max_blocks, inputs, outputs, cmd.device,
                               ResolvedBlockDim(cmd.compiled.lanes))
            if config.verify_autograd_array_access:
                _check_access(kernel, values, cmd.compiled.params)
        return None
    dims = normalize_dim(kernel, dim)
    names = kernel.arg_names
    if len(values) != len(names):
        raise KernelError(
            f"kernel '{kernel.__name__}' takes {len(names)} arguments "
            f"({', '.join(names)}), {len(values)} given", kernel.source.loc(kernel.source.tree),
            kernel.__name__)
    dev = get_device(device)
    types = tuple(arg_type(kernel, n, w, v, dev)
                  for n, w, v in zip(names, kernel.param_types, values))
    cmd = _prepare(kernel, dims, values, types, dev, stream, block_dim, record_cmd,
                   (dim, device, block_dim))
    if record_cmd:
        return cmd
    if cmd is not None and fills_composite(values, types):
        kernel.last_launch = None  # deprecated: checked (and warned about) at every launch
        _run_or_capture(kernel, cmd)
    elif cmd is not None:  # a CPU launch (launch_cuda has already run a CUDA one)
        # Remembered for reuse without keeping its arrays alive; identity checks above
        # make reuse safe.
        memo = kernel.last_launch = LaunchMemo(dim, device, config.mode, values, cmd)
        try:
            _run_or_capture(kernel, cmd)
        finally:
            memo.park(kernel)
    if record_tape and (tape := get_runtime().extras.get("tape")) is not None:
        if dev.is_cpu:  # the backward kernel runs with the same blocks, whatever the config
            block_dim = ResolvedBlockDim(cpu_lanes(block_dim))
        tape.record_launch(kernel, dim, max_blocks, inputs, outputs, dev, block_dim)
        if config.verify_autograd_array_access:
            _check_access(kernel, values, types)
    return None


def _check_access(kernel, values: Sequence[Any], types: Sequence[T.Type]) -> None:
    from kernelc.autodiff.access import check_launch

    check_launch(kernel, values, types)


def _prepare(kernel, dims: tuple[int, ...], values: Sequence[Any], types: tuple[T.Type, ...],
             dev, stream: Any, block_dim: int | None, record_cmd: bool,
             call: tuple | None = None):
    """The checked launch of `kernel` on `dev`: a `Launch` on the CPU (not run yet); on
    CUDA, the command if `record_cmd`, else None once it has run (remembered for reuse
    when `call`, the launch as given, is)."""
    arrays = filled_composites(_in_place_arrays(values, types), types)
    if not dev.is_cpu:
        from kernelc.runtime.cuda_launch import launch_cuda

        if block_dim is None:
            block_dim = _module_block_dim(kernel)
        return launch_cuda(kernel, dims, arrays, types, dev, stream, block_dim, record_cmd,
                           call if all(a is v for a, v in zip(arrays, values)) else None)
    names = kernel.arg_names
    _check_strides(kernel, names, types, arrays)
    compiled, disjoint = pick_variant(kernel, types, arrays, dims, cpu_lanes(block_dim))
    return Launch.packed(kernel, compiled, dims, arrays, dev, disjoint, record_cmd)


def _run_or_capture(kernel, cmd: Launch) -> None:
    capture = get_runtime().extras.get("capture")
    if capture is not None and capture.intercept(cmd):  # a CPU graph capture records it
        kernel.last_launch = None  # the graph owns this packing: never repack it in place
    else:
        cmd.launch()


def _module_block_dim(kernel) -> int | None:
    """The `block_dim` set with `kc.set_module_options` for the kernel's module, if any."""
    options = get_runtime().extras.get("module_options", {}).get(kernel.module)
    return None if options is None else options.get("block_dim")


def _check_strides(kernel, names, types, values) -> None:
    for n, t, v in zip(names, types, values):
        if isinstance(t, T.ArrayType) and v is not None:
            size = t.dtype.size
            if any(s % size for s in v.strides):
                raise KernelError(f"argument '{n}': strides {v.strides} are not multiples of "
                                  f"the element size {size}", kernel._param_loc(n),
                                  kernel.__name__)


# The reuse of a launch's packing (imported last: it refers back to this module).
from kernelc.runtime.launch_reuse import (  # noqa: E402
    LaunchMemo,
    same_or_repacked,
)
