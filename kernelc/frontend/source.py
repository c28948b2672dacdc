"""Getting a Python function's AST, its source position and the names it can see."""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

from kernelc.errors import KernelError, Loc


@dataclass(frozen=True)
class Source:
    name: str
    file: str
    first_line: int  # line of the `def` (or its first decorator) in `file`
    indent: int  # columns removed by dedenting
    tree: ast.FunctionDef
    globals: dict[str, Any]
    closure: dict[str, Any]
    # the `kc.static(...)` values known at declaration (see static_eval.py)
    static_values: dict[tuple[int, int, int, int], Any] = field(default_factory=dict)

    def loc(self, node: ast.AST) -> Loc:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        end = getattr(node, "end_col_offset", None)
        end_line = getattr(node, "end_lineno", line)
        if end is not None and end_line != line:
            end = None  # spans several lines: underline to the end of the first
        return Loc(
            self.file,
            self.first_line + line - 1,
            col + self.indent,
            None if end is None else end + self.indent,
        )

    def lookup_global(self, name: str) -> tuple[bool, Any]:
        if name in self.closure:
            return True, self.closure[name]
        if name in self.globals:
            return True, self.globals[name]
        if hasattr(builtins, name):
            return True, getattr(builtins, name)
        builtin = _kernel_builtin(name)
        if builtin is not None:  # as in Warp, kernels may call a builtin without `kc.`
            return True, builtin
        return False, None


def _kernel_builtin(name: str) -> Any:
    """kernelc's public builtin function `name`, or None."""
    import kernelc  # noqa: PLC0415  (the package imports this module)

    value = None if name.startswith("_") else getattr(kernelc, name, None)
    return value if callable(value) and not isinstance(value, type) else None


def read_source(func: Any) -> Source:
    """Parses `func`'s source; raises KernelError if Python cannot show it."""
    name = getattr(func, "__qualname__", getattr(func, "__name__", "<function>"))
    try:
        lines, first_line = inspect.getsourcelines(func)
        file = inspect.getsourcefile(func) or inspect.getfile(func)
    except (OSError, TypeError) as err:
        raise KernelError(
            f"cannot read the source of '{name}' ({err}); kernels must be defined in a file",
            kernel=name,
        ) from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = _leading_spaces(text) - _leading_spaces(dedented)
    module = ast.parse(dedented)
    tree = next(n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    if isinstance(tree, ast.AsyncFunctionDef):
        raise KernelError("async functions cannot be kernels", kernel=name)
    closure = {}
    if func.__closure__:
        for var, cell in zip(func.__code__.co_freevars, func.__closure__):
            try:
                closure[var] = cell.cell_contents
            except ValueError:  # an empty cell: a name assigned after the def
                pass
    return Source(name, file, first_line, indent, tree, func.__globals__, closure)


def _leading_spaces(text: str) -> int:
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return len(first) - len(first.lstrip())
