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


# ---- assigning to fields on the host, checked as in Warp ------------------------------------


@kc.struct
class Fields:
    values: kc.array(dtype=kc.int32)
    grid: kc.array2d(dtype=kc.int32)
    picked: kc.indexedarray(dtype=kc.int32)
    v: kc.vec3
    m: kc.mat22
    q: kc.quat
    t: kc.transform
    inner: Inner
    u8: kc.uint8


@kc.kernel
def k_fields(s: Fields, out: kc.array(dtype=float)):
    out[0] = float(s.values[1])
    out[1] = float(s.picked[0])
    for k in range(3):
        out[2 + k] = s.v[k]
    out[5] = s.m[1, 0]
    out[6] = s.q[3]
    out[7] = s.t[6]
    out[8] = float(s.u8)


def test_array_fields_take_arrays_of_their_dtype_and_ndim():
    s = Fields()
    ints = kc.array(np.array([3, 4, 5], np.int32))
    cases = [
        ("values", [1, 2, 3], "Struct field 'values' expects a Warp array, got list"),
        ("values", np.zeros(3, np.int32), "expects a Warp array, got ndarray"),
        ("values", kc.indexedarray(ints, [kc.array(np.array([0], np.int32))]),
         "expects a Warp array, got indexedarray"),
        ("values", kc.zeros(3, dtype=float),
         "Struct field 'values' expects dtype int32, got float32"),
        ("values", kc.zeros((2, 2), dtype=kc.int32),
         r"Struct field 'values' expects an array with 1 dimension\(s\), got 2 dimension\(s\)"),
        ("grid", ints, r"expects an array with 2 dimension\(s\), got 1 dimension\(s\)"),
        ("picked", ints, "Struct field 'picked' expects a Warp indexed array, got array"),
        ("picked", kc.indexedarray(kc.zeros(3, dtype=float), [None]),
         "Struct field 'picked' expects dtype int32, got float32"),
    ]
    for name, value, message in cases:
        with pytest.raises(TypeError, match=message):
            setattr(s, name, value)
        assert getattr(s, name) is None  # a refused value leaves the field as it was
    s.values = ints
    s.picked = kc.indexedarray(ints, [kc.array(np.array([2], np.int32))])
    out = kc.zeros(9)
    kc.launch(k_fields, 1, inputs=[s, out])
    assert out.numpy()[:2].tolist() == [4, 5]
    s.values = None  # a null array, as in Warp
    assert s.values is None


def test_array_field_keeps_its_gradient_alive_until_replaced():
    import gc
    import weakref

    for replacement in (None, kc.zeros(3, dtype=kc.int32)):
        s = Fields()
        data = kc.zeros(3, dtype=kc.int32, requires_grad=True)
        grad = weakref.ref(data.grad)
        s.values = data
        assert s._values_grad is grad()
        del data
        s.values = replacement
        gc.collect()
        assert s._values_grad is None and grad() is None


def test_composite_fields_convert_and_copy_what_they_are_given():
    s = Fields()
    source = kc.vec3(1.0, 2.0, 3.0)
    s.v = source
    source[0] = 9.0  # the field holds a copy, as Warp's struct storage does
    assert isinstance(s.v, kc.vec3) and s.v.tolist() == [1, 2, 3]
    for value in ([4, 5, 6], (4.0, 5.0, 6.0), np.array([4.0, 5.0, 6.0])):
        s.v = value
        assert isinstance(s.v, kc.vec3) and s.v.tolist() == [4, 5, 6]
    for value in (((1, 2), (3, 4)), [1, 2, 3, 4], np.array([[1, 2], [3, 4]])):
        s.m = value
        assert isinstance(s.m, kc.mat22) and s.m.tolist() == [[1, 2], [3, 4]]
    s.q = [0.0, 0.0, 0.0, 1.0]
    s.t = kc.transform(kc.vec3(1.0, 2.0, 3.0), kc.quat(0.0, 0.0, 0.0, 1.0))
    s.values = kc.zeros(3, dtype=kc.int32)
    s.picked = kc.indexedarray(s.values, [kc.array(np.array([0], np.int32))])
    s.u8 = kc.uint8(7)
    out = kc.zeros(9)
    kc.launch(k_fields, 1, inputs=[s, out])
    np.testing.assert_array_equal(out.numpy()[2:], [4, 5, 6, 3, 1, 1, 7])
    s.v = None  # None is the zero value
    assert isinstance(s.v, kc.vec3) and not s.v.any()
    with pytest.raises(TypeError, match="takes 3 components, got 2"):
        s.v = [1.0, 2.0]


@pytest.mark.parametrize("field, type_name", [
    ("v", "vec3f"), ("m", "mat22f"), ("q", "quatf"), ("t", "transformf")])
def test_a_single_number_for_a_composite_field_is_refused(field, type_name):
    s = Fields()
    before = getattr(s, field).copy()
    for value in (123, 1.5, kc.float32(1.5), kc.int32(2)):
        with pytest.raises(TypeError, match=f"Struct field '{field}' expects {type_name} but "
                                            f"got a single value of type {type(value).__name__}"):
            setattr(s, field, value)
        np.testing.assert_array_equal(getattr(s, field), before)


@pytest.mark.parametrize("value", [True, np.bool_(True), np.float32(1.5), np.int64(3)])
def test_numpy_scalars_and_booleans_fill_a_composite_field_with_a_warning(value):
    s = Fields()
    for field, type_name in (("v", "vec3f"), ("m", "mat22f"), ("t", "transformf")):
        with pytest.warns(DeprecationWarning, match=f"type `{type(value).__name__}` to the "
                          f"composite type `{type_name}` for struct field '{field}' is "
                          f"deprecated"):
            setattr(s, field, value)
        result = np.asarray(getattr(s, field))
        np.testing.assert_array_equal(result, np.full(result.shape, float(value), np.float32))


def test_nested_struct_field_takes_an_instance_of_its_struct():
    s = Fields()
    inner = Inner(flag=3)
    s.inner = inner
    assert s.inner is inner
    for value in (None, 3, Body()):
        with pytest.raises(RuntimeError, match="Struct field 'inner' expects a .*Inner instance"):
            s.inner = value
    assert s.inner is inner


def test_struct_classes_and_scalar_fields_as_in_warp():
    assert Fields.cls is Fields and isinstance(Fields(), Fields.cls)
    s = Fields()
    assert isinstance(s.u8, kc.uint8) and not isinstance(s.u8, kc.int32)
    s.u8 = kc.uint8(200)
    assert isinstance(s.u8, kc.uint8) and int(s.u8) == 200
    s.u8 = 5  # a Python number stays one
    assert type(s.u8) is int
    s.u8 = None
    assert isinstance(s.u8, kc.uint8) and s.u8 == 0
    with pytest.raises(RuntimeError, match="does not exist note"):
        s.note = "not a field"  # a typo in a field name is caught, as in Warp


def test_a_struct_deriving_from_a_struct_is_refused():
    @kc.struct
    class Parent:
        x: int

    with pytest.raises(RuntimeError, match="Warp structs must be defined as base classes$"):
        @kc.struct
        class Child(Parent):
            y: int


def test_module_hash_follows_struct_fields_not_identity(tmp_path):
    import sys
    import types

    module = types.ModuleType("kc_struct_hash_probe")
    module.__file__ = str(tmp_path / "probe.py")

    def redefined(field_type: str) -> str:
        """The module's hash after (re)defining its struct and kernel."""
        source = (f"import kernelc as kc\n\n@kc.struct\nclass S:\n    i: {field_type}\n\n"
                  f"@kc.kernel\ndef k(a: kc.array(dtype=S)):\n    i = kc.tid()\n")
        (tmp_path / "probe.py").write_text(source)
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        assert module.k.__module__ == module.__name__
        return kc.get_module(module.k.__module__).hash_module()

    sys.modules[module.__name__] = module
    try:
        first = redefined("int")
        assert redefined("int") == first  # the same fields in a new class: the same hash
        assert redefined("float") != first
    finally:
        del sys.modules[module.__name__]


def test_an_array_of_structs_dtype_equals_its_class():
    @kc.struct
    class Body:
        mass: float

    @kc.struct
    class Twin:  # the same fields, another struct
        mass: float

    bodies = kc.zeros(3, dtype=Body)
    assert bodies.dtype == Body and Body == bodies.dtype and bodies.dtype != Twin
    assert bodies.dtype != kc.zeros(1, dtype=Twin).dtype
    assert {bodies.dtype: 1}[kc.zeros(1, dtype=Body).dtype] == 1
