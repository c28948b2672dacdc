"""PyTorch interop: zero-copy arrays both ways, dtypes, devices, streams, gradients, and
tensors passed straight to launches, with Warp's behaviour (`kernelc.interop.torch`)."""

from __future__ import annotations

import gc
import importlib.util

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import kernelc as kc  # noqa: E402
from tests import torch_interop_kernels as K  # noqa: E402
from tests.conftest import nonzero, run_python, run_warp  # noqa: E402


def _tensor(rng, shape, dtype=torch.float32, requires_grad=False):
    values = nonzero(rng, int(np.prod(shape)), np.float32).reshape(shape)
    return torch.tensor(values, dtype=dtype, requires_grad=requires_grad)


def _poison(shape, dtype=torch.float32):
    return torch.full(shape, float("nan"), dtype=dtype)


# ---- import, names, dtypes, devices, streams ------------------------------------------------


def test_import_kernelc_does_not_import_torch():
    proc = run_python("""
        import sys
        import kernelc as kc
        assert "torch" not in sys.modules
        names = (kc.from_torch, kc.to_torch, kc.device_from_torch, kc.stream_to_torch)
        assert "torch" not in sys.modules, "looking up the names imported torch"
        print("ok")
    """)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_names_are_exported_lazily():
    from kernelc.interop import torch as interop

    for name in interop.__all__:
        assert getattr(kc, name) is getattr(interop, name)


SCALARS = [
    (torch.bool, kc.bool), (torch.int8, kc.int8), (torch.int16, kc.int16),
    (torch.int32, kc.int32), (torch.int64, kc.int64), (torch.uint8, kc.uint8),
    (torch.float16, kc.float16), (torch.float32, kc.float32), (torch.float64, kc.float64),
]


def test_dtype_maps_match_warp():
    for torch_dtype, kc_dtype in SCALARS:
        assert kc.dtype_from_torch(torch_dtype) is kc_dtype
        assert kc.dtype_to_torch(kc_dtype) is torch_dtype
    # Torch's unsigned types past uint8 lack operators: Warp maps to the signed ones.
    for unsigned, signed in ((kc.uint16, torch.int16), (kc.uint32, torch.int32),
                             (kc.uint64, torch.int64)):
        assert kc.dtype_to_torch(unsigned) is signed
    assert kc.dtype_to_torch(float) is torch.float32
    with pytest.raises(TypeError, match="Cannot convert torch.complex64"):
        kc.dtype_from_torch(torch.complex64)
    with pytest.raises(TypeError, match="Cannot convert vec3"):
        kc.dtype_to_torch(kc.vec3)


def test_devices():
    assert kc.device_from_torch("cpu") == "cpu"
    assert kc.device_from_torch(torch.device("cpu")) == "cpu"
    assert kc.device_to_torch("cpu") == "cpu" and kc.device_to_torch(kc.get_device("cpu")) == "cpu"
    with pytest.raises(RuntimeError, match="Unsupported Torch device type meta"):
        kc.device_from_torch(torch.device("meta"))
    with pytest.raises(RuntimeError, match="Unsupported Torch device gpu"):
        kc.device_from_torch("gpu")
    with pytest.raises(ValueError, match="torch.device object or a string"):
        kc.device_from_torch(0)


def test_streams_on_the_cpu_raise():
    if torch.cuda.is_available():
        pytest.skip("checks the CPU-only error path")
    with pytest.raises(RuntimeError, match="needs CUDA"):
        kc.stream_from_torch()
    with pytest.raises(RuntimeError, match="Device cpu is not a CUDA device"):
        kc.stream_to_torch("cpu")
    with pytest.raises(RuntimeError, match="not a CUDA device"):
        kc.stream_to_torch(kc.Stream("cpu"))


# ---- from_torch / to_torch ------------------------------------------------------------------


def test_from_torch_shares_memory_both_ways(rng):
    x, y = _tensor(rng, (100,)), _tensor(rng, (100,))
    out = _poison((100,))
    ax, ay, aout = kc.from_torch(x), kc.from_torch(y), kc.from_torch(out)
    assert aout.ptr == out.data_ptr() and aout.dtype == kc.float32
    kc.launch(K.scale_add, 100, inputs=[ax, ay], outputs=[aout])
    np.testing.assert_allclose(out.numpy(), 2 * x.numpy() + y.numpy(), rtol=1e-6)
    x.mul_(-3.0)  # a Torch write shows in the array
    np.testing.assert_array_equal(ax.numpy(), x.numpy())


def test_from_torch_keeps_strides_of_views(rng):
    base = _tensor(rng, (12, 10))
    for view in (base[1::2, ::3], base.T, base[:, 4:]):
        out = _poison(tuple(view.shape))
        a = kc.from_torch(view)
        assert a.shape == tuple(view.shape)
        assert a.strides == tuple(4 * s for s in view.stride())
        kc.launch(K.triple_2d, a.shape, inputs=[a], outputs=[kc.from_torch(out)])
        np.testing.assert_allclose(out.numpy(), 3 * view.numpy(), rtol=1e-6)


def test_vector_and_matrix_dtypes_take_trailing_dims(rng):
    v = _tensor(rng, (50, 3))
    out = _poison((50,))
    a = kc.from_torch(v, dtype=kc.vec3)
    assert (a.shape, a.dtype) == ((50,), kc.vec3)
    kc.launch(K.vec3_lengths, 50, inputs=[a], outputs=[kc.from_torch(out)])
    np.testing.assert_allclose(out.numpy(), np.linalg.norm(v.numpy(), axis=1), rtol=1e-6)

    m, p = _tensor(rng, (40, 2, 2)), _tensor(rng, (40, 2))
    out2 = _poison((40, 2))
    kc.launch(K.mat_vec, 40, inputs=[kc.from_torch(m, dtype=kc.mat22),
                                     kc.from_torch(p, dtype=kc.vec2)],
              outputs=[kc.from_torch(out2, dtype=kc.vec2)])
    np.testing.assert_allclose(out2.numpy(), np.einsum("nij,nj->ni", m.numpy(), p.numpy()),
                               rtol=1e-5)
    strided = kc.from_torch(_tensor(rng, (8, 3))[::2], dtype=kc.vec3)  # outer stride only
    assert strided.shape == (4,) and strided.strides == (24,)
    assert kc.from_torch(torch.zeros(3), dtype=kc.vec3).shape == (1,)  # one element
    for dtype, width in ((kc.quat, 4), (kc.transform, 7), (kc.vec3d, 3)):
        t = torch.ones(5, width, dtype=torch.float64 if dtype == kc.vec3d else torch.float32)
        assert kc.from_torch(t, dtype=dtype).shape == (5,)


def test_every_scalar_dtype_round_trips(rng):
    for torch_dtype, kc_dtype in SCALARS:
        if torch_dtype == torch.bool:
            src = torch.tensor(rng.integers(0, 2, 64).astype(bool))
            dst = ~src  # poisoned: every element differs from the result
        else:
            src = torch.tensor(nonzero(rng, 64, np.float32, 1, 100)).to(torch_dtype)
            dst = torch.full((64,), 101, dtype=torch_dtype)
        kc.launch(K.copy_any, 64, inputs=[kc.from_torch(src)], outputs=[kc.from_torch(dst)])
        assert torch.equal(dst, src), torch_dtype
        back = kc.to_torch(kc.from_torch(src))
        assert back.dtype == torch_dtype and back.data_ptr() == src.data_ptr()
        assert kc.from_torch(back).dtype == kc_dtype


def test_integers_alias_as_signed_or_unsigned():
    t = torch.tensor([-1, 2, -3], dtype=torch.int32)
    a = kc.from_torch(t, dtype=kc.uint32)
    assert a.dtype == kc.uint32 and a.numpy()[0] == 2**32 - 1
    assert kc.from_torch(torch.tensor([True]), dtype=kc.uint8).dtype == kc.uint8
    u = kc.to_torch(kc.zeros(4, dtype=kc.uint32))  # unsigned tensors come back
    assert u.dtype == torch.uint32 and kc.from_torch(u).dtype == kc.uint32


@pytest.mark.parametrize("make, dtype, error, match", [
    (lambda: torch.zeros(4, 6), kc.vec3, RuntimeError, r"trailing shape must be \(3,\)"),
    (lambda: torch.zeros(2, 3, 4), kc.mat33, RuntimeError, r"trailing shape must be \(3, 3\)"),
    (lambda: torch.zeros(3, 8).T[:, :3], kc.vec3, RuntimeError, "not contiguous"),
    (lambda: torch.zeros(4), kc.float64, RuntimeError, "Cannot convert Torch type torch.float32"),
    (lambda: torch.zeros(4, 3), kc.vec3i, RuntimeError, "to kernelc type vec3i"),
    (lambda: torch.zeros(4, dtype=torch.uint8), kc.bool, RuntimeError, "Cannot convert"),
    (lambda: torch.zeros(4, dtype=torch.complex64), None, TypeError, "complex64"),
    (lambda: torch.tensor(1.0), None, ValueError, "0-d tensor"),
    (lambda: torch.zeros(1, 1, 1, 1, 2), None, ValueError, "1 to 4 dimensions"),
    (lambda: np.zeros(3), None, TypeError, "needs a torch.Tensor"),
])
def test_from_torch_errors(make, dtype, error, match):
    with pytest.raises(error, match=match):
        kc.from_torch(make(), dtype=dtype)


def test_return_ctype_gives_the_descriptor_and_launches(rng):
    v = _tensor(rng, (20, 3))
    out = _poison((20,))
    plain = kc.from_torch(v, dtype=kc.vec3, return_ctype=True)
    assert (plain.data, plain.grad, plain.ndim) == (v.data_ptr(), 0, 1)
    assert plain.shape == (20,) and plain.strides == (12,)
    kc.launch(K.vec3_lengths, 20, inputs=[plain], outputs=[kc.from_torch(out)])
    np.testing.assert_allclose(out.numpy(), np.linalg.norm(v.numpy(), axis=1), rtol=1e-6)
    with_grad = kc.from_torch(v, dtype=kc.vec3, requires_grad=True, return_ctype=True)
    assert with_grad.grad == v.grad.data_ptr() != 0
    given = kc.zeros(20, dtype=kc.vec3)
    assert kc.from_torch(v, dtype=kc.vec3, grad=given, return_ctype=True).grad == given.ptr


def test_views_report_the_storage_left_as_capacity():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    for view, left in ((base[1:3, 2:5], 64), (base[2:, 1::2], 44), (base[:, 3:], 84)):
        assert kc.from_torch(view).capacity == left  # bytes from the view's start on


def test_vectors_and_matrices_from_tensors():
    assert list(kc.vec3(torch.tensor([1.0, 2.0, 3.0]))) == [1.0, 2.0, 3.0]
    assert list(kc.quat(torch.tensor([1.0, 2.0, 3.0, 4.0]))) == [1.0, 2.0, 3.0, 4.0]
    m = kc.mat22(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert (m[0, 1], m[1, 0]) == (2.0, 3.0)
    assert list(kc.vec3(torch.tensor(2.5))) == [2.5, 2.5, 2.5]  # a 0-d tensor fills
    v = kc.vec4()
    v[1:] = torch.tensor([1.0, 2.0, 3.0])
    assert list(v) == [0.0, 1.0, 2.0, 3.0]
    t = kc.transform(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([4.0, 5.0, 6.0, 7.0]))
    assert list(t) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]

def test_to_torch_shares_memory_with_the_array_layout(rng):
    a = kc.array(nonzero(rng, 24, np.float32).reshape(4, 6))
    t = kc.to_torch(a)
    assert t.data_ptr() == a.ptr and t.shape == (4, 6) and not t.requires_grad
    t.add_(1.0)  # Torch writes, kernelc reads
    out = kc.zeros((4, 6))
    out.fill_(np.nan)
    kc.launch(K.triple_2d, (4, 6), inputs=[a], outputs=[out])
    np.testing.assert_allclose(out.numpy(), 3 * t.numpy(), rtol=1e-6)
    view = kc.to_torch(a[:, 1::2])
    assert view.stride() == (6, 2) and torch.equal(view, t[:, 1::2])
    assert kc.to_torch(kc.zeros(5, dtype=kc.mat22)).shape == (5, 2, 2)
    assert kc.to_torch(kc.zeros(5, dtype=kc.transform)).shape == (5, 7)


def test_to_torch_errors():
    @kc.struct
    class Particle:
        x: float

    with pytest.raises(RuntimeError, match="structs"):
        kc.to_torch(kc.zeros(3, dtype=Particle))
    with pytest.raises(TypeError, match="needs a kernelc array"):
        kc.to_torch(np.zeros(3))
    with pytest.raises(TypeError, match="type annotation"):
        kc.to_torch(kc.array(dtype=float))


def test_each_side_keeps_the_other_alive(rng):
    values = nonzero(rng, 1000, np.float32)
    a = kc.from_torch(torch.tensor(values))
    view = kc.from_torch(torch.tensor(values).reshape(10, 100))[2:5].numpy()
    t = kc.to_torch(kc.array(values))
    moved = torch.tensor(values)
    b = kc.from_torch(moved)
    moved.data = torch.zeros(1000)  # the tensor lets go of the memory the array views
    gc.collect()
    junk = [torch.full((1000,), -1.0) for _ in range(50)]  # would reuse freed memory
    junk += [kc.full(1000, -1.0) for _ in range(50)]
    np.testing.assert_array_equal(a.numpy(), values)
    np.testing.assert_array_equal(view, values.reshape(10, 100)[2:5])
    np.testing.assert_array_equal(t.numpy(), values)
    np.testing.assert_array_equal(b.numpy(), values)
    del junk


# ---- gradients ------------------------------------------------------------------------------


def test_grad_aliases_the_tensor_grad(rng):
    x = _tensor(rng, (6,), requires_grad=True)
    a = kc.from_torch(x)
    assert a.requires_grad and x.grad is not None and a.grad.ptr == x.grad.data_ptr()
    assert not kc.from_torch(x, requires_grad=False).requires_grad
    existing = _tensor(rng, (6,), requires_grad=True)
    existing.grad = torch.ones(6)
    assert kc.from_torch(existing).grad.ptr == existing.grad.data_ptr()
    plain = torch.ones(6)  # requires_grad=True on a plain tensor gives it a zero grad
    made = kc.from_torch(plain, requires_grad=True)
    assert plain.grad is not None and made.grad.ptr == plain.grad.data_ptr()
    np.testing.assert_array_equal(plain.grad.numpy(), np.zeros(6))
    g = torch.zeros(6)
    assert kc.from_torch(torch.ones(6), grad=g).grad.ptr == g.data_ptr()
    kg = kc.zeros(6)
    assert kc.from_torch(torch.ones(6), grad=kg).grad is kg
    v = kc.from_torch(torch.zeros(4, 3, requires_grad=True), dtype=kc.vec3)
    assert v.grad.dtype == kc.vec3 and v.grad.shape == (4,)
    with pytest.raises(ValueError, match="expected shape"):
        kc.from_torch(torch.ones(5), grad=torch.zeros(4))
    with pytest.raises(RuntimeError, match="Cannot convert Torch type torch.float64"):
        kc.from_torch(torch.ones(5), grad=torch.zeros(5, dtype=torch.float64))


def test_tape_backward_fills_the_tensor_grad(rng):
    x = _tensor(rng, (200,), requires_grad=True)
    xs = kc.from_torch(x[::2].detach().requires_grad_())  # a strided view
    loss = kc.zeros(1, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(K.square_sum, 100, inputs=[xs, loss])
    tape.backward(loss)
    expected = 2 * x.detach().numpy()[::2]
    np.testing.assert_allclose(xs.grad.numpy(), expected, rtol=1e-6)
    # The array's grad is the tensor's grad, so the result is in Torch.
    tensor_grad = kc.to_torch(xs.grad)
    np.testing.assert_allclose(tensor_grad.numpy(), expected, rtol=1e-6)
    tape.zero()
    assert not tensor_grad.any()


def test_to_torch_grad_aliases_the_array_grad(rng):
    a = kc.array(nonzero(rng, 64, np.float32), requires_grad=True)
    t = kc.to_torch(a)
    assert t.requires_grad and t.grad.data_ptr() == a.grad.ptr
    loss = kc.zeros(1, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(K.square_sum, 64, inputs=[a, loss])
    tape.backward(loss)
    np.testing.assert_allclose(t.grad.numpy(), 2 * a.numpy(), rtol=1e-6)
    assert not kc.to_torch(a, requires_grad=False).requires_grad
    assert kc.to_torch(kc.zeros(3), requires_grad=True).grad is None


class _Vec2Cubes(torch.autograd.Function):
    """`vec2_cubes` as a Torch operation: forward and backward kernels on the tensors."""

    @staticmethod
    def forward(ctx, xy):
        ctx.save_for_backward(xy)
        ctx.x = kc.from_torch(xy.detach(), dtype=kc.vec2, requires_grad=False)
        ctx.out = kc.full(len(xy), float("nan"))  # poisoned
        kc.launch(K.vec2_cubes, len(xy), inputs=[ctx.x], outputs=[ctx.out])
        return kc.to_torch(ctx.out)

    @staticmethod
    def backward(ctx, adj_out):
        (xy,) = ctx.saved_tensors
        adj_xy = torch.zeros_like(xy)
        kc.launch(K.vec2_cubes, len(xy), inputs=[ctx.x], outputs=[ctx.out],
                  adj_inputs=[kc.from_torch(adj_xy, dtype=kc.vec2)],
                  adj_outputs=[kc.from_torch(adj_out.contiguous())], adjoint=True)
        return adj_xy


def test_autograd_function_wrapping_a_kernel(rng):
    xy = _tensor(rng, (300, 2), requires_grad=True)
    weights = _tensor(rng, (300,))
    (_Vec2Cubes.apply(xy) * weights).sum().backward()
    ref = xy.detach().double().requires_grad_()
    (((ref[:, 0] ** 2) * ref[:, 1] + torch.sin(ref[:, 1])) * weights.double()).sum().backward()
    np.testing.assert_allclose(xy.grad.numpy(), ref.grad.numpy(), rtol=1e-5, atol=1e-5)


# ---- tensors as launch arguments ------------------------------------------------------------


def test_launch_takes_tensors(rng):
    x, y = _tensor(rng, (64,)), _tensor(rng, (64,))
    out = _poison((64,))
    kc.launch(K.scale_add, 64, inputs=[x, y], outputs=[out])
    np.testing.assert_allclose(out.numpy(), 2 * x.numpy() + y.numpy(), rtol=1e-6)
    v, lengths = _tensor(rng, (64, 3)), _poison((64,))
    kc.launch(K.vec3_lengths, 64, inputs=[v], outputs=[lengths])
    np.testing.assert_allclose(lengths.numpy(), np.linalg.norm(v.numpy(), axis=1), rtol=1e-6)
    base, out2 = _tensor(rng, (8, 10)), _poison((8, 5))
    kc.launch(K.triple_2d, (8, 5), inputs=[base[:, ::2]], outputs=[out2])  # strided
    np.testing.assert_allclose(out2.numpy(), 3 * base.numpy()[:, ::2], rtol=1e-6)
    ints = torch.tensor(nonzero(rng, 64, np.int64, 1, 1000))
    copied = torch.zeros(64, dtype=torch.int64)
    kc.launch(K.copy_any, 64, inputs=[ints], outputs=[copied])  # a generic kernel
    assert torch.equal(copied, ints)


def test_tape_leaves_tensors_passed_directly_alone(rng):
    # A tensor passed to a launch does not require grad, so its .grad (set by hand) is
    # not an adjoint: backward neither fails nor writes it, as with Warp.
    x, out = _tensor(rng, (64,)), _tensor(rng, (64,))
    x.grad, out.grad = torch.full((64,), 7.0), torch.ones(64)
    tape = kc.Tape()
    with tape:
        kc.launch(K.scale_add, 64, inputs=[x, x], outputs=[out])
    tape.backward()
    assert torch.equal(x.grad, torch.full((64,), 7.0))


def test_launch_follows_a_tensor_whose_memory_moved(rng):
    x, y = _tensor(rng, (32,)), _tensor(rng, (32,))
    out = _poison((32,))
    kc.launch(K.scale_add, 32, inputs=[x, y], outputs=[out])
    out.data = _poison((32,))  # same object, new memory: the launch must not reuse the old
    kc.launch(K.scale_add, 32, inputs=[x, y], outputs=[out])
    np.testing.assert_allclose(out.numpy(), 2 * x.numpy() + y.numpy(), rtol=1e-6)
    x.requires_grad_(True)  # now refused, though the packing for x exists
    with pytest.raises(kc.KernelError, match="requires grad"):
        kc.launch(K.scale_add, 32, inputs=[x, y], outputs=[out])
    square, out2 = _tensor(rng, (6, 6)), _poison((6, 6))
    for _ in range(2):  # the second launch transposes in place: same memory, new strides
        kc.launch(K.triple_2d, (6, 6), inputs=[square], outputs=[out2])
        np.testing.assert_allclose(out2.numpy(), 3 * square.numpy(), rtol=1e-6)
        square.t_()


@pytest.mark.parametrize("args, match", [
    (lambda: [torch.ones(8, requires_grad=True), torch.ones(8), torch.ones(8)], "requires grad"),
    (lambda: [torch.ones(8, dtype=torch.float64), torch.ones(8), torch.ones(8)],
     "torch.float64"),
    (lambda: [torch.ones(2, 4), torch.ones(8), torch.ones(8)], "expected a 1-d array"),
    (lambda: [torch.ones(8, device="meta"), torch.ones(8), torch.ones(8)], "meta"),
])
def test_launch_rejects_unfit_tensors(args, match):
    with pytest.raises(kc.KernelError, match=match) as err:
        kc.launch(K.scale_add, 8, inputs=args()[:2], outputs=args()[2:])
    assert "torch_interop_kernels.py" in str(err.value)


# ---- Warp's example_torch -------------------------------------------------------------------


def test_warp_example_torch_matches_warp(tmp_path):
    from tests.warp_examples import examples_dir

    folder = examples_dir()
    if folder is None:
        pytest.skip("warp-lang (with its examples) is not installed")
    source = (folder / "example_torch.py").read_text()
    warp_out = run_warp(f"""
        import importlib.util
        path = {str(folder / "example_torch.py")!r}
        spec = importlib.util.spec_from_file_location("example_torch", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        example = mod.Example(headless=True, num_particles=300)
        for _ in range(8):
            example.step()
        results["xy"] = example.xy.detach().numpy()
        results["z"] = example.z.detach().numpy()
    """, tmp_path)
    path = tmp_path / "kernelc_example_torch.py"  # kernelc reads kernels from the file
    path.write_text(source.replace("import warp as wp\n", "import kernelc as wp\n"))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    example = module.Example(headless=True, num_particles=300)
    for _ in range(8):
        example.step()
    np.testing.assert_allclose(example.xy.detach().numpy(), warp_out["xy"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(example.z.detach().numpy(), warp_out["z"], rtol=1e-5, atol=1e-6)


# ---- CUDA -----------------------------------------------------------------------------------


needs_torch_cuda = pytest.mark.skipif(
    not (torch.cuda.is_available() and kc.is_cuda_available()),
    reason="needs CUDA in both kernelc and PyTorch")


@pytest.mark.cuda
@needs_torch_cuda
def test_cuda_tensors_both_ways(rng):
    x, y = _tensor(rng, (256,)).cuda(), _tensor(rng, (256,)).cuda()
    out = _poison((256,)).cuda()
    kc.launch(K.scale_add, 256, inputs=[kc.from_torch(x), y], outputs=[kc.from_torch(out)],
              device="cuda:0")
    kc.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), (2 * x + y).cpu().numpy(), rtol=1e-6)
    a = kc.from_torch(x)
    assert a.device == kc.device_from_torch(x.device) == "cuda:0"
    back = kc.to_torch(a)
    assert back.device == x.device and back.data_ptr() == x.data_ptr()
    assert kc.device_to_torch("cuda:0") == "cuda:0"


@pytest.mark.cuda
@needs_torch_cuda
def test_cuda_streams_round_trip():
    torch_stream = torch.cuda.Stream()
    stream = kc.stream_from_torch(torch_stream)
    assert stream.cuda_stream == torch_stream.cuda_stream and stream.device == "cuda:0"
    assert kc.stream_to_torch(stream).cuda_stream == torch_stream.cuda_stream
    assert kc.stream_from_torch("cuda:0").cuda_stream == torch.cuda.current_stream().cuda_stream
    own = kc.Stream("cuda:0")
    assert kc.stream_to_torch(own).cuda_stream == own.cuda_stream
