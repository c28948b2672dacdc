"""Text form of the IR, for `KERNELC_DUMP_IR=1`, golden tests and kernel_history()."""

from __future__ import annotations

from kernelc.ir import nodes as ir


def format_module(module: ir.Module) -> str:
    return "\n\n".join(format_function(f) for f in (*module.funcs, module.kernel))


def format_function(fn: ir.Function) -> str:
    kind = "kernel" if fn.is_kernel else "func"
    params = ", ".join(f"{p!r}: {p.type!r} ({n})" for p, n in zip(fn.params, fn.param_names))
    rets = ", ".join(repr(t) for t in fn.return_types)
    head = f"{kind} {fn.name}({params})" + (f" -> ({rets})" if rets else "")
    if fn.lanes > 1:
        head += f" per block of {fn.lanes} lanes"
    slots = "".join(f"\n  slot {s!r}: {s.type!r}" for s in fn.slots)
    return head + slots + "\n" + "\n".join(_block(fn.body, 1))


def _block(block: ir.Block, depth: int) -> list[str]:
    pad = "  " * depth
    out: list[str] = []
    for s in block:
        if isinstance(s, ir.Op):
            args = ", ".join(repr(a) for a in s.args)
            attr = "" if s.attr is None else f" [{s.attr!r}]"
            lhs = f"{s.result!r}: {s.result.type!r} = " if s.result is not None else ""
            out.append(f"{pad}{lhs}{s.opcode.value}{attr}({args})")
        elif isinstance(s, ir.StoreSlot):
            out.append(f"{pad}{s.slot!r} <- {s.value!r}")
        elif isinstance(s, ir.LocalStore):
            out.append(f"{pad}{s.slot!r}[{s.index!r}] <- {s.value!r}")
        elif isinstance(s, ir.ArrayStore):
            idx = ", ".join(repr(i) for i in s.indices)
            out.append(f"{pad}{s.array!r}[{idx}] <- {s.value!r}")
        elif isinstance(s, ir.If):
            out.append(f"{pad}if {s.cond!r}:")
            out += _block(s.then_body, depth + 1)
            if s.else_body:
                out.append(f"{pad}else:")
                out += _block(s.else_body, depth + 1)
        elif isinstance(s, ir.For):
            out.append(f"{pad}for {s.var!r} in range({s.start!r}, {s.stop!r}, {s.step!r}):")
            out += _block(s.body, depth + 1)
        elif isinstance(s, ir.While):
            out.append(f"{pad}while:")
            out += _block(s.cond_body, depth + 2)
            out.append(f"{pad}  test {s.cond!r}")
            out.append(f"{pad}do:")
            out += _block(s.body, depth + 1)
        elif isinstance(s, ir.Return):
            out.append(f"{pad}return " + ", ".join(repr(v) for v in s.values))
        elif isinstance(s, ir.Print):
            out.append(f"{pad}print {s.fmt!r} " + ", ".join(repr(v) for v in s.args))
        elif isinstance(s, ir.Assert):
            out.append(f"{pad}assert {s.cond!r}  # {s.message}")
        else:
            out.append(f"{pad}{type(s).__name__.lower()}")
    return out
