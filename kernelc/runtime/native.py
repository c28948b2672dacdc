"""Kernels as shared libraries: linked by the system's C compiler, loaded with dlopen.

After a kernel is compiled, its position-independent object code is linked into a shared
library (`cc -shared k.o -lm`) on one background thread and stored in the disk cache
beside the object (`<key>.so`, checked by a trailer; see `cache.py`). A later process
loads that library with `ctypes.CDLL` and takes the entry's address from it, so a warm
start needs no LLVM at all. Without a C compiler, or where linking or loading fails, the
object stays the only entry and is loaded into the JIT as before (a `<key>.nolink` entry
remembers a failed link so that it is not retried by every process).

The link thread is not a daemon: a short script that compiled a kernel waits for its link
at exit, so that the next process finds the library.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from kernelc.runtime.cache import DiskCache

LIBRARY_EXT = "so"
NO_LINK_EXT = "nolink"
_COMPILERS = ("cc", "gcc", "clang")
_LINK_TIMEOUT_S = 120


def find_compiler() -> str | None:
    """The C compiler driver that links kernel libraries, or None (then only the JIT)."""
    import shutil

    if not sys.platform.startswith("linux"):
        return None  # the library path is written for ELF and `cc -shared`
    for name in _COMPILERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def link_shared(compiler: str, obj: bytes) -> bytes:
    """Links one object file into a shared library; raises OSError/SubprocessError on failure.

    `-nostdlib` skips the C runtime's start files and libc's linker script, which take
    most of a plain `cc -shared` (~17 ms instead of ~60 ms here): libc's symbols (printf,
    memcpy) resolve at dlopen through libm, whose dependency libc is, and libgcc supplies
    the helpers LLVM may call (half-precision conversions, 128-bit division). A compiler
    that rejects this gets the plain command.
    """
    import subprocess  # with tempfile, ~4 ms of imports that only a link needs
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kernelc-link-") as tmp:
        src, out = os.path.join(tmp, "kernel.o"), os.path.join(tmp, "kernel.so")
        with open(src, "wb") as f:
            f.write(obj)
        fast = [compiler, "-shared", "-nostdlib", "-o", out, src, "-lm", "-lgcc"]
        plain = [compiler, "-shared", "-o", out, src, "-lm"]
        for i, command in enumerate((fast, plain)):
            try:
                subprocess.run(command, check=True, stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=_LINK_TIMEOUT_S)
                break
            except subprocess.CalledProcessError:
                if i == 1:
                    raise
        with open(out, "rb") as f:
            image = f.read()
    if image[:4] != b"\x7fELF":
        raise OSError(f"{compiler} did not write an ELF shared library")
    return image


@dataclass(frozen=True)
class LinkJob:
    directory: Path
    key: str
    obj: bytes
    meta: bytes

    def run(self, compiler: str) -> None:
        import subprocess

        disk = DiskCache(str(self.directory))
        try:
            image = link_shared(compiler, self.obj)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
            stderr = getattr(err, "stderr", b"") or b""
            disk.store(self.key, NO_LINK_EXT, str(err).encode() + b"\n" + stderr)
            return
        except OSError:
            return  # no temp space, compiler vanished: the object entry still works
        disk.store_image(self.key, LIBRARY_EXT, image, self.meta)


class Linker:
    """Runs link jobs one at a time on a background thread started when there is work."""

    def __init__(self) -> None:
        self._compiler: str | None | bool = False  # False: not looked for yet
        self._reset()
        if hasattr(os, "register_at_fork"):  # a forked child starts with no links of its own
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._cond = threading.Condition()
        self._jobs: deque[LinkJob] = deque()
        self._running: LinkJob | None = None
        self._thread: threading.Thread | None = None

    @property
    def compiler(self) -> str | None:
        if self._compiler is False:
            self._compiler = find_compiler()
        return self._compiler

    def submit(self, job: LinkJob) -> bool:
        """Queues a link; False when there is no compiler to run it."""
        if self.compiler is None:
            return False
        with self._cond:
            if any(j.key == job.key and j.directory == job.directory for j in self._jobs):
                return True
            self._jobs.append(job)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="kernelc-link",
                                                daemon=False)
                self._thread.start()
        return True

    def wait(self, directory: Path | None = None, cancel: bool = False,
             timeout: float | None = None) -> bool:
        """Waits until no link (into `directory`, or at all) is queued or running.

        With `cancel`, queued links are dropped first instead of run. False on timeout.
        """
        def ours(job: LinkJob | None) -> bool:
            return job is not None and (directory is None or job.directory == directory)

        with self._cond:
            if cancel:
                self._jobs = deque(j for j in self._jobs if not ours(j))
            return self._cond.wait_for(
                lambda: not ours(self._running) and not any(map(ours, self._jobs)), timeout)

    def _work(self) -> None:
        while True:
            with self._cond:
                if not self._jobs:
                    self._thread = None
                    self._cond.notify_all()
                    return
                job = self._running = self._jobs.popleft()
            try:
                job.run(self.compiler or "cc")
            except Exception:  # a lost link only leaves the kernel on the JIT path
                pass
            finally:
                with self._cond:
                    self._running = None
                    self._cond.notify_all()


class Libraries:
    """Kernel libraries dlopen'ed by this process, each kept loaded for the process's life."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: dict[str, ctypes.CDLL] = {}

    def address(self, path: Path, entry: str) -> int:
        """The address of `entry` in the library at `path` (loaded once, RTLD_LOCAL).

        Raises OSError when the library cannot be loaded or lacks the symbol.
        """
        name = str(path)
        with self._lock:
            lib = self._loaded.get(name)
            if lib is None:
                lib = ctypes.CDLL(name, mode=os.RTLD_LOCAL)
                self._loaded[name] = lib
        try:
            fn = lib[entry]  # looked up in this library's handle, not the global namespace
        except AttributeError as err:
            raise OSError(f"kernel symbol {entry} not found in {name}") from err
        return ctypes.cast(fn, ctypes.c_void_p).value

    def __len__(self) -> int:
        return len(self._loaded)

    def __contains__(self, path: object) -> bool:
        return str(path) in self._loaded


def cancel_links(directory: Path) -> None:
    """Drops queued links into `directory` and waits for a running one (cache clearing)."""
    from kernelc.runtime.context import get_runtime

    state = get_runtime().cpu
    if state is not None:
        state.linker.wait(Path(directory), cancel=True)
