"""`kernelc.fem`: finite elements in the style of Warp's `warp.fem`.

Import it as Warp's (`import kernelc.fem as fem`) or reach it as `kc.fem`. A problem is
written with Warp's names: a geometry (`Grid2D`, `Grid3D`, `Trimesh2D`, `Trimesh3D`,
`Tetmesh`, `Quadmesh2D`, `Quadmesh3D`, `Hexmesh`, `Nanogrid`, `AdaptiveNanogrid`), a
function space on it
(`make_polynomial_space`), integration domains (`Cells`, `BoundarySides`), test and trial
fields (`make_test`, `make_trial`), `@fem.integrand` functions using the operators
(`fem.grad`, `fem.normal`, ...), and `integrate`, which returns vectors and `kernelc.sparse`
matrices. See docs/fem.md for what is supported.
"""

from kernelc.fem import cache, linalg, operators, polynomial, utils
from kernelc.fem.adaptivity import (
    adaptive_nanogrid_from_field,
    adaptive_nanogrid_from_hierarchy,
    enforce_nanogrid_grading,
)
from kernelc.fem.cache import (
    Temporary,
    TemporaryStore,
    borrow_temporary,
    borrow_temporary_like,
    set_default_temporary_store,
)
from kernelc.fem.deformed import DeformedGeometry
from kernelc.fem.dirichlet import (
    normalize_dirichlet_projector,
    project_linear_system,
    project_system_matrix,
    project_system_rhs,
)
from kernelc.fem.dof_mapper import (
    DofMapper,
    IdentityMapper,
    SkewSymmetricTensorMapper,
    SymmetricTensorMapper,
)
from kernelc.fem.domain import BoundarySides, Cells, FrontierSides, GeometryDomain, Sides
from kernelc.fem.element import Element
from kernelc.fem.explicit_quadrature import ExplicitQuadrature
from kernelc.fem.field import (
    DiscreteField,
    FieldLike,
    TestField,
    TrialField,
    make_discrete_field,
    make_space_restriction,
    make_test,
    make_trial,
)
from kernelc.fem.field_implicit import ImplicitField, UniformField
from kernelc.fem.field_nonconforming import NonconformingField
from kernelc.fem.field_restriction import FieldRestriction, make_restriction
from kernelc.fem.geometry import Geometry
from kernelc.fem.grid2d import Grid2D
from kernelc.fem.grid3d import Grid3D
from kernelc.fem.hexmesh import Hexmesh
from kernelc.fem.integrand import Integrand, integrand
from kernelc.fem.integrate import integrate
from kernelc.fem.interpolate import interpolate
from kernelc.fem.nanogrid import Nanogrid
from kernelc.fem.nanogrid_adaptive import AdaptiveNanogrid
from kernelc.fem.nodal_quadrature import NodalQuadrature
from kernelc.fem.operators import (
    D,
    Operator,
    at_node,
    average,
    cells,
    curl,
    deformation_gradient,
    degree,
    div,
    div_outer,
    element_closest_point,
    element_coordinates,
    element_index,
    element_partition_index,
    environment_index,
    grad,
    grad_average,
    grad_jump,
    grad_outer,
    inner,
    jump,
    lookup,
    measure,
    measure_ratio,
    node_count,
    node_index,
    node_inner_weight,
    node_inner_weight_gradient,
    node_outer_weight,
    node_outer_weight_gradient,
    node_partition_index,
    normal,
    outer,
    partition_lookup,
    position,
    scalar_type,
    to_cell_side,
    to_inner_cell,
    to_outer_cell,
)
from kernelc.fem.partition import (
    CellBasedGeometryPartition,
    ExplicitGeometryPartition,
    GeometryPartition,
    LinearGeometryPartition,
)
from kernelc.fem.pic_quadrature import PicQuadrature
from kernelc.fem.polynomial import Polynomial
from kernelc.fem.quadmesh import Quadmesh, Quadmesh2D, Quadmesh3D
from kernelc.fem.quadrature import Quadrature, RegularQuadrature
from kernelc.fem.restriction import SpaceRestriction
from kernelc.fem.shape import ElementBasis, ShapeFunction, make_element_shape_function
from kernelc.fem.space import (
    CollocatedFunctionSpace,
    FunctionSpace,
    ShapeBasisSpace,
    SpacePartition,
    make_collocated_function_space,
    make_polynomial_basis_space,
    make_polynomial_space,
    make_space_partition,
)
from kernelc.fem.space_partition import NodePartition
from kernelc.fem.space_point import PointBasisSpace
from kernelc.fem.space_vector import (
    ContravariantFunctionSpace,
    CovariantFunctionSpace,
    make_contravariant_function_space,
    make_covariant_function_space,
)
from kernelc.fem.subdomain import Subdomain
from kernelc.fem.tetmesh import Tetmesh
from kernelc.fem.topology import SpaceTopology
from kernelc.fem.trimesh import Trimesh, Trimesh2D, Trimesh3D
from kernelc.fem.types import (
    NULL_ELEMENT_INDEX,
    NULL_NODE_INDEX,
    NULL_QP_INDEX,
    OUTSIDE,
    Coords,
    Coords_f64,
    Domain,
    ElementIndex,
    ElementKind,
    Field,
    NodeIndex,
    QuadraturePointIndex,
    Sample,
    Sample_f64,
    make_free_sample,
)

__all__ = [
    "cache", "Temporary", "TemporaryStore", "borrow_temporary", "borrow_temporary_like",
    "set_default_temporary_store", "FieldRestriction", "make_restriction", "NodalQuadrature",
    "Subdomain", "DofMapper", "IdentityMapper", "SkewSymmetricTensorMapper",
    "SymmetricTensorMapper", "NonconformingField",
    "CellBasedGeometryPartition", "ExplicitGeometryPartition", "FrontierSides",
    "GeometryPartition", "LinearGeometryPartition", "NodePartition", "PicQuadrature",
    "ExplicitQuadrature", "PointBasisSpace",
    "element_closest_point", "element_coordinates", "element_index",
    "element_partition_index", "partition_lookup", "environment_index", "node_index",
    "node_inner_weight", "node_inner_weight_gradient", "node_outer_weight",
    "node_outer_weight_gradient", "node_partition_index", "to_cell_side", "to_inner_cell",
    "to_outer_cell",
    "D", "at_node", "cells", "node_count", "ImplicitField", "UniformField", "curl", "div", "div_outer", "lookup",
    "NULL_ELEMENT_INDEX", "NULL_NODE_INDEX", "NULL_QP_INDEX", "OUTSIDE", "BoundarySides",
    "Cells", "CollocatedFunctionSpace", "DeformedGeometry", "Coords", "Coords_f64", "DiscreteField", "Domain",
    "Element", "ElementBasis", "ElementIndex", "ElementKind", "Field", "FieldLike",
    "FunctionSpace", "Geometry", "GeometryDomain", "Grid2D", "Grid3D", "Integrand", "NodeIndex",
    "Operator", "Polynomial", "Quadrature", "QuadraturePointIndex", "RegularQuadrature",
    "Sample", "Sample_f64", "ShapeBasisSpace", "ShapeFunction", "Sides", "SpacePartition",
    "SpaceRestriction", "SpaceTopology", "TestField", "TrialField", "average",
    "deformation_gradient", "degree", "grad", "grad_average", "grad_jump", "grad_outer",
    "inner", "integrand", "integrate", "interpolate", "jump", "linalg",
    "make_collocated_function_space", "make_contravariant_function_space",
    "make_covariant_function_space", "CovariantFunctionSpace", "ContravariantFunctionSpace",
    "make_discrete_field", "make_element_shape_function",
    "make_free_sample", "make_polynomial_basis_space", "make_polynomial_space",
    "make_space_partition", "make_space_restriction", "make_test", "make_trial", "measure",
    "measure_ratio", "normal", "normalize_dirichlet_projector", "operators", "outer",
    "polynomial", "position", "project_linear_system", "project_system_matrix",
    "project_system_rhs", "scalar_type", "Tetmesh", "Trimesh", "Trimesh2D", "Trimesh3D",
    "Hexmesh", "Nanogrid", "AdaptiveNanogrid", "adaptive_nanogrid_from_field",
    "adaptive_nanogrid_from_hierarchy", "enforce_nanogrid_grading", "Quadmesh", "Quadmesh2D", "Quadmesh3D", "utils",
]
