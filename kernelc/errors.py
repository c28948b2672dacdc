"""KernelError and the caret renderer, and Warp's code-generation error classes.

Every user-facing compile or launch error is a KernelError: it names the kernel, gives
`file:line:col`, the offending source line and a caret under the span.

Warp programs catch Warp's names, so they are part of the same hierarchy:

```
RuntimeError
 └─ WarpCodegenError                       Warp's base of code-generation errors
     └─ KernelError (also a TypeError)     every kernelc compile and launch error
         ├─ WarpCodegenTypeError
         ├─ WarpCodegenAttributeError      (also an AttributeError)
         ├─ WarpCodegenIndexError          (also an IndexError)
         ├─ WarpCodegenKeyError            (also a KeyError)
         └─ WarpCodegenValueError          (also a ValueError)
```

So `except wp.WarpCodegenError` (or `except RuntimeError`, or `except TypeError`) catches
every kernelc compile error, and each specific class is also the built-in exception Warp's
class of that name derives from. (In Warp the specific classes do not derive from
`WarpCodegenError`; here they do, so one `except` catches them all.)
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


class WarpCodegenError(RuntimeError):
    """Warp's base class of code-generation errors (a RuntimeError, as in Warp).

    Every `KernelError` is one, so `except wp.WarpCodegenError:` in a Warp program catches
    kernelc's compile errors.
    """


class KernelError(TypeError, WarpCodegenError):
    """A mistake in a kernel or in a launch, reported at its place in the Python source.

    A TypeError (as many of Warp's errors for these mistakes are) and a `WarpCodegenError`.
    """

    # One of the specific subclasses also derives from KeyError, whose str() quotes the
    # message; every KernelError prints its message as it is.
    __str__ = Exception.__str__

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
        return type(self)(self.message, self.loc or loc, self.kernel or kernel)


class WarpCodegenTypeError(KernelError):
    """A type mistake in kernel code (Warp's name; a KernelError, hence a TypeError)."""


class WarpCodegenAttributeError(KernelError, AttributeError):
    """An unknown attribute in kernel code (Warp's name; also an AttributeError)."""


class WarpCodegenIndexError(KernelError, IndexError):
    """A bad index in kernel code (Warp's name; also an IndexError)."""


class WarpCodegenKeyError(KernelError, KeyError):
    """An unknown name in kernel code (Warp's name; also a KeyError)."""


class ReshapeError(ValueError, RuntimeError):
    """A shape that does not fit an array's size (NumPy raises ValueError, Warp
    RuntimeError: either catches it)."""


class WarpCodegenValueError(KernelError, ValueError):
    """A bad value in kernel code (Warp's name; also a ValueError)."""


class WarpDeterminismError(RuntimeError):
    """A determinism guarantee kernelc cannot give (`config.deterministic`, Warp's name).

    Raised by a CUDA launch, in a deterministic mode, of a kernel with order-dependent
    atomics: kernelc's deterministic modes run on the CPU only.
    """


class KernelRuntimeError(RuntimeError):
    """A failure detected while a kernel ran (debug-mode bounds checks, failed asserts)."""
