"""The `fem.interpolate` cases beyond nodes and regular quadratures: at the points of a
`PicQuadrature` or `ExplicitQuadrature` (any quadrature with particle bins,
`pic_arrays()`), and into a plain array at the nodes of a `dest_space`, as Warp's
`warp.fem.interpolate` does them.

- Quadrature points: one thread per point of a bin; the point's sample is in its bin's
  element, with the point's coordinates, index (`s.qp_index`, the particle's) and weight,
  and the value goes to `dest[s.qp_index]` (from a particle's last point only, where it has
  several: `point_writes()`). Particles outside the domain are not visited.
- `dest_space`: the array is read as the node values of a field of that space.
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.integrate import launch
from kernelc.fem.integrate_kernels import _named
from kernelc.fem.types import coords_type, sample_builder


def interpolate_at_points(itg: Any, roles: dict, quadrature: Any, dest: Any, fields: dict,
                          values: dict, device: Any) -> None:
    """Interpolates `itg` at the points of a quadrature with particle bins."""
    from kernelc.fem.interpolate import _prepare

    domain = quadrature.domain
    spec, common = _prepare(itg, roles, domain, fields, values, device)
    count = quadrature.total_point_count()
    if dest is not None and dest.shape[0] < count:
        raise ValueError(f"dest must be a warp array with {count} rows")
    offsets, particles, coords, weights = quadrature.pic_arrays(device)
    bins = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets.numpy()))
    if quadrature.uses_domain_element_indices:
        bins = domain.element_indices()[bins]
    elements = kc.array(bins.astype(np.int32), dtype=kc.int32, device=device)
    dest_type = None if dest is None else dest.dtype
    key = ("interpolate_points", domain.name, repr(kc.types.as_type(dest_type)))
    if key not in spec.kernels:
        spec.kernels[key] = _points_kernel(spec, domain, dest_type, itg.__name__)
    target = dest if dest is not None else kc.empty(1, dtype=kc.float32, device=device)
    writes = quadrature.point_writes(device) if hasattr(quadrature, "point_writes") else \
        kc.full(len(bins), 1, dtype=kc.int32, device=device)
    if len(bins):
        launch(itg, spec.kernels[key], len(bins),
               [*common, elements, particles, coords, weights, writes, target], device)


class ArrayDest:
    """An array (or None) seen as the node values of a field of `space`, for interpolation
    at the nodes of `dest_space`."""

    def __init__(self, space: Any, array: Any, device: Any) -> None:
        self.space = space
        if array is None:  # the integrand's side effects only
            array = kc.empty(space.node_count(), dtype=getattr(space, "dof_dtype", space.dtype),
                             device=device)
        elif array.shape[0] < space.node_count():
            raise ValueError(f"dest must have at least {space.node_count()} rows (one per "
                             "node of dest_space)")
        self.dof_values = array
        self.dtype = array.dtype


def _points_kernel(spec: Any, domain: Any, dest_type: Any, name: str) -> Any:
    scalar = domain.geometry.scalar_type
    Coords = coords_type(scalar)
    make_sample = sample_builder(scalar)
    call = spec.call
    store = dest_type is not None
    Dest = dest_type if store else kc.float32
    ElementArg, Fields, Values = domain.ElementArg, spec.Fields, spec.Values

    @kc.kernel
    def interpolate_points(elt_arg: ElementArg, fields: Fields, values: Values,
                           elements: kc.array(dtype=int), particles: kc.array(dtype=int),
                           coords: kc.array(dtype=Coords), weights: kc.array(dtype=scalar),
                           writes: kc.array(dtype=int), dest: kc.array(dtype=Dest)):
        p = kc.tid()
        qp = particles[p]
        s = make_sample(elements[p], coords[p], qp, weights[p], kc.vec2i(-1, -1),
                        kc.vec2i(-1, -1))
        if kc.static(store):
            value = Dest(call(s, fields, values))
            if writes[p] != 0:
                dest[qp] = value
        else:
            call(s, fields, values)

    return _named(interpolate_points, f"{_ident(name)}_interpolate_points")


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


__all__ = ["ArrayDest", "interpolate_at_points"]
