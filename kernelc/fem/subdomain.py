"""`fem.Subdomain`: a domain restricted to a subset of its elements (Warp's
`warp.fem.Subdomain`).

The elements are picked from the containing domain's own list (cells, sides, boundary
sides, or another subdomain), by a mask with one entry per element of that domain or by
their indices in it, as in Warp; the subdomain's elements keep that domain's order.
Everything else (element kind, element funcs, kernel arguments) is the containing
domain's, so kernels compiled for one subdomain serve every subdomain of the same kind.
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.domain import GeometryDomain
from kernelc.fem.element import Element
from kernelc.fem.types import ElementKind

# The element funcs a subdomain takes from its containing domain (those the domain has).
_FORWARDED = ("ElementArg", "element_position", "element_deformation_gradient",
              "element_inverse_deformation_gradient", "element_measure",
              "element_measure_ratio", "element_normal", "element_lookup")


class Subdomain(GeometryDomain):
    """The elements of `domain` selected by a mask or by their indices in `domain`.

    Args:
        domain: The containing domain.
        element_mask: One int per element of `domain`: 1 to take the element, 0 to leave
            it (a `kc.array`, read back to the host once).
        element_indices: The indices in `domain` of the elements to take (instead of a
            mask), in the order the subdomain lists them.
        temporary_store: Accepted for Warp's sake.

    Raises:
        ValueError: Neither or both of `element_mask` and `element_indices` given, a mask of
            the wrong length, or an index outside `domain`.
    """

    def __init__(self, domain: GeometryDomain, element_mask: Any = None,
                 element_indices: Any = None, temporary_store: Any = None) -> None:
        super().__init__(domain.geometry_partition)
        if element_indices is None:
            if element_mask is None:
                raise ValueError("Either 'element_mask' or 'element_indices' should be "
                                 "provided")
            mask = _host(element_mask)
            if mask.shape != (domain.element_count(),):
                raise ValueError(f"element_mask must have one entry per element of the "
                                 f"domain ({domain.element_count()}), got shape {mask.shape}")
            local = np.flatnonzero(mask).astype(np.int32)
            device = getattr(element_mask, "device", None)
            element_indices = kc.array(local, dtype=kc.int32, device=device)
        elif element_mask is not None:
            raise ValueError("Only one of 'element_mask' and 'element_indices' should be "
                             "provided")
        else:
            local = _host(element_indices).astype(np.int32).reshape(-1)
            if not isinstance(element_indices, kc.array):
                element_indices = kc.array(local, dtype=kc.int32)
            if local.size and (local.min() < 0 or local.max() >= domain.element_count()):
                raise ValueError(f"element_indices must lie in [0, {domain.element_count()})")
        self._domain = domain
        self._element_indices = element_indices
        self._local = local
        self._indices = np.ascontiguousarray(domain.element_indices()[local], dtype=np.int32)
        self._indices.setflags(write=False)
        for name in _FORWARDED:
            if hasattr(domain, name):
                setattr(self, name, getattr(domain, name))

    def reload_element_indices(self) -> None:
        """Reads the element indices array again (its contents may have been assigned
        since); negative entries select no element, as in Warp."""
        local = _host(self._element_indices).astype(np.int32).reshape(-1)
        local = local[local >= 0]
        if local.size and local.max() >= self._domain.element_count():
            raise ValueError(f"element_indices must lie in [0, {self._domain.element_count()})")
        self._local = local
        self._indices = np.ascontiguousarray(self._domain.element_indices()[local],
                                             dtype=np.int32)
        self._indices.setflags(write=False)

    @property
    def name(self) -> str:
        """The containing domain's name, then `_Subdomain` (as Warp names it)."""
        return f"{self._domain.name}_Subdomain"

    def __eq__(self, other: object) -> bool:
        return (type(self) is type(other) and self.geometry is other.geometry
                and self._element_indices is other._element_indices)

    def __hash__(self) -> int:
        return hash((type(self), id(self._element_indices)))

    @property
    def domain(self) -> GeometryDomain:
        """The containing domain."""
        return self._domain

    @property
    def element_kind(self) -> ElementKind:  # type: ignore[override]
        return self._domain.element_kind

    def reference_element(self) -> Element:
        return self._domain.reference_element()

    def element_count(self) -> int:
        return len(self._indices)

    def geometry_element_count(self) -> int:
        return self._domain.geometry_element_count()

    def element_indices(self) -> np.ndarray:
        return self._indices

    def domain_element_indices(self) -> Any:
        """The subdomain's elements as indices in the containing domain (a `kc.array`)."""
        return self._element_indices

    def element_arg_value(self, device: Any = None) -> Any:
        return self._domain.element_arg_value(device)


def _host(values: Any) -> np.ndarray:
    return values.numpy() if isinstance(values, kc.array) else np.asarray(values)


__all__ = ["Subdomain"]
