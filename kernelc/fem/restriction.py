"""Restriction of a space to a domain: which (element, local node) pairs touch each node
(Warp's `SpaceRestriction`), built on the host with NumPy.

Assembly kernels run one thread per such pair (an "entry") or per node; entries are sorted
by node (stably, so by element within a node, as Warp's are), which lets a node's thread
loop over its entries, and makes triplets come out sorted by row.
"""

from functools import cached_property
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.domain import GeometryDomain
from kernelc.fem.topology import SpaceTopology
from kernelc.fem.types import ElementKind


class SpaceRestriction:
    """The nodes of a space reached from the elements of a domain.

    Args:
        space_topology: The space's topology.
        domain: The domain (cells or sides; sides see the trace of the space).
        space_partition: Nodes are numbered in this partition, those outside it left out
            (None: the whole space).
    """

    def __init__(self, space_topology: SpaceTopology, domain: GeometryDomain,
                 space_partition: Any = None) -> None:
        self.space_topology = space_topology
        self.domain = domain
        self.space_partition = space_partition
        self._build()

    def rebuild(self, device: Any = None, temporary_store: Any = None) -> None:
        """Reads the domain's elements and the partition's nodes again (after
        `GeometryPartition.rebuild` and `SpacePartition.rebuild`, or new contents of a
        `Subdomain`'s element indices array)."""
        reload = getattr(self.domain, "reload_element_indices", None)
        if reload is not None:
            reload()
        self.__dict__.pop("host", None)
        self.__dict__.pop("_triplets", None)
        self._build()

    def _build(self) -> None:
        space_topology, space_partition = self.space_topology, self.space_partition
        elements = self.domain.element_indices()
        nodes = self.element_nodes(space_topology, space_partition)
        self.nodes_per_element = nodes.shape[1]
        flat = nodes.reshape(-1)
        order = np.argsort(flat, kind="stable")
        order = order[flat[order] >= 0]  # nodes outside the partition
        sorted_nodes = flat[order]
        self._nodes, starts = np.unique(sorted_nodes, return_index=True)
        self._offsets = np.append(starts, len(sorted_nodes)).astype(np.int32)
        domain_element = order // self.nodes_per_element
        self._entry_element = elements[domain_element].astype(np.int32)
        self._entry_local = (order % self.nodes_per_element).astype(np.int32)
        self._entry_node = sorted_nodes.astype(np.int32)
        self._entry_domain_element = domain_element.astype(np.int32)
        self._device_arrays: dict[str, Any] = {}

    def node_count(self) -> int:
        """Number of distinct nodes reached (exact; Warp's is an upper bound)."""
        return len(self._nodes)

    def node_count_sync(self) -> int:
        """Number of distinct nodes reached (Warp's name for the exact count)."""
        return len(self._nodes)

    def total_node_element_count(self) -> int:
        """Number of (element, local node) entries."""
        return len(self._entry_local)

    @cached_property
    def host(self) -> dict[str, np.ndarray]:
        """Host arrays: nodes (distinct nodes, increasing), offsets (entries of each node),
        and per entry: entry_element (geometry element), entry_local (node in element),
        entry_node (global node), entry_domain_element (index in the domain)."""
        return {"nodes": self._nodes.astype(np.int32), "offsets": self._offsets,
                "entry_element": self._entry_element, "entry_local": self._entry_local,
                "entry_node": self._entry_node,
                "entry_domain_element": self._entry_domain_element}

    def element_nodes(self, topology: SpaceTopology, partition: Any = None) -> np.ndarray:
        """(domain elements, nodes per element) nodes of `topology` on this domain's elements
        (side domains see the trace: inner cell nodes, then outer cell nodes), numbered in
        `partition` (-1 outside it) when one is given."""
        elements = self.domain.element_indices()
        if self.domain.element_kind == ElementKind.CELL:
            nodes = topology.host_element_nodes()[elements]
        else:
            nodes = topology.host_side_nodes(elements)
        return nodes if partition is None else partition.host_partition_indices(nodes)

    def bilinear_triplets(self, trial_topology: SpaceTopology, device: Any,
                          trial_partition: Any = None) -> tuple[Any, Any]:
        """Rows and columns of the (entry, trial node) triplets of a bilinear form, as
        `kc.array`s: row = the entry's node, column = the trial node of the entry's element
        (in `trial_partition`; -1 outside it, a triplet that matrix building leaves out)."""
        key = (trial_topology.name, id(trial_partition), str(kc.get_device(device)))
        cache = self.__dict__.setdefault("_triplets", {})
        if key not in cache:
            trial_nodes = self.element_nodes(trial_topology, trial_partition)[
                self._entry_domain_element]
            rows = np.repeat(self._entry_node, trial_nodes.shape[1])
            cache[key] = (kc.array(rows, dtype=kc.int32, device=device),
                          kc.array(trial_nodes.reshape(-1), dtype=kc.int32, device=device))
        return cache[key]

    def arrays(self, device: Any) -> dict[str, Any]:
        """The host arrays as `kc.array`s on `device` (made once per device)."""
        key = str(kc.get_device(device))
        if key not in self._device_arrays:
            self._device_arrays[key] = {name: kc.array(a, dtype=kc.int32, device=device)
                                        for name, a in self.host.items()}
        return self._device_arrays[key]

    def node_arg_value(self, device: Any = None) -> "RestrictionNodeArg":
        """The restriction's device arrays as one struct: per restriction node its
        partition index (`dof_partition_indices`) and the range of its (element, local
        node) entries (`dof_element_offsets`), per entry its element
        (`dof_element_indices`) and local node (`dof_local_indices`)."""
        arrays = self.arrays(device)
        arg = RestrictionNodeArg()
        arg.dof_partition_indices = arrays["nodes"]
        arg.dof_element_offsets = arrays["offsets"]
        arg.dof_element_indices = arrays["entry_element"]
        arg.dof_local_indices = arrays["entry_local"]
        self._dof_partition_indices = arrays["nodes"]
        return arg

    def node_partition_indices(self) -> Any:
        """The distinct nodes reached, increasing, as a `kc.array`."""
        return self.arrays(None)["nodes"]


@kc.struct
class RestrictionNodeArg:
    """The arrays of `SpaceRestriction.node_arg_value`."""

    dof_partition_indices: kc.array(dtype=int)
    dof_element_offsets: kc.array(dtype=int)
    dof_element_indices: kc.array(dtype=int)
    dof_local_indices: kc.array(dtype=int)


def restriction_for(space_topology: SpaceTopology, domain: GeometryDomain,
                    space_partition: Any = None) -> SpaceRestriction:
    """The restriction of `space_topology` (numbered in `space_partition`, if given) to
    `domain`, made once per pair (the example programs remake their domains and test
    fields at every step)."""
    cache = space_topology.__dict__.setdefault("_restrictions", {})
    # Domains of one name (subdomains of one kind) may hold different elements: the few
    # made last are kept, and the one equal to `domain` serves.
    made = cache.setdefault(domain.name, [])
    found = next((r for r in made if r.domain == domain
                  and r.space_partition == space_partition), None)
    if found is None:
        found = SpaceRestriction(space_topology, domain, space_partition)
        made.append(found)
        del made[:-_KEPT_PER_NAME]
    return found


_KEPT_PER_NAME = 8
