"""The nodes of a space that a geometry partition touches (Warp's `NodePartition`, made by
`make_space_partition(space_topology=..., geometry_partition=...)`), numbered as Warp
numbers them, computed on the host with NumPy.

Nodes fall in categories, in this order: owned interior (on the partition's cells only),
owned frontier (on its cells and on a frontier side), halo nodes of its own sides (on the
cells across them), halo nodes of frontier sides owned by other partitions; the
partition's nodes are these, category after category, each by increasing space node.
Without the halo, only the owned nodes (all counted as interior).

`EnvironmentSpacePartition` (`make_space_partition(..., environment_first=True)`) lists the
nodes environment by environment instead.
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.partition import GeometryPartition
from kernelc.fem.space import SpacePartition
from kernelc.fem.topology import SpaceTopology

_OWNED_INTERIOR, _OWNED_FRONTIER, _HALO_LOCAL, _HALO_OTHER, _EXTERIOR = range(5)


class _ListedNodes(SpacePartition):
    """A partition given by the list of its space nodes (`_nodes`, int32) and the inverse
    map (`_to_partition`: each space node's partition index, -1 outside)."""

    _nodes: np.ndarray
    _to_partition: np.ndarray

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def space_node_indices(self) -> Any:
        """The space node of each partition node, a `kc.array` of int."""
        key = str(kc.get_device())
        if key not in self._device_nodes:
            self._device_nodes[key] = kc.array(self._nodes, dtype=kc.int32)
        return self._device_nodes[key]

    def host_space_node_indices(self) -> np.ndarray:
        """The space node of each partition node (read-only int32)."""
        out = self._nodes.view()
        out.setflags(write=False)
        return out

    def host_partition_indices(self, space_nodes: np.ndarray) -> np.ndarray:
        """The partition index of each of `space_nodes` (-1 outside the partition)."""
        # -1: no node (past a point basis' cell count) stays none
        return np.where(space_nodes >= 0, self._to_partition[space_nodes], -1)


class NodePartition(_ListedNodes):
    """The nodes of `space_topology` touching the cells (and, with the halo, the sides) of
    `geo_partition`.

    Args:
        space_topology: The space's topology.
        geo_partition: The geometry partition.
        with_halo: Whether to add the nodes of cells across the partition's sides.

    Raises:
        ValueError: The partition is not of the space's geometry.
    """

    def __init__(self, space_topology: SpaceTopology, geo_partition: GeometryPartition,
                 with_halo: bool = True) -> None:
        super().__init__(space_topology)
        if geo_partition.geometry is not space_topology.geometry:
            raise ValueError("the geometry partition must be of the space's geometry")
        self._geo_partition = geo_partition
        self._with_halo = with_halo
        self._number_nodes()

    def rebuild(self, device: Any = None, temporary_store: Any = None) -> None:
        """Numbers the nodes again from the geometry partition's current cells (after
        `GeometryPartition.rebuild`); restrictions and fields made on this partition are to
        be rebuilt or made again."""
        self._number_nodes()

    def _number_nodes(self) -> None:
        space_topology = self.space_topology
        category = self._categories()
        order = np.argsort(category, kind="stable")  # by category, then by node
        counts = np.bincount(category, minlength=_EXTERIOR + 1)
        self._offsets = np.concatenate([[0], np.cumsum(counts)])
        self._nodes = np.ascontiguousarray(order[: self._offsets[_EXTERIOR]], dtype=np.int32)
        self._to_partition = np.full(space_topology.node_count(), -1, dtype=np.int32)
        self._to_partition[self._nodes] = np.arange(len(self._nodes), dtype=np.int32)
        self._device_nodes: dict[str, Any] = {}

    def _categories(self) -> np.ndarray:
        topology, part = self.space_topology, self._geo_partition
        category = np.full(topology.node_count(), _EXTERIOR, dtype=np.int64)
        cells = part.host_element_indices("cells")
        category[_nodes_of(topology.host_element_nodes()[cells])] = _OWNED_INTERIOR
        if not self._with_halo:
            return category
        own_sides = _nodes_of(topology.host_side_nodes(part.host_element_indices("sides")))
        category[own_sides[category[own_sides] == _EXTERIOR]] = _HALO_LOCAL
        frontier = np.unique(_nodes_of(topology.host_side_nodes(
            part.host_element_indices("frontier_sides"))))
        before = category[frontier]
        category[frontier[before == _EXTERIOR]] = _HALO_OTHER
        category[frontier[before == _OWNED_INTERIOR]] = _OWNED_FRONTIER
        return category

    @property
    def geo_partition(self) -> GeometryPartition:
        """The geometry partition."""
        return self._geo_partition

    @property
    def name(self) -> str:
        return f"{self.space_topology.name}_{self._geo_partition.name}_NodePartition"

    def node_count(self) -> int:
        """Nodes of the partition, halo included."""
        return int(self._offsets[_EXTERIOR])

    def owned_node_count(self) -> int:
        """Nodes on the partition's cells."""
        return int(self._offsets[_HALO_LOCAL])

    def interior_node_count(self) -> int:
        """Nodes on the partition's cells and on none of its frontier sides."""
        return int(self._offsets[_OWNED_FRONTIER])



def _nodes_of(table: np.ndarray) -> np.ndarray:
    """The nodes of a node table, flattened (-1: no node, past a point basis' count)."""
    flat = table.reshape(-1)
    return flat[flat >= 0]



class EnvironmentSpacePartition(_ListedNodes):
    """The nodes of a space grouped by environment (Warp's `EnvironmentSpacePartition`, made
    by `make_space_partition(..., environment_first=True)`): each environment's nodes are
    contiguous, so that per-environment solvers can use `env_offsets` as batch offsets.

    A node's environment is the least environment of the (partition) cells it touches;
    nodes on none come last. Within an environment, nodes keep their space order. With a
    whole geometry every node is in the partition; with a geometry partition only those on
    its cells. `max_node_count` >= 0 fixes the node count (Warp's capacity): nodes past it
    are dropped, and slots past the partition's nodes belong to no space node.

    Args:
        space_topology: The space's topology.
        geo_partition: A geometry partition, or None for the whole geometry.
        max_node_count: The node count, or -1 for as many as there are.
    """

    def __init__(self, space_topology: SpaceTopology, geo_partition: Any = None,
                 max_node_count: int = -1) -> None:
        super().__init__(space_topology)
        self._geo_partition = geo_partition
        geometry = space_topology.geometry
        env_count = geometry.environment_count()
        node_total = space_topology.node_count()
        whole = geo_partition is None
        table = space_topology.host_element_nodes()
        cells = np.arange(len(table)) if whole else geo_partition.host_element_indices("cells")
        envs = geometry.host_cell_environments()
        node_env = np.full(node_total, env_count, np.int64)
        nodes = table[cells]
        touched = nodes >= 0
        np.minimum.at(node_env, nodes[touched],
                      np.broadcast_to(envs[cells][:, None], nodes.shape)[touched])
        order = np.argsort(node_env, kind="stable")
        groups = np.concatenate([[0], np.cumsum(np.bincount(node_env,
                                                             minlength=env_count + 1))])
        env_nodes = int(groups[env_count])
        if max_node_count < 0 and env_count <= 1 and whole:  # Warp's shortcut: every node
            order, env_nodes = np.arange(node_total), node_total
            groups = np.array([0, node_total, node_total])
        if max_node_count >= 0:
            count = min(int(max_node_count), node_total)
            mapped = count if whole else min(count, env_nodes)
            offsets = np.minimum(groups[: env_count + 1], count)
        else:
            count = node_total if whole else env_nodes
            mapped = count
            offsets = np.minimum(groups[: env_count + 1], count) if count <= env_nodes else None
        self._count = count
        self._nodes = np.ascontiguousarray(order[:count], dtype=np.int32)
        self._to_partition = np.full(node_total, -1, dtype=np.int32)
        self._to_partition[self._nodes[:mapped]] = np.arange(mapped, dtype=np.int32)
        self._offsets = None if offsets is None else offsets.astype(np.int32)
        self._device_nodes: dict[str, Any] = {}

    @property
    def geo_partition(self) -> Any:
        return self.space_topology.geometry if self._geo_partition is None \
            else self._geo_partition

    @property
    def name(self) -> str:
        part = "Whole" if self._geo_partition is None else self._geo_partition.name
        return f"{self.space_topology.name}_{part}_EnvironmentFirst"

    def node_count(self) -> int:
        return self._count

    @property
    def env_offsets(self) -> Any:
        """Where each environment's nodes start (one more entry than environments, the last
        the end of the environments' nodes), a `kc.array` of int; None where some
        partition nodes are on no cell."""
        if self._offsets is None:
            return None
        return kc.array(self._offsets, dtype=kc.int32)

    @property
    def _space_to_partition(self) -> Any:
        """The partition index of each space node (NULL_NODE_INDEX outside), Warp's private
        name."""
        from kernelc.fem.types import NULL_NODE_INDEX

        out = np.where(self._to_partition < 0, NULL_NODE_INDEX, self._to_partition)
        return kc.array(out.astype(np.int32), dtype=kc.int32)


__all__ = ["EnvironmentSpacePartition", "NodePartition"]
