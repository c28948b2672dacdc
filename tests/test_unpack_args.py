"""`*x` in call arguments, as in Warp: vectors, quaternions, matrices (rows), tuples and
constant slices of arrays, unpacked into builtins, constructors and funcs; and the errors
for what cannot be unpacked."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import kernel_in_file

mat23 = kc.types.matrix(shape=(2, 3), dtype=float)


@kc.func
def weighted(a: float, b: float, c: float):
    return a + 2.0 * b + 3.0 * c


@kc.func
def pair():
    return 1.5, -2.5


@kc.kernel
def unpack_all(v: kc.array(dtype=kc.vec4), m: kc.array(dtype=kc.mat33),
               a: kc.array2d(dtype=float), out: kc.array2d(dtype=float)):
    i = kc.tid()
    x = v[i]
    w = kc.vec4(*kc.vec3(x[0], x[1], x[2]), 7.0)  # components, then one more
    q = kc.quat(*x)
    rows = kc.matrix_from_rows(*m[i][1:])  # the last two rows: a mat23
    s = kc.vec3(*a[i, 1:4])  # a constant slice of the last axis
    t = kc.vec2(*pair())
    out[i, 0] = kc.max(*x[1:3])
    out[i, 1] = weighted(*s)
    out[i, 2] = kc.dot(w, kc.vec4(*q))
    out[i, 3] = rows[1, 2] + rows[0, 0]
    out[i, 4] = kc.vec2(*x[-2:])[0] + t[1]
    out[i, 5] = kc.min(*a[i, 0:4:2])


def test_unpacked_arguments_against_numpy(rng):
    n = 16
    v = rng.uniform(-2, 2, (n, 4)).astype(np.float32)
    m = rng.uniform(-2, 2, (n, 3, 3)).astype(np.float32)
    a = rng.uniform(-2, 2, (n, 6)).astype(np.float32)
    out = kc.full((n, 6), np.nan)
    kc.launch(unpack_all, n, [kc.array(v, dtype=kc.vec4), kc.array(m, dtype=kc.mat33),
                              kc.array(a), out])
    f = np.float32
    s = a[:, 1:4]
    want = np.stack([
        np.maximum(v[:, 1], v[:, 2]),
        s[:, 0] + f(2) * s[:, 1] + f(3) * s[:, 2],
        np.einsum("ij,ij->i", np.concatenate([v[:, :3], np.full((n, 1), 7, f)], 1), v),
        m[:, 2, 2] + m[:, 1, 0],
        v[:, 2] + f(-2.5),
        np.minimum(a[:, 0], a[:, 2]),
    ], 1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("body, error, message", [
    ("v = kc.vec3i(*arr[:n])", kc.WarpCodegenValueError, "must be a compile-time constant"),
    ("v = kc.vec3i(*arr[0:])", kc.WarpCodegenValueError, "requires explicit upper bound"),
    ("v = kc.vec3i(*arr[:-3])", kc.WarpCodegenValueError, "cannot be negative for arrays"),
    ("v = kc.vec3i(*arr[5:2:-1])", kc.WarpCodegenValueError, "step cannot be negative"),
    ("x = 42\n    v = kc.vec3i(*x)", kc.WarpCodegenTypeError,
     "Starred expressions are only supported for"),
    ("v = kc.vec2i(*kc.vec3i(1, 2, 3))", kc.KernelError, "vec2i"),
])
def test_unpacking_errors(tmp_path, body, error, message):
    k = kernel_in_file(tmp_path, "unpack_errors", "arr: kc.array(dtype=int), n: int", body)
    with pytest.raises(error, match=message) as err:
        kc.launch(k, dim=1, inputs=[kc.zeros(10, dtype=int), 3])
    assert "unpack_errors.py:" in str(err.value) and "^" in str(err.value)


def test_unpacking_compiles_with_nvrtc():
    pytest.importorskip("cuda.bindings.nvrtc")
    c = kc.compile(unpack_all, target="cuda", arch=90)
    assert c.format == "cubin" and c.binary[:4] == b"\x7fELF"
