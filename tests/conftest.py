"""Shared fixtures of the conformance suite: a private kernel cache, seeded inputs, poison."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

os.environ.setdefault("KERNELC_VERIFY_IR", "1")  # the IR verifier runs after every pass
# Tests (and the interpreters they start) default to the CPU, also on a machine with a GPU;
# KERNELC_DEVICE=cuda:0 runs them with the GPU as the default device instead.
os.environ.setdefault("KERNELC_DEVICE", "cpu")
# JAX on a GPU takes most of its memory up front; test workers share the GPU.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import kernelc as kc  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def kernel_cache_dir(tmp_path_factory):
    """Every test session compiles into its own, initially empty, kernel cache."""
    path = tmp_path_factory.mktemp("kernel_cache")
    previous = kc.config.kernel_cache_dir
    kc.config.kernel_cache_dir = str(path)
    yield path
    kc.config.kernel_cache_dir = previous


@pytest.fixture
def jax_on_the_cpu(request):
    """New JAX arrays on the CPU (JAX prefers a GPU when it has one), as the suite's CPU
    tests expect; `cuda`-marked tests keep JAX's choice."""
    try:
        import jax
    except ImportError:
        jax = None
    if jax is None or request.node.get_closest_marker("cuda") is not None or \
            os.environ.get("KERNELC_DEVICE") != "cpu":
        yield
        return
    with jax.default_device(jax.devices("cpu")[0]):
        yield


@pytest.fixture
def rng():
    return np.random.default_rng(20261101)


@pytest.fixture
def debug_mode():
    """Runs the test with bounds checks and asserts compiled in."""
    previous = kc.config.mode
    kc.config.mode = "debug"
    yield
    kc.config.mode = previous


def poisoned(shape, dtype) -> kc.array:
    """An output array filled with NaN (floats) or a sentinel (ints) so unwritten
    elements cannot pass for results."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        data = np.full(shape, np.nan, dtype=dtype)
    elif dtype.kind == "b":
        data = np.ones(shape, dtype=dtype)
    else:
        data = np.full(shape, 0x5A, dtype=dtype)
        if dtype.kind == "i":
            data[...] = np.iinfo(dtype).min + 3
    return kc.array(data, dtype=kc.types.from_numpy_dtype(dtype))


def nonzero(rng, n, dtype, low=-4.0, high=4.0):
    """Random values in [low, high) of `dtype`, none of them zero (or near it)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        x = rng.uniform(low, high, n)
        x[np.abs(x) < 0.05] = 0.5
        return x.astype(dtype)
    x = rng.integers(int(low), int(high), n)
    x[x == 0] = 1
    return x.astype(dtype)


def kernel_in_file(tmp_path, name: str, params: str, body: str, prelude: str = ""):
    """The kernel `k(params)` whose body is `body`, written to `tmp_path/<name>.py` after
    `prelude` (imports, globals; one line each) and imported from there (kernels need a
    source file; errors then name it). The body is on line 6 plus the prelude's lines."""
    import importlib.util

    path = tmp_path / f"{name}.py"
    head = f"import kernelc as kc\n{prelude}\n" if prelude else "import kernelc as kc\n"
    path.write_text(f"{head}\n\n@kc.kernel\ndef k({params}):\n    {body}\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.k


def assert_compile_error_at(kernel, at: str, message: str) -> None:
    """Compiling `kernel` raises a KernelError naming the file, the line marked `# E` in its
    source and the column where `at` starts on it, with a message matching `message`."""
    import inspect
    import re

    with pytest.raises(kc.KernelError) as info:
        kc.compile(kernel)
    text = str(info.value)
    lines, first = inspect.getsourcelines(kernel.func)
    offset = next(k for k, line in enumerate(lines) if "# E" in line)
    where = f"{inspect.getsourcefile(kernel.func)}:{first + offset}:{lines[offset].index(at) + 1}:"
    assert where in text, text
    assert re.search(message, text), text


def warp_available() -> bool:
    try:
        import warp  # noqa: F401
    except Exception:
        return False
    return True


def run_python(code: str, env: dict | None = None, cwd=None, timeout: int = 120):
    """Runs `code` in a fresh interpreter; returns the CompletedProcess."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=full_env, cwd=cwd, timeout=timeout)


def run_warp(script: str, tmp_path, **arrays) -> dict:
    """Runs a Warp program (`script`, reading `inputs` and filling `results`) in a
    subprocess and returns its results; skips the test when Warp is not installed."""
    if not warp_available():
        pytest.skip("warp-lang is not installed")
    inp, out = tmp_path / "warp_in.npz", tmp_path / "warp_out.npz"
    np.savez(inp, **arrays)
    prologue = f"""
import numpy as np
import warp as wp
wp.config.quiet = True
wp.init()
inputs = dict(np.load({str(inp)!r}))
results = {{}}
"""
    epilogue = f"\nnp.savez({str(out)!r}, **results)\n"
    path = tmp_path / "warp_program.py"  # Warp reads kernel source from a file
    path.write_text(prologue + textwrap.dedent(script) + epilogue)
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(np.load(out))
