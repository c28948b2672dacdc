"""`kc.bfloat16` end to end: host conversions, kernels on the CPU (thread by thread and as
SIMD lanes), the CUDA-C emitter (NVRTC, and the host harness against the CPU), errors.

The NumPy reference rounds float32 to bfloat16 with uint32 bit operations (nearest, ties
to even; a NaN stays a NaN with its quiet bit set), and computes each kernel op in float32
then rounds, which is what a bfloat16 op means (in Warp too). Inputs are random bfloat16
values away from zero; outputs are poisoned with a NaN bit pattern no result has.
"""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest

import kernelc as kc
from kernelc import logger
from kernelc import types as T
from kernelc.runtime import array_bf16

BF = kc.bfloat16
VEC3BF = kc.types.vector(3, BF)
MAT22BF = kc.types.matrix((2, 2), BF)
POISON = 0x7FAB  # a NaN payload that no conversion produces
N = 67  # not a multiple of any SIMD width: the last packet runs with lanes masked off


# ---- the NumPy reference -------------------------------------------------------------------


def ref_bits(x) -> np.ndarray:
    x = np.asarray(x, np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return np.where(np.isnan(x), (u >> 16) | 0x40, rounded).astype(np.uint16)


def ref_values(bits) -> np.ndarray:
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def ref_round(x) -> np.ndarray:
    with np.errstate(all="ignore"):
        return ref_values(ref_bits(x))


def bf16_inputs(rng, shape, low=0.25, high=6.0) -> np.ndarray:
    """Random bfloat16 values (as float32) of both signs with |x| in [low, high)."""
    magnitude = rng.uniform(low, high, shape)
    return ref_round(magnitude * rng.choice([-1.0, 1.0], shape))


def poisoned(shape, dtype=BF) -> kc.array:
    shape = (shape,) if isinstance(shape, int) else shape
    inner = (dtype.length,) if dtype == VEC3BF else (2, 2) if dtype == MAT22BF else ()
    return kc.array(np.full(shape + inner, POISON, np.uint16), dtype=dtype)


# (`_values()` is `numpy()` without the warning about bits that `numpy()` gives once)
def values_of(arr: kc.array) -> np.ndarray:
    return ref_values(arr._values())


def assert_bits(got: kc.array, want) -> None:
    np.testing.assert_array_equal(got._values(), ref_bits(want))


# ---- host side -----------------------------------------------------------------------------

SPECIAL = np.array([1.5, 2.25, 3.0, 1 / 3, 1.00390625, 1.01171875, 3.4e38, -3.4e38, 1e-40,
                    -0.0, np.inf, -np.inf, np.nan], np.float32)


def test_conversion_rounds_to_nearest_even_and_keeps_nan():
    bits = kc.array(SPECIAL, dtype=BF)._values()
    # 1/3 rounds up (16043, not the truncated 16042); the two ties go to the even neighbour;
    # float32's largest values overflow to infinity.
    assert bits[:6].tolist() == [16320, 16400, 16448, 16043, 0x3F80, 0x3F82]
    assert bits[6:8].tolist() == [0x7F80, 0xFF80]
    np.testing.assert_array_equal(bits, ref_bits(SPECIAL))
    signalling = np.array([0x7F800001, 0xFFBFFFFF, 0x7F810000], np.uint32).view(np.float32)
    back = kc.array(signalling, dtype=BF).list()
    assert all(np.isnan(float(x)) for x in back)
    rng = np.random.default_rng(3)
    random = rng.integers(0, 2**32, 5000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    np.testing.assert_array_equal(kc.array(random, dtype=BF)._values(), ref_bits(random))


def test_numpy_gives_the_bits_with_a_warning_and_list_gives_numbers(monkeypatch):
    monkeypatch.setattr(array_bf16, "ml_bfloat16", lambda: None)  # as without ml_dtypes
    a = kc.array([1.5, 2.25, 3.0, 1 / 3], dtype=BF)
    logger._state()["seen"].discard((UserWarning, array_bf16._NUMPY_WARNING))  # (once only)
    with pytest.warns(UserWarning, match="raw bit representation"):
        raw = a.numpy()
    assert raw.dtype == np.uint16 and raw.tolist() == [16320, 16400, 16448, 16043]
    items = a.list()
    assert all(isinstance(x, BF) for x in items)
    assert [float(x) for x in items] == [1.5, 2.25, 3.0, 0.333984375]
    # uint16 data is taken as bits, as in Warp; any other data as numbers
    assert kc.array(raw, dtype=BF)._values().tolist() == raw.tolist()
    assert kc.array(np.array([3, 5], np.int32), dtype=BF).list() == [3.0, 5.0]
    a.fill_(2.7)
    assert a._values().tolist() == [int(ref_bits(2.7))] * 4
    assert kc.zeros(2, dtype=BF)._values().tolist() == [0, 0]
    assert kc.full(2, BF(1.3)).dtype == BF


def test_numpy_gives_ml_dtypes_bfloat16_where_installed():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = [1.5, 2.25, 3.0, 1 / 3]
    a = kc.array(values, dtype=BF)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the values are numbers
        got = a.numpy()
    assert got.dtype == ml_dtypes.bfloat16
    assert got.astype(np.float32).tolist() == [1.5, 2.25, 3.0, 0.333984375]
    assert got.view(np.uint16).tolist() == [16320, 16400, 16448, 16043]
    # ml_dtypes data gives bfloat16 arrays, by inference or by dtype, bit for bit
    data = np.array([1.0, -2.5, 100.0, 0.001], dtype=ml_dtypes.bfloat16)
    for b in (kc.array(data), kc.array(data, dtype=BF)):
        assert b.dtype == BF and b._values().tolist() == data.view(np.uint16).tolist()
    assert kc.dtype_from_numpy(ml_dtypes.bfloat16) is BF
    assert kc.dtype_from_numpy(np.dtype(ml_dtypes.bfloat16)) is BF
    v = kc.array(np.ones((2, 3), np.float32), dtype=kc.types.vector(3, BF))
    assert v.numpy().dtype == ml_dtypes.bfloat16 and v.numpy().shape == (2, 3)


def test_host_scalars_and_type_queries():
    x = BF(1 / 3)
    assert isinstance(x, BF) and not isinstance(x, kc.float32)
    assert not isinstance(np.float32(1), BF) and not isinstance(np.uint16(1), BF)
    assert float(x) == ref_round(1 / 3) and repr(x) == "bfloat16(0.333984375)"
    assert repr(BF(1.5) * BF(3.3)) == "bfloat16(4.9375)"  # rounded, as in kernels
    assert float(BF(1.5) * 3.3) == ref_round(1.5 * ref_round(3.3))
    assert kc.types.type_size_in_bytes(BF) == 2 and BF.size == 2
    assert kc.types.types_equal(BF, BF) and not kc.types.types_equal(BF, kc.float16)
    assert kc.types.type_is_float(BF) and kc.types.is_float(x)
    assert kc.dtype_to_numpy(BF) is np.uint16 and kc.dtype_from_numpy(np.uint16) == kc.uint16
    assert kc.types.type_repr(VEC3BF) == "vec3bf" and VEC3BF.__name__ == "vec_t"
    assert BF.__name__ == "bfloat16" and BF in T.SCALAR_TYPES
    v = VEC3BF(1.3, 2.0, 3.0)
    assert repr(v) == "vec3bf([1.296875, 2.0, 3.0])"
    assert repr(v * BF(2.0)) == "vec3bf([2.59375, 4.0, 6.0])"
    assert float(kc.dot(v, v)) == ref_round(ref_round(ref_round(1.296875**2) + 4.0) + 9.0)


# ---- kernels -------------------------------------------------------------------------------


@kc.kernel
def arithmetic(a: kc.array(dtype=BF), b: kc.array(dtype=BF), out: kc.array2d(dtype=BF),
               flags: kc.array2d(dtype=kc.int32)):
    i = kc.tid()
    x, y = a[i], b[i]
    out[i, 0] = x + y
    out[i, 1] = x - y
    out[i, 2] = x * y
    out[i, 3] = x / y
    out[i, 4] = x // y
    out[i, 5] = x % y
    out[i, 6] = -x * BF(3.3) + BF(1.5) * BF(0.1)  # (the constants fold at compile time)
    out[i, 7] = kc.sqrt(kc.abs(x))
    out[i, 8] = kc.min(x, y) + kc.max(x, y) * 2.0  # a literal takes bfloat16
    out[i, 9] = kc.floor(x) + kc.where(x < y, x, y)
    acc = BF(0.0)
    for k in range(3):  # a loop makes "auto" run the threads as SIMD lanes
        acc += x * BF(float(k) + 0.5)
    out[i, 10] = acc
    out[i, 11] = kc.sin(x)
    out[i, 12] = kc.exp(y)
    flags[i, 0] = kc.where(x < y, 1, 0) + kc.where(x == y, 2, 0) + kc.where(x >= y, 4, 0)
    zero = x - x
    flags[i, 1] = kc.where(kc.isnan(zero / zero), 1, 0) + kc.where(kc.isinf(x / zero), 2, 0)


def _arithmetic_reference(x, y):
    with np.errstate(all="ignore"):
        r = ref_round
        return np.stack([
            r(x + y), r(x - y), r(x * y), r(x / y), np.floor(r(x / y)), np.fmod(x, y),
            r(r(-x * r(3.3)) + r(1.5 * r(0.1))), r(np.sqrt(np.abs(x))),
            r(np.minimum(x, y) + r(np.maximum(x, y) * 2)), r(np.floor(x) + np.where(x < y, x, y)),
            r(r(r(x * 0.5) + r(x * 1.5)) + r(x * 2.5)),
        ], axis=1)


@pytest.fixture(params=["all", "off"])
def simd(request):
    previous = kc.config.cpu_simd
    kc.config.cpu_simd = request.param
    yield request.param
    kc.config.cpu_simd = previous


def _run_arithmetic(rng):
    x, y = bf16_inputs(rng, N), bf16_inputs(rng, N)
    y[:5] = x[:5]  # some equal pairs for the comparisons
    out, flags = poisoned((N, 13)), kc.full((N, 2), -7, dtype=kc.int32)
    kc.launch(arithmetic, N, inputs=[kc.array(x, dtype=BF), kc.array(y, dtype=BF), out, flags])
    return x, y, out, flags


def test_arithmetic_matches_numpy(simd, rng):
    x, y, out, flags = _run_arithmetic(rng)
    assert_bits(out[:, :11], _arithmetic_reference(x, y))
    # libm against NumPy: the same float32 up to its last bit, so at most one bfloat16 step
    for col, fn in ((11, np.sin), (12, np.exp)):
        want = ref_bits(fn((x if col == 11 else y).astype(np.float64)))
        got = out._values()[:, col]
        assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1
    want = (x < y) * 1 + (x == y) * 2 + (x >= y) * 4
    np.testing.assert_array_equal(flags.numpy()[:, 0], want)
    np.testing.assert_array_equal(flags.numpy()[:, 1], 3)


@kc.kernel
def casts(a: kc.array(dtype=BF), d: kc.array(dtype=kc.float64), i: kc.array(dtype=kc.int32),
          h: kc.array(dtype=kc.float16), to_bf: kc.array2d(dtype=BF),
          to_int: kc.array2d(dtype=kc.int32), to_float: kc.array2d(dtype=float),
          to_double: kc.array(dtype=kc.float64), to_half: kc.array(dtype=kc.float16)):
    t = kc.tid()
    x = a[t]
    to_bf[t, 0] = BF(d[t])
    to_bf[t, 1] = BF(i[t])
    to_bf[t, 2] = BF(h[t])
    to_bf[t, 3] = BF(float(d[t]) * 1.0)
    to_int[t, 0] = int(x)
    to_int[t, 1] = kc.int32(kc.uint8(kc.abs(x)))
    to_int[t, 2] = kc.int32(kc.int64(x * BF(1000.0)))
    to_float[t, 0] = float(x)
    to_float[t, 1] = float(kc.float64(x) / kc.float64(3.0))
    to_double[t] = kc.float64(x)
    to_half[t] = kc.float16(x)


def test_casts_in_both_directions(rng):
    x = bf16_inputs(rng, N, high=200.0)
    d = rng.uniform(-1e4, 1e4, N) * 10.0 ** rng.integers(-30, 30, N)
    d[:3] = [1 + 2**-8 + 2**-30, 3.4e38, 1e300]  # (through float32: 1.0 and two infinities)
    i = rng.integers(-(2**31), 2**31 - 1, N, dtype=np.int64).astype(np.int32)
    h = rng.uniform(-60000, 60000, N).astype(np.float16)
    to_bf, to_int = poisoned((N, 4)), kc.full((N, 3), -7, dtype=kc.int32)
    to_float = kc.full((N, 2), np.nan, dtype=float)
    to_double, to_half = kc.full(N, np.nan, kc.float64), kc.full(N, np.nan, kc.float16)
    kc.launch(casts, N, inputs=[kc.array(x, dtype=BF), kc.array(d, dtype=kc.float64),
                                kc.array(i, dtype=kc.int32), kc.array(h, dtype=kc.float16),
                                to_bf, to_int, to_float, to_double, to_half])
    with np.errstate(over="ignore"):
        d32 = d.astype(np.float32)
    assert_bits(to_bf[:, 0], d32)
    # Warp rounds a double twice, too: 1 + 2**-8 + 2**-30 is 1 + 2**-8 in float32, a tie
    assert values_of(to_bf)[:3, 0].tolist() == [1.0, np.inf, np.inf]
    assert_bits(to_bf[:, 1], i.astype(np.float32))
    assert_bits(to_bf[:, 2], h.astype(np.float32))
    assert_bits(to_bf[:, 3], d32)
    np.testing.assert_array_equal(to_int.numpy()[:, 0], np.trunc(x))
    np.testing.assert_array_equal(to_int.numpy()[:, 1], np.trunc(np.abs(x)))
    np.testing.assert_array_equal(to_int.numpy()[:, 2], np.trunc(ref_round(x * 1000.0)))
    np.testing.assert_array_equal(to_float.numpy()[:, 0], x)
    third = (x.astype(np.float64) / 3.0).astype(np.float32)
    np.testing.assert_array_equal(to_float.numpy()[:, 1], third)
    np.testing.assert_array_equal(to_double.numpy(), x.astype(np.float64))
    np.testing.assert_array_equal(to_half.numpy(), x.astype(np.float16))


@kc.struct
class Particle:
    mass: BF
    scale: float
    vel: VEC3BF


@kc.func
def kinetic(p: Particle, v: VEC3BF) -> BF:
    return BF(0.5) * p.mass * kc.dot(v, v)


@kc.kernel
def aggregates(a: kc.array(dtype=VEC3BF), m: kc.array(dtype=MAT22BF), p: Particle, s: BF,
               out: kc.array2d(dtype=VEC3BF), energy: kc.array(dtype=BF),
               row: kc.array(dtype=MAT22BF)):
    i = kc.tid()
    v = a[i]
    out[i, 0] = v * s + p.vel
    out[i, 1] = VEC3BF(v[2], v[0] * v[1], BF(p.scale))
    energy[i] = kinetic(p, v)
    row[i] = m[i] * s


def test_vectors_matrices_structs_and_scalar_arguments(rng):
    v = bf16_inputs(rng, (N, 3))
    m = bf16_inputs(rng, (N, 2, 2))
    p = Particle()
    p.mass, p.scale, p.vel = 2.7, 1.3, VEC3BF(0.1, -0.2, 0.3)
    s = BF(1.7)
    out, energy, row = poisoned((N, 2), VEC3BF), poisoned(N), poisoned(N, MAT22BF)
    kc.launch(aggregates, N, inputs=[kc.array(v, dtype=VEC3BF), kc.array(m, dtype=MAT22BF), p,
                                     s, out, energy, row])
    r, vel, mass = ref_round, ref_round([0.1, -0.2, 0.3]), ref_round(2.7)
    assert_bits(out[:, 0], r(r(v * np.float32(s)) + vel))
    want = np.stack([v[:, 2], r(v[:, 0] * v[:, 1]), np.full(N, r(1.3))], axis=1)
    assert_bits(out[:, 1], want)
    dot = r(r(r(v[:, 0] ** 2) + r(v[:, 1] ** 2)) + r(v[:, 2] ** 2))
    assert_bits(energy, r(r(0.5 * mass) * dot))
    assert_bits(row, r(m * np.float32(s)))
    assert repr(out.list()[0]).startswith("vec3bf([")


@kc.kernel
def atomics(values: kc.array(dtype=BF), slots: kc.array(dtype=BF), lo: kc.array(dtype=BF),
            hi: kc.array(dtype=BF), vsum: kc.array(dtype=VEC3BF), total: kc.array(dtype=BF),
            old: kc.array(dtype=BF), own: kc.array(dtype=BF)):
    i = kc.tid()
    x = values[i]
    whole = BF(float(i % 4 + 1))  # small integers: every partial sum is exact
    kc.atomic_add(slots, i % 3, whole)
    kc.atomic_sub(slots, 3, whole)
    kc.atomic_min(lo, i % 2, x)
    kc.atomic_max(hi, i % 2, x)
    kc.atomic_add(vsum, 0, VEC3BF(whole, -whole, BF(2.0)))
    total[0] += whole  # `+=` on an array element is an atomic add, as in Warp
    old[i] = kc.atomic_add(own, i, x)  # one thread per element: the old value comes back


def test_atomics(rng):
    x = bf16_inputs(rng, N)
    start = bf16_inputs(rng, N)
    slots, lo, hi = kc.zeros(4, dtype=BF), kc.full(2, 1e30, BF), kc.full(2, -1e30, BF)
    vsum, total, old = kc.zeros(1, dtype=VEC3BF), kc.zeros(1, dtype=BF), poisoned(N)
    own = kc.array(start, dtype=BF)
    kc.launch(atomics, N, inputs=[kc.array(x, dtype=BF), slots, lo, hi, vsum, total, old, own])
    whole = np.arange(N) % 4 + 1
    sums = [whole[np.arange(N) % 3 == k].sum() for k in range(3)]
    np.testing.assert_array_equal(values_of(slots), [*sums, -whole.sum()])
    np.testing.assert_array_equal(values_of(lo), [x[0::2].min(), x[1::2].min()])
    np.testing.assert_array_equal(values_of(hi), [x[0::2].max(), x[1::2].max()])
    np.testing.assert_array_equal(values_of(vsum)[0], [whole.sum(), -whole.sum(), 2.0 * N])
    np.testing.assert_array_equal(values_of(total), [whole.sum()])
    np.testing.assert_array_equal(values_of(old), start)
    assert_bits(own, start + x)


def test_atomic_sums_round_at_each_step():
    # 256 + 1 is not a bfloat16 (it rounds back to 256): a sum of ones stalls there, as
    # atomics one at a time (Warp's among them) make it.
    total = kc.zeros(1, dtype=BF)
    kc.launch(atomics_ones, 300, inputs=[total])
    assert total.list() == [256.0]


@kc.kernel
def atomics_ones(total: kc.array(dtype=BF)):
    kc.atomic_add(total, 0, BF(1.0))


# ---- errors --------------------------------------------------------------------------------


def _mixed_sum(a: kc.array(dtype=BF), b: kc.array(dtype=float)):
    i = kc.tid()
    a[i] = a[i] + b[i]


def _mixed_compare(a: kc.array(dtype=BF), b: kc.array(dtype=float)):
    i = kc.tid()
    if a[i] < b[i]:
        a[i] = BF(0.0)


def _float_store(a: kc.array(dtype=BF), b: kc.array(dtype=float)):
    a[kc.tid()] = b[kc.tid()]


def _exchange(a: kc.array(dtype=BF), b: kc.array(dtype=float)):
    kc.atomic_exch(a, 0, BF(1.0))


@pytest.mark.parametrize("fn, words, column", [
    (_mixed_sum, r"different types \(bfloat16 and float32\)", 12),
    (_mixed_compare, "cannot compare bfloat16 with float32", 8),
    (_float_store, "cannot store a float32 value in an array of bfloat16", 5),
    (_exchange, "not on an array of bfloat16", 5),
], ids=lambda x: getattr(x, "__name__", None))
def test_mixing_types_is_refused(fn, words, column):
    kernel = kc.kernel(fn)
    with pytest.raises(kc.KernelError, match=words) as err:
        kc.launch(kernel, 2, inputs=[kc.zeros(2, dtype=BF), kc.zeros(2, dtype=float)])
    line = fn.__code__.co_firstlineno + (1 if fn is _float_store or fn is _exchange else 2)
    assert f"test_bfloat16.py:{line}:{column}" in str(err.value)


# ---- CUDA-C --------------------------------------------------------------------------------


def test_cuda_c_compiles_with_nvrtc():
    for kernel in (arithmetic, casts, aggregates, atomics):
        compiled = kc.compile(kernel, target="cuda", arch=80)
        assert compiled.format == "cubin" and compiled.binary
        assert "kc_float_to_bf16" in compiled.source  # kernelc's own conversions: no
        assert "#include <cuda_bf16" not in compiled.source  # CUDA header needed


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_cuda_c_runs_like_the_cpu_backend(rng):
    import cuda_harness

    from kernelc.codegen.cuda import CudaOptions, emit_cuda
    from kernelc.codegen.cuda_layout import ArrayArg

    host, host_atomics = cuda_harness.build_all(
        [emit_cuda(k.get_ir(None), CudaOptions()) for k in (arithmetic, atomics)])
    x, y, out, flags = _run_arithmetic(rng)
    out_c, flags_c = np.full((N, 13), POISON, np.uint16), np.full((N, 2), -7, np.int32)
    host.launch(N, [ref_bits(x), ref_bits(y), out_c, flags_c])
    np.testing.assert_array_equal(out_c, out._values())
    np.testing.assert_array_equal(flags_c, flags.numpy())

    # the atomics (compare-and-swap loops on the containing word), blocks on two threads
    x = bf16_inputs(rng, N)
    start = [np.zeros(4, np.uint16), ref_bits([1e30] * 2), ref_bits([-1e30] * 2),
             np.zeros((1, 3), np.uint16), np.zeros(1, np.uint16), np.full(N, POISON, np.uint16),
             ref_bits(bf16_inputs(rng, N))]
    c = [s.copy() for s in start]
    cpu = [kc.array(s, dtype=VEC3BF if s.ndim == 2 else BF) for s in start]
    kc.launch(atomics, N, inputs=[kc.array(x, dtype=BF), *cpu])
    args = [ArrayArg(a.ctypes.data, a.shape[:1], a.strides[:1]) for a in c]
    host_atomics.launch(N, [ref_bits(x), *args], workers=2)
    for got, want in zip(c, cpu):
        np.testing.assert_array_equal(got, want._values())


def test_torch_tensors_share_the_bits():
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(11).uniform(-4.0, 4.0, 16).astype(np.float32)
    tensor = torch.tensor(values, dtype=torch.bfloat16)
    arr = kc.from_torch(tensor)
    assert arr.dtype == kc.bfloat16
    np.testing.assert_array_equal(arr._values(), ref_bits(values))
    back = kc.to_torch(kc.array(values, dtype=kc.bfloat16))
    assert back.dtype == torch.bfloat16
    np.testing.assert_array_equal(back.float().numpy(), ref_values(ref_bits(values)))
