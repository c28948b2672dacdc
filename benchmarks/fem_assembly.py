"""Finite-element assembly: one program run with warp.fem and with kernelc.fem.

    python benchmarks/fem_assembly.py [--res N] [--degree P] [--repeat R]

A diffusion matrix and a load vector on a `Grid2D` of N x N cells with the degree-P
polynomial space, written once with `wp` as the library, run in a fresh process under
Warp (CPU device), kernelc with SIMD lanes off (`KERNELC_SIMD=off`) and kernelc with
"auto". Reported: the median time of the bilinear form's integration kernel alone (from
`ScopedTimer` kernel activity), of the whole `integrate` call (kernels plus building the
sparse matrix), and the same two for the linear form. Warp times kernel activity on CUDA
devices only, so its kernel columns are empty.
"""

from __future__ import annotations

import argparse
import os

from _common import PROGRAM_HEAD, print_table, run_program

PROGRAM = PROGRAM_HEAD + """
fem = importlib.import_module(sys.argv[1] + ".fem")
res, degree = {res}, {degree}


@fem.integrand
def diffusion(s: fem.Sample, u: fem.Field, v: fem.Field, nu: float):
    return nu * wp.dot(fem.grad(u, s), fem.grad(v, s))


@fem.integrand
def load(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    x = domain(s)
    return wp.sin(x[0]) * wp.cos(x[1]) * v(s)


geo = fem.Grid2D(res=wp.vec2i(res))
space = fem.make_polynomial_space(geo, degree=degree)
cells = fem.Cells(geometry=geo)
u = fem.make_trial(space=space, domain=cells)
v = fem.make_test(space=space, domain=cells)


def bilinear():
    return fem.integrate(diffusion, fields={{"u": u, "v": v}}, values={{"nu": 1.0}})


def linear():
    return fem.integrate(load, fields={{"v": v}})


bilinear(); linear()  # compiles
kernel_ms, whole, vector_kernel, vector = [], [], [], []


def timed(form, kernel_name, total, kernel_times):
    with wp.ScopedTimer(kernel_name, print=False, cuda_filter=wp.TIMING_KERNEL,
                        synchronize=True) as timer:
        form()
    total.append(timer.elapsed)
    # (Warp times kernel activity on CUDA devices only: no results on the CPU)
    found = [r.elapsed for r in timer.timing_results if kernel_name in r.name]
    if found:
        kernel_times.append(sum(found))


for _ in range(repeat):
    timed(bilinear, "integrate_bilinear", whole, kernel_ms)
    timed(linear, "integrate_linear", vector, vector_kernel)


def median(times):
    return float(np.median(times)) if times else None


print(json.dumps({{"kernel": median(kernel_ms), "bilinear": median(whole),
                  "vector_kernel": median(vector_kernel), "linear": median(vector)}}))
"""

SYSTEMS = (("warp 1.19 (cpu)", "warp", None), ("kernelc, lanes off", "kernelc", "off"),
           ("kernelc, lanes auto", "kernelc", "auto"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--res", type=int, default=256)
    p.add_argument("--degree", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    program = PROGRAM.replace("{res}", str(args.res)).replace("{degree}", str(args.degree))
    rows = [("system", "bilinear kernel", "bilinear integrate", "linear kernel",
             "linear integrate")]
    for label, module, simd in SYSTEMS:
        previous = os.environ.get("KERNELC_SIMD")
        if simd is not None:
            os.environ["KERNELC_SIMD"] = simd
        try:
            found = run_program(program, module, args.repeat, "fem_assembly_program.py")
        finally:
            if previous is None:
                os.environ.pop("KERNELC_SIMD", None)
            else:
                os.environ["KERNELC_SIMD"] = previous
        if found is None:
            rows.append((label, "failed", "", "", ""))
            continue
        rows.append((label, *(f"{found[k]:.1f} ms" if found[k] is not None else "n/a"
                               for k in ("kernel", "bilinear", "vector_kernel", "linear"))))
    print(f"Grid2D {args.res}x{args.res}, degree {args.degree}, median of {args.repeat}")
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
