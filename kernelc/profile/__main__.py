"""`python -m kernelc.profile [options] script.py [args ...]` (or `-m module [args ...]`)

Runs `script.py` (with `args` as its command line) with kernel timing on, then prints per
kernel: its share of the kernel time, launches, achieved GFLOP/s and GB/s, arithmetic
intensity and its efficiency against the device's measured roofline. FLOP and byte
counts come from the compiler's IR (unknown for kernels with loops whose trip count the
compiler cannot see).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import time
import traceback


def main(argv: list[str] | None = None) -> int:
    """Runs the profiler's command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m kernelc.profile",
        description="Run a script with kernelc's kernel timing on and report each kernel's "
                    "time and roofline efficiency.")
    parser.add_argument("--kernel", metavar="NAME",
                        help="report only the kernel of this name, with details")
    parser.add_argument("--top", type=int, metavar="N", help="report only the N slowest rows")
    parser.add_argument("--trace", metavar="FILE",
                        help="also write a Chrome trace (JSON, for ui.perfetto.dev)")
    parser.add_argument("--no-roofs", action="store_true",
                        help="do not measure the devices' roofs (no roofline column)")
    parser.add_argument("-m", dest="module", metavar="MODULE",
                        help="run a module as the script, as `python -m MODULE` does")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="script.py [args ...]",
                        help="the script to run and its arguments")
    options = parser.parse_args(argv)
    if options.module is None and not options.args:
        parser.error("give a script to run (or -m MODULE)")
    target = options.module or options.args[0]
    args = options.args if options.module else options.args[1:]

    import kernelc as kc
    from kernelc.profile.report import ProfileHistory, print_report
    from kernelc.runtime.context import get_runtime

    rt = get_runtime()
    history = ProfileHistory()
    with rt.lock:
        rt.history = history
    kc.set_flag(kc.JitFlag.KernelHistory, True)
    if options.trace:
        kc.trace_begin()
    started = time.perf_counter()
    status = _run_script(target, args, options.module is not None)
    wall = time.perf_counter() - started
    try:
        kc.synchronize()
    except Exception:  # noqa: BLE001  (a failed script may leave a device in error)
        pass
    kc.set_flag(kc.JitFlag.KernelHistory, False)
    history.settle()
    with rt.lock:  # the roofs' own launches below are not the script's
        rt.history = []
    if options.trace:
        print(f"trace written to {kc.trace_export(options.trace)}")
    roofs = {}
    if not options.no_roofs:
        from kernelc.timing.roofline import device_roofs

        for alias in sorted({t.device for t in history.totals.values()}):
            roofs[alias] = device_roofs(alias)
    sys.stdout.flush()
    print_report(history.totals.values(), roofs, wall, target, sys.stdout,
                 kernel=options.kernel, top=options.top)
    return status


def _run_script(target: str, args: list[str], is_module: bool) -> int:
    """Runs the script at path `target` (or the module `target`) as `__main__` with
    `args`; returns its exit status."""
    sys.argv = [target, *args]
    try:
        if is_module:
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as done:
        code = done.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except KeyboardInterrupt:
        print("interrupted: reporting what ran", file=sys.stderr)
        return 130
    except Exception:  # noqa: BLE001  (the script's error is shown; the report still prints)
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
