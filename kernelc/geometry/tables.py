"""Lookup tables of the iso-surface extractors, and how they are derived.

Marching cubes uses the classic triangle table of Lorensen & Cline as published by Paul
Bourke (public domain): corner `c` of a cell sits at `CUBE_CORNER_OFFSETS[c]`, edge `e`
joins the corners `EDGE_TO_CORNERS[e]`, and a cell whose corners `c` with a value at or
above the threshold set bit `c` of its case lists its triangles as edge numbers. The table
is kept as one string of hex digits (an edge number each) per case; the flat forms that
Warp exposes (`CASE_TO_TRI_RANGE`, `TRI_LOCAL_INDICES`) are built from it.

Surface nets (OpenVDB's uniform mesher, which Warp's follows) needs, per sign
configuration, the grouping of a cell's crossing edges into the surface sheets that pass
through the cell (`SN_EDGE_GROUPS`) and the face, if any, whose ambiguity a neighbour may
resolve the other way (`SN_AMBIGUOUS_FACE`). Both are derived here rather than written out:
see `_edge_groups` and `_ambiguous_face`.
"""

from __future__ import annotations

# ---- marching cubes ----------------------------------------------------------------------

# Corner c of a cell, as an (x, y, z) offset from the cell's first node: bit c of a case.
CUBE_CORNER_OFFSETS: tuple[tuple[int, int, int], ...] = (
    (0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0),
    (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1),
)

# The two corners each of the 12 cell edges joins (the lower corner first).
EDGE_TO_CORNERS: tuple[tuple[int, int], ...] = (
    (0, 1), (1, 2), (3, 2), (0, 3),
    (4, 5), (5, 6), (7, 6), (4, 7),
    (0, 4), (1, 5), (2, 6), (3, 7),
)

# The triangles of each case, three hex digits (edge numbers) per triangle.
_TRIANGLES: tuple[str, ...] = (
    "", "083", "019", "183981", "12a",                                                        # 0
    "08312a", "92a029", "2832a8a98", "3b2", "0b28b0",                                         # 5
    "19023b", "1b219b98b", "3a1ba3", "0a108a8ba", "3903b9ba9",                                # 10
    "98aa8b", "478", "430734", "019847", "419471731",                                         # 15
    "12a847", "34730412a", "92a902847", "2a9297273794", "8473b2",                             # 20
    "b47b24204", "90184723b", "47b94b9b2921", "3a13ba784", "1ba14b1047b4",                    # 25
    "47890b9bab03", "47b4b99ba", "954", "954083", "054150",                                   # 30
    "854835315", "12a954", "30812a495", "52a542402", "2a5325354348",                          # 35
    "95423b", "0b208b495", "05401523b", "21525828b485", "a3ba13954",                          # 40
    "4950818a18ba", "54050b5bab03", "54858aa8b", "978579", "930953573",                       # 45
    "078017157", "153357", "978957a12", "a12950530573", "802825857a52",                       # 50
    "2a5253357", "7957893b2", "95797292027b", "23b018178157", "b21b17715",                    # 55
    "958857a13a3b", "5705097b010aba0", "ba0b03a50807570", "ba57b5", "a65",                    # 60
    "0835a6", "9015a6", "1831985a6", "165261", "165126308",                                   # 65
    "965906026", "598582526328", "23ba65", "b08b20a65", "01923b5a6",                          # 70
    "5a61929b298b", "63b653513", "08b0b50515b6", "3b6036065059", "65969bb98",                 # 75
    "5a6478", "43047365a", "1905a6847", "a65197173794", "612651478",                          # 80
    "125526304347", "847905065026", "739794329596269", "3b2784a65", "5a647242027b",           # 85
    "01947823b5a6", "9219b294b7b45a6", "8473b53515b6", "51b5b610b7b404b", "059065036b63847",  # 90
    "65969b4797b9", "a4964a", "4a649a083", "a01a60640", "83181686461a",                       # 95
    "149124264", "308129249264", "024426", "832824426", "a49a64b23",                          # 100
    "08228b49a4a6", "3b201606461a", "64161a48121b8b1", "964936913b63", "8b1810b61914641",     # 105
    "3b6360064", "648b68", "7a678a89a", "0730a709a67a", "a671a7178180",                       # 110
    "a67a71173", "126168189867", "269291679093739", "780706602", "732672",                    # 115
    "23ba68a89867", "20727b09767a9a7", "1801781a767a23b", "b21b17a61671", "896867916b63136",  # 120
    "091b67", "7807063b0b60", "7b6", "76b", "308b76",                                         # 125
    "019b76", "819831b76", "a126b7", "12a3086b7", "2902a96b7",                                # 130
    "6b72a3a83a98", "723627", "708760620", "276237019", "162186198876",                       # 135
    "a76a17137", "a7617a187108", "03707a0a96a7", "76a7a88a9", "684b86",                       # 140
    "36b306046", "86b846901", "946963931b36", "6846b82a1", "12a30b06b046",                    # 145
    "4b846b0292a9", "a93a32943b36463", "823842462", "042462", "190234246438",                 # 150
    "194142246", "8138618466a1", "a10a06604", "4634386a3039a93", "a946a4",                    # 155
    "49576b", "083495b76", "50154076b", "b76834354315", "954a1276b",                          # 160
    "6b712a083495", "76b54a42a402", "348354325a52b76", "723762549", "954086062687",           # 165
    "362376150540", "628687218485158", "954a16176137", "16a176107870954", "40a4a503a6a737a",  # 170
    "76a7a854a48a", "6956b9b89", "36b063056095", "0b805b01556b", "6b3635531",                 # 175
    "12a95b9b8b56", "0b306b09656912a", "b85b56805a52025", "6b36352a3a53", "589528562382",     # 180
    "956960062", "158180568382628", "156216", "13616a386569896", "a10a06950560",              # 185
    "03856a", "a56", "b5a75b", "b5ab75830", "5b75ab190",                                      # 190
    "a75ab7981831", "b12b71751", "08312717572b", "9759279022b7", "75272b592328982",           # 195
    "25a235375", "820852875a25", "9015a35373a2", "982921872a25752", "135375",                 # 200
    "087071175", "903935537", "987597", "5845a8ab8", "5045b05abb30",                          # 205
    "01984a8aba45", "ab4a45b34941314", "2512852b8458", "04b0b345b2b151b", "0250592b5458b85",  # 210
    "9452b3", "25a352345384", "5a2524420", "3a235a385458019", "5a2524192942",                 # 215
    "845853351", "045105", "845853905035", "945", "4b749b9ab",                                # 220
    "0834979b79ab", "1ab1b414074b", "3143481a474bab4", "4b79b492b912", "9749b791b2b1083",     # 225
    "b74b42240", "b74b42834324", "29a279237749", "9a7974a27870207", "37a3a274a1a040a",        # 230
    "1a2874", "491417713", "491417081871", "403743", "487",                                   # 235
    "9a8ab8", "30939bb9a", "01a0a88ab", "31ab3a", "12b1b99b8",                                # 240
    "30939b1292b9", "02b80b", "32b", "23828aa89", "9a2092",                                   # 245
    "23828a0181a8", "1a2", "138918", "091", "038",                                            # 250
    "",                                                                                       # 255
)


def _flatten() -> tuple[tuple[int, ...], tuple[int, ...]]:
    ranges, edges = [0], []
    for row in _TRIANGLES:
        edges.extend(int(digit, 16) for digit in row)
        ranges.append(len(edges))
    return tuple(ranges), tuple(edges)


# CASE_TO_TRI_RANGE[c]:CASE_TO_TRI_RANGE[c + 1] is case c's slice of TRI_LOCAL_INDICES.
CASE_TO_TRI_RANGE, TRI_LOCAL_INDICES = _flatten()


def _edge_nodes(corners: tuple[tuple[int, int, int], ...],
                edges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int, int, int], ...]:
    """Each edge as (dx, dy, dz, axis): its lower node's offset in the cell and the axis
    along which it runs, i.e. which of that node's three lattice edges it is."""
    rows = []
    for a, b in edges:
        axis = next(d for d in range(3) if corners[a][d] != corners[b][d])
        rows.append((*corners[a], axis))
    return tuple(rows)


MC_EDGE_NODES = _edge_nodes(CUBE_CORNER_OFFSETS, EDGE_TO_CORNERS)


# ---- surface nets ------------------------------------------------------------------------

# OpenVDB's corner numbering: marching cubes' with the y and z axes swapped. A corner sets
# bit c of a sign configuration when its value is below the threshold ("inside"). The 12
# edges pair the same corner numbers as EDGE_TO_CORNERS.
SN_CORNER_OFFSETS: tuple[tuple[int, int, int], ...] = tuple(
    (x, z, y) for x, y, z in CUBE_CORNER_OFFSETS)
SN_EDGE_TO_CORNERS = EDGE_TO_CORNERS
SN_EDGE_NODES = _edge_nodes(SN_CORNER_OFFSETS, SN_EDGE_TO_CORNERS)

# The six faces of a cell, numbered as OpenVDB numbers them (1-6), each as its corners in
# cyclic order, and the (di, dj, dk) step to the neighbour cell across it.
SN_FACES: dict[int, tuple[tuple[int, ...], tuple[int, int, int]]] = {
    1: ((0, 1, 5, 4), (0, 0, -1)),
    2: ((1, 2, 6, 5), (1, 0, 0)),
    3: ((3, 2, 6, 7), (0, 0, 1)),
    4: ((0, 3, 7, 4), (-1, 0, 0)),
    5: ((0, 1, 2, 3), (0, -1, 0)),
    6: ((4, 5, 6, 7), (0, 1, 0)),
}
# The face across which the neighbour sees face f of this cell.
SN_OPPOSITE_FACE = {1: 3, 2: 4, 3: 1, 4: 2, 5: 6, 6: 5}


def _edge_between(a: int, b: int) -> int:
    return next(e for e, pair in enumerate(SN_EDGE_TO_CORNERS) if set(pair) == {a, b})


def _face_links(signs: int) -> tuple[list[list[int]], list[int]]:
    """The crossing edges that the surface joins across each face, and the ambiguous faces.

    On a face with two crossing edges the surface's trace joins them. On a face with four
    (two inside corners on a diagonal) the trace is ambiguous; the table joins the inside
    corners, i.e. the trace cuts off each outside corner.
    """
    inside = [(signs >> c) & 1 for c in range(8)]
    links: list[list[int]] = [[] for _ in range(12)]
    ambiguous = []
    for face, (cycle, _) in SN_FACES.items():
        crossing = [_edge_between(cycle[i], cycle[(i + 1) % 4]) for i in range(4)
                    if inside[cycle[i]] != inside[cycle[(i + 1) % 4]]]
        pairs = [crossing] if len(crossing) == 2 else []
        if len(crossing) == 4:
            ambiguous.append(face)
            pairs = [(_edge_between(cycle[i - 1], c), _edge_between(c, cycle[(i + 1) % 4]))
                     for i, c in enumerate(cycle) if not inside[c]]
        for a, b in pairs:
            links[a].append(b)
            links[b].append(a)
    return links, ambiguous


def _edge_groups(signs: int) -> tuple[int, ...]:
    """Row `signs` of SN_EDGE_GROUPS: the number of groups, then each edge's group (1-based;
    0 where the edge does not cross).

    A group is one closed trace of the surface around the cell's faces. Groups are numbered
    in the order in which the triangle table lists the complementary case's triangles
    (the numbering OpenVDB's table has, which fixes the order of Warp's vertices).
    """
    links, _ = _face_links(signs)
    group = [0] * 12
    order = [int(digit, 16) for digit in _TRIANGLES[255 - signs]] + list(range(12))
    count = 0
    for start in order:
        if not links[start] or group[start]:
            continue
        count += 1
        stack = [start]
        while stack:
            edge = stack.pop()
            if not group[edge]:
                group[edge] = count
                stack.extend(links[edge])
    return (count, *group)


def _ambiguous_face(signs: int) -> int:
    """The face (1-6) across which a neighbour may flip this configuration, else 0.

    OpenVDB flips a cell with two or three inside corners and exactly one ambiguous face
    to its complement when the neighbour across that face is ambiguous across the same
    face, so that both cells join the face's corners the same way.
    """
    _, ambiguous = _face_links(signs)
    if len(ambiguous) == 1 and bin(signs).count("1") <= 3:
        return ambiguous[0]
    return 0


# 256 rows of 13: SN_EDGE_GROUPS[13 * signs] is the group count, then one entry per edge.
SN_EDGE_GROUPS: tuple[int, ...] = tuple(v for s in range(256) for v in _edge_groups(s))
SN_AMBIGUOUS_FACE: tuple[int, ...] = tuple(_ambiguous_face(s) for s in range(256))
