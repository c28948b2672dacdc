"""`kc.config.verify_fp`: non-finite floats written to arrays are reported with their file,
line, kernel and array; finite ones are not; switching it recompiles."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import nonzero

HERE = __file__


@kc.struct
class Cell:
    mass: float
    count: int


@kc.kernel
def divide(a: kc.array(dtype=float), b: kc.array(dtype=float), out: kc.array(dtype=float),
           v: kc.array(dtype=kc.vec3), cells: kc.array(dtype=Cell), total: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = a[i] / b[i]
    v[i] = kc.vec3(a[i], a[i] / b[i], 1.0)
    cells[i].mass += a[i] * 1.0e38
    kc.atomic_add(total, 0, a[i] * 1.0e38)


def _line(text: str) -> int:
    """The line of this file holding `text` (inside `divide`)."""
    with open(HERE) as f:
        for k, line in enumerate(f, 1):
            if text in line and "def " not in line and "_line(" not in line:
                return k
    raise AssertionError(text)


@pytest.fixture
def verify_fp():
    kc.config.verify_fp = True
    yield
    kc.config.verify_fp = False


def _run(a_np, b_np):
    n = len(a_np)
    out, v = kc.zeros(n, dtype=float), kc.zeros(n, dtype=kc.vec3)
    cells, total = kc.zeros(n, dtype=Cell), kc.zeros(1, dtype=float)
    kc.launch(divide, n, [kc.array(a_np), kc.array(b_np), out, v, cells, total])
    kc.synchronize()
    return out.numpy()


def test_non_finite_writes_are_reported(verify_fp, capfd):
    a = np.array([1.0, 2.0, 3.0, -4.0], np.float32)
    b = np.array([1.0, 0.0, 2.0, 0.0], np.float32)
    out = _run(a, b)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(out, a / b)  # the values are still written
    lines = capfd.readouterr().out.splitlines()
    where = f"{HERE}:{_line('out[i] = a[i] / b[i]')}: verify_fp: kernel 'divide'"
    assert f"{where} wrote a non-finite value to array 'out': inf" in lines
    assert f"{where} wrote a non-finite value to array 'out': -inf" in lines
    vector = f"{HERE}:{_line('v[i] = kc.vec3')}: verify_fp: kernel 'divide' wrote a " \
             f"non-finite value to array 'v': 2.000000 inf 1.000000"
    assert vector in lines
    # 4 * 1e38 overflows float32 in the struct field and in the atomic total
    field = [s for s in lines if f":{_line('cells[i].mass +=')}:" in s]
    assert field and all("array 'cells' (field 'mass'): " in s and s.endswith("inf")
                         for s in field)
    atomic = [s for s in lines if f":{_line('kc.atomic_add(total')}:" in s]
    assert atomic and all("array 'total': " in s for s in atomic)


def test_finite_writes_print_nothing(verify_fp, capfd, rng):
    a, b = nonzero(rng, 64, np.float32, 0.1, 1.0), nonzero(rng, 64, np.float32, 1.0, 2.0)
    out = _run(a * np.float32(1e-39), b)
    np.testing.assert_allclose(out, a * np.float32(1e-39) / b, rtol=1e-6)
    assert capfd.readouterr().out == ""


def test_switching_it_recompiles(capfd):
    a = np.array([1.0, 2.0], np.float32)
    b = np.array([0.0, 1.0], np.float32)
    _run(a, b)
    assert "verify_fp" not in capfd.readouterr().out
    kc.config.verify_fp = True
    try:
        _run(a, b)  # the same arguments: the launch is not reused unchecked
        assert "verify_fp" in capfd.readouterr().out
    finally:
        kc.config.verify_fp = False
    _run(a, b)
    assert "verify_fp" not in capfd.readouterr().out


def test_cuda_c_with_checks_compiles(verify_fp):
    pytest.importorskip("cuda.bindings.nvrtc")
    compiled = kc.compile(divide, target="cuda", arch=80)
    assert compiled.binary and "verify_fp" in compiled.source
