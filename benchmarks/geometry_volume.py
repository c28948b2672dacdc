"""Iso-surface extraction and sparse-volume sampling under Warp and under kernelc (CPU).

The same program runs with `wp` bound to either library, each in a fresh process:
marching cubes and surface nets on a 128^3 noisy torus field, sparse marching cubes of an
analytic torus SDF on a 257^3 grid (a kernel evaluates the SDF at the points asked for),
the swept volume of a box and a tetrahedron over 24 poses (voxel 0.03), and trilinear and
nearest samples of 1M random points in Warp's rocks.nvdb. Each case is timed after one warm-up
call (which compiles), then the median of the next calls; the outputs' sizes and checksums
are compared between the two libraries.

Run: python benchmarks/geometry_volume.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import textwrap

from _common import PROGRAM_HEAD, print_table, run_program

PROGRAM = PROGRAM_HEAD + textwrap.dedent("""
    import os
    import warp as _warp  # only to find Warp's example assets
    import importlib
    geometry = importlib.import_module(sys.argv[1] + ".geometry")

    @wp.kernel
    def sample(volume: wp.uint64, points: wp.array(dtype=wp.vec3),
               mode: int, out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = wp.volume_sample(volume, points[i], mode, dtype=float)

    @wp.kernel
    def torus_sdf(points: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        p = points[i]
        q = wp.sqrt(p[0] * p[0] + p[1] * p[1]) - 0.6
        out[i] = wp.sqrt(q * q + p[2] * p[2]) - 0.25

    def evaluate(points):
        values = wp.empty(points.shape[0], dtype=float, device=points.device)
        wp.launch(torus_sdf, points.shape[0], [points, values], device=points.device)
        return values

    def timed(fn):
        fn()
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            wp.synchronize()
            times.append(time.perf_counter() - t)
        return float(np.median(times))

    rng = np.random.default_rng(3)
    n = 128
    g = np.linspace(-1.0, 1.0, n)
    x, y, z = np.meshgrid(g, g, g, indexing="ij")
    torus = (np.sqrt(x * x + y * y) - 0.6) ** 2 + z * z - 0.25 ** 2
    field = wp.array((torus + 0.01 * rng.standard_normal(torus.shape)).astype(np.float32))
    out = {{}}
    for name, cls in (("marching cubes 128^3", geometry.IsoSurfaceMarchingCubes),
                      ("surface nets 128^3", geometry.IsoSurfaceNets)):
        iso = cls(n, n, n)
        out[name] = timed(lambda: iso.surface(field, 0.0))
        verts = iso.verts.numpy()
        out[name + " check"] = [len(verts), float(np.abs(verts).sum())]
    name = "sparse marching cubes 257^3"
    sparse = lambda: geometry.sparse_marching_cubes(evaluate, 257, 257, 257,
                                                    lower=(-1.0, -1.0, -1.0), upper=(1.0, 1.0, 1.0))
    out[name] = timed(sparse)
    verts = sparse()[0].numpy()
    out[name + " check"] = [len(verts), float(np.abs(verts).sum())]
    cube = np.array([[x, y, z] for z in (-.3, .3) for y in (-.2, .2) for x in (-.4, .4)], np.float32)
    cube_faces = np.array([0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6, 0, 1, 5, 0, 5, 4, 2, 6, 7, 2, 7, 3,
                           1, 3, 7, 1, 7, 5, 0, 4, 6, 0, 6, 2], np.int32)
    tet = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    tet_faces = np.array([0, 2, 1, 0, 3, 2, 0, 1, 3, 1, 2, 3], np.int32)
    meshes = [wp.Mesh(wp.array(p, dtype=wp.vec3), wp.array(f, dtype=wp.int32),
                      support_winding_number=True) for p, f in ((cube, cube_faces), (tet, tet_faces))]
    t = np.linspace(0.0, 1.0, 24)
    poses = np.zeros((2, 24, 7), np.float32)
    poses[0, :, 0], poses[0, :, 2] = t, 0.5 * t
    poses[0, :, 4], poses[0, :, 6] = np.sin(0.7 * t), np.cos(0.7 * t)
    poses[1, :, 1], poses[1, :, 6] = t, 1.0
    name = "swept volume 2 meshes x 24"
    swept = lambda: geometry.swept_volume_mesh(meshes, poses, voxel_size=0.03, threshold=0.03)
    out[name] = timed(swept)
    verts = swept()[0].numpy()
    out[name + " check"] = [len(verts), float(np.abs(verts).sum())]
    path = os.path.join(os.path.dirname(_warp.__file__), "examples", "assets", "rocks.nvdb")
    with open(path, "rb") as f:
        volume = wp.Volume.load_from_nvdb(f)
    lo, hi = np.array(volume.get_tiles().numpy().min(0)), np.array(volume.get_tiles().numpy().max(0))
    m = 1_000_000
    pts = wp.array(rng.uniform(lo, hi + 8, (m, 3)).astype(np.float32), dtype=wp.vec3)
    vals = wp.zeros(m, dtype=float)
    for name, mode in (("volume trilinear 1M", wp.Volume.LINEAR),
                       ("volume nearest 1M", wp.Volume.CLOSEST)):
        out[name] = timed(lambda: wp.launch(sample, m, [volume.id, pts, mode, vals]))
        out[name + " check"] = [m, float(vals.numpy().astype(np.float64).sum())]
    print(json.dumps(out))
""")

CASES = ("marching cubes 128^3", "surface nets 128^3", "sparse marching cubes 257^3",
         "swept volume 2 meshes x 24", "volume trilinear 1M",
         "volume nearest 1M")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=9, help="timed calls per case")
    args = p.parse_args()
    results = {m: run_program(PROGRAM, m, args.repeat, "geometry_volume_program.py")
               for m in ("warp", "kernelc")}
    rows = [("case", "warp", "kernelc", "speed-up", "same output")]
    for case in CASES:
        w, k = (results[m] and results[m][case] for m in ("warp", "kernelc"))
        same = ""
        if w and k:
            a, b = results["warp"][case + " check"], results["kernelc"][case + " check"]
            same = "yes" if a[0] == b[0] and abs(a[1] - b[1]) <= 1e-6 * abs(a[1]) else "no"
        rows.append((case, f"{w * 1e3:.1f} ms" if w else "", f"{k * 1e3:.1f} ms" if k else "",
                     f"{w / k:.1f}x" if w and k else "", same))
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
