"""tile_arange() against numpy.arange (bounds represented in the output type first), and
the clear errors of tile forms for inputs they cannot take."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import kernel_in_file, nonzero, poisoned

F32 = np.float32
STOP_F32 = kc.constant(kc.float32(3.0000001))
STEP_F32 = kc.constant(kc.float32(0.99999999))
BIG_START = kc.constant(kc.int64(2**54))
BIG_STOP = kc.constant(kc.int64(2**54 + 3 * 2**30 - 1))
BIG_STEP = kc.constant(kc.int64(2**31))


@kc.kernel
def ranges(f: kc.array(dtype=float), i: kc.array(dtype=int), q: kc.array(dtype=float),
           big: kc.array(dtype=float), local: kc.array(dtype=float)):
    kc.tile_store(f, kc.tile_arange(0.5, 4.5, 0.5))
    kc.tile_store(i, kc.tile_arange(17, 0, -3, dtype=int), offset=1)
    kc.tile_store(q, kc.tile_arange(0.0, STOP_F32, STEP_F32, dtype=float))
    kc.tile_store(big, kc.tile_arange(BIG_START, BIG_STOP, BIG_STEP, dtype=float))
    n = 3
    kc.tile_store(local, kc.tile_arange(n) + kc.tile_load(local, shape=n))


def test_ranges_match_numpy_in_the_output_type(rng):
    f, i = poisoned(8, F32), poisoned(7, np.int32)
    q, big = poisoned(4, F32), poisoned(2, F32)
    extra = nonzero(rng, 3, F32)
    local = kc.array(extra, dtype=float)
    kc.launch_tiled(ranges, dim=[1], inputs=[f, i, q, big, local], block_dim=16)
    np.testing.assert_array_equal(f.numpy(), np.arange(0.5, 4.5, 0.5, dtype=F32))
    np.testing.assert_array_equal(i.numpy()[1:], np.arange(17, 0, -3))
    # float32 holds the range as [0, 3) in steps of 1: three elements, not four
    np.testing.assert_array_equal(q.numpy()[:3], [0.0, 1.0, 2.0])
    assert np.isnan(q.numpy()[3])
    # the int64 stop rounds once, straight to float32 (to 2**54 + 2**31): one element
    assert big.numpy()[0] == F32(2**54) and np.isnan(big.numpy()[1])
    np.testing.assert_array_equal(local.numpy(), np.arange(3, dtype=F32) + extra)


ERRORS = [
    ("x = kc.tile_arange(0, 10, 0, dtype=int)", "step cannot be zero"),
    ("x = kc.tile_arange(5, 5, dtype=int)", "non-empty range"),
    ("x = kc.tile_arange(0, 10, -1, dtype=int)", "non-empty range"),
    ("x = kc.tile_arange(5, 5, 1, 99, dtype=int)", r"at most 3 positional arguments, got 4"),
    ("x = kc.tile_arange(0, n, 1, dtype=int)", "compile time constants, but stop is not"),
    ("x = kc.tile_arange(0, 6, dtype=kc.bool)", "requires a numeric scalar dtype"),
    ("x = kc.tile_arange(0, 4, dtype=kc.vec3)", "requires a numeric scalar dtype"),
    ("x = kc.tile_arange(0, 1099511627776, dtype=kc.int32)", "stop=1099511627776 is out of range"),
    ("x = kc.tile_arange(0.0, 3.5, dtype=kc.int32)", "stop=3.5 has a fractional part"),
    ("x = kc.tile_arange(0.0, 1.0e300, dtype=kc.float32)", r"stop=1e\+300 is out of range"),
    ("x = kc.tile_arange(0.0, 1.0, 5.0e-324, dtype=kc.float64)",
     "spans more elements than can be counted"),
    ("x = kc.tile_arange(0, 1180591620717411303424, 18446744073709551616, dtype=kc.float32)",
     "too wide to use as an integer"),
    ("x = kc.tile_arange(0.0, 1.0e-46, 1.0e-46, dtype=kc.float32)", "step cannot be zero"),
    ("a = kc.tile_zeros(shape=(1, 2, 1), dtype=float)\n    kc.tile_squeeze(a, axis=(3,))",
     "axis 3 is out of bounds for tile with 3 dimensions"),
    ("a = kc.tile_zeros(shape=1, dtype=float)\n    kc.tile_broadcast(a, shape=(1, 1, 1, 1, 1))",
     "between one and four dimensions, got 5"),
]


@pytest.mark.parametrize("body, message", ERRORS, ids=[m for _, m in ERRORS])
def test_mistakes_are_clear_errors(tmp_path, body, message):
    k = kernel_in_file(tmp_path, "bad_arange", "n: int", body)
    with pytest.raises(kc.KernelError, match=message) as info:
        kc.compile(k)
    assert "bad_arange.py" in str(info.value) and isinstance(info.value, RuntimeError)


def test_value_errors_are_value_errors(tmp_path):
    k = kernel_in_file(tmp_path, "bad_step", "n: int",
                       "x = kc.tile_arange(0, 10, 0, dtype=int)")
    with pytest.raises(ValueError, match="step cannot be zero"):
        kc.compile(k)


@pytest.mark.parametrize("dtype", ["kc.int8", "kc.bool"])
def test_tile_atomic_add_rejects_types_without_an_atomic_add(tmp_path, dtype):
    k = kernel_in_file(tmp_path, "bad_atomic", f"a: kc.array(dtype={dtype})",
                       "kc.tile_atomic_add(a, kc.tile_load(a, shape=4))")
    with pytest.raises(kc.KernelError, match=r"tile_atomic_add\(\) only supports"):
        kc.compile(k)


@kc.kernel
def squeeze_and_len(a: kc.array3d(dtype=float), out: kc.array(dtype=float),
                    n: kc.array(dtype=int)):
    t = kc.tile_load(a, shape=(1, 6, 1))
    kc.tile_store(out, kc.tile_squeeze(kc.tile_squeeze(t, axis=(2,)), axis=0))
    n[0] = kc.static(len(t))


def test_squeeze_takes_axis_tuples_and_static_len_sees_tiles(rng):
    a = nonzero(rng, 6, F32).reshape(1, 6, 1)
    out, n = poisoned(6, F32), poisoned(1, np.int32)
    kc.launch_tiled(squeeze_and_len, dim=[1], inputs=[kc.array(a, dtype=float), out, n],
                    block_dim=16)
    np.testing.assert_array_equal(out.numpy(), a.ravel())
    assert n.numpy()[0] == 1
