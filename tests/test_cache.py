"""The kernel cache: memory and disk hits, corrupt entries, concurrent processes, clearing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

import kernelc as kc

SCRIPT = """
import numpy as np
import kernelc as kc

@kc.kernel
def cached_saxpy(a: kc.array(dtype=float), o: kc.array(dtype=float), s: float):
    i = kc.tid()
    o[i] = a[i] * s + 1.0

kc.set_flag(kc.JitFlag.KernelHistory, True)
a = kc.array(np.arange(8, dtype=np.float32), dtype=float)
o = kc.zeros(8, dtype=float)
kc.launch(cached_saxpy, 8, inputs=[a, o, 2.0])
kc.launch(cached_saxpy, 8, inputs=[a, o, 3.0])
assert o.numpy().tolist() == [x * 3.0 + 1.0 for x in range(8)]
print("CACHE", ",".join(r["cache"] for r in kc.kernel_history()))
"""


def _run(script_path: Path, cache_dir: Path, wait: bool = True):
    env = {"KERNELC_CACHE_DIR": str(cache_dir), "PATH": "/usr/bin:/bin"}
    import os

    env = {**os.environ, **env}
    proc = subprocess.Popen([sys.executable, str(script_path)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if not wait:
        return proc
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return next(line for line in out.splitlines() if line.startswith("CACHE")).split()[1]


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "cache_case.py"
    path.write_text(SCRIPT)
    return path


def test_cold_then_warm_process(tmp_path):
    script, cache = _script(tmp_path), tmp_path / "cache"
    assert _run(script, cache) == "miss,memory"
    assert _run(script, cache) == "disk,memory"


def test_corrupt_entry_is_deleted_and_rebuilt(tmp_path):
    script, cache = _script(tmp_path), tmp_path / "cache"
    _run(script, cache)
    (entry,) = [p for p in cache.iterdir() if p.suffix == ".o"]
    blob = entry.read_bytes()
    entry.write_bytes(blob[: len(blob) // 2])  # half-written
    assert _run(script, cache) == "miss,memory"
    assert entry.read_bytes() == blob  # rebuilt, same object
    entry.write_bytes(blob[:-10] + b"0123456789")  # right length, wrong content
    assert _run(script, cache) == "miss,memory"
    assert _run(script, cache) == "disk,memory"


def test_two_processes_compiling_at_once(tmp_path):
    script, cache = _script(tmp_path), tmp_path / "cache"
    procs = [_run(script, cache, wait=False) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "CACHE" in out
    assert len([p for p in cache.iterdir() if p.suffix == ".o"]) == 1
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]


def test_verbose_reports_compiled_then_cached(capsys, tmp_path):
    @kc.kernel
    def verbose_case(a: kc.array(dtype=int)):
        a[kc.tid()] = 5

    previous = kc.config.verbose
    kc.config.verbose = True
    try:
        kc.launch(verbose_case, 1, inputs=[kc.zeros(1, dtype=int)])
        verbose_case.compiled.clear()  # drop the memory cache: the next load reads the disk
        a = kc.zeros(1, dtype=int)
        kc.launch(verbose_case, 1, inputs=[a])
    finally:
        kc.config.verbose = previous
    out = capsys.readouterr().out
    assert "(compiled)" in out and "(cached)" in out
    assert a.numpy()[0] == 5


def test_clear_kernel_cache(tmp_path):
    @kc.kernel
    def clear_case(a: kc.array(dtype=int)):
        a[kc.tid()] = 9

    kc.launch(clear_case, 1, inputs=[kc.zeros(1, dtype=int)])
    cache = Path(kc.config.kernel_cache_dir)
    assert any(p.suffix == ".o" for p in cache.iterdir())
    kc.clear_kernel_cache()
    assert not cache.exists() or not any(cache.iterdir())
    clear_case.compiled.clear()
    a = kc.zeros(1, dtype=int)
    kc.launch(clear_case, 1, inputs=[a])  # recompiles into a fresh directory
    assert a.numpy().tolist() == [9] and any(p.suffix == ".o" for p in cache.iterdir())
    np.testing.assert_array_equal(a.numpy(), [9])
