"""`FSAI.update`: refitting the factor on fixed supports, and selecting them late
(`defer_pattern`).

A refit recomputes every row of G on its support, in the order the support was grown (so
pivots, and the floor test, are those of construction), into a candidate array; the
candidate replaces G's values (and G^T's) only if the update is accepted. `status` counts
[topology mismatches, invalid diagonals, failed local factorizations, regularized rows].
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.optim import linear_fsai_kernels as K
from kernelc.optim.linear_fsai import _diagonal_scale, _launch, _select, _transposed_slots
from kernelc.runtime.array import array


class PlanBase:
    """What both plans share: the original signature and topology, the status counts."""

    def __init__(self, A: Any, storage: Any, width: int, floor: float, regularize: bool,
                 validate_topology: bool) -> None:
        self.signature = (A.shape, A.dtype, A.device)
        self.nrow = A.nrow
        self.nnz = A.nnz_sync()  # the stored blocks, not a capacity
        self.topology = None
        if validate_topology:
            self.topology = (kc.clone(A.offsets), kc.clone(A.columns))
        self.width = width
        self.floor = floor
        self.regularize = regularize
        # Only these configurations can reject an update, so only they read the status back.
        self.raises = validate_topology or not regularize
        self.refit = K.refit_kernel(A.scalar_type, storage, width, regularize)
        self.status = kc.zeros(4, dtype=kc.int32, device=A.device)

    def prepare(self, A: Any) -> array:
        """Checks A against the original, clears the status, compares the topology and
        computes the equilibration; returns the scale."""
        if (A.shape, A.dtype, A.device) != self.signature:
            raise ValueError("FSAI update requires the original shape, dtype, device and "
                             "topology")
        if (A.offsets.shape[0] < self.nrow + 1 or A.columns.shape[0] < self.nnz
                or A.values.shape[0] < self.nnz):
            raise ValueError("FSAI update requires storage covering every block of the "
                             "original matrix")
        self.status.zero_()
        if self.topology is not None:
            offsets, columns = self.topology
            _launch(K.compare_kernel, self.nrow + 1, [A.offsets, offsets, self.status],
                    A.device)
            _launch(K.compare_kernel, self.nnz, [A.columns, columns, self.status], A.device)
        return _diagonal_scale(A, self.status, 1)

    def run_refit(self, A: Any, scale: array, G: Any, growth_rank: array,
                  candidate: array) -> None:
        _launch(self.refit, G.nrow,
                [A.offsets, A.columns, A.scalar_values, G.offsets, G.columns, growth_rank,
                 scale, A.scalar_type(self.floor), candidate, self.status], A.device)

    def commit(self, owner: Any, candidate: array, transposed_slots: array) -> None:
        _launch(K.commit_kernel, owner.G.nnz,
                [candidate, self.status, transposed_slots, owner.G.values, owner.GT.values,
                 int(self.regularize)], owner.G.device)

    def check(self) -> None:
        """Raises if the last update was rejected (reads the status back)."""
        topology, diagonal, refit, _ = (int(v) for v in self.status.numpy())
        if topology:
            raise ValueError("FSAI update requires identical sparsity; rebuild to change it")
        if (diagonal or refit) and not self.regularize:
            raise ValueError("FSAI refit requires finite positive diagonals and SPD local "
                             "supports")


class RefitPlan(PlanBase):
    """Refits on the supports selected at construction."""

    def __init__(self, owner: Any, A: Any, growth_rank: array, transposed_slots: array,
                 width: int, step: int, tolerance: float, floor: float, regularize: bool,
                 validate_topology: bool) -> None:
        super().__init__(A, owner.factor_dtype, width, floor, regularize, validate_topology)
        self.growth_rank = growth_rank
        self.transposed_slots = transposed_slots
        self.candidate = kc.empty_like(owner.G.values)

    def update(self, owner: Any, A: Any) -> None:
        scale = self.prepare(A)
        self.run_refit(A, scale, owner.G, self.growth_rank, self.candidate)
        self.commit(owner, self.candidate, self.transposed_slots)
        if self.raises:
            self.check()


class DeferredPlan(PlanBase):
    """Selects the supports at the first accepted update, then refits like `RefitPlan`.

    Until then G and G^T are the identity. The selection runs eagerly on the host's
    request (kernelc cannot capture it in a graph).
    """

    def __init__(self, owner: Any, A: Any, width: int, step: int, tolerance: float,
                 floor: float, regularize: bool, validate_topology: bool) -> None:
        super().__init__(A, owner.factor_dtype, width, floor, regularize, validate_topology)
        from kernelc.sparse import bsr_identity

        self.step = step
        self.tolerance = tolerance
        self.storage = owner.factor_dtype
        self.select = K.select_kernel(A.scalar_type, width, step)
        self.ready = kc.zeros(1, dtype=kc.int32, device=A.device)
        self.pattern_status = kc.zeros(3, dtype=kc.int32, device=A.device)
        self.published = False
        self.growth_rank = None
        self.transposed_slots = None
        self.candidate = None
        n = A.shape[0]
        owner.G = bsr_identity(n, self.storage, device=A.device)
        owner.GT = bsr_identity(n, self.storage, device=A.device)

    def update(self, owner: Any, A: Any) -> None:
        scale = self.prepare(A)
        if not self.published:
            self._select_and_publish(owner, A, scale)
            return
        self.run_refit(A, scale, owner.G, self.growth_rank, self.candidate)
        self.commit(owner, self.candidate, self.transposed_slots)
        if self.raises:
            self.check()

    def _select_and_publish(self, owner: Any, A: Any, scale: array) -> None:
        from kernelc.sparse import bsr_copy

        self.check_or_regularize()
        self.pattern_status.zero_()
        G, growth_rank = _select(A, scale, self.width, self.step, self.tolerance, self.floor,
                                 self.pattern_status)
        if self.storage != G.scalar_type:
            G = bsr_copy(G, scalar_type=self.storage)
        candidate = kc.empty_like(G.values)
        self.run_refit(A, scale, G, growth_rank, candidate)
        self.check_or_regularize()
        # Accepted: publish the supports, then the refit values.
        GT, transposed_slots = _transposed_slots(G)
        if G.nnz:
            kc.copy(G.values, candidate, count=G.nnz)
            _launch(K.gather_kernel, G.nnz, [candidate, _inverse(transposed_slots), GT.values],
                    G.device)
        owner.G, owner.GT = G, GT
        self.growth_rank, self.transposed_slots = growth_rank, transposed_slots
        self.candidate = kc.empty_like(G.values)
        self.ready.fill_(1)
        self.published = True

    def check_or_regularize(self) -> None:
        """Like `check`, but always reads the status: the first update must know whether
        the supports may be published."""
        self.check()


def _inverse(slots: array) -> array:
    """The permutation inverse to `slots` (entry of G for each slot of G^T)."""
    host = slots.numpy()
    inverse = np.empty_like(host)
    inverse[host] = np.arange(len(host), dtype=host.dtype)
    return kc.array(inverse, dtype=kc.int32, device=slots.device)
