"""`fem.interpolate` with a trial field: the Jacobian of the integrand's value with respect
to the trial field's dofs, written into a `BsrMatrix` (Warp's `interpolate` into a sparse
`dest`). The integrand is assumed linear in the trial field: it is evaluated once per
(interpolation point, trial node of the point's element, trial dof), with the trial field
standing for that node's basis function along that dof.

- At the points of a quadrature (`at` a quadrature, or a domain: one point per element):
  block row `s.qp_index`, `dest.nrow == total_point_count()`; the block's row k is the
  value's k-th coefficient (scalars: one, vectors: their components, matrices: row-major),
  its column the trial dof. Points of one index (a particle's overlaps) add up.
- At the nodes of `dest_space` (`at` a `SpaceRestriction`, or a domain): block row the
  node, `dest.nrow == ` the node count of the restriction's partition; the block rows are
  the node's dofs (the value through the space's dof mapper or `node_dof_func`, times the
  node's dual weight), combined over the node's elements as Warp does: by measure
  ("weighted_average"), averaged ("mean"), the first element only ("first"), otherwise
  summed ("sum", and "max" / "min", which Warp sums as well).

Triplets go through `bsr_set_from_triplets` (zero blocks pruned unless `bsr_options`
says `prune_numerical_zeros=False`; `topology="padded"` as `integrate_bsr.py` says). With
"first", each node gets one stencil of triplets (one element's trial nodes).
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.errors import KernelError
from kernelc.fem.dof_mapper import is_identity
from kernelc.fem.domain import GeometryDomain
from kernelc.fem.integrate import _numbering, launch
from kernelc.fem.integrate_bsr import BsrPolicy, bsr_policy, set_from_triplets
from kernelc.fem.integrate_kernels import _named
from kernelc.fem.interpolate_nodes import NodeTable, node_table
from kernelc.fem.quadrature import Quadrature, RegularQuadrature
from kernelc.fem.restriction import SpaceRestriction
from kernelc.fem.types import OUTSIDE, ElementKind, coords_type, sample_builder
from kernelc.fem.valuetypes import dof_count
from kernelc.sparse import BsrMatrix

_WEIGHTED = ("weighted_average", "mean")
_FUNC_PREFIX = "jacobian_value_with_"


def interpolate_jacobian(itg: Any, roles: dict, trial_name: str, dest: BsrMatrix, at: Any,
                         dest_space: Any, dim: int | None, fields: dict, values: dict,
                         reduction: str, device: Any, bsr_options: dict | None) -> None:
    """Fills `dest` with the Jacobian of `itg` with respect to the dofs of the trial field
    `fields[trial_name]` (see the module's docstring for where it is evaluated)."""
    from kernelc.fem.field import make_space_restriction

    trial = fields[trial_name]
    policy = bsr_policy(bsr_options, "interpolate")
    if isinstance(at, SpaceRestriction):
        if dest_space is None:
            raise ValueError("`dest_space` must be provided when interpolating at nodes of a "
                             "space restriction")
        return _at_nodes(itg, roles, trial, dest, at, dest_space, fields, values, reduction,
                         device, policy)
    if isinstance(at, Quadrature):
        return _at_quadrature(itg, roles, trial, dest, at, fields, values, device, policy)
    domain = at if isinstance(at, GeometryDomain) else trial.domain
    if dest_space is not None:
        restriction = make_space_restriction(space_topology=dest_space.topology, domain=domain)
        return _at_nodes(itg, roles, trial, dest, restriction, dest_space, fields, values,
                         reduction, device, policy)
    if dim is not None:
        raise ValueError("Jacobians (trial fields) cannot be interpolated at `dim` free "
                         "samples: they lie in no element for the trial field to be "
                         "evaluated in")
    return _at_quadrature(itg, roles, trial, dest, RegularQuadrature(domain, order=0), fields,
                          values, device, policy)


def _check_dest(dest: BsrMatrix, nrow: int, trial: Any, rows: int | None) -> None:
    ncol = trial.space_partition.node_count()
    if dest.nrow != nrow or dest.ncol != ncol:
        raise RuntimeError(f"'dest' matrix must have {nrow} rows and {ncol} columns of blocks")
    if dest.block_shape[1] != trial.node_dof_count:
        raise RuntimeError(f"'dest' matrix blocks must have {trial.node_dof_count} columns")
    if rows is not None and dest.block_shape[0] != rows:
        raise RuntimeError(f"'dest' matrix blocks must have {rows} rows (the dofs of a node "
                           "of dest_space)")


def _trial_nodes(trial: Any, domain: GeometryDomain, elements: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(present, columns): per element (of the geometry) and trial local node, the trial
    node in the space (-1: the element has fewer nodes), and in the trial's partition (-1
    outside it: a triplet left out)."""
    topology = trial.space.topology
    if domain.element_kind == ElementKind.CELL:
        nodes = topology.host_element_nodes()[elements]
    else:
        nodes = topology.host_side_nodes(elements)
    nodes = np.asarray(nodes, dtype=np.int32)
    if nodes.ndim != 2:  # no elements: no table shape to read
        nodes = nodes.reshape(len(elements), -1) if len(elements) else nodes.reshape(0, 0)
    partition = _numbering(trial.space_partition)
    cols = nodes if partition is None else partition.host_partition_indices(nodes)
    return nodes, np.where(nodes >= 0, cols, -1).astype(np.int32)


def _quadrature_points(quadrature: Any, device: Any) -> tuple[np.ndarray, ...]:
    """(element, coordinates, index, weight) of each evaluation point, on the host."""
    domain = quadrature.domain
    if hasattr(quadrature, "pic_arrays"):  # points binned per element
        offsets, particles, coords, weights = (a.numpy() for a in quadrature.pic_arrays(device))
        elements = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        if quadrature.uses_domain_element_indices:
            elements = domain.element_indices()[elements]
        return elements, coords, particles, weights
    coords, weights = (a.numpy() for a in quadrature.arrays(device))
    elements = np.asarray(domain.element_indices())
    count = len(weights)
    table = quadrature.index_table(device)
    if table is None:
        qps = np.arange(len(elements) * count)
    else:
        qps = table.numpy()[elements].reshape(-1)
    return (np.repeat(elements, count), np.tile(coords, (len(elements), 1)), qps,
            np.tile(weights, len(elements)))


def _at_quadrature(itg: Any, roles: dict, trial: Any, dest: BsrMatrix, quadrature: Any,
                   fields: dict, values: dict, device: Any, policy: BsrPolicy) -> None:
    from kernelc.fem.interpolate import _prepare

    domain = quadrature.domain
    _check_dest(dest, quadrature.total_point_count(), trial, None)
    spec, common = _prepare(itg, roles, domain, fields, values, device)
    elements, coords, qps, weights = _quadrature_points(quadrature, device)
    elements = elements.astype(np.int32)
    present, cols = _trial_nodes(trial, domain, elements)
    per_point = present.shape[1]
    rows, trial_dofs = dest.block_shape
    scalar = dest.scalar_type
    key = ("jacobian_qp", domain.name, repr(scalar), rows)
    if key not in spec.kernels:
        spec.kernels[key] = _quadrature_kernel(spec, domain, scalar, rows, itg.__name__)
    points = len(elements)
    triplet_values = kc.zeros((points * per_point, rows, trial_dofs), dtype=scalar,
                              device=device, requires_grad=dest.requires_grad)
    geometry = domain.geometry
    if points and per_point:
        _launch(itg, spec.kernels[key], (points, per_point, trial_dofs), device, dest, [
            *common, kc.array(elements, dtype=kc.int32, device=device),
            kc.array(coords, dtype=geometry.coords_type, device=device),
            kc.array(qps.astype(np.int32), dtype=kc.int32, device=device),
            kc.array(weights, dtype=geometry.scalar_type, device=device), per_point,
            triplet_values])
    triplet_rows = np.repeat(qps.astype(np.int32), per_point)
    set_from_triplets(dest, kc.array(triplet_rows, dtype=kc.int32, device=device),
                      kc.array(cols.reshape(-1), dtype=kc.int32, device=device),
                      triplet_values, policy)


def _launch(itg: Any, kernel: Any, dim: tuple, device: Any, dest: BsrMatrix,
            inputs: list) -> None:
    """`launch`, saying plainly when the integrand's value does not fit dest's blocks."""
    try:
        launch(itg, kernel, dim, inputs, device)
    except KernelError as err:
        if _FUNC_PREFIX not in err.message:
            raise
        rows, cols = dest.block_shape
        raise KernelError(f"the value of integrand '{itg.__name__}' must have {rows} "
                          f"coefficient(s), one per row of the blocks of 'dest' ({rows}x{cols}): "
                          f"{err.message}", err.loc, err.kernel) from None


def coefficient_func(rows: int) -> Any:
    """(value, k) -> the k-th of the `rows` coefficients of a value (a scalar when `rows`
    is 1, a vector of `rows` components, or a matrix of `rows` coefficients, row-major);
    values of another size match no overload."""
    name = f"{_FUNC_PREFIX}{rows}_coefficients"

    @kc.func(name=name)
    def coefficient(x: kc.types.vector(rows, kc.Scalar), k: int):
        return x[k]

    for r in range(1, rows + 1):
        if rows % r == 0:
            Matrix = kc.types.matrix((r, rows // r), kc.Scalar)

            @kc.func(name=name)
            def coefficient(x: Matrix, k: int):  # noqa: F811
                cols = int(type(x[0]).length)
                return x[k // cols, k % cols]

    if rows == 1:
        @kc.func(name=name)
        def coefficient(x: kc.Scalar, k: int):  # noqa: F811
            return x

    return coefficient


def _quadrature_kernel(spec: Any, domain: GeometryDomain, scalar: Any, rows: int,
                       name: str) -> Any:
    Coords = coords_type(domain.geometry.scalar_type)
    geo_scalar = domain.geometry.scalar_type
    make_sample = sample_builder(geo_scalar)
    call = spec.call
    coefficient = coefficient_func(rows)
    ElementArg, Fields, Values = domain.ElementArg, spec.Fields, spec.Values

    @kc.kernel
    def interpolate_jacobian_quadrature(elt_arg: ElementArg, fields: Fields, values: Values,
                                        elements: kc.array(dtype=int),
                                        coords: kc.array(dtype=Coords),
                                        qps: kc.array(dtype=int),
                                        weights: kc.array(dtype=geo_scalar), per_point: int,
                                        triplet_values: kc.array3d(dtype=scalar)):
        p, j, dof = kc.tid()
        s = make_sample(elements[p], coords[p], qps[p], weights[p], kc.vec2i(-1, -1),
                        kc.vec2i(j, dof))
        val = call(s, fields, values)
        t = p * per_point + j
        for k in range(rows):
            triplet_values[t, k, dof] = scalar(coefficient(val, k))

    return _named(interpolate_jacobian_quadrature, f"{_ident(name)}_interpolate_jacobian_qp")


def _at_nodes(itg: Any, roles: dict, trial: Any, dest: BsrMatrix,
              restriction: SpaceRestriction, dest_space: Any, fields: dict, values: dict,
              reduction: str, device: Any, policy: BsrPolicy) -> None:
    from kernelc.fem.interpolate import _prepare

    if dest_space.topology is not restriction.space_topology:
        raise ValueError("Incompatible field and space restriction topologies")
    domain = restriction.domain
    partition = restriction.space_partition
    nrow = dest_space.node_count() if partition is None else partition.node_count()
    rows = dof_count(dest_space.dof_dtype)
    _check_dest(dest, nrow, trial, rows)
    spec, common = _prepare(itg, roles, domain, fields, values, device)
    host = restriction.host
    present, cols = _trial_nodes(trial, domain, host["entry_element"])
    per_entry = present.shape[1]
    entries = len(host["entry_element"])
    scalar = dest.scalar_type
    vector = hasattr(dest_space, "node_dof_func")
    key = ("jacobian_nodes", domain.name, dest_space.name, reduction, repr(scalar), vector)
    if key not in spec.kernels:
        spec.kernels[key] = _node_kernel(spec, domain, dest_space, scalar, reduction,
                                         itg.__name__)
    arrays = restriction.arrays(device)
    # "first": one element per node, so one stencil of triplets per node
    slots = restriction.node_count() if reduction == "first" else entries
    triplet_values = kc.zeros((slots * per_entry, rows, trial.node_dof_count), dtype=scalar,
                              device=device, requires_grad=dest.requires_grad)
    triplet_cols = kc.full(slots * per_entry, -1, dtype=kc.int32, device=device)
    table = node_table(dest_space, domain).value(device)
    signs = dest_space.element_signs(device) if vector else kc.empty(
        (0, 0), dtype=domain.geometry.scalar_type, device=device)
    if restriction.node_count() and per_entry:
        _launch(itg, spec.kernels[key], (restriction.node_count(), per_entry,
                                         trial.node_dof_count), device, dest, [
            *common, table, signs, arrays["nodes"], arrays["offsets"],
            arrays["entry_element"], arrays["entry_local"],
            kc.array(present.reshape(-1), dtype=kc.int32, device=device),
            kc.array(cols.reshape(-1), dtype=kc.int32, device=device), per_entry,
            triplet_values, triplet_cols])
    slot_nodes = host["nodes"] if reduction == "first" else host["entry_node"]
    triplet_rows = np.repeat(slot_nodes, per_entry).astype(np.int32)
    set_from_triplets(dest, kc.array(triplet_rows, dtype=kc.int32, device=device),
                      triplet_cols, triplet_values, policy)


def _dof_value_func(domain: GeometryDomain, space: Any, table: NodeTable) -> Any:
    """(signs, elt_arg, element, local node, node coords, node table, world value) ->
    the node's dofs for that value, seen from that element (Warp's dof value of a node:
    through the dof mapper or the vector basis' `node_dof_func`, times the dual weight)."""
    Value = space.dtype
    if hasattr(space, "node_dof_func"):
        node_dof = space.node_dof_func(domain)

        @kc.func
        def vector_dof_value(signs: Any, elt_arg: Any, element: int, local: int, coords: Any,
                             nodes: Any, val: Any):
            return node_dof(signs, elt_arg, element, local, coords, Value(val))

        return vector_dof_value
    mapper = space.dof_mapper
    identity = is_identity(mapper)
    to_dof = mapper.value_to_dof if not identity else None
    dual_weight = table.dual

    @kc.func
    def dof_value(signs: Any, elt_arg: Any, element: int, local: int, coords: Any,
                  nodes: Any, val: Any):
        dual = dual_weight(nodes, element, local, coords)
        if kc.static(identity):
            return Value(val) * dual
        else:
            return to_dof(Value(val)) * dual

    return dof_value


def _node_kernel(spec: Any, domain: GeometryDomain, space: Any, scalar: Any, reduction: str,
                 name: str) -> Any:
    geo_scalar = domain.geometry.scalar_type
    make_sample = sample_builder(geo_scalar)
    call = spec.call
    measure = domain.element_measure
    table = node_table(space, domain)
    node_coords, Table = table.coords, table.Table
    dof_value = _dof_value_func(domain, space, table)
    rows = dof_count(space.dof_dtype)
    coefficient = coefficient_func(rows)
    Signs = kc.array2d(dtype=geo_scalar)
    weighted = reduction in _WEIGHTED
    by_measure = reduction == "weighted_average"
    first = reduction == "first"
    ElementArg, Fields, Values = domain.ElementArg, spec.Fields, spec.Values

    @kc.func
    def node_weight_sum(elt_arg: Any, begin: int, end: int, entry_element: Any,
                        entry_local: Any, nodes_table: Any):
        total = geo_scalar(0.0)
        for e in range(begin, end):
            element = entry_element[e]
            coords = node_coords(elt_arg, element, entry_local[e], nodes_table)
            if coords[0] != geo_scalar(OUTSIDE):
                if kc.static(by_measure):
                    s = make_sample(element, coords, 0, geo_scalar(1.0), kc.vec2i(-1, -1),
                                    kc.vec2i(-1, -1))
                    total += measure(elt_arg, s)
                else:
                    total += geo_scalar(1.0)
        return total

    @kc.kernel
    def interpolate_jacobian_nodes(elt_arg: ElementArg, fields: Fields, values: Values,
                                   nodes_table: Table, signs: Signs,
                                   nodes: kc.array(dtype=int), offsets: kc.array(dtype=int),
                                   entry_element: kc.array(dtype=int),
                                   entry_local: kc.array(dtype=int),
                                   present: kc.array(dtype=int), cols: kc.array(dtype=int),
                                   per_entry: int, triplet_values: kc.array3d(dtype=scalar),
                                   triplet_cols: kc.array(dtype=int)):
        r, j, dof = kc.tid()
        node = nodes[r]
        weight_sum = geo_scalar(1.0)
        if kc.static(weighted):
            weight_sum = node_weight_sum(elt_arg, offsets[r], offsets[r + 1], entry_element,
                                         entry_local, nodes_table)
        for e in range(offsets[r], offsets[r + 1]):
            src = e * per_entry + j  # the entry's trial node j
            t = src  # its triplet
            if kc.static(first):
                t = r * per_entry + j
            element = entry_element[e]
            local = entry_local[e]
            coords = node_coords(elt_arg, element, local, nodes_table)
            if present[src] >= 0 and coords[0] != geo_scalar(OUTSIDE):
                s = make_sample(element, coords, node, geo_scalar(1.0), kc.vec2i(-1, -1),
                                kc.vec2i(j, dof))
                val = dof_value(signs, elt_arg, element, local, coords, nodes_table,
                                call(s, fields, values))
                factor = geo_scalar(1.0)
                if kc.static(by_measure):
                    factor = measure(elt_arg, s) / weight_sum
                elif kc.static(weighted):
                    factor = geo_scalar(1.0) / weight_sum
                for k in range(rows):
                    triplet_values[t, k, dof] = scalar(coefficient(val, k) * factor)
                if dof == 0:
                    triplet_cols[t] = cols[src]
                if kc.static(first):
                    break

    return _named(interpolate_jacobian_nodes,
                  f"{_ident(name)}_interpolate_jacobian_nodes_{reduction}")


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


__all__ = ["coefficient_func", "interpolate_jacobian"]
