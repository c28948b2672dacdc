"""The on-disk kernel cache: compiled images keyed by a hash, written atomically.

An entry is `<key>.<ext>` holding a small header (magic, payload length, payload SHA-256)
followed by the payload; a short, corrupt or foreign file is deleted and rebuilt, never
trusted. Writers use a temp file + rename, so concurrent processes never see half a file.

A shared library (`.so`) has to start with its ELF header to be loaded with dlopen, so its
check goes at the end instead: the image, a metadata blob, then a trailer (lengths, SHA-256
of image + metadata, magic). The dynamic loader maps only what the ELF headers point at
and ignores the bytes after it; `load_image` verifies the whole file before anyone loads it.
"""

from __future__ import annotations

import functools
import os
import shutil
import struct
from pathlib import Path

_MAGIC = b"KCOBJ001"
_HEADER = struct.Struct("<8sQ32s")
_IMAGE_MAGIC = b"KCLIB001"
_TRAILER = struct.Struct("<QQ32s8s")  # image length, metadata length, SHA-256, magic


def _builtin_sha256():
    # CPython's own SHA-256: `import hashlib` loads OpenSSL first (~4 ms of a start-up whose
    # target is 10 ms); the digests are the same.
    try:
        from _sha2 import sha256  # Python >= 3.12
    except ImportError:
        try:
            from _sha256 import sha256  # Python 3.10, 3.11
        except ImportError:
            from hashlib import sha256
    return sha256


sha256 = _builtin_sha256()


@functools.cache
def codegen_fingerprint() -> str:
    """Names, sizes and modification times of the LLVM backend's source files (and of the
    IR analyses it uses).

    CPU cache keys hash kernelc's IR, not the LLVM IR made from it, so an edited backend
    (a development checkout) must change the key too. Stat calls only: ~0.1 ms, once.
    """
    root = Path(__file__).resolve().parents[1]
    entries = []
    # (kernelc/ir too: its analyses decide how the backend lowers some ops.)
    for folder in (root / "codegen", root / "ir"):
        with os.scandir(folder) as it:
            for entry in it:
                if entry.name.endswith(".py"):
                    st = entry.stat()
                    entries.append(f"{folder.name}/{entry.name}:{st.st_size}:{st.st_mtime_ns}")
    return ";".join(sorted(entries))


def cache_key(*parts: str | bytes) -> str:
    h = sha256()
    for p in parts:
        data = p.encode() if isinstance(p, str) else p
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:40]


class DiskCache:
    def __init__(self, directory: str):
        self.directory = Path(directory)

    def path(self, key: str, ext: str) -> Path:
        return self.directory / f"{key}.{ext}"

    def exists(self, key: str, ext: str) -> bool:
        return self.path(key, ext).exists()

    def load(self, key: str, ext: str) -> bytes | None:
        """The payload of entry `key.ext`, or None (a damaged entry is deleted)."""
        blob = self._read(key, ext)
        if blob is None:
            return None
        payload = _unpack(blob)
        if payload is None:
            self.discard(key, ext)
        return payload

    def store(self, key: str, ext: str, payload: bytes) -> None:
        head = _HEADER.pack(_MAGIC, len(payload), sha256(payload).digest())
        self._write(key, ext, (head, payload))

    def load_image(self, key: str, ext: str) -> tuple[Path, bytes] | None:
        """(path, metadata) of a verified image entry (e.g. a `.so` for dlopen), or None."""
        blob = self._read(key, ext)
        if blob is None:
            return None
        meta = _unpack_image(blob)
        if meta is None:
            self.discard(key, ext)
            return None
        return self.path(key, ext), meta

    def store_image(self, key: str, ext: str, image: bytes, meta: bytes) -> bool:
        """Stores a loadable image with `meta` and the check after it; True if written."""
        digest = sha256(image + meta).digest()
        trailer = _TRAILER.pack(len(image), len(meta), digest, _IMAGE_MAGIC)
        return self._write(key, ext, (image, meta, trailer))

    def discard(self, key: str, ext: str) -> None:
        try:
            self.path(key, ext).unlink()
        except OSError:
            pass

    def clear(self) -> None:
        from kernelc.runtime.native import cancel_links

        cancel_links(self.directory)  # a link finishing later would write into it again
        if self.directory.exists():
            shutil.rmtree(self.directory, ignore_errors=True)

    def _read(self, key: str, ext: str) -> bytes | None:
        try:
            return self.path(key, ext).read_bytes()
        except OSError:
            return None

    def _write(self, key: str, ext: str, chunks: tuple[bytes, ...]) -> bool:
        import tempfile

        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{key}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    for chunk in chunks:
                        f.write(chunk)
                os.replace(tmp, self.path(key, ext))
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError:
            return False  # a read-only or full cache directory only costs a recompile
        return True


def _unpack(blob: bytes) -> bytes | None:
    if len(blob) < _HEADER.size:
        return None
    magic, length, digest = _HEADER.unpack_from(blob)
    payload = blob[_HEADER.size:]
    if magic != _MAGIC or length != len(payload) or sha256(payload).digest() != digest:
        return None
    return payload


def _unpack_image(blob: bytes) -> bytes | None:
    if len(blob) < _TRAILER.size:
        return None
    n_image, n_meta, digest, magic = _TRAILER.unpack_from(blob, len(blob) - _TRAILER.size)
    body = memoryview(blob)[:len(blob) - _TRAILER.size]
    if magic != _IMAGE_MAGIC or n_image + n_meta != len(body) \
            or sha256(body).digest() != digest:
        return None
    return bytes(body[n_image:])
