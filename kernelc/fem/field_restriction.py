"""`fem.make_restriction`: a discrete field restricted to the nodes a domain reaches (Warp's
`warp.fem.make_restriction` and `FieldRestriction`).

A restriction is where `fem.interpolate` writes: given as `dest`, only the nodes of the
restriction's elements are interpolated, each from those elements alone; the other nodes of
the field keep their values.
"""

from typing import Any

from kernelc.fem.domain import GeometryDomain
from kernelc.fem.field import DiscreteField, make_space_restriction
from kernelc.fem.restriction import SpaceRestriction


class FieldRestriction:
    """A discrete field seen on the nodes of a space restriction (Warp's `FieldRestriction`).

    Attributes:
        space_restriction (SpaceRestriction): The nodes and elements.
        domain (GeometryDomain): The restriction's domain.
        field (DiscreteField): The field restricted.
        space (FunctionSpace): The field's space.
    """

    def __init__(self, space_restriction: SpaceRestriction, field: DiscreteField) -> None:
        if field.space.topology is not space_restriction.space_topology:
            raise ValueError("Incompatible field and space restriction topologies")
        self.space_restriction = space_restriction
        self.domain = space_restriction.domain
        self.field = field
        self.space = field.space


def make_restriction(field: DiscreteField, space_restriction: SpaceRestriction | None = None,
                     domain: GeometryDomain | None = None, device: Any = None
                     ) -> FieldRestriction:
    """Restricts a discrete field to the nodes of a domain's elements (Warp's
    `warp.fem.make_restriction`).

    Args:
        field: The discrete field.
        space_restriction: The nodes and elements to restrict to (or give `domain`).
        domain: The domain whose elements' nodes are kept (default: all cells).
        device: Accepted for Warp's sake.
    """
    if space_restriction is None:
        space_restriction = make_space_restriction(space_partition=field.space_partition,
                                                   domain=domain)
    return FieldRestriction(space_restriction, field)


__all__ = ["FieldRestriction", "make_restriction"]
