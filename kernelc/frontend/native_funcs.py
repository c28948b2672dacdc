"""`@kc.func_native`: funcs whose body is a C++ / CUDA snippet, as Warp's `wp.func_native`.

    @kc.func_native("out[tid] = a * x[tid];")
    def scale(a: float, x: kc.array(dtype=float), out: kc.array(dtype=float), tid: int): ...

The decorated Python function is a typed stub: its parameters name the variables the
snippet sees (spelled as Warp's C++ types: `wp::float32`, `wp::vec_t<3, wp::float32>`,
`wp::array_t<wp::float32>`; see `codegen/native_cpp.py`) and its return annotation the type
a snippet `return`s. A call lowers like any func call: the callee is a func whose body is
one `NATIVE` op (`lower_ir`), so overloads, keywords, defaults, `kc.ref[T]` parameters and
the backward pass's replay and adjoint funcs all work as for Python funcs. Each backend
lowers the op: CUDA-C defines the snippet as a `__device__` function (`codegen/cuda_native`),
the CPU backend calls it in a shared library built by the system's C++ compiler
(`runtime/native_snippets.py`).
"""

from __future__ import annotations

import functools
import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError, Loc
from kernelc.frontend.decorators import Func
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode
from kernelc.types_ref import is_ref

__all__ = ["func_native"]

# Scalars a snippet may take: 16-bit floats are left out, as kernelc holds them in float
# registers but in 16-bit memory, which no C++ type of the snippet's would match.
SCALARS = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                     "uint64", "float32", "float64"})


def supported(t: T.Type, in_array: bool = False) -> bool:
    """Whether a snippet can take (or return) a value of type `t`."""
    if isinstance(t, T.ScalarType):
        return t.name in SCALARS
    if isinstance(t, (T.VectorType, T.MatrixType)):
        return t.dtype.name in SCALARS and t.dtype != T.bool_
    if isinstance(t, T.ArrayType) and not in_array:
        return t.dtype is not None and supported(t.dtype, in_array=True)
    return False


def has_gradient(t: T.Type) -> bool:
    """Whether values of `t` (or the elements of an array `t`) carry gradients."""
    if isinstance(t, T.ArrayType):
        return t.dtype is not None and has_gradient(t.dtype)
    if isinstance(t, T.ScalarType):
        return t.is_float
    return isinstance(t, (T.VectorType, T.MatrixType)) and t.dtype.is_float


@dataclass(frozen=True)
class NativeParam:
    name: str
    type: T.Type
    is_ref: bool  # a `kc.ref[T]`: the snippet sees a C++ reference to the caller's value


@dataclass(frozen=True)
class NativeSpec:
    """One native func specialised for its parameter types: everything the backends need."""

    name: str
    snippet: str
    adj_snippet: str | None
    replay_snippet: str | None
    params: tuple[NativeParam, ...]
    result: T.Type | None
    loc: Loc

    @functools.cached_property
    def digest(self) -> str:
        """Names the generated functions and keys the CPU library: a hash of the snippets
        and the signature (the kernel's cache key includes it through the IR text)."""
        text = repr((self.name, self.snippet, self.adj_snippet, self.replay_snippet,
                     [(p.name, repr(p.type), p.is_ref) for p in self.params],
                     repr(self.result)))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def ref_outputs(self) -> tuple[int, ...]:
        """Reference parameters whose final values the func hands back (not arrays)."""
        return tuple(k for k, p in enumerate(self.params)
                     if p.is_ref and not isinstance(p.type, T.ArrayType))

    @property
    def output_types(self) -> tuple[T.Type, ...]:
        """What the forward op returns: the result (if any), then the reference values."""
        refs = tuple(self.params[k].type for k in self.ref_outputs)
        return ((self.result,) if self.result is not None else ()) + refs

    @property
    def adjoint_outputs(self) -> tuple[int, ...]:
        """Parameters whose gradients the adjoint op returns: values with gradients."""
        return tuple(k for k, p in enumerate(self.params)
                     if not isinstance(p.type, T.ArrayType) and has_gradient(p.type))

    @property
    def differentiable(self) -> bool:
        """Whether a gradient could flow through the snippet (in or out)."""
        return any(has_gradient(p.type) for p in self.params) or (
            self.result is not None and has_gradient(self.result))

    def symbol(self, kind: str) -> str:
        """The C name of the entry point of `kind` (forward, replay, adjoint)."""
        return f"kc_native_{self.digest}_{kind}"


@dataclass(frozen=True)
class NativeCall:
    """The attr of a NATIVE op: which snippet, and which of its functions."""

    spec: NativeSpec
    kind: str  # "forward" | "replay" | "adjoint"

    def __repr__(self) -> str:  # the IR text (and so the kernel's cache key) shows the digest
        return f"{self.spec.name} {self.kind} {self.spec.digest}"

    def __str__(self) -> str:  # a C identifier (the CUDA backend names result structs by it)
        return f"native_{self.spec.digest}_{self.kind}"

    def output_type(self) -> T.Type:
        """The op's result type."""
        if self.kind == "adjoint":
            types = tuple(self.spec.params[k].type for k in self.spec.adjoint_outputs)
        else:
            types = self.spec.output_types
        if not types:
            return T.void
        return types[0] if len(types) == 1 else T.TupleType(types)


class NativeFunc(Func):
    """A func implemented by a native snippet (`@kc.func_native`)."""

    is_native = True

    def __init__(self, func: Callable, snippet: str, adj_snippet: str | None = None,
                 replay_snippet: str | None = None):
        super().__init__(func)
        self.snippet = snippet
        self.adj_snippet = adj_snippet
        self.replay_snippet = replay_snippet

    @functools.cached_property
    def annotations(self) -> dict[str, Any]:
        found = super().annotations
        from kernelc.frontend import tile_funcs

        for name, ann in found.items():
            # Raised here, before a call would be lowered in place as tile funcs are.
            if isinstance(ann, tile_funcs._TILE_KINDS):
                raise KernelError(f"native func '{self.__name__}': parameter '{name}' is a "
                                  f"tile; snippets take scalars, vectors, matrices and arrays",
                                  self._param_loc(name), self.__name__)
        return found

    def spec_for(self, param_types: tuple[T.Type, ...], kernel: str | None) -> NativeSpec:
        """The snippet specialised for these parameter types (unsupported types raise)."""
        loc = self.source.loc(self.source.tree)
        params = []
        for name, t in zip(self.arg_names, param_types):
            if not supported(t):
                raise KernelError(f"native func '{self.__name__}': parameter '{name}' has type "
                                  f"{t!r}; snippets take bool, integer and 32/64-bit float "
                                  f"scalars, vectors and matrices of them, and arrays of "
                                  f"those", self._param_loc(name), kernel)
            params.append(NativeParam(name, t, is_ref(self.annotations.get(name))))
        returns = self.return_annotation() or ()
        if len(returns) > 1 or (returns and not supported(returns[0])):
            what = ", ".join(map(repr, returns))
            raise KernelError(f"native func '{self.__name__}' has an unsupported return type "
                              f"({what}); a snippet returns one scalar, vector, matrix or "
                              f"array", loc, kernel)
        return NativeSpec(self.__name__, self.snippet, self.adj_snippet, self.replay_snippet,
                          tuple(params), returns[0] if returns else None, loc)

    def lower_ir(self, ctx: Any, param_types: tuple[T.Type, ...], name: str) -> ir.Function:
        """The func's IR: its parameters passed to one NATIVE op, whose outputs it returns."""
        from kernelc.frontend.builder import IRBuilder

        spec = self.spec_for(param_types, ctx.kernel_name)
        b = IRBuilder()
        b.loc = spec.loc
        params = tuple(b.new_value(t) for t in param_types)
        call = NativeCall(spec, "forward")
        result = b.op(OpCode.NATIVE, params, call.output_type(), call)
        outputs = spec.output_types
        if len(outputs) > 1:
            values = tuple(b.op(OpCode.EXTRACT, (result,), t, k) for k, t in enumerate(outputs))
        else:
            values = (result,) if outputs else ()
        b.append(ir.Return(spec.loc, values))
        return ir.Function(name, params, self.arg_names, outputs, b.body(), tuple(b.slots),
                           False, spec.loc)


def func_native(snippet: str, adj_snippet: str | None = None,
                replay_snippet: str | None = None) -> Callable[[Callable], NativeFunc]:
    """Decorator: a func implemented by a native C++ / CUDA snippet (Warp's `func_native`).

    Args:
        snippet: the body of the native function; the stub's parameter names are its
            variables, and it may `return` a value of the stub's return annotation.
        adj_snippet: the body of its adjoint, for backward kernels: it adds into `adj_<name>`
            (the gradient of a parameter; the gradient array of an array parameter) and
            reads `adj_ret`, the gradient of the returned value.
        replay_snippet: what a backward kernel runs instead of `snippet` where it replays
            the forward pass (for a snippet that returns nothing), e.g. to skip an atomic
            counter's increment.

    Returns:
        A decorator turning a typed stub (`def f(x: float, ...) -> float: ...`) into a func
        callable from kernels and funcs.
    """
    for label, text in (("snippet", snippet), ("adj_snippet", adj_snippet),
                        ("replay_snippet", replay_snippet)):
        if text is not None and not isinstance(text, str):
            raise TypeError(f"func_native(): {label} must be a str, got {type(text).__name__}")

    def wrap(fn: Callable) -> NativeFunc:
        new = NativeFunc(fn, snippet, adj_snippet, replay_snippet)
        frame = sys._getframe(1)
        try:
            existing = frame.f_locals.get(fn.__name__)
        finally:
            del frame  # a frame kept alive would keep its caller's locals alive too
        if isinstance(existing, NativeFunc) and existing.func.__qualname__ == fn.__qualname__:
            _forget_kernels(fn.__module__)  # redefined: kernels calling it compile anew
        return new

    return wrap


def _forget_kernels(module_name: str) -> None:
    """Makes the kernels of `module_name` (and its "unique" sub-modules) read their globals
    again, so that they call a native func's new definition, as Warp rebuilds them."""
    from kernelc.runtime.module import registered_kernels

    for k in registered_kernels():
        name = str(k.module)
        if name == module_name or name.startswith(module_name + "."):
            k.forget_compiled()
