"""A native worker pool for CPU launches: a few microseconds per launch instead of ~50.

Python's executor costs a future, a lock and a thread wake-up per block, which dominates
launches of a few microseconds of work (a 128x128 stencil). This pool is a small C library
built once per machine by the system's C compiler and kept in the kernel cache. One ctypes
call (which releases the GIL) hands the kernel's address and thread range to persistent
workers; they claim blocks with one atomic compare-and-swap each, spin briefly between
launches so that back-to-back launches find them awake, then sleep on a condition variable.
The calling thread works too and returns when every block has run.

Without a C compiler (or while the library is being built on its background thread) the
Python executor runs launches instead; results are the same either way.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from pathlib import Path

POOL_SOURCE = r"""
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

typedef void (*kc_kernel_fn)(void *args, int64_t start, int64_t end);

/* A block ticket is (generation << 32) | next block: a claim succeeds only while the
   launch that the claimer saw is still the current one. */
static atomic_uint_fast64_t ticket;
static atomic_uint_fast64_t generation;
static atomic_int_fast64_t done_blocks;
static atomic_int sleeping;
static kc_kernel_fn job_fn;
static void *job_args;
static int64_t job_n, job_step, job_blocks;
static uint64_t last_generation;
static int spin_limit = 4000;
static int workers_started;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Runs blocks of launch `gen` until none is left; returns how many it ran. */
static int64_t run_blocks(uint64_t gen) {
    int64_t ran = 0;
    for (;;) {
        uint64_t t = atomic_load_explicit(&ticket, memory_order_acquire);
        if ((t >> 32) != (gen & 0xffffffffu)) break;
        int64_t block = (int64_t)(t & 0xffffffffu);
        kc_kernel_fn fn = job_fn;
        void *args = job_args;
        int64_t n = job_n, step = job_step, blocks = job_blocks;
        if (block >= blocks) break;
        if (!atomic_compare_exchange_weak_explicit(&ticket, &t, t + 1, memory_order_acq_rel,
                                                   memory_order_relaxed))
            continue;
        int64_t start = block * step, end = start + step < n ? start + step : n;
        fn(args, start, end);
        ran++;
        atomic_fetch_add_explicit(&done_blocks, 1, memory_order_acq_rel);
    }
    return ran;
}

static void *worker_main(void *unused) {
    (void)unused;
    uint64_t seen = atomic_load(&generation);
    for (;;) {
        uint64_t gen;
        int spins = 0;
        while ((gen = atomic_load_explicit(&generation, memory_order_acquire)) == seen) {
            if (++spins < spin_limit) {
                relax();
                continue;
            }
            pthread_mutex_lock(&lock);
            atomic_fetch_add(&sleeping, 1);
            while ((gen = atomic_load(&generation)) == seen) pthread_cond_wait(&wake, &lock);
            atomic_fetch_sub(&sleeping, 1);
            pthread_mutex_unlock(&lock);
            break;
        }
        seen = gen;
        run_blocks(gen);
    }
    return 0;
}

int kc_pool_start(int workers, int spins) {
    if (spins > 0) spin_limit = spins;
    while (workers_started < workers) {
        pthread_t thread;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int err = pthread_create(&thread, &attr, worker_main, 0);
        pthread_attr_destroy(&attr);
        if (err) return workers_started;
        workers_started++;
    }
    return workers_started;
}

/* Runs fn(args, start, end) over [0, n) in `blocks` blocks; the caller works too. */
void kc_pool_run(kc_kernel_fn fn, void *args, int64_t n, int64_t blocks) {
    uint64_t gen = ++last_generation;
    job_fn = fn;
    job_args = args;
    job_n = n;
    job_blocks = blocks;
    job_step = (n + blocks - 1) / blocks;
    atomic_store_explicit(&done_blocks, 0, memory_order_relaxed);
    atomic_store(&ticket, (gen & 0xffffffffu) << 32);
    atomic_store(&generation, gen);
    if (atomic_load(&sleeping) > 0) {
        pthread_mutex_lock(&lock);
        pthread_cond_broadcast(&wake);
        pthread_mutex_unlock(&lock);
    }
    run_blocks(gen);
    int spins = 0;
    while (atomic_load_explicit(&done_blocks, memory_order_acquire) < blocks) {
        if (++spins < 1024) relax(); else sched_yield();
    }
}

/* In a forked child the workers are gone: forget them (the child starts its own). */
void kc_pool_forget(void) {
    workers_started = 0;
    atomic_store(&sleeping, 0);
    pthread_mutex_t fresh_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_wake = PTHREAD_COND_INITIALIZER;
    lock = fresh_lock;
    wake = fresh_wake;
}
"""

_BUILD_TIMEOUT_S = 120


def library_path(cache_dir: str) -> Path:
    digest = hashlib.sha256(POOL_SOURCE.encode()).hexdigest()[:16]
    return Path(cache_dir) / f"pool-{digest}.so"


def build_library(compiler: str, out: Path) -> None:
    """Compiles the pool into `out`; raises OSError on failure."""
    import subprocess

    src = out.with_suffix(".c")
    src.write_text(POOL_SOURCE)
    command = [compiler, "-O2", "-shared", "-fPIC", "-pthread", "-o", str(out), str(src)]
    try:
        subprocess.run(command, check=True, stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=_BUILD_TIMEOUT_S)
    except subprocess.SubprocessError as err:
        raise OSError(f"building the worker pool failed: {err}") from None


def store_library(built: Path, path: Path) -> None:
    """Copies a built library into the cache, atomically (temp file, then rename)."""
    import shutil

    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_suffix(f".{os.getpid()}.tmp")
    shutil.copyfile(built, staged)
    os.replace(staged, path)


class NativePool:
    """The C pool's entry points, loaded from its shared library."""

    def __init__(self, path: Path, workers: int) -> None:
        lib = ctypes.CDLL(str(path))
        lib.kc_pool_start.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.kc_pool_start.restype = ctypes.c_int
        lib.kc_pool_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                    ctypes.c_int64]
        lib.kc_pool_run.restype = None
        lib.kc_pool_forget.argtypes = []
        self._lib = lib
        self.workers = workers
        if lib.kc_pool_start(workers, 0) != workers:
            raise OSError("could not start the worker threads")
        self.run = lib.kc_pool_run  # (kernel address, args pointer, n, blocks)

    def forget_workers(self) -> None:
        """After fork: the child has none of the parent's threads; start new ones."""
        self._lib.kc_pool_forget()
        self._lib.kc_pool_start(self.workers, 0)


class NativePoolLoader:
    """Finds or builds the pool library once, on a background thread."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.pool: NativePool | None = None
        self._started = False
        self._done = threading.Event()

    def request(self, cache_dir: str | None, compiler: str | None) -> None:
        """Starts loading (and if needed building) the library; returns at once."""
        if self._started:
            return
        self._started = True
        if compiler is None:
            self._done.set()
            return
        threading.Thread(target=self._load, args=(cache_dir, compiler), daemon=True,
                         name="kernelc-pool-build").start()

    def _load(self, cache_dir: str | None, compiler: str) -> None:
        import tempfile

        try:
            path = library_path(cache_dir) if cache_dir else None
            if path is not None and path.exists():
                try:
                    self.pool = NativePool(path, self.workers)
                    return
                except OSError:
                    pass  # a damaged entry: build a new one
            # Built and loaded from a private folder, so a cache folder that is cleared or
            # replaced meanwhile (tests do that) cannot break the load; dlopen keeps the
            # mapping after the folder is gone.
            with tempfile.TemporaryDirectory(prefix="kernelc-pool-") as tmp:
                built = Path(tmp) / "pool.so"
                build_library(compiler, built)
                self.pool = NativePool(built, self.workers)
                if path is not None:
                    try:
                        store_library(built, path)
                    except OSError:
                        pass  # the next process builds its own
        except OSError:
            self.pool = None  # the Python executor keeps running launches
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> NativePool | None:
        """The pool once loading has finished (None without one)."""
        self._done.wait(timeout)
        return self.pool
