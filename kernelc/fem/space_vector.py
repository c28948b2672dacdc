"""Function spaces of vector-valued bases: Nedelec (H(curl), covariant) and Raviart-Thomas
(H(div), contravariant) (Warp's `CovariantFunctionSpace`, `ContravariantFunctionSpace`,
`make_covariant_function_space`, `make_contravariant_function_space`).

Each node holds one scalar dof; its basis function is the shape's reference vector field,
times the topology's sign for the cell, mapped to the world by a "value map" J:
- covariant: J = F^-T (F the cell's deformation gradient), so tangential components are
  kept across cells;
- contravariant: J = F / |det F| (Piola), so normal fluxes are kept.
Gradients are J (dW F^-1), with dW the reference Jacobian of the weight (the value map's own
variation is left out, as in Warp), divergences their trace, `fem.curl` the skew part of the
gradient. On sides, a space is seen through its trace as the scalar spaces are (the inner
cell's nodes, then the outer cell's), each mapped with its own cell's J.

Interpolation writes a node's dof from a world value v as dot(J^-1 v, sign * dual), with the
shape's dual weights (`node_dual_weights`): for the trace, J^-1 is the inner cell's.
"""

from typing import Any

import kernelc as kc
from kernelc.fem.field_eval import FieldEval
from kernelc.fem.shape_vector import COVARIANT, VectorShapeFunction
from kernelc.fem.space import FunctionSpace, ShapeBasisSpace
from kernelc.fem.topology_vector import host_element_signs
from kernelc.fem.types import ElementKind, make_free_sample
from kernelc.fem.valuetypes import ValueAlgebra, value_algebra


class VectorValuedFunctionSpace(FunctionSpace):
    """A space of one scalar dof per node of a vector-valued basis (Warp's
    `VectorValuedFunctionSpace`): values are vectors of the geometry's dimension."""

    def __init__(self, basis: ShapeBasisSpace) -> None:
        shape = basis.shape
        if not isinstance(shape, VectorShapeFunction):
            raise ValueError("vector-valued function spaces need a Nedelec or Raviart-Thomas "
                             "basis")
        geo = basis.geometry
        if geo.dimension != geo.cell_dimension:
            raise NotImplementedError(f"{shape.name} spaces on {geo.name} (cells of another "
                                      "dimension than the world's) are not supported yet")
        self._basis = basis
        scalar = geo.scalar_type
        self.dtype = kc.types.vector(length=geo.dimension, dtype=scalar)
        self.dof_dtype = scalar
        self.dof_mapper = None
        self.ORDER = basis.ORDER
        self.NODE_DOF_COUNT = 1
        self.VALUE_DOF_COUNT = geo.dimension
        self.dimension = geo.dimension
        self.covariant = shape.VALUE == COVARIANT
        self._signs: dict[str, Any] = {}

    @property
    def name(self) -> str:
        return f"{self._basis.name}_{'Covariant' if self.covariant else 'Contravariant'}"

    @property
    def algebra(self) -> ValueAlgebra:
        """The value types (vectors of the geometry's dimension, their gradients)."""
        return value_algebra(kc.types.as_type(self.dtype), self.geometry.dimension)

    def element_signs(self, device: Any = None) -> Any:
        """(cells, nodes per cell) orientation signs, a `kc.array2d` of the scalar type."""
        key = str(kc.get_device(device))
        if key not in self._signs:
            self._signs[key] = kc.array(host_element_signs(self.topology),
                                        dtype=self.geometry.scalar_type, device=device)
        return self._signs[key]

    def fill_field_arg(self, arg: Any, device: Any) -> None:
        """Sets what the space adds to a field's struct (the signs)."""
        arg.element_signs = self.element_signs(device)

    def field_eval(self, kind: str, domain: Any) -> FieldEval:
        """The struct and operator funcs of a "test", "trial" or "discrete" field."""
        return _field_eval(kind, self, domain)

    def node_dof_func(self, domain: Any) -> Any:
        """(signs, elt_arg, element, local node, node coords, world value) -> the node's dof
        (interpolation at the nodes of `domain`'s elements)."""
        return _dof_func(self, domain)


class CovariantFunctionSpace(VectorValuedFunctionSpace):
    """Values mapped by F^-T (Nedelec bases)."""


class ContravariantFunctionSpace(VectorValuedFunctionSpace):
    """Values mapped by F / |det F| (Raviart-Thomas bases)."""


def make_covariant_function_space(basis_space: ShapeBasisSpace) -> CovariantFunctionSpace:
    """The covariant space of a Nedelec basis (Warp's `make_covariant_function_space`)."""
    if getattr(basis_space.shape, "VALUE", None) != COVARIANT:
        raise ValueError("Covariant function spaces may only be constructed from covariant "
                         "vector-valued basis")
    return CovariantFunctionSpace(basis_space)


def make_contravariant_function_space(basis_space: ShapeBasisSpace
                                      ) -> ContravariantFunctionSpace:
    """The contravariant space of a Raviart-Thomas basis (Warp's
    `make_contravariant_function_space`)."""
    value = getattr(basis_space.shape, "VALUE", None)
    if value is None or value == COVARIANT:
        raise ValueError("Contravariant function spaces may only be constructed from "
                         "contravariant vector-valued basis")
    return ContravariantFunctionSpace(basis_space)


def vector_function_space(basis_space: ShapeBasisSpace) -> VectorValuedFunctionSpace:
    """The covariant or contravariant space of a Nedelec or Raviart-Thomas basis, as
    `make_polynomial_space` makes it."""
    if basis_space.shape.VALUE == COVARIANT:
        return make_covariant_function_space(basis_space)
    return make_contravariant_function_space(basis_space)


# ---- value maps -----------------------------------------------------------------------------


@kc.func
def _measure(F: Any):
    # the volume (area) scale of a square deformation gradient
    return kc.abs(kc.determinant(F))


def _maps(geo: Any, covariant: bool) -> dict[str, Any]:
    """Cell funcs (cell arg, cell sample) -> value map J, its inverse, and the reference
    gradient transform F^-1."""
    measure = _measure
    F_of, inv_F_of = geo.cell_deformation_gradient, geo.cell_inverse_deformation_gradient

    @kc.func
    def value_map(cell_arg: Any, s: Any):
        if kc.static(covariant):
            return kc.transpose(inv_F_of(cell_arg, s))
        F = F_of(cell_arg, s)
        return F / measure(F)

    @kc.func
    def inverse_value_map(cell_arg: Any, s: Any):
        if kc.static(covariant):
            return kc.transpose(F_of(cell_arg, s))
        inv_F = inv_F_of(cell_arg, s)
        return inv_F / measure(kc.transpose(inv_F))

    return {"value": value_map, "inverse": inverse_value_map, "grad": inv_F_of}


def _locators(geo: Any, side: bool) -> dict[str, Any]:
    """Per neighbour ("inner", "outer"): (elt arg, element, coords) -> (cell arg, cell
    index, cell sample) of the sample's cell (the element itself on cells)."""
    if not side:
        @kc.func
        def on_cell(elt: Any, element: int, coords: Any):
            return elt, element, make_free_sample(element, coords)

        return {"inner": on_cell, "outer": on_cell}

    def locate(cell_of: Any, coords_of: Any) -> Any:
        to_cells = geo.side_to_cell_arg

        @kc.func
        def on_side(elt: Any, element: int, coords: Any):
            cell = cell_of(elt, element)
            return to_cells(elt), cell, make_free_sample(cell, coords_of(elt, element, coords))

        return on_side

    return {"inner": locate(geo.side_inner_cell_index, geo.side_inner_cell_coords),
            "outer": locate(geo.side_outer_cell_index, geo.side_outer_cell_coords)}


# ---- field funcs ----------------------------------------------------------------------------

_EVALS: dict[tuple, FieldEval] = {}


def _struct(name: str, fields: dict) -> type:
    return kc.struct(type(name, (), {"__annotations__": dict(fields)}))


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _field_eval(kind: str, space: VectorValuedFunctionSpace, domain: Any) -> FieldEval:
    key = (kind, space.name, domain.name)
    if key not in _EVALS:
        _EVALS[key] = _make_field_eval(kind, space, domain)
    return _EVALS[key]


def _make_field_eval(kind: str, space: VectorValuedFunctionSpace, domain: Any) -> FieldEval:
    geo = space.geometry
    scalar = geo.scalar_type
    shape = space.shape
    N = shape.NODES_PER_ELEMENT
    side = domain.element_kind == ElementKind.SIDE
    fields = {"elt": domain.ElementArg, "element_nodes": kc.array2d(dtype=int),
              "element_signs": kc.array2d(dtype=scalar)}
    if kind == "discrete":
        fields["dof_values"] = kc.array(dtype=scalar)
    Arg = _struct(f"VectorFieldArg_{kind}_{_ident(space.name)}_{_ident(domain.name)}", fields)
    maps, where = _maps(geo, space.covariant), _locators(geo, side)
    make = _discrete_funcs if kind == "discrete" else _basis_funcs
    inner = make(kind, Arg, shape, maps, where["inner"], 0, space.dtype, scalar)
    outer = make(kind, Arg, shape, maps, where["outer"], N if side else 0, space.dtype, scalar)
    count = N * (2 if side else 1)

    @kc.func
    def node_count(arg: Any, s: Any):
        return count

    ops = {"inner": inner[0], "outer": outer[0], "grad": inner[1], "grad_outer": outer[1],
           "div": inner[2], "div_outer": outer[2], "node_count": node_count}
    grad_type = kc.types.matrix(shape=(geo.dimension, geo.dimension), dtype=scalar)
    return FieldEval(Arg, ops, scalar, grad_type, space.dtype)


def _basis_funcs(kind: str, Arg: type, shape: Any, maps: dict, where: Any, offset: int,
                 dtype: Any, scalar: Any) -> tuple[Any, Any, Any]:
    """value, gradient and divergence of the test or trial basis function of the sample's
    dof, when its node is one of the cell's reached by `where` (nodes `offset` + [0, N))."""
    weight, weight_gradient = shape.weight, shape.weight_gradient
    N = shape.NODES_PER_ELEMENT
    use_test = kind == "test"
    value_map, grad_map = maps["value"], maps["grad"]
    dim = kc.types.as_type(dtype).length
    Grad = kc.types.matrix(shape=(dim, dim), dtype=scalar)

    @kc.func
    def node_of(arg: Arg, s: Any):
        node = s.trial_dof[0] - offset
        if kc.static(use_test):
            node = s.test_dof[0] - offset
        if node < 0 or node >= N:
            node = -1
        return node

    @kc.func
    def value(arg: Arg, s: Any):
        node = node_of(arg, s)
        if node < 0:
            return dtype(scalar(0.0))
        cell_arg, cell, cs = where(arg.elt, s.element_index, s.element_coords)
        w = arg.element_signs[cell, node] * weight(cs.element_coords, node)
        return value_map(cell_arg, cs) * w

    @kc.func
    def gradient(arg: Arg, s: Any):
        node = node_of(arg, s)
        if node < 0:
            return Grad(scalar(0.0))
        cell_arg, cell, cs = where(arg.elt, s.element_index, s.element_coords)
        dw = arg.element_signs[cell, node] * weight_gradient(cs.element_coords, node)
        return value_map(cell_arg, cs) * (dw * grad_map(cell_arg, cs))

    @kc.func
    def divergence(arg: Arg, s: Any):
        node = node_of(arg, s)
        if node < 0:
            return scalar(0.0)
        cell_arg, cell, cs = where(arg.elt, s.element_index, s.element_coords)
        dw = arg.element_signs[cell, node] * weight_gradient(cs.element_coords, node)
        return kc.ddot(kc.transpose(value_map(cell_arg, cs)), dw * grad_map(cell_arg, cs))

    return value, gradient, divergence


def _discrete_funcs(kind: str, Arg: type, shape: Any, maps: dict, where: Any, offset: int,
                    dtype: Any, scalar: Any) -> tuple[Any, Any, Any]:
    """value, gradient and divergence of a discrete field in the cell reached by `where`:
    sums over the cell's nodes, in Warp's order of operations."""
    weight, weight_gradient = shape.weight, shape.weight_gradient
    N = shape.NODES_PER_ELEMENT
    value_map, grad_map = maps["value"], maps["grad"]
    dim = kc.types.as_type(dtype).length
    Grad = kc.types.matrix(shape=(dim, dim), dtype=scalar)

    @kc.func
    def node_dof(arg: Arg, cell: int, k: int):
        return arg.dof_values[arg.element_nodes[cell, k]], arg.element_signs[cell, k]

    @kc.func
    def value(arg: Arg, s: Any):
        cell_arg, cell, cs = where(arg.elt, s.element_index, s.element_coords)
        J = value_map(cell_arg, cs)
        total = dtype(scalar(0.0))
        for k in range(N):
            dof, sign = node_dof(arg, cell, k)
            total += J * ((sign * weight(cs.element_coords, k)) * dof)
        return total

    @kc.func
    def gradient(arg: Arg, s: Any):
        cell_arg, cell, cs = where(arg.elt, s.element_index, s.element_coords)
        J = value_map(cell_arg, cs)
        T = grad_map(cell_arg, cs)
        total = Grad(scalar(0.0))
        for k in range(N):
            dof, sign = node_dof(arg, cell, k)
            total += (dof * J) * ((sign * weight_gradient(cs.element_coords, k)) * T)
        return total

    @kc.func
    def divergence(arg: Arg, s: Any):
        cell_arg, cell, cs = where(arg.elt, s.element_index, s.element_coords)
        Jt = kc.transpose(value_map(cell_arg, cs))
        T = grad_map(cell_arg, cs)
        total = scalar(0.0)
        for k in range(N):
            dof, sign = node_dof(arg, cell, k)
            total += dof * kc.ddot(Jt, (sign * weight_gradient(cs.element_coords, k)) * T)
        return total

    return value, gradient, divergence


# ---- interpolation --------------------------------------------------------------------------

_DOF_FUNCS: dict[tuple, Any] = {}


def _dof_func(space: VectorValuedFunctionSpace, domain: Any) -> Any:
    key = (space.name, domain.name)
    if key in _DOF_FUNCS:
        return _DOF_FUNCS[key]
    geo = space.geometry
    scalar = geo.scalar_type
    shape = space.shape
    N = shape.NODES_PER_ELEMENT
    duals = shape.node_dual_weights()
    Table = kc.types.matrix(shape=duals.shape, dtype=scalar)
    table = Table(*duals.reshape(-1).astype(float))
    inverse_map = _maps(geo, space.covariant)["inverse"]
    side = domain.element_kind == ElementKind.SIDE
    inner = _locators(geo, side)["inner"]
    outer_cell = geo.side_outer_cell_index if side else None

    @kc.func
    def node_dof_value(signs: kc.array2d(dtype=scalar), elt: Any, element: int, local: int,
                       coords: Any, value: Any):
        # the sign is the node's own cell's; the inverse map always the inner cell's
        cell_arg, cell, cs = inner(elt, element, coords)
        if kc.static(side):
            if local >= N:
                cell = outer_cell(elt, element)
        node = local % N
        dual = signs[cell, node] * table[node]
        return kc.dot(inverse_map(cell_arg, cs) * value, dual)

    _DOF_FUNCS[key] = node_dof_value
    return node_dof_value


__all__ = ["ContravariantFunctionSpace", "CovariantFunctionSpace", "VectorValuedFunctionSpace",
           "make_contravariant_function_space", "make_covariant_function_space",
           "vector_function_space"]
