"""Arrays of 1 to 4 dimensions, strided views, tid() shapes, launches (their arguments and
recorded `kc.Launch` objects), kc.compile, IR dumps."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import nonzero, poisoned, run_python


@kc.kernel
def copy1(a: kc.array(dtype=float), o: kc.array(dtype=float)):
    i = kc.tid()
    o[i] = a[i] * 2.0


@kc.kernel
def copy2(a: kc.array2d(dtype=float), o: kc.array2d(dtype=float)):
    i, j = kc.tid()
    o[i, j] = a[i][j] + float(a.shape[1] * 10 + len(a))


@kc.kernel
def copy3(a: kc.array3d(dtype=float), o: kc.array3d(dtype=float)):
    i, j, k = kc.tid()
    o[i, j, k] = a[i, j, k] - float(a.shape[2])


@kc.kernel
def copy4(a: kc.array4d(dtype=float), o: kc.array4d(dtype=float)):
    i, j, k, m = kc.tid()
    o[i][j][k][m] = a[i, j][k, m] * float(i + 1)


def test_1d_to_4d_indexing_shape_and_len(rng):
    a1 = nonzero(rng, 7, np.float32)
    o1 = poisoned(7, np.float32)
    kc.launch(copy1, 7, inputs=[kc.array(a1, dtype=float), o1])
    np.testing.assert_array_equal(o1.numpy(), a1 * 2)
    a2 = nonzero(rng, (3, 5), np.float32)
    o2 = poisoned((3, 5), np.float32)
    kc.launch(copy2, (3, 5), inputs=[kc.array(a2, dtype=float), o2])
    np.testing.assert_array_equal(o2.numpy(), a2 + 53)
    a3 = nonzero(rng, (2, 3, 4), np.float32)
    o3 = poisoned((2, 3, 4), np.float32)
    kc.launch(copy3, a3.shape, inputs=[kc.array(a3, dtype=float), o3])
    np.testing.assert_array_equal(o3.numpy(), a3 - 4)
    a4 = nonzero(rng, (2, 3, 2, 3), np.float32)
    o4 = poisoned(a4.shape, np.float32)
    kc.launch(copy4, a4.shape, inputs=[kc.array(a4, dtype=float), o4])
    np.testing.assert_array_equal(o4.numpy(), a4 * np.arange(1, 3).reshape(2, 1, 1, 1))


@kc.kernel
def tid_values(o: kc.array(dtype=int)):
    o[kc.tid()] = kc.tid()


@kc.kernel
def tid_4d(o: kc.array4d(dtype=int)):
    i, j, k, m = kc.tid()
    o[i, j, k, m] = ((i * 10 + j) * 10 + k) * 10 + m


def test_tid_in_1d_and_4d_launches():
    o = poisoned(1000, np.int32)
    kc.launch(tid_values, 1000, inputs=[o])
    np.testing.assert_array_equal(o.numpy(), np.arange(1000))
    o4 = poisoned((2, 3, 4, 5), np.int32)
    kc.launch(tid_4d, (2, 3, 4, 5), inputs=[o4])
    i, j, k, m = np.indices((2, 3, 4, 5))
    np.testing.assert_array_equal(o4.numpy(), ((i * 10 + j) * 10 + k) * 10 + m)


@kc.kernel
def tid_leading(lead: kc.array3d(dtype=int), pair: kc.array3d(dtype=int)):
    i, j, k = kc.tid()
    lead[i, j, k] = kc.tid()
    a, b = kc.tid()
    pair[i, j, k] = a * 100 + b


@kc.kernel
def count_by_tid(counts: kc.array(dtype=int), sums: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(counts, i, 1)
    kc.atomic_add(sums, i, 0.5)


@kc.kernel
def count_by_pair(counts: kc.array2d(dtype=int)):
    i, j = kc.tid()
    counts[i, j] = counts[i, j] + 0  # read and write at its own index: ...
    kc.atomic_add(counts, i, j, 1)  # ... but wider launches share it


def test_tid_unpacking_fewer_indices_than_the_launch_reads_the_leading_ones():
    # As in Warp: a scalar tid() in a multi-dimensional launch is the leading index (not
    # the linear one), and `a, b = tid()` in a 3-d launch the leading two.
    shape = (3, 4, 5)
    lead, pair = poisoned(shape, np.int32), poisoned(shape, np.int32)
    kc.launch(tid_leading, shape, inputs=[lead, pair])
    i, j, _ = np.indices(shape)
    np.testing.assert_array_equal(lead.numpy(), i)
    np.testing.assert_array_equal(pair.numpy(), i * 100 + j)
    # Many threads share each index, on every worker: their atomics must stay atomic.
    for dims, n in (((4, 50000), 4), ((3, 1, 20000), 3), ((6, 1), 6)):
        counts, sums = kc.zeros(n, dtype=int), kc.zeros(n, dtype=float)
        kc.launch(count_by_tid, dims, inputs=[counts, sums])
        per = int(np.prod(dims)) // n
        np.testing.assert_array_equal(counts.numpy(), np.full(n, per))
        np.testing.assert_array_equal(sums.numpy(), np.full(n, per * 0.5, np.float32))
    counts = kc.zeros((3, 4), dtype=int)
    kc.launch(count_by_pair, (3, 4, 5000), inputs=[counts])
    np.testing.assert_array_equal(counts.numpy(), np.full((3, 4), 5000))
    # The same kernel launched as wide as its tid(): the linear index again.
    o = poisoned(12, np.int32)
    kc.launch(tid_values, (12, 1), inputs=[o])
    np.testing.assert_array_equal(o.numpy(), np.arange(12))


def test_non_contiguous_views_through_strides(rng):
    base = nonzero(rng, (6, 8), np.float32)
    view = kc.array(base)  # a kc array over the NumPy data
    o2 = poisoned((8, 6), np.float32)
    kc.launch(copy2, (8, 6), inputs=[view.transpose(), o2])
    np.testing.assert_array_equal(o2.numpy(), base.T + (6 * 10 + 8))
    strided = kc.array(base[::2, 1::3])
    o = poisoned(strided.shape, np.float32)
    kc.launch(copy2, strided.shape, inputs=[strided, o])
    np.testing.assert_array_equal(o.numpy(), base[::2, 1::3] + (strided.shape[1] * 10 + 3))
    column = kc.array(base[:, 5])
    o1 = poisoned(6, np.float32)
    kc.launch(copy1, 6, inputs=[column, o1])
    np.testing.assert_array_equal(o1.numpy(), base[:, 5] * 2)


def test_dim_zero_is_a_no_op():
    o = poisoned(4, np.int32)
    kc.launch(tid_values, 0, inputs=[o])
    kc.launch(tid_4d, (2, 0, 1, 1), inputs=[poisoned((2, 1, 1, 1), np.int32)])
    assert (o.numpy() == np.iinfo(np.int32).min + 3).all()


def test_recorded_launch_is_reusable(rng):
    a = kc.array(nonzero(rng, 16, np.float32), dtype=float)
    o = poisoned(16, np.float32)
    cmd = kc.launch(copy1, 16, inputs=[a, o], record_cmd=True)
    assert isinstance(cmd, kc.Launch)
    assert np.isnan(o.numpy()).all()  # recording runs nothing
    cmd.launch()
    first = o.numpy().copy()
    a.assign(a.numpy() + 1) if hasattr(a, "assign") else kc.copy(
        a, kc.array(a.numpy() + 1, dtype=float))
    cmd.launch()
    np.testing.assert_array_equal(o.numpy(), first + 2)


@kc.kernel
def mixed(a: kc.array(dtype=float), o: kc.array(dtype=float), total: kc.array(dtype=float)):
    i = kc.tid()
    x = a[i]
    for _k in range(3):
        x = x * 0.5 + kc.sin(x)
    o[i] = x
    kc.atomic_add(total, 0, x)


@pytest.mark.parametrize("size", [10, 70_000])
def test_results_do_not_depend_on_the_thread_count(size, rng):
    a = kc.array(nonzero(rng, size, np.float32), dtype=float)
    results = []
    previous = kc.config.num_threads
    try:
        for threads in (1, 2):
            kc.config.num_threads = threads
            o, total = poisoned(size, np.float32), kc.zeros(1, dtype=float)
            kc.launch(mixed, size, inputs=[a, o, total])
            results.append((o.numpy(), total.numpy()[0]))
    finally:
        kc.config.num_threads = previous
    np.testing.assert_array_equal(results[0][0], results[1][0])
    ref = results[0][0].astype(np.float64).sum()
    assert abs(results[0][1] - ref) <= 1e-4 * np.abs(results[0][0]).sum() + 1e-5
    assert abs(results[1][1] - ref) <= 1e-4 * np.abs(results[0][0]).sum() + 1e-5


def test_compile_returns_llvm_ir_and_an_object():
    compiled = kc.compile(copy1, target="cpu")
    assert compiled.format == "obj" and compiled.target == "cpu"
    assert "define" in compiled.source and compiled.entry in compiled.source
    assert "fmul" in compiled.source
    assert compiled.binary[:4] in (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"d\x86\x00\x00") or \
        len(compiled.binary) > 100


def test_dump_ir_prints_the_ir_after_each_pass(tmp_path):
    code = """
        import numpy as np
        import kernelc as kc

        @kc.kernel
        def scale(a: kc.array(dtype=float)):
            a[kc.tid()] = a[kc.tid()] * 3.0

        kc.launch(scale, 2, inputs=[kc.ones(2, dtype=float)])
    """
    path = tmp_path / "dump_case.py"
    path.write_text(__import__("textwrap").dedent(code))
    proc = run_python(f"exec(compile(open({str(path)!r}).read(), {str(path)!r}, 'exec'))",
                      env={"KERNELC_DUMP_IR": "1", "KERNELC_CACHE_DIR": str(tmp_path / "c")})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "--- IR of scale (front end)" in out
    for name in ("constant_propagation", "value_numbering", "dead_code_elimination"):
        assert f"after {name}" in out
    assert "array_load" in out and "mul" in out


# ---- arguments passed by value, and recorded launches as Warp's Launch objects ------------


@kc.kernel
def composites(v: kc.vec3, m: kc.mat22, q: kc.quat, t: kc.transform, out: kc.array(dtype=float)):
    for k in range(3):
        out[k] = v[k]
    out[3] = m[0, 0]
    out[4] = m[0, 1]
    out[5] = m[1, 0]
    out[6] = m[1, 1]
    for k in range(4):
        out[7 + k] = q[k]
    for k in range(7):
        out[11 + k] = t[k]


def composite_arguments():
    return [kc.vec3(1.0, 2.0, 3.0), kc.mat22(4.0, 5.0, 6.0, 7.0),
            kc.quat(8.0, 9.0, 10.0, 11.0), kc.transform(*range(12, 19))]


@kc.struct
class Scale:
    factor: float


@kc.kernel
def scaled(s: Scale, a: kc.array(dtype=float)):
    i = kc.tid()
    a[i] = a[i] * s.factor


@pytest.mark.parametrize("index, type_name", [(0, "vec3f"), (1, "mat22f"), (2, "quatf"),
                                              (3, "transformf")])
@pytest.mark.parametrize("value", [123, 1.5, kc.float32(1.5), kc.int32(2)])
def test_a_single_number_for_a_composite_parameter_is_refused(index, type_name, value):
    args = [*composite_arguments(), kc.zeros(18)]
    args[index] = value
    name = composites.arg_names[index]
    with pytest.raises(RuntimeError, match=f"argument '{name}' expects {type_name} but got a "
                                           f"single value of type {type(value).__name__}"):
        kc.launch(composites, 1, inputs=args)


def test_composite_parameters_take_values_sequences_and_numpy_arrays():
    out = poisoned(18, np.float32)
    expected = np.arange(1.0, 19.0, dtype=np.float32)
    kc.launch(composites, 1, inputs=[*composite_arguments(), out])
    np.testing.assert_array_equal(out.numpy(), expected)
    out.zero_()
    kc.launch(composites, 1, inputs=[(1, 2, 3), [[4, 5], [6, 7]], np.arange(8.0, 12.0),
                                     list(range(12, 19)), out])
    np.testing.assert_array_equal(out.numpy(), expected)
    with pytest.raises(ValueError, match="Failed to convert argument for param v to vec3f"):
        kc.launch(composites, 1, inputs=[None, *composite_arguments()[1:], out])
    with pytest.raises(ValueError, match="Failed to convert argument for param v to vec3f"):
        kc.launch(composites, 1, inputs=[[1.0, 2.0], *composite_arguments()[1:], out])


@pytest.mark.parametrize("value", [True, np.bool_(True), np.float32(1.5), np.int64(3)])
def test_numpy_scalars_and_booleans_fill_composite_parameters_with_a_warning(value):
    out = poisoned(18, np.float32)
    for _ in range(2):  # every launch warns (a deprecated launch is never reused)
        out.fill_(-1.0)
        with pytest.warns(DeprecationWarning) as caught:
            kc.launch(composites, 1, inputs=[value, value, value, value, out])
        messages = "\n".join(str(w.message) for w in caught)
        for name, type_name in (("v", "vec3f"), ("m", "mat22f"), ("q", "quatf"),
                                ("t", "transformf")):
            assert (f"type `{type(value).__name__}` to the composite type `{type_name}` for "
                    f"kernel parameter '{name}' is deprecated") in messages
        np.testing.assert_array_equal(out.numpy(), np.full(18, float(value), np.float32))


def test_a_struct_parameter_refuses_none():
    with pytest.raises(RuntimeError, match="argument 's' expects Scale but got None"):
        kc.launch(scaled, 1, inputs=[None, kc.zeros(1)])


def test_launch_made_from_a_kernel_has_default_arguments():
    out = poisoned(18, np.float32)
    cmd = kc.Launch(composites, "cpu")
    assert isinstance(cmd, kc.Launch) and cmd.size == 0
    cmd.launch()  # dim 0: nothing runs
    assert np.isnan(out.numpy()).all()
    cmd.set_param_by_name("out", out)
    cmd.set_dim(1)
    cmd.launch()  # the composite parameters left unset are zero
    np.testing.assert_array_equal(out.numpy(), np.zeros(18, np.float32))
    cmd.set_param_at_index(0, (1.0, 2.0, 3.0))
    cmd.set_param_by_name("t", kc.transform(*range(12, 19)))
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3, *[0] * 8, *range(12, 19)])
    for setter, key in ((cmd.set_param_at_index, 0), (cmd.set_param_by_name, "v")):
        with pytest.raises(RuntimeError, match="argument 'v' expects vec3f but got a single"):
            setter(key, 123)
    with pytest.raises(ValueError, match="record it with adjoint=True"):
        cmd.set_param_by_name("out", out, adjoint=True)


def test_recorded_launch_takes_ctypes_descriptors(rng):
    data = nonzero(rng, 8, np.float32)
    a = kc.array(data, dtype=float)
    s = Scale(factor=2.0)
    cmd = kc.Launch(scaled, "cpu")
    cmd.set_param_at_index_from_ctype(0, s.__ctype__())
    cmd.set_param_by_name_from_ctype("a", a.__ctype__())
    cmd.set_dim(8)
    cmd.launch()
    np.testing.assert_array_equal(a.numpy(), data * 2)
    s.factor = 3.0  # as in Warp, a struct's descriptor follows the instance
    cmd.launch()
    np.testing.assert_array_equal(a.numpy(), data * 6)
    import ctypes

    class Foreign(ctypes.Structure):
        _fields_ = [("factor", ctypes.c_float)]

    with pytest.raises(TypeError, match="raw ctypes structures"):
        cmd.set_param_at_index_from_ctype(0, Foreign(1.0))


@kc.kernel
def squares(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] * x[i]


def test_recorded_backward_launch_takes_arguments_and_adjoints():
    x = kc.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    y = kc.zeros_like(x, requires_grad=True)
    y.grad.fill_(1.0)
    cmd = kc.Launch(squares, "cpu", adjoint=True)
    cmd.set_param_by_name("x", x)
    cmd.set_param_by_name("y", y)
    cmd.set_dim(3)
    cmd.launch()  # adjoints left None: the arrays' own gradients
    np.testing.assert_array_equal(x.grad.numpy(), [2, 4, 6])
    x2 = kc.array([4.0, 5.0, 6.0, 7.0], dtype=float)
    adj_x2, adj_y2 = kc.zeros_like(x2), kc.full_like(x2, 1.0)
    cmd.set_param_by_name("x", x2)
    cmd.set_param_by_name("y", kc.zeros_like(x2))
    cmd.set_param_by_name("x", adj_x2, adjoint=True)
    cmd.set_param_at_index(1, adj_y2, adjoint=True)
    cmd.set_dim(4)
    cmd.launch()
    np.testing.assert_array_equal(adj_x2.numpy(), 2 * x2.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), [2, 4, 6])  # untouched
    with pytest.raises(kc.KernelError, match="argument 'x'"):
        cmd.set_param_by_name("x", kc.zeros(4, dtype=int))
    cmd.launch()  # a refused argument leaves the launch as it was
    np.testing.assert_array_equal(adj_x2.numpy(), 4 * x2.numpy())
