"""`@kc.func_native`: its errors (pinned to their source positions), life without a C++
compiler, cached snippet libraries and redefinition."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import kernelc as kc
from kernelc.runtime import native_snippets
from kernelc.runtime.cpu import cpu_state
from tests.conftest import nonzero

needs_cxx = pytest.mark.skipif(native_snippets.find_cxx_compiler() is None,
                               reason="needs a C++ compiler")

PROGRAM = '''import kernelc as kc


@kc.struct
class Pair:
    a: float
    b: float


@kc.func_native("return x * x;")
def square(x: float) -> float: ...


@kc.func_native("return p.a;")
def first(p: Pair) -> float: ...


@kc.func_native("return undefined_name + x;")
def broken(x: float) -> float: ...


@kc.func_native("return Pair();")
def make(x: float) -> Pair: ...


@kc.kernel
def k_square(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = square(x[i])


@kc.kernel
def k_struct(y: kc.array(dtype=float)):
    y[0] = first(Pair())


@kc.kernel
def k_broken(y: kc.array(dtype=float)):
    y[0] = broken(1.0)


@kc.kernel
def k_make(y: kc.array(dtype=float)):
    y[0] = make(1.0).a


@kc.kernel
def k_plain(y: kc.array(dtype=float)):
    y[kc.tid()] = 2.0
'''


def _program(tmp_path, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(PROGRAM)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path.name


@needs_cxx
def test_differentiating_without_an_adjoint_snippet_raises(tmp_path):
    m, file = _program(tmp_path, "native_no_adj")
    x = kc.array(np.linspace(1, 2, 4, dtype=np.float32), requires_grad=True)
    y = kc.zeros(4, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(m.k_square, 4, inputs=[x, y])
    np.testing.assert_allclose(y.numpy(), x.numpy() ** 2)  # the forward pass works
    with pytest.raises(kc.KernelError, match="has no adj_snippet") as err:
        tape.backward(grads={y: kc.ones(4, dtype=float)})
    text = str(err.value)
    assert f"{file}:11:1" in text and "def square(x: float)" in text and "^~~" in text


def test_unsupported_types_raise_at_their_place(tmp_path):
    m, file = _program(tmp_path, "native_types")
    with pytest.raises(kc.KernelError, match="parameter 'p' has type") as err:
        kc.launch(m.k_struct, 1, inputs=[kc.zeros(1, dtype=float)])
    assert f"{file}:15:11" in str(err.value) and "^" in str(err.value)
    with pytest.raises(kc.KernelError, match="unsupported return type") as err:
        kc.launch(m.k_make, 1, inputs=[kc.zeros(1, dtype=float)])
    assert f"{file}:23:1" in str(err.value)


@needs_cxx
def test_a_snippet_that_does_not_compile_names_its_error(tmp_path):
    m, file = _program(tmp_path, "native_broken")
    with pytest.raises(kc.KernelError, match="C\\+\\+ compiler rejected") as err:
        kc.launch(m.k_broken, 1, inputs=[kc.zeros(1, dtype=float)])
    text = str(err.value)
    assert f"{file}:19:1" in text and "undefined_name" in text
    assert "native snippet of broken:1" in text  # the compiler's line, in the snippet


def test_without_a_cxx_compiler(tmp_path, monkeypatch):
    """A kernel calling a snippet says why it cannot run; other kernels are unaffected."""
    m, file = _program(tmp_path, "native_no_cxx")
    monkeypatch.setattr(native_snippets, "find_cxx_compiler", lambda: None)
    state = cpu_state(kc.config.num_threads)
    monkeypatch.setattr(state, "snippets", None)
    monkeypatch.setattr(kc.config, "cache_kernels", False)
    y = kc.zeros(4, dtype=float)
    with pytest.raises(kc.KernelError, match="needs a C\\+\\+ compiler") as err:
        kc.launch(m.k_square, 4, inputs=[kc.zeros(4, dtype=float), y])
    assert f"{file}:11:1" in str(err.value)
    kc.launch(m.k_plain, 4, inputs=[y])
    np.testing.assert_array_equal(y.numpy(), np.full(4, 2.0, np.float32))


@needs_cxx
def test_a_cached_library_is_loaded_without_compiling(tmp_path, monkeypatch):
    m, _ = _program(tmp_path, "native_cache")
    x = kc.array(nonzero(np.random.default_rng(3), 4, np.float32))
    kc.launch(m.k_square, 4, inputs=[x, kc.zeros(4, dtype=float)])  # built and cached
    module = m.k_square.get_ir(m.k_square.param_types)
    fresh = native_snippets.SnippetLibraries()

    def no_build(*args):
        raise AssertionError("the cached library was not used")

    monkeypatch.setattr(fresh, "_build", no_build)
    fresh.prepare(module, kc.config.kernel_cache_dir, "k_square")
    assert len(native_snippets.specs_of(module)) == 1


@needs_cxx
def test_redefinition_recompiles_the_kernels_calling_it():
    x = kc.array(np.arange(4, dtype=np.int32))
    out = kc.zeros(4, dtype=kc.int32)

    @kc.func_native("out[tid] = x[tid] + 1;")
    def bump(x: kc.array(dtype=kc.int32), out: kc.array(dtype=kc.int32), tid: int): ...

    @kc.kernel
    def k_bump(x: kc.array(dtype=kc.int32), out: kc.array(dtype=kc.int32)):
        tid = kc.tid()
        bump(x, out, tid)

    kc.launch(k_bump, 4, inputs=[x, out])
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3, 4])

    @kc.func_native("out[tid] = x[tid] + 2;")
    def bump(x: kc.array(dtype=kc.int32), out: kc.array(dtype=kc.int32), tid: int): ...  # noqa: F811

    kc.launch(k_bump, 4, inputs=[x, out])
    np.testing.assert_array_equal(out.numpy(), [2, 3, 4, 5])


def test_decorator_checks_and_keeps_the_stub_doc():
    with pytest.raises(TypeError, match="snippet must be a str"):
        kc.func_native(3)

    @kc.func_native("return;")
    def documented(x: float):
        """Does nothing natively."""

    assert documented.__doc__ == "Does nothing natively."
    assert documented.snippet == "return;"
