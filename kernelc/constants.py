"""Warp's math constants (`kc.pi`, `kc.tau`, `kc.e`, `kc.inf`, `kc.nan`, ...).

They are Python floats, as in Warp: on the host they are ordinary numbers, and a kernel
folds them in as float literals (so `kc.pi * x` takes the type of `x`, like any literal).
"""

import math

E = e = math.e
LOG2E = log2e = math.log2(math.e)
LOG10E = log10e = math.log10(math.e)
LN2 = ln2 = math.log(2.0)
LN10 = ln10 = math.log(10.0)
PHI = phi = (1.0 + math.sqrt(5.0)) / 2.0
PI = pi = math.pi
HALF_PI = half_pi = math.pi / 2.0
TAU = tau = math.tau
INF = inf = math.inf
NAN = nan = math.nan

__all__ = [
    "E", "e", "LOG2E", "log2e", "LOG10E", "log10e", "LN2", "ln2", "LN10", "ln10", "PHI",
    "phi", "PI", "pi", "HALF_PI", "half_pi", "TAU", "tau", "INF", "inf", "NAN", "nan",
]
