"""Arrays of `@kc.struct` instances built from lists (`kc.array([s0, s1], dtype=S)`), and
read back on the host (`.numpy()`, `.list()`, `arr[i]`, `fill_`), checked against the
field values set in Python (the NumPy reference), in kernels writing poisoned outputs, and
against Warp's arrays built from the same lists."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import poisoned, run_warp


@kc.struct
class Inner:
    flag: kc.int8
    w: kc.vec2d


@kc.struct
class Particle:
    mass: float
    pos: kc.vec3
    count: int
    alive: bool
    frame: kc.mat22
    inner: Inner
    big: kc.float64


def make_particles(rng, n: int) -> tuple[list, dict[str, np.ndarray]]:
    """`n` Particle instances with random fields, and the fields as NumPy arrays."""
    fields = {
        "mass": rng.uniform(0.5, 2.0, n).astype(np.float32),
        "pos": rng.normal(size=(n, 3)).astype(np.float32),
        "count": rng.integers(-1000, 1000, n).astype(np.int32),
        "alive": rng.integers(0, 2, n).astype(bool),
        "frame": rng.normal(size=(n, 2, 2)).astype(np.float32),
        "flag": rng.integers(-100, 100, n).astype(np.int8),
        "w": rng.normal(size=(n, 2)),
        "big": rng.normal(size=n) * 1e200,
    }
    items = []
    for i in range(n):
        inner = Inner(flag=int(fields["flag"][i]), w=kc.vec2d(*fields["w"][i]))
        items.append(Particle(mass=float(fields["mass"][i]), pos=kc.vec3(*fields["pos"][i]),
                              count=int(fields["count"][i]), alive=bool(fields["alive"][i]),
                              frame=kc.mat22(*fields["frame"][i].reshape(-1)), inner=inner,
                              big=float(fields["big"][i])))
    return items, fields


def assert_fields(records: np.ndarray, fields: dict[str, np.ndarray]) -> None:
    """Every field of the records equals the reference (padding bytes are unspecified)."""
    for name in ("mass", "pos", "count", "alive", "frame", "big"):
        np.testing.assert_array_equal(records[name], fields[name], err_msg=name)
    np.testing.assert_array_equal(records["inner"]["flag"], fields["flag"])
    np.testing.assert_array_equal(records["inner"]["w"], fields["w"])


def test_array_from_a_list_of_struct_instances(rng):
    items, fields = make_particles(rng, 9)
    arr = kc.array(items, dtype=Particle)
    assert arr.shape == (9,) and arr.dtype == Particle._kc_type
    records = arr.numpy()
    assert records.dtype == Particle.numpy_dtype()
    assert_fields(records, fields)
    # a tuple, an object array, and no dtype (inferred from the items; Warp needs dtype=)
    for data, dtype in ((tuple(items), Particle), (np.array(items, dtype=object), Particle),
                        (items, None)):
        again = kc.array(data) if dtype is None else kc.array(data, dtype=dtype)
        assert again.dtype == Particle._kc_type
        assert_fields(again.numpy(), fields)


def test_nested_lists_and_shape(rng):
    items, fields = make_particles(rng, 6)
    grid = kc.array([items[:3], items[3:]], dtype=Particle)
    assert grid.shape == (2, 3)
    assert_fields(grid.numpy().reshape(-1), fields)
    shaped = kc.array(items, dtype=Particle, shape=(3, 2))
    assert shaped.shape == (3, 2)
    assert_fields(shaped.numpy().reshape(-1), fields)
    assert kc.array([], dtype=Particle).shape == (0,)


@kc.kernel
def k_read(items: kc.array(dtype=Particle), scalars: kc.array2d(dtype=float),
           wide: kc.array2d(dtype=kc.float64)):
    i = kc.tid()
    p = items[i]
    scalars[i, 0] = p.mass
    scalars[i, 1] = p.pos.y
    scalars[i, 2] = float(p.count)
    scalars[i, 3] = kc.where(p.alive, 1.0, -1.0)
    scalars[i, 4] = p.frame[1, 0]
    scalars[i, 5] = float(p.inner.flag)
    wide[i, 0] = p.inner.w.y
    wide[i, 1] = p.big


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda:0", marks=pytest.mark.cuda)])
def test_kernels_read_the_fields(rng, device):
    if device != "cpu" and not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    items, f = make_particles(rng, 17)
    with kc.ScopedDevice(device):
        arr = kc.array(items, dtype=Particle)
        scalars, wide = poisoned((17, 6), np.float32), poisoned((17, 2), np.float64)
        scalars, wide = scalars.to(device), wide.to(device)
        kc.launch(k_read, 17, inputs=[arr, scalars, wide])
        have, have_wide = scalars.numpy(), wide.numpy()
    want = np.stack([f["mass"], f["pos"][:, 1], f["count"], np.where(f["alive"], 1.0, -1.0),
                     f["frame"][:, 1, 0], f["flag"]], axis=1).astype(np.float32)
    np.testing.assert_array_equal(have, want)
    np.testing.assert_array_equal(have_wide, np.stack([f["w"][:, 1], f["big"]], axis=1))


def test_host_reads_give_instances(rng):
    items, fields = make_particles(rng, 4)
    arr = kc.array(items, dtype=Particle)
    back = arr.list()
    assert len(back) == 4 and all(type(p) is Particle for p in back)
    assert type(back[1].inner) is Inner
    assert_fields(kc.array(back, dtype=Particle).numpy(), fields)
    element = arr[2]
    assert type(element) is Particle
    assert float(element.mass) == fields["mass"][2]
    assert element.pos.tolist() == fields["pos"][2].tolist()
    assert int(element.inner.flag) == fields["flag"][2]
    assert bool(element.alive) == fields["alive"][2]
    assert kc.array([items[:2], items[2:]], dtype=Particle)[1, 0].count == fields["count"][2]


def test_fill_with_an_instance(rng):
    items, fields = make_particles(rng, 3)
    arr = kc.zeros(5, dtype=Particle)
    arr.fill_(items[1])
    records = arr.numpy()
    for name in ("mass", "pos", "count", "frame", "big"):
        np.testing.assert_array_equal(records[name], np.broadcast_to(
            fields[name][1], records[name].shape), err_msg=name)
    with pytest.raises(TypeError, match="cannot fill an array of .*Particle with Inner"):
        arr.fill_(Inner())


def test_gradients_of_struct_lists():
    arr = kc.array([Particle(), Particle(mass=2.0)], dtype=Particle, requires_grad=True)
    assert arr.grad.dtype == Particle._kc_type and not np.any(arr.grad.numpy()["mass"])


def test_errors(rng):
    items, _ = make_particles(rng, 3)
    with pytest.raises(TypeError, match="an array of .*Particle needs .*Particle instances, "
                                        "got int"):
        kc.array([items[0], 3], dtype=Particle)
    with pytest.raises(TypeError, match="got Inner"):
        kc.array([items[0], Inner()], dtype=Particle)
    with pytest.raises(TypeError, match="got Inner"):
        kc.array([items[0], Inner()])
    with pytest.raises(ValueError, match="rectangular"):
        kc.array([items[:2], items[2:]], dtype=Particle)
    with pytest.raises(ValueError, match="must be a sequence or array"):
        kc.array(items[0], dtype=Particle)


_WARP_DRIVER = """
@wp.struct
class Inner:
    flag: wp.int8
    w: wp.vec2d


@wp.struct
class Particle:
    mass: float
    pos: wp.vec3
    count: int
    alive: bool
    frame: wp.mat22
    inner: Inner
    big: wp.float64


items = []
for i in range(len(inputs["mass"])):
    p = Particle()
    p.mass = float(inputs["mass"][i])
    p.pos = wp.vec3(*inputs["pos"][i])
    p.count = int(inputs["count"][i])
    p.alive = bool(inputs["alive"][i])
    p.frame = wp.mat22(*inputs["frame"][i].reshape(-1))
    p.inner.flag = wp.int8(int(inputs["flag"][i]))
    p.inner.w = wp.vec2d(*inputs["w"][i])
    p.big = float(inputs["big"][i])
    items.append(p)
arr = wp.array(items, dtype=Particle, device="cpu")
results["bytes"] = np.frombuffer(arr.numpy().tobytes(), np.uint8)
results["itemsize"] = np.array(Particle.numpy_dtype()["itemsize"])
results["offsets"] = np.array(Particle.numpy_dtype()["offsets"])
"""


def test_same_bytes_as_warp(rng, tmp_path):
    items, fields = make_particles(rng, 7)
    want = run_warp(_WARP_DRIVER, tmp_path, **fields)
    arr = kc.array(items, dtype=Particle)
    assert int(want["itemsize"]) == Particle.numpy_dtype().itemsize
    assert want["offsets"].tolist() == list(Particle._kc_type.offsets)
    # Compare field by field: padding bytes between fields are unspecified.
    warp_records = np.frombuffer(want["bytes"].tobytes(), Particle.numpy_dtype())
    assert_fields(warp_records, fields)
    assert_fields(arr.numpy(), fields)
