"""`kc.ref[T]`: func parameters passed by reference (variables, array elements, fields,
components), their errors, and their gradients."""

from __future__ import annotations

import shutil
import typing

import cuda_harness
import numpy as np
import pytest

import kernelc as kc
from kernelc import types as T
from kernelc.codegen.cuda import CudaOptions, emit_cuda
from tests.conftest import kernel_in_file, nonzero, poisoned, run_warp


@kc.func
def add_to(x: kc.ref[float], delta: float):
    x += delta


@kc.func
def increment(n: kc.ref[kc.int32]):
    n += 1


@kc.func
def increment_twice(n: kc.ref[kc.int32]):
    increment(n)  # a reference forwarded to another
    increment(n)


@kc.func
def swap(x: kc.ref[float], y: kc.ref[float]):
    x, y = y, x


@kc.func
def clamp_and_report(x: kc.ref[float], hi: float) -> float:
    """Returns the old value; the reference changes on both paths."""
    old = x
    if x > hi:
        x = hi
        return old
    x = x * 2.0
    return old


@kc.func
def scale_any(x: kc.ref[typing.Any], s: float):
    x = x * s


@kc.struct
class Body:
    hits: kc.int32
    p: kc.vec3


@kc.func
def hit(b: kc.ref[Body], dp: kc.vec3):
    b.hits += 1
    b.p = b.p + dp
    add_to(b.p[2], 0.5)  # a field of a reference, forwarded


@kc.kernel
def use_refs(a: kc.array(dtype=float), b: kc.array(dtype=float), out: kc.array2d(dtype=float),
             counts: kc.array(dtype=kc.int32), bodies: kc.array(dtype=Body),
             vs: kc.array(dtype=kc.vec3), m: kc.array(dtype=kc.mat22)):
    i = kc.tid()
    x = a[i]
    y = b[i]
    swap(x, y)
    old = clamp_and_report(x, 1.0)
    out[0, i] = x
    out[1, i] = y
    out[2, i] = old
    add_to(a[i], b[i])  # an array element
    n = kc.int32(i)
    increment_twice(n)
    counts[i] = n
    hit(bodies[i], kc.vec3(b[i], 1.0, 2.0))
    add_to(vs[i][2], y)  # components, by index and by name
    add_to(vs[i].x, 1.0)
    add_to(vs[i][-2], 3.0)
    add_to(m[i][1, 0], 4.0)
    scale_any(vs[i], 2.0)
    z = float(0.5)
    scale_any(z, y)
    out[3, i] = z


def test_refs_write_back_to_every_kind_of_storage(rng):
    n = 64
    a_np, b_np = nonzero(rng, n, np.float32), nonzero(rng, n, np.float32)
    a, b = kc.array(a_np), kc.array(b_np)
    out = poisoned((4, n), np.float32)
    counts = poisoned(n, np.int32)
    bodies = kc.zeros(n, dtype=Body)
    vs_np = nonzero(rng, 3 * n, np.float32).reshape(n, 3)
    vs = kc.array(vs_np, dtype=kc.vec3)
    m_np = nonzero(rng, 4 * n, np.float32).reshape(n, 2, 2)
    m = kc.array(m_np, dtype=kc.mat22)
    kc.launch(use_refs, n, [a, b, out, counts, bodies, vs, m])

    x, y = b_np, a_np  # swapped
    old = x.copy()
    x_final = np.where(x > 1.0, np.float32(1.0), x * np.float32(2.0))
    np.testing.assert_array_equal(out.numpy()[0], x_final)
    np.testing.assert_array_equal(out.numpy()[1], y)
    np.testing.assert_array_equal(out.numpy()[2], old)
    np.testing.assert_array_equal(out.numpy()[3], np.float32(0.5) * y)
    np.testing.assert_array_equal(a.numpy(), a_np + b_np)
    np.testing.assert_array_equal(counts.numpy(), np.arange(n) + 2)
    got = bodies.numpy()
    np.testing.assert_array_equal(got["hits"], 1)
    np.testing.assert_array_equal(got["p"][:, 0], b_np)
    np.testing.assert_array_equal(got["p"][:, 1], 1.0)
    np.testing.assert_array_equal(got["p"][:, 2], 2.5)
    want = vs_np.copy()
    want[:, 2] += y
    want[:, 0] += 1.0
    want[:, 1] += 3.0
    np.testing.assert_array_equal(vs.numpy(), want * np.float32(2.0))
    want_m = m_np.copy()
    want_m[:, 1, 0] += 4.0
    np.testing.assert_array_equal(m.numpy(), want_m)


@kc.func
def take_next(counter: kc.array(dtype=kc.int32)) -> int:
    return kc.atomic_add(counter, 0, 1)


@kc.kernel
def indices_once(values: kc.array(dtype=float), counter: kc.array(dtype=kc.int32)):
    # the index of the referenced element is evaluated once: one slot per thread
    add_to(values[take_next(counter)], 1.0)


def test_referenced_element_index_is_evaluated_once():
    n = 100
    values = kc.zeros(n, dtype=float)
    counter = kc.zeros(1, dtype=kc.int32)
    kc.launch(indices_once, n, [values, counter])
    assert counter.numpy()[0] == n
    np.testing.assert_array_equal(values.numpy(), np.ones(n, np.float32))


@kc.kernel
def refs_by_keyword(a: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    s = float(0.0)
    for k in range(3):
        add_to(delta=a[i] * float(k), x=s)
    out[i] = s


def test_keywords_and_loops(rng):
    a_np = nonzero(rng, 32, np.float32)
    out = poisoned(32, np.float32)
    kc.launch(refs_by_keyword, 32, [kc.array(a_np), out])
    np.testing.assert_allclose(out.numpy(), a_np * 3.0, rtol=1e-6)


@kc.func
def accumulate_square(x: kc.ref[float], v: float):
    x += v * v


@kc.kernel
def ref_gradients(a: kc.array(dtype=float), out: kc.array(dtype=float),
                  out2: kc.array(dtype=float)):
    i = kc.tid()
    s = float(0.0)
    accumulate_square(s, a[i])
    accumulate_square(s, 2.0 * a[i])
    out[i] = s
    accumulate_square(out2[i], a[i])


def test_gradients_flow_through_references(rng):
    a_np = nonzero(rng, 16, np.float32)
    a = kc.array(a_np, requires_grad=True)
    out = kc.zeros(16, dtype=float, requires_grad=True)
    out2 = kc.zeros(16, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(ref_gradients, 16, [a, out, out2])
    tape.backward(grads={out: kc.ones(16, dtype=float), out2: kc.ones(16, dtype=float)})
    np.testing.assert_allclose(out.numpy(), 5.0 * a_np * a_np, rtol=1e-6)
    np.testing.assert_allclose(out2.numpy(), a_np * a_np, rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), 12.0 * a_np, rtol=1e-5)


def test_ref_annotation():
    r = kc.ref[kc.float32]
    assert r.dtype is kc.float32
    assert r == kc.ref[kc.float32] and hash(r) == hash(kc.ref[kc.float32])
    assert r != kc.ref[kc.int32]
    assert repr(kc.ref[kc.vec3]) == "ref[vec3]"
    with pytest.raises(TypeError, match="annotation"):
        kc.ref()


@pytest.mark.parametrize("body, message", [
    ("increment(kc.int32(5))", "needs storage to write to"),
    ("add_to(a[0] + 1.0, 1.0)", "needs storage to write to"),
    ("add_to(kc.vec3(1.0, 2.0, 3.0).x, 1.0)", "temporary value"),
    ("v = kc.vec3(1.0, 2.0, 3.0); scale_any(v[0:2], 2.0)", "cannot take a slice"),
    ("add_to(LIMIT, 1.0)", "'LIMIT' is a constant"),
    # Warp's constant locals: a name only ever assigned a literal has no storage
    ("x = 1.0; add_to(x, 1.0)", r"'x' is a constant local .* write x = kc\.float32\(1\.0\)"),
    ("n = 0; increment(n)", r"'n' is a constant local .* write n = kc\.int32\(0\)"),
])
def test_arguments_that_are_not_storage_are_rejected(tmp_path, body, message):
    k = kernel_in_file(tmp_path, "bad_ref", "a: kc.array(dtype=float)", body,
                       "from tests.test_func_refs import add_to, increment, scale_any\n"
                       "LIMIT = kc.constant(2.0)")
    with pytest.raises(kc.KernelError, match=message) as err:
        kc.launch(k, 1, [kc.zeros(2, dtype=float)])
    text = str(err.value)
    assert "bad_ref.py:8:" in text and "^" in text


def test_reassigned_literal_locals_are_variables(tmp_path):
    # assigned twice, so a variable (in Warp too): the reference updates it
    k = kernel_in_file(tmp_path, "ref_literal_local", "a: kc.array(dtype=kc.int32)",
                       "n = 0; n = n + a[0]; increment(n); a[1] = n",
                       "from tests.test_func_refs import increment")
    a = kc.array(np.array([41, -999], np.int32))
    kc.launch(k, 1, [a])
    np.testing.assert_array_equal(a.numpy(), [41, 42])


def test_kernels_take_no_references(tmp_path):
    k = kernel_in_file(tmp_path, "ref_param", "x: kc.ref[float]", "pass")
    with pytest.raises(kc.KernelError, match="only funcs take"):
        kc.launch(k, 1, [1.0])


def test_overloads_may_not_differ_only_in_references():
    @kc.func
    def f(x: kc.int32) -> kc.int32:
        return x

    with pytest.raises(RuntimeError, match="differ only"):
        @kc.func
        def f(x: kc.ref[kc.int32]):  # noqa: F811
            x += 1


def test_matches_warp(tmp_path):
    program = """
@wp.func
def push(x: wp.ref[float], y: wp.ref[wp.vec3], s: float) -> float:
    old = x
    x = x * s + 1.0
    y[1] += x
    return old

@wp.kernel(enable_backward=False)
def k(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = push(a[i], v[i], 3.0)
    t = wp.float32(i)
    push(t, v[i], 0.5)
    out[i] = out[i] + t
"""
    rng = np.random.default_rng(7)
    a_np = nonzero(rng, 16, np.float32)
    v_np = nonzero(rng, 48, np.float32).reshape(16, 3)
    script = program + """
a = wp.array(inputs["a"], dtype=float)
v = wp.array(inputs["v"], dtype=wp.vec3)
out = wp.zeros(16, dtype=float)
wp.launch(k, 16, [a, v, out])
results.update(a=a.numpy(), v=v.numpy(), out=out.numpy())
"""
    warp = run_warp(script, tmp_path, a=a_np, v=v_np)
    path = tmp_path / "ref_program.py"
    path.write_text("import kernelc as wp\n" + program)
    import importlib.util

    spec = importlib.util.spec_from_file_location("ref_program", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    a, v, out = kc.array(a_np), kc.array(v_np, dtype=kc.vec3), poisoned(16, np.float32)
    kc.launch(module.k, 16, [a, v, out])
    np.testing.assert_array_equal(a.numpy(), warp["a"])
    np.testing.assert_array_equal(v.numpy(), warp["v"])
    np.testing.assert_array_equal(out.numpy(), warp["out"])


# ---- the CUDA backend -----------------------------------------------------------------------


@kc.kernel
def swap_and_clamp(a: kc.array(dtype=float), b: kc.array(dtype=float),
                   out: kc.array2d(dtype=float)):
    i = kc.tid()
    x = a[i]
    y = b[i]
    swap(x, y)
    out[0, i] = clamp_and_report(x, 1.0)
    out[1, i] = x
    out[2, i] = y
    add_to(out[2, i], 0.25)


@pytest.mark.skipif(shutil.which(cuda_harness.CXX) is None, reason="needs g++")
def test_cuda_c_of_references_runs_on_the_host(rng):
    a, b = nonzero(rng, 29, np.float32), nonzero(rng, 29, np.float32)
    out = np.full((3, 29), np.nan, np.float32)
    arrays = (T.ArrayType(T.float32, 1), T.ArrayType(T.float32, 1), T.ArrayType(T.float32, 2))
    ir = swap_and_clamp.get_ir(arrays)
    cuda_harness.build(emit_cuda(ir, CudaOptions())).launch(29, [a, b, out])
    want = poisoned((3, 29), np.float32)
    kc.launch(swap_and_clamp, 29, [kc.array(a), kc.array(b), want])
    np.testing.assert_array_equal(out, want.numpy())
    np.testing.assert_array_equal(out[0], b)


@pytest.mark.parametrize("kernel", [use_refs, indices_once, ref_gradients],
                         ids=lambda k: k.__name__)
def test_nvrtc_compiles_reference_kernels(kernel):
    pytest.importorskip("cuda.bindings.nvrtc")
    assert kc.compile(kernel, target="cuda", arch=80).binary
