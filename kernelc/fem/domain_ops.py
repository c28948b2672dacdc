"""Domain operators beyond the element funcs every domain has (`position`, `normal`, ...):
samples moved between sides and their cells (`fem.to_inner_cell`, `fem.to_outer_cell`,
`fem.to_cell_side`), the sample's environment (`fem.environment_index`) and the
coordinates of world points in elements (`fem.element_coordinates`,
`fem.element_closest_point`, made by `element_coords.py`).

`domain_operator(domain, name)` is what the integrand rewriter asks for the func of
operator `name` on a domain: the domain's own `element_<name>` if it has one, else one
made here, once per geometry kind and element kind; None where Warp has none (the side
operators on cells).
"""

from typing import Any

import kernelc as kc
from kernelc.fem.domain_index import (
    element_index_func,
    element_partition_index_func,
    partition_lookup_func,
)
from kernelc.fem.element_coords import closest_point_func, coordinates_func
from kernelc.fem.types import ElementKind, make_free_sample


def domain_operator(domain: Any, name: str) -> Any:
    """The func implementing operator `name` on `domain` (first argument: the domain's
    element argument), or None."""
    func = getattr(domain, f"element_{name}", None)
    if func is not None or name not in _MAKERS:
        return func
    # keyed by names, as the field funcs are: equal names mean the same device funcs
    key = (name, domain.geometry.name, domain.element_kind)
    if key not in _CACHE:
        _CACHE[key] = _MAKERS[name](domain.geometry, domain.element_kind == ElementKind.SIDE)
    return _CACHE[key]


_CACHE: dict[tuple, Any] = {}


def _to_inner_cell(geo: Any, side: bool) -> Any:
    return _to_cell(geo.side_inner_cell_index, geo.side_inner_cell_coords) if side else None


def _to_outer_cell(geo: Any, side: bool) -> Any:
    return _to_cell(geo.side_outer_cell_index, geo.side_outer_cell_coords) if side else None


def _to_cell(cell_of: Any, coords_of: Any) -> Any:
    @kc.func
    def to_cell(arg: Any, s: Any):
        return make_free_sample(cell_of(arg, s.element_index),
                                coords_of(arg, s.element_index, s.element_coords))

    return to_cell


def _to_cell_side(geo: Any, side: bool) -> Any:
    if not side:
        return None
    from_cell = geo.side_from_cell_coords

    @kc.func
    def to_cell_side(arg: Any, cell_s: Any, side_index: int):
        return make_free_sample(side_index, from_cell(arg, side_index, cell_s.element_index,
                                                      cell_s.element_coords))

    return to_cell_side


@kc.func
def _environment_index(arg: Any, s: Any):
    return 0


def _environment_index_func(geo: Any, side: bool) -> Any:
    # geometries of several environments say which; the others have one, environment 0
    func = getattr(geo, "side_environment_index" if side else "cell_environment_index", None)
    return _environment_index if func is None else func


_MAKERS = {
    "to_inner_cell": _to_inner_cell,
    "to_outer_cell": _to_outer_cell,
    "to_cell_side": _to_cell_side,
    "environment_index": _environment_index_func,
    "element_coordinates": coordinates_func,
    "element_closest_point": closest_point_func,
    "element_index": element_index_func,
    "element_partition_index": element_partition_index_func,
    "partition_lookup": partition_lookup_func,
}

__all__ = ["domain_operator"]
