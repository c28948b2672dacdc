"""`fem.interpolate` at the nodes of a Nedelec or Raviart-Thomas space (`space_vector.py`),
on cells or sides, and at `dim` free samples.

At nodes, a node's value is reduced over the elements holding it as for the other spaces
(`interpolate.py`), then turned into the node's one scalar dof by the space's
`node_dof_func` in the first element where the node lies (Warp's rule): the world value
pulled back to the reference element and dotted with the node's signed dual weight.
"""

from typing import Any

import kernelc as kc
from kernelc.fem.integrate import launch
from kernelc.fem.integrate_kernels import _named, node_coords_func
from kernelc.fem.interpolate import node_reduction_step
from kernelc.fem.types import NULL_ELEMENT_INDEX, OUTSIDE, coords_type, sample_builder


def vector_at_nodes(itg: Any, spec: Any, common: tuple, dest: Any, restriction: Any,
                    reduction: str, device: Any) -> None:
    """Sets the dofs of `dest` (a field of a vector-valued space) at the nodes of
    `restriction` from the integrand's world values."""
    space = dest.space
    domain = restriction.domain
    key = ("interpolate_vector_nodes", domain.name, space.name, reduction)
    if key not in spec.kernels:
        spec.kernels[key] = _node_kernel(spec, domain, space, reduction, itg.__name__)
    arrays = restriction.arrays(device)
    coords = kc.array(space.shape.node_coords(), dtype=domain.geometry.coords_type,
                      device=device)
    if restriction.node_count():
        launch(itg, spec.kernels[key], restriction.node_count(),
               [*common, coords, space.element_signs(device), arrays["nodes"],
                arrays["offsets"], arrays["entry_element"], arrays["entry_local"],
                dest.dof_values], device)


def _node_kernel(spec: Any, domain: Any, space: Any, reduction: str, name: str) -> Any:
    scalar = domain.geometry.scalar_type
    Coords = coords_type(scalar)
    make_sample = sample_builder(scalar)
    call = spec.call
    measure = domain.element_measure
    node_coords = node_coords_func(domain, space.shape.NODES_PER_ELEMENT)
    dof_value = space.node_dof_func(domain)
    Value = space.dtype
    step, first_only = node_reduction_step(reduction, scalar)
    ElementArg, Fields, Values = domain.ElementArg, spec.Fields, spec.Values

    @kc.kernel
    def interpolate_vector_nodes(elt_arg: ElementArg, fields: Fields, values: Values,
                                 cell_node_coords: kc.array(dtype=Coords),
                                 signs: kc.array2d(dtype=scalar),
                                 nodes: kc.array(dtype=int), offsets: kc.array(dtype=int),
                                 entry_element: kc.array(dtype=int),
                                 entry_local: kc.array(dtype=int),
                                 dest: kc.array(dtype=scalar)):
        r = kc.tid()
        node = nodes[r]
        total = Value(scalar(0.0))
        weight_sum = scalar(0.0)
        first_coords = Coords()
        first_element = -1
        first_local = -1
        for e in range(offsets[r], offsets[r + 1]):
            element = entry_element[e]
            local = entry_local[e]
            coords = node_coords(elt_arg, element, local, cell_node_coords)
            if coords[0] != scalar(OUTSIDE):
                if first_local < 0:
                    first_coords = coords
                    first_element = element
                    first_local = local
                s = make_sample(element, coords, node, scalar(1.0), kc.vec2i(-1, -1),
                                kc.vec2i(-1, -1))
                val = Value(call(s, fields, values))
                total, weight_sum = step(total, weight_sum, val, measure(elt_arg, s))
                if kc.static(first_only):
                    break
        if weight_sum > scalar(0.0):
            dest[node] = dof_value(signs, elt_arg, first_element, first_local, first_coords,
                                   total / weight_sum)

    return _named(interpolate_vector_nodes, f"{_ident(name)}_interpolate_vector_nodes")


def free_samples(itg: Any, spec: Any, common: tuple, domain: Any, dest: Any, dim: int,
                 device: Any) -> None:
    """The integrand at `dim` samples tied to no element (`s.qp_index` in [0, dim), weight
    1 / dim, coordinates OUTSIDE), written to `dest[s.qp_index]` or run for its effects
    (Warp's `interpolate(..., dim=...)`)."""
    dest_type = None if dest is None else dest.dtype
    key = ("interpolate_free", domain.name, repr(kc.types.as_type(dest_type)))
    if key not in spec.kernels:
        spec.kernels[key] = _free_kernel(spec, domain, dest_type, itg.__name__)
    if dest is not None and dest.shape[0] < dim:
        raise ValueError(f"dest must have at least {dim} entries")
    target = dest if dest is not None else kc.empty(1, dtype=kc.float32, device=device)
    if dim:
        launch(itg, spec.kernels[key], dim, [*common, dim, target], device)


def _free_kernel(spec: Any, domain: Any, dest_type: Any, name: str) -> Any:
    scalar = domain.geometry.scalar_type
    Coords = coords_type(scalar)
    make_sample = sample_builder(scalar)
    call = spec.call
    store = dest_type is not None
    Dest = dest_type if store else kc.float32
    ElementArg, Fields, Values = domain.ElementArg, spec.Fields, spec.Values

    @kc.kernel
    def interpolate_free(elt_arg: ElementArg, fields: Fields, values: Values, count: int,
                         dest: kc.array(dtype=Dest)):
        i = kc.tid()
        s = make_sample(NULL_ELEMENT_INDEX, Coords(scalar(OUTSIDE)), i,
                        scalar(1.0) / scalar(count),
                        kc.vec2i(-1, -1), kc.vec2i(-1, -1))
        if kc.static(store):
            dest[i] = Dest(call(s, fields, values))
        else:
            call(s, fields, values)

    return _named(interpolate_free, f"{_ident(name)}_interpolate_free")


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)
