"""IR -> IR passes, assembled into one literal pipeline. A verifier runs after each in tests."""

from __future__ import annotations

import os

from kernelc.ir import nodes as ir
from kernelc.ir.passes.dce import dead_code_elimination
from kernelc.ir.passes.fold import constant_propagation
from kernelc.ir.passes.forward import slot_forwarding
from kernelc.ir.passes.gvn import value_numbering
from kernelc.ir.printer import format_module
from kernelc.ir.verify import verify

PIPELINE = (
    ("slot_forwarding", slot_forwarding),
    ("constant_propagation", constant_propagation),
    ("value_numbering", value_numbering),
    ("dead_code_elimination", dead_code_elimination),
)


def run_pipeline(module: ir.Module, enabled: frozenset[str] | None = None, dump: bool = False,
                 check: bool = False) -> ir.Module:
    """Runs every enabled pass over the kernel and its funcs."""
    check = check or os.environ.get("KERNELC_VERIFY_IR") == "1"
    if dump:
        print(f"--- IR of {module.kernel.name} (front end)\n{format_module(module)}")
    for name, fn_pass in PIPELINE:
        if enabled is not None and name not in enabled:
            continue
        module = ir.Module(fn_pass(module.kernel), tuple(fn_pass(f) for f in module.funcs))
        if check:
            verify(module)
        if dump:
            print(f"--- IR of {module.kernel.name} after {name}\n{format_module(module)}")
    return module
