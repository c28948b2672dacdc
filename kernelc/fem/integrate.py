"""`fem.integrate`: integrals of constant, linear and bilinear forms (Warp's
`warp.fem.integrate`).

The integrand is compiled for the concrete fields (`integrand.py`), an assembly kernel is
made for it (`integrate_kernels.py`), both once per combination of field, domain and value
kinds; each call then fills the argument structs and launches. Linear forms give an array
indexed by node, bilinear forms a `BsrMatrix` built from (node, node) triplets with
`kernelc.sparse.bsr_set_from_triplets` (zero blocks pruned, as Warp does by default).
"""

import inspect
from pathlib import Path
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem import integrate_kernels as K
from kernelc.fem.cache import borrow_temporary
from kernelc.fem.domain import GeometryDomain
from kernelc.fem.domain_index import domain_arg_value
from kernelc.fem.field import FieldLike, TestField, TrialField
from kernelc.fem.integrand import Integrand, Specialization, value_error, value_type_of
from kernelc.fem.integrate_bsr import BsrPolicy, bsr_policy, set_from_triplets
from kernelc.fem.quadrature import Quadrature, RegularQuadrature
from kernelc.fem.space import SpacePartition
from kernelc.fem.types import mat_type
from kernelc.fem.valuetypes import dof_count, scalar_of, value_kind
from kernelc.sparse import BsrMatrix, bsr_axpy, bsr_zeros
from kernelc.sparse.matrix import scalar_view


def _parse_arguments(integrand: Integrand, fields: dict[str, Any], values: dict[str, Any]
                     ) -> tuple[dict[str, str], str | None, str | None, str | None]:
    """Checks fields and values against the integrand's parameters (dropping from `fields`
    those that name no parameter); returns the roles and the names of the test, trial and
    domain parameters."""
    roles = integrand.parameter_roles()
    for name in [n for n in fields if n not in roles]:
        del fields[name]  # fields the integrand does not take are left out, as Warp does
    for name, field in fields.items():
        if roles.get(name) != "field":
            raise ValueError(f"Passed field argument '{name}' does not match any Field argument "
                             f"of integrand '{integrand.__name__}'")
        if not isinstance(field, FieldLike):
            raise ValueError(f"Field argument '{name}' must be a field, got {type(field)}")
    for name in values:
        if roles.get(name) != "value":
            raise ValueError(f"Passed value argument '{name}' does not match any value argument "
                             f"of integrand '{integrand.__name__}'")
    missing = [n for n, r in roles.items() if r == "field" and n not in fields]
    missing += [n for n, r in roles.items() if r == "value" and n not in values]
    if missing:
        raise ValueError(f"Missing arguments to integrand '{integrand.__name__}': "
                         f"{', '.join(missing)}")
    test = [n for n, f in fields.items() if isinstance(f, TestField)]
    trial = [n for n, f in fields.items() if isinstance(f, TrialField)]
    if len(test) > 1 or len(trial) > 1:
        raise ValueError("An integrand takes at most one test and one trial field")
    domain_names = [n for n, r in roles.items() if r == "domain"]
    return (roles, test[0] if test else None, trial[0] if trial else None,
            domain_names[0] if domain_names else None)


def _check_field_compat(fields: dict[str, Any], domain: GeometryDomain) -> None:
    for name, field in fields.items():
        geometry = getattr(field, "geometry", None)
        if geometry is not None and geometry is not domain.geometry:
            raise ValueError(f"Field '{name}' must be defined on the same geometry as the "
                             "integration domain")
        if field.element_kind != domain.element_kind:
            raise ValueError(f"Field '{name}' is not defined on the same kind of elements (cells "
                             "or sides) as the integration domain. Maybe a forgotten `.trace()`?")


def _fill_structs(spec: Specialization, integrand: Integrand, roles: dict[str, str],
                  fields: dict[str, Any], values: dict[str, Any], domain: GeometryDomain,
                  value_types: dict[str, Any], device: Any) -> tuple[Any, Any]:
    field_struct = spec.Fields()
    for name in integrand.argspec.args:
        if roles[name] == "field":
            arg = fields[name].evaluator(domain).Arg()
            fields[name].fill_arg(arg, domain, device)
            setattr(field_struct, name, arg)
        elif roles[name] == "domain":
            setattr(field_struct, name, domain_arg_value(domain, device))
    value_struct = spec.Values()
    for name, value in values.items():
        t = kc.types.as_type(value_types[name])
        if isinstance(t, kc.types.ScalarType) and not isinstance(value, kc.array):
            value = value_types[name](value)
        setattr(value_struct, name, value)
    return field_struct, value_struct


def launch(integrand: Integrand, kernel: Any, dim: Any, inputs: list, device: Any) -> None:
    """`kc.launch`, reporting compile errors as errors of the integrand (not of the
    generated kernel that calls it): at their place when they are in the integrand's file,
    at the integrand's value when the kernel templates cannot use it. An error elsewhere in
    kernelc's fem code keeps its place there, naming the integrand being compiled."""
    try:
        kc.launch(kernel, dim=dim, inputs=inputs, device=device)
    except kc.KernelError as err:
        if err.loc is not None and err.loc.file == inspect.getsourcefile(integrand.func):
            raise kc.KernelError(err.message, err.loc, integrand.__name__) from None
        if err.loc is not None and Path(err.loc.file).name in KERNEL_TEMPLATES:
            raise value_error(integrand, err) from None
        if err.loc is not None and Path(err.loc.file).parent.is_relative_to(_FEM_DIR):
            raise type(err)(f"{err.message} (in kernelc.fem, compiling integrand "
                            f"'{integrand.__name__}')", err.loc, err.kernel) from None
        raise


# The files whose kernels call integrands: an error there is about the integrand's value.
KERNEL_TEMPLATES = frozenset({"integrate_kernels.py", "interpolate.py", "pic_kernels.py",
                              "interpolate_points.py", "interpolate_jacobian.py"})
_FEM_DIR = Path(__file__).parent


def _kernel(spec: Specialization, key: tuple, make: Any) -> Any:
    kernels = spec.kernels
    if key not in kernels:
        kernels[key] = make()
    return kernels[key]


def integrate(integrand: Integrand, domain: GeometryDomain | None = None,
              quadrature: Quadrature | None = None, fields: dict[str, Any] | None = None,
              values: dict[str, Any] | None = None, accumulate_dtype: Any = kc.float64,
              output_dtype: Any = None, output: Any = None, device: Any = None,
              temporary_store: Any = None, kernel_options: dict[str, Any] | None = None,
              assembly: str | None = None, add: bool = False,
              bsr_options: dict[str, Any] | None = None) -> Any:
    """Integrates a constant, linear or bilinear form over a domain (Warp's
    `warp.fem.integrate`).

    Args:
        integrand: A `@fem.integrand` function.
        domain: Integration domain (default: the test field's, or the quadrature's).
        quadrature: Quadrature formula (default: regular, order = sum of field degrees).
        fields: Field arguments by parameter name; at most one test and one trial field.
        values: Other arguments by parameter name.
        accumulate_dtype: Scalar type of the sums over quadrature points.
        output_dtype: Scalar type of the result (default: the geometry's), or for a
            linear form a vector type with one component per dof of the test field.
        output: Array or matrix to write (or add) the result into.
        device: Device to run on.
        temporary_store: Where the temporary of a constant form written to `output` comes
            from (see `TemporaryStore`).
        kernel_options: Accepted for Warp's sake.
        assembly: "generic" (default), "nodal" (test nodes as points) or "dispatch" (= generic).
        add: Add the result to `output` instead of replacing it.
        bsr_options: `prune_numerical_zeros` (default True, False for mapped
            constructions) and `topology` ("compact" or "padded") are used; the
            `construction` and `capacity` policies are checked (see `integrate_bsr.py`).

    Returns:
        A float (no test field), an array with one value per node (a test field; (nodes,
        dofs) scalars for a vector test field and a scalar `output_dtype`), or a
        `BsrMatrix` (test and trial fields) of (test dofs x trial dofs) blocks.
    """
    fields = dict(fields or {})
    values = dict(values or {})
    if not isinstance(integrand, Integrand):
        raise ValueError("integrand must be tagged with @fem.integrand decorator")
    roles, test_name, trial_name, domain_name = _parse_arguments(integrand, fields, values)
    test = fields[test_name] if test_name else None
    trial = fields[trial_name] if trial_name else None
    if trial is not None and test is None:
        raise ValueError("A trial field cannot be provided without a test field")
    if test is not None and trial is not None and test.domain != trial.domain:
        raise ValueError("Incompatible test and trial domains")
    if domain is None:
        domain = quadrature.domain if quadrature is not None else (
            test.domain if test is not None else None)
    if domain is None:
        raise ValueError("Must provide at least one of domain, quadrature, or test field")
    if test is not None and domain != test.domain:
        raise NotImplementedError("Mixing integration and test domain is not supported yet")
    if add and output is None:
        raise ValueError("An 'output' array or matrix needs to be provided for add=True")
    if assembly not in (None, "generic", "nodal", "dispatch"):
        raise ValueError(f"Invalid assembly strategy '{assembly}'")
    nodal = assembly == "nodal"
    if nodal:
        if quadrature is not None:
            raise ValueError("Cannot specify quadrature for nodal integration")
        if test is None:
            raise ValueError("Nodal integration requires specifying a test function")
        if trial is not None and test.space != trial.space:
            raise ValueError("Bilinear nodal integration requires test and trial to be defined "
                             "on the same function space")
    elif quadrature is None:
        quadrature = RegularQuadrature(domain, order=sum(f.degree for f in fields.values()))
    elif quadrature.domain != domain:
        raise ValueError("Incompatible integration and quadrature domain")

    _check_field_compat(fields, domain)
    device = kc.get_device(device)
    annotations = integrand.annotations
    value_types = {n: value_type_of(n, annotations.get(n), values[n]) for n in values}
    spec = integrand.specialize(fields, domain, value_types)
    field_struct, value_struct = _fill_structs(spec, integrand, roles, fields, values, domain,
                                               value_types, device)
    if output is not None:
        output_dtype = output.scalar_type if isinstance(output, BsrMatrix) else output.dtype
    elif output_dtype is None:
        output_dtype = domain.geometry.scalar_type
    if trial is not None and value_kind(output_dtype) != "scalar":
        raise ValueError(f"the output type of a bilinear form must be a scalar type (the "
                         f"scalar of its blocks), got {output_dtype!r}")
    common = (domain.element_arg_value(device), field_struct, value_struct)
    # quadratures with launches of their own (PicQuadrature) give their run type
    run_type = quadrature.run_type() if hasattr(quadrature, "run_type") else _Run
    run = run_type(integrand, spec, domain, quadrature, common, accumulate_dtype, output_dtype,
                   device, temporary_store)
    if test is None:
        return run.constant(output, add)
    if trial is None:
        return run.linear(test, output, add, nodal)
    return run.bilinear(test, trial, output, add, nodal,
                        bsr_policy(bsr_options, "integrate", add))


class _Run:
    """One `integrate` call: the launches for each kind of form."""

    def __init__(self, integrand: Integrand, spec: Specialization, domain: GeometryDomain,
                 quadrature: Quadrature | None, common: tuple, accumulate: Any, output: Any,
                 device: Any, temporary_store: Any = None) -> None:
        self.integrand, self.spec, self.domain = integrand, spec, domain
        self.quadrature, self.common = quadrature, common
        self.accumulate, self.device = accumulate, device
        self.temporary_store = temporary_store
        self.indexed = quadrature is not None and quadrature.index_table(device) is not None
        self.output_type, self.output = output, scalar_of(output)
        self.name = "".join(c if c.isalnum() else "_" for c in integrand.__name__)

    def key(self, *parts: Any) -> tuple:
        return (self.domain.name, repr(kc.types.as_type(self.accumulate)),
                repr(kc.types.as_type(self.output)), self.indexed, *parts)

    def qp_arrays(self) -> tuple[Any, Any, Any]:
        """The quadrature's points, weights and point index table (an empty one for
        regular indices)."""
        table = self.quadrature.index_table(self.device)
        if table is None:
            table = kc.empty((0, 0), dtype=kc.int32, device=self.device)
        return (*self.quadrature.arrays(self.device), table)

    def constant(self, output: Any, add: bool) -> Any:
        """Without `output`, the sum of per-element integrals added on the host (in a fixed
        order); into `output`, atomic adds on the device then a cast, both recorded by a
        tape (Warp's order of operations)."""
        atomic = output is not None
        kernel = _kernel(self.spec, self.key("constant", atomic), lambda: K.constant_kernel(
            self.spec.call, self.domain, self.spec, self.accumulate, self.name, self.indexed,
            atomic))
        elements = kc.array(self.domain.element_indices(), dtype=kc.int32, device=self.device)
        accumulate = kc.types.as_type(self.accumulate)
        if output is None:
            result = kc.zeros(len(elements), dtype=accumulate, device=self.device)
        elif output.dtype == accumulate:
            result = output
        else:
            result = borrow_temporary(self.temporary_store, 1, accumulate, device=self.device,
                                      requires_grad=output.requires_grad)
        if output is not None and (result is not output or not add):
            result.zero_()
        if len(elements):
            launch(self.integrand, kernel, dim=len(elements), device=self.device,
                   inputs=[*self.common, *self.qp_arrays(), elements, result])
        if output is None:
            return accumulate.np_dtype.type(np.sum(result.numpy(), dtype=np.float64))
        if result is not output:
            cast = K.cast_kernel(accumulate, output.dtype, add)
            kc.launch(cast, dim=1, inputs=[result, output], device=self.device)
            result.release()
        return output

    def linear(self, test: TestField, output: Any, add: bool, nodal: bool) -> Any:
        restriction = test.space_restriction
        arrays = restriction.arrays(self.device)
        node_count = test.space_partition.node_count()
        dofs = test.node_dof_count
        output = _linear_output(output, self.output_type, node_count, dofs, self.device,
                                self.temporary_store)
        if not add:
            output.zero_()
        view = _scalar_view(output, self.output, (node_count, dofs)) if node_count else output
        node_args = [arrays["nodes"], arrays["offsets"], arrays["entry_element"],
                     arrays["entry_local"]]
        shape = test.space.shape
        if nodal:
            per_element = hasattr(test.space, "nodal_tables")  # point bases' tables
            kernel = _kernel(self.spec, self.key("linear_nodal", shape.name), lambda: K.nodal_kernel(
                self.spec.call, self.domain, self.spec, self.accumulate, self.output,
                shape.NODES_PER_ELEMENT, False, 1, self.name, per_element))
            inputs = [*self.common, *self.node_tables(test), *node_args, view]
        else:
            kernel = _kernel(self.spec, self.key("linear"), lambda: K.linear_kernel(
                self.spec.call, self.domain, self.spec, self.accumulate, self.output, self.name,
                self.indexed))
            inputs = [*self.common, *self.qp_arrays(), *node_args,
                      arrays["entry_domain_element"], view]
        if restriction.node_count():
            launch(self.integrand, kernel, dim=(restriction.node_count(), dofs),
                   device=self.device, inputs=inputs)
        return output

    def node_tables(self, field: Any) -> tuple[Any, Any]:
        if hasattr(field.space, "nodal_tables"):  # point bases: (cells, nodes) tables
            return field.space.nodal_tables(self.device)
        shape = field.space.shape
        side = self.domain.element_kind != self.domain.element_kind.CELL
        weights = shape.trace_node_quadrature_weights() if side \
            else shape.node_quadrature_weights()
        scalar = self.domain.geometry.scalar_type
        return (kc.array(shape.node_coords(), dtype=self.domain.geometry.coords_type,
                         device=self.device),
                kc.array(weights, dtype=scalar, device=self.device))

    def bilinear(self, test: TestField, trial: TrialField, output: Any, add: bool, nodal: bool,
                 policy: BsrPolicy) -> BsrMatrix:
        restriction = test.space_restriction
        arrays = restriction.arrays(self.device)
        nrow, ncol = test.space_partition.node_count(), trial.space_partition.node_count()
        if output is not None and (output.nrow != nrow or output.ncol != ncol):
            raise RuntimeError(f"Output matrix must have {nrow} rows and {ncol} columns of "
                               "blocks")
        rows_dofs, cols_dofs = test.node_dof_count, trial.node_dof_count
        block_type = self.output if rows_dofs == cols_dofs == 1 else mat_type(
            rows_dofs, cols_dofs, self.output)
        if output is not None and output.block_shape != (rows_dofs, cols_dofs):
            raise RuntimeError(f"Output matrix must have {rows_dofs}x{cols_dofs} blocks")
        block = rows_dofs * cols_dofs
        if nodal:
            shape = test.space.shape
            kernel = _kernel(self.spec, self.key("bilinear_nodal", shape.name, cols_dofs),
                             lambda: K.nodal_kernel(self.spec.call, self.domain, self.spec,
                                                    self.accumulate, self.output,
                                                    shape.NODES_PER_ELEMENT, True, cols_dofs,
                                                    self.name,
                                                    hasattr(test.space, "nodal_tables")))
            count = restriction.node_count()
            values = borrow_temporary(self.temporary_store, count, block_type,
                                      device=self.device)
            if count:
                launch(self.integrand, kernel, dim=(count, block), device=self.device,
                       inputs=[*self.common, *self.node_tables(test), arrays["nodes"],
                               arrays["offsets"], arrays["entry_element"],
                               arrays["entry_local"],
                               scalar_view(values, self.output, (count, block))])
            rows = cols = arrays["nodes"]
        else:
            kernel = _kernel(self.spec, self.key("bilinear", cols_dofs), lambda: K.bilinear_kernel(
                self.spec.call, self.domain, self.spec, self.accumulate, self.output, cols_dofs,
                self.name, self.indexed))
            rows, cols = restriction.bilinear_triplets(trial.space.topology, self.device,
                                                       _numbering(trial.space_partition))
            per_entry = len(cols) // max(1, restriction.total_node_element_count())
            entries = restriction.total_node_element_count()
            values = borrow_temporary(self.temporary_store, entries * per_entry, block_type,
                                      device=self.device)
            if entries and per_entry:
                launch(self.integrand, kernel, (entries, per_entry, block), device=self.device,
                       inputs=[*self.common, *self.qp_arrays(), arrays["entry_element"],
                               arrays["entry_local"], arrays["entry_domain_element"],
                               scalar_view(values, self.output, (entries, per_entry, block))])
        result = output if output is not None and not add else bsr_zeros(
            nrow, ncol, block_type, device=self.device)
        set_from_triplets(result, rows, cols, values, policy)
        values.release()  # summed into the matrix: back to the temporary store
        if add:
            bsr_axpy(x=result, y=output)
            return output
        return result


def _numbering(space_partition: Any) -> Any:
    """The partition a trial field's nodes are numbered in (None: the whole space)."""
    return None if type(space_partition) is SpacePartition else space_partition


def _scalar_view(arr: Any, scalar: Any, shape: tuple[int, ...]) -> Any:
    """`scalar_view` of `arr`, with the same view of its gradient (so that a tape sees the
    output's gradient through the view)."""
    view = scalar_view(arr, scalar, shape)
    if arr.grad is not None:
        view.grad = scalar_view(arr.grad, scalar, shape)
    return view


def _linear_output(output: Any, output_type: Any, node_count: int, dofs: int,
                   device: Any, temporary_store: Any = None) -> Any:
    """The array a linear form is written to: `output`, checked, or a new one of
    `output_type` (one value per node when its size is the node's dof count, else
    (nodes, dofs) scalars), borrowed from the temporary store as Warp makes it (zeroed by
    the caller)."""
    if output is None:
        size = dof_count(output_type)
        if size == dofs:
            return borrow_temporary(temporary_store, node_count, output_type, device=device)
        if size == 1:
            return borrow_temporary(temporary_store, (node_count, dofs), output_type,
                                    device=device)
        raise RuntimeError(f"Incompatible output type {output_type!r}, must be scalar or "
                           f"vector of length {dofs}")
    if output.shape[0] < node_count:
        raise RuntimeError(f"Output array must have at least {node_count} rows")
    size = dof_count(output.dtype)
    if size == dofs and output.ndim == 1:
        return output
    if size != 1:
        raise RuntimeError(f"Incompatible output type {output.dtype!r}, must be scalar or "
                           f"vector of length {dofs}")
    if output.ndim == 2:  # (nodes, dofs) scalars
        if output.shape[1] != dofs:
            raise RuntimeError(f"Incompatible output array shape, last dimension must be of "
                               f"size {dofs}")
    elif output.ndim == 1:  # flat scalars, read as (nodes, dofs) through the pointer
        if output.shape[0] < node_count * dofs:
            raise RuntimeError(f"Output array must have at least {node_count * dofs} entries")
        if not output.is_contiguous:
            raise RuntimeError("Flat scalar output arrays must be contiguous")
    else:
        raise RuntimeError("Incompatible output array shape, expected a one- or "
                           "two-dimensional array")
    return output
