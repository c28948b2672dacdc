"""Dirichlet boundary conditions by projection (Warp's `warp.fem.project_linear_system` and
friends).

A projector P (from a nodal boundary integral, so diagonal) selects the constrained nodes.
After normalisation P is idempotent (its diagonal blocks are 0 or 1) and the fixed values
are scaled to match; the system becomes

    A := (I - P) A (I - P) + P,    b := (I - P) (b - A P x0) + P x0,

so the constrained values are x0 and the others solve the reduced system.
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.linalg import array_axpy
from kernelc.fem.linalg_funcs import normalize_projector_block
from kernelc.fem.types import vec_type
from kernelc.sparse import BsrMatrix, bsr_axpy, bsr_copy, bsr_mm, bsr_mv
from kernelc.sparse.matrix import host_rows_columns, scalar_view


@kc.func
def _diagonal_block(row: int, offsets: kc.array(dtype=int), columns: kc.array(dtype=int)):
    for k in range(offsets[row], offsets[row + 1]):
        if columns[k] == row:
            return k
    return -1


@kc.kernel(enable_backward=False)
def _normalize_scalar_projector(offsets: kc.array(dtype=int), columns: kc.array(dtype=int),
                                values: kc.array(dtype=Any), fixed: kc.array(dtype=Any),
                                has_fixed: int):
    row = kc.tid()
    k = _diagonal_block(row, offsets, columns)
    if k >= 0:
        p = values[k]
        # A 1x1 block is its own eigenvalue; modes below 1e-6 of the trace are dropped.
        keep = p > p * values.dtype(1.0e-6)
        values[k] = kc.where(keep, values.dtype(1.0), values.dtype(0.0))
        if has_fixed != 0:
            fixed[row] = kc.where(keep, fixed[row] / p, values.dtype(0.0))


@kc.kernel(enable_backward=False)
def _normalize_block_projector(offsets: kc.array(dtype=int), columns: kc.array(dtype=int),
                               values: kc.array(dtype=Any), fixed: kc.array(dtype=Any),
                               has_fixed: int):
    row = kc.tid()
    k = _diagonal_block(row, offsets, columns)
    if k >= 0:
        b = fixed[0] * fixed.dtype.dtype(0.0)
        if has_fixed != 0:
            b = fixed[row]
        unit, scaled = normalize_projector_block(values[k], b)
        values[k] = unit
        if has_fixed != 0:
            fixed[row] = scaled


def normalize_dirichlet_projector(projector_matrix: BsrMatrix, fixed_value: Any = None) -> None:
    """Makes the projector's diagonal blocks orthogonal projections (idempotent), scaling
    `fixed_value` the same way: scalar blocks become 0 or 1; a matrix block keeps the
    eigenvectors whose eigenvalues exceed 1e-6 of its trace, and the value's components
    along them are divided by those eigenvalues (Warp's rule).

    Args:
        projector_matrix: Square matrix with scalar or square matrix blocks (up to 4x4).
        fixed_value: Optional array of values at the nodes (scalars, or vectors of the
            block size), scaled in place.

    Raises:
        ValueError: A non-square projector, or values of the wrong length.
    """
    if projector_matrix.ncol != projector_matrix.nrow:
        raise ValueError("Projector must be a square block-diagonal matrix")
    if fixed_value is not None and fixed_value.shape[0] != projector_matrix.nrow:
        raise ValueError("Fixed value array must be of length equal to the number of rows of "
                         "blocks")
    values = projector_matrix.values
    rows, cols = projector_matrix.block_shape
    if (rows, cols) != (1, 1):
        if rows != cols or rows > 4:
            raise ValueError(f"Projector blocks must be square (up to 4x4), got {rows}x{cols}")
        vector = vec_type(rows, projector_matrix.scalar_type)
        if fixed_value is None:
            fixed = kc.zeros(1, dtype=vector, device=values.device)
        else:
            fixed = fixed_value if fixed_value.dtype == vector else scalar_view(
                fixed_value, vector, (projector_matrix.nrow,))
        kc.launch(_normalize_block_projector, dim=projector_matrix.nrow, device=values.device,
                  inputs=[projector_matrix.offsets, projector_matrix.columns, values, fixed,
                          int(fixed_value is not None)])
        return
    fixed = fixed_value if fixed_value is not None else kc.zeros(
        1, dtype=values.dtype, device=values.device)
    kc.launch(_normalize_scalar_projector, dim=projector_matrix.nrow, device=values.device,
              inputs=[projector_matrix.offsets, projector_matrix.columns, values, fixed,
                      int(fixed_value is not None)])


def project_system_rhs(system_matrix: BsrMatrix, system_rhs: Any, projector_matrix: BsrMatrix,
                       fixed_value: Any = None) -> None:
    """`rhs := (I - P) (rhs - A P x0) + P x0` (x0 = 0 when `fixed_value` is None).

    Args:
        system_matrix: A.
        system_rhs: b, updated in place.
        projector_matrix: P (normalised).
        fixed_value: x0, or None for zero.
    """
    rhs_tmp = kc.clone(system_rhs)
    if fixed_value is None:
        system_rhs.zero_()
    else:
        bsr_mv(projector_matrix, fixed_value, y=system_rhs, alpha=1.0, beta=0.0)
    bsr_mv(system_matrix, system_rhs, y=rhs_tmp, alpha=-1.0, beta=1.0)
    array_axpy(x=rhs_tmp, y=system_rhs, alpha=1.0, beta=1.0)
    bsr_mv(projector_matrix, rhs_tmp, y=system_rhs, alpha=-1.0, beta=1.0)


@kc.kernel(enable_backward=False)
def _project_diagonal_kernel(rows: kc.array(dtype=int), columns: kc.array(dtype=int),
                             p: kc.array(dtype=Any), values: kc.array(dtype=Any)):
    k = kc.tid()
    i = rows[k]
    j = columns[k]
    # The operations of the general path, in its order, for a diagonal P:
    # C = A - P A, A' = C + P, A'' = A' - C P.
    c = values[k] - p[i] * values[k]
    t = c
    if i == j:
        t = c + p[i]
    values[k] = t - c * p[j]


def _project_diagonal(system: BsrMatrix, projector: BsrMatrix) -> bool:
    """`project_system_matrix` for a diagonal P whose blocks are on A's diagonal (P from a
    nodal integral): A keeps its topology, one kernel updates its values with the same
    rounding as the general path. Returns False (doing nothing) for any other case."""
    if system.block_shape != (1, 1) or projector.block_shape != (1, 1) \
            or system.nrow != system.ncol or system.nnz == 0:
        return False
    p_rows, p_cols = host_rows_columns(projector)
    if np.any(p_rows != p_cols):
        return False
    rows, cols = host_rows_columns(system)
    has_diagonal = np.zeros(system.nrow, dtype=bool)
    has_diagonal[rows[rows == cols]] = True
    if not np.all(has_diagonal[p_rows]):
        return False
    device = system.device
    p = kc.zeros(system.nrow, dtype=system.scalar_type, device=device)
    if projector.nnz:
        index = kc.array(p_rows, dtype=kc.int32, device=device)
        kc.launch(_gather_kernel, dim=projector.nnz, device=device,
                  inputs=[index, projector.values, p])
    kc.launch(_project_diagonal_kernel, dim=system.nnz, device=device,
              inputs=[kc.array(rows, dtype=kc.int32, device=device), system.columns, p,
                      system.values])
    return True


@kc.kernel(enable_backward=False)
def _gather_kernel(index: kc.array(dtype=int), source: kc.array(dtype=Any),
                   dest: kc.array(dtype=Any)):
    k = kc.tid()
    dest[index[k]] = source[k]


def project_system_matrix(system_matrix: BsrMatrix, projector_matrix: BsrMatrix) -> None:
    """`A := (I - P) A (I - P) + P`, in place.

    Args:
        system_matrix: A.
        projector_matrix: P (normalised).
    """
    if not _project_diagonal(system_matrix, projector_matrix):
        _project_general(system_matrix, projector_matrix)


def _project_general(system_matrix: BsrMatrix, projector_matrix: BsrMatrix) -> None:
    complement = bsr_copy(system_matrix)
    bsr_mm(x=projector_matrix, y=system_matrix, z=complement, alpha=-1.0, beta=1.0)
    bsr_axpy(x=complement, y=system_matrix, alpha=1.0, beta=0.0)  # assign (I - P) A
    bsr_axpy(x=projector_matrix, y=system_matrix)
    bsr_mm(x=complement, y=projector_matrix, z=system_matrix, alpha=-1.0, beta=1.0)


def project_linear_system(system_matrix: BsrMatrix, system_rhs: Any,
                          projector_matrix: BsrMatrix, fixed_value: Any = None,
                          normalize_projector: bool = True) -> None:
    """Applies the Dirichlet projection to both sides of A x = b, in place.

    Args:
        system_matrix: A.
        system_rhs: b.
        projector_matrix: P (normalised first unless `normalize_projector` is False).
        fixed_value: Values at the constrained nodes (None: zero).
        normalize_projector: Make P idempotent first (scaling `fixed_value` too).
    """
    if normalize_projector:
        normalize_dirichlet_projector(projector_matrix, fixed_value)
    project_system_rhs(system_matrix, system_rhs, projector_matrix, fixed_value)
    project_system_matrix(system_matrix, projector_matrix)
