"""The value types of `kernelc.fem`: samples, element coordinates, index constants and tags.

Names and meanings are Warp's (`warp.fem.Sample`, `warp.fem.Coords`, ...). A `Sample` is
what an integrand receives: the element, the coordinates of the point inside it, the
quadrature point and, while a linear or bilinear form is assembled, the test and trial
degrees of freedom being evaluated.
"""

from enum import IntEnum
from functools import cache
from typing import Any

import kernelc as kc

Coords = kc.vec3
"""Coordinates of a point inside an element (float32); unused components are zero."""

Coords_f64 = kc.vec3d
"""Coordinates of a point inside an element, in float64."""

ElementIndex = int
QuadraturePointIndex = int
NodeIndex = int
DofIndex = kc.vec2i
"""(node index in the element, degree of freedom of the node)."""

OUTSIDE = -1.0e8
"""Coordinate value marking a point that is not in an element."""

NULL_ELEMENT_INDEX = -1
NULL_QP_INDEX = -1
NULL_NODE_INDEX = (1 << 31) - 1  # larger than any node index, so it sorts last
NULL_DOF_INDEX = kc.vec2i(-1, -1)


class ElementKind(IntEnum):
    """Kind of the elements of a domain."""

    CELL = 0
    SIDE = 1


@kc.struct
class Sample:
    """A point in an element, as integrands see it (float32 geometries)."""

    element_index: int
    element_coords: kc.vec3
    qp_index: int
    qp_weight: float
    test_dof: kc.vec2i
    trial_dof: kc.vec2i


@kc.struct
class Sample_f64:
    """A point in an element, as integrands see it (float64 geometries)."""

    element_index: int
    element_coords: kc.vec3d
    qp_index: int
    qp_weight: kc.float64
    test_dof: kc.vec2i
    trial_dof: kc.vec2i


def coords_type(scalar_type: Any) -> Any:
    """The element-coordinates vector type for a geometry scalar type."""
    return Coords_f64 if scalar_type == kc.float64 else Coords


def sample_type(scalar_type: Any) -> Any:
    """The Sample struct for a geometry scalar type."""
    return Sample_f64 if scalar_type == kc.float64 else Sample


@cache
def vec_type(length: int, scalar_type: Any) -> Any:
    """`kc.types.vector(length, scalar_type)`, one object per arguments."""
    return kc.types.vector(length=length, dtype=scalar_type)


@cache
def mat_type(rows: int, cols: int, scalar_type: Any) -> Any:
    """`kc.types.matrix((rows, cols), scalar_type)`, one object per arguments."""
    return kc.types.matrix(shape=(rows, cols), dtype=scalar_type)


@kc.func
def make_free_sample(element_index: int, element_coords: kc.vec3):
    """A Sample at `element_coords` in an element, tied to no quadrature point or dof."""
    s = Sample()
    s.element_index = element_index
    s.element_coords = element_coords
    s.qp_index = -1
    s.qp_weight = 0.0
    s.test_dof = kc.vec2i(-1, -1)
    s.trial_dof = kc.vec2i(-1, -1)
    return s


@kc.func
def make_free_sample(element_index: int, element_coords: kc.vec3d):  # noqa: F811
    s = Sample_f64()
    s.element_index = element_index
    s.element_coords = element_coords
    s.qp_index = -1
    s.qp_weight = kc.float64(0.0)
    s.test_dof = kc.vec2i(-1, -1)
    s.trial_dof = kc.vec2i(-1, -1)
    return s


class Field:
    """Annotation of the integrand parameters that receive fields (`fem.Field`)."""


class Domain:
    """Annotation of the integrand parameter that receives the integration domain."""


@cache
def sample_builder(scalar_type: Any) -> Any:
    """A func (element, coords, qp_index, qp_weight, test_dof, trial_dof) -> Sample."""
    SampleType = sample_type(scalar_type)
    CoordsType = coords_type(scalar_type)

    @kc.func
    def make_sample(element_index: int, coords: CoordsType, qp_index: int, qp_weight: scalar_type,
                    test_dof: kc.vec2i, trial_dof: kc.vec2i):
        s = SampleType()
        s.element_index = element_index
        s.element_coords = coords
        s.qp_index = qp_index
        s.qp_weight = qp_weight
        s.test_dof = test_dof
        s.trial_dof = trial_dof
        return s

    return make_sample
