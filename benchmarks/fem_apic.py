"""Warp's `example_apic_fluid.py` (a particle-in-cell fluid on a sparse grid rebuilt at
every step), or with `--environments N` its `example_apic_fluid_multi_env.py` (N fluids in
one grid of environments, batched pressure solves), timed under Warp and under kernelc
(`import kernelc as wp`) on the CPU.

Each system runs the example from Warp's source in a fresh process; the first step
(which compiles) is timed on its own, then the median of the next steps. Warp builds grids
of environments on CUDA devices only; its CPU code runs them once that check is lifted
(as the multi-environment example's own CUDA check is, for both systems).

Run: python benchmarks/fem_apic.py [--voxel-size 0.5] [--steps 10] [--environments 4]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap

from _common import ROOT, phase_rows, print_table

_DRIVER = textwrap.dedent("""
    import importlib, importlib.util, json, sys, tempfile, time
    sys.path.insert(0, {root!r})
    from tests.fem_harness import load_kernelc_examples
    module, voxel_size, steps = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    environments = int(sys.argv[4])
    check, lifted = "        if not device.is_cuda:", "        if False:"
    stem = "example_apic_fluid" + ("_multi_env" if environments else "")
    if module == "warp":
        import pathlib
        import warp as wp
        wp.config.quiet = True
        if environments:
            import warp._src.fem.geometry.nanogrid as ng
            def on_any_device(points, envs, count, device):
                device = points.device if device is None else wp.get_device(device)
                points = ng._nanogrid_rebuild_points_array(points, device)
                envs = ng._nanogrid_optional_int_array(envs, points.shape[0], device, "envs")
                return points, envs, int(count), device
            ng._normalize_environment_voxels = on_any_device
            folder = tempfile.mkdtemp()
            spec = importlib.util.find_spec("warp.examples.fem." + stem)
            text = pathlib.Path(spec.origin).read_text().replace(check, lifted)
            pathlib.Path(folder, "bench_multi_env.py").write_text(text)
            sys.path.insert(0, folder)
            example_module = importlib.import_module("bench_multi_env")
        else:
            example_module = importlib.import_module("warp.examples.fem." + stem)
    else:
        import kernelc as wp
        names = {{"utils": "bench_fem_utils", "example_apic_fluid": "bench_apic"}}
        if environments:
            names[stem] = "bench_multi_env"
        loaded = load_kernelc_examples(tempfile.mkdtemp(), names, {{check: lifted}})
        example_module = loaded[list(names.values())[-1]]
    wp.set_module_options({{"enable_backward": False}})
    if environments:
        example = example_module.Example(quiet=True, stage_path=None, voxel_size=voxel_size,
                                         env_count=environments)
    else:
        example = example_module.Example(quiet=True, stage_path=None, voxel_size=voxel_size,
                                          use_cuda_graph=False)
    times = []
    for _ in range(steps + 1):
        t0 = time.perf_counter()
        example.step()
        times.append(time.perf_counter() - t0)
    print(json.dumps({{"first": times[0], "steps": times[1:],
                      "particles": example.state_0.particle_q.shape[0]}}))
""")


def run(module: str, voxel_size: float, steps: int, environments: int) -> dict | None:
    proc = subprocess.run([sys.executable, "-c", _DRIVER.format(root=str(ROOT)), module,
                           str(voxel_size), str(steps), str(environments)],
                          capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        print(f"{module} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--voxel-size", type=float, default=0.5)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--environments", type=int, default=0,
                   help="run example_apic_fluid_multi_env with this many environments")
    args = p.parse_args()
    results = {m: run(m, args.voxel_size, args.steps, args.environments)
               for m in ("warp", "kernelc")}
    particles = next((r["particles"] for r in results.values() if r), "?")
    name = (f"example_apic_fluid_multi_env, {args.environments} environments"
            if args.environments else "example_apic_fluid")
    rows = [(f"{name}, voxel {args.voxel_size} ({particles} particles)",
             "warp 1.19 cpu", "kernelc", "speed-up")]
    rows += phase_rows(results, [("first step (compiles)", "first"),
                                 ("median step", "steps")])
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
