"""The typed IR: verifier after every pass, golden text, folding and dead code removal."""

from __future__ import annotations

import textwrap

import kernelc as kc
from kernelc.ir import nodes as ir
from kernelc.ir.passes import PIPELINE, run_pipeline
from kernelc.ir.printer import format_module
from kernelc.ir.verify import verify
from tests import (
    test_arrays_launch,
    test_lang_arith,
    test_lang_builtins,
    test_lang_control,
    test_lang_funcs,
)


def _kernels():
    for module in (test_arrays_launch, test_lang_arith, test_lang_builtins, test_lang_control,
                   test_lang_funcs):
        for value in vars(module).values():
            if isinstance(value, kc.kernel.__globals__["Kernel"]) and not value.is_generic:
                yield value


def test_verifier_passes_after_every_pass_on_every_kernel():
    count = 0
    for kernel in _kernels():
        module = kernel.get_ir()
        verify(module)
        for name, _ in PIPELINE:
            module = run_pipeline(module, enabled=frozenset({name}), check=True)
        count += 1
    assert count >= 10


@kc.kernel
def golden(a: kc.array(dtype=float), n: int):
    i = kc.tid()
    if i < n:
        a[i] = a[i] * 2.0


GOLDEN = """\
kernel golden(%1: array(dtype=float32, ndim=1) (a), %2: int32 (n))
  %3: int32 = tid [(0, 0)]()
  %6: bool = lt(%3, %2)
  if %6:
    %13: float32 = array_load(%1, %3)
    %14: float32 = const [2.0]()
    %15: float32 = mul(%13, %14)
    %1[%3] <- %15"""


def test_golden_ir_text():
    text = format_module(run_pipeline(golden.get_ir()))
    assert text.strip() == textwrap.dedent(GOLDEN).strip(), text


@kc.kernel
def foldable(a: kc.array(dtype=int), n: int):
    n * 7  # result unused: dead
    a[0] = (kc.int32(3) * kc.int32(4) + kc.int32(1)) << kc.int32(2)
    if kc.int32(5) > kc.int32(50):
        a[1] = n
    else:
        a[1] = n - kc.int32(2) * kc.int32(3)


def test_passes_fold_constants_and_remove_dead_code():
    before = foldable.get_ir()
    after = run_pipeline(before, check=True)
    ops = [s for s in ir.walk(after.kernel.body) if isinstance(s, ir.Op)]
    assert [s for s in ir.walk(before.kernel.body)
            if isinstance(s, ir.Op) and s.opcode == ir.OpCode.MUL]
    muls = [s for s in ops if s.opcode in (ir.OpCode.MUL, ir.OpCode.SHL, ir.OpCode.GT)]
    assert not muls  # folded (3 * 4 + 1) << 2, 2 * 3, 5 > 50; n * 7 removed
    consts = {s.attr for s in ops if s.opcode == ir.OpCode.CONST}
    assert 52 in consts and 6 in consts
    assert len(list(ir.walk(after.kernel.body))) < len(list(ir.walk(before.kernel.body)))
    out = kc.zeros(2, dtype=int)
    kc.launch(foldable, 1, inputs=[out, 10])
    assert out.numpy().tolist() == [52, 4]


def test_value_numbering_merges_repeated_expressions():
    @kc.kernel
    def repeated(s: float, o: kc.array(dtype=float)):
        o[kc.tid()] = kc.sin(s * 2.0) + kc.sin(s * 2.0)

    module = run_pipeline(repeated.get_ir(), check=True)
    calls = [s for s in ir.walk(module.kernel.body)
             if isinstance(s, ir.Op) and s.opcode == ir.OpCode.CALL]
    assert len(calls) == 1


@kc.kernel
def through_locals(a: kc.array(dtype=int), n: int):
    x = 3 * 4 + 1
    y = x << 2
    unused = a[0] * 7  # noqa: F841  (a pure read nobody uses: removed)
    if n > 0:
        y = y + 1
    a[0] = y


def test_forwarding_folds_through_locals_and_keeps_branch_merges():
    after = run_pipeline(through_locals.get_ir(), check=True)
    ops = [s for s in ir.walk(after.kernel.body) if isinstance(s, ir.Op)]
    consts = {s.attr for s in ops if s.opcode == ir.OpCode.CONST}
    assert 52 in consts  # (3 * 4 + 1) << 2 folded through x and y
    assert not any(s.opcode == ir.OpCode.ARRAY_LOAD for s in ops)  # the dead read is gone
    # y is assigned in a branch, so the store after the branch still reads the slot.
    assert any(s.opcode == ir.OpCode.LOAD_SLOT for s in ops)
    out = kc.zeros(1, dtype=int)
    kc.launch(through_locals, 1, [out, 1])
    assert out.numpy()[0] == 53
    kc.launch(through_locals, 1, [out, 0])
    assert out.numpy()[0] == 52
