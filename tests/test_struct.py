"""`@kc.struct`: host construction, kernel arguments, locals, funcs, nesting, arrays of structs."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc


@kc.struct
class Inner:
    flag: kc.int8
    v: kc.vec3


@kc.struct
class Body:
    mass: float
    inner: Inner
    m: kc.mat22
    big: kc.float64
    data: kc.array(dtype=float)


@kc.func
def heavier(b: Body, f: float) -> Body:
    out = b
    out.mass = b.mass * f
    return out


@kc.kernel
def k_body(b: Body, out: kc.array(dtype=float)):
    h = heavier(b, 2.0)
    local = Body()
    local.inner.v = h.inner.v * 3.0
    local.inner.v.y = 7.0
    out[0] = h.mass
    out[1] = local.inner.v[0]
    out[2] = local.inner.v.y
    out[3] = float(b.inner.flag)
    out[4] = b.m[1, 0]
    out[5] = b.data[1]
    out[6] = float(b.big)
    out[7] = local.mass
    b.data[0] = 42.0


def test_struct_round_trip_host_kernel_host():
    b = Body()
    assert b.mass == 0 and b.inner.v.tolist() == [0, 0, 0] and b.data is None
    b.mass = 1.5
    b.inner.flag = 5
    b.inner.v = kc.vec3(1, 2, 3)
    b.m = kc.mat22(1, 2, 3, 4)
    b.big = 1e300
    b.data = kc.array(np.array([1, 2, 3], np.float32))
    out = kc.array(np.full(8, np.nan, np.float32))
    kc.launch(k_body, 1, inputs=[b, out])
    np.testing.assert_allclose(out.numpy(), [3, 3, 7, 5, 3, 2, np.inf, 0])
    assert b.data.numpy().tolist() == [42, 2, 3]


def test_layout_matches_c_and_numpy():
    st = Inner._kc_type
    assert st.offsets == (0, 4) and st.size == 16
    assert Body._kc_type.offsets == (0, 4, 20, 40, 48)
    dtype = Inner.numpy_dtype()
    assert dtype.itemsize == 16 and dtype.fields["v"][1] == 4


@kc.kernel
def k_struct_array(items: kc.array(dtype=Inner), out: kc.array(dtype=Inner)):
    i = kc.tid()
    s = items[i]
    s.v = s.v * 2.0
    s.flag = s.flag + kc.int8(1)
    out[i] = s
    out[i].v.z = 5.0  # a write through an array element stores the element back


def test_arrays_of_structs_with_numpy_structured_dtype(rng):
    n = 10
    data = np.zeros(n, dtype=Inner.numpy_dtype())
    data["flag"] = np.arange(n)
    data["v"] = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    items = kc.array(data, dtype=Inner)
    out = kc.zeros(n, dtype=Inner)
    kc.launch(k_struct_array, n, inputs=[items, out])
    result = out.numpy()
    assert result["flag"].tolist() == list(range(1, n + 1))
    np.testing.assert_allclose(result["v"][:, :2], 2 * data["v"][:, :2])
    assert (result["v"][:, 2] == 5).all()


def test_wrong_struct_type_at_launch():
    @kc.struct
    class Other:
        mass: float

    out = kc.zeros(8)
    with pytest.raises(kc.KernelError, match="argument 'b': expected .*Body, got .*Other"):
        kc.launch(k_body, 1, inputs=[Other(), out])


def test_unknown_field_is_a_compile_error():
    @kc.kernel
    def k(b: Inner, out: kc.array(dtype=float)):
        out[0] = b.mass

    with pytest.raises(kc.KernelError, match="struct '.*Inner' has no field 'mass'"):
        kc.compile(k)


@kc.struct
class Particle:
    dt: float
    gravity: kc.vec3
    m: kc.array(dtype=float)


@kc.kernel
def k_construct(p: Particle, out: kc.array(dtype=kc.vec3), outs: kc.array(dtype=float)):
    i = kc.tid()
    scaled = Particle(1.0, p.gravity / p.m[i] * p.dt, p.m)
    named = Particle(gravity=kc.vec3(1.0, 2.0, 3.0), dt=0.5, m=p.m)
    out[i] = scaled.gravity + named.gravity * named.dt
    outs[i] = scaled.m[i] + scaled.dt


def test_struct_constructed_from_field_values(rng):
    masses = rng.uniform(0.5, 4.0, 5).astype(np.float32)
    p = Particle()
    p.dt, p.gravity, p.m = 0.1, kc.vec3(0.5, -9.8, 1.0), kc.array(masses, dtype=float)
    out = kc.array(np.full((5, 3), np.nan, np.float32), dtype=kc.vec3)
    outs = kc.array(np.full(5, np.nan, np.float32), dtype=float)
    kc.launch(k_construct, 5, [p, out, outs])
    g = np.float32([0.5, -9.8, 1.0])
    expected = g[None, :] / masses[:, None] * np.float32(0.1) + np.float32([0.5, 1.0, 1.5])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(outs.numpy(), masses + 1.0, rtol=1e-6)


@pytest.mark.parametrize("call, message", [
    ("Particle(1.0, kc.vec3(0.0))", "takes a value for every field or none; missing m"),
    ("Particle(1.0, kc.vec3(0.0), p.m, 2.0)", "takes 3 field values \\(dt, gravity, m\\)"),
    ("Particle(1.0, kc.vec3(0.0), p.m, dt=2.0)", "two values for field 'dt'"),
    ("Particle(1.0, kc.vec3(0.0), mass=p.m)", "has no field 'mass'"),
    ("Particle(1.0, 2.0, p.m)", "expected a value of type vec3"),
])
def test_struct_constructor_errors(call, message, tmp_path):
    source = tmp_path / "bad_struct_call.py"
    source.write_text(f"""import kernelc as kc
from tests.test_struct import Particle

@kc.kernel
def k(p: Particle):
    q = {call}
""")
    namespace: dict = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    with pytest.raises(kc.KernelError, match=message) as info:
        kc.compile(namespace["k"])
    assert "bad_struct_call.py:6" in str(info.value) and "^" in str(info.value)
