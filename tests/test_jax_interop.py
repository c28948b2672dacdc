"""JAX interop: arrays, devices and dtypes both ways; kernels and functions as JAX operations
(`jax_kernel`, `jax_callable`, `register_ffi_callback`) on the CPU, with gradients.

Results are checked against NumPy (and JAX's own gradients of the same formulas); the
examples of Warp's guide also run under Warp in a subprocess when warp-lang is installed.
"""

from functools import partial

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import kernelc as kc  # noqa: E402
from kernelc.jax_experimental import jax_callable, jax_kernel, register_ffi_callback  # noqa: E402
from tests import jax_interop_kernels as K  # noqa: E402
from tests.conftest import nonzero, run_python, run_warp  # noqa: E402

F32 = np.float32
pytestmark = pytest.mark.usefixtures("jax_on_the_cpu")


def rand(rng, *shape, low=-2.0, high=2.0):
    return nonzero(rng, int(np.prod(shape)), F32, low, high).reshape(shape)


# ---- import, dtypes, devices ---------------------------------------------------------------


def test_import_kernelc_does_not_import_jax():
    proc = run_python("""
        import sys
        import kernelc as kc
        import kernelc.jax_experimental
        assert kc.jax_kernel is kc.jax_experimental.jax_kernel and kc.from_jax
        assert not hasattr(kc, "no_such_name")
        print("jax" in sys.modules)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


@pytest.mark.parametrize("name", ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                  "uint32", "uint64", "float16", "float32", "float64"])
def test_dtypes_map_both_ways(name):
    kc_type = getattr(kc, name)
    jax_type = kc.dtype_to_jax(kc_type)
    assert jnp.dtype(jax_type) == np.dtype(kc_type.np_dtype)
    assert kc.dtype_from_jax(jax_type) is kc_type
    assert kc.dtype_from_jax(jnp.dtype(jax_type)) is kc_type


def test_dtypes_without_counterpart_raise_type_error():
    with pytest.raises(TypeError, match="vec3"):
        kc.dtype_to_jax(kc.vec3)
    assert kc.dtype_from_jax(jnp.bfloat16) is kc.bfloat16  # as in Warp
    assert kc.dtype_to_jax(kc.bfloat16) is jnp.bfloat16


def test_bfloat16_arrays_both_ways():
    values = np.array([1.5, -2.25, 3.0, 1 / 3], np.float32)
    a = kc.array(values, dtype=kc.bfloat16)
    x = kc.to_jax(a)
    assert x.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(x, np.float32), [1.5, -2.25, 3.0, 0.333984375])
    back = kc.from_jax(jnp.asarray(values, dtype=jnp.bfloat16) * 2)
    assert back.dtype == kc.bfloat16
    assert [float(v) for v in back.list()] == [3.0, -4.5, 6.0, 0.66796875]


def test_devices_map_both_ways():
    cpu = jax.local_devices(backend="cpu")[0]
    assert kc.device_to_jax("cpu") == cpu
    assert kc.device_from_jax(cpu) == "cpu"

    class Tpu:
        platform = "tpu"

    with pytest.raises(RuntimeError, match="tpu"):
        kc.device_from_jax(Tpu())
    if not any(d.platform == "gpu" for d in jax.devices()):
        with pytest.raises(RuntimeError):
            kc.device_to_jax("cuda:0")


# ---- arrays ----------------------------------------------------------------------------------


def test_from_jax_shares_memory_and_keeps_it_alive(rng):
    data = rand(rng, 5, 3)
    x = jnp.asarray(data)
    a = kc.from_jax(x)
    assert (a.shape, a.dtype, a.ptr) == ((5, 3), kc.float32, x.unsafe_buffer_pointer())
    v = kc.from_jax(x, dtype=kc.vec3)
    assert (v.shape, v.dtype, v.ptr) == ((5,), kc.vec3, a.ptr)
    del x
    np.testing.assert_array_equal(v.numpy(), data)
    # A kernel reads it in place.
    pairs = kc.from_jax(jnp.asarray(data[:, :2]), dtype=kc.vec2)
    out = kc.array(np.full((5, 2), np.nan, F32), dtype=kc.vec2)
    kc.launch(K.scale_vec_kernel, 5, inputs=[pairs, 2.0], outputs=[out])
    np.testing.assert_allclose(out.numpy(), 2 * data[:, :2], rtol=1e-6)


def test_from_jax_rejects_a_dtype_that_does_not_fit():
    with pytest.raises(TypeError, match="element shape"):
        kc.from_jax(jnp.zeros((4, 2), jnp.float32), dtype=kc.vec3)
    with pytest.raises(TypeError, match="int32"):
        kc.from_jax(jnp.zeros(4, jnp.int32), dtype=kc.float32)


def test_to_jax_shares_memory(rng):
    a = kc.array(rand(rng, 6, 2), dtype=kc.vec2)
    x = kc.to_jax(a)
    assert x.shape == (6, 2) and x.unsafe_buffer_pointer() == a.ptr
    np.testing.assert_array_equal(np.asarray(x), a.numpy())
    b = kc.array(rand(rng, 4, 6))
    np.testing.assert_array_equal(np.asarray(kc.to_jax(b[:, 1:4])), b.numpy()[:, 1:4])
    with pytest.raises(TypeError):
        kc.to_jax(np.zeros(3))


# ---- jax_kernel ----------------------------------------------------------------------------


def test_kernel_inside_jit_and_eagerly(rng):
    triple = jax_kernel(K.triple_kernel)
    assert jax_kernel(K.triple_kernel) is triple
    data = rand(rng, 64)
    (out,) = jax.jit(lambda x: triple(x))(jnp.asarray(data))
    np.testing.assert_allclose(np.asarray(out), 3 * data, rtol=1e-6)
    (eager,) = triple(jnp.asarray(data[:10]))
    np.testing.assert_allclose(np.asarray(eager), 3 * data[:10], rtol=1e-6)


def test_int_inputs_and_two_outputs(rng):
    a, b = rng.integers(-50, 50, 10, dtype=np.int32), rng.integers(1, 9, 10, dtype=np.int32)
    (total,) = jax.jit(jax_kernel(K.add_kernel))(a, b)
    np.testing.assert_array_equal(np.asarray(total), a + b)
    angle = rand(rng, 32)
    s, c = jax.jit(jax_kernel(K.sincos_kernel, num_outputs=2))(angle)
    np.testing.assert_allclose(np.asarray(s), np.sin(angle), atol=1e-6)
    np.testing.assert_allclose(np.asarray(c), np.cos(angle), atol=1e-6)


def test_no_inputs_needs_launch_dims():
    diagonal = jax_kernel(K.diagonal_kernel)
    (out,) = jax.jit(lambda: diagonal(launch_dims=4))()
    np.testing.assert_array_equal(np.asarray(out), np.tile(np.diag([1.0, 2.0, 3.0]), (4, 1, 1)))
    with pytest.raises(RuntimeError, match="launch_dims"):
        diagonal()


def test_scalars_must_be_static(rng):
    scale = jax_kernel(K.scale_kernel)
    a = rand(rng, 10)
    f = jax.jit(lambda a, s: scale(a, s), static_argnames=["s"])
    np.testing.assert_allclose(np.asarray(f(a, 2.5)[0]), 2.5 * a, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(f(a, -1.5)[0]), -1.5 * a, rtol=1e-6)
    with pytest.raises(ValueError, match="'s' must be a static value"):
        jax.jit(lambda a, s: scale(a, s))(a, 2.0)


def test_launch_and_output_dims(rng):
    matmul = jax_kernel(K.matmul_kernel)
    a, b = rand(rng, 3, 2), rand(rng, 2, 4)
    (c,) = jax.jit(lambda a, b: matmul(a, b, launch_dims=(3, 4)))(a, b)
    np.testing.assert_allclose(np.asarray(c), a @ b, rtol=1e-5)
    vecmat = jax_kernel(K.vecmat_kernel, num_outputs=3)
    n = 7
    x, v, m = rand(rng, n), rand(rng, n, 3), rand(rng, n, 2, 2)
    want = (2 * x, v * x[:, None], m.transpose(0, 2, 1))
    for dims in (None, n, {"d": n, "e": n, "f": n}, {"d": (n,), "e": (n, 3), "f": (n, 2, 2)}):
        outs = vecmat(x, v, m, output_dims=dims)
        for got, expected in zip(outs, want):
            np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6)
    with pytest.raises(ValueError, match="'e'"):
        vecmat(x, v, m, output_dims={"d": n, "e": (n, 4), "f": n})
    with pytest.raises(ValueError, match="missing output dimensions"):
        vecmat(x, v, m, output_dims={"d": n})


def test_vmap_folds_the_batch_into_the_first_dimension(rng):
    add = jax_kernel(K.add_kernel)
    a, b = rng.integers(0, 9, (3, 4), dtype=np.int32), rng.integers(1, 9, (3, 4), dtype=np.int32)
    (out,) = jax.jit(jax.vmap(add))(a, b)
    np.testing.assert_array_equal(np.asarray(out), a + b)

    rowsum = jax_kernel(K.rowsum_kernel, in_out_argnames=["sums"])
    matrices = rand(rng, 2, 3, 4)
    for axis, expected in ((0, matrices.sum(2)), (1, matrices.sum(2).T),
                           (2, matrices.sum(1).T)):
        sums = jnp.zeros(expected.shape, jnp.float32)
        (got,) = jax.jit(jax.vmap(rowsum, in_axes=(axis, 0)))(matrices, sums)
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5)

    lookup = jax_kernel(K.lookup_kernel)
    table = rand(rng, 100)
    indices = rng.integers(0, 100, (20, 50), dtype=np.int32)
    (got,) = jax.jit(jax.vmap(partial(lookup, launch_dims=50), in_axes=(None, 0)))(table, indices)
    np.testing.assert_array_equal(np.asarray(got), table[indices])
    (got,) = jax.jit(jax.vmap(partial(lookup, launch_dims=20), in_axes=(None, 1)))(table, indices)
    np.testing.assert_array_equal(np.asarray(got), table[indices].T)


def test_in_out_argument_updates_its_input(rng):
    rowsum = jax_kernel(K.rowsum_kernel, in_out_argnames=["sums"])
    matrix, start = rand(rng, 5, 6), rand(rng, 5)
    (sums,) = jax.jit(rowsum)(matrix, start)
    np.testing.assert_allclose(np.asarray(sums), start + matrix.sum(1), rtol=1e-5)


@pytest.mark.parametrize("call, error, match", [
    (lambda: jax_kernel(K.triple_kernel)(jnp.zeros(4, jnp.int32)), TypeError, "float32"),
    (lambda: jax_kernel(K.triple_kernel)(jnp.zeros((4, 2))), TypeError, "1 dimensions"),
    (lambda: jax_kernel(K.scale_vec_kernel)(jnp.zeros((4, 3)), 1.0), TypeError, "trailing"),
    (lambda: jax_kernel(K.add_kernel)(jnp.zeros(4, jnp.int32)), ValueError, "takes 2 inputs"),
    (lambda: jax_kernel(K.generic_kernel), TypeError, "generic"),
    (lambda: jax_kernel(K.scalar_output_kernel), TypeError, "'out' must be an array"),
    (lambda: jax_kernel(K.triple_kernel, num_outputs=0), ValueError, "at least one output"),
    (lambda: jax_kernel(K.add_kernel, in_out_argnames=["c"]), ValueError, "match no"),
    (lambda: jax_kernel(K.sincos_kernel, num_outputs=2, in_out_argnames=["cos_out"]),
     ValueError, "before"),
    (lambda: jax_kernel(K.triple_kernel, block_dim=0), ValueError, "positive"),
    (lambda: jax_kernel(K.triple_kernel.func), TypeError, "kernelc.kernel"),
    (lambda: jax_kernel(K.rowsum_kernel, in_out_argnames=["sums"], enable_backward=True),
     NotImplementedError, "in_out_argnames"),
    (lambda: jax_kernel(K.triple_kernel, output_dims=3, enable_backward=True),
     NotImplementedError, "output_dims"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_eager_calls_with_equal_scalars_share_one_call_entry(rng):
    scale = jax_kernel(K.scale_kernel, module_preload_mode=kc.JaxModulePreloadMode.NONE)
    for _ in range(3):
        scale(rand(rng, 8), 2.0)
    scale(rand(rng, 8), 3.0)
    assert len(scale.calls._entries) == 2


# ---- gradients -------------------------------------------------------------------------------


def test_grad_through_a_kernel(rng):
    kernel = jax_kernel(K.scale_sum_square, num_outputs=1, enable_backward=True)

    @partial(jax.jit, static_argnames=["s"])
    def loss(a, b, s):
        (out,) = kernel(a, b, s)
        return jnp.sum(out)

    a, b, s = rand(rng, 16), rand(rng, 16), 1.5
    da, db = jax.grad(loss, argnums=(0, 1))(a, b, s)
    np.testing.assert_allclose(np.asarray(da), 2 * (a * s + b) * s, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(db), 2 * (a * s + b), rtol=1e-5)
    # Central differences in float64 of the same loss, for one component.
    h, i = 1e-3, 3
    step = np.zeros(16, F32)
    step[i] = h
    fd = (float(loss(a + step, b, s)) - float(loss(a - step, b, s))) / (2 * h)
    assert abs(fd - float(da[i])) < 1e-2 * max(1.0, abs(fd))
    with pytest.raises(TypeError, match="launch_dims"):
        kernel(a, b, s, launch_dims=16)


def test_grad_with_two_outputs_and_vectors(rng):
    multi = jax_kernel(K.multi_output, num_outputs=2, enable_backward=True)
    a, b, s = rand(rng, 16), rand(rng, 16), 2.0

    def loss(a, b):
        c, d = multi(a, b, s)
        return jnp.sum(c + d)

    da, db = jax.grad(loss, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(np.asarray(da), 2 * a + b * s, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(db), a * s, rtol=1e-5)

    vec = jax_kernel(K.scale_vec2, num_outputs=1, enable_backward=True)
    weights = rand(rng, 5, 2)
    grad = jax.grad(lambda a: jnp.sum(vec(a, 3.0)[0] * weights))(rand(rng, 5, 2))
    np.testing.assert_allclose(np.asarray(grad), 3.0 * weights, rtol=1e-6)


def test_grad_with_launch_dims_smaller_than_the_input(rng):
    kernel = jax_kernel(K.sin_of_sum, launch_dims=(6,), enable_backward=True)
    a = rand(rng, 4, 6, low=-0.5, high=0.5)
    want = jax.grad(lambda x: jnp.sum(jnp.sin(x.sum(0))))(a)  # JAX's own gradient
    got = jax.grad(lambda x: jnp.sum(kernel(x)[0]))(a)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(got), np.broadcast_to(np.cos(a.sum(0)), a.shape),
                               rtol=1e-5)


# ---- jax_callable and register_ffi_callback -----------------------------------------------


def test_callable_launches_several_kernels(rng):
    func = jax_callable(K.example_func, num_outputs=2)
    a, b = rand(rng, 10), rand(rng, 5, 2)
    c, d = jax.jit(lambda a, b: func(a, b, 2.0, output_dims={"c": a.shape, "d": b.shape}))(a, b)
    np.testing.assert_allclose(np.asarray(c), 2 * a, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(d), 2 * b, rtol=1e-6)

    accumulate = jax_callable(K.accumulate_func, in_out_argnames=["total"])
    x, start = rand(rng, 8), rand(rng, 8)
    (total,) = jax.jit(accumulate)(x, start)
    np.testing.assert_allclose(np.asarray(total), start + x, rtol=1e-6)


def test_callable_errors(rng):
    with pytest.raises(TypeError, match="must not return"):
        jax_callable(K.returns_value)
    with pytest.raises(RuntimeError, match="annotations"):
        jax_callable(K.unannotated)
    with pytest.raises(jax.errors.JaxRuntimeError, match="failing_func always fails"):
        jax.block_until_ready(jax_callable(K.failing_func)(rand(rng, 4)))
    warp_graph = jax_callable(K.accumulate_func, num_outputs=1, in_out_argnames=["total"],
                              graph_mode=kc.JaxCallableGraphMode.WARP)
    with pytest.raises(jax.errors.JaxRuntimeError, match="WARP is not supported"):
        jax.block_until_ready(warp_graph(rand(rng, 4), rand(rng, 4)))


def test_register_ffi_callback_gets_buffers_and_attributes(rng):
    seen = {}

    def double(inputs, outputs, attrs, ctx):
        seen.update(attrs, platform=ctx.platform)
        np.asarray(outputs[0])[...] = 2 * np.asarray(inputs[0]) + attrs["offset"]

    register_ffi_callback("kernelc_test_double", double)
    x = rand(rng, 3, 4)
    call = jax.ffi.ffi_call("kernelc_test_double", jax.ShapeDtypeStruct(x.shape, x.dtype))
    out = jax.jit(lambda x: call(x, offset=np.float32(0.5), tag="t",
                                 sizes=np.array([1, 2], np.int32)))(x)
    np.testing.assert_allclose(np.asarray(out), 2 * x + 0.5, rtol=1e-6)
    assert seen["tag"] == "t" and seen["platform"] == "cpu"
    np.testing.assert_array_equal(seen["sizes"], [1, 2])


LAYOUT_PROBE = """
#include <stddef.h>
#include <stdio.h>
#include "xla/ffi/api/c_api.h"
#define F(s, f) printf("%s.%s %zu\\n", #s, #f, offsetof(s, f));
int main(void) {
  F(XLA_FFI_CallFrame, api) F(XLA_FFI_CallFrame, stage) F(XLA_FFI_CallFrame, args)
  F(XLA_FFI_CallFrame, rets) F(XLA_FFI_CallFrame, attrs) F(XLA_FFI_CallFrame, future)
  F(XLA_FFI_Buffer, dtype) F(XLA_FFI_Buffer, data) F(XLA_FFI_Buffer, dims)
  F(XLA_FFI_Attrs, names) F(XLA_FFI_Attrs, attrs) F(XLA_FFI_Metadata, traits)
  F(XLA_FFI_Api, XLA_FFI_Error_Create) F(XLA_FFI_Api, XLA_FFI_Stream_Get)
  F(XLA_FFI_Api, XLA_FFI_DeviceOrdinal_Get) F(XLA_FFI_DeviceOrdinal_Get_Args, device_ordinal)
  return 0;
}
"""


def test_ctypes_layout_matches_xlas_header(tmp_path):
    """The call frame's ctypes mirror has the offsets of XLA's C header (as JAX ships it)."""
    import shutil
    import subprocess

    from kernelc.jax_experimental import xla_ffi as X

    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    (tmp_path / "probe.c").write_text(LAYOUT_PROBE)
    subprocess.run(["cc", "-I", jax.ffi.include_dir(), "-o", str(tmp_path / "probe"),
                    str(tmp_path / "probe.c")], check=True)
    probe = subprocess.run([str(tmp_path / "probe")], capture_output=True, text=True, check=True)
    header = dict(line.rsplit(" ", 1) for line in probe.stdout.splitlines())
    ours = {"CallFrame": X.CallFrame, "Buffer": X.Buffer, "Attrs": X.Attrs,
            "Metadata": X.Metadata, "Api": X.Api, "DeviceOrdinal_Get_Args": X.DeviceOrdinalGetArgs}
    renames = {"XLA_FFI_Error_Create": "error_create", "XLA_FFI_Stream_Get": "stream_get",
               "XLA_FFI_DeviceOrdinal_Get": "device_ordinal_get"}
    for key, offset in header.items():
        struct, field = key.removeprefix("XLA_FFI_").split(".")
        assert getattr(ours[struct], renames.get(field, field)).offset == int(offset), key


# ---- against Warp, and on a GPU ------------------------------------------------------------

WARP_PROGRAM = """
import jax, jax.numpy as jnp
from functools import partial

@wp.kernel
def triple_kernel(input: wp.array(dtype=float), output: wp.array(dtype=float)):
    tid = wp.tid()
    output[tid] = 3.0 * input[tid]

@wp.kernel
def scale_sum_square(a: wp.array(dtype=float), b: wp.array(dtype=float), s: float,
                     out: wp.array(dtype=float)):
    tid = wp.tid()
    out[tid] = (a[tid] * s + b[tid]) ** 2.0

@wp.kernel
def rowsum_kernel(matrix: wp.array2d(dtype=float), sums: wp.array1d(dtype=float)):
    i, j = wp.tid()
    wp.atomic_add(sums, i, matrix[i, j])

@wp.kernel
def matmul_kernel(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float),
                  c: wp.array2d(dtype=float)):
    i, j = wp.tid()
    s = float(0.0)
    for k in range(a.shape[1]):
        s += a[i, k] * b[k, j]
    c[i, j] = s

x, a, b, m = inputs["x"], inputs["a"], inputs["b"], inputs["m"]
results["triple"] = jax.jit(lambda x: wp.jax_kernel(triple_kernel)(x)[0])(x)
kernel = wp.jax_kernel(scale_sum_square, num_outputs=1, enable_backward=True)
loss = partial(jax.jit, static_argnames=["s"])(lambda a, b, s: jnp.sum(kernel(a, b, s)[0]))
results["da"], results["db"] = jax.grad(loss, argnums=(0, 1))(a, b, 1.5)
rowsum = wp.jax_kernel(rowsum_kernel, in_out_argnames=["sums"])
results["rowsum"] = jax.jit(jax.vmap(rowsum, in_axes=(1, 0)))(m, jnp.zeros((3, 2)))[0]
matmul = wp.jax_kernel(matmul_kernel)
results["matmul"] = jax.jit(lambda a, b: matmul(a, b, launch_dims=(4, 2))[0])(
    a.reshape(4, 4), b.reshape(4, 4)[:, :2])
"""


def test_matches_warp(rng, tmp_path):
    x, a, b, m = rand(rng, 64), rand(rng, 16), rand(rng, 16), rand(rng, 2, 3, 4)
    warp = run_warp(WARP_PROGRAM, tmp_path, x=x, a=a, b=b, m=m)
    (triple,) = jax.jit(jax_kernel(K.triple_kernel))(x)
    np.testing.assert_allclose(np.asarray(triple), warp["triple"], rtol=1e-6)
    kernel = jax_kernel(K.scale_sum_square, num_outputs=1, enable_backward=True)
    grads = jax.grad(lambda a, b: jnp.sum(kernel(a, b, 1.5)[0]), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(np.asarray(grads[0]), warp["da"], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(grads[1]), warp["db"], rtol=1e-5)
    rowsum = jax_kernel(K.rowsum_kernel, in_out_argnames=["sums"])
    (sums,) = jax.jit(jax.vmap(rowsum, in_axes=(1, 0)))(m, jnp.zeros((3, 2), jnp.float32))
    np.testing.assert_allclose(np.asarray(sums), warp["rowsum"], rtol=1e-5)
    matmul = jax_kernel(K.matmul_kernel)
    (c,) = matmul(a.reshape(4, 4), b.reshape(4, 4)[:, :2], launch_dims=(4, 2))
    np.testing.assert_allclose(np.asarray(c), warp["matmul"], rtol=1e-5)


@pytest.mark.cuda
def test_kernel_on_a_jax_gpu(rng):
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus or not kc.is_cuda_available():
        pytest.skip("needs JAX with a GPU and kernelc's CUDA runtime")
    data = rand(rng, 256)
    x = jax.device_put(data, gpus[0])
    (out,) = jax.jit(jax_kernel(K.triple_kernel))(x)
    np.testing.assert_allclose(np.asarray(out), 3 * data, rtol=1e-6)
    kernel = jax_kernel(K.scale_sum_square, num_outputs=1, enable_backward=True)
    a, b = jax.device_put(data[:16], gpus[0]), jax.device_put(data[16:32], gpus[0])
    da = jax.grad(lambda a: jnp.sum(kernel(a, b, 2.0)[0]))(a)
    np.testing.assert_allclose(np.asarray(da), 4 * (2 * data[:16] + data[16:32]), rtol=1e-5)
