"""`bsr_options` of `fem.integrate` and `fem.interpolate` into a sparse matrix, checked as
Warp checks them, and the triplet assembly they select.

kernelc builds every matrix from triplets on the host, so the `construction` policies
("auto", "triplets", "row_compress", "mapped", "mapped_atomic") and `capacity` ("auto",
"reuse") give the same matrices; they are validated, not acted on. `topology="padded"`
gives each active row the room of its triplets (`bsr_set_zero(..., row_capacity=...)`).
"""

from dataclasses import dataclass
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.sparse import BsrMatrix, bsr_set_from_triplets, bsr_set_zero, bsr_zeros

_CONSTRUCTIONS = ("auto", "triplets", "row_compress", "mapped", "mapped_atomic")
_MAPPED = ("mapped", "mapped_atomic")


@dataclass
class BsrPolicy:
    """What the options ask for: drop zero blocks, and the output's storage."""

    prune: bool
    topology: str


def bsr_policy(bsr_options: dict[str, Any] | None, caller: str, add: bool = False
               ) -> BsrPolicy:
    """Checks `bsr_options` for `caller` ("integrate" or "interpolate").

    Raises:
        ValueError: An unknown capacity or construction policy, `inplace`, or a mapped
            construction with padded storage or with `prune_numerical_zeros=True`.
        NotImplementedError: A mapped construction in `interpolate` or with `add=True`.
    """
    options = dict(bsr_options or {})
    capacity = options.pop("capacity", "auto")
    if capacity not in ("auto", "reuse"):
        raise ValueError(f"Unsupported BSR capacity policy: {capacity}. Expected 'auto' or "
                         "'reuse'")
    construction = options.pop("construction", "triplets")
    if construction not in _CONSTRUCTIONS:
        raise ValueError(f"Unsupported BSR construction policy: {construction}. Expected "
                         "'auto', 'triplets', 'row_compress', 'mapped', or 'mapped_atomic'")
    if "inplace" in options:
        raise ValueError("fem.integrate() and fem.interpolate() choose how matrices are "
                         "compressed; use bsr_options['construction'] instead of 'inplace'")
    topology = options.get("topology", "compact")
    if topology not in ("compact", "padded"):
        raise ValueError(f"Unsupported BSR topology: {topology}. Expected 'compact' or "
                         "'padded'")
    mapped = construction in _MAPPED
    if mapped and caller != "integrate":
        raise NotImplementedError("Mapped BSR construction is currently supported by "
                                  "fem.integrate() bilinear assembly only")
    if mapped and topology != "compact":
        raise ValueError("Mapped FEM assembly requires bsr_options['topology']='compact'")
    if mapped and add:
        raise NotImplementedError("Mapped FEM assembly does not support add=True")
    if mapped and options.get("prune_numerical_zeros", False):
        raise ValueError("Mapped FEM assembly requires "
                         "bsr_options['prune_numerical_zeros']=False")
    return BsrPolicy(options.get("prune_numerical_zeros", not mapped), topology)


def set_from_triplets(dest: BsrMatrix, rows: Any, columns: Any, values: Any,
                      policy: BsrPolicy) -> None:
    """`bsr_set_from_triplets` by `policy`; padded rows get room for their triplets where
    they hold a block, none elsewhere."""
    if policy.topology == "compact":
        bsr_set_from_triplets(dest, rows, columns, values, prune_numerical_zeros=policy.prune)
        return
    from kernelc.sparse.padded import store

    compact = bsr_zeros(dest.nrow, dest.ncol, dest.values.dtype, device=dest.device)
    compact.values.requires_grad = dest.requires_grad
    bsr_set_from_triplets(compact, rows, columns, values, prune_numerical_zeros=policy.prune)
    host_rows = rows.numpy()
    slots = np.bincount(host_rows[host_rows >= 0], minlength=dest.nrow)[: dest.nrow]
    used = np.diff(compact.offsets.numpy()[: dest.nrow + 1])
    capacity = np.where(used > 0, slots, 0).astype(np.int32)
    bsr_set_zero(dest, topology="padded",
                 row_capacity=kc.array(capacity, dtype=kc.int32, device=dest.device))
    store(dest, compact, "padded")


__all__ = ["BsrPolicy", "bsr_policy", "set_from_triplets"]
