"""The assembly kernels of `fem.integrate`, generated per compiled integrand.

Each factory returns a kernel that calls the integrand's generated `call(s, fields,
values)`. Sums over quadrature points are accumulated in `accumulate_dtype` (float64 by
default) and rounded once to the output type, as Warp does:

- constant forms: one thread per domain element, partial sums added on the host (or, into
  an output array, atomically on the device, which the tape can differentiate);
- linear forms: one thread per node reached from the domain, looping over its (element,
  local node) entries and their quadrature points (deterministic: no atomics);
- bilinear forms: one thread per (entry, trial node of the entry's element), one triplet
  each, summed by `bsr_set_from_triplets`;
- nodal assembly: the quadrature points are the test nodes themselves, with the basis'
  nodal weights; one thread per node.
"""

from typing import Any

import kernelc as kc
from kernelc.fem.types import OUTSIDE, ElementKind, coords_type, sample_builder

_NULL_DOF = (-1, -1)


def _named(kernel: Any, name: str) -> Any:
    """Gives a generated kernel a readable, integrand-specific name (for profiles)."""
    kernel.__name__ = name
    kernel.key = f"kernelc.fem.{name}"
    return kernel


def constant_kernel(call: Any, domain: Any, spec: Any, accumulate: Any, name: str,
                    indexed: bool = False, atomic: bool = False) -> Any:
    """Integral of a form without test field over each domain element (`result[i]` for
    domain element i), or with `atomic`, summed into `result[0]` (differentiable).
    `indexed`: the points' indices come from `qp_table[element, k]` (nodal quadrature),
    else they are `domain element * points per element + k`."""
    scalar = domain.geometry.scalar_type
    Coords = coords_type(scalar)
    make_sample = sample_builder(scalar)
    measure = domain.element_measure
    ElementArg, Fields, Values = domain.ElementArg, spec.Fields, spec.Values

    @kc.kernel
    def integrate_constant(elt_arg: ElementArg, fields: Fields, values: Values,
                           qp_coords: kc.array(dtype=Coords), qp_weights: kc.array(dtype=scalar),
                           qp_table: kc.array2d(dtype=int), elements: kc.array(dtype=int),
                           result: kc.array(dtype=accumulate)):
        i = kc.tid()
        element = elements[i]
        count = qp_coords.shape[0]
        total = accumulate(0.0)
        for k in range(count):
            w = qp_weights[k]
            qp = i * count + k
            if kc.static(indexed):
                qp = qp_table[element, k]
            s = make_sample(element, qp_coords[k], qp, w, kc.vec2i(-1, -1), kc.vec2i(-1, -1))
            vol = measure(elt_arg, s)
            total += accumulate(w * vol) * accumulate(call(s, fields, values))
        if kc.static(atomic):
            kc.atomic_add(result, 0, total)
        else:
            result[i] = total

    return _named(integrate_constant, f"{name}_integrate_constant")


def cast_kernel(source: Any, dest: Any, add: bool) -> Any:
    """`dest[0] = dest(source[0])` (or `+=` with `add`), differentiable: the last step of a
    constant form written to an array of another type than the accumulation's."""
    return _CASTS.get((repr(source), repr(dest), add)) or _make_cast(source, dest, add)


_CASTS: dict[tuple, Any] = {}


def _make_cast(source: Any, dest: Any, add: bool) -> Any:
    @kc.kernel
    def constant_cast(src: kc.array(dtype=source), dst: kc.array(dtype=dest)):
        if kc.static(add):
            dst[0] = dst[0] + dest(src[0])
        else:
            dst[0] = dest(src[0])

    _CASTS[(repr(source), repr(dest), add)] = constant_cast
    return _named(constant_cast, f"integrate_constant_cast_{'add' if add else 'set'}")


def linear_kernel(call: Any, domain: Any, spec: Any, accumulate: Any, output: Any,
                  name: str, indexed: bool = False) -> Any:
    """Linear form: result[node, dof] += integral of the form with the test function of
    that node and dof; one thread per (node, dof). Point indices as `constant_kernel`'s."""
    scalar = domain.geometry.scalar_type
    Coords = coords_type(scalar)
    make_sample = sample_builder(scalar)
    measure = domain.element_measure
    ElementArg, Fields, Values = domain.ElementArg, spec.Fields, spec.Values

    @kc.kernel
    def integrate_linear(elt_arg: ElementArg, fields: Fields, values: Values,
                         qp_coords: kc.array(dtype=Coords), qp_weights: kc.array(dtype=scalar),
                         qp_table: kc.array2d(dtype=int),
                         nodes: kc.array(dtype=int), offsets: kc.array(dtype=int),
                         entry_element: kc.array(dtype=int), entry_local: kc.array(dtype=int),
                         entry_domain_element: kc.array(dtype=int),
                         result: kc.array2d(dtype=output)):
        r, dof = kc.tid()
        count = qp_coords.shape[0]
        total = accumulate(0.0)
        for e in range(offsets[r], offsets[r + 1]):
            element = entry_element[e]
            test_dof = kc.vec2i(entry_local[e], dof)
            for k in range(count):
                w = qp_weights[k]
                qp = entry_domain_element[e] * count + k
                if kc.static(indexed):
                    qp = qp_table[element, k]
                s = make_sample(element, qp_coords[k], qp, w, test_dof, kc.vec2i(-1, -1))
                vol = measure(elt_arg, s)
                total += accumulate(w * vol) * accumulate(call(s, fields, values))
        node = nodes[r]
        result[node, dof] = result[node, dof] + output(total)

    return _named(integrate_linear, f"{name}_integrate_linear")


def bilinear_kernel(call: Any, domain: Any, spec: Any, accumulate: Any, output: Any,
                    trial_dofs: int, name: str, indexed: bool = False) -> Any:
    """Bilinear form: one triplet value per (entry, trial node of the entry's element,
    test dof * trial_dofs + trial dof), the block's coefficients in row-major order. Point
    indices as `constant_kernel`'s."""
    scalar = domain.geometry.scalar_type
    Coords = coords_type(scalar)
    make_sample = sample_builder(scalar)
    measure = domain.element_measure
    ElementArg, Fields, Values = domain.ElementArg, spec.Fields, spec.Values

    @kc.kernel(enable_backward=False)
    def integrate_bilinear(elt_arg: ElementArg, fields: Fields, values: Values,
                           qp_coords: kc.array(dtype=Coords), qp_weights: kc.array(dtype=scalar),
                           qp_table: kc.array2d(dtype=int),
                           entry_element: kc.array(dtype=int), entry_local: kc.array(dtype=int),
                           entry_domain_element: kc.array(dtype=int),
                           triplet_values: kc.array3d(dtype=output)):
        e, j, b = kc.tid()
        element = entry_element[e]
        test_dof = kc.vec2i(entry_local[e], b // trial_dofs)
        trial_dof = kc.vec2i(j, b % trial_dofs)
        count = qp_coords.shape[0]
        total = accumulate(0.0)
        for k in range(count):
            w = qp_weights[k]
            qp = entry_domain_element[e] * count + k
            if kc.static(indexed):
                qp = qp_table[element, k]
            s = make_sample(element, qp_coords[k], qp, w, test_dof, trial_dof)
            vol = measure(elt_arg, s)
            total += accumulate(w * vol) * accumulate(call(s, fields, values))
        triplet_values[e, j, b] = output(total)

    return _named(integrate_bilinear, f"{name}_integrate_bilinear")


def _node_weight_func(nodes_per_cell: int, per_element: bool) -> Any:
    """(weights table, element, local node) -> the node's nodal quadrature weight."""
    if per_element:
        @kc.func
        def element_node_weight(table: Any, element: int, local: int):
            return table[element, local]

        return element_node_weight

    @kc.func
    def shape_node_weight(table: Any, element: int, local: int):
        return table[local % nodes_per_cell]

    return shape_node_weight


def node_coords_func(domain: Any, nodes_per_cell: int, per_element: bool = False) -> Any:
    """(elt_arg, element, local node, cell node coords) -> the node's coordinates in the
    element, OUTSIDE if the node is not on it (side domains see cell nodes off the side).
    `per_element`: the coordinates are a (cells, nodes per cell) table, on cells."""
    scalar = domain.geometry.scalar_type
    Coords = coords_type(scalar)
    if per_element:
        @kc.func
        def element_node_coords(elt_arg: Any, element: int, local: int,
                                table: kc.array2d(dtype=Coords)):
            return table[element, local]

        return element_node_coords
    if domain.element_kind == ElementKind.CELL:
        @kc.func
        def cell_node_coords(elt_arg: Any, element: int, local: int,
                             table: kc.array(dtype=Coords)):
            return table[local]

        return cell_node_coords
    geo = domain.geometry
    inner, outer = geo.side_inner_cell_index, geo.side_outer_cell_index
    from_cell = geo.side_from_cell_coords

    @kc.func
    def side_node_coords(elt_arg: Any, element: int, local: int,
                         table: kc.array(dtype=Coords)):
        if local < nodes_per_cell:
            cell = inner(elt_arg, element)
            return from_cell(elt_arg, element, cell, table[local])
        cell = outer(elt_arg, element)
        return from_cell(elt_arg, element, cell, table[local - nodes_per_cell])

    return side_node_coords


def nodal_kernel(call: Any, domain: Any, spec: Any, accumulate: Any, output: Any,
                 nodes_per_cell: int, bilinear: bool, dofs: int, name: str,
                 per_element: bool = False) -> Any:
    """Nodal assembly: the form evaluated at each test node, weighted by the basis' nodal
    quadrature weight; one thread per (node, dof) of a vector (linear), or per (node,
    block coefficient) of the diagonal blocks (bilinear: `dofs` trial dofs per node, the
    trial dof on the test dof's node). `per_element`: node coordinates and weights are
    (cells, nodes per cell) tables (point bases), not one row for all cells."""
    scalar = domain.geometry.scalar_type
    Coords = coords_type(scalar)
    make_sample = sample_builder(scalar)
    measure = domain.element_measure
    node_coords = node_coords_func(domain, nodes_per_cell, per_element)
    node_weight = _node_weight_func(nodes_per_cell, per_element)
    CoordsTable = kc.array2d(dtype=Coords) if per_element else kc.array(dtype=Coords)
    WeightTable = kc.array2d(dtype=scalar) if per_element else kc.array(dtype=scalar)
    ElementArg, Fields, Values = domain.ElementArg, spec.Fields, spec.Values

    @kc.kernel
    def integrate_nodal(elt_arg: ElementArg, fields: Fields, values: Values,
                        cell_node_coords: CoordsTable, node_weights: WeightTable,
                        nodes: kc.array(dtype=int), offsets: kc.array(dtype=int),
                        entry_element: kc.array(dtype=int), entry_local: kc.array(dtype=int),
                        result: kc.array2d(dtype=output)):
        r, b = kc.tid()
        node = nodes[r]
        total = accumulate(0.0)
        for e in range(offsets[r], offsets[r + 1]):
            element = entry_element[e]
            local = entry_local[e]
            coords = node_coords(elt_arg, element, local, cell_node_coords)
            if coords[0] != scalar(OUTSIDE):
                w = node_weight(node_weights, element, local)
                if kc.static(bilinear):
                    dof = kc.vec2i(local, b // dofs)
                    trial = kc.vec2i(local, b % dofs)
                else:
                    dof = kc.vec2i(local, b)
                    trial = kc.vec2i(-1, -1)
                s = make_sample(element, coords, node, w, dof, trial)
                vol = measure(elt_arg, s)
                total += accumulate(w * vol) * accumulate(call(s, fields, values))
        if kc.static(bilinear):
            result[r, b] = output(total)
        else:
            result[node, b] = result[node, b] + output(total)

    kind = "bilinear" if bilinear else "linear"
    return _named(integrate_nodal, f"{name}_integrate_{kind}_nodal")
