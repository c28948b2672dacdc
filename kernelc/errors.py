"""KernelError and the caret renderer.

Every user-facing compile or launch error is a KernelError: it names the kernel, gives
`file:line:col`, the offending source line and a caret under the span.
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Loc:
    """A span in a Python source file; `line` 1-based, columns 0-based, as `ast` gives them."""

    file: str
    line: int
    col: int = 0
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


UNKNOWN_LOC = Loc("<unknown>", 0, 0)


def render_caret(loc: Loc) -> str:
    """The source line of `loc` with `^~~~` under its span (empty if the line is unknown)."""
    text = linecache.getline(loc.file, loc.line).rstrip("\n")
    if not text:
        return ""
    end = loc.end_col if loc.end_col is not None and loc.end_col > loc.col else len(text)
    end = min(end, len(text)) if end > loc.col else loc.col + 1
    caret = " " * loc.col + "^" + "~" * max(0, end - loc.col - 1)
    return f"    {text}\n    {caret}"


class KernelError(TypeError):
    """A mistake in a kernel or in a launch, reported at its place in the Python source."""

    def __init__(self, message: str, loc: Loc | None = None, kernel: str | None = None):
        self.message = message
        self.loc = loc
        self.kernel = kernel
        super().__init__(self._format())

    def _format(self) -> str:
        head = f"in kernel '{self.kernel}': " if self.kernel else ""
        if self.loc is None or self.loc.line <= 0:
            return head + self.message
        caret = render_caret(self.loc)
        text = f"{self.loc}: {head}{self.message}"
        return f"{text}\n{caret}" if caret else text

    def with_context(self, loc: Loc | None, kernel: str | None) -> KernelError:
        """The same error, filling in a location and kernel name where they are missing."""
        return KernelError(self.message, self.loc or loc, self.kernel or kernel)


class KernelRuntimeError(RuntimeError):
    """A failure detected while a kernel ran (debug-mode bounds checks, failed asserts)."""
