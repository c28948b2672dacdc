"""The activity-timing demo: three launches of a loop kernel and a copy back, all timed.

Run: python -m kernelc.examples inc_loop [--device cuda]
"""

from __future__ import annotations

import kernelc as kc
from kernelc.examples._common import parser


@kc.kernel
def inc_loop(a: kc.array(dtype=float), num_iters: int):
    i = kc.tid()
    for _ in range(num_iters):
        a[i] += 1.0


def run(n: int | None = None, device: str = "cpu", verbose: bool = True) -> float:
    # `a[i] += 1.0` is an atomic add (as in Warp): a compare-and-swap loop on x86, so the
    # CPU default is smaller than the GPU one.
    n = n or (1024 * 1024 if device.startswith("cuda") else 128 * 1024)
    a = kc.zeros(n, dtype=float, device=device)
    kc.load_module(device=device)  # compile first, so the report shows only the work
    with kc.ScopedTimer("inc_loop", cuda_filter=kc.TIMING_ALL, print=verbose,
                        report_func=None if verbose else (lambda results, indent: None)):
        for iters in (500, 1000, 1500):
            kc.launch(inc_loop, n, [a, iters], device=device)
        host = a.numpy()
    return float(host[0])


def main(argv: list[str] | None = None) -> int:
    args = parser("Activity timing of three kernel launches and a copy", 1).parse_args(argv)
    value = run(device=args.device)
    print(f"a[0] = {value:.0f} (expected 3000)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
