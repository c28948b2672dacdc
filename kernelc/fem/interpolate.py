"""`fem.interpolate`: evaluates an integrand at the nodes of a space (to set a discrete
field) or at quadrature points (to fill an array, or for its side effects), as Warp's
`warp.fem.interpolate` does.

At nodes, a node shared by several cells gets the `reduction` of the values computed in
each of them ("weighted_average" by cell measure, "mean", "sum", "max", "min", "first"),
times the node's dual weight (1 / its basis function at the node).
"""

from typing import Any

import kernelc as kc
from kernelc.fem.dof_mapper import is_identity
from kernelc.fem.domain import GeometryDomain
from kernelc.fem.field import DiscreteField, FieldLike, make_space_restriction
from kernelc.fem.field_restriction import FieldRestriction
from kernelc.fem.integrand import Integrand, integrand, value_type_of
from kernelc.fem.integrate import _check_field_compat, _fill_structs, _parse_arguments, launch
from kernelc.fem.integrate_kernels import _named
from kernelc.fem.interpolate_nodes import NodeTable, node_table
from kernelc.fem.interpolate_points import ArrayDest, interpolate_at_points
from kernelc.fem.quadrature import Quadrature, RegularQuadrature
from kernelc.fem.restriction import SpaceRestriction
from kernelc.fem.types import OUTSIDE, Field, Sample, coords_type, sample_builder
from kernelc.sparse import BsrMatrix

_REDUCTIONS = ("weighted_average", "mean", "sum", "max", "min", "first")


@integrand
def _identity_field(s: Sample, field: Field):
    return field(s)


def interpolate(integrand: Any, dest: Any = None, at: Any = None, dest_space: Any = None,
                dim: int | None = None, fields: dict[str, Any] | None = None,
                values: dict[str, Any] | None = None, reduction: str = "weighted_average",
                device: Any = None, kernel_options: dict[str, Any] | None = None,
                temporary_store: Any = None, bsr_options: dict[str, Any] | None = None) -> None:
    """Interpolates an integrand (or a field) at nodes or quadrature points.

    Args:
        integrand: A `@fem.integrand` function, or a field (interpolated as is).
        dest: A `DiscreteField`, a field restriction (`make_restriction`: only the nodes of
            its domain's elements, from those elements), an array (a value per point of
            `at`, at `s.qp_index`) or None (side effects).
        at: A `Quadrature` (interpolate at its points), a `SpaceRestriction` or a domain
            (the nodes of `dest` there; with no `dest` field, a domain means one point per
            element), or None (all the nodes of `dest`).
        dest_space: With an array (or None) `dest`: the space at whose nodes to interpolate
            (on `at`, a domain or a `SpaceRestriction`), `dest` holding one value per node.
        dim: With an array (or None) `dest` and a domain `at`: the number of samples tied
            to no element (`s.qp_index` from 0 to dim - 1) to run the integrand at.
        fields: Field arguments (discrete fields; no test or trial field).
        values: Other arguments by parameter name.
        reduction: How values from several cells combine at a shared node.
        device: Device to run on.
        kernel_options: Accepted for Warp's sake.
        temporary_store: Accepted for Warp's sake.
        bsr_options: Accepted for Warp's sake.
    """
    if isinstance(integrand, FieldLike):
        fields, values, integrand = {"field": integrand}, {}, _identity_field
    fields = dict(fields or {})
    values = dict(values or {})
    if not isinstance(integrand, Integrand):
        raise ValueError("integrand must be tagged with @integrand decorator")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"Unsupported reduction method '{reduction}'")
    roles, test_name, trial_name, _ = _parse_arguments(integrand, fields, values)
    if test_name:
        raise ValueError(f"Test field '{test_name}' maybe not be used for interpolation")
    if trial_name and not isinstance(dest, BsrMatrix):
        raise ValueError(f"Interpolation using trial field '{trial_name}' requires 'dest' to be "
                         "a `kernelc.sparse.BsrMatrix`")
    if isinstance(dest, BsrMatrix) and not trial_name:
        raise ValueError("Interpolation into a sparse matrix 'dest' computes a Jacobian: one of "
                         "the fields must be a trial field (`fem.make_trial`)")
    device = kc.get_device(device)
    if trial_name:
        from kernelc.fem.interpolate_jacobian import interpolate_jacobian

        return interpolate_jacobian(integrand, roles, trial_name, dest, at, dest_space, dim,
                                    fields, values, reduction, device, bsr_options)
    if isinstance(dest, FieldRestriction):
        restriction, dest = dest.space_restriction, dest.field
    elif isinstance(at, SpaceRestriction):
        restriction = at
    elif isinstance(at, Quadrature):
        return _at_quadrature(integrand, roles, at, dest, fields, values, device)
    elif isinstance(dest, DiscreteField):  # its nodes on `at` (default: its partition's cells)
        domain = at if isinstance(at, GeometryDomain) else None
        restriction = make_space_restriction(space_partition=dest.space_partition, domain=domain)
    elif dest_space is not None:  # the nodes of `dest_space` on `at` (default: all cells)
        domain = at if isinstance(at, GeometryDomain) else None
        restriction = make_space_restriction(space_topology=dest_space.topology, domain=domain)
    elif isinstance(at, GeometryDomain) and dim is not None:  # `dim` free samples
        from kernelc.fem.interpolate_vector import free_samples

        spec, common = _prepare(integrand, roles, at, fields, values, device)
        return free_samples(integrand, spec, common, at, dest, dim, device)
    elif isinstance(at, GeometryDomain):
        return _at_quadrature(integrand, roles, RegularQuadrature(at, order=0), dest, fields,
                              values, device)
    else:
        raise ValueError(f"Unable to determine interpolation domain from provided arguments "
                         f"`dest` '{dest}', `at` '{at}'")
    if dest_space is not None and not isinstance(dest, DiscreteField):
        dest = ArrayDest(dest_space, dest, device)  # an array of node values
    if not isinstance(dest, (DiscreteField, ArrayDest)):
        raise ValueError("`dest_space` must be provided when interpolating into an array at "
                         "nodes")
    if dest.space.topology is not restriction.space_topology:
        raise ValueError("Incompatible field and space restriction topologies")
    return _at_nodes(integrand, roles, dest, restriction, fields, values, reduction, device)


def _prepare(itg: Integrand, roles: dict, domain: GeometryDomain, fields: dict, values: dict,
             device: Any) -> tuple[Any, tuple]:
    _check_field_compat(fields, domain)
    annotations = itg.annotations
    value_types = {n: value_type_of(n, annotations.get(n), values[n]) for n in values}
    spec = itg.specialize(fields, domain, value_types)
    field_struct, value_struct = _fill_structs(spec, itg, roles, fields, values, domain,
                                               value_types, device)
    return spec, (domain.element_arg_value(device), field_struct, value_struct)


def _at_quadrature(itg: Integrand, roles: dict, quadrature: Quadrature, dest: Any,
                   fields: dict, values: dict, device: Any) -> None:
    if hasattr(quadrature, "pic_arrays"):  # points binned per element (PicQuadrature, ...)
        return interpolate_at_points(itg, roles, quadrature, dest, fields, values, device)
    domain = quadrature.domain
    spec, common = _prepare(itg, roles, domain, fields, values, device)
    dest_type = None if dest is None else dest.dtype
    table = quadrature.index_table(device)
    indexed = table is not None
    key = ("interpolate_qp", domain.name, repr(kc.types.as_type(dest_type)), indexed)
    if key not in spec.kernels:
        spec.kernels[key] = _quadrature_kernel(spec, domain, dest_type, indexed, itg.__name__)
    count = quadrature.total_point_count()
    if dest is not None and dest.shape[0] < count:
        raise ValueError(f"dest must have at least {count} entries (one per quadrature point)")
    elements = kc.array(domain.element_indices(), dtype=kc.int32, device=device)
    target = dest if dest is not None else kc.empty(1, dtype=kc.float32, device=device)
    if table is None:
        table = kc.empty((0, 0), dtype=kc.int32, device=device)
    if count and len(elements):
        launch(itg, spec.kernels[key], (len(elements), quadrature.points_per_element()),
               [*common, *quadrature.arrays(device), table, elements, target], device)


def _quadrature_kernel(spec: Any, domain: GeometryDomain, dest_type: Any, indexed: bool,
                       name: str) -> Any:
    scalar = domain.geometry.scalar_type
    Coords = coords_type(scalar)
    make_sample = sample_builder(scalar)
    call = spec.call
    store = dest_type is not None
    Dest = dest_type if store else kc.float32
    ElementArg, Fields, Values = domain.ElementArg, spec.Fields, spec.Values

    @kc.kernel
    def interpolate_quadrature(elt_arg: ElementArg, fields: Fields, values: Values,
                               qp_coords: kc.array(dtype=Coords),
                               qp_weights: kc.array(dtype=scalar),
                               qp_table: kc.array2d(dtype=int),
                               elements: kc.array(dtype=int), dest: kc.array(dtype=Dest)):
        i, k = kc.tid()
        element = elements[i]
        qp = i * qp_coords.shape[0] + k
        if kc.static(indexed):
            qp = qp_table[element, k]
        s = make_sample(element, qp_coords[k], qp, qp_weights[k], kc.vec2i(-1, -1),
                        kc.vec2i(-1, -1))
        if kc.static(store):
            dest[qp] = Dest(call(s, fields, values))
        else:
            call(s, fields, values)

    return _named(interpolate_quadrature, f"{_ident(name)}_interpolate_quadrature")


def _at_nodes(itg: Integrand, roles: dict, dest: DiscreteField, restriction: SpaceRestriction,
              fields: dict, values: dict, reduction: str, device: Any) -> None:
    space = dest.space
    domain = restriction.domain
    spec, common = _prepare(itg, roles, domain, fields, values, device)
    if hasattr(space, "node_dof_func"):  # vector-valued bases: dofs of their own
        from kernelc.fem.interpolate_vector import vector_at_nodes

        return vector_at_nodes(itg, spec, common, dest, restriction, reduction, device)
    mapper = space.dof_mapper
    to_dof = None if is_identity(mapper) else mapper.value_to_dof
    key = ("interpolate_nodes", domain.name, space.shape.name, reduction,
           repr(kc.types.as_type(dest.dtype)), None if to_dof is None else mapper.key)
    table = node_table(space, domain)
    if key not in spec.kernels:
        spec.kernels[key] = _node_kernel(spec, domain, table, dest.dtype, reduction,
                                         itg.__name__, to_dof, space.dof_dtype)
    arrays = restriction.arrays(device)
    if restriction.node_count():
        launch(itg, spec.kernels[key], restriction.node_count(),
               [*common, table.value(device), arrays["nodes"], arrays["offsets"],
                arrays["entry_element"], arrays["entry_local"], dest.dof_values], device)


def node_reduction_step(reduction: str, scalar: Any) -> tuple[Any, bool]:
    """(func, first_only): `step(total, weight_sum, value, measure)` folds one cell's value
    at a shared node into the running (total, weight sum) by `reduction`; the node's value
    is then total / weight sum. `first_only`: the first cell's value is kept (the loop over
    cells stops there)."""

    @kc.func
    def step(total: Any, weight_sum: Any, val: Any, measure: Any):
        if kc.static(reduction == "weighted_average"):
            return total + measure * val, weight_sum + measure
        elif kc.static(reduction == "mean"):
            return total + val, weight_sum + scalar(1.0)
        elif kc.static(reduction == "sum"):
            return total + val, scalar(1.0)
        elif kc.static(reduction == "max"):
            return kc.where(weight_sum > scalar(0.0), kc.max(total, val), val), scalar(1.0)
        elif kc.static(reduction == "min"):
            return kc.where(weight_sum > scalar(0.0), kc.min(total, val), val), scalar(1.0)
        else:
            return val, scalar(1.0)

    return step, reduction not in ("weighted_average", "mean", "sum", "max", "min")


def _node_kernel(spec: Any, domain: GeometryDomain, table: NodeTable, dest_type: Any,
                 reduction: str, name: str, to_dof: Any = None, dof_type: Any = None) -> Any:
    scalar = domain.geometry.scalar_type
    make_sample = sample_builder(scalar)
    call = spec.call
    measure = domain.element_measure
    node_coords, dual_weight, Table = table.coords, table.dual, table.Table
    Dest = dest_type
    Dofs = dest_type if to_dof is None else dof_type  # what the field stores per node
    ElementArg, Fields, Values = domain.ElementArg, spec.Fields, spec.Values
    step, first_only = node_reduction_step(reduction, scalar)

    @kc.kernel
    def interpolate_nodes(elt_arg: ElementArg, fields: Fields, values: Values,
                          node_table: Table, nodes: kc.array(dtype=int),
                          offsets: kc.array(dtype=int), entry_element: kc.array(dtype=int),
                          entry_local: kc.array(dtype=int), dest: kc.array(dtype=Dofs)):
        r = kc.tid()
        node = nodes[r]
        total = Dest(0.0)
        weight_sum = scalar(0.0)
        first_local = -1
        first_element = -1
        for e in range(offsets[r], offsets[r + 1]):
            element = entry_element[e]
            local = entry_local[e]
            coords = node_coords(elt_arg, element, local, node_table)
            if coords[0] != scalar(OUTSIDE):
                if first_local < 0:
                    first_local = local
                    first_element = element
                s = make_sample(element, coords, node, scalar(1.0), kc.vec2i(-1, -1),
                                kc.vec2i(-1, -1))
                val = Dest(call(s, fields, values))
                total, weight_sum = step(total, weight_sum, val, measure(elt_arg, s))
                if kc.static(first_only):
                    break
        if weight_sum > scalar(0.0):
            first_coords = node_coords(elt_arg, first_element, first_local, node_table)
            dual = dual_weight(node_table, first_element, first_local, first_coords)
            if kc.static(to_dof is None):
                dest[node] = total / weight_sum * dual
            else:  # the dofs of the value, through the space's dof mapper
                dest[node] = to_dof(total / weight_sum) * dual

    return _named(interpolate_nodes, f"{_ident(name)}_interpolate_nodes_{reduction}")


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)
