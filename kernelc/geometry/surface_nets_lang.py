"""The kernels of `IsoSurfaceNets`, written in kernelc's language.

Surface nets put one vertex in a cell per sheet of the surface that passes through it
(an *edge group* of the cell's crossing edges, `tables.SN_EDGE_GROUPS`), at the mean of
the sheet's edge crossings, and one quad around each crossing lattice edge, joining the
vertices of the four cells around it. Warp numbers vertices by cell in (i, j, k) order
(then by group) and quads by cell (then x, y, z edge); one thread per row of cells along
z walks its cells in order, so per-row counts and a scan place everything:

1. `sn_classify`: each cell's flags (below) and per row the vertices and quads.
2. (host) an inclusive scan of the rows' counts.
3. `sn_points`: each cell row writes its vertices and its cells' first vertex index.
4. `sn_faces`: each cell row writes its quads, or two triangles per quad.

Flags of a cell: bits 0-7 its sign configuration (corner c inside, `value < threshold`,
sets bit c, in OpenVDB's corner numbering), after the ambiguity correction; bit 8 corner 0
inside; bits 9-11 its own x, y, z lattice edges (from corner 0) cross; bits 12-15 which of
its groups make a vertex (those with an edge away from the grid's boundary faces, since a
boundary edge has no quad).
"""

from __future__ import annotations

import kernelc as kc

INSIDE = 0x100
X_EDGE = 0x200
Y_EDGE = 0x400
Z_EDGE = 0x800
GROUP_SHIFT = 12

# A cell's eight corner values (a func cannot take a kernel's local array).
vec8 = kc.types.vector(length=8, dtype=kc.float32)


@kc.func
def cell_signs(values: kc.array3d(dtype=float), i: int, j: int, k: int,
               threshold: float) -> int:
    signs = 0
    if values[i, j, k] < threshold:
        signs = signs | 1
    if values[i + 1, j, k] < threshold:
        signs = signs | 2
    if values[i + 1, j, k + 1] < threshold:
        signs = signs | 4
    if values[i, j, k + 1] < threshold:
        signs = signs | 8
    if values[i, j + 1, k] < threshold:
        signs = signs | 16
    if values[i + 1, j + 1, k] < threshold:
        signs = signs | 32
    if values[i + 1, j + 1, k + 1] < threshold:
        signs = signs | 64
    if values[i, j + 1, k + 1] < threshold:
        signs = signs | 128
    return signs


@kc.func
def count_bits4(bits: int) -> int:
    return (bits & 1) + ((bits >> 1) & 1) + ((bits >> 2) & 1) + ((bits >> 3) & 1)


@kc.func
def corrected_signs(values: kc.array3d(dtype=float), threshold: float,
                    ambiguous_face: kc.array(dtype=kc.int32),
                    faces: kc.array2d(dtype=kc.int32), i: int, j: int, k: int,
                    signs: int) -> int:
    """OpenVDB's fix of face ambiguities: a configuration ambiguous across one face takes
    its complement when the neighbour across that face is ambiguous across it too, so that
    both cells join the face's corners alike. Cells outside the grid never flip it."""
    face = ambiguous_face[signs]
    result = signs
    if face != 0:
        ni = i + faces[face, 0]
        nj = j + faces[face, 1]
        nk = k + faces[face, 2]
        if (ni >= 0 and ni < values.shape[0] - 1 and nj >= 0 and nj < values.shape[1] - 1
                and nk >= 0 and nk < values.shape[2] - 1):
            other = cell_signs(values, ni, nj, nk, threshold)
            if ambiguous_face[other] == faces[face, 3]:
                result = (~signs) & 255
    return result


@kc.func
def boundary_bits(i: int, j: int, k: int, nx: int, ny: int, nz: int) -> int:
    """Bit 2a: the cell is not the first along axis a; bit 2a + 1: not the last."""
    bits = 0
    if i > 0:
        bits = bits | 1
    if i + 1 < nx:
        bits = bits | 2
    if j > 0:
        bits = bits | 4
    if j + 1 < ny:
        bits = bits | 8
    if k > 0:
        bits = bits | 16
    if k + 1 < nz:
        bits = bits | 32
    return bits


@kc.kernel(enable_backward=False)
def sn_classify(values: kc.array3d(dtype=float), threshold: float,
                ambiguous_face: kc.array(dtype=kc.int32), faces: kc.array2d(dtype=kc.int32),
                edge_groups: kc.array(dtype=kc.int32), edge_need: kc.array(dtype=kc.int32),
                flags: kc.array3d(dtype=kc.int32), counts: kc.array(dtype=kc.vec2i)):
    i, j = kc.tid()
    nx = values.shape[0] - 1
    ny = values.shape[1] - 1
    nz = values.shape[2] - 1
    points = 0
    quads = 0
    for k in range(nz):
        signs = cell_signs(values, i, j, k, threshold)
        cell = 0
        if signs != 0 and signs != 255:
            # The edge and INSIDE bits come from the raw signs, the groups from the
            # corrected ones (as in OpenVDB).
            inside = signs & 1
            x_edge = inside != ((signs >> 1) & 1)
            y_edge = inside != ((signs >> 4) & 1)
            z_edge = inside != ((signs >> 3) & 1)
            if inside != 0:
                cell = cell | INSIDE
            if x_edge:
                cell = cell | X_EDGE
                if j > 0 and k > 0:
                    quads += 1
            if y_edge:
                cell = cell | Y_EDGE
                if i > 0 and k > 0:
                    quads += 1
            if z_edge:
                cell = cell | Z_EDGE
                if i > 0 and j > 0:
                    quads += 1
            signs = corrected_signs(values, threshold, ambiguous_face, faces, i, j, k, signs)
            have = boundary_bits(i, j, k, nx, ny, nz)
            groups = 0
            for edge in range(12):
                group = edge_groups[signs * 13 + 1 + edge]
                need = edge_need[edge]
                if group != 0 and (have & need) == need:
                    groups = groups | (1 << (group - 1))
            cell = cell | signs | (groups << GROUP_SHIFT)
            points += count_bits4(groups)
        flags[i, j, k] = cell
    counts[i * ny + j] = kc.vec2i(points, quads)


@kc.func
def group_point(edge_groups: kc.array(dtype=kc.int32), edges: kc.array2d(dtype=kc.int32),
                corner: vec8, signs: int, group: int, threshold: float,
                i: int, j: int, k: int, lower: kc.vec3, delta: kc.vec3) -> kc.vec3:
    """The mean, in the cell's own coordinates, of where the group's edges cross the
    threshold, placed in the grid. The sums run over the edges in table order and the mean
    multiplies by 1 / count, so that the float32 results are Warp's."""
    total = kc.vec3(0.0, 0.0, 0.0)
    samples = 0
    for edge in range(12):
        if edge_groups[signs * 13 + 1 + edge] == group:
            a = corner[edges[edge, 0]]
            t = (threshold - a) / (corner[edges[edge, 1]] - a)
            axis = edges[edge, 5]
            total = total + kc.vec3(kc.where(axis == 0, t, float(edges[edge, 2])),
                                    kc.where(axis == 1, t, float(edges[edge, 3])),
                                    kc.where(axis == 2, t, float(edges[edge, 4])))
            samples += 1
    if samples > 1:
        total = total * (1.0 / float(samples))
    local = kc.vec3(float(i) + total[0], float(j) + total[1], float(k) + total[2])
    return lower + kc.cw_mul(local, delta)


@kc.kernel
def sn_points(values: kc.array3d(dtype=float), threshold: float,
              edge_groups: kc.array(dtype=kc.int32), edges: kc.array2d(dtype=kc.int32),
              corners: kc.array2d(dtype=kc.int32), flags: kc.array3d(dtype=kc.int32),
              offsets: kc.array(dtype=kc.vec2i), counts: kc.array(dtype=kc.vec2i),
              lower: kc.vec3, delta: kc.vec3, verts: kc.array(dtype=kc.vec3), cell_first: kc.array3d(dtype=kc.int32)):
    i, j = kc.tid()
    ny = values.shape[1] - 1
    nz = values.shape[2] - 1
    row = i * ny + j
    if counts[row][0] == 0:
        return
    index = offsets[row][0] - counts[row][0]
    for k in range(nz):
        cell = flags[i, j, k]
        groups = cell >> GROUP_SHIFT
        if groups != 0:
            # Only cells with vertices are ever looked up.
            cell_first[i, j, k] = index
            signs = cell & 255
            corner = vec8()
            for c in range(8):
                corner[c] = values[i + corners[c, 0], j + corners[c, 1], k + corners[c, 2]]
            for group in range(1, edge_groups[signs * 13] + 1):
                if ((groups >> (group - 1)) & 1) != 0:
                    verts[index] = group_point(edge_groups, edges, corner, signs, group,
                                               threshold, i, j, k, lower, delta)
                    index += 1


@kc.func
def point_index(flags: kc.array3d(dtype=kc.int32), cell_first: kc.array3d(dtype=kc.int32),
                edge_groups: kc.array(dtype=kc.int32), i: int, j: int, k: int,
                edge: int) -> int:
    """The vertex of cell (i, j, k) on its edge `edge`: the cell's first vertex plus those
    of its lower-numbered groups that make one."""
    cell = flags[i, j, k]
    groups = cell >> GROUP_SHIFT
    group = edge_groups[(cell & 255) * 13 + 1 + edge]
    return cell_first[i, j, k] + count_bits4(groups & ((1 << (group - 1)) - 1))


@kc.func
def write_face(indices: kc.array(dtype=kc.int32), quads: bool, face: int, q0: int, q1: int,
               q2: int, q3: int, reverse: bool):
    """Quad `face` as given or reversed, as a quad or split along its (0, 2) diagonal."""
    a = q0
    b = q1
    c = q2
    d = q3
    if reverse:
        a = q3
        b = q2
        c = q1
        d = q0
    if quads:
        indices[4 * face + 0] = a
        indices[4 * face + 1] = b
        indices[4 * face + 2] = c
        indices[4 * face + 3] = d
    else:
        indices[6 * face + 0] = a
        indices[6 * face + 1] = b
        indices[6 * face + 2] = c
        indices[6 * face + 3] = a
        indices[6 * face + 4] = c
        indices[6 * face + 5] = d


@kc.kernel(enable_backward=False)
def sn_faces(edge_groups: kc.array(dtype=kc.int32), flags: kc.array3d(dtype=kc.int32),
             cell_first: kc.array3d(dtype=kc.int32), offsets: kc.array(dtype=kc.vec2i),
             counts: kc.array(dtype=kc.vec2i), quads: bool, indices: kc.array(dtype=kc.int32)):
    # The quad around a crossing edge joins the vertices of the four cells sharing it, in
    # a fixed turn; it faces outward for a signed distance field (Warp turns OpenVDB's
    # clockwise quads round).
    i, j = kc.tid()
    ny = flags.shape[1]
    nz = flags.shape[2]
    row = i * ny + j
    if counts[row][1] == 0:
        return
    face = offsets[row][1] - counts[row][1]
    for k in range(nz):
        cell = flags[i, j, k]
        inside = (cell & INSIDE) != 0
        if (cell & X_EDGE) != 0 and j > 0 and k > 0:
            write_face(indices, quads, face,
                       point_index(flags, cell_first, edge_groups, i, j, k, 0),
                       point_index(flags, cell_first, edge_groups, i, j - 1, k, 4),
                       point_index(flags, cell_first, edge_groups, i, j - 1, k - 1, 6),
                       point_index(flags, cell_first, edge_groups, i, j, k - 1, 2),
                       not inside)
            face += 1
        if (cell & Y_EDGE) != 0 and i > 0 and k > 0:
            write_face(indices, quads, face,
                       point_index(flags, cell_first, edge_groups, i, j, k, 8),
                       point_index(flags, cell_first, edge_groups, i, j, k - 1, 11),
                       point_index(flags, cell_first, edge_groups, i - 1, j, k - 1, 10),
                       point_index(flags, cell_first, edge_groups, i - 1, j, k, 9),
                       not inside)
            face += 1
        if (cell & Z_EDGE) != 0 and i > 0 and j > 0:
            write_face(indices, quads, face,
                       point_index(flags, cell_first, edge_groups, i, j, k, 3),
                       point_index(flags, cell_first, edge_groups, i, j - 1, k, 7),
                       point_index(flags, cell_first, edge_groups, i - 1, j - 1, k, 5),
                       point_index(flags, cell_first, edge_groups, i - 1, j, k, 1),
                       inside)
            face += 1
