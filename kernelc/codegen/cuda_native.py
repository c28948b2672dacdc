"""CUDA-C lowering of NATIVE ops: `@kc.func_native` snippets as `__device__` functions.

`definitions(module)` gives the snippets' C++ (`native_cpp.py`: Warp's type names, then
each snippet and its entry points as `static __device__` functions) placed after the
aggregate types; NVRTC inlines the entry points, so passing operands by address costs
nothing. A NATIVE op copies its operands into mutable locals (values are `const`, and a
snippet may write its `kc.ref[T]` parameters and adjoints), calls the entry point with
their addresses and reads the results back.
"""

from __future__ import annotations

from typing import Any

from kernelc import types as T
from kernelc.codegen.cuda_ops import array_access, return_struct
from kernelc.codegen.cuda_types import element_type, member, value_type
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

_ENTRY = "static __device__ __forceinline__"


def _native_ops(module: ir.Module) -> list[ir.Op]:
    return [s for fn in (*module.funcs, module.kernel) for s in ir.walk(fn.body)
            if isinstance(s, ir.Op) and s.opcode is OpCode.NATIVE]


def definitions(module: ir.Module) -> str:
    """The C++ of every snippet `module` calls (empty when it calls none)."""
    ops = _native_ops(module)
    if not ops:
        return ""
    from kernelc.codegen.native_cpp import PRELUDE
    from kernelc.codegen.native_cpp import definitions as snippet_definitions

    parts = ["#define KC_NATIVE_FN __device__ __forceinline__\n", PRELUDE]
    specs: dict[str, Any] = {}
    structs: dict[str, str] = {}
    for s in ops:
        specs.setdefault(s.attr.spec.digest, s.attr.spec)
        t = s.result.type if s.result is not None else None
        if isinstance(t, T.TupleType):  # named after the op's attr, as emit_op declares it
            fields = " ".join(f"{value_type(e)} f{k};" for k, e in enumerate(t.elements))
            structs[return_struct(s.attr)] = f"struct {return_struct(s.attr)} {{ {fields} }};\n"
    parts += [snippet_definitions(spec, _ENTRY) for spec in specs.values()]
    parts += list(structs.values())
    return "// ---- native snippets ----\n" + "".join(parts)


def _emit_native(e: Any, op: ir.Op) -> str:
    call = op.attr
    spec = call.spec
    n = len(spec.params)
    prefix = f"kc_n{op.result.id}" if op.result is not None else f"kc_n_{len(e.lines)}"
    names = []
    for k, a in enumerate(op.args):
        names.append(f"{prefix}_{k}")
        e.line(f"{value_type(a.type)} {names[-1]} = {e.name(a)};")

    def pointers(label: str, items: list[str]) -> str:
        listed = ", ".join(f"(void*)&{x}" for x in items) or "0"
        e.line(f"void* {prefix}_{label}[{max(1, len(items))}] = {{{listed}}};")
        return f"{prefix}_{label}"

    if call.kind == "adjoint":
        adj_ret = f"(void*)&{names[2 * n]}" if len(names) > 2 * n else "0"
        args = pointers("args", names[:n])
        adjoints = pointers("adj", names[n:2 * n])
        e.line(f"{spec.symbol(call.kind)}({args}, {adjoints}, {adj_ret});")
        outputs = [names[n + k] for k in spec.adjoint_outputs]
    else:
        args = pointers("args", names)
        ret = "0"
        outputs = []
        if spec.result is not None:
            e.line(f"{value_type(spec.result)} {prefix}_ret;")
            ret = f"(void*)&{prefix}_ret"
            outputs.append(f"{prefix}_ret")
        e.line(f"{spec.symbol(call.kind)}({args}, {ret});")
        outputs += [names[k] for k in spec.ref_outputs]
    if not outputs:
        return "(void)0"
    if len(outputs) == 1:
        return outputs[0]
    return f"{return_struct(call)}{{{', '.join(outputs)}}}"


OPS = {OpCode.NATIVE: _emit_native}


def _members(t: T.Type, path: tuple[int, ...]) -> str:
    """The C member accesses down `path` (EXTRACT indices) of a value of type `t`."""
    out = ""
    for k in path:
        out += member(t, k)
        t = element_type(t, k)
    return out


def _emit_slot_address(e: Any, op: ir.Op) -> str:
    slot, path = op.attr
    return f"(kc_uint64)&({e.slot_name(slot)}{_members(slot.type, path)})"


def _emit_element_address(e: Any, op: ir.Op) -> str:
    pointer = array_access(e, op, op.args[1:])
    return f"(kc_uint64)&((*{pointer}){_members(op.args[0].type.dtype, op.attr)})"


OPS[OpCode.SLOT_ADDRESS] = _emit_slot_address
OPS[OpCode.ELEMENT_ADDRESS] = _emit_element_address
