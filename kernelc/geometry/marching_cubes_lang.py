"""The kernels of `IsoSurfaceMarchingCubes`, written in kernelc's language.

Warp numbers the vertices by lattice edge, in the order of (i, j, k, axis) (the edge from
node (i, j, k) along +x, +y or +z), and the triangles by cell, in (i, j, k) order and table
order within a cell. These kernels give the same numbering with one thread per *row* of
nodes or cells along z: a row walks its k in order, so a per-row count and a scan of
the rows' counts give every vertex and triangle its place without per-edge index arrays.

1. `mc_count`: per node row (i, j), its crossing edges and (for a cell row) triangles.
2. (host) an inclusive scan of those counts.
3. `mc_vertices`: each node row writes its vertices, and per node which of its edges
   have one and the index of the first.
4. `mc_faces`: each cell row writes its triangles; the vertex of an edge is its node's
   first vertex index plus the node's crossing edges along lower axes.

A value counts as inside when `value >= threshold` and an edge crosses when exactly one
end is; comparisons with NaN are false, so a NaN node never makes a vertex (as in Warp).
"""

from __future__ import annotations

import kernelc as kc


@kc.func
def crosses(a: float, b: float, threshold: float) -> int:
    # Written as two one-sided tests (not `(a >= t) != (b >= t)`) so that NaN never
    # crosses.
    result = 0
    if (a >= threshold and b < threshold) or (a < threshold and b >= threshold):
        result = 1
    return result


@kc.func
def layer_bits(values: kc.array3d(dtype=float), i: int, j: int, k: int,
               threshold: float) -> int:
    """Bits 0-3 of a case: corners (i, j), (i+1, j), (i+1, j+1), (i, j+1) of layer k."""
    bits = 0
    if values[i, j, k] >= threshold:
        bits = bits | 1
    if values[i + 1, j, k] >= threshold:
        bits = bits | 2
    if values[i + 1, j + 1, k] >= threshold:
        bits = bits | 4
    if values[i, j + 1, k] >= threshold:
        bits = bits | 8
    return bits


@kc.func
def cell_case(values: kc.array3d(dtype=float), i: int, j: int, k: int, threshold: float) -> int:
    # Both layers are read per cell: carrying the upper layer's bits to the next cell
    # makes LLVM vectorise the row loop, which runs slower here.
    return layer_bits(values, i, j, k, threshold) | (layer_bits(values, i, j, k + 1,
                                                                 threshold) << 4)


@kc.func
def edge_point(a: float, b: float, threshold: float, lower: kc.vec3, delta: kc.vec3,
               i: int, j: int, k: int, i2: int, j2: int, k2: int) -> kc.vec3:
    """Where the field crosses the threshold on the edge from node (i, j, k) (value a) to
    node (i2, j2, k2) (value b), interpolated linearly, with Warp's float32 operations."""
    t = kc.clamp((threshold - a) / (b - a), 0.0, 1.0)
    p = lower + kc.vec3(float(i) * delta[0], float(j) * delta[1], float(k) * delta[2])
    q = lower + kc.vec3(float(i2) * delta[0], float(j2) * delta[1], float(k2) * delta[2])
    return kc.lerp(p, q, t)


@kc.kernel(enable_backward=False)
def mc_count(values: kc.array3d(dtype=float), threshold: float,
             case_ranges: kc.array(dtype=kc.int32), counts: kc.array(dtype=kc.vec2i)):
    i, j = kc.tid()
    nx = values.shape[0]
    ny = values.shape[1]
    nz = values.shape[2]
    verts = 0
    for k in range(nz):
        v = values[i, j, k]
        if i + 1 < nx:
            verts += crosses(v, values[i + 1, j, k], threshold)
        if j + 1 < ny:
            verts += crosses(v, values[i, j + 1, k], threshold)
        if k + 1 < nz:
            verts += crosses(v, values[i, j, k + 1], threshold)
    tris = 0
    if i + 1 < nx and j + 1 < ny:
        for k in range(nz - 1):
            case = cell_case(values, i, j, k, threshold)
            tris += (case_ranges[case + 1] - case_ranges[case]) // 3
    counts[i * ny + j] = kc.vec2i(verts, tris)


@kc.kernel
def mc_vertices(values: kc.array3d(dtype=float), threshold: float, lower: kc.vec3,
                delta: kc.vec3, offsets: kc.array(dtype=kc.vec2i),
                counts: kc.array(dtype=kc.vec2i), verts: kc.array(dtype=kc.vec3),
                node_first: kc.array3d(dtype=kc.int32), node_mask: kc.array3d(dtype=kc.uint8)):
    # node_mask: which of a node's x, y, z edges have a vertex (bits 0-2); node_first: the
    # first of them, written only where there is one (no other node is ever looked up).
    i, j = kc.tid()
    nx = values.shape[0]
    ny = values.shape[1]
    nz = values.shape[2]
    row = i * ny + j
    if counts[row][0] == 0:
        return  # node_mask is zeroed: nothing to write in a row without vertices
    index = offsets[row][0] - counts[row][0]
    for k in range(nz):
        first = index
        mask = 0
        a = values[i, j, k]
        if i + 1 < nx:
            b = values[i + 1, j, k]
            if crosses(a, b, threshold) == 1:
                verts[index] = edge_point(a, b, threshold, lower, delta, i, j, k, i + 1, j, k)
                index += 1
                mask = mask | 1
        if j + 1 < ny:
            b = values[i, j + 1, k]
            if crosses(a, b, threshold) == 1:
                verts[index] = edge_point(a, b, threshold, lower, delta, i, j, k, i, j + 1, k)
                index += 1
                mask = mask | 2
        if k + 1 < nz:
            b = values[i, j, k + 1]
            if crosses(a, b, threshold) == 1:
                verts[index] = edge_point(a, b, threshold, lower, delta, i, j, k, i, j, k + 1)
                index += 1
                mask = mask | 4
        node_mask[i, j, k] = kc.uint8(mask)
        if mask != 0:
            node_first[i, j, k] = first


@kc.func
def edge_vertex(node_first: kc.array3d(dtype=kc.int32), node_mask: kc.array3d(dtype=kc.uint8),
                i: int, j: int, k: int, axis: int) -> int:
    """The vertex on the edge from node (i, j, k) along `axis`: the node's first vertex
    plus its crossing edges along lower axes; -1 if the edge has none (possible only with
    NaN values, where Warp's index is -1 too)."""
    mask = int(node_mask[i, j, k])
    index = -1
    if ((mask >> axis) & 1) != 0:
        index = node_first[i, j, k]
        if axis > 0:
            index += mask & 1
        if axis > 1:
            index += (mask >> 1) & 1
    return index


@kc.kernel(enable_backward=False)
def mc_faces(values: kc.array3d(dtype=float), threshold: float,
             case_ranges: kc.array(dtype=kc.int32), tri_nodes: kc.array(dtype=kc.int32),
             offsets: kc.array(dtype=kc.vec2i),
             counts: kc.array(dtype=kc.vec2i), node_first: kc.array3d(dtype=kc.int32),
             node_mask: kc.array3d(dtype=kc.uint8), indices: kc.array(dtype=kc.int32)):
    i, j = kc.tid()
    ny = values.shape[1]
    nz = values.shape[2]
    row = i * ny + j
    if counts[row][1] == 0:
        return
    out = 3 * (offsets[row][1] - counts[row][1])
    for k in range(nz - 1):
        case = cell_case(values, i, j, k, threshold)
        for slot in range(case_ranges[case], case_ranges[case + 1]):
            # The slot's edge as its node's offset in the cell (bits 0-2) and axis (3-4).
            edge = tri_nodes[slot]
            indices[out] = edge_vertex(node_first, node_mask, i + (edge & 1),
                                       j + ((edge >> 1) & 1), k + ((edge >> 2) & 1), edge >> 3)
            out += 1
