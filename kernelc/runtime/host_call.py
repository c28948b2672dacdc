"""Builtins called on the host (`kc.sin(0.5)`, `kc.dot(v, w)`, `kc.quat_identity()`), with
exactly their meaning in kernels.

A call is typed as the front end types it: Python ints and floats are literals (int32 and
float32 that adapt to the other operands), NumPy scalars and host vectors/matrices have
their own type, and the builtin's type rule picks the overload. Each distinct (builtin,
argument types) then becomes a one-thread kernel, built directly as IR (parameters ->
the builtin's expansion -> a store to a one-element output array), and compiled once through
the ordinary CPU pipeline (`compiler.get_cpu_kernel`: memory cache, disk cache, LLVM).
Later calls with the same types only pack the arguments and call the machine code, so a
host call computes bit for bit what the same builtin computes in a kernel.

Results come back as Warp returns them: Python `float` for float32, `int` for int32,
`bool` for bool, a NumPy scalar for the other scalar types, a host vector or matrix value
for aggregates. Builtins that take arrays (atomics) exist only inside kernels; builtins
that advance a random state in place (`randf(state)`) return their value and leave the
Python state untouched, as Warp does on the host.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.builtins.registry import Builtin, Expansion
from kernelc.errors import KernelRuntimeError, Loc, WarpCodegenTypeError
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode
from kernelc.types_bf16 import from_bits, storage

_LOC = Loc("<kernelc host call>", 0)
_INT32 = range(-(2**31), 2**31)


def classify(name: str, value: Any) -> tuple[T.Type, bool]:
    """The type of a host argument and whether it is a literal (a Python int or float)."""
    if isinstance(value, (bool, np.bool_)):
        return T.bool_, False
    if isinstance(value, np.generic):  # before float: numpy.float64 subclasses float
        try:
            return T.number_type(value), False
        except TypeError:
            pass
    elif isinstance(value, int):
        return (T.int32 if value in _INT32 else T.int64), True
    elif isinstance(value, float):
        return T.float32, True
    kc_type = getattr(value, "_kc_type", None)
    if isinstance(value, np.ndarray) and isinstance(kc_type, (T.VectorType, T.MatrixType)):
        return kc_type, False
    if isinstance(kc_type, T.ArrayType):
        raise TypeError(f"kernelc.{name}() takes an array: it can only be called inside "
                        f"@kernelc.kernel or @kernelc.func")
    if isinstance(value, (list, tuple, np.ndarray)):
        raise TypeError(f"kernelc.{name}() cannot take a {type(value).__name__} on the host; "
                        f"use a kernelc type such as kc.vec3(...) or kc.mat33(...)")
    raise TypeError(f"kernelc.{name}() cannot take a {type(value).__name__} argument")


def call_builtin(builtin: Builtin, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """`builtin(*args, **kwargs)` evaluated on the host (see the module docstring)."""
    values = builtin.bind(args, kwargs)
    classified = [classify(builtin.name, v) for v in values]
    types = tuple(t for t, _ in classified)
    weak = tuple(w for _, w in classified)
    return host_function(builtin, types, weak)(values)


def host_function(builtin: Builtin, types: tuple[T.Type, ...], weak: tuple[bool, ...]
                  ) -> HostFunction:
    """The compiled host function of `builtin` for these argument types (built once)."""
    from kernelc.runtime.context import get_runtime

    table = get_runtime().extras.setdefault("host_calls", {})
    key = (builtin.name, types, weak)
    fn = table.get(key)
    if fn is None:
        fn = table[key] = HostFunction(builtin, types, weak)
    return fn


class HostFunction:
    """One builtin specialised for one tuple of argument types, as a callable.

    It is also what `get_cpu_kernel` compiles: it has a kernel's `__name__`, `key`,
    `compiled` (the memory cache) and `get_ir`.
    """

    def __init__(self, builtin: Builtin, types: tuple[T.Type, ...], weak: tuple[bool, ...]):
        self.builtin = builtin
        self.__name__ = f"host_{builtin.name}"
        self.key = f"kernelc.host.{builtin.name}"
        self.module = "kernelc.host"
        self.compiled: dict[Any, Any] = {}
        self.overload = overload = builtin.overload_for(len(types))
        if overload is None:
            counts = " or ".join(str(len(o.params)) for o in builtin.overloads)
            sigs = " or ".join(builtin.signatures())
            raise TypeError(f"kernelc.{builtin.name}() takes {counts} arguments "
                            f"({len(types)} given): {sigs}")
        try:
            params, result = overload.rule(types, weak)
        except TypeError as err:
            # A TypeError that is also a RuntimeError, the class Warp raises here.
            raise WarpCodegenTypeError(f"kernelc.{builtin.name}(): {err}") from None
        # The results: none (void), one, or several (a tuple, returned as a Python tuple).
        self.outputs = (result.elements if isinstance(result, T.TupleType)
                        else () if result == T.void else (result,))
        if any(isinstance(p, T.ArrayType) for p in params) or not all(
                isinstance(t, (T.ScalarType, T.VectorType, T.MatrixType)) for t in self.outputs):
            raise TypeError(f"kernelc.{builtin.name}() can only be called inside "
                            f"@kernelc.kernel or @kernelc.func")
        self.params = tuple(params)
        self.result = result
        self.writeback: tuple[int, ...] = ()  # argument positions updated in place (set below)
        self._module = self._build_ir()
        self._kernel = None

    # ---- what get_cpu_kernel needs --------------------------------------------------------

    def get_ir(self, arg_types: tuple[T.Type, ...] | None = None, lanes: int = 1
               ) -> ir.Module:
        return self._module  # (a host call is one thread: never run in CPU blocks)

    def _build_ir(self) -> ir.Module:
        from kernelc.frontend.builder import IRBuilder

        b = IRBuilder()
        b.loc = _LOC
        values = [b.new_value(t) for t in self.params]
        writeback: dict[int, ir.Value] = {}
        if self.overload.expand is None:
            result = b.op(OpCode.CALL, values, self.result, self.overload.key)
        else:
            try:
                result = self.overload.expand(b, *values)
            except TypeError as err:
                raise TypeError(f"kernelc.{self.builtin.name}(): {err}") from None
            if isinstance(result, Expansion):
                writeback, result = result.writeback, result.value
        results = () if result is None else result if isinstance(result, tuple) else (result,)
        # Warp's host calls update vector/matrix arguments in place (transform_set_rotation);
        # Python numbers cannot be: a random state's new value is dropped, and a builtin whose
        # only effect is on a number (the output form of quat_to_axis_angle) is kernel-only.
        scalars = [k for k in writeback if isinstance(self.params[k], T.ScalarType)]
        if scalars and not self.outputs:
            raise TypeError(f"kernelc.{self.builtin.name}() writes into its argument "
                            f"'{self.overload.params[scalars[0]]}': it can only be called "
                            f"inside @kernelc.kernel or @kernelc.func")
        self.writeback = tuple(k for k in sorted(writeback) if k not in scalars)
        stored = [*results, *(writeback[k] for k in self.writeback)]
        outs = [b.new_value(T.ArrayType(v.type, 1)) for v in stored]
        for out, v in zip(outs, stored):
            b.append(ir.ArrayStore(_LOC, out, (b.const(0, T.int32),), v))
        names = [f"out{k}" for k in range(len(outs))]
        fn = ir.Function(
            name=self.__name__, params=(*values, *outs),
            param_names=(*self.overload.params, *names), return_types=(), body=b.body(),
            slots=tuple(b.slots), is_kernel=True, loc=_LOC,
        )
        return ir.Module(fn, ())

    def _stored_types(self) -> list[T.Type]:
        return [*self.outputs, *(self.params[k] for k in self.writeback)]

    # ---- calling ----------------------------------------------------------------------------

    def _load(self):
        from kernelc.runtime.compiler import get_cpu_kernel

        outs = tuple(T.ArrayType(t, 1) for t in self._stored_types())
        kernel = get_cpu_kernel(self, (*self.params, *outs))
        args_type = kernel.args_type
        offsets = [getattr(args_type, f"p{i}").offset for i in range(len(self.params))]
        self._kernel = (kernel, offsets)
        return self._kernel

    def __call__(self, values: Sequence[Any]) -> Any:
        from kernelc.runtime.cpu import ErrorRecord
        from kernelc.runtime.launch import _scalar_bits

        kernel, offsets = self._kernel or self._load()
        args = kernel.args_type()
        base = ctypes.addressof(args)
        for i, (t, v, offset) in enumerate(zip(self.params, values, offsets)):
            if isinstance(t, T.ScalarType):
                setattr(args, f"p{i}", _scalar_bits(t, v))
            else:
                data = np.ascontiguousarray(storage(v, t.dtype)).tobytes()
                ctypes.memmove(base + offset, data, len(data))
        stored = []
        for k, t in enumerate(self._stored_types()):
            dtype, shape = _layout(t)
            out = np.empty(shape, dtype)
            view = getattr(args, f"p{len(self.params) + k}")
            view.data = out.ctypes.data
            view.shape[0] = 1
            view.strides[0] = out.nbytes
            stored.append(out)
        for k in range(4):
            args.dims[k] = 1
        error = ErrorRecord()
        args.error = ctypes.addressof(error)
        kernel.cfunc(base, 0, 1)
        if error.code:
            raise KernelRuntimeError(f"kernelc.{self.builtin.name}() failed on the host "
                                     f"(error code {error.code})")
        for position, new in zip(self.writeback, stored[len(self.outputs):]):
            target = values[position]
            if isinstance(target, np.ndarray) and target.flags.writeable:
                target[...] = new.reshape(target.shape)
        results = [_to_python(t, out) for t, out in zip(self.outputs, stored)]
        if isinstance(self.result, T.TupleType):
            return tuple(results)
        return results[0] if results else None


def _layout(t: T.Type) -> tuple[np.dtype, tuple[int, ...]]:
    if isinstance(t, T.ScalarType):
        return t.np_dtype, ()
    if isinstance(t, T.VectorType):
        return t.dtype.np_dtype, (t.length,)
    return t.dtype.np_dtype, tuple(t.shape)


def _to_python(t: T.Type, out: np.ndarray) -> Any:
    """Warp's host results: float32 -> float, int32 -> int, bool -> bool, other scalars as
    NumPy scalars (`kc.bfloat16` numbers for bfloat16), vectors and matrices as host
    values."""
    if isinstance(t, T.ScalarType):
        value = out[()]
        if t in (T.float32, T.int32, T.bool_):
            return value.item()
        return T.bfloat16(from_bits(value)) if t == T.bfloat16 else value
    from kernelc.types_vec import host_class

    if t.dtype == T.bfloat16:  # host values hold numbers, memory the bits
        out = from_bits(out)
    value = out.view(host_class(t))
    value._kc_base = t
    return value


# ---- operators on host values -------------------------------------------------------------

_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}
# Warp applies these to a vector and a scalar component by component when the builtin
# itself has no such overload (`v + 1.0`, `v % 2.0`).
_BROADCAST = frozenset({"add", "sub", "mod"})


def _operand(value: Any) -> tuple[T.Type, bool] | None:
    """An operand's type and literal flag; None for what NumPy should handle (plain arrays),
    NotImplemented for what neither side can (so Python raises its own TypeError)."""
    if isinstance(value, np.ndarray):
        kc_type = getattr(value, "_kc_type", None)
        if isinstance(kc_type, (T.VectorType, T.MatrixType)):
            return kc_type, False
        return None
    if isinstance(value, (bool, int, float, np.generic)):
        return classify("operator", value)
    if isinstance(value, (list, tuple)):
        raise TypeError("host vector and matrix operators do not take lists or tuples (as in "
                        "Warp); use a kernelc type such as kc.vec3(...)")
    return NotImplemented


def binary(name: str, a: Any, b: Any, reflected: bool, symbol: str | None = None) -> Any:
    """`a op b` for host values with Warp's meaning (`*` is a product, `+ -` need one type).

    `reflected` tells that the host value is `b` (Python called its `__rop__`).
    """
    symbol = symbol or _SYMBOLS[name]
    ta, tb = _operand(a), _operand(b)
    if ta is NotImplemented or tb is NotImplemented:
        return NotImplemented
    if ta is None or tb is None:
        if reflected:  # ndarray op value: NumPy's element-wise operation, as with Warp
            return NotImplemented
        raise TypeError(f"unsupported operand types for {symbol}: a host "
                        f"value and a NumPy array (use np.asarray(value) for NumPy's "
                        f"element-wise arithmetic)")
    from kernelc.builtins import BUILTINS

    builtin = BUILTINS[name]
    types, weak = (ta[0], tb[0]), (ta[1], tb[1])
    try:
        fn = host_function(builtin, types, weak)
    except TypeError as err:
        filled = _broadcast(name, a, b, types, weak)
        if filled is None:
            detail = str(err).removeprefix(f"kernelc.{name}(): ")
            raise WarpCodegenTypeError(f"unsupported operand types for {symbol}: "
                                       f"{types[0]!r} and {types[1]!r} ({detail})") from None
        a, b = filled
        return host_function(builtin, (_type_of(a), _type_of(b)), (False, False))((a, b))
    return fn((a, b))


def _type_of(value: Any) -> T.Type:
    return value._kc_type


def _broadcast(name: str, a: Any, b: Any, types, weak) -> tuple[Any, Any] | None:
    """Warp's fallback for `vector op scalar` (and `scalar op vector`): the scalar as a
    vector of that type, when the scalar fits the vector's component type."""
    from kernelc.builtins.aggregate import scalar_fits
    from kernelc.types_vec import host_value

    if name not in _BROADCAST:
        return None
    for k in (0, 1):
        vec, scalar = types[k], types[1 - k]
        if isinstance(vec, T.VectorType) and isinstance(scalar, T.ScalarType) \
                and scalar_fits(scalar, weak[1 - k], vec.dtype):
            fill = host_value(vec, ((a, b)[1 - k],))
            return (a, fill) if k == 0 else (fill, b)
    return None


def matmul(a: Any, b: Any, reflected: bool) -> Any:
    """`a @ b`: Warp defines it on matrices only (matrix @ matrix, vector or scalar)."""
    ta, tb = _operand(a), _operand(b)
    if ta is NotImplemented or tb is NotImplemented or ta is None or tb is None:
        return NotImplemented
    if not (isinstance(ta[0], T.MatrixType) or isinstance(tb[0], T.MatrixType)):
        return NotImplemented  # Python raises "unsupported operand type(s) for @"
    return binary("mul", a, b, reflected, "@")


def negate(a: Any) -> Any:
    """`-a` for a host value (integers wrap, as in kernels)."""
    from kernelc.builtins import BUILTINS

    t = a._kc_type
    return host_function(BUILTINS["neg"], (t,), (False,))((a,))
