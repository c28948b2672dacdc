"""The on-disk kernel cache: compiled images keyed by a hash, written atomically.

An entry is `<key>.<ext>` holding a small header (magic, payload length, payload SHA-256)
followed by the payload; a short, corrupt or foreign file is deleted and rebuilt, never
trusted. Writers use a temp file + rename, so concurrent processes never see half a file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import tempfile
from pathlib import Path

_MAGIC = b"KCOBJ001"
_HEADER = struct.Struct("<8sQ32s")


def cache_key(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        data = p.encode() if isinstance(p, str) else p
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:40]


class DiskCache:
    def __init__(self, directory: str):
        self.directory = Path(directory)

    def _path(self, key: str, ext: str) -> Path:
        return self.directory / f"{key}.{ext}"

    def load(self, key: str, ext: str) -> bytes | None:
        path = self._path(key, ext)
        try:
            blob = path.read_bytes()
        except OSError:
            return None
        payload = _unpack(blob)
        if payload is None:
            try:
                path.unlink()
            except OSError:
                pass
        return payload

    def store(self, key: str, ext: str, payload: bytes) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{key}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(_HEADER.pack(_MAGIC, len(payload), hashlib.sha256(payload).digest()))
                f.write(payload)
            os.replace(tmp, self._path(key, ext))
        except OSError:
            pass  # a read-only or full cache directory only costs a recompile

    def clear(self) -> None:
        if self.directory.exists():
            shutil.rmtree(self.directory, ignore_errors=True)


def _unpack(blob: bytes) -> bytes | None:
    if len(blob) < _HEADER.size:
        return None
    magic, length, digest = _HEADER.unpack_from(blob)
    payload = blob[_HEADER.size:]
    if magic != _MAGIC or length != len(payload) or hashlib.sha256(payload).digest() != digest:
        return None
    return payload
