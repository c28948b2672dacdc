"""Fields passed to integrands: discrete fields (values at the nodes of a space), test and
trial fields (the basis functions of a space, for linear and bilinear forms).

Names follow Warp: `DiscreteField` (with `dof_values`), `TestField`, `TrialField`,
`make_test`, `make_trial`, `make_discrete_field`, `make_space_restriction`.
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.domain import Cells, GeometryDomain
from kernelc.fem.field_eval import FieldEval, basis_eval, discrete_cells_arg, discrete_eval
from kernelc.fem.field_nodes import device_element_nodes
from kernelc.fem.restriction import SpaceRestriction, restriction_for
from kernelc.fem.space import FunctionSpace, SpacePartition, make_space_partition
from kernelc.fem.topology import SpaceTopology
from kernelc.fem.types import ElementKind


class FieldLike:
    """Base of everything an integrand's `fem.Field` parameter accepts."""

    def evaluator(self, domain: GeometryDomain) -> FieldEval:
        """The struct type and operator funcs of this field on `domain`."""
        raise NotImplementedError

    def fill_arg(self, arg: Any, domain: GeometryDomain, device: Any) -> None:
        """Sets the fields of this field's struct (made by `evaluator(domain).Arg()`)."""
        raise NotImplementedError

    @property
    def kind_name(self) -> str:
        """Identifies the field kind for kernel caching."""
        raise NotImplementedError

    @property
    def element_kind(self) -> ElementKind:
        """Kind of elements (cells or sides) the field is evaluated on."""
        return ElementKind.CELL

    def make_deformed_geometry(self, relative: bool = True) -> Any:
        """This field's geometry moved by its values: displacements (`relative=True`) or
        positions (a `DeformedGeometry`, see `deformed.py`)."""
        from kernelc.fem.deformed import DeformedGeometry

        return DeformedGeometry(self, relative=relative)


class SpaceField(FieldLike):
    """A field defined on a function space."""

    def __init__(self, space: FunctionSpace, space_partition: SpacePartition) -> None:
        self._space = space
        self._space_partition = space_partition

    @property
    def space(self) -> FunctionSpace:
        """The function space."""
        return self._space

    @property
    def space_partition(self) -> SpacePartition:
        """The space's node partition."""
        return self._space_partition

    @property
    def geometry(self) -> Any:
        """The underlying geometry."""
        return self._space.geometry

    @property
    def degree(self) -> int:
        """Polynomial degree of the space."""
        return self._space.degree

    @property
    def dtype(self) -> Any:
        """Value type."""
        return self._space.dtype

    @property
    def dof_dtype(self) -> Any:
        """Type of the value stored per node (the dof mapper's dof type)."""
        return self._space.dof_dtype

    @property
    def gradient_dtype(self) -> Any:
        """Type of the field's gradient."""
        return self._space.gradient_dtype

    @property
    def node_dof_count(self) -> int:
        return self._space.NODE_DOF_COUNT

    @property
    def value_dof_count(self) -> int:
        return self._space.VALUE_DOF_COUNT

    @property
    def name(self) -> str:
        return f"{type(self).__name__}_{self._space.name}"


class DiscreteField(SpaceField):
    """Values at the nodes of a space (`dof_values`), interpolated by its basis functions."""

    def __init__(self, space: FunctionSpace, space_partition: SpacePartition) -> None:
        super().__init__(space, space_partition)
        self._dof_values = kc.zeros(space_partition.node_count(), dtype=space.dof_dtype)
        self._element_nodes: dict[str, Any] = {}
        self._partition_indices: dict[str, Any] = {}
        # On part of the space's nodes: a node's value is dof_values[its partition index],
        # and nodes outside the partition are zero.
        self._partial = type(space_partition) is not SpacePartition

    @property
    def dof_values(self) -> Any:
        """The dofs of each node, a `kc.array` of the space's `dof_dtype` (its `dtype` without
        a dof mapper)."""
        return self._dof_values

    @dof_values.setter
    def dof_values(self, values: Any) -> None:
        if not isinstance(values, kc.array):
            values = kc.array(values, dtype=self.dof_dtype)
        self._dof_values = values

    def evaluator(self, domain: GeometryDomain) -> FieldEval:
        return discrete_eval(self._space, domain, self._partial)

    def fill_arg(self, arg: Any, domain: GeometryDomain, device: Any) -> None:
        key = str(kc.get_device(device))
        if key not in self._element_nodes:
            nodes = self._space.topology.host_element_nodes()
            if self._partial:
                nodes = self._space_partition.host_partition_indices(nodes)
            self._element_nodes[key] = kc.array(nodes, dtype=kc.int32, device=device)
            if self._partial:
                every_node = np.arange(self._space.topology.node_count(), dtype=np.int32)
                self._partition_indices[key] = kc.array(
                    self._space_partition.host_partition_indices(every_node), dtype=kc.int32,
                    device=device)
        arg.elt = domain.element_arg_value(device)
        if self._partial and "partition_indices" in type(arg).__annotations__:
            arg.partition_indices = self._partition_indices[key]
        arg.dof_values = self._dof_values.to(device)
        arg.element_nodes = self._element_nodes[key]
        if hasattr(self._space, "fill_field_arg"):  # vector-valued bases: their signs
            self._space.fill_field_arg(arg, device)

    def make_field(self, space_partition: SpacePartition | None = None) -> "DiscreteField":
        """A new zero field on the same space."""
        return self._space.make_field(space_partition or self._space_partition)

    def trace(self) -> "DiscreteFieldTrace":
        """The field seen from the sides of the geometry (to integrate over sides)."""
        return DiscreteFieldTrace(self)

    @property
    def kind_name(self) -> str:
        return f"Discrete_{self._space.name}" + ("_partial" if self._partial else "")


class DiscreteFieldTrace(SpaceField):
    """A discrete field evaluated on sides (`field.trace()`); shares the field's values."""

    def __init__(self, field: DiscreteField) -> None:
        super().__init__(field.space, field.space_partition)
        self._field = field

    @property
    def dof_values(self) -> Any:
        """The traced field's node values."""
        return self._field.dof_values

    @property
    def traced(self) -> DiscreteField:
        """The field this is the trace of."""
        return self._field

    @property
    def element_kind(self) -> ElementKind:
        return ElementKind.SIDE

    def evaluator(self, domain: GeometryDomain) -> FieldEval:
        return discrete_eval(self._space, domain)

    def fill_arg(self, arg: Any, domain: GeometryDomain, device: Any) -> None:
        self._field.fill_arg(arg, domain, device)

    @property
    def kind_name(self) -> str:
        return f"DiscreteTrace_{self._space.name}"


class TestField(SpaceField):
    """The test functions of a linear or bilinear form: the space's basis functions at the
    nodes reached from `domain`."""

    __test__ = False  # not a pytest test class

    def __init__(self, space_restriction: SpaceRestriction, space: FunctionSpace) -> None:
        super().__init__(space, space_restriction.space_partition
                         or SpacePartition(space.topology))
        self.space_restriction = space_restriction
        self.domain = space_restriction.domain

    @property
    def element_kind(self) -> ElementKind:
        return self.domain.element_kind

    def evaluator(self, domain: GeometryDomain) -> FieldEval:
        return basis_eval("test", self._space, domain)

    def fill_arg(self, arg: Any, domain: GeometryDomain, device: Any) -> None:
        arg.elt = domain.element_arg_value(device)
        arg.element_nodes = device_element_nodes(self._space.topology, device)
        if hasattr(self._space, "fill_field_arg"):  # vector-valued bases: their signs
            self._space.fill_field_arg(arg, device)

    @property
    def kind_name(self) -> str:
        return f"Test_{self._space.name}"


class TrialField(SpaceField):
    """The trial functions of a bilinear form."""

    def __init__(self, space: FunctionSpace, space_partition: SpacePartition,
                 domain: GeometryDomain) -> None:
        super().__init__(space, space_partition)
        self.domain = domain

    @property
    def element_kind(self) -> ElementKind:
        return self.domain.element_kind

    def evaluator(self, domain: GeometryDomain) -> FieldEval:
        return basis_eval("trial", self._space, domain)

    def fill_arg(self, arg: Any, domain: GeometryDomain, device: Any) -> None:
        arg.elt = domain.element_arg_value(device)
        arg.element_nodes = device_element_nodes(self._space.topology, device)
        if hasattr(self._space, "fill_field_arg"):  # vector-valued bases: their signs
            self._space.fill_field_arg(arg, device)

    @property
    def kind_name(self) -> str:
        return f"Trial_{self._space.name}"


def cells_of_field(field: FieldLike, domain: GeometryDomain
                   ) -> tuple["DiscreteField | None", GeometryDomain, Any]:
    """`fem.cells(field)`: the discrete field a trace (or a cell field) evaluates, the cells,
    and the func mapping the field's argument on `domain` to its argument on the cells
    (None when it is on cells already); (None, domain, None) for other fields."""
    if isinstance(field, DiscreteField) and domain.element_kind == ElementKind.CELL:
        return field, domain, None
    if isinstance(field, DiscreteFieldTrace):
        cells = Cells(domain.geometry)
        return field.traced, cells, discrete_cells_arg(field.space, domain, cells)
    return None, domain, None


def make_space_restriction(space_partition: SpacePartition | None = None,
                           domain: GeometryDomain | None = None,
                           space_topology: SpaceTopology | None = None, device: Any = None,
                           temporary_store: Any = None) -> SpaceRestriction:
    """The nodes of a space reached from a domain's elements (Warp's
    `make_space_restriction`).

    Args:
        space_partition: The partition to restrict (or give `space_topology`); nodes are
            numbered in it.
        domain: The domain (default: all cells of the geometry, or of the partition's).
        space_topology: The topology, when no partition is given (the domain's geometry
            partition then makes one).
        device: Accepted for Warp's sake.
        temporary_store: Accepted for Warp's sake.
    """
    if space_partition is None:
        if space_topology is None:
            raise ValueError("One of `space_partition` or `space_topology` must be provided")
        if domain is None:
            domain = Cells(space_topology.geometry)
        space_partition = make_space_partition(space_topology=space_topology,
                                               geometry_partition=domain.geometry_partition)
    else:
        space_topology = space_partition.space_topology
        if domain is None:
            domain = Cells(space_partition.geo_partition)
    whole = type(space_partition) is SpacePartition
    return restriction_for(space_topology, domain, None if whole else space_partition)


def make_test(space: FunctionSpace, space_restriction: SpaceRestriction | None = None,
              space_partition: SpacePartition | None = None,
              domain: GeometryDomain | None = None, device: Any = None) -> TestField:
    """The test field of `space` on `domain` (Warp's `warp.fem.make_test`).

    Args:
        space: The function space.
        space_restriction: Restriction of the space to a domain (or give `domain`).
        space_partition: The nodes to number (default: those of the domain's geometry
            partition).
        domain: Integration domain (default: all cells of the geometry or partition).
        device: Accepted for Warp's sake.
    """
    if space_restriction is None:
        space_restriction = make_space_restriction(space_partition, domain, space.topology)
    return TestField(space_restriction, space)


def make_trial(space: FunctionSpace, space_restriction: SpaceRestriction | None = None,
               space_partition: SpacePartition | None = None,
               domain: GeometryDomain | None = None) -> TrialField:
    """The trial field of `space` on `domain` (Warp's `warp.fem.make_trial`).

    Args:
        space: The function space.
        space_restriction: Restriction giving the domain (or give `domain`).
        space_partition: The nodes to number (default: those of the domain's geometry
            partition).
        domain: Integration domain (default: all cells of the geometry or partition).
    """
    if space_restriction is not None:
        domain = space_restriction.domain
        space_partition = space_restriction.space_partition
    if space_partition is None:
        if domain is None:
            domain = Cells(space.geometry)
        space_partition = make_space_partition(space_topology=space.topology,
                                               geometry_partition=domain.geometry_partition)
    elif domain is None:
        domain = Cells(space_partition.geo_partition)
    return TrialField(space, space_partition, domain)


def make_discrete_field(space: FunctionSpace,
                        space_partition: SpacePartition | None = None) -> DiscreteField:
    """A zero discrete field on `space` (Warp's `warp.fem.make_discrete_field`)."""
    return space.make_field(space_partition=space_partition)
