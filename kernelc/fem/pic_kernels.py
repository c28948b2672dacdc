"""`fem.integrate` over a `PicQuadrature`: the assembly kernels of `integrate_kernels.py`,
with each element's points read from the quadrature's bins (a varying number of
particles per cell) instead of one rule shared by all elements.

An element's bin is its index in the domain or in the geometry, as the quadrature bins
its particles (`by_domain`). Sums are accumulated in `accumulate_dtype` and rounded once,
as for other quadratures; a point's sample carries its particle index (`s.qp_index`).
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.integrate import _kernel, _linear_output, _numbering, _Run, _scalar_view, launch
from kernelc.fem.integrate_kernels import _named
from kernelc.fem.types import coords_type, mat_type, sample_builder
from kernelc.fem.valuetypes import scalar_of
from kernelc.sparse import BsrMatrix, bsr_axpy, bsr_set_from_triplets, bsr_zeros


def _point_loop_funcs(domain: Any, accumulate: Any, call: Any) -> Any:
    """A func summing `w * measure * integrand` over the points of one element's bin."""
    scalar = domain.geometry.scalar_type
    Coords = coords_type(scalar)
    make_sample = sample_builder(scalar)
    measure = domain.element_measure

    @kc.func
    def element_sum(elt_arg: Any, fields: Any, values: Any, offsets: kc.array(dtype=int),
                    particles: kc.array(dtype=int), coords: kc.array(dtype=Coords),
                    weights: kc.array(dtype=scalar), element: int, cell_bin: int,
                    test_dof: kc.vec2i, trial_dof: kc.vec2i):
        total = accumulate(0.0)
        for k in range(offsets[cell_bin], offsets[cell_bin + 1]):
            w = weights[k]
            s = make_sample(element, coords[k], particles[k], w, test_dof, trial_dof)
            vol = measure(elt_arg, s)
            total += accumulate(w * vol) * accumulate(call(s, fields, values))
        return total

    return element_sum


def pic_constant_kernel(call: Any, domain: Any, spec: Any, accumulate: Any, name: str) -> Any:
    """Integral of a form without test field over each domain element's particles."""
    scalar = domain.geometry.scalar_type
    Coords = coords_type(scalar)
    element_sum = _point_loop_funcs(domain, accumulate, call)
    ElementArg, Fields, Values = domain.ElementArg, spec.Fields, spec.Values

    @kc.kernel(enable_backward=False)
    def integrate_pic_constant(elt_arg: ElementArg, fields: Fields, values: Values,
                               offsets: kc.array(dtype=int), particles: kc.array(dtype=int),
                               coords: kc.array(dtype=Coords), weights: kc.array(dtype=scalar),
                               by_domain: int, elements: kc.array(dtype=int),
                               result: kc.array(dtype=accumulate)):
        i = kc.tid()
        element = elements[i]
        cell_bin = kc.where(by_domain != 0, i, element)
        result[i] = element_sum(elt_arg, fields, values, offsets, particles, coords, weights,
                                element, cell_bin, kc.vec2i(-1, -1), kc.vec2i(-1, -1))

    return _named(integrate_pic_constant, f"{name}_integrate_pic_constant")


def pic_linear_kernel(call: Any, domain: Any, spec: Any, accumulate: Any, output: Any,
                      name: str) -> Any:
    """Linear form: one thread per (node, dof), over its entries' particles."""
    scalar = domain.geometry.scalar_type
    Coords = coords_type(scalar)
    element_sum = _point_loop_funcs(domain, accumulate, call)
    ElementArg, Fields, Values = domain.ElementArg, spec.Fields, spec.Values

    @kc.kernel(enable_backward=False)
    def integrate_pic_linear(elt_arg: ElementArg, fields: Fields, values: Values,
                             offsets: kc.array(dtype=int), particles: kc.array(dtype=int),
                             coords: kc.array(dtype=Coords), weights: kc.array(dtype=scalar),
                             by_domain: int, nodes: kc.array(dtype=int),
                             node_offsets: kc.array(dtype=int),
                             entry_element: kc.array(dtype=int),
                             entry_local: kc.array(dtype=int),
                             entry_domain_element: kc.array(dtype=int),
                             result: kc.array2d(dtype=output)):
        r, dof = kc.tid()
        total = accumulate(0.0)
        for e in range(node_offsets[r], node_offsets[r + 1]):
            element = entry_element[e]
            cell_bin = kc.where(by_domain != 0, entry_domain_element[e], element)
            total += element_sum(elt_arg, fields, values, offsets, particles, coords, weights,
                                 element, cell_bin, kc.vec2i(entry_local[e], dof), kc.vec2i(-1, -1))
        node = nodes[r]
        result[node, dof] = result[node, dof] + output(total)

    return _named(integrate_pic_linear, f"{name}_integrate_pic_linear")


def pic_bilinear_kernel(call: Any, domain: Any, spec: Any, accumulate: Any, output: Any,
                        trial_dofs: int, name: str) -> Any:
    """Bilinear form: one triplet value per (entry, trial node, block coefficient)."""
    scalar = domain.geometry.scalar_type
    Coords = coords_type(scalar)
    element_sum = _point_loop_funcs(domain, accumulate, call)
    ElementArg, Fields, Values = domain.ElementArg, spec.Fields, spec.Values

    @kc.kernel(enable_backward=False)
    def integrate_pic_bilinear(elt_arg: ElementArg, fields: Fields, values: Values,
                               offsets: kc.array(dtype=int), particles: kc.array(dtype=int),
                               coords: kc.array(dtype=Coords), weights: kc.array(dtype=scalar),
                               by_domain: int, entry_element: kc.array(dtype=int),
                               entry_local: kc.array(dtype=int),
                               entry_domain_element: kc.array(dtype=int),
                               triplet_values: kc.array3d(dtype=output)):
        e, j, b = kc.tid()
        element = entry_element[e]
        cell_bin = kc.where(by_domain != 0, entry_domain_element[e], element)
        total = element_sum(elt_arg, fields, values, offsets, particles, coords, weights,
                            element, cell_bin, kc.vec2i(entry_local[e], b // trial_dofs),
                            kc.vec2i(j, b % trial_dofs))
        triplet_values[e, j, b] = output(total)

    return _named(integrate_pic_bilinear, f"{name}_integrate_pic_bilinear")


class PicRun(_Run):
    """The launches of one `integrate` call over a `PicQuadrature`."""

    def pic_inputs(self) -> list:
        q = self.quadrature
        return [*q.pic_arrays(self.device), int(q.uses_domain_element_indices)]

    def constant(self, output: Any, add: bool) -> Any:
        kernel = _kernel(self.spec, self.key("pic_constant"), lambda: pic_constant_kernel(
            self.spec.call, self.domain, self.spec, self.accumulate, self.name))
        elements = kc.array(self.domain.element_indices(), dtype=kc.int32, device=self.device)
        accumulate = kc.types.as_type(self.accumulate)
        partial = kc.zeros(len(elements), dtype=accumulate, device=self.device)
        if len(elements):
            launch(self.integrand, kernel, dim=len(elements), device=self.device,
                   inputs=[*self.common, *self.pic_inputs(), elements, partial])
        total = np.sum(partial.numpy(), dtype=np.float64)
        if output is None:
            return accumulate.np_dtype.type(total)
        previous = output.numpy() if add else 0.0
        output.assign(np.full(output.shape, previous + total))
        return output

    def linear(self, test: Any, output: Any, add: bool, nodal: bool) -> Any:
        restriction = test.space_restriction
        arrays = restriction.arrays(self.device)
        node_count = test.space_partition.node_count()
        dofs = test.node_dof_count
        output = _linear_output(output, self.output_type, node_count, dofs, self.device)
        if not add:
            output.zero_()
        view = _scalar_view(output, self.output, (node_count, dofs)) if node_count else output
        kernel = _kernel(self.spec, self.key("pic_linear"), lambda: pic_linear_kernel(
            self.spec.call, self.domain, self.spec, self.accumulate, self.output, self.name))
        if restriction.node_count():
            launch(self.integrand, kernel, dim=(restriction.node_count(), dofs),
                   device=self.device, inputs=[
                       *self.common, *self.pic_inputs(), arrays["nodes"], arrays["offsets"],
                       arrays["entry_element"], arrays["entry_local"],
                       arrays["entry_domain_element"], view])
        return output

    def bilinear(self, test: Any, trial: Any, output: Any, add: bool, nodal: bool,
                 prune: bool) -> BsrMatrix:
        restriction = test.space_restriction
        arrays = restriction.arrays(self.device)
        nrow, ncol = test.space_partition.node_count(), trial.space_partition.node_count()
        if output is not None and (output.nrow != nrow or output.ncol != ncol):
            raise RuntimeError(f"Output matrix must have {nrow} rows and {ncol} columns of "
                               "blocks")
        rows_dofs, cols_dofs = test.node_dof_count, trial.node_dof_count
        block_type = self.output if rows_dofs == cols_dofs == 1 else mat_type(
            rows_dofs, cols_dofs, self.output)
        block = rows_dofs * cols_dofs
        kernel = _kernel(self.spec, self.key("pic_bilinear", cols_dofs),
                         lambda: pic_bilinear_kernel(self.spec.call, self.domain, self.spec,
                                                     self.accumulate, self.output, cols_dofs,
                                                     self.name))
        rows, cols = restriction.bilinear_triplets(trial.space.topology, self.device,
                                                   _numbering(trial.space_partition))
        entries = restriction.total_node_element_count()
        per_entry = len(cols) // max(1, entries)
        values = kc.empty(entries * per_entry, dtype=block_type, device=self.device)
        if entries and per_entry:
            launch(self.integrand, kernel, (entries, per_entry, block), device=self.device,
                   inputs=[*self.common, *self.pic_inputs(), arrays["entry_element"],
                           arrays["entry_local"], arrays["entry_domain_element"],
                           _scalar_view(values, scalar_of(self.output),
                                        (entries, per_entry, block))])
        result = output if output is not None and not add else bsr_zeros(
            nrow, ncol, block_type, device=self.device)
        bsr_set_from_triplets(result, rows, cols, values, prune_numerical_zeros=prune)
        if add:
            bsr_axpy(x=result, y=output)
            return output
        return result


__all__ = ["PicRun", "pic_bilinear_kernel", "pic_constant_kernel", "pic_linear_kernel"]
