"""Recorded launches as Warp's `Launch` objects: the setters they share, launches made
from a kernel alone, and recorded backward launches.

`kc.Launch(kernel, device)` gives every parameter a default (a null array, zero, a default
struct instance) and dim 0; the setters and `set_dim` then fill it in. With
`adjoint=True`, or from `kc.launch(..., adjoint=True, record_cmd=True)`, it runs the
kernel's backward kernel: arguments and their adjoints are set apart (`adjoint=True` on a
setter), and an array whose adjoint is left None has its own `.grad` as adjoint.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

from kernelc import types as T


class ParamSetters:
    """The setters by name and from ctypes values, shared by the recorded launch classes;
    each has `kernel` (the kernel launched, or differentiated) and its own
    `set_param_at_index(index, value, adjoint=False)`."""

    kernel: Any

    def set_param_at_index(self, index: int, value: Any, adjoint: bool = False) -> None:
        raise NotImplementedError

    def set_param_by_name(self, name: str, value: Any, adjoint: bool = False) -> None:
        """Replaces the argument of the parameter called `name` (its adjoint, with
        `adjoint=True`, on a backward launch); see `set_param_at_index`."""
        self.set_param_at_index(param_index(self.kernel, name), value, adjoint)

    def set_param_at_index_from_ctype(self, index: int, value: Any,
                                      adjoint: bool = False) -> None:
        """As `set_param_at_index`, also taking what Warp's variant takes: the `__ctype__()`
        descriptor of an array or struct instance (see `ctype_descriptor`), or a ctypes
        number (`ctypes.c_float(2.0)`). Other ctypes structures are refused: kernelc checks
        and packs every argument itself."""
        source = getattr(value, "_kc_source", None)
        if source is not None:
            value = source
        elif isinstance(value, ctypes._SimpleCData):
            value = value.value
        elif isinstance(value, (ctypes.Structure, ctypes.Union, ctypes.Array)):
            raise TypeError(f"kernelc does not take raw ctypes structures as launch "
                            f"arguments (got {type(value).__name__}); pass the array, "
                            f"struct instance or value itself to set_param_at_index")
        self.set_param_at_index(index, value, adjoint)

    def set_param_by_name_from_ctype(self, name: str, value: Any) -> None:
        """As `set_param_at_index_from_ctype`, by parameter name."""
        self.set_param_at_index_from_ctype(param_index(self.kernel, name), value)


def ctype_descriptor(value: Any) -> Any:
    """Warp's `__ctype__()` of a kernelc array or struct instance: its bytes as a kernel
    argument, in a ctypes object of their C layout, which also refers back to `value`:
    `set_param_*_from_ctype` passes `value` itself (so a struct's later changes show up,
    as with the descriptor Warp keeps inside each struct instance)."""
    from kernelc.frontend.struct import struct_bytes
    from kernelc.runtime.cpu import ctype_of

    t = value._kc_type
    out = ctype_of(t).from_buffer_copy(struct_bytes(t, value))
    out._kc_source = value
    return out


def param_index(kernel: Any, name: str) -> int:
    """The index of `kernel`'s parameter `name`; ValueError if it has none of that name."""
    names = kernel.arg_names
    if name not in names:
        raise ValueError(f"argument '{name}' not found in kernel '{kernel.__name__}' "
                         f"(parameters: {', '.join(names)})")
    return names.index(name)


def checked_index(kernel: Any, index: int) -> int:
    """`index` (negative counts from the end) as a parameter index of `kernel`."""
    count = len(kernel.arg_names)
    if not -count <= index < count:
        raise IndexError(f"kernel '{kernel.__name__}' has {count} parameters, no index "
                         f"{index}")
    return index % count


def forward_argument(launch: Any, index: int, value: Any, adjoint: bool,
                     compiled_type: Any) -> tuple[int, Any]:
    """(parameter index, value as packed) for `set_param_at_index` of a forward launch:
    checked as by `kc.launch`, and of the type `compiled_type(index)` the launch was
    compiled for."""
    from kernelc.errors import KernelError
    from kernelc.runtime.launch import _in_place_arrays, arg_type
    from kernelc.runtime.launch_args import filled_composites

    kernel = launch.kernel
    if adjoint:
        raise ValueError(f"this launch runs kernel '{kernel.__name__}' forward: "
                         f"record it with adjoint=True to set adjoints")
    index = checked_index(kernel, index)
    name = kernel.arg_names[index]
    t = arg_type(kernel, name, kernel.param_types[index], value, launch.device)
    packed = compiled_type(index)
    if t != packed:
        raise KernelError(f"argument '{name}': this launch was compiled for {packed!r}, "
                          f"got {t!r}", kernel._param_loc(name), kernel.__name__)
    return index, filled_composites(_in_place_arrays([value], [t]), [t])[0]


def default_arguments(kernel: Any) -> list[Any]:
    """The argument Warp's `Launch(kernel, device)` packs for each parameter of `kernel`:
    None (a null array) for arrays, a zero for scalars, vectors and matrices, a new
    instance for structs."""
    out = []
    for name, t in zip(kernel.arg_names, kernel.param_types):
        if t is None or T.is_generic(t):
            raise TypeError(f"kc.Launch(kernel) needs concrete parameter types, but "
                            f"parameter '{name}' of kernel '{kernel.__name__}' is generic; "
                            f"record a launch with kc.launch(..., record_cmd=True) instead")
        if isinstance(t, T.StructType):
            out.append(t.cls())
        elif isinstance(t, (T.ScalarType, T.VectorType, T.MatrixType)):
            out.append(t(0))
        else:
            out.append(None)
    return out


def record_empty(kernel: Any, device: Any, adjoint: bool, block_dim: int | None) -> Any:
    """`kc.Launch(kernel, device, adjoint=...)`: a recorded launch of dim 0 whose arguments
    are the defaults (see `default_arguments`)."""
    from kernelc.frontend.decorators import Kernel
    from kernelc.runtime.launch import launch

    if not isinstance(kernel, Kernel):
        raise TypeError(f"Launch() needs a @kernelc.kernel, got {type(kernel).__name__}")
    return launch(kernel, 0, inputs=default_arguments(kernel), device=device,
                  adjoint=adjoint, record_cmd=True, block_dim=block_dim)


class AdjointLaunch(ParamSetters):
    """A recorded launch of `kernel`'s backward kernel.

    It keeps the arguments and their adjoints; the backward kernel run depends on which
    gradient arrays exist, so replacing one packs the launch again (checking it, as
    `kc.launch` does).
    """

    def __init__(self, kernel: Any, dim: Any, values: Sequence[Any], adjoints: Sequence[Any],
                 device: Any, stream: Any = None, block_dim: int | None = None) -> None:
        from kernelc.runtime.device import get_device
        from kernelc.runtime.launch import normalize_dim

        self.kernel = kernel
        self.dims = normalize_dim(kernel, dim)
        self.device = get_device(device)
        self.stream = stream
        self.block_dim = block_dim
        self.values = list(values)
        self.adjoints = list(adjoints)
        self.packed = self._pack()
        self.adjoints += [None] * (len(self.values) - len(self.adjoints))

    @property
    def size(self) -> int:
        """The number of threads launched."""
        return math.prod(self.dims)

    def _pack(self) -> Any:

        return launch_adjoint(self.kernel, self.dims, self.values, self.adjoints,
                               self.device, self.stream, True, self.block_dim)

    def set_param_at_index(self, index: int, value: Any, adjoint: bool = False) -> None:
        """Replaces argument `index`, or with `adjoint=True` its adjoint (None: an array's
        own `.grad`), and packs the launch again."""
        index = checked_index(self.kernel, index)
        target = self.adjoints if adjoint else self.values
        previous, target[index] = target[index], value
        try:
            self.packed = self._pack()
        except Exception:
            target[index] = previous
            raise

    def set_params(self, values: Sequence[Any]) -> None:
        """Replaces every argument (not the adjoints), in parameter order."""
        if len(values) != len(self.values):
            raise ValueError(f"kernel '{self.kernel.__name__}' takes {len(self.values)} "
                             f"arguments, {len(values)} given")
        previous, self.values = self.values, list(values)
        try:
            self.packed = self._pack()
        except Exception:
            self.values = previous
            raise

    def set_dim(self, dim: Any) -> None:
        """Changes the launch shape (an int or a tuple of up to 4 ints)."""
        from kernelc.runtime.launch import normalize_dim

        self.dims = normalize_dim(self.kernel, dim)
        self.packed.set_dim(self.dims)

    def launch(self, stream: Any = None) -> None:
        """Runs the backward kernel with the current arguments and adjoints."""
        if stream is None:
            self.packed.launch()
        else:
            self.packed.launch(stream)


def launch_adjoint(kernel, dim: Any, values: list[Any], adjoints: list[Any], device: Any,
                    stream: Any, record_cmd: bool, block_dim: int | None):
    """`launch(adjoint=True)`: runs the backward kernel of `kernel` (see `launch`)."""
    from kernelc.autodiff.kernel import adjoint_kernel, launch_facts
    from kernelc.autodiff.tape import adjoint_arguments, backward_disabled_by
    from kernelc.config import config
    from kernelc.errors import KernelError
    from kernelc.runtime.cpu_blocks import cpu_lanes
    from kernelc.runtime.device import get_device
    from kernelc.runtime.launch import _prepare, _run_or_capture, arg_type, normalize_dim
    from kernelc.runtime.launch_reuse import LaunchMemo, held_weakly, rerun_adjoint

    disabled = backward_disabled_by(kernel)
    if disabled:
        raise RuntimeError(f"kernel '{kernel.__name__}' has no backward kernel: {disabled} "
                           f"sets enable_backward=False")
    backward = adjoint_kernel(kernel)
    if not record_cmd and rerun_adjoint(backward, dim, device, values, adjoints,
                                        cpu_lanes(block_dim)):
        return None
    dims = normalize_dim(kernel, dim)
    names = kernel.arg_names
    if len(values) != len(names) or len(adjoints) > len(names):
        raise KernelError(
            f"the backward launch of kernel '{kernel.__name__}' takes {len(names)} arguments "
            f"({', '.join(names)}) and at most as many adjoints; {len(values)} arguments and "
            f"{len(adjoints)} adjoints given", kernel.source.loc(kernel.source.tree),
            kernel.__name__)
    dev = get_device(device)
    types = tuple(arg_type(kernel, n, w, v, dev)
                  for n, w, v in zip(names, kernel.param_types, values))
    given = list(adjoints)
    adjoints = [*adjoints, *[None] * (len(names) - len(adjoints))]
    adj_values, mask = adjoint_arguments(values, types, adjoints)
    for name, t, v in zip(names, types, adj_values):
        if v is not None:  # the adjoint of an array must be an array of the same type
            arg_type(backward, f"adj_{name}", t, v, dev)
    full = [*values, *adj_values, mask]
    # The kernel run is specialised on what the adjoint arguments fix (which gradient
    # arrays exist, the store mask); `backward` keeps the launch memo.
    special = adjoint_kernel(kernel, launch_facts(types, adj_values, mask))
    cmd = _prepare(special, dims, full, (*types, *types, T.uint64), dev, stream, block_dim,
                   record_cmd)
    if record_cmd or cmd is None:
        return cmd
    memo = backward.last_launch = LaunchMemo(dim, device, config.mode, full, cmd)
    backward.last_adjoints = (held_weakly(given), held_weakly(adj_values), mask)
    try:
        _run_or_capture(backward, cmd)
    finally:
        memo.park(backward)
    return None
