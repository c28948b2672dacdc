"""Warp's remaining builtins (erf and its inverses, bit_count, the vector utilities,
lower_bound, cast, expect_*, the bitwise and exchange atomics) against Warp itself, and on
the CUDA backend: the same programs run by Warp, and the CUDA-C compiled by NVRTC and run
through the host harness against the CPU. The kernels come from
`tests/builtins_extra_kernels.py`; the NumPy-referenced tests are in
`tests/test_builtins_extra.py` and `tests/test_builtins_extra_atomics.py`.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import kernelc as kc
from kernelc import types as T
from tests.builtins_extra_kernels import (
    WARP_EXPECT_OUTPUT,
    _run_vector_utils,
    _slots,
    _vector_inputs,
    bits_of,
    bitwise_and_exchange,
    cas_counter,
    cast_form_registered,
    casts,
    expectations,
    float_math,
    index_forms,
    int_math,
    inverse_erf,
    lower_bound_ref,
    own_element,
    search,
    spin_lock,
    vector_atomics,
    vector_utils,
)
from tests.conftest import nonzero, poisoned, run_warp


@pytest.fixture
def cast_form():
    """`kc.cast` registered as a special form for the test (see `cast_form_registered`)."""
    with cast_form_registered():
        yield


# ---- against Warp ----------------------------------------------------------------------------

WARP_PROGRAM = """
from typing import Any

@wp.kernel
def scalars(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float),
            out: wp.array2d(dtype=float), ints: wp.array(dtype=wp.int32),
            iout: wp.array2d(dtype=wp.int32)):
    i = wp.tid()
    out[i, 0] = wp.erf(x[i])
    out[i, 1] = wp.erfc(x[i])
    out[i, 2] = wp.erfinv(y[i])
    out[i, 3] = wp.erfcinv(z[i])
    out[i, 4] = wp.copysign(x[i], y[i])
    out[i, 5] = wp.div_approx(x[i], y[i])
    out[i, 6] = wp.nonzero(x[i])
    iout[i, 0] = wp.bit_count(ints[i])
    iout[i, 1] = wp.invert(ints[i])
    iout[i, 2] = wp.int32(wp.unot(ints[i]))
    iout[i, 3] = wp.int32(wp.bit_count(wp.int8(ints[i])))

@wp.kernel
def vectors(v: wp.array(dtype=wp.vec4), m: wp.array(dtype=wp.mat33), n: wp.array(dtype=wp.mat33),
            keys: wp.array(dtype=float), values: wp.array(dtype=float),
            ranges: wp.array2d(dtype=wp.int32), index: wp.array2d(dtype=wp.uint32),
            f: wp.array2d(dtype=float), smooth: wp.array(dtype=wp.vec4),
            inv: wp.array(dtype=wp.mat33), found: wp.array2d(dtype=wp.int32)):
    i = wp.tid()
    index[i, 0] = wp.argmin(v[i])
    index[i, 1] = wp.argmax(v[i])
    f[i, 0] = wp.ddot(m[i], n[i])
    f[i, 1] = wp.norm_l1(v[i])
    f[i, 2] = wp.norm_l2(v[i])
    f[i, 3] = wp.norm_huber(v[i])
    f[i, 4] = wp.norm_huber(v[i], 0.5)
    f[i, 5] = wp.norm_pseudo_huber(v[i])
    f[i, 6] = wp.norm_pseudo_huber(v[i], 2.0)
    f[i, 7] = float(wp.len(v[i]) + 10 * wp.len(m[i]) + 100 * wp.len(v))
    smooth[i] = wp.smooth_normalize(v[i], 0.7)
    inv[i] = wp.inverse_approx(m[i])
    found[i, 0] = wp.lower_bound(keys, values[i])
    found[i, 1] = wp.lower_bound(keys, ranges[i, 0], ranges[i, 1], values[i])

@wp.kernel
def atomics(v: wp.array(dtype=wp.uint32), a: wp.array(dtype=wp.uint32),
            o: wp.array(dtype=wp.uint32), x: wp.array(dtype=wp.uint32),
            c: wp.array(dtype=wp.int32), e: wp.array(dtype=float),
            olds: wp.array2d(dtype=wp.int32), fold: wp.array(dtype=float),
            bits: wp.array(dtype=wp.int32)):
    i = wp.tid()
    olds[i, 0] = wp.int32(wp.atomic_and(a, i % 3, v[i]))
    olds[i, 1] = wp.int32(wp.atomic_or(o, i % 3, v[i]))
    olds[i, 2] = wp.int32(wp.atomic_xor(x, i % 3, v[i]))
    olds[i, 3] = wp.atomic_cas(c, i % 2, 0, i + 1)
    fold[i] = wp.atomic_exch(e, 0, float(i))
    bits[i] = wp.cast(e[0], wp.int32)

d = inputs
wp.launch(scalars, len(d["x"]), inputs=[wp.array(d["x"]), wp.array(d["y"]), wp.array(d["z"])],
          outputs=[out := wp.zeros((len(d["x"]), 7), dtype=float),
                   wp.array(d["ints"]), iout := wp.zeros((len(d["x"]), 4), dtype=wp.int32)])
nv = len(d["v"])
vec_out = [wp.zeros((nv, 2), dtype=wp.uint32), wp.zeros((nv, 8), dtype=float),
           wp.zeros(nv, dtype=wp.vec4), wp.zeros(nv, dtype=wp.mat33),
           wp.zeros((nv, 2), dtype=wp.int32)]
wp.launch(vectors, nv, inputs=[wp.array(d["v"], dtype=wp.vec4), wp.array(d["m"], dtype=wp.mat33),
                               wp.array(d["m2"], dtype=wp.mat33), wp.array(d["keys"]),
                               wp.array(d["values"]), wp.array(d["ranges"])], outputs=vec_out)
na = len(d["bits_in"])
at = [wp.full(3, 0xFFFFFFFF, dtype=wp.uint32), wp.zeros(3, dtype=wp.uint32),
      wp.zeros(3, dtype=wp.uint32), wp.zeros(2, dtype=wp.int32), wp.full(1, -1.0, dtype=float),
      wp.zeros((na, 4), dtype=wp.int32), wp.zeros(na, dtype=float), wp.zeros(na, dtype=wp.int32)]
wp.launch(atomics, na, inputs=[wp.array(d["bits_in"])], outputs=at)
results.update(out=out.numpy(), iout=iout.numpy(), index=vec_out[0].numpy(),
               f=vec_out[1].numpy(), smooth=vec_out[2].numpy(), inv=vec_out[3].numpy(),
               found=vec_out[4].numpy(), a=at[0].numpy(), o=at[1].numpy(), x=at[2].numpy(),
               c=at[3].numpy(), e=at[4].numpy(), olds=at[5].numpy(), fold=at[6].numpy(),
               bits=at[7].numpy())
"""


@kc.kernel
def scalars_like_warp(x: kc.array(dtype=float), y: kc.array(dtype=float),
                      z: kc.array(dtype=float), out: kc.array2d(dtype=float),
                      ints: kc.array(dtype=kc.int32), iout: kc.array2d(dtype=kc.int32)):
    i = kc.tid()
    out[i, 0] = kc.erf(x[i])
    out[i, 1] = kc.erfc(x[i])
    out[i, 2] = kc.erfinv(y[i])
    out[i, 3] = kc.erfcinv(z[i])
    out[i, 4] = kc.copysign(x[i], y[i])
    out[i, 5] = kc.div_approx(x[i], y[i])
    out[i, 6] = kc.nonzero(x[i])
    iout[i, 0] = kc.bit_count(ints[i])
    iout[i, 1] = kc.invert(ints[i])
    iout[i, 2] = kc.int32(kc.unot(ints[i]))
    iout[i, 3] = kc.int32(kc.bit_count(kc.int8(ints[i])))


@kc.kernel
def atomics_like_warp(v: kc.array(dtype=kc.uint32), a: kc.array(dtype=kc.uint32),
                      o: kc.array(dtype=kc.uint32), x: kc.array(dtype=kc.uint32),
                      c: kc.array(dtype=kc.int32), e: kc.array(dtype=float),
                      olds: kc.array2d(dtype=kc.int32), fold: kc.array(dtype=float),
                      bits: kc.array(dtype=kc.int32)):
    i = kc.tid()
    olds[i, 0] = kc.int32(kc.atomic_and(a, i % 3, v[i]))
    olds[i, 1] = kc.int32(kc.atomic_or(o, i % 3, v[i]))
    olds[i, 2] = kc.int32(kc.atomic_xor(x, i % 3, v[i]))
    olds[i, 3] = kc.atomic_cas(c, i % 2, 0, i + 1)
    fold[i] = kc.atomic_exch(e, 0, float(i))
    bits[i] = kc.cast(e[0], kc.int32)


def test_same_results_as_warp(rng, tmp_path, cast_form, monkeypatch):
    monkeypatch.setattr(kc.config, "num_threads", 1)  # in order, as Warp's CPU runs threads
    n = 400
    x = nonzero(rng, n, np.float32, -3, 3)
    y = nonzero(rng, n, np.float32, -0.999, 0.999)
    z = rng.uniform(0.01, 1.99, n).astype(np.float32)
    ints = rng.integers(-2**31, 2**31 - 1, n).astype(np.int32)
    ints[:2] = [0, -1]
    nv = 64
    v, m, m2, _ = _vector_inputs(rng, nv)
    keys = np.sort(nonzero(rng, 100, np.float32, -50, 50))
    values = nonzero(rng, nv, np.float32, -60, 60)
    begin = rng.integers(0, 100, nv)
    ranges = np.stack([begin, np.minimum(100, begin + rng.integers(0, 30, nv))], 1).astype(np.int32)
    na = 50
    bits_in = rng.integers(0, 2**32, na, dtype=np.uint64).astype(np.uint32)
    warp = run_warp(WARP_PROGRAM, tmp_path, x=x, y=y, z=z, ints=ints, v=v, m=m, m2=m2, keys=keys,
                    values=values, ranges=ranges, bits_in=bits_in)

    out, iout = poisoned((n, 7), np.float32), poisoned((n, 4), np.int32)
    kc.launch(scalars_like_warp, n, inputs=[kc.array(x), kc.array(y), kc.array(z), out,
                                            kc.array(ints), iout])
    np.testing.assert_array_max_ulp(out.numpy()[:, :2], warp["out"][:, :2], 1)
    np.testing.assert_allclose(out.numpy()[:, 2:4], warp["out"][:, 2:4], rtol=3e-7)
    np.testing.assert_array_equal(out.numpy()[:, 4:], warp["out"][:, 4:])
    np.testing.assert_array_equal(iout.numpy(), warp["iout"])

    got = _run_vector_utils(v, m, m2, np.zeros((nv, 3), np.int32))
    np.testing.assert_array_equal(got["index"][:, :2], warp["index"])
    ok = ~np.isnan(v).any(axis=1)
    np.testing.assert_allclose(got["f"][ok], warp["f"][ok], rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(got["smooth"][ok], warp["smooth"][ok], rtol=2e-6)
    good = np.abs(np.linalg.det(m.astype(np.float64))) > 1e-2
    np.testing.assert_allclose(got["inv"][good], warp["inv"][good], rtol=1e-4, atol=1e-5)
    found = poisoned((nv, 2), np.int32)
    kc.launch(search, nv, inputs=[kc.array(keys), kc.array(values), kc.array(ranges), found])
    np.testing.assert_array_equal(found.numpy(), warp["found"])

    at = [kc.full(3, 0xFFFFFFFF, dtype=kc.uint32), kc.zeros(3, dtype=kc.uint32),
          kc.zeros(3, dtype=kc.uint32), kc.zeros(2, dtype=kc.int32), kc.full(1, -1.0),
          poisoned((na, 4), np.int32), poisoned(na, np.float32), poisoned(na, np.int32)]
    kc.launch(atomics_like_warp, na, inputs=[kc.array(bits_in), *at])
    for k, name in enumerate(("a", "o", "x", "c", "e", "olds", "fold", "bits")):
        np.testing.assert_array_equal(at[k].numpy(), warp[name], err_msg=name)


# ---- CUDA-C: NVRTC and the host harness ------------------------------------------------------


def _specialisations():
    return [
        (float_math, (T.ArrayType(T.float32, 1), T.ArrayType(T.float32, 1),
                      T.ArrayType(T.float32, 2))),
        (float_math, (T.ArrayType(T.float64, 1), T.ArrayType(T.float64, 1),
                      T.ArrayType(T.float64, 2))),
        (float_math, (T.ArrayType(T.float16, 1), T.ArrayType(T.float16, 1),
                      T.ArrayType(T.float16, 2))),
        (inverse_erf, (T.ArrayType(T.float32, 1),) * 2 + (T.ArrayType(T.float32, 2),)),
        (inverse_erf, (T.ArrayType(T.float64, 1),) * 2 + (T.ArrayType(T.float64, 2),)),
        (int_math, (T.ArrayType(T.int8, 1), T.ArrayType(T.int32, 1), T.ArrayType(T.int8, 1),
                    T.ArrayType(T.int8, 2), T.ArrayType(T.int32, 2))),
        (int_math, (T.ArrayType(T.uint64, 1), T.ArrayType(T.int32, 1),
                    T.ArrayType(T.uint64, 1), T.ArrayType(T.uint64, 2),
                    T.ArrayType(T.int32, 2))),
        (vector_utils, None), (search, (T.ArrayType(T.float32, 1),) * 2 +
                               (T.ArrayType(T.int32, 2),) * 2),
        (casts, None), (expectations, None), (spin_lock, None), (index_forms, None),
        (vector_atomics, None), (own_element, None),
        *((cas_counter, (T.ArrayType(T.int32, 1), T.ArrayType(it, 1), T.ArrayType(ft, 1)))
          for it, ft in ((T.int32, T.float32), (T.int64, T.float64), (T.uint32, T.float32),
                         (T.uint64, T.float64))),
        *((bitwise_and_exchange, (T.ArrayType(t, 1),) * 6)
          for t in (T.int32, T.int64, T.uint32, T.uint64)),
    ]


def _cuda_source(kernel, types):
    from kernelc.codegen.cuda import CudaOptions, emit_cuda

    return emit_cuda(kernel.get_ir(types or kernel.param_types), CudaOptions())


def test_cuda_c_compiles_with_nvrtc(cast_form):
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs the NVRTC bindings")
    from kernelc.codegen import nvrtc

    for kernel, types in _specialisations():
        source = _cuda_source(kernel, types)
        image, fmt = nvrtc.compile_cuda(source.text, 80, name=source.kernel)
        assert fmt == "cubin" and image[:4] == b"\x7fELF", kernel.__name__


def _vectors(a: np.ndarray):
    """An array of vectors / matrices for the harness: one element per leading index."""
    from kernelc.codegen.cuda_layout import ArrayArg

    return ArrayArg(a.ctypes.data, a.shape[:1], a.strides[:1])


@pytest.fixture
def harness():
    import cuda_harness

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    return lambda kernel, types=None: cuda_harness.build(_cuda_source(kernel, types))


def test_harness_math_matches_the_cpu(rng, harness):
    n = 300
    for dtype, t in ((np.float32, T.float32), (np.float64, T.float64)):
        x, y = nonzero(rng, n, dtype, -3, 3), nonzero(rng, n, dtype)
        arrays = (T.ArrayType(t, 1), T.ArrayType(t, 1), T.ArrayType(t, 2))
        cpu, gpu = poisoned((n, 6), dtype), np.full((n, 6), np.nan, dtype)
        kc.launch(float_math, n, inputs=[kc.array(x), kc.array(y), cpu])
        harness(float_math, arrays).launch(n, [x, y, gpu], workers=2)
        np.testing.assert_array_max_ulp(gpu, cpu.numpy(), 1)
        yi = rng.uniform(-1, 1, n).astype(dtype)
        z = rng.uniform(0, 2, n).astype(dtype)
        cpu, gpu = poisoned((n, 2), dtype), np.full((n, 2), np.nan, dtype)
        kc.launch(inverse_erf, n, inputs=[kc.array(yi), kc.array(z), cpu])
        harness(inverse_erf, arrays).launch(n, [yi, z, gpu], workers=2)
        np.testing.assert_array_max_ulp(gpu, cpu.numpy(), 1)
    x = rng.integers(-128, 127, n).astype(np.int8)
    counts, inverted = np.full(n, -1, np.int32), np.zeros(n, np.int8)
    misc, flags = np.zeros((n, 2), np.int8), np.full((n, 2), -1, np.int32)
    harness(int_math, (T.ArrayType(T.int8, 1), T.ArrayType(T.int32, 1), T.ArrayType(T.int8, 1),
                       T.ArrayType(T.int8, 2), T.ArrayType(T.int32, 2))).launch(
        n, [x, counts, inverted, misc, flags])
    np.testing.assert_array_equal(counts, bits_of(x))
    np.testing.assert_array_equal(inverted, np.invert(x))
    np.testing.assert_array_equal(flags[:, 0], (x == 0).astype(np.int32))


def test_harness_search_and_cast_match_the_cpu(rng, harness, cast_form):
    keys = np.sort(nonzero(rng, 100, np.float32, -50, 50))
    n = 200
    values = nonzero(rng, n, np.float32, -60, 60)
    begin = rng.integers(0, 100, n)
    ranges = np.stack([begin, np.minimum(100, begin + rng.integers(0, 30, n))], 1).astype(np.int32)
    found = np.full((n, 2), -7, np.int32)
    harness(search, (T.ArrayType(T.float32, 1),) * 2 + (T.ArrayType(T.int32, 2),) * 2).launch(
        n, [keys, values, ranges, found])
    assert found[:, 1].tolist() == [lower_bound_ref(keys, b, e, x)
                                    for (b, e), x in zip(ranges, values)]
    x = rng.integers(-2**31, 2**31 - 1, n).astype(np.int32)
    d = nonzero(rng, n, np.float64)
    v = nonzero(rng, 2 * n, np.float32).reshape(n, 2)
    outs = [np.zeros(n, np.float32), np.zeros(n, np.uint32), np.zeros(n, np.int64),
            np.zeros(n, np.uint64), np.zeros((n, 2), np.float32), np.zeros(n, np.int32)]
    harness(casts).launch(n, [x, d, _vectors(v), *outs[:4], _vectors(outs[4]), outs[5]])
    np.testing.assert_array_equal(outs[0].view(np.int32), x)
    np.testing.assert_array_equal(outs[2], d.view(np.int64))
    np.testing.assert_array_equal(outs[4], v)
    shorts = np.where(x < 0, -(np.abs(x) % 1000), x % 1000).astype(np.int16)
    np.testing.assert_array_equal(outs[5], (shorts.astype(np.int32) << 16) | 0x4000)


def test_harness_atomics_under_contention(harness):
    n, k = 20_000, 3
    slots = _slots(n, k, 7)
    want = np.bincount(slots, minlength=k)
    for it, ft, ni, nf in ((T.int32, T.float32, np.int32, np.float32),
                           (T.uint64, T.float64, np.uint64, np.float64)):
        counts, sums = np.zeros(k, ni), np.zeros(k, nf)
        harness(cas_counter, (T.ArrayType(T.int32, 1), T.ArrayType(it, 1),
                              T.ArrayType(ft, 1))).launch(n, [slots, counts, sums], workers=4,
                                                          max_blocks=64)
        np.testing.assert_array_equal(counts, want)
        np.testing.assert_array_equal(sums, want)
    locks, data = np.zeros(k, np.int32), np.zeros(k, np.int32)
    harness(spin_lock).launch(n, [slots, locks, data], workers=4, max_blocks=64)
    np.testing.assert_array_equal(data, want)
    for dtype, t in ((np.int32, T.int32), (np.uint64, T.uint64), (np.int64, T.int64)):
        info = np.iinfo(dtype)
        v = np.random.default_rng(8).integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        a, o, x = np.full(3, -1).astype(dtype), np.zeros(3, dtype), np.zeros(3, dtype)
        ex, olds = np.full(5, 7, dtype), np.zeros(n, dtype)
        harness(bitwise_and_exchange, (T.ArrayType(t, 1),) * 6).launch(
            n, [v, a, o, x, ex, olds], workers=4, max_blocks=64)
        for r in range(3):
            part = v[np.arange(n) % 3 == r]
            assert (a[r], o[r], x[r]) == (np.bitwise_and.reduce(part),
                                          np.bitwise_or.reduce(part),
                                          np.bitwise_xor.reduce(part))
        for r in range(5):
            mine = np.arange(n) % 5 == r
            assert sorted(olds[mine].tolist() + [ex[r]]) == sorted(v[mine].tolist() + [7])


def test_harness_index_forms_and_vector_atomics_match_the_cpu(harness):
    n = 16
    v = np.arange(1, n + 1, dtype=np.uint32) * 0x01010101
    cpu = [kc.zeros((2, 3), dtype=kc.uint32), kc.array(np.full((2, 2, 2), -1, np.int64)),
           kc.array(np.full((1, 2, 2, 1), 0.5)), kc.zeros((1, 1, 1, 4), dtype=kc.int32)]
    kc.launch(index_forms, n, inputs=[kc.array(v), *cpu, poisoned((n, 2), np.float64)])
    host = [np.zeros((2, 3), np.uint32), np.full((2, 2, 2), -1, np.int64),
            np.full((1, 2, 2, 1), 0.5), np.zeros((1, 1, 1, 4), np.int32)]
    harness(index_forms).launch(n, [v, *host, np.zeros((n, 2))])
    for c, h in zip(cpu[:2], host[:2]):
        np.testing.assert_array_equal(h, c.numpy())
    np.testing.assert_array_equal(host[3], cpu[3].numpy())
    vi = np.random.default_rng(4).integers(-1000, 1000, (n, 3)).astype(np.int32)
    acc = np.array([[0, 0, 0], [-1, -1, -1], [0, 0, 0]], np.int32)
    swap, olds = np.array([[0.0, 1.0]]), np.zeros((n, 2))
    harness(vector_atomics).launch(n, [_vectors(vi), _vectors(acc), _vectors(swap),
                                       _vectors(olds)])
    np.testing.assert_array_equal(acc, [np.bitwise_or.reduce(vi), np.bitwise_and.reduce(vi),
                                        np.bitwise_xor.reduce(vi)])
    assert swap[0, 1] == 7.0 and ((olds[:, 0] == 0.0).sum(), (olds[:, 1] == 1.0).sum()) == (1, 1)


def test_harness_expect_output(harness, capfd):
    harness(expectations).launch(1, [np.array([1.5], np.float32)])
    assert capfd.readouterr().out == WARP_EXPECT_OUTPUT
