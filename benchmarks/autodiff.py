"""Forward and backward (Tape) passes timed under Warp and under kernelc, same program.

The program below runs unchanged with `wp` bound to either library, each in a fresh
process; every case is timed after one warm-up pass (which compiles), and the median of
the next passes is reported, with the gradient checked against the analytic one.

Run: python benchmarks/autodiff.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import textwrap

from _common import PROGRAM_HEAD, print_table, run_program

PROGRAM = PROGRAM_HEAD + textwrap.dedent("""

    @wp.kernel
    def smooth(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = wp.sin(x[i]) * x[i] + wp.sqrt(x[i] * x[i] + 1.0)

    @wp.kernel
    def energy(x: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
        i = wp.tid()
        e = float(0.0)
        for j in range(x.shape[0]):
            d = x[i] - x[j]
            e += 1.0 / (wp.dot(d, d) + 0.01)
        wp.atomic_add(loss, 0, e)

    @wp.kernel
    def rigid(pos: wp.array(dtype=wp.vec3), rot: wp.array(dtype=wp.quat),
              x: wp.array(dtype=wp.vec3), y: wp.array(dtype=float)):
        i = wp.tid()  # every thread reads the one pose: its gradient is one shared sum
        p = wp.transform_point(wp.transform(pos[0], rot[0]), x[i])
        y[i] = wp.dot(p, p)

    def run(fwd, seed, grads):
        times = []
        for _ in range(repeat + 1):
            for g in grads:
                g.zero_()
            t0 = time.perf_counter()
            tape = wp.Tape()
            with tape:
                fwd()
            t1 = time.perf_counter()
            tape.backward(grads=seed)
            wp.synchronize()
            t2 = time.perf_counter()
            times.append((t1 - t0, t2 - t1))
        times = sorted(times[1:], key=lambda t: t[1])
        return sorted(t[0] for t in times)[len(times) // 2], times[len(times) // 2][1]

    rng = np.random.default_rng(1)
    out = {{}}
    n = 10_000_000
    xn = rng.uniform(0.5, 1.5, n).astype(np.float32)
    x = wp.array(xn, dtype=float, requires_grad=True)
    y = wp.zeros(n, dtype=float, requires_grad=True)
    ones = wp.array(np.ones(n, np.float32), dtype=float)
    out["smooth 10M"] = run(lambda: wp.launch(smooth, n, [x, y]), {{y: ones}}, [x.grad])
    ref = np.cos(xn) * xn + np.sin(xn) + xn / np.sqrt(xn * xn + 1)
    out["smooth 10M err"] = float(np.abs(x.grad.numpy() - ref).max())

    m = 4096
    p = wp.array(rng.uniform(0, 1, (m, 3)).astype(np.float32), dtype=wp.vec3,
                 requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    seed = wp.array(np.ones(1, np.float32), dtype=float)
    out["pair energy 4K"] = run(lambda: (loss.zero_(), wp.launch(energy, m, [p, loss])),
                                {{loss: seed}}, [p.grad])
    out["pair energy grad"] = p.grad.numpy()[:64].tolist()

    k = 1_000_000
    pos = wp.array(np.array([[0.1, 0.2, 0.3]], np.float32), dtype=wp.vec3, requires_grad=True)
    rot = wp.array(np.array([[0.1, 0.2, 0.3, 0.927]], np.float32), dtype=wp.quat,
                   requires_grad=True)
    pts = wp.array(rng.uniform(-1, 1, (k, 3)).astype(np.float32), dtype=wp.vec3)
    dist = wp.zeros(k, dtype=float, requires_grad=True)
    ones_k = wp.array(np.ones(k, np.float32), dtype=float)
    out["pose gradient 1M"] = run(lambda: wp.launch(rigid, k, [pos, rot, pts, dist]),
                                  {{dist: ones_k}}, [pos.grad, rot.grad])
    out["pose grad"] = [*pos.grad.numpy()[0].tolist(), *rot.grad.numpy()[0].tolist()]
    print(json.dumps(out))
""")


def run(module: str, repeat: int) -> dict | None:
    return run_program(PROGRAM, module, repeat, "autodiff_program.py")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5, help="timed passes per case")
    args = p.parse_args()
    results = {m: run(m, args.repeat) for m in ("warp", "kernelc")}
    rows = [("case (median)", "warp fwd", "warp bwd", "kernelc fwd", "kernelc bwd",
             "bwd speed-up")]
    for case in ("smooth 10M", "pair energy 4K", "pose gradient 1M"):
        w, k = (results[m] and results[m][case] for m in ("warp", "kernelc"))
        cells = [f"{t * 1e3:.1f} ms" for t in (*(w or (0, 0)), *(k or (0, 0)))]
        rows.append((case, *cells, f"{w[1] / k[1]:.1f}x" if w and k else ""))
    print_table(rows)
    if results["kernelc"]:
        print(f"max |grad - analytic| (smooth): {results['kernelc']['smooth 10M err']:.2e}")
    if results["warp"] and results["kernelc"]:
        import numpy as np

        a = np.array(results["warp"]["pair energy grad"])
        b = np.array(results["kernelc"]["pair energy grad"])
        print(f"pair energy: max relative gradient difference to Warp "
              f"{np.abs(a - b).max() / np.abs(a).max():.2e}")
        a = np.array(results["warp"]["pose grad"])
        b = np.array(results["kernelc"]["pose grad"])
        print(f"pose gradient: max relative difference to Warp "
              f"{np.abs(a - b).max() / np.abs(a).max():.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
