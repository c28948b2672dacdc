"""The backward (adjoint) kernel of a `@kc.kernel`, launched like any other kernel.

Its parameters are the primal kernel's, then one adjoint per primal parameter (same type:
the gradient arrays, and placeholders for values passed by value), then
`adj_store_mask`: bit `i` set when the adjoint of array parameter `i` is that array's own
`.grad`, so that the adjoint of a store into the array consumes (zeroes) the gradient it
reads, as Warp does.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from kernelc import types as T
from kernelc.config import ReduceMode
from kernelc.frontend.decorators import Kernel
from kernelc.ir import nodes as ir

if TYPE_CHECKING:
    from kernelc.autodiff.adjoint import AdjointFacts

MASK_PARAM = "adj_store_mask"


class AdjointKernel(Kernel):
    """The backward kernel of `primal`; its IR is derived from the primal's IR."""

    is_adjoint = True

    def __init__(self, primal: Kernel, facts: AdjointFacts | None = None):
        options = dict(primal.options)
        # Gradients of shared reads (a[j] read by every thread) are atomic adds into one
        # element from many threads: unless the kernel says otherwise, they go to
        # per-worker copies (only arrays the backward kernel solely adds into qualify).
        options.setdefault("reduce_mode", ReduceMode.Expand)
        super().__init__(primal.func, options=options)
        self.primal = primal
        self.facts = facts
        self.key = primal.key + ".backward"
        if facts is not None:
            present = "".join("-" if p is None else str(int(p)) for p in facts.present)
            self.key += f".{present}.{facts.mask:x}"
        self.module = primal.module

    def __repr__(self) -> str:
        return f"<kernelc.kernel {self.primal.key} (backward)>"

    @functools.cached_property
    def arg_names(self) -> tuple[str, ...]:
        names = self.primal.arg_names
        return (*names, *(f"adj_{n}" for n in names), MASK_PARAM)

    def arg_annotation(self, name: str) -> Any:
        if name == MASK_PARAM:
            return T.uint64
        return self.primal.arg_annotation(name[4:] if name.startswith("adj_") and
                                          name not in self.primal.arg_names else name)

    def _param_loc(self, name: str):
        base = name[4:] if name.startswith("adj_") and name not in self.primal.arg_names \
            else name
        return self.primal._param_loc(base)

    @functools.cached_property
    def param_types(self) -> tuple[T.Type | None, ...]:
        primal = self.primal.param_types
        return (*primal, *primal, T.uint64)

    def specialize(self, arg_types):
        n = len(self.primal.arg_names)
        primal = self.primal.specialize(arg_types[:n])
        return (*primal, *primal, T.uint64)

    def get_ir(self, arg_types: tuple[T.Type, ...] | None = None, lanes: int = 1
               ) -> ir.Module:
        from kernelc.autodiff.adjoint import adjoint_module

        n = len(self.primal.arg_names)
        primal_types = None if arg_types is None else tuple(arg_types[:n])
        types = self.primal.param_types if primal_types is None else primal_types
        key = types if lanes == 1 else (types, lanes)
        module = self._ir.get(key)
        if module is None:
            module = adjoint_module(self.primal.get_ir(primal_types, lanes), self.facts)
            self._ir[key] = module
        return module


def adjoint_kernel(kernel: Kernel, facts: AdjointFacts | None = None) -> AdjointKernel:
    """The backward kernel of `kernel` (made once, kept on the kernel); with `facts`, the
    one specialised on them (see `AdjointFacts`), made once per distinct facts."""
    found = kernel.__dict__.get("_adjoint_kernel")
    if found is None:
        found = kernel.__dict__["_adjoint_kernel"] = AdjointKernel(kernel)
    if facts is None:
        return found
    special = kernel.__dict__.setdefault("_adjoint_kernels", {})
    made = special.get(facts)
    if made is None:
        made = special[facts] = AdjointKernel(kernel, facts)
    return made


def launch_facts(types: tuple[T.Type, ...], adj_values: list, mask: int) -> AdjointFacts:
    """The facts of a backward launch whose adjoint arguments are `adj_values`."""
    from kernelc.autodiff.adjoint import AdjointFacts

    present = tuple(
        (v is not None and getattr(v, "size", 1) > 0) if isinstance(t, T.ArrayType) else None
        for t, v in zip(types, adj_values))
    return AdjointFacts(mask, present)
