"""Mesh point and ray queries timed under Warp and under kernelc on the CPU, same program.

The program runs unchanged with `wp` bound to either library, each in a fresh process:
closest points with the three-ray sign (`mesh_query_point`), without a sign
(`mesh_query_point_no_sign`) and one +x ray (`mesh_query_ray`), from points inside the
sphere of Warp's example_tile_mcgp (4096 faces, its benchmark size). One kernelc thread
by default, to compare per thread with Warp's CPU backend; it reports how many results
(face and side) differ from Warp's (ties between faces at shared edges can).

Run: python benchmarks/mesh_queries.py [--repeat N] [--points N] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap

from _common import PROGRAM_HEAD, print_comparison, run_program

PROGRAM = PROGRAM_HEAD + textwrap.dedent("""
    n_points = N_POINTS

    @wp.kernel
    def closest_signed(m: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        q = wp.mesh_query_point(m, pts[i], 1.0e6)
        out[i] = q.sign * float(q.face + 1)

    @wp.kernel
    def closest(m: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        q = wp.mesh_query_point_no_sign(m, pts[i], 1.0e6)
        out[i] = float(q.face)

    @wp.kernel
    def ray_x(m: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        q = wp.mesh_query_ray(m, pts[i], wp.vec3(1.0, 0.0, 0.0), 1.0e6)
        side = 1.0
        if q.sign < 0.0:  # (the ray's sign is the hit's determinant)
            side = -1.0
        out[i] = side * float(q.face + 1)

    def sphere(lat=32, lon=64):  # example_tile_mcgp's UV sphere
        th = np.pi * np.arange(lat + 1) / lat
        ph = 2 * np.pi * np.arange(lon) / lon
        t, p = np.meshgrid(th, ph, indexing="ij")
        points = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], -1)
        i, j = np.meshgrid(np.arange(lat), np.arange(lon), indexing="ij")
        v0, v1 = i * lon + j, i * lon + (j + 1) % lon
        v2, v3 = v0 + lon, v1 + lon
        faces = np.stack([v0, v2, v1, v1, v2, v3], -1)
        return points.reshape(-1, 3).astype(np.float32), faces.ravel().astype(np.int32)

    points, faces = sphere()
    mesh = wp.Mesh(points=wp.array(points, dtype=wp.vec3), indices=wp.array(faces, dtype=int))
    rng = np.random.default_rng(0)
    p = rng.uniform(-1, 1, (4 * n_points, 3)).astype(np.float32)
    p = p[np.linalg.norm(p, axis=1) < 1.0][:n_points]
    pts = wp.array(p, dtype=wp.vec3)
    out = wp.zeros(len(p), dtype=float)
    result = {{}}
    for name, kernel in (("closest + sign", closest_signed), ("closest", closest),
                         ("ray +x", ray_x)):
        wp.launch(kernel, dim=len(p), inputs=[mesh.id, pts, out])  # compiles
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            wp.launch(kernel, dim=len(p), inputs=[mesh.id, pts, out])
            wp.synchronize()
            times.append(time.perf_counter() - t0)
        result[name] = sorted(times)[len(times) // 2]
        result[name + " check"] = out.numpy().tolist()
    print(json.dumps(result))
""")

CASES = ("closest + sign", "closest", "ray +x")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=9, help="timed launches per case")
    p.add_argument("--points", type=int, default=50000, help="query points")
    p.add_argument("--threads", type=int, default=1, help="kernelc worker threads")
    args = p.parse_args()
    os.environ["KERNELC_NUM_THREADS"] = str(args.threads)
    program = PROGRAM.replace("N_POINTS", str(args.points))
    results = {m: run_program(program, m, args.repeat, "mesh_query_program.py")
               for m in ("warp", "kernelc")}
    print_comparison(results, CASES, args.threads)
    if results["warp"] and results["kernelc"]:
        import numpy as np

        for case in CASES:
            a = np.array(results["warp"][f"{case} check"])
            b = np.array(results["kernelc"][f"{case} check"])
            print(f"{case}: {int((a != b).sum())} of {len(a)} results differ from Warp's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
