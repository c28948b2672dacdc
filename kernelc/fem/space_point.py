"""`fem.PointBasisSpace`: a basis with one node per quadrature point and radial kernel
functions (Warp's `PointBasisSpace` and `UnstructuredPointTopology`), for particle-in-cell
and meshless methods.

The nodes of a cell are the quadrature's points in that cell (a `PicQuadrature`'s
particles, a regular rule's points, ...), at most `max_nodes_per_element` of them: a cell
with fewer points has fewer nodes (Warp's `element_node_count`, the smaller of the two).
Node `k` of a cell is the quadrature point `k` of the cell; its global number is the
point's index (`s.qp_index` of integrals over the quadrature), or with
`use_evaluation_point_index` its evaluation index (the point's place among the points the
quadrature evaluates, cell after cell, which makes the basis discontinuous).

The basis function of a node at a sample is `kernel_func(d2, point_index, *kernel_values)`,
`d2` the squared distance from the sample to the node, in the cell's reference coordinates
or in the world (`distance_space`), `point_index` the node's quadrature point index. Its
reference gradient is `kernel_grad_func(...)` times the gradient of `d2`, zero without a
`kernel_grad_func`. The default kernel is Warp's Dirac: 1 where `d2 < squared_radius`
(1e-6), else 0. A node's quadrature weight is its point's.

Everything about the points is read from the quadrature once, on the host, into
(cells, max nodes per cell) tables: node numbers (-1 past a cell's count), point
coordinates and point indices, which the field funcs (`space_point_eval.py`) read.
"""

import itertools
import logging
from functools import cached_property
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.space import FunctionSpace
from kernelc.fem.topology import SpaceTopology
from kernelc.fem.types import ElementKind, coords_type, make_free_sample, vec_type
from kernelc.frontend.decorators import Func

_MAX_KERNEL_VALUES = 8  # extra kernel parameters after (squared distance, point index)


class UnstructuredPointTopology(SpaceTopology):
    """The nodes of a quadrature's points (Warp's `UnstructuredPointTopology`).

    Args:
        quadrature: A quadrature over all the cells of a geometry or geometry partition.
        max_nodes_per_element: Nodes per cell at most (default: the quadrature's largest
            point count per element).
        use_evaluation_point_index: Number nodes by evaluation point instead of point index.

    Raises:
        ValueError: A domain of sides or of part of the partition's cells, or a quadrature
            without a largest point count.
    """

    def __init__(self, quadrature: Any, max_nodes_per_element: int = -1,
                 use_evaluation_point_index: bool = False) -> None:
        if max_nodes_per_element < 0:
            max_nodes_per_element = _max_points_per_element(quadrature)
            if max_nodes_per_element is None:
                raise ValueError("Quadrature must define a maximum number of points per element")
        domain = quadrature.domain
        partition = domain.geometry_partition
        if domain.element_kind != ElementKind.CELL or \
                domain.element_count() != partition.cell_count():
            raise ValueError("Point topology may only be defined on quadrature domains that span "
                             "the whole geometry partition")
        self._quadrature = quadrature
        self._geometry = domain.geometry
        self._use_evaluation_point_index = bool(use_evaluation_point_index)
        self.MAX_NODES_PER_ELEMENT = int(max_nodes_per_element)
        self.dimension = self._geometry.dimension

    @property
    def quadrature(self) -> Any:
        """The quadrature whose points are the nodes."""
        return self._quadrature

    @property
    def name(self) -> str:
        return (f"PointTopology_{self._geometry.name}_{self._quadrature.name}_"
                f"{self._use_evaluation_point_index}")

    def node_count(self) -> int:
        """The quadrature's points (or evaluation points)."""
        if self._use_evaluation_point_index:
            return int(self._quadrature.evaluation_point_count())
        return int(self._quadrature.total_point_count())

    @cached_property
    def tables(self) -> dict[str, np.ndarray]:
        """Host tables per geometry cell: `counts` (nodes in the cell), and per (cell, node)
        `nodes` (-1 past the count), `point_index`, `coords` and `weights` of its point."""
        return _point_tables(self._quadrature, self.MAX_NODES_PER_ELEMENT,
                             self._use_evaluation_point_index)

    def _cell_node_indices(self) -> np.ndarray:
        return self.tables["nodes"]

    def host_element_node_counts(self) -> np.ndarray:
        """Nodes of each geometry cell (0 for cells outside the quadrature's domain)."""
        return self.tables["counts"]

    def device_tables(self, device: Any = None) -> dict[str, Any]:
        """`counts`, `coords`, `point_index` and `weights` as `kc.array`s on `device`."""
        cache = self.__dict__.setdefault("_device_tables", {})
        key = str(kc.get_device(device))
        if key not in cache:
            t, scalar = self.tables, self._geometry.scalar_type
            coords = self._own_point_coords(device)
            if coords is None:
                coords = kc.array(t["coords"], dtype=coords_type(scalar), device=device)
            cache[key] = {
                "counts": kc.array(t["counts"], dtype=kc.int32, device=device),
                "coords": coords,
                "point_index": kc.array(t["point_index"], dtype=kc.int32, device=device),
                "weights": kc.array(t["weights"], dtype=scalar, device=device)}
        return cache[key]

    def _own_point_coords(self, device: Any) -> Any:
        """The quadrature's own (cells, points) coordinates array when it is laid out as
        the coordinates table (an `ExplicitQuadrature` over all cells, numbered by point
        index), so that gradients reach it; else None."""
        points = getattr(self._quadrature, "cell_points", lambda: None)()
        if points is None or self._use_evaluation_point_index or \
                tuple(points.shape) != (self._geometry.cell_count(), self.MAX_NODES_PER_ELEMENT) \
                or points.device != kc.get_device(device):
            return None
        return points

    def rebuild(self) -> None:
        """Reads the quadrature's points again."""
        super().rebuild()
        self.__dict__.pop("_device_tables", None)


class PointShape:
    """What the assembly code reads of a basis' shape: a point basis has per-cell nodes,
    and no shape functions shared by all cells."""

    ORDER = 0

    def __init__(self, name: str, nodes_per_element: int) -> None:
        self.name = name
        self.NODES_PER_ELEMENT = nodes_per_element

    def _unsupported(self, *args: Any) -> Any:
        raise NotImplementedError("point basis spaces have no shape functions shared by all "
                                  "cells: interpolating into their fields and NodalQuadrature "
                                  "over them are not supported yet")

    node_coords = node_quadrature_weights = trace_node_quadrature_weights = _unsupported
    weight = weight_gradient = property(_unsupported)


class PointBasisSpace:
    """Nodes at a quadrature's points with radial kernel basis functions (Warp's
    `warp.fem.PointBasisSpace`).

    Args:
        quadrature: The quadrature whose points are the nodes (`PicQuadrature`,
            `RegularQuadrature`, `ExplicitQuadrature`, `NodalQuadrature`), over all the
            cells of a geometry or geometry partition.
        kernel_func: A `@wp.func` `(squared_distance: float, point_index: int, *values)`
            returning the basis function's value (default: a Dirac of squared radius
            1e-6). The squared distance may also be of the geometry's scalar type.
        kernel_grad_func: Its derivative with respect to the squared distance, same
            parameters (default: zero gradients).
        kernel_values: The values of the kernel's extra parameters, by name.
        distance_space: "reference" (the cell's reference coordinates) or "world".
        max_nodes_per_element: Nodes per cell at most (default: the quadrature's largest
            point count per element).
        use_evaluation_point_index: Number nodes by the quadrature's evaluation points (one
            per cell and point: a discontinuous basis) instead of its point indices.

    Raises:
        TypeError: A kernel that is no `@wp.func` or whose parameters are not
            (float, int, values of kernelc types).
        ValueError: See `UnstructuredPointTopology`; a bad `distance_space`.
    """

    def __init__(self, quadrature: Any, kernel_func: Any = None, kernel_grad_func: Any = None,
                 kernel_values: dict[str, Any] | None = None,
                 distance_space: str = "reference", max_nodes_per_element: int = -1,
                 use_evaluation_point_index: bool = False) -> None:
        if distance_space not in ("reference", "world"):
            raise ValueError(f"distance_space must be 'reference' or 'world', got "
                             f"{distance_space!r}")
        if kernel_func is None:
            kernel_func, kernel_grad_func = dirac_radial_kernel, None
            kernel_values = {"squared_radius": 1.0e-6}
        self._quadrature = quadrature
        self._distance_space = distance_space
        self.ORDER = 0
        self._topology = UnstructuredPointTopology(quadrature, max_nodes_per_element,
                                                   use_evaluation_point_index)
        scalar = self.geometry.scalar_type
        self.kernel_func = kernel_func
        self.kernel_grad_func = kernel_grad_func
        names, types, first = _kernel_signature(kernel_func, scalar, "Radial kernel")
        if kernel_grad_func is not None:
            grad_names, grad_types, _ = _kernel_signature(kernel_grad_func, scalar,
                                                          "Radial kernel gradient")
            if grad_types != types:
                raise TypeError(f"Radial kernel gradient '{kernel_grad_func.__name__}' must take "
                                f"the parameters of '{kernel_func.__name__}'")
        self.distance_type = first
        self.value_names = names
        grad_key = "None" if kernel_grad_func is None else _func_key(kernel_grad_func)
        self._name = (f"{self._topology.name}_{_func_key(kernel_func)}_{grad_key}_"
                      f"{distance_space}")
        self.KernelValues = _values_struct(_func_key(kernel_func), names, types)
        self._kernel_arg = self.KernelValues()
        self._shape = PointShape(self._name, self._topology.MAX_NODES_PER_ELEMENT)
        self.kernel_values = kernel_values or {}

    @property
    def name(self) -> str:
        """Identifies the basis (topology, kernel funcs, distance space)."""
        return self._name

    @property
    def topology(self) -> UnstructuredPointTopology:
        """The node numbering."""
        return self._topology

    @property
    def geometry(self) -> Any:
        """The quadrature's geometry."""
        return self._topology.geometry

    @property
    def shape(self) -> PointShape:
        """Nodes per cell (at most) and name, for the assembly code."""
        return self._shape

    @property
    def quadrature(self) -> Any:
        """The quadrature whose points are the nodes."""
        return self._quadrature

    @property
    def distance_space(self) -> str:
        """"reference" or "world"."""
        return self._distance_space

    @property
    def kernel_values(self) -> dict[str, Any]:
        """The values of the kernel's extra parameters (set to change them)."""
        return self._kernel_values

    @kernel_values.setter
    def kernel_values(self, values: dict[str, Any]) -> None:
        func_name = self.kernel_func.__name__
        arg = self.KernelValues()
        for name, value in values.items():
            if name not in self.value_names:
                raise ValueError(f"Passed value argument '{name}' does not match any of the "
                                 f"function '{func_name}' parameters")
            slot = f"v{self.value_names.index(name)}"
            want = type(arg).__annotations__[slot]
            try:
                if isinstance(kc.types.as_type(want), kc.types.ScalarType):
                    value = want(value)
                setattr(arg, slot, value)
            except Exception as err:
                raise ValueError(f"Passed value argument '{name}' of type "
                                 f"'{type(value).__name__}' is incompatible with the function "
                                 f"'{func_name}' parameter of type "
                                 f"'{kc.types.as_type(want)!r}'") from err
        missing = [n for n in self.value_names if n not in values]
        if missing:
            logging.getLogger("kernelc.fem").warning(
                "Missing values for parameter(s) '%s' of the function '%s', will be "
                "zero-initialized", ", ".join(missing), func_name)
        self._kernel_values = dict(values)
        self._kernel_arg = arg

    def kernel_arg_value(self) -> Any:
        """The struct of kernel values that field funcs pass to the kernel."""
        return self._kernel_arg

    def make_function_space(self, dtype: Any = None, dof_mapper: Any = None) -> "PointFunctionSpace":
        """The space of `dtype` values at these nodes (`make_collocated_function_space`)."""
        return PointFunctionSpace(self, dtype, dof_mapper)

    def node_positions(self, out: Any = None) -> Any:
        """World position of every node, a `kc.array` of vectors (zero for points in no
        cell of the domain)."""
        geo = self.geometry
        dtype = vec_type(geo.dimension, geo.scalar_type)
        count = self._topology.node_count()
        if out is None:
            out = kc.zeros(count, dtype=dtype)
        elif tuple(out.shape) != (count,) or kc.types.as_type(out.dtype) != kc.types.as_type(dtype):
            raise ValueError(f"Out node positions array must have shape {(count,)} and data "
                             f"type {kc.types.as_type(dtype)!r}")
        tables = self._topology.device_tables(out.device)
        nodes = kc.array(self._topology.host_element_nodes(), dtype=kc.int32, device=out.device)
        cells, per_cell = nodes.shape
        if cells * per_cell:
            kc.launch(_positions_kernel(geo), dim=(cells, per_cell), device=out.device,
                      inputs=[geo.cell_arg_value(out.device), nodes, tables["coords"], out])
        return out

    def trace(self) -> Any:
        raise NotImplementedError("traces of point basis spaces are not supported yet")


class PointFunctionSpace(FunctionSpace):
    """The values of a `PointBasisSpace` (Warp's `CollocatedFunctionSpace` of one)."""

    def field_eval(self, kind: str, domain: Any) -> Any:
        """The struct and operator funcs of a "test", "trial" or "discrete" field."""
        from kernelc.fem.space_point_eval import point_field_eval

        return point_field_eval(kind, self, domain)

    def fill_field_arg(self, arg: Any, device: Any) -> None:
        """Sets what the basis adds to a field's struct (point tables, kernel values)."""
        tables = self.topology.device_tables(device)
        arg.node_counts = tables["counts"]
        arg.point_coords = tables["coords"]
        arg.point_indices = tables["point_index"]
        arg.kernel = self.basis.kernel_arg_value()

    def nodal_tables(self, device: Any = None) -> tuple[Any, Any]:
        """(cells, nodes per cell) node coordinates and quadrature weights, for
        `integrate(..., assembly="nodal")`."""
        tables = self.topology.device_tables(device)
        return tables["coords"], tables["weights"]


@kc.func
def dirac_radial_kernel(squared_distance: float, qp_index: int, squared_radius: float):
    """Warp's default point kernel: 1 within the squared radius, else 0."""
    return kc.where(squared_distance < squared_radius, 1.0, 0.0)


# ---- host helpers ---------------------------------------------------------------------------


def _max_points_per_element(quadrature: Any) -> int | None:
    for name in ("max_points_per_element", "points_per_element"):
        getter = getattr(quadrature, name, None)
        if getter is not None:
            count = getter()
            return None if count is None else int(count)
    return None


def _point_tables(quadrature: Any, per_cell: int, by_evaluation: bool) -> dict[str, np.ndarray]:
    """The (geometry cells, `per_cell`) tables of `UnstructuredPointTopology.tables`."""
    domain = quadrature.domain
    geo = domain.geometry
    np_scalar = kc.types.as_type(geo.scalar_type).np_dtype.type
    cells = np.asarray(domain.element_indices(), dtype=np.int64)
    if hasattr(quadrature, "pic_arrays"):  # bins of points: PicQuadrature, ExplicitQuadrature
        offsets, index, coords, weights = (a.numpy() for a in quadrature.pic_arrays())
        bins = np.arange(len(cells)) if quadrature.uses_domain_element_indices else cells
        start, count = offsets[bins], offsets[bins + 1] - offsets[bins]
    else:  # the same points in every element: RegularQuadrature, NodalQuadrature
        points, point_weights = (a.numpy() for a in quadrature.arrays())
        n = len(point_weights)
        start, count = np.arange(len(cells)) * n, np.full(len(cells), n)
        table = quadrature.index_table()
        index = (np.arange(len(cells) * n) if table is None
                 else np.asarray(table.numpy())[cells].reshape(-1))
        coords = np.tile(np.asarray(points).reshape(-1, 3), (len(cells), 1))
        weights = np.tile(np.asarray(point_weights).reshape(-1), len(cells))
    k = np.arange(per_cell)[None, :]
    counts = np.minimum(count, per_cell)
    valid = k < counts[:, None]
    flat = np.where(valid, start[:, None] + k, 0)
    out = {"counts": np.zeros(geo.cell_count(), dtype=np.int32),
           "nodes": np.full((geo.cell_count(), per_cell), -1, dtype=np.int32),
           "point_index": np.full((geo.cell_count(), per_cell), -1, dtype=np.int32),
           "coords": np.zeros((geo.cell_count(), per_cell, 3), dtype=np_scalar),
           "weights": np.zeros((geo.cell_count(), per_cell), dtype=np_scalar)}
    if len(index) == 0:
        return out
    point_index = np.where(valid, np.asarray(index)[flat], -1)
    out["counts"][cells] = counts
    out["point_index"][cells] = point_index
    out["nodes"][cells] = np.where(valid, flat, -1) if by_evaluation else point_index
    out["coords"][cells] = np.where(valid[..., None], np.asarray(coords).reshape(-1, 3)[flat], 0)
    out["weights"][cells] = np.where(valid, np.asarray(weights).reshape(-1)[flat], 0)
    return out


_TOKENS = itertools.count()


def _func_key(func: Any) -> str:
    """A name for a kernel func that no other func object shares (Warp keys evaluators by
    the func's native name: same-named funcs of different modules differ)."""
    token = func.__dict__.get("_point_basis_token")
    if token is None:
        token = func.__dict__["_point_basis_token"] = next(_TOKENS)
    return f"{func.__name__}{token}"


def _kernel_signature(func: Any, scalar: Any, what: str) -> tuple[tuple, tuple, Any]:
    """(names, types) of a radial kernel's extra parameters and the type of its squared
    distance, checked as Warp checks them."""
    name = getattr(func, "__name__", repr(func))
    if not isinstance(func, Func):
        raise TypeError(f"{what} '{name}' must be a @wp.func, got {type(func).__name__}")
    expected = " or ".join(dict.fromkeys(repr(kc.types.as_type(t))
                                         for t in (kc.float32, scalar)))
    names = func.arg_names
    annotations = [kc.types.as_type(func.annotations.get(n)) for n in names]
    first = annotations[0] if names else None
    second = annotations[1] if len(names) > 1 else None
    if first not in (kc.types.as_type(kc.float32), kc.types.as_type(scalar)) or \
            second != kc.types.as_type(kc.int32):
        got = ", ".join("unavailable" if t is None else repr(t) for t in (first, second))
        raise TypeError(f"{what} '{name}' argument types must be ({expected}, int32), got "
                        f"({got})")
    extra = names[2:]
    if len(extra) > _MAX_KERNEL_VALUES:
        raise TypeError(f"{what} '{name}' takes {len(extra)} values after the point index; "
                        f"kernelc supports up to {_MAX_KERNEL_VALUES}")
    types = []
    for n, t in zip(extra, annotations[2:]):
        if t is None:
            raise TypeError(f"{what} '{name}': parameter '{n}' needs a kernelc type annotation")
        types.append(func.annotations[n])
    return tuple(extra), tuple(types), first


_STRUCTS: dict[tuple, type] = {}


def _values_struct(key: str, names: tuple, types: tuple) -> type:
    """The struct of a kernel's extra values: fields v0, v1, ... in parameter order."""
    full = (key, names, tuple(repr(kc.types.as_type(t)) for t in types))
    if full not in _STRUCTS:
        fields = {f"v{i}": t for i, t in enumerate(types)}
        _STRUCTS[full] = kc.struct(type(f"PointKernelValues_{key}", (),
                                        {"__annotations__": fields}))
    return _STRUCTS[full]


_POSITION_KERNELS: dict[str, Any] = {}


def _positions_kernel(geo: Any) -> Any:
    if geo.name not in _POSITION_KERNELS:
        CellArg, position = geo.CellArg, geo.cell_position
        Coords = coords_type(geo.scalar_type)
        Pos = vec_type(geo.dimension, geo.scalar_type)

        @kc.kernel(enable_backward=False)
        def point_node_positions(cell_arg: CellArg, nodes: kc.array2d(dtype=int),
                                 coords: kc.array2d(dtype=Coords), out: kc.array(dtype=Pos)):
            cell, k = kc.tid()
            node = nodes[cell, k]
            if node >= 0:
                out[node] = position(cell_arg, make_free_sample(cell, coords[cell, k]))

        _POSITION_KERNELS[geo.name] = point_node_positions
    return _POSITION_KERNELS[geo.name]


__all__ = ["PointBasisSpace", "PointFunctionSpace", "UnstructuredPointTopology",
           "dirac_radial_kernel"]
