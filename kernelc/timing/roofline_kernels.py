"""The kernels that measure a device's roofs (see `roofline.py`).

Loop-free, so that the CPU backend runs them as SIMD across threads like any simple
kernel: eight independent chains of 32 fused multiply-adds each (the chains hide the
FMA latency), and a STREAM-style triad.
"""

import kernelc as kc


@kc.func
def _fma8(a: float, m: float, c: float):
    return (((((((a * m + c) * m + c) * m + c) * m + c) * m + c) * m + c) * m + c) * m + c


@kc.func
def _fma32(a: float, m: float, c: float):
    return _fma8(_fma8(_fma8(_fma8(a, m, c), m, c), m, c), m, c)


@kc.kernel
def fma_peak(out: kc.array(dtype=float), m: float, c: float):
    i = kc.tid()
    a = float(i) * 1.0e-9
    s0 = _fma32(a, m, c)
    s1 = _fma32(a + 0.1, m, c)
    s2 = _fma32(a + 0.2, m, c)
    s3 = _fma32(a + 0.3, m, c)
    s4 = _fma32(a + 0.4, m, c)
    s5 = _fma32(a + 0.5, m, c)
    s6 = _fma32(a + 0.6, m, c)
    s7 = _fma32(a + 0.7, m, c)
    out[i] = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@kc.kernel
def triad(x: kc.array(dtype=float), y: kc.array(dtype=float), z: kc.array(dtype=float),
          a: float):
    i = kc.tid()
    z[i] = x[i] * a + y[i]
