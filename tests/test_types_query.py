"""Warp's host-side type introspection (`kc.types.type_is_vector`, `is_array`,
`types_equal`, `type_repr`, ...). The expected values are what Warp 1.19 gives for the
same types and values."""

import ctypes
import typing

import numpy as np
import pytest

import kernelc as kc

T = kc.types


@kc.struct
class Particle:
    mass: float
    pos: kc.vec3


TYPE_PREDICATES = ["type_is_int", "type_is_float", "type_is_scalar", "type_is_vector",
                   "type_is_quaternion", "type_is_matrix", "type_is_transformation",
                   "type_is_composite", "type_is_value", "type_is_struct", "type_is_array",
                   "type_is_tile"]
# type: (predicates that hold, type_repr, type_size, type_size_in_bytes)
TYPES = [
    (int, "int scalar value", "int", 1, 4),
    (float, "float scalar value", "float", 1, 4),
    (kc.int8, "int scalar value", "int8", 1, 1),
    (kc.uint64, "int scalar value", "uint64", 1, 8),
    (kc.float16, "float scalar value", "float16", 1, 2),
    (kc.vec3, "vector composite value", "vec3f", 3, 12),
    (kc.vec3d, "vector composite value", "vec3d", 3, 24),
    (kc.vec4ub, "vector composite value", "vec4ub", 4, 4),
    (kc.mat22, "matrix composite value", "mat22f", 4, 16),
    (kc.mat33d, "matrix composite value", "mat33d", 9, 72),
    (kc.quat, "quaternion composite value", "quatf", 4, 16),
    (kc.quatd, "quaternion composite value", "quatd", 4, 32),
    (kc.transform, "transformation composite value", "transformf", 7, 28),
    (T.vector(5, kc.float32), "vector composite value", "vector(length=5, dtype=float32)", 5, 20),
    (T.matrix((2, 5), kc.float64), "matrix composite value",
     "matrix(shape=(2, 5), dtype=float64)", 10, 80),
    (Particle, "struct", None, 1, 16),
]


@pytest.mark.parametrize("t, holds, name, size, nbytes", TYPES)
def test_type_predicates_and_sizes(t, holds, name, size, nbytes):
    expected = {p for p in TYPE_PREDICATES if p.split("_")[-1] in holds.split()}
    if "int" in holds.split() or "float" in holds.split():
        expected.add("type_is_scalar")
    got = {p for p in TYPE_PREDICATES if getattr(T, p)(t)}
    assert got == expected
    if name is not None:
        assert T.type_repr(t) == name
    assert T.type_size(t) == size and T.type_size_in_bytes(t) == nbytes


def test_bool_arrays_and_struct_names():
    assert T.type_is_value(bool) and not T.type_is_scalar(bool) and not T.type_is_int(bool)
    assert T.type_is_array(kc.array) and T.type_is_array(kc.indexedarray)
    assert not T.type_is_array(kc.vec3) and not T.type_is_struct(kc.vec3)
    assert T.type_repr(Particle).endswith("Particle")
    assert T.type_repr(kc.array(dtype=kc.vec3, ndim=2)) == "array(ndim=2, dtype=vec3f)"
    assert T.type_repr(typing.Any) == "Any"
    assert T.type_repr(kc.array).endswith(".array")


VALUE_PREDICATES = ["is_int", "is_float", "is_scalar", "is_vector", "is_quaternion",
                    "is_matrix", "is_transformation", "is_composite", "is_value", "is_struct",
                    "is_array", "is_tile"]
VALUES = [
    (1, {"is_int", "is_scalar", "is_value"}),
    (1.5, {"is_float", "is_scalar", "is_value"}),
    (True, {"is_value"}),
    (kc.int8(3), {"is_int", "is_scalar", "is_value"}),
    (kc.float32(2.0), {"is_float", "is_scalar", "is_value"}),
    (kc.vec3(1, 2, 3), {"is_vector", "is_composite", "is_value"}),
    (kc.mat22(1, 2, 3, 4), {"is_matrix", "is_composite", "is_value"}),
    (kc.quat(0, 0, 0, 1), {"is_quaternion", "is_composite", "is_value"}),
    (kc.transform(), {"is_transformation", "is_composite", "is_value"}),
    (Particle(), {"is_struct"}),
    (kc.zeros(3, dtype=float), {"is_array"}),
    (kc.array(dtype=kc.vec3), {"is_array"}),
    ("x", set()),
    (None, set()),
    (np.zeros(3), set()),
]


@pytest.mark.parametrize("value, expected", VALUES)
def test_value_predicates(value, expected):
    assert {p for p in VALUE_PREDICATES if getattr(T, p)(value)} == expected


def test_types_equal():
    V = T.vector
    assert T.types_equal(float, kc.float32) and T.types_equal(int, kc.int32)
    assert T.types_equal(kc.vec3, V(3, float)) and T.types_equal(Particle, Particle)
    assert T.types_equal(kc.mat22, T.matrix((2, 2), kc.float32)) and T.types_equal(bool, kc.bool)
    assert not T.types_equal(kc.vec3, kc.quat) and not T.types_equal(kc.vec3, kc.vec3d)
    assert not T.types_equal(kc.float32, kc.float64)
    # Arrays compare by class and dtype (not by ndim), as in Warp.
    assert T.types_equal(kc.array(dtype=float), kc.array(dtype=float))
    assert T.types_equal(kc.array(dtype=float, ndim=2), kc.array(dtype=float))
    assert not T.types_equal(kc.array(dtype=float), kc.array(dtype=int))


def test_type_ctype():
    assert [T.type_ctype(t) for t in (float, int, bool, kc.float64, kc.uint8)] == [
        ctypes.c_float, ctypes.c_int32, ctypes.c_bool, ctypes.c_double, ctypes.c_uint8]
    assert ctypes.sizeof(T.type_ctype(kc.vec3)) == 12
    assert ctypes.sizeof(T.type_ctype(Particle)) == 16
    with pytest.raises(TypeError, match="invalid data type"):
        T.type_ctype("float")
