"""IR -> CUDA-C: one `extern "C" __global__` entry per kernel, funcs as __device__ functions.

The generated text is self-contained (the prelude of `cuda_prelude.py` comes first) and
compiles unchanged with NVRTC and, for testing on machines without a GPU, with a host C++
compiler that includes an emulation header. Layout of the output:

    prelude
    one __device__ function per func (callees first), each taking `kc_thread& kc_t`
    kc_body_<kernel>(kc_thread&, params...)   the kernel's body, for one thread
    <kernel>_kernel(kc_launch, params...)     grid-stride loop over the launch's threads

Values become `const` C locals (`v<id>`), slots mutable locals zeroed at function entry
(`s<id>_<name>`). Structured IR maps onto C's if / for / break / continue directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelc import types as T
from kernelc.codegen import cuda_aggregate, cuda_native
from kernelc.codegen.cuda_layout import ParamLayout, build_layout
from kernelc.codegen.cuda_ops import (
    OP_EMITTERS,
    c_string,
    from_storage,
    func_symbol,
    printf_arg,
    return_struct,
    to_storage,
)
from kernelc.codegen.cuda_prelude import PRELUDE
from kernelc.codegen.cuda_types import (
    UnsupportedError,
    storage_type,
    type_definitions,
    value_type,
)
from kernelc.errors import KernelError, Loc
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

# Every op's lowering: the scalar table, with the aggregate ops (and the aggregate cases of
# CONST and ATOMIC) and native snippet calls on top.
EMITTERS = {**OP_EMITTERS, **cuda_aggregate.OPS, **cuda_native.OPS}

__all__ = ["CudaOptions", "CudaSource", "ParamLayout", "emit_cuda", "entry_name"]


@dataclass(frozen=True, slots=True)
class CudaOptions:
    """Options of the CUDA backend.

    Attributes:
        debug: bounds-check every array and local-array access and check asserts; a failed
            check writes the launch's `kc_error` record and ends the thread.
        lineinfo: map the generated code back to the Python source (`#line` directives,
            and NVRTC's -lineinfo) for profilers and debuggers.
        line_directives: with `lineinfo`, emit the `#line` directives (`kc.config`).
        fast_math: compile with NVRTC's --use_fast_math.
    """

    debug: bool = False
    lineinfo: bool = False
    line_directives: bool = True
    fast_math: bool = False


@dataclass(frozen=True, slots=True)
class CudaSource:
    """A kernel's CUDA-C translation unit.

    Attributes:
        text: the CUDA-C source.
        entry: the `extern "C"` name of the __global__ function.
        kernel: the kernel's name in the IR.
        check_locs: the source location of each debug check; a `kc_error` record's
            `check_id` indexes this tuple.
        params: the entry point's parameter layout.
        options: the options it was emitted with.
    """

    text: str
    entry: str
    kernel: str
    check_locs: tuple[Loc, ...]
    params: ParamLayout
    options: CudaOptions


def entry_name(kernel_name: str) -> str:
    """The symbol of a kernel's __global__ entry point."""
    return f"{kernel_name}_kernel"


def emit_cuda(module: ir.Module, options: CudaOptions | None = None) -> CudaSource:
    """Translates an IR module (a kernel and the funcs it reaches) to CUDA-C.

    Raises:
        KernelError: the module uses something the CUDA backend cannot lower; the error
            names the kernel and the statement's location.
    """
    options = options or CudaOptions()
    checks: list[Loc] = []
    kernel = module.kernel
    try:
        types = type_definitions(module)
    except UnsupportedError as err:
        raise KernelError(f"CUDA backend: {err}", kernel.loc, kernel.name) from None
    parts = [PRELUDE, types] if types else [PRELUDE]
    natives = cuda_native.definitions(module)  # @kc.func_native snippets
    if natives:
        parts.append(natives)
    for fn in module.funcs:
        parts.append(FunctionEmitter(fn, module, options, checks, kernel.name).emit())
    parts.append(FunctionEmitter(kernel, module, options, checks, kernel.name).emit())
    entry, layout = _emit_entry(kernel)
    parts.append(entry)
    return CudaSource(
        text="\n".join(parts), entry=entry_name(kernel.name), kernel=kernel.name,
        check_locs=tuple(checks), params=layout, options=options,
    )


def _param_symbol(name: str) -> str:
    return "p_" + "".join(c if c.isalnum() else "_" for c in name)


def _emit_entry(kernel: ir.Function) -> tuple[str, ParamLayout]:
    """The __global__ function: a grid-stride loop calling the body for each thread."""
    specs, params, args = [], ["kc_launch kc_launch_args"], []
    for value, name in zip(kernel.params, kernel.param_names):
        t = value.type
        try:
            c_type = storage_type(t)
        except UnsupportedError as err:
            raise KernelError(str(err), kernel.loc, kernel.name) from None
        specs.append((name, t, c_type))
        symbol = _param_symbol(name)
        params.append(f"{c_type} {symbol}")
        # (16-bit floats arrive as their bits; bool converts implicitly)
        args.append(from_storage(symbol, t) if t != T.bool_ else symbol)
    call_args = "".join(f", {a}" for a in args)
    text = (
        f'extern "C" __global__ void {entry_name(kernel.name)}({", ".join(params)}) {{\n'
        "    const kc_int64 kc_stride = (kc_int64)blockDim.x * gridDim.x;\n"
        "    for (kc_int64 kc_tid = (kc_int64)blockIdx.x * blockDim.x + threadIdx.x;\n"
        "         kc_tid < kc_launch_args.size; kc_tid += kc_stride) {\n"
        "        kc_thread kc_t = {kc_launch_args, kc_tid, false};\n"
        f"        kc_body_{kernel.name}(kc_t{call_args});\n"
        "    }\n"
        "}\n"
    )
    return text, build_layout(specs)


class FunctionEmitter:
    """Emits one kernel body or func; holds the state op emitters consult."""

    def __init__(self, fn: ir.Function, module: ir.Module, options: CudaOptions,
                 checks: list[Loc], kernel_name: str) -> None:
        self.fn = fn
        self.module = module
        self.options = options
        self.checks = checks
        self.kernel_name = kernel_name
        self.lines: list[str] = []
        self.depth = 1
        self.consts: dict[int, Any] = {}  # value id -> Python value of CONST results
        self.line_at: tuple[str, int] | None = None
        self.exit = self._exit_statement()
        self._stmt_emitters: dict[type, Callable[[Any], None]] = {
            ir.Op: self.emit_op, ir.StoreSlot: self.emit_store_slot,
            ir.LocalStore: self.emit_local_store, ir.ArrayStore: self.emit_array_store,
            ir.If: self.emit_if, ir.For: self.emit_for, ir.While: self.emit_while,
            ir.Break: self.emit_break, ir.Continue: self.emit_continue,
            ir.Return: self.emit_return, ir.Print: self.emit_print, ir.Assert: self.emit_assert,
        }

    # ---- names used by the op emitters ----------------------------------------------------

    @staticmethod
    def name(value: ir.Value) -> str:
        return f"v{value.id}"

    @staticmethod
    def slot_name(slot: ir.Slot) -> str:
        clean = "".join(c if c.isalnum() else "_" for c in slot.name)
        return f"s{slot.id}_{clean}"

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    # ---- debug checks ---------------------------------------------------------------------

    def _check_id(self, loc: Loc) -> int:
        self.checks.append(loc)
        return len(self.checks) - 1

    def check_array_index(self, array: str, indices: str, loc: Loc) -> None:
        if self.options.debug:
            check = self._check_id(loc)
            self.line(f"if (!kc_check_index(kc_t, {check}, {array}, {indices})) {self.exit}")

    def check_local_index(self, index: str, length: int, loc: Loc) -> bool:
        """Emits a debug-mode check of a local-array index; True if one was emitted."""
        if not self.options.debug:
            return False
        check = self._check_id(loc)
        self.line(f"if (!kc_check_local(kc_t, {check}, (kc_int64){index}, {length})) {self.exit}")
        return True

    def _exit_statement(self) -> str:
        """What ends the thread after a failed check: leave the body, or leave the func
        (the caller sees `kc_t.aborted` and leaves too)."""
        if self.fn.is_kernel or not self.fn.return_types:
            return "return;"
        return f"return {self._return_type()}{{}};"

    def _return_type(self) -> str:
        rets = self.fn.return_types
        if not rets:
            return "void"
        if len(rets) == 1:
            return value_type(rets[0])
        return return_struct(self.fn.name)

    # ---- functions ------------------------------------------------------------------------

    def emit(self) -> str:
        try:
            return self._emit_function()
        except UnsupportedError as err:
            raise KernelError(f"CUDA backend: {err}", self.fn.loc, self.kernel_name) from None

    def _emit_function(self) -> str:
        fn = self.fn
        head: list[str] = []
        params = "".join(f", {value_type(p.type)} {self.name(p)}" for p in fn.params)
        if fn.is_kernel:
            signature = (f"static __device__ __forceinline__ void "
                         f"kc_body_{fn.name}(kc_thread& kc_t{params})")
        else:
            if len(fn.return_types) > 1:
                fields = " ".join(f"{value_type(t)} f{i};" for i, t in enumerate(fn.return_types))
                head.append(f"struct {return_struct(fn.name)} {{ {fields} }};")
            signature = (f"static __device__ {self._return_type()} "
                         f"{func_symbol(fn.name)}(kc_thread& kc_t{params})")
        for slot in fn.slots:
            self._declare_slot(slot)
        self.emit_block(fn.body)
        if fn.return_types and not (fn.body and isinstance(fn.body[-1], ir.Return)):
            self.line(self.exit)  # not reached: the front end checks every path returns
        body = "\n".join(self.lines)
        return "\n".join([*head, signature + " {", body, "}", ""])

    def _declare_slot(self, slot: ir.Slot) -> None:
        t = slot.type
        if isinstance(t, T.LocalArrayType):
            # In memory form, as array elements are: a local array may be viewed as one.
            self.line(f"{storage_type(t.dtype)} {self.slot_name(slot)}[{t.length}] = {{}};")
        else:
            self.line(f"{value_type(t)} {self.slot_name(slot)} = {{}};")

    # ---- statements -----------------------------------------------------------------------

    def emit_block(self, block: ir.Block) -> None:
        for stmt in block:
            self._line_directive(stmt.loc)
            emitter = self._stmt_emitters.get(type(stmt))
            if emitter is None:
                raise UnsupportedError(f"statement {type(stmt).__name__}")
            try:
                emitter(stmt)
            except UnsupportedError as err:
                raise KernelError(f"CUDA backend: {err}", stmt.loc, self.kernel_name) from None

    def _line_directive(self, loc: Loc) -> None:
        if not (self.options.lineinfo and self.options.line_directives) or loc.line <= 0:
            return
        if self.line_at != (loc.file, loc.line):
            self.line_at = (loc.file, loc.line)
            self.lines.append(f"#line {loc.line} {c_string(loc.file)}")

    def emit_op(self, op: ir.Op) -> None:
        emitter = EMITTERS.get(op.opcode)
        if emitter is None:
            raise UnsupportedError(f"op '{op.opcode.value}'")
        expr = emitter(self, op)
        if op.result is None:
            self.line(f"{expr};")
        else:
            if isinstance(op.result.type, T.TupleType):
                c_type = return_struct(op.attr)
            else:
                c_type = value_type(op.result.type)
            self.line(f"const {c_type} {self.name(op.result)} = {expr};")
        if op.opcode == OpCode.CALL_FUNC and self.options.debug:
            self.line(f"if (kc_t.aborted) {self.exit}")

    def emit_store_slot(self, stmt: ir.StoreSlot) -> None:
        self.line(f"{self.slot_name(stmt.slot)} = {self.name(stmt.value)};")

    def emit_local_store(self, stmt: ir.LocalStore) -> None:
        index, length = self.name(stmt.index), stmt.slot.type.length
        value = to_storage(self.name(stmt.value), stmt.slot.type.dtype)
        target = f"{self.slot_name(stmt.slot)}[{index}] = {value};"
        if self.check_local_index(index, length, stmt.loc):
            self.line(target)
        else:  # release: an out-of-range store is dropped
            self.line(f"if ((kc_uint64)(kc_int64){index} < {length}u) {target}")

    def emit_array_store(self, stmt: ir.ArrayStore) -> None:
        array = self.name(stmt.array)
        indices = ", ".join(self.name(i) for i in stmt.indices)
        self.check_array_index(array, indices, stmt.loc)
        value = to_storage(self.name(stmt.value), stmt.array.type.dtype)
        self.line(f"*kc_addr({array}, {indices}) = {value};")

    def _nested(self, block: ir.Block) -> None:
        self.depth += 1
        self.emit_block(block)
        self.depth -= 1

    def emit_if(self, stmt: ir.If) -> None:
        self.line(f"if ({self.name(stmt.cond)}) {{")
        self._nested(stmt.then_body)
        if stmt.else_body:
            self.line("} else {")
            self._nested(stmt.else_body)
        self.line("}")

    def emit_for(self, stmt: ir.For) -> None:
        t = stmt.var.type
        if not (isinstance(t, T.ScalarType) and t.is_int):
            raise UnsupportedError(f"a range() over {t!r}")
        ct = value_type(t)
        var, start, stop = self.name(stmt.var), self.name(stmt.start), self.name(stmt.stop)
        step = self.consts.get(stmt.step.id)
        if step in (1, -1):
            # i < stop (i > stop) before the increment means it cannot overflow.
            cmp, inc = ("<", "++") if step == 1 else (">", "--")
            self.line(f"for ({ct} {var} = {start}; {var} {cmp} {stop}; {inc}{var}) {{")
        else:
            # Any other step: count the iterations first (Python's range, no overflow).
            u = "kc_uint64" if t.bits == 64 else "kc_uint32"
            count, k = f"kc_n{stmt.var.id}", f"kc_k{stmt.var.id}"
            step_name = self.name(stmt.step)
            self.line(f"const {u} {count} = kc_trip_count<{u}>({start}, {stop}, {step_name});")
            self.line(f"for ({u} {k} = 0; {k} < {count}; ++{k}) {{")
            self.line(f"    const {ct} {var} = ({ct})(({u}){start} + {k} * ({u}){step_name});")
        self._nested(stmt.body)
        self.line("}")

    def emit_while(self, stmt: ir.While) -> None:
        # `continue` jumps to the top, so the condition is recomputed as Python does.
        self.line("for (;;) {")
        self._nested(stmt.cond_body)
        self.line(f"    if (!{self.name(stmt.cond)}) break;")
        self._nested(stmt.body)
        self.line("}")

    def emit_break(self, stmt: ir.Break) -> None:
        self.line("break;")

    def emit_continue(self, stmt: ir.Continue) -> None:
        self.line("continue;")

    def emit_return(self, stmt: ir.Return) -> None:
        values = [self.name(v) for v in stmt.values]
        if not values:
            self.line("return;")
        elif len(values) == 1:
            self.line(f"return {values[0]};")
        else:
            self.line(f"return {return_struct(self.fn.name)}{{{', '.join(values)}}};")

    def emit_print(self, stmt: ir.Print) -> None:
        args = "".join(f", {printf_arg(self.name(v), v.type)}" for v in stmt.args)
        self.line(f"printf({c_string(stmt.fmt)}{args});")

    def emit_assert(self, stmt: ir.Assert) -> None:
        if self.options.debug:
            check = self._check_id(stmt.loc)
            self.line(f"if (!kc_check_assert(kc_t, {check}, {self.name(stmt.cond)})) {self.exit}")

