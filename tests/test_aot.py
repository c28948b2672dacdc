"""`kc.compile_aot_module` / `kc.load_aot_module`: a module's kernels compiled into a
directory and loaded from it in another process without compiling (CPU; CUDA images for
given architectures without a GPU)."""

from __future__ import annotations

import json

import pytest

import kernelc as kc
from tests.conftest import run_python

MODULE = '''import typing
import kernelc as kc


@kc.kernel
def scale(a: kc.array(dtype=float), s: float):
    i = kc.tid()
    a[i] = a[i] * s


@kc.kernel
def add_any(a: kc.array(dtype=typing.Any), b: kc.array(dtype=typing.Any)):
    i = kc.tid()
    a[i] = a[i] + b[i]


kc.overload(add_any, [kc.array(dtype=kc.float64), kc.array(dtype=kc.float64)])
'''

LOAD = '''
import json, sys
import numpy as np
import kernelc as kc
sys.path.insert(0, {here!r})
import aot_kernels as m
try:
    kc.load_aot_module(m, "cpu", module_dir={out!r})
except FileNotFoundError as err:
    print(json.dumps({{"missing": str(err)}}))
    raise SystemExit(0)
a = kc.array(np.arange(3, dtype=np.float32))
kc.launch(m.scale, 3, [a, 2.0])
b = kc.array(np.arange(3, dtype=np.float64))
kc.launch(m.add_any, 3, [b, kc.array(np.arange(3, dtype=np.float64))])
caches = sorted(c.cache for k in (m.scale, m.add_any) for c in k.compiled.values())
print(json.dumps({{"a": a.numpy().tolist(), "b": b.numpy().tolist(), "caches": caches}}))
'''


def _load(tmp_path, out, cache):
    proc = run_python(LOAD.format(here=str(tmp_path), out=str(out)),
                      env={"KERNELC_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_compiled_modules_load_in_a_new_process_without_compiling(tmp_path):
    source = tmp_path / "aot_kernels.py"
    source.write_text(MODULE)
    out = tmp_path / "aot"
    compile_script = (f"import sys, json\nimport kernelc as kc\nsys.path.insert(0, "
                      f"{str(tmp_path)!r})\nimport aot_kernels\n"
                      f"paths = kc.compile_aot_module(aot_kernels, 'cpu', module_dir={str(out)!r})\n"
                      f"print(json.dumps([str(p) for p in paths]))\n")
    proc = run_python(compile_script, env={"KERNELC_CACHE_DIR": str(tmp_path / "c1")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    paths = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(paths) == 2 and all(p.startswith(str(out)) for p in paths)

    got = _load(tmp_path, out, tmp_path / "c2")  # an empty kernel cache: nothing compiles
    assert got["a"] == [0.0, 2.0, 4.0] and got["b"] == [0.0, 2.0, 4.0]
    assert "miss" not in got["caches"]  # loaded, never compiled
    assert "not compiled ahead of time" in _load(tmp_path, tmp_path / "none",
                                                  tmp_path / "c3")["missing"]
    source.write_text(MODULE.replace("a[i] * s", "a[i] * s + 1.0"))  # other code: no match
    assert "not compiled ahead of time" in _load(tmp_path, out, tmp_path / "c4")["missing"]


def test_cuda_images_compile_for_architectures_without_a_gpu(tmp_path):
    pytest.importorskip("cuda.bindings.nvrtc")
    import tests.test_aot as here

    here.cuda_scale = kc.kernel(module="unique")(_cuda_scale)
    paths = kc.compile_aot_module(here.cuda_scale.module, arch=[75, 90], module_dir=tmp_path)
    assert len(paths) == 2 and all(p.exists() and p.suffix == ".cubin" for p in paths)


def _cuda_scale(a: kc.array(dtype=float)):
    a[kc.tid()] = a[kc.tid()] * 2.0


def test_bad_arguments():
    with pytest.raises(TypeError, match="module"):
        kc.compile_aot_module(42)
    with pytest.raises(NotImplementedError, match="strip_hash"):
        kc.compile_aot_module("tests.test_aot", "cpu", strip_hash=True)
