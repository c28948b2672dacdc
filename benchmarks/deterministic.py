"""Order-dependent atomics under Warp's CPU backend and kernelc's deterministic modes.

The program below runs with `wp` bound to Warp (whose CPU backend runs threads one after
another, so it is deterministic anyway) and to kernelc, each in a fresh process. kernelc
runs every case in its three `DeterministicMode`s; each case is timed after one warm-up
launch (median of the rest), and the outputs' bytes are hashed so that the table can say
whose results match Warp's bit for bit and which repeat from run to run.

Run: python benchmarks/deterministic.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import textwrap

from _common import PROGRAM_HEAD, print_table, run_program

PROGRAM = PROGRAM_HEAD + textwrap.dedent("""
    import hashlib

    @wp.kernel
    def scatter(cells: wp.array(dtype=wp.int32), v: wp.array(dtype=float),
                out: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(out, cells[i], v[i])

    @wp.kernel
    def compact(v: wp.array(dtype=float), count: wp.array(dtype=wp.int32),
                out: wp.array(dtype=float)):
        i = wp.tid()
        if v[i] > 0.0:
            out[wp.atomic_add(count, 0, 1)] = v[i]

    rng = np.random.default_rng(7)
    n = 4_000_000
    v = wp.array(rng.normal(size=n).astype(np.float32), dtype=float)
    few = wp.array(rng.integers(0, 16, n).astype(np.int32), dtype=wp.int32)
    many = wp.array(rng.integers(0, 1_000_000, n).astype(np.int32), dtype=wp.int32)
    bins, grid = wp.zeros(16, dtype=float), wp.zeros(1_000_000, dtype=float)
    count, kept = wp.zeros(1, dtype=wp.int32), wp.zeros(n, dtype=float)
    cases = {{
        "scatter 4M into 16 bins": (lambda: wp.launch(scatter, n, [few, v, bins]), [bins]),
        "scatter 4M into 1M cells": (lambda: wp.launch(scatter, n, [many, v, grid]), [grid]),
        "compact 4M (slot counter)": (lambda: wp.launch(compact, n, [v, count, kept]),
                                      [count, kept]),
    }}
    modes = ["warp"] if sys.argv[1] == "warp" else [m.name for m in wp.DeterministicMode]
    out = {{}}
    for mode in modes:
        if mode != "warp":
            wp.config.deterministic = wp.DeterministicMode[mode]
        for case, (fn, outputs) in cases.items():
            times, digests = [], set()
            for _ in range(repeat + 1):
                for a in outputs:
                    a.zero_()
                t0 = time.perf_counter()
                fn()
                wp.synchronize()
                times.append(time.perf_counter() - t0)
                digests.add(hashlib.sha1(b"".join(a.numpy().tobytes() for a in outputs))
                            .hexdigest())
            out[f"{{mode}} {{case}}"] = (sorted(times[1:])[repeat // 2], sorted(digests))
    print(json.dumps(out))
""")

CASES = ("scatter 4M into 16 bins", "scatter 4M into 1M cells", "compact 4M (slot counter)")
MODES = ("NOT_GUARANTEED", "RUN_TO_RUN", "GPU_TO_GPU")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7, help="timed launches per case")
    args = p.parse_args()
    warp = run_program(PROGRAM, "warp", args.repeat, "deterministic_program.py")
    kc = run_program(PROGRAM, "kernelc", args.repeat, "deterministic_program.py")
    if kc is None:
        return 1
    rows = [("case (median)", "warp", *(f"kernelc {m}" for m in MODES))]
    for case in CASES:
        want = warp and warp[f"warp {case}"][1]
        cells = []
        for mode in MODES:
            t, digests = kc[f"{mode} {case}"]
            note = "varies" if len(digests) > 1 else ("= Warp" if digests == want else "repeats")
            cells.append(f"{t * 1e3:.2f} ms ({note})")
        rows.append((case, f"{warp[f'warp {case}'][0] * 1e3:.2f} ms" if warp else "-", *cells))
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
