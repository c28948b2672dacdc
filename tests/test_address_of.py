"""`kc.address_of`: addresses of variables, array elements, fields and components handed
to native snippets, which write through them; the writes are seen afterwards."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from kernelc.runtime import native_snippets
from tests.conftest import kernel_in_file, nonzero, poisoned

needs_cxx = pytest.mark.skipif(native_snippets.find_cxx_compiler() is None,
                               reason="needs a C++ compiler")


@kc.func_native("*(wp::float32*)ptr += delta;")
def add_through(ptr: kc.uint64, delta: kc.float32): ...


@kc.func_native("*(wp::int32*)ptr = value;")
def set_int(ptr: kc.uint64, value: kc.int32): ...


@kc.struct
class Inner:
    value: float
    count: kc.int32


@kc.struct
class Outer:
    inner: Inner
    v: kc.vec3


@kc.func
def bump(x: kc.ref[float]):
    add_through(kc.address_of(x), 0.5)  # the reference's storage


@kc.kernel
def write_through(a: kc.array(dtype=float), grid: kc.array2d(dtype=float),
                  outers: kc.array(dtype=Outer), ms: kc.array(dtype=kc.mat22),
                  out: kc.array2d(dtype=float)):
    i = kc.tid()
    s = float(1.0)
    add_through(kc.address_of(s), a[i])  # a local: later reads see the write
    out[i, 0] = s * 2.0
    n = kc.int32(0)
    set_int(kc.address_of(n), i + 7)
    out[i, 1] = float(n)
    v = kc.vec3(1.0, 2.0, 3.0)
    add_through(kc.address_of(v.y), a[i])
    add_through(kc.address_of(v[-1]), 10.0)
    out[i, 2] = v[0] + v[1] * 10.0 + v[2] * 100.0
    box = Inner()
    add_through(kc.address_of(box.value), 4.0)
    out[i, 3] = box.value
    m = kc.mat22(1.0, 2.0, 3.0, 4.0)
    add_through(kc.address_of(m[1, 0]), 0.25)
    add_through(kc.address_of(m[0][1]), 0.5)
    out[i, 4] = m[0, 1] + m[1, 0] * 10.0
    add_through(kc.address_of(a[i]), 100.0)  # array elements, fields and components
    add_through(kc.address_of(grid[i, 1]), 1.0)
    add_through(kc.address_of(outers[i].inner.value), 2.0)
    set_int(kc.address_of(outers[i].inner.count), i)
    add_through(kc.address_of(outers[i].v.z), 3.0)
    add_through(kc.address_of(ms[i][1, 1]), 5.0)
    t = float(a[i])
    bump(t)
    out[i, 5] = t


@needs_cxx
def test_writes_through_addresses_are_seen(rng):
    n = 24
    a_np = nonzero(rng, n, np.float32)
    grid_np = nonzero(rng, 3 * n, np.float32).reshape(n, 3)
    ms_np = nonzero(rng, 4 * n, np.float32).reshape(n, 2, 2)
    a, grid = kc.array(a_np), kc.array(grid_np)
    outers, ms = kc.zeros(n, dtype=Outer), kc.array(ms_np, dtype=kc.mat22)
    out = poisoned((n, 6), np.float32)
    kc.launch(write_through, n, [a, grid, outers, ms, out])
    got = out.numpy()
    f32 = np.float32
    np.testing.assert_array_equal(got[:, 0], (f32(1) + a_np) * f32(2))
    np.testing.assert_array_equal(got[:, 1], np.arange(n) + 7)
    np.testing.assert_array_equal(got[:, 2], f32(1) + (f32(2) + a_np) * f32(10) + f32(1300))
    np.testing.assert_array_equal(got[:, 3], 4.0)
    np.testing.assert_array_equal(got[:, 4], f32(2.5) + f32(3.25) * f32(10))
    np.testing.assert_array_equal(a.numpy(), a_np + f32(100))
    want = grid_np.copy()
    want[:, 1] += 1.0
    np.testing.assert_array_equal(grid.numpy(), want)
    o = outers.numpy()
    np.testing.assert_array_equal(o["inner"]["value"], 2.0)
    np.testing.assert_array_equal(o["inner"]["count"], np.arange(n))
    np.testing.assert_array_equal(o["v"][:, 2], 3.0)
    want_m = ms_np.copy()
    want_m[:, 1, 1] += 5.0
    np.testing.assert_array_equal(ms.numpy(), want_m)
    np.testing.assert_array_equal(got[:, 5], a_np + f32(100) + f32(0.5))  # reads a[i] again


def test_host_calls_raise():
    with pytest.raises(RuntimeError, match="in a kernel or func"):
        kc.address_of(1.0)


@pytest.mark.parametrize("body, message", [
    ("x = float(1.0); y = float(2.0); a[0] = float(kc.address_of(x + y))", "temporary value"),
    ("a[0] = float(kc.address_of(kc.vec3(1.0, 2.0, 3.0).x))", "temporary value"),
    ("a[0] = float(kc.address_of(a[0:1]))", "not a slice"),
    ("a[0] = float(kc.address_of(LIMIT))", "is not a variable or an array"),
    ("f = bool(True); a[0] = float(kc.address_of(f))", "bool variable is not supported"),
    ("v = kc.vec2(); a[0] = float(kc.address_of(v[k]))", "needs a constant index"),
    ("m = kc.mat22(); a[0] = float(kc.address_of(m[1]))", "matrix row"),
    ("v = kc.vec2(); a[0] = float(kc.address_of(v.z))", "cannot address 'v.z'"),
    ("x = 1.0; a[0] = float(kc.address_of(x))", r"'x' is a constant local .* x = kc\.float32"),
])
def test_what_has_no_address_is_refused(tmp_path, body, message):
    k = kernel_in_file(tmp_path, "bad_address", "a: kc.array(dtype=float), k: int", body,
                       "LIMIT = kc.constant(2.0)")
    with pytest.raises(kc.KernelError, match=message) as err:
        kc.launch(k, 1, [kc.zeros(2, dtype=float), 1])
    assert "bad_address.py:7:" in str(err.value) and "^" in str(err.value)


def test_nvrtc_compiles_addresses():
    pytest.importorskip("cuda.bindings.nvrtc")
    assert kc.compile(write_through, target="cuda", arch=80).binary


def test_constant_local_fix_is_spelled_with_the_import_alias(tmp_path):
    # a ported program imports kernelc as wp: the suggested declaration reads as its code
    k = kernel_in_file(tmp_path, "alias_address", "a: kc.array(dtype=kc.uint64)",
                       "n = 0; a[0] = wp.address_of(n)", "import kernelc as wp")
    with pytest.raises(kc.WarpCodegenError, match=r"write n = wp\.int32\(0\)\n") as err:
        kc.launch(k, 1, [kc.zeros(1, dtype=kc.uint64)])
    assert "alias_address.py:7:" in str(err.value)
