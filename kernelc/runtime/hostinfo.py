"""The host CPU as LLVM sees it, remembered on disk so that a warm start never loads LLVM.

Every CPU kernel's cache key holds the target triple, LLVM's name for the host CPU, its
feature string and the llvmlite / LLVM versions. Asking LLVM for them means loading and
initialising it (~35 ms), so the answer is remembered in the kernel cache directory, in an
entry named by a fingerprint that is cheap to compute and changes whenever the answer
could: the processor's identity and feature flags from /proc/cpuinfo (the kernel masks
there what the OS does not support, as LLVM's own detection does), the OS and machine, and
llvmlite's version file and native library (name, size, mtime). A different CPU, OS or
LLVM therefore gives another fingerprint and never reuses this answer; where there is no
/proc/cpuinfo there is no fingerprint, and LLVM is asked in every process.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass

from kernelc.runtime.cache import DiskCache, sha256

_FORMAT = "kernelc-host-1"  # bump when the fingerprint or the stored fields change
# /proc/cpuinfo lines that identify the processor and what it can run (x86, then Arm);
# "cpu MHz", "bogomips" and the like change from one read to the next and are left out.
_CPUINFO_FIELDS = frozenset((
    "vendor_id", "cpu family", "model", "model name", "stepping", "flags",
    "CPU implementer", "CPU architecture", "CPU variant", "CPU part", "CPU revision",
    "Features", "isa", "uarch", "cpu",
))


@dataclass(frozen=True)
class HostTarget:
    """What LLVM compiles for on this machine; `target_id` goes into every CPU cache key."""

    triple: str
    cpu_name: str
    features: str
    llvmlite_version: str
    llvm_version: str

    @property
    def target_id(self) -> str:
        return "|".join((self.triple, self.cpu_name, self.features, self.llvmlite_version,
                         self.llvm_version))

    @property
    def has_avx512(self) -> bool:
        return "+avx512f" in self.features

    @staticmethod
    def from_llvm(llvm, target_machine_triple: str, cpu_name: str, features: str) -> HostTarget:
        """Built from an initialised `llvmlite.binding` (the JIT engine does this)."""
        import llvmlite

        return HostTarget(target_machine_triple, cpu_name, features, llvmlite.__version__,
                          ".".join(map(str, llvm.llvm_version_info)))


def host_fingerprint(cpuinfo: bytes | None = None, llvmlite_id: str | None = None) -> str | None:
    """A hash of everything LLVM's host detection depends on, or None off Linux.

    `cpuinfo` and `llvmlite_id` default to this machine's (tests pass others).
    """
    if not sys.platform.startswith("linux"):
        return None
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", "rb") as f:
                cpuinfo = f.read(1 << 16)  # the first processors are enough: they repeat
        except OSError:
            return None
    lines = []
    for raw in cpuinfo.decode("utf-8", "replace").splitlines():
        name, sep, value = raw.partition(":")
        if sep and name.strip() in _CPUINFO_FIELDS:
            line = f"{name.strip()}:{value.strip()}"
            if line not in lines:
                lines.append(line)
    llvmlite_id = llvmlite_id if llvmlite_id is not None else _llvmlite_identity()
    if not lines or llvmlite_id is None:
        return None
    text = "\n".join([_FORMAT, sys.platform, os.uname().machine, llvmlite_id, *lines])
    return sha256(text.encode()).hexdigest()[:40]


def _llvmlite_identity() -> str | None:
    """llvmlite's version file and native library, found without importing llvmlite."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("llvmlite")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = spec.submodule_search_locations[0]
    parts = []
    try:
        with open(os.path.join(root, "_version.py"), "rb") as f:
            parts.append(sha256(f.read()).hexdigest())
        with os.scandir(os.path.join(root, "binding")) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name.startswith(("libllvmlite", "llvmlite")):
                    st = entry.stat()
                    parts.append(f"{entry.name}:{st.st_size}:{st.st_mtime_ns}")
    except OSError:
        return None
    return "|".join([root, *parts])


def resolve_host(cache_dir: str, from_llvm: Callable[[], HostTarget]) -> HostTarget:
    """The remembered answer for this machine, or LLVM's (`from_llvm`), then remembered."""
    fingerprint = host_fingerprint()
    if fingerprint is not None:
        found = _recall(cache_dir, fingerprint)
        if found is not None:
            return found
    host = from_llvm()
    if fingerprint is not None:
        remember(cache_dir, host, fingerprint)
    return host


def remember(cache_dir: str, host: HostTarget, fingerprint: str | None = None,
             replace: bool = False) -> None:
    """Stores `host` under this machine's fingerprint in `cache_dir` (if not there yet)."""
    fingerprint = fingerprint or host_fingerprint()
    if fingerprint is None:
        return
    disk = DiskCache(cache_dir)
    if replace or not disk.exists(_entry(fingerprint), "json"):
        disk.store(_entry(fingerprint), "json", json.dumps(asdict(host)).encode())


def _recall(cache_dir: str, fingerprint: str) -> HostTarget | None:
    payload = DiskCache(cache_dir).load(_entry(fingerprint), "json")
    if payload is None:
        return None
    try:
        fields = json.loads(payload)
        host = HostTarget(**{k: str(fields[k]) for k in HostTarget.__dataclass_fields__})
    except (ValueError, KeyError, TypeError):
        return None
    return host if host.triple and host.cpu_name else None


def _entry(fingerprint: str) -> str:
    return f"host-{fingerprint}"
