"""Deformed geometries (Warp's `warp.fem.DeformedGeometry`, made by
`field.make_deformed_geometry(relative=True)`): the cells and sides of a base geometry,
moved by a vector field over it, a displacement (`relative=True`) or the positions
themselves (`relative=False`).

A deformed geometry is a `Geometry` like any other (domains, spaces, quadratures,
integrands, lookups take it); its topology (cells, sides, boundary, node numbering of
spaces) is the base's, its positions and deformation gradients the field's
(`deformed_funcs.py`). The deforming field may be a discrete field (of any degree: the
cells are curved), an implicit field with a gradient func, or a uniform field.
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.deformed_funcs import closest_cell_lookup, deformed_funcs
from kernelc.fem.deformed_source import deformation_source, field_kind, fill_source_args
from kernelc.fem.domain import Cells
from kernelc.fem.element import Element
from kernelc.fem.geometry import Geometry
from kernelc.fem.topology import SpaceTopology
from kernelc.fem.types import coords_type, vec_type

# Funcs and structs by geometry name: equal names must share them, since compiled
# integrands and kernels are looked up by name.
_FUNCS: dict[str, Any] = {}


class DeformedGeometry(Geometry):
    """A base geometry moved by a vector field (Warp's `warp.fem.DeformedGeometry`).

    Args:
        field: A field on the base geometry's cells whose values are vectors of the
            geometry's dimension: a `DiscreteField`, an `ImplicitField` with a
            `grad_func`, or a `UniformField`.
        relative: Whether the values are displacements (added to the base positions) or
            the positions themselves.
        build_bvh: Marks lookups as supported on the current device
            (`supports_cell_lookup`); kernelc's lookups go through every cell, no BVH.

    Raises:
        ValueError: The field's values are not vectors of the geometry's dimension, or it
            has no gradient.
        TypeError: The field is not one of the kinds above.
    """

    _lookup_needs_bvh = True

    def __init__(self, field: Any, relative: bool = True, build_bvh: bool = False) -> None:
        kind = field_kind(field)
        host = field.geometry
        super().__init__(host.scalar_type)
        if build_bvh:
            self.build_bvh()
        dtype = kc.types.as_type(field.dtype) if field.dtype is not None else None
        if dtype is not None and (not isinstance(dtype, kc.types.VectorType)
                                  or dtype.length != host.dimension):
            raise ValueError("Invalid value type for position field, must be vector-valued "
                             "with same dimension as underlying geometry")
        if kind == "implicit" and field.evaluator(Cells(host)).op("grad") is None:
            raise ValueError("Gradient evaluation is not supported on the passed field")
        self.field = field
        self.dimension = host.dimension
        self._relative = bool(relative)
        self._host = host  # the geometry whose funcs the field's values move
        self._kind = kind
        name = self.name
        if name not in _FUNCS:
            _FUNCS[name] = deformed_funcs(name, host, deformation_source(field, host),
                                          self._relative)
        funcs = _FUNCS[name]
        self.CellArg, self.SideArg = funcs.CellArg, funcs.SideArg
        for attr in self.CELL_FUNCS + self.SIDE_FUNCS:
            setattr(self, attr, getattr(funcs, attr))
        if not hasattr(funcs, "cell_lookup"):  # made from this geometry's own funcs
            funcs.cell_lookup = closest_cell_lookup(self)
        self.cell_lookup = funcs.cell_lookup
        if host.environment_count() > 1 and hasattr(host, "cell_environment_index"):
            self.cell_environment_index, self.side_environment_index = _environment_funcs(
                host, self.CellArg, self.SideArg)

    @property
    def name(self) -> str:
        rel = "rel" if self._relative else "abs"
        return f"Deformed_{rel}_{self.field.kind_name}_{self._host.name}"

    @property
    def base(self) -> Geometry:
        """The geometry before any deformation."""
        return self._host.base

    @property
    def host(self) -> Geometry:
        """The geometry whose positions the field moves (the base, or a deformed one)."""
        return self._host

    def environment_count(self) -> int:
        return self._host.environment_count()

    @property
    def cell_env(self) -> Any:
        return self._host.cell_env

    def host_cell_environments(self) -> np.ndarray:
        return self._host.host_cell_environments()

    @property
    def relative(self) -> bool:
        """Whether the field's values are displacements."""
        return self._relative

    # ---- the base's topology ------------------------------------------------------------

    def cell_count(self) -> int:
        return self._host.cell_count()

    def side_count(self) -> int:
        return self._host.side_count()

    def boundary_side_count(self) -> int:
        return self._host.boundary_side_count()

    def vertex_count(self) -> int:
        return self._host.vertex_count()

    def reference_cell(self) -> Element:
        return self._host.reference_cell()

    def reference_side(self) -> Element:
        return self._host.reference_side()

    def boundary_side_indices(self) -> np.ndarray:
        return self._host.boundary_side_indices()

    def side_cells(self, sides: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._host.side_cells(sides)

    # ---- kernel arguments ---------------------------------------------------------------

    # Made anew at each call: the field's values may have been replaced since.
    def cell_arg_value(self, device: Any = None) -> Any:
        arg = self.CellArg()
        field_arg = _FUNCS[self.name].FieldCellArg()
        fill_source_args(self.field, self._host, field_arg, None, device)
        arg.field = field_arg
        arg.cell_count = self.cell_count()
        return arg

    def side_arg_value(self, device: Any = None) -> Any:
        arg = self.SideArg()
        funcs = _FUNCS[self.name]
        field_arg = funcs.FieldSideArg()
        fill_source_args(self.field, self._host, funcs.FieldCellArg(), field_arg, device)
        arg.field = field_arg
        arg.cell_count = self.cell_count()
        return arg

    def host_cell_positions(self, coords: np.ndarray) -> np.ndarray:
        """(cells, points, dimension) world positions, in float64, of the points of cell
        coordinates `coords` (points, 3) in every cell (evaluated by a kernel)."""
        coords = np.asarray(coords, dtype=np.float64).reshape(-1, 3)
        points = kc.array(coords, dtype=self.coords_type)
        out = kc.empty((self.cell_count(), len(coords)),
                       dtype=vec_type(self.dimension, self.scalar_type))
        if out.size:
            kc.launch(_position_kernel(self), dim=out.shape,
                      inputs=[self.cell_arg_value(), points, out])
        return np.asarray(out.numpy(), dtype=np.float64).reshape(
            self.cell_count(), len(coords), self.dimension)


def _environment_funcs(host: Geometry, CellArg: type, SideArg: type) -> tuple[Any, Any]:
    """A deformed geometry's environments: its host's (moving cells changes none)."""
    cell_env, side_env = host.cell_environment_index, host.side_environment_index

    @kc.func
    def cell_environment_index(arg: CellArg, s: Any):
        return cell_env(arg.field.elt, s)

    @kc.func
    def side_environment_index(arg: SideArg, s: Any):
        return side_env(arg.field.elt, s)

    return cell_environment_index, side_environment_index


_POSITION_KERNELS: dict[str, Any] = {}


def _position_kernel(geo: DeformedGeometry) -> Any:
    if geo.name not in _POSITION_KERNELS:
        CellArg, Coords = geo.CellArg, coords_type(geo.scalar_type)
        Vec = vec_type(geo.dimension, geo.scalar_type)
        position = geo.cell_position
        from kernelc.fem.types import make_free_sample

        @kc.kernel(enable_backward=False)
        def deformed_cell_positions(arg: CellArg, points: kc.array(dtype=Coords),
                                    out: kc.array2d(dtype=Vec)):
            cell, k = kc.tid()
            out[cell, k] = position(arg, make_free_sample(cell, points[k]))

        _POSITION_KERNELS[geo.name] = deformed_cell_positions
    return _POSITION_KERNELS[geo.name]


class DeformedTopology(SpaceTopology):
    """The node numbering of a space on a deformed geometry: the base topology's (Warp's
    `DeformedGeometrySpaceTopology`)."""

    def __init__(self, geometry: DeformedGeometry, base_topology: SpaceTopology) -> None:
        super().__init__(geometry, base_topology._shape)
        self.base = base_topology

    @property
    def name(self) -> str:
        return f"{self.base.name}_on_{self._geometry.name}"

    def node_count(self) -> int:
        return self.base.node_count()

    def _cell_node_indices(self) -> np.ndarray:
        return self.base.host_element_nodes()


def make_deformed_geometry(field: Any, relative: bool = True) -> DeformedGeometry:
    """`field.make_deformed_geometry(relative)`: the field's geometry moved by the field."""
    return DeformedGeometry(field, relative=relative)


__all__ = ["DeformedGeometry", "DeformedTopology", "make_deformed_geometry"]
