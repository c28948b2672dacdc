"""Function spaces: a basis (shape functions + topology) and a value type per node
(Warp's `make_polynomial_space`, `CollocatedFunctionSpace`, `SpacePartition`).
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.dof_mapper import IdentityMapper, check_mapper, is_identity, mapped_algebra
from kernelc.fem.geometry import Geometry
from kernelc.fem.polynomial import Polynomial
from kernelc.fem.shape import ElementBasis, ShapeFunction, make_element_shape_function
from kernelc.fem.topology import SpaceTopology, make_topology
from kernelc.fem.types import sample_type, vec_type
from kernelc.fem.valuetypes import ValueAlgebra, scalar_of, value_algebra


class ShapeBasisSpace:
    """Shape functions on every cell of a geometry, glued by a topology (Warp's
    `ShapeBasisSpace`)."""

    def __init__(self, topology: SpaceTopology, shape: ShapeFunction) -> None:
        self._topology = topology
        self._shape = shape
        self.ORDER = shape.ORDER

    @property
    def topology(self) -> SpaceTopology:
        """Global node numbering."""
        return self._topology

    @property
    def shape(self) -> ShapeFunction:
        """Shape functions of one cell."""
        return self._shape

    @property
    def geometry(self) -> Geometry:
        """The underlying geometry."""
        return self._topology.geometry

    @property
    def name(self) -> str:
        """Identifies the basis kind (equal names share compiled kernels)."""
        return self._topology.name

    def node_positions(self, out: Any = None) -> Any:
        """World position of every node, as a `kc.array` of vectors."""
        # Computed on the host by the geometry, in float64 then rounded.
        geo = self.geometry
        nodes = self._topology.host_element_nodes()
        coords = self._shape.node_coords().astype(np.float64)
        dim = geo.dimension
        pos = np.zeros((self._topology.node_count(), dim))
        pos[nodes.reshape(-1)] = geo.host_cell_positions(coords).reshape(-1, dim)
        dtype = vec_type(dim, geo.scalar_type)
        if out is None:
            return kc.array(pos, dtype=dtype)
        out.assign(pos)
        return out


class SpacePartition:
    """All the nodes of a space (Warp's `WholeSpacePartition`); the nodes of a geometry
    partition are a `NodePartition` (`space_partition.py`)."""

    def __init__(self, space_topology: SpaceTopology) -> None:
        self.space_topology = space_topology

    @property
    def geo_partition(self) -> Any:
        """The geometry (partition) whose nodes these are: the whole geometry."""
        return self.space_topology.geometry

    def space_node_indices(self) -> Any:
        """The space node of each partition node (all of them, in order), a `kc.array`."""
        return kc.array(np.arange(self.node_count(), dtype=np.int32), dtype=kc.int32)

    def host_partition_indices(self, space_nodes: np.ndarray) -> np.ndarray:
        """The partition index of each of `space_nodes` (-1 outside the partition)."""
        return space_nodes

    def rebuild(self, device: Any = None, temporary_store: Any = None) -> None:
        """Numbers the nodes again (a whole space's partition has nothing to redo)."""

    def node_count(self) -> int:
        """Nodes in the partition."""
        return self.space_topology.node_count()

    def owned_node_count(self) -> int:
        """Nodes owned by the partition (all of them)."""
        return self.node_count()

    def interior_node_count(self) -> int:
        """Nodes not shared with other partitions (all of them)."""
        return self.node_count()

    @property
    def name(self) -> str:
        return f"{self.space_topology.name}_Whole"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SpacePartition) and self.space_topology == other.space_topology

    def __hash__(self) -> int:
        return hash(self.space_topology)


def make_space_partition(space_topology: "SpaceTopology | FunctionSpace",
                         geometry_partition: Any = None, with_halo: bool = True,
                         max_node_count: int = -1, environment_first: bool = False, *,
                         device: Any = None, temporary_store: Any = None) -> SpacePartition:
    """The nodes of a space that touch a geometry partition (all of them without one).

    Args:
        space_topology: The topology to partition (a function space stands for its
            topology).
        geometry_partition: A `GeometryPartition` (None or a geometry: the whole space).
        with_halo: Whether to add the nodes of the cells across the partition's sides.
        max_node_count: Warp's node capacity, which spares its GPU code a device-to-host
            copy; kernelc counts the nodes exactly and does not need it, except with
            `environment_first`, where it fixes the node count as in Warp.
        environment_first: Group the nodes by environment (`EnvironmentSpacePartition`:
            its `env_offsets` say where each environment's nodes start).
        device: Accepted for Warp's sake.
        temporary_store: Accepted for Warp's sake.
    """
    if not isinstance(space_topology, SpaceTopology):
        topology = getattr(space_topology, "topology", None)
        if not isinstance(topology, SpaceTopology):
            raise TypeError(f"make_space_partition() expects a space topology, got "
                            f"{type(space_topology).__name__}")
        space_topology = topology
    if environment_first:
        from kernelc.fem.space_partition import EnvironmentSpacePartition
        part = None if geometry_partition is None or isinstance(geometry_partition, Geometry) \
            else geometry_partition
        if part is not None and with_halo:
            raise ValueError("`environment_first=True` does not support `with_halo=True` for "
                             "non-whole geometry partitions.")
        return EnvironmentSpacePartition(space_topology, part, max_node_count)
    if geometry_partition is not None and not isinstance(geometry_partition, Geometry):
        from kernelc.fem.space_partition import NodePartition

        return NodePartition(space_topology, geometry_partition, with_halo)
    return SpacePartition(space_topology)


class FunctionSpace:
    """A scalar-, vector- or matrix-valued space on a basis, all values of a node stored
    together (Warp's `CollocatedFunctionSpace`); with a `dof_mapper` (`dof_mapper.py`), nodes
    store the mapper's dof type and fields take its value type."""

    def __init__(self, basis: ShapeBasisSpace, dtype: Any = None, dof_mapper: Any = None) -> None:
        self._basis = basis
        scalar = basis.geometry.scalar_type
        if dof_mapper is not None:  # the mapper's value type, as in Warp
            dtype = dof_mapper.value_dtype
            if not is_identity(dof_mapper):
                check_mapper(dof_mapper, scalar)
        resolved = kc.types.as_type(scalar if dtype is None else dtype)
        if resolved is None or scalar_of(resolved) != kc.types.as_type(scalar):
            raise NotImplementedError(
                f"function spaces of {dtype!r} on a {kc.types.as_type(scalar)!r} geometry are "
                "not supported yet: values must be scalars, vectors or matrices of the "
                "geometry's scalar type")
        self.dtype = scalar if dtype is None else dtype
        self.dof_mapper = dof_mapper if dof_mapper is not None else IdentityMapper(self.dtype)
        self.dof_dtype = self.dof_mapper.dof_dtype
        self.ORDER = basis.ORDER
        self.NODE_DOF_COUNT = self.VALUE_DOF_COUNT = int(self.dof_mapper.DOF_SIZE)
        self.dimension = basis.geometry.dimension

    @property
    def basis(self) -> ShapeBasisSpace:
        """The scalar basis."""
        return self._basis

    @property
    def topology(self) -> SpaceTopology:
        """Global node numbering."""
        return self._basis.topology

    @property
    def geometry(self) -> Geometry:
        """The underlying geometry."""
        return self._basis.geometry

    @property
    def shape(self) -> ShapeFunction:
        """Shape functions of one cell."""
        return self._basis.shape

    @property
    def degree(self) -> int:
        """Polynomial degree of the basis."""
        return self.ORDER

    @property
    def name(self) -> str:
        """Identifies the space kind (equal names share compiled kernels)."""
        mapped = "" if is_identity(self.dof_mapper) else f"_{self.dof_mapper.name}"
        return f"{self._basis.name}_{kc.types.as_type(self.dtype)!r}{mapped}"

    @property
    def weight_type(self) -> Any:
        return self.geometry.scalar_type

    @property
    def algebra(self) -> ValueAlgebra:
        """Device funcs building values, gradients and divergences of this space's type."""
        # Gradients live in the world: (value x geometry dimension), also on surfaces.
        if not is_identity(self.dof_mapper):
            return mapped_algebra(self.dof_mapper, self.geometry.dimension)
        return value_algebra(kc.types.as_type(self.dtype), self.geometry.dimension)

    @property
    def gradient_dtype(self) -> Any:
        """Type of gradients (None for matrix values, which have none)."""
        return self.algebra.grad_type

    @property
    def divergence_dtype(self) -> Any:
        """Type of divergences (None where there is none)."""
        return self.algebra.div_type

    def gradient_valid(self) -> bool:
        """Whether fields of this space have a gradient (scalar and vector values)."""
        return self.gradient_dtype is not None

    def divergence_valid(self) -> bool:
        """Whether fields of this space have a divergence (vectors and matrices whose
        leading size is the geometry's dimension)."""
        return self.divergence_dtype is not None

    @property
    def sample_type(self) -> Any:
        return sample_type(self.geometry.scalar_type)

    def node_count(self) -> int:
        """Number of nodes."""
        return self.topology.node_count()

    def node_positions(self, out: Any = None) -> Any:
        """World position of every node."""
        return self._basis.node_positions(out)

    def make_field(self, space_partition: SpacePartition | None = None) -> Any:
        """A zero-initialised `DiscreteField` on this space, with a value per node of
        `space_partition` (every node without one); the field is zero at the nodes a
        partition leaves out."""
        from kernelc.fem.field import DiscreteField

        if space_partition is None:
            space_partition = SpacePartition(self.topology)
        elif space_partition.space_topology != self.topology:
            raise ValueError("the space partition must be of this space's topology")
        return DiscreteField(self, space_partition)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, FunctionSpace) and self.topology == other.topology
                and self.name == other.name)

    def __hash__(self) -> int:
        return hash((self.topology, self.name))


CollocatedFunctionSpace = FunctionSpace


def make_polynomial_basis_space(geo: Geometry, degree: int = 1,
                                element_basis: ElementBasis | None = None,
                                discontinuous: bool = False,
                                family: Polynomial | None = None) -> ShapeBasisSpace:
    """Polynomial shape functions on every cell of `geo` (Warp's `make_polynomial_basis_space`).

    Args:
        geo: The geometry.
        degree: Polynomial degree.
        element_basis: Lagrange (default), serendipity or non-conforming polynomial.
        discontinuous: Whether each cell has nodes of its own (implied by degree 0 and by
            non-conforming bases).
        family: 1-D node family (default Gauss-Lobatto-Legendre).
    """
    shape = make_element_shape_function(geo.reference_cell(), degree, element_basis, family,
                                        geo.scalar_type)
    # non-conforming bases have no nodes on the cell boundary to share
    discontinuous = discontinuous or element_basis == ElementBasis.NONCONFORMING_POLYNOMIAL
    return ShapeBasisSpace(make_topology(geo, shape, discontinuous), shape)


def make_collocated_function_space(basis_space: ShapeBasisSpace, dtype: Any = None,
                                   dof_mapper: Any = None) -> FunctionSpace:
    """A space storing values of `dtype` at the nodes of `basis_space`.

    Args:
        basis_space: The basis.
        dtype: Value type: the geometry's scalar type (default), or a vector or matrix of it
            (ignored with a `dof_mapper`, whose value type the space takes).
        dof_mapper: How node dofs map to values (`SymmetricTensorMapper`, ...; default:
            nodes store values).
    """
    if hasattr(basis_space, "make_function_space"):  # point bases (space_point.py)
        return basis_space.make_function_space(dtype, dof_mapper)
    return FunctionSpace(basis_space, dtype, dof_mapper)


def make_polynomial_space(geo: Geometry, dtype: Any = None, dof_mapper: Any = None,
                          degree: int = 1, element_basis: ElementBasis | None = None,
                          discontinuous: bool = False,
                          family: Polynomial | None = None) -> FunctionSpace:
    """A polynomial function space on `geo` (Warp's `warp.fem.make_polynomial_space`).

    Args:
        geo: The geometry (`Grid2D` or `Grid3D`).
        dtype: Value type: the geometry's scalar type (default), or a vector or matrix of it
            (`kc.vec2`, `kc.mat33d`, ...).
        dof_mapper: How node dofs map to values (`SymmetricTensorMapper`, ...; default:
            nodes store values).
        degree: Polynomial degree.
        element_basis: `ElementBasis.LAGRANGE` (default), `ElementBasis.SERENDIPITY`,
            `ElementBasis.NONCONFORMING_POLYNOMIAL` (always discontinuous) or
            `ElementBasis.BSPLINE` (grids and `Nanogrid`: shape_bspline.py).
        discontinuous: Whether each cell has nodes of its own (discontinuous Galerkin
            spaces; implied by degree 0).
        family: 1-D node family (default Gauss-Lobatto-Legendre).

    Returns:
        The function space.
    """
    basis = make_polynomial_basis_space(geo, degree, element_basis, discontinuous, family)
    if hasattr(basis.shape, "VALUE"):  # Nedelec, Raviart-Thomas: vectors of the geometry
        from kernelc.fem.space_vector import vector_function_space

        return vector_function_space(basis)
    return make_collocated_function_space(basis, dtype, dof_mapper)
