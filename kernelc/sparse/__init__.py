"""`kernelc.sparse`: block sparse row (BSR) matrices, the core of Warp's `warp.sparse`.

`import kernelc as wp; wp.sparse.bsr_zeros(...)` and `import kernelc.sparse` both work.
Matrices use compact or padded storage (see kernelc/sparse/padded.py); block values live on the matrix's device and are computed by
kernels written in kernelc's own language (CPU and CUDA alike); topologies (which blocks
exist) are computed on the host with NumPy, following Warp 1.19's rules exactly. See
docs/sparse.md.
"""

from kernelc.sparse.assign import (
    bsr_assign,
    bsr_axpy_work_arrays,
    bsr_compress,
    bsr_mm_work_arrays,
)
from kernelc.sparse.build import (
    bsr_diag,
    bsr_from_triplets,
    bsr_identity,
    bsr_set_diag,
    bsr_set_from_triplets,
    bsr_set_identity,
    bsr_set_transpose,
    bsr_set_zero,
    bsr_transposed,
    bsr_zeros,
)
from kernelc.sparse.kernels import bsr_block_index, bsr_row_index
from kernelc.sparse.mapped import BsrTripletMap, bsr_set_from_mapped_values
from kernelc.sparse.matrix import BsrMatrix, BsrScalingExpression
from kernelc.sparse.ops import (
    bsr_axpy,
    bsr_copy,
    bsr_get_diag,
    bsr_mm,
    bsr_mv,
    bsr_scale,
)

# Status codes of padded-storage operations (`BsrMatrix.status_sync()`), Warp's values.
BSR_STATUS_SUCCESS = 0
BSR_STATUS_ROW_CAPACITY_EXCEEDED = 1

__all__ = ["BSR_STATUS_ROW_CAPACITY_EXCEEDED", "BSR_STATUS_SUCCESS", "BsrMatrix",
           "BsrTripletMap", "bsr_assign", "bsr_axpy_work_arrays", "bsr_compress",
           "bsr_mm_work_arrays", "bsr_set_from_mapped_values",
           "BsrScalingExpression", "bsr_axpy", "bsr_block_index", "bsr_copy", "bsr_diag", "bsr_from_triplets", "bsr_get_diag", "bsr_identity", "bsr_mm", "bsr_mv",
           "bsr_row_index", "bsr_scale", "bsr_set_diag", "bsr_set_from_triplets",
           "bsr_set_identity", "bsr_set_transpose", "bsr_set_zero", "bsr_transposed",
           "bsr_zeros"]
