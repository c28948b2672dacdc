"""`kc.config.verify_fp`: every float written to an array is checked to be finite.

After each array store and float atomic, a check prints the file, line, kernel, the array
and the value when it is NaN or infinite, so that the first write of a non-finite value
can be found. The checks are IR, so both backends run them.
"""

from __future__ import annotations

import dataclasses

from kernelc import types as T
from kernelc.frontend.builder import IRBuilder
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

_MAX_COMPONENTS = 16  # printed of a vector or matrix (all are checked)


def insert_fp_checks(module: ir.Module) -> ir.Module:
    """`module` with a finiteness check after every float array store and atomic."""
    kernel = module.kernel.name
    return dataclasses.replace(
        module, kernel=_checked(module.kernel, kernel),
        funcs=tuple(_checked(f, kernel) for f in module.funcs))


def _checked(fn: ir.Function, kernel: str) -> ir.Function:
    b = IRBuilder()
    b._next_id = _max_id(fn)
    names = {p.id: n for p, n in zip(fn.params, fn.param_names)}
    body = _block(fn.body, b, names, kernel)
    return dataclasses.replace(fn, body=body)


def _block(block: tuple[ir.Stmt, ...], b: IRBuilder, names: dict[int, str], kernel: str
           ) -> tuple[ir.Stmt, ...]:
    out: list[ir.Stmt] = []
    for s in block:
        if isinstance(s, ir.If):
            s = dataclasses.replace(s, then_body=_block(s.then_body, b, names, kernel),
                                    else_body=_block(s.else_body, b, names, kernel))
        elif isinstance(s, ir.For):
            s = dataclasses.replace(s, body=_block(s.body, b, names, kernel))
        elif isinstance(s, ir.While):
            s = dataclasses.replace(s, cond_body=_block(s.cond_body, b, names, kernel),
                                    body=_block(s.body, b, names, kernel))
        out.append(s)
        written = _written(s, b)
        if written is not None:
            value, array, pre = written
            out += pre
            out += _check(value, s.loc, _array_name(array, names), kernel, b)
    return tuple(out)


def _written(s: ir.Stmt, b: IRBuilder):
    """(the value `s` leaves in an array, the array, statements computing it), or None."""
    if isinstance(s, ir.ArrayStore) and _has_floats(s.value.type):
        return s.value, s.array, []
    if not (isinstance(s, ir.Op) and s.opcode == OpCode.ATOMIC and s.result is not None):
        return None
    kind = s.attr[0] if isinstance(s.attr, tuple) else s.attr
    operand = s.args[-1]
    if not _has_floats(operand.type):
        return None
    if kind in ("add", "sub") and isinstance(operand.type, T.ScalarType):
        with b.region() as pre:  # the new value: old op operand
            op = OpCode.ADD if kind == "add" else OpCode.SUB
            new = b.op(op, (s.result, operand), operand.type)
        return new, s.args[0], list(pre)
    return operand, s.args[0], []


def _has_floats(t: T.Type) -> bool:
    if isinstance(t, T.ScalarType):
        return t.is_float
    if isinstance(t, (T.VectorType, T.MatrixType)):
        return t.dtype.is_float
    if isinstance(t, T.StructType):
        return any(_has_floats(f) for _, f in t.fields)
    return False


def _check(value: ir.Value, loc, array: str, kernel: str, b: IRBuilder) -> list[ir.Stmt]:
    """`if not isfinite(value): printf(...)`, field by field for a struct."""
    t = value.type
    if isinstance(t, T.StructType):
        out = []
        for k, (name, ft) in enumerate(t.fields):
            if _has_floats(ft):
                with b.region() as pre:
                    field = b.op(OpCode.EXTRACT, (value,), ft, k)
                out += list(pre) + _check(field, loc, f"{array} (field '{name}')", kernel, b)
        return out
    with b.region() as stmts:
        b.loc = loc
        finite = b.call("isfinite", [value])
        bad = b.op(OpCode.NOT, (finite,), T.bool_)
        if isinstance(t, T.ScalarType):
            parts = [value]
        else:
            count = min(t.length if isinstance(t, T.VectorType) else t.rows * t.cols,
                        _MAX_COMPONENTS)
            parts = [b.op(OpCode.EXTRACT, (value,), t.dtype, k) for k in range(count)]
        where = f"{loc.file}:{loc.line}".replace("%", "%%")
        fmt = (f"{where}: verify_fp: kernel '{kernel}' wrote a non-finite value to "
               f"{array}: " + " ".join(["%f"] * len(parts)) + "\n")
        message = ir.Print(loc, fmt, tuple(parts))
    return [*stmts, ir.If(loc, bad, (message,))]


def _array_name(array: ir.Value, names: dict[int, str]) -> str:
    name = names.get(array.id)
    return f"array '{name}'".replace("%", "%%") if name else "an array"


def _max_id(fn: ir.Function) -> int:
    ids = [v.id for v in fn.params] + [s.id for s in fn.slots]
    for s in ir.walk(fn.body):
        result = getattr(s, "result", None)
        if isinstance(result, ir.Value):
            ids.append(result.id)
        for name in ("var",):
            v = getattr(s, name, None)
            if isinstance(v, ir.Value):
                ids.append(v.id)
    return max(ids, default=0)
