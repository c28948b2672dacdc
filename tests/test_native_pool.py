"""The native worker pool: every block runs exactly once, from any thread, after fork."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
from kernelc.config import config
from kernelc.runtime.cpu import ThreadPool, cpu_state
from kernelc.runtime.native import find_compiler


@kc.kernel
def k_count(hits: kc.array(dtype=kc.int32), tids: kc.array(dtype=kc.int32)):
    i = kc.tid()
    kc.atomic_add(hits, i % 97, 1)
    tids[i] = tids[i] + i


def native_pool():
    if find_compiler() is None:
        pytest.skip("no C compiler to build the native pool")
    pool = cpu_state(config.num_threads).pool
    if pool.num_threads < 2:
        pytest.skip("one CPU thread: launches never use the pool")
    native = pool.native(wait=True)
    assert native is not None, "the native pool failed to build or load"
    return native


def launch_and_check(n: int, repeats: int = 3) -> None:
    hits = kc.zeros(97, dtype=kc.int32)
    tids = kc.zeros(n, dtype=kc.int32)
    for _ in range(repeats):
        kc.launch(k_count, n, [hits, tids])
    expected = np.bincount(np.arange(n) % 97, minlength=97) * repeats
    np.testing.assert_array_equal(hits.numpy(), expected)
    np.testing.assert_array_equal(tids.numpy(), np.arange(n) * repeats)


@pytest.mark.parametrize("n", [16385, 100_003, 1 << 20])
def test_every_thread_index_runs_once(n):
    native_pool()
    launch_and_check(n)


def test_many_short_launches_in_a_row():
    native_pool()
    launch_and_check(20_000, repeats=300)


def test_launches_from_several_python_threads():
    native_pool()
    errors = []

    def work():
        try:
            launch_and_check(50_000, repeats=20)
        except Exception as err:  # reported below, on the main thread
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def fork_check() -> int:
    """Launches, forks, launches in the child (on fresh workers) and again in the parent;
    0 when every launch was right."""
    native_pool()
    launch_and_check(50_000)
    pid = os.fork()
    if pid == 0:  # the child: launch on fresh workers, report through the exit code
        try:
            launch_and_check(50_000, repeats=5)
            code = 0
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    launch_and_check(50_000)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_gets_its_own_workers():
    # In a fresh interpreter: by now this one may run other libraries' threads (JAX's),
    # which a fork cannot take along safely.
    root = Path(__file__).resolve().parents[1]
    code = "import sys; from tests.test_native_pool import fork_check; sys.exit(fork_check())"
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr


def test_python_callables_use_the_executor():
    pool = ThreadPool(3)
    seen = []
    lock = threading.Lock()

    def block(args, start, end):
        with lock:
            seen.append((start, end))

    pool.run(block, 0, 1000, 4)
    covered = sorted(seen)
    assert covered[0][0] == 0 and covered[-1][1] == 1000
    assert all(a[1] == b[0] for a, b in zip(covered, covered[1:]))
