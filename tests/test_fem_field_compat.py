"""Implicit and uniform fields as Warp programs use them: values changed through
`field.values.name`, traces on sides, funcs from one factory with different closures, a
uniform value's type kept; and `fem.cells` of a cell field."""

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem


@kc.func
def scaled_square(x: kc.vec2, scale: kc.vec2):
    return scale[0] * x[0] * x[0] + scale[1] * x[1]


def _summing(values):
    @kc.func
    def summed(x: kc.vec2):
        total = 0.0
        for i in range(kc.static(len(values))):
            total += kc.static(values[i])
        return total + 0.0 * x[0]

    return summed


def _nodes(space) -> np.ndarray:
    return space.node_positions().numpy().astype(np.float64)


def test_values_set_by_attribute_and_traces():
    geo = fem.Grid2D(res=kc.vec2i(3, 2), bounds_hi=kc.vec2(1.5, 1.0))
    space = fem.make_polynomial_space(geo, degree=2)
    field = space.make_field()
    implicit = fem.ImplicitField(fem.Cells(geo), func=scaled_square,
                                 values={"scale": kc.vec2(2.0, 3.0)})
    fem.interpolate(implicit, dest=field)
    x = _nodes(space)
    np.testing.assert_allclose(field.dof_values.numpy(), 2.0 * x[:, 0] ** 2 + 3.0 * x[:, 1],
                               rtol=1e-5, atol=1e-6)
    implicit.values.scale = kc.vec2(-1.0, 0.5)
    assert implicit.values["scale"] == kc.vec2(-1.0, 0.5)
    poison = np.full(space.node_count(), 77.0, dtype=np.float32)
    field.dof_values = kc.array(poison, dtype=float)
    fem.interpolate(implicit.trace(), dest=field, at=fem.BoundarySides(geo))
    boundary = np.isclose(x[:, 0], 0.0) | np.isclose(x[:, 0], 1.5) | np.isclose(x[:, 1], 0.0) \
        | np.isclose(x[:, 1], 1.0)
    got = field.dof_values.numpy()
    np.testing.assert_allclose(got[boundary], -x[boundary, 0] ** 2 + 0.5 * x[boundary, 1],
                               rtol=1e-5, atol=1e-6)
    assert np.all(got[~boundary] == 77.0)
    with pytest.raises(AttributeError, match="no parameter 'other'"):
        implicit.values.other = 1.0
    with pytest.raises(RuntimeError, match="cell elements"):
        implicit.trace().trace()


def test_funcs_of_one_factory_are_different_fields():
    geo = fem.Grid2D(res=kc.vec2i(2))
    field = fem.make_polynomial_space(geo).make_field()
    for values, want in (([1.0, 2.0], 3.0), ([10.0, 20.0, 5.0], 35.0)):
        fem.interpolate(fem.ImplicitField(fem.Cells(geo), func=_summing(values)), dest=field)
        np.testing.assert_allclose(field.dof_values.numpy(), want)


def test_uniform_values_keep_their_type():
    field = fem.UniformField(fem.Cells(fem.Grid2D(res=kc.vec2i(1, 1))), 1.0)
    field.value = 2.5
    assert field.value == 2.5
    with pytest.raises(TypeError, match="must remain float32, got vec2f"):
        field.value = kc.vec2(1.0)


@fem.integrand
def wrapped_boundary_value(s: fem.Sample, domain: fem.Domain, u: fem.Field):
    # the value across the unit square from each left/right boundary point
    x = domain(s)
    cells = fem.cells(domain)
    other = fem.lookup(cells, kc.vec2(1.0 - x[0] * 0.999 - 0.0005, x[1]))
    u_cells = fem.cells(u)
    same = fem.cells(u_cells)  # the cells of a cell field: itself
    return kc.where(x[0] <= 0.0 or x[0] >= 1.0, same(other), 0.0)


@fem.integrand
def linear(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return 1.0 + 2.0 * x[0] + x[1]


def test_cells_of_a_cell_field():
    geo = fem.Grid2D(res=kc.vec2i(4))
    field = fem.make_polynomial_space(geo).make_field()
    fem.interpolate(linear, dest=field)
    total = fem.integrate(wrapped_boundary_value, domain=fem.BoundarySides(geo),
                          fields={"u": field.trace()})
    # left side sees x ~ 1 (3 + y), right side x ~ 0 (1 + y): 3.5 + 1.5
    assert total == pytest.approx(5.0, abs=2e-3)
