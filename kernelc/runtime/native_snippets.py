"""`@kc.func_native` snippets on the CPU: shared libraries built by the system's C++ compiler.

Each snippet (specialised for its parameter types) becomes a small C++ translation unit
(`codegen/native_cpp.py`) with `extern "C"` entry points, compiled into a shared library
and kept in the kernel cache as `<hash>.snippet.so`, keyed by the source, the compiler and
the machine, so a later process loads it without compiling. The library is loaded with
`RTLD_GLOBAL` before the kernel that calls it, which then finds the entry points both
ways it may be loaded: the LLVM JIT (each symbol is also registered with LLVM) and the
kernel's own shared library, whose undefined symbols the dynamic linker resolves from
the libraries loaded globally.

Without a C++ compiler a kernel calling a native func raises a KernelError saying so;
kernels without one never need it.
"""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import sys
from pathlib import Path

from kernelc.errors import KernelError
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

_CXX_COMPILERS = ("c++", "g++", "clang++")
_BUILD_TIMEOUT_S = 120
LIBRARY_EXT = "snippet.so"
_HEADER = """// A kernelc native snippet, compiled for the CPU.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#define KC_NATIVE_FN inline
"""


def find_cxx_compiler() -> tuple[str, ...] | None:
    """The command that compiles C++ (a C++ driver, or the C driver kernel libraries are
    linked with, told the language), or None."""
    if not sys.platform.startswith("linux"):
        return None  # the libraries are built and loaded as ELF shared objects
    for name in _CXX_COMPILERS:
        path = shutil.which(name)
        if path:
            return (path,)
    from kernelc.runtime.native import find_compiler

    found = find_compiler()
    return (found, "-x", "c++") if found else None


def library_source(spec) -> str:
    """The C++ translation unit of one snippet."""
    from kernelc.codegen.native_cpp import PRELUDE, definitions

    return _HEADER + PRELUDE + definitions(spec, 'extern "C"')


def specs_of(module: ir.Module) -> list:
    """The distinct snippets the module's functions call."""
    found = {}
    for fn in (module.kernel, *module.funcs):
        for s in ir.walk(fn.body):
            if isinstance(s, ir.Op) and s.opcode is OpCode.NATIVE:
                found.setdefault(s.attr.spec.digest, s.attr.spec)
    return list(found.values())


class SnippetLibraries:
    """The snippet libraries this process has loaded (each once, for the process's life)."""

    def __init__(self) -> None:
        self._loaded: dict[str, ctypes.CDLL] = {}
        self._compiler: tuple[str, ...] | None | bool = False  # False: not looked for yet

    @property
    def compiler(self) -> tuple[str, ...] | None:
        if self._compiler is False:
            self._compiler = find_cxx_compiler()
        return self._compiler

    def prepare(self, module: ir.Module, cache_dir: str | None, kernel: str) -> None:
        """Loads (building where needed) every snippet `module` calls, and registers their
        entry points with LLVM; raises KernelError where one cannot be built."""
        for spec in specs_of(module):
            if spec.digest not in self._loaded:
                self._loaded[spec.digest] = self._load(spec, cache_dir, kernel)
                self._register(spec, self._loaded[spec.digest])

    def _load(self, spec, cache_dir: str | None, kernel: str) -> ctypes.CDLL:
        compiler = self.compiler
        if compiler is None:
            raise KernelError(f"native func '{spec.name}' needs a C++ compiler to run on the "
                              f"CPU, and none was found (looked for "
                              f"{', '.join(_CXX_COMPILERS)} and cc on PATH)", spec.loc, kernel)
        source = library_source(spec)
        from kernelc.runtime.cache import DiskCache, sha256

        key = sha256("|".join((source, *compiler, platform.machine())).encode()).hexdigest()
        disk = DiskCache(cache_dir) if cache_dir else None
        found = disk.load_image(key, LIBRARY_EXT) if disk is not None else None
        if found is not None:
            try:
                return ctypes.CDLL(str(found[0]), mode=os.RTLD_GLOBAL)
            except OSError:
                disk.discard(key, LIBRARY_EXT)  # not loadable here: build it again
        return self._build(spec, source, compiler, disk, key, kernel)

    def _build(self, spec, source: str, compiler: tuple[str, ...], disk, key: str,
               kernel: str) -> ctypes.CDLL:
        import subprocess
        import tempfile

        with tempfile.TemporaryDirectory(prefix="kernelc-snippet-") as tmp:
            src, out = Path(tmp) / "snippet.cpp", Path(tmp) / "snippet.so"
            src.write_text(source)
            command = [*compiler, "-std=c++17", "-O2", "-fPIC", "-shared", "-fno-exceptions",
                       "-fno-rtti", "-o", str(out), str(src), "-lm"]
            try:
                subprocess.run(command, check=True, stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=_BUILD_TIMEOUT_S)
            except subprocess.CalledProcessError as err:
                message = err.stderr.decode(errors="replace").strip()
                raise KernelError(f"native func '{spec.name}': the C++ compiler rejected "
                                  f"its snippet:\n{message}", spec.loc, kernel) from None
            except (subprocess.TimeoutExpired, OSError) as err:
                raise KernelError(f"native func '{spec.name}': compiling its snippet "
                                  f"failed: {err}", spec.loc, kernel) from None
            image = out.read_bytes()
            # Loaded from the private folder: a cache folder cleared meanwhile cannot break
            # the load, and dlopen keeps the mapping after the folder is gone.
            lib = ctypes.CDLL(str(out), mode=os.RTLD_GLOBAL)
        if disk is not None:
            disk.store_image(key, LIBRARY_EXT, image, b"")
        return lib

    @staticmethod
    def _register(spec, lib: ctypes.CDLL) -> None:
        kinds = ["forward"]
        if spec.replay_snippet is not None:
            kinds.append("replay")
        if spec.adj_snippet is not None:
            kinds.append("adjoint")
        import llvmlite.binding as llvm

        for kind in kinds:
            name = spec.symbol(kind)
            llvm.add_symbol(name, ctypes.cast(lib[name], ctypes.c_void_p).value)


def prepare_cpu(module: ir.Module, state, cache_dir: str | None, kernel: str) -> None:
    """Makes the snippets `module` calls available to its CPU code (see the module doc)."""
    if not any(isinstance(s, ir.Op) and s.opcode is OpCode.NATIVE
               for fn in module.funcs for s in ir.walk(fn.body)):
        return
    if state.snippets is None:
        state.snippets = SnippetLibraries()
    state.snippets.prepare(module, cache_dir, kernel)
