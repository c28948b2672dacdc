"""Serendipity shape functions on the reference cube (S_2, S_3; Warp's
`CubeSerendipityShapeFunctions`): the Q_k nodes on the cube's edges, none on its faces or
inside.

Vertex functions are trilinear functions times a correction that vanishes at the edge
nodes (a plane for S_2, a sphere for S_3); edge functions are 1-D Lagrange polynomials along
the edge times a bilinear function across it. Node order and kinds: `shape_cube.py`.
"""

from functools import cache
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.polynomial import Polynomial, is_closed
from kernelc.fem.shape import ShapeFunction
from kernelc.fem.shape_cube import EDGE, VERTEX
from kernelc.fem.types import vec_type


def _local_to_world(axis: np.ndarray, local: np.ndarray) -> np.ndarray:
    """(N, 3) positions in the frame (axis, axis + 1, axis + 2) to world axes."""
    idx = (np.arange(3)[None, :] - axis[:, None]) % 3
    return np.take_along_axis(local, idx, axis=1)


class CubeSerendipityShapeFunctions(ShapeFunction):
    """S_2 and S_3 on hexahedra: 8 vertex nodes and k - 1 nodes on each of the 12 edges."""

    element = Element.CUBE
    _kind = "Cube_S"

    def __init__(self, degree: int, family: Polynomial, scalar_type: Any = kc.float32) -> None:
        if not is_closed(family):
            raise ValueError("serendipity elements need a closed polynomial family")
        if degree not in (2, 3):
            raise NotImplementedError("serendipity elements have degree 2 or 3")
        super().__init__(degree, family, scalar_type)
        self.NODES_PER_ELEMENT = 8 + 12 * (degree - 1)
        self.NODES_PER_SIDE = 4 * degree
        self.VERTEX_NODE_COUNT = 1
        self.EDGE_NODE_COUNT = degree - 1
        self.FACE_NODE_COUNT = 0
        self.INTERIOR_NODE_COUNT = 0
        # The degree-3 vertex functions vanish on a sphere through the edge nodes; its
        # constants are rounded to the scalar type before use, as in Warp.
        x1 = float(self.np_scalar(self.lobatto_coords[1]))
        radius = float(self.np_scalar(0.5 + (0.5 - x1) ** 2))
        self.weight, self.weight_gradient = _serendipity_funcs(
            degree, tuple(self.lobatto_coords), tuple(self.lagrange_scales), radius,
            1.0 / (0.75 - radius), scalar_type)

    def node_types(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per node: kind (VERTEX or EDGE), which vertex or edge, index along the edge."""
        n = np.arange(self.NODES_PER_ELEMENT)
        edge, axis = np.divmod(np.maximum(n - 8, 0), 3)
        along, offset = np.divmod(edge, 4)
        vertex = n < 8
        return (np.where(vertex, VERTEX, EDGE), np.where(vertex, n, 4 * axis + offset),
                np.where(vertex, 0, along))

    def node_lobatto_indices(self) -> np.ndarray:
        """(N, 3) positions of the nodes on the 1-D node grid."""
        k = self.ORDER
        kind, instance, index = self.node_types()
        vertex = np.stack([instance // 4, instance // 2 % 2, instance % 2], axis=1) * k
        axis, offset = instance // 4, instance % 4
        local = np.stack([index + 1, offset // 2 * k, offset % 2 * k], axis=1)
        edge = _local_to_world(axis, local)
        return np.where((kind == VERTEX)[:, None], vertex, edge)

    def node_coords(self) -> np.ndarray:
        x = self.lobatto_coords.astype(self.np_scalar)
        return x[self.node_lobatto_indices()].astype(self.np_scalar)

    def node_quadrature_weights(self) -> np.ndarray:
        k = self.ORDER
        vertex = self.np_scalar(1.0 / (8 * k ** 3))
        edge = self.np_scalar((1.0 - 1.0 / k ** 3) / (12 * (k - 1)))
        return np.where(np.arange(self.NODES_PER_ELEMENT) < 8, vertex, edge).astype(
            self.np_scalar)

    def trace_node_quadrature_weights(self) -> np.ndarray:
        k = self.ORDER
        vertex = self.np_scalar(0.25 / (k * k))
        edge = self.np_scalar((0.25 - 0.25 / (k * k)) / (k - 1))
        return np.where(np.arange(self.NODES_PER_ELEMENT) < 8, vertex, edge).astype(
            self.np_scalar)


@cache
def _serendipity_funcs(order: int, coords: tuple, scales: tuple, radius: float, rscale: float,
                       scalar: Any) -> tuple[Any, Any]:
    n = order + 1
    NodeVec = vec_type(n, scalar)
    X = NodeVec(*[float(c) for c in coords])
    S = NodeVec(*[float(c) for c in scales])
    vec3 = vec_type(3, scalar)
    one, half, two = scalar(1.0), scalar(0.5), scalar(2.0)

    @kc.func
    def node_frame(node: int):
        # (is an edge node, axis, position: the vertex's (x, y, z) ends, or the edge node's
        # (index along the edge, end across it, end across it) in the edge's frame)
        if node < 8:
            return False, 0, kc.vec3i(node // 4, (node // 2) % 2, node % 2)
        edge = (node - 8) // 3
        axis = node - 8 - 3 * edge
        along = edge // 4
        offset = edge - 4 * along
        return True, axis, kc.vec3i(along + 1, offset // 2, offset % 2)

    @kc.func
    def to_local(axis: int, v: Any):
        return vec3(v[axis], v[(axis + 1) % 3], v[(axis + 2) % 3])

    @kc.func
    def to_world(axis: int, v: Any):
        return vec3(v[(2 * axis) % 3], v[(2 * axis + 1) % 3], v[(2 * axis + 2) % 3])

    @kc.func
    def linear_1d(x: Any, end: int):
        # (value, slope) of the linear function 1 at the node's end of [0, 1], 0 at the other
        return kc.where(end == 0, one - x, x), kc.where(end == 0, scalar(-1.0), scalar(1.0))

    @kc.func
    def lagrange_1d(x: Any, node: int):
        value = S[node]
        slope = scalar(0.0)
        for k in range(n):
            if k != node:
                slope = slope * (x - X[k]) + value
                value = value * (x - X[k])
        return value, slope

    @kc.func
    def vertex_weight(coords: Any, ends: kc.vec3i):
        cx, gx = linear_1d(coords[0], ends[0])
        cy, gy = linear_1d(coords[1], ends[1])
        cz, gz = linear_1d(coords[2], ends[2])
        if kc.static(order == 2):
            w = cx + cy + cz - scalar(3.0) + X[1]
            return (cx * cy * cz * w * S[0],
                    vec3(cy * cz * gx * (w + cx), cz * cx * gy * (w + cy),
                         cx * cy * gz * (w + cz)) * S[0])
        w = ((cx - half) * (cx - half) + (cy - half) * (cy - half) + (cz - half) * (cz - half)
             - scalar(radius))
        return (cx * cy * cz * w * scalar(rscale),
                vec3(cy * cz * gx * (w + (two * cx - one) * cx),
                     cz * cx * gy * (w + (two * cy - one) * cy),
                     cx * cy * gz * (w + (two * cz - one) * cz)) * scalar(rscale))

    @kc.func
    def edge_weight(coords: Any, axis: int, node: kc.vec3i):
        local = to_local(axis, coords)
        w_long, g_long = linear_1d(local[1], node[1])
        w_lat, g_lat = linear_1d(local[2], node[2])
        w_alt, g_alt = lagrange_1d(local[0], node[0])
        return (w_long * w_lat * w_alt,
                to_world(axis, vec3(g_alt * w_long * w_lat, w_alt * g_long * w_lat,
                                    w_alt * w_long * g_lat)))

    @kc.func
    def weight(coords: Any, node: int):
        on_edge, axis, position = node_frame(node)
        if on_edge:
            w, g = edge_weight(coords, axis, position)
            return w
        w, g = vertex_weight(coords, position)
        return w

    @kc.func
    def weight_gradient(coords: Any, node: int):
        on_edge, axis, position = node_frame(node)
        if on_edge:
            w, g = edge_weight(coords, axis, position)
            return g
        w, g = vertex_weight(coords, position)
        return g

    return weight, weight_gradient
