"""What an integrand's `fem.Domain` parameter holds: the geometry's element argument
(`geo`, which the geometric operators take) and the domain's element indices (`index`,
Warp's `DomainArg`), behind `fem.element_index`, `fem.element_partition_index` and
`fem.partition_lookup`.

The index part holds the geometry index of each domain element and the partition index of
each geometry cell (-1 outside the partition), or flags saying that they are the identity
(whole geometries), so that the usual domains carry no arrays. `fem.partition_lookup` finds
the cell of a position among the partition's cells: on grids by Warp's search of the cells
around the position's clamped cell (within half a cell, or `max_dist`), elsewhere the
closest partition cell (every cell searched, as kernelc's lookups do).
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element_coords import closest_point_func
from kernelc.fem.lookup import grid_search
from kernelc.fem.types import NULL_ELEMENT_INDEX, make_free_sample


@kc.struct
class DomainIndexArg:
    """A domain's element indices, as kernels read them."""

    element_indices: kc.array(dtype=int)  # geometry index of each domain element
    partition_cells: kc.array(dtype=int)  # partition index of each geometry cell, or -1
    elements_identity: int  # element_indices is the identity (not stored)
    partition_identity: int  # partition_cells is the identity (not stored)
    cell_count: int  # geometry cells


# operators that take the whole domain argument (the others take its `geo` part)
INDEX_OPERATORS = frozenset({"element_index", "element_partition_index", "partition_lookup"})

_ARG_TYPES: dict[Any, type] = {}


def domain_arg_type(domain: Any) -> type:
    """The struct an integrand's domain parameter has on `domain` (one per element
    argument type, so one per geometry kind and element kind)."""
    ElementArg = domain.ElementArg
    if ElementArg not in _ARG_TYPES:
        name = f"DomainArg_{getattr(ElementArg, '__name__', 'element')}"
        annotations = {"geo": ElementArg, "index": DomainIndexArg}
        _ARG_TYPES[ElementArg] = kc.struct(type(name, (), {"__annotations__": annotations}))
    return _ARG_TYPES[ElementArg]


def domain_arg_value(domain: Any, device: Any = None) -> Any:
    """The domain parameter's value on `device`: the element argument and the indices."""
    arg = domain_arg_type(domain)()
    arg.geo = domain.element_arg_value(device)
    arg.index = _index_value(domain, device)
    return arg


def _index_value(domain: Any, device: Any) -> Any:
    # Built at each call, as Warp fills it: a partition rebuilt in place changes its cells.
    from kernelc.fem.domain import Cells, Sides

    geo = domain.geometry
    whole = domain.geometry_partition is geo
    arg = DomainIndexArg()
    empty = _empty(device)
    arg.elements_identity = int(whole and type(domain) in (Cells, Sides))
    arg.element_indices = empty if arg.elements_identity else kc.array(
        np.ascontiguousarray(domain.element_indices(), dtype=np.int32), dtype=kc.int32,
        device=device)
    arg.partition_identity = int(whole)
    if whole:
        arg.partition_cells = empty
    else:
        cells = domain.geometry_partition.host_element_indices("cells")
        table = np.full(geo.cell_count(), NULL_ELEMENT_INDEX, dtype=np.int32)
        table[cells] = np.arange(len(cells), dtype=np.int32)
        arg.partition_cells = kc.array(table, dtype=kc.int32, device=device)
    arg.cell_count = geo.cell_count()
    return arg


_EMPTY: dict[str, Any] = {}


def _empty(device: Any) -> Any:
    """An empty int array on `device` (what identity indices hold), made once per device."""
    key = str(kc.get_device(device))
    if key not in _EMPTY:
        _EMPTY[key] = kc.empty(0, dtype=kc.int32, device=device)
    return _EMPTY[key]


@kc.func
def _element_index(arg: Any, domain_element_index: int):
    if arg.index.elements_identity != 0:
        return domain_element_index
    return arg.index.element_indices[domain_element_index]


@kc.func
def _element_partition_index(arg: Any, cell_index: int):
    if arg.index.partition_identity != 0:
        return cell_index
    return arg.index.partition_cells[cell_index]


@kc.func
def _in_partition(index: DomainIndexArg, cell: int):
    if index.partition_identity != 0:
        return True
    return index.partition_cells[cell] != NULL_ELEMENT_INDEX


def element_index_func(geo: Any, side: bool) -> Any:
    """`fem.element_index(domain, i)`: the geometry index of domain element i."""
    return _element_index


def element_partition_index_func(geo: Any, side: bool) -> Any:
    """`fem.element_partition_index(domain, cell)` (domains of cells, as in Warp)."""
    return None if side else _element_partition_index


def partition_lookup_func(geo: Any, side: bool) -> Any:
    """`fem.partition_lookup(domain, x[, max_dist])` (domains of cells, as in Warp)."""
    if side:
        return None
    from kernelc.fem.domain import Cells

    lookup = Cells(geo).element_lookup
    from kernelc.fem.grid2d import Grid2D
    from kernelc.fem.grid3d import Grid3D

    if isinstance(geo, (Grid2D, Grid3D)):
        filtered = _grid_filtered_lookup(geo, geo.dimension)
    else:
        filtered = _closest_filtered_lookup(geo)

    @kc.func
    def lookup_within(arg: Any, pos: Any, max_dist: float):
        if arg.index.partition_identity != 0:
            return lookup(arg.geo, pos)
        return filtered(arg.geo, arg.index, pos, max_dist)

    @kc.func
    def partition_lookup(arg: Any, pos: Any, max_dist: float):
        return lookup_within(arg, pos, max_dist)

    @kc.func
    def partition_lookup(arg: Any, pos: Any):  # noqa: F811
        return lookup_within(arg, pos, 0.0)

    return partition_lookup


def _closest_filtered_lookup(geo: Any) -> Any:
    """The closest of the partition's cells, every cell searched; of cells at the same
    distance the last wins, as in Warp's search (which visits them in its BVH's order)."""
    closest = closest_point_func(geo, False)
    scalar, Coords = geo.scalar_type, geo.coords_type

    @kc.func
    def closest_partition_cell(arg: Any, index: DomainIndexArg, pos: Any, max_dist: float):
        best = int(NULL_ELEMENT_INDEX)
        best_coords = Coords(scalar(0.0))
        best_dist = scalar(0.0)
        for cell in range(index.cell_count):
            if _in_partition(index, cell):
                coords, dist = closest(arg, cell, pos)
                if best == NULL_ELEMENT_INDEX or dist <= best_dist:
                    best, best_coords, best_dist = cell, coords, dist
        return make_free_sample(best, best_coords)

    return closest_partition_cell


@kc.func
def _accept_partition_cell(index: DomainIndexArg, target: int, cell: int):
    return _in_partition(index, cell)


def _grid_filtered_lookup(geo: Any, dim: int) -> Any:
    """Warp's grid search (`lookup.grid_search`) among the partition's cells: the position's
    (clamped) cell if in the partition, else the closest partition cell among those within
    half a cell of it, the window growing by 3 up to `max_dist`."""
    search = grid_search(dim, geo.scalar_type, geo.CellArg, _accept_partition_cell)

    @kc.func
    def grid_partition_lookup(arg: Any, index: DomainIndexArg, pos: Any, max_dist: float):
        return search(arg, pos, max_dist, index, 0)

    return grid_partition_lookup


__all__ = ["INDEX_OPERATORS", "DomainIndexArg", "domain_arg_type", "domain_arg_value"]
