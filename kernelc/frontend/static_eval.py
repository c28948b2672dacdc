"""`kc.static(expr)` evaluated where the kernel or func is declared, as Warp does.

At declaration, each outermost `static(...)` whose expression reads no local of the
function (parameters, assigned names, loop variables) is evaluated with the globals and
the closure as they are then, once. Lowering uses those values; a static that reads
locals (a loop variable of an unrolled loop, a constant local), or whose early evaluation
failed, is evaluated when the kernel is compiled (`special._static`). So a kernel made in
a loop or a factory keeps the value it was declared with, and a side-effecting expression
runs once.
"""

from __future__ import annotations

import ast
from typing import Any

from kernelc.frontend.source import Source

# (lineno, col_offset, end_lineno, end_col_offset) of a static(...) call -> its value
StaticValues = dict[tuple[int, int, int, int], Any]


def static_key(node: ast.Call) -> tuple[int, int, int, int]:
    return (node.lineno, node.col_offset, node.end_lineno or 0, node.end_col_offset or 0)


def is_static_call(node: ast.AST) -> bool:
    """Whether `node` is a call spelled `static(...)` or `<module>.static(...)`."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "static") or (
        isinstance(func, ast.Name) and func.id == "static")


def declared_statics(source: Source) -> StaticValues:
    """The values of the static expressions of `source` that can be known now."""
    from kernelc.frontend.special import static

    tree = source.tree
    local_names = {a.arg for a in (*tree.args.posonlyargs, *tree.args.args)}
    local_names.update(n.id for n in ast.walk(tree)
                       if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    scope = dict(source.globals)
    scope.update(source.closure)
    values: StaticValues = {}

    def visit(node: ast.AST) -> None:
        if is_static_call(node) and len(node.args) == 1 and not node.keywords:
            read = {n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name)}
            if not read & local_names and _names_static(node.func, scope, static):
                try:
                    code = compile(ast.Expression(node.args[0]), source.file, "eval")
                    values[static_key(node)] = eval(code, scope)  # noqa: S307 (by design)
                except Exception:  # noqa: BLE001 (reported when the kernel is compiled)
                    pass
                return  # statics nested in this one ran as part of it
        for child in ast.iter_child_nodes(node):
            visit(child)

    for stmt in tree.body:
        visit(stmt)
    return values


def _names_static(func: ast.expr, scope: dict[str, Any], static: Any) -> bool:
    """Whether `func` (`wp.static`, `static`) names kernelc's static, not another function."""
    try:
        found = eval(compile(ast.Expression(func), "<static>", "eval"), dict(scope))  # noqa: S307
    except Exception:  # noqa: BLE001
        return False
    return found is static
