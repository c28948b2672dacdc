"""The kernel cache: memory and disk hits, corrupt entries, concurrent processes, clearing,
and the warm start from a shared library (no LLVM), with its fallbacks to the JIT."""

from __future__ import annotations

import os
import subprocess
import sys
import typing
from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
from kernelc.runtime import native
from kernelc.runtime.compiler import get_cpu_kernel
from kernelc.runtime.cpu import cpu_state

REPO = Path(__file__).resolve().parents[1]

SCRIPT = """
import sys
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
from kernelc.runtime.context import get_runtime
print("LLVM", int("llvmlite.binding" in sys.modules), int(get_runtime().cpu.jit_started))
"""


def _env(cache_dir: Path, **extra: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "KERNELC_CACHE_DIR": str(cache_dir), "PYTHONPATH": path, **extra}


def _launch(script_path: Path, cache_dir: Path, **extra: str):
    return subprocess.Popen([sys.executable, str(script_path)], env=_env(cache_dir, **extra),
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _lines(proc) -> dict[str, str]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def _run_full(script_path: Path, cache_dir: Path, **extra: str) -> dict[str, str]:
    return _lines(_launch(script_path, cache_dir, **extra))


def _run(script_path: Path, cache_dir: Path) -> str:
    return _run_full(script_path, cache_dir)["CACHE"]


def _script(tmp_path: Path, text: str = SCRIPT) -> Path:
    path = tmp_path / "cache_case.py"
    path.write_text(text)
    return path


def _entries(cache: Path, suffix: str) -> list[Path]:
    return [p for p in cache.iterdir() if p.suffix == suffix]


needs_cc = pytest.mark.skipif(native.find_compiler() is None, reason="no C compiler")


def test_cold_then_warm_process(tmp_path):
    script, cache = _script(tmp_path), tmp_path / "cache"
    assert _run(script, cache) == "miss,memory"
    assert _run(script, cache) == "disk,memory"


@needs_cc
def test_warm_start_loads_the_library_without_llvm(tmp_path):
    script, cache = _script(tmp_path), tmp_path / "cache"
    cold = _run_full(script, cache)
    assert cold["CACHE"] == "miss,memory" and cold["LLVM"] == "1 1"
    # the cold process linked the library before it exited, and remembered the host CPU
    assert len(_entries(cache, ".o")) == len(_entries(cache, ".so")) == 1
    assert len(_entries(cache, ".json")) == 1
    warm = _run_full(script, cache)
    assert warm == {"CACHE": "disk,memory", "LLVM": "0 0"}


@needs_cc
def test_corrupt_library_is_deleted_and_rebuilt(tmp_path):
    script, cache = _script(tmp_path), tmp_path / "cache"
    _run(script, cache)
    (lib,) = _entries(cache, ".so")
    blob = lib.read_bytes()
    assert blob[:4] == b"\x7fELF"
    for damaged in (blob[: len(blob) // 2], blob[:-10] + b"0123456789", b""):
        lib.write_bytes(damaged)
        # detected before dlopen: the object is loaded into the JIT, the library relinked
        assert _run_full(script, cache) == {"CACHE": "disk,memory", "LLVM": "1 1"}
        assert lib.read_bytes() == blob
        assert _run_full(script, cache)["LLVM"] == "0 0"


def test_corrupt_object_is_deleted_and_rebuilt(tmp_path):
    script, cache = _script(tmp_path), tmp_path / "cache"
    _run(script, cache)
    (entry,) = _entries(cache, ".o")
    blob = entry.read_bytes()
    for damaged in (blob[: len(blob) // 2], blob[:-10] + b"0123456789"):  # half-written, bad
        for lib in _entries(cache, ".so"):
            lib.unlink()  # the object is read only where there is no library
        entry.write_bytes(damaged)
        assert _run(script, cache) == "miss,memory"
        assert entry.read_bytes() == blob  # rebuilt, same object
    assert _run(script, cache) == "disk,memory"


def test_without_a_c_compiler_the_jit_loads_the_object(tmp_path):
    script, cache = _script(tmp_path), tmp_path / "cache"
    empty = tmp_path / "no-bin"
    empty.mkdir()
    assert _run_full(script, cache, PATH=str(empty))["CACHE"] == "miss,memory"
    assert not _entries(cache, ".so") and len(_entries(cache, ".o")) == 1
    assert _run_full(script, cache, PATH=str(empty)) == {"CACHE": "disk,memory",
                                                         "LLVM": "1 1"}


def test_a_failing_link_falls_back_to_the_jit_once(tmp_path):
    script, cache = _script(tmp_path), tmp_path / "cache"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "cc"
    fake.write_text("#!/bin/sh\necho 'cannot link' >&2\nexit 1\n")
    fake.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    assert _run_full(script, cache, PATH=path)["CACHE"] == "miss,memory"
    assert not _entries(cache, ".so") and len(_entries(cache, ".nolink")) == 1
    fake.write_text("#!/bin/sh\necho called >> " + str(tmp_path / "calls") + "\nexit 1\n")
    assert _run_full(script, cache, PATH=path) == {"CACHE": "disk,memory", "LLVM": "1 1"}
    assert not (tmp_path / "calls").exists()  # the failed link is remembered, not retried


def test_two_processes_compiling_at_once(tmp_path):
    script, cache = _script(tmp_path), tmp_path / "cache"
    procs = [_launch(script, cache) for _ in range(2)]
    for proc in procs:
        assert "CACHE" in _lines(proc)
    assert len(_entries(cache, ".o")) == 1
    assert len(_entries(cache, ".so")) <= 1
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
        verbose_case.last_launch = None  # and the packing a new array could reuse
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
    clear_case.last_launch = None
    a = kc.zeros(1, dtype=int)
    kc.launch(clear_case, 1, inputs=[a])  # recompiles into a fresh directory
    assert a.numpy().tolist() == [9] and any(p.suffix == ".o" for p in cache.iterdir())
    np.testing.assert_array_equal(a.numpy(), [9])


# ---- the shared-library path in this process ---------------------------------------------


def _load_from_library(kernel):
    """Loads `kernel` again after its links finished: from shared libraries, not the JIT."""
    state = cpu_state(kc.config.num_threads)
    assert state.linker.wait(timeout=120)
    specs = {key[1]: key[2].disjoint_arrays for key in kernel.compiled if key[0] == "cpu"}
    kernel.compiled.clear()
    loaded = []
    for types, private in specs.items():
        compiled = get_cpu_kernel(kernel, types, private)
        assert compiled.cache == "disk"
        assert Path(kc.config.kernel_cache_dir, f"{compiled.hash}.so") in state.libraries
        loaded.append(compiled)
    return loaded[0] if len(loaded) == 1 else loaded


@kc.kernel
def lib_math(a: kc.array(dtype=typing.Any), o: kc.array(dtype=typing.Any),
             total: kc.array(dtype=typing.Any), n: int):
    i = kc.tid()
    x = a[i]
    acc = x * x
    for _ in range(n):
        if acc > x:
            acc = kc.sqrt(acc) + kc.sin(acc - x)
        else:
            acc = kc.pow(kc.abs(acc) + x, x) - kc.exp(-x)
    o[i] = acc
    kc.atomic_add(total, 0, acc)


@kc.kernel
def lib_other(a: kc.array(dtype=int)):
    a[kc.tid()] = a[kc.tid()] * 3 + 1


def _run_math(dtype, rng):
    a = rng.uniform(0.1, 2.0, 1000).astype(dtype)
    o, total = kc.zeros(1000, dtype=dtype), kc.zeros(1, dtype=dtype)
    kc.launch(lib_math, 1000, inputs=[kc.array(a, dtype=dtype), o, total, 7])
    return o.numpy(), total.numpy()


@needs_cc
def test_library_and_jit_give_identical_results(rng):
    seeds = {np.float32: 1, np.float64: 2}
    jit = {t: _run_math(t, np.random.default_rng(s)) for t, s in seeds.items()}
    # two specialisations of one kernel, each from its own library
    assert len({k.hash for k in _load_from_library(lib_math)}) == 2
    lib = {t: _run_math(t, np.random.default_rng(s)) for t, s in seeds.items()}
    for t in seeds:
        np.testing.assert_array_equal(lib[t][0], jit[t][0])
        assert np.isfinite(lib[t][0]).all() and lib[t][0].dtype == t
    ints = kc.array(np.arange(5, dtype=np.int32), dtype=int)
    kc.launch(lib_other, 5, inputs=[ints])
    other = _load_from_library(lib_other)
    assert other.entry.startswith("kc_lib_other_")
    kc.launch(lib_other, 5, inputs=[ints])
    assert ints.numpy().tolist() == [(3 * x + 1) * 3 + 1 for x in range(5)]


@needs_cc
def test_library_keeps_debug_check_locations(debug_mode):
    @kc.kernel
    def lib_oob(a: kc.array(dtype=float), o: kc.array(dtype=float)):
        i = kc.tid()
        o[i] = a[i + 2]

    def message():
        with pytest.raises(kc.KernelRuntimeError, match="out of bounds") as info:
            kc.launch(lib_oob, 4, inputs=[kc.zeros(4, dtype=float), kc.zeros(4, dtype=float)])
        return str(info.value)

    first = message()
    compiled = _load_from_library(lib_oob)
    assert compiled.check_locs and message() == first
    assert "o[i] = a[i + 2]" in first


@needs_cc
def test_library_prints(capfd):
    @kc.kernel
    def lib_talk(a: kc.array(dtype=int)):
        kc.printf("lib says %d\n", a[kc.tid()])

    a = kc.array(np.array([41], np.int32), dtype=int)
    kc.launch(lib_talk, 1, inputs=[a])
    assert _load_from_library(lib_talk).has_print
    kc.launch(lib_talk, 1, inputs=[a])
    assert capfd.readouterr().out.count("lib says 41") == 2


@needs_cc
def test_clear_then_compile_again_in_one_process():
    @kc.kernel
    def lib_again(a: kc.array(dtype=int)):
        a[kc.tid()] = 11

    def check():
        a = kc.zeros(3, dtype=int)
        kc.launch(lib_again, 3, inputs=[a])
        assert a.numpy().tolist() == [11] * 3

    check()
    first = _load_from_library(lib_again)
    kc.clear_kernel_cache()
    lib_again.compiled.clear()
    assert get_cpu_kernel(lib_again, lib_again.param_types).cache == "miss"
    check()
    again = _load_from_library(lib_again)
    assert again.hash == first.hash
    check()
    assert kc.compile(lib_again).binary[:4] == b"\x7fELF"  # the object, read from the cache


def test_library_is_skipped_without_a_compiler(monkeypatch):
    @kc.kernel
    def lib_none(a: kc.array(dtype=int)):
        a[kc.tid()] = 4

    state = cpu_state(kc.config.num_threads)
    monkeypatch.setattr(state.linker, "_compiler", None)
    a = kc.zeros(2, dtype=int)
    kc.launch(lib_none, 2, inputs=[a])
    key = get_cpu_kernel(lib_none, lib_none.param_types).hash
    assert state.linker.wait(timeout=120)
    assert not Path(kc.config.kernel_cache_dir, f"{key}.so").exists()
    lib_none.compiled.clear()
    assert get_cpu_kernel(lib_none, lib_none.param_types).cache == "disk"  # the object, JIT
    kc.launch(lib_none, 2, inputs=[a])
    assert a.numpy().tolist() == [4, 4]


# ---- the remembered host target ----------------------------------------------------------

CPUINFO = b"""processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8480+
cpu MHz\t\t: 2000.000
flags\t\t: fpu sse sse2 avx avx2 avx512f

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8480+
cpu MHz\t\t: 3012.113
flags\t\t: fpu sse sse2 avx avx2 avx512f
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/cpuinfo")
def test_host_fingerprint_changes_with_the_cpu_and_llvm():
    from kernelc.runtime.hostinfo import host_fingerprint

    base = host_fingerprint(CPUINFO, "llvmlite 0.50")
    assert base == host_fingerprint(CPUINFO.replace(b"2000.000", b"2400.5"), "llvmlite 0.50")
    for cpuinfo in (CPUINFO.replace(b" avx512f", b""), CPUINFO.replace(b"143", b"207"),
                    CPUINFO.replace(b"8480+", b"8490H")):
        assert host_fingerprint(cpuinfo, "llvmlite 0.50") != base
    assert host_fingerprint(CPUINFO, "llvmlite 0.51") != base
    assert host_fingerprint(b"", "llvmlite 0.50") is None
    assert host_fingerprint() is not None  # this machine's


def test_host_target_is_asked_once_then_remembered(tmp_path):
    from kernelc.runtime.cache import DiskCache
    from kernelc.runtime.hostinfo import HostTarget, host_fingerprint, resolve_host

    if host_fingerprint() is None:
        pytest.skip("no fingerprint on this platform")
    fake = HostTarget("x86_64-unknown-linux-gnu", "cpu9", "+avx2,-avx512f", "0.50.0", "22.1")
    calls = []

    def ask_llvm():
        calls.append(1)
        return fake

    assert resolve_host(str(tmp_path), ask_llvm) == fake
    assert resolve_host(str(tmp_path), ask_llvm) == fake and len(calls) == 1
    (entry,) = tmp_path.glob("host-*.json")
    entry.write_bytes(entry.read_bytes()[:-3])  # damaged: asked again, and rewritten
    assert resolve_host(str(tmp_path), ask_llvm) == fake and len(calls) == 2
    assert DiskCache(str(tmp_path)).load(entry.stem, "json") is not None


@needs_cc
def test_a_wrong_remembered_host_is_corrected(tmp_path):
    import json

    from kernelc.runtime.cache import DiskCache

    script, cache = _script(tmp_path), tmp_path / "cache"
    _run(script, cache)
    (entry,) = cache.glob("host-*.json")
    disk = DiskCache(str(cache))
    host = json.loads(disk.load(entry.stem, "json"))
    disk.store(entry.stem, "json", json.dumps({**host, "cpu_name": "other-cpu"}).encode())
    # keyed for the wrong CPU, nothing is found; LLVM's own answer re-keys and finds the library
    assert _run_full(script, cache) == {"CACHE": "disk,memory", "LLVM": "1 1"}
    assert json.loads(disk.load(entry.stem, "json")) == host
    assert _run_full(script, cache) == {"CACHE": "disk,memory", "LLVM": "0 0"}


def test_cache_off_writes_nothing(tmp_path):
    @kc.kernel
    def uncached(a: kc.array(dtype=int)):
        a[kc.tid()] = 6

    previous = kc.config.cache_kernels, kc.config.kernel_cache_dir
    kc.config.cache_kernels, kc.config.kernel_cache_dir = False, str(tmp_path / "off")
    try:
        a = kc.zeros(2, dtype=int)
        kc.launch(uncached, 2, inputs=[a])
        assert cpu_state(kc.config.num_threads).linker.wait(timeout=120)
    finally:
        kc.config.cache_kernels, kc.config.kernel_cache_dir = previous
    assert a.numpy().tolist() == [6, 6] and not (tmp_path / "off").exists()


STRUCT_SCRIPT = """
import sys
import numpy as np
import kernelc as kc

# The same struct name and kernel source; the second run adds fields after `scale`, so
# the kernel's IR is the same text while the arguments after the struct move.
fields = {"scale": float} if sys.argv[1] == "1" else {
    "scale": float, "more": kc.mat33, "extra": kc.array(dtype=kc.vec3i)}
Params = kc.struct(type("Params", (), {"__annotations__": fields}))

@kc.kernel
def scaled(p: Params, a: kc.array(dtype=float), o: kc.array(dtype=float)):
    i = kc.tid()
    o[i] = a[i] * p.scale

p = Params()
p.scale = 3.0
a = kc.array(np.arange(1, 9, dtype=np.float32), dtype=float)
o = kc.full(8, np.nan, dtype=float)
kc.launch(scaled, 8, inputs=[p, a, o])
print("OUT", ",".join(str(v) for v in o.numpy()))
"""


def test_struct_layout_is_part_of_the_key(tmp_path: Path) -> None:
    # A struct whose fields changed under the same name must compile anew: loading the
    # image made for the old layout would read its arguments at the old offsets.
    script = tmp_path / "struct_layout.py"
    script.write_text(STRUCT_SCRIPT)
    cache = tmp_path / "cache"
    expected = ",".join(str(v) for v in np.arange(1, 9, dtype=np.float32) * 3.0)
    for variant in ("1", "2"):
        proc = subprocess.run([sys.executable, str(script), variant], env=_env(cache),
                              text=True, capture_output=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert f"OUT {expected}" in proc.stdout
