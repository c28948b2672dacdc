"""Quadrature rules on the reference triangle and tetrahedron (Warp's `Triangle` and
`Tetrahedron` rules).

Without a family, a rule is the symmetric one of the literature for the order: Hillion
(1977) for order 3 on triangles, Witherden and Vincent (2015) for triangles of higher
order, Shunn and Ham (2012) for tetrahedra up to order 6. Each is stored as symmetry
orbits of barycentric coordinates and expanded in the order Warp lists the points (point
order matters to programs that read `s.qp_index`). With a family, the rule is the
tensor-product one of the square or cube mapped by the Duffy transform.

Triangle points are barycentric (l0, l1, l2); tetrahedron points are (l1, l2, l3), the
weight of the first vertex being 1 - l1 - l2 - l3. Weights sum to 1.
"""

from itertools import combinations, permutations

from kernelc.fem.polynomial import Polynomial, quadrature_1d

# An orbit is (weight, kind, parameters, layout):
#   "S3"/"S4": the centroid;
#   "S21"(a): two coordinates a, the other 1 - 2a, at the positions `layout` lists;
#   "S111"(a, b): every permutation of (a, b, 1 - a - b), lexicographic from the sorted triple;
#   "S31"(a): three coordinates a, the fourth 1 - 3a at the positions `layout` lists;
#   "S22"(a): a at each pair of positions in turn, 1/2 - a elsewhere;
#   "S211"(a, p): two coordinates a, the others p and q = 1 - 2a - p; layout "pair" places
#       (p, q) then (q, p) on each pair of positions in turn, layout "odd" places q, for each
#       position of p in turn (3, 2, 1, 0), at the remaining positions in increasing order;
#   "points": explicit barycentric points (a rule with no symmetry).
_TRIANGLE_RULES = {
    1: [(1.0, "S3", (), None)],
    2: [(1.0 / 3.0, "S21", (1.0 / 6.0,), (0, 1, 2))],
    3: [(0.3180413817439772, "points", ((0.6663902460147014, 0.17855872826361646,
                                         0.1550510257216821),
                                        (0.17855872826361646, 0.6663902460147014,
                                         0.15505102572168206)), None),
        (0.18195861825602272, "points", ((0.280019915499074, 0.07503111022260814,
                                          0.6449489742783179),
                                         (0.07503111022260814, 0.280019915499074,
                                          0.6449489742783179)), None)],
    4: [(0.22338158967801147, "S21", (0.4459484909159649,), (2, 1, 0)),
        (0.10995174365532187, "S21", (0.09157621350977074,), (2, 1, 0))],
    5: [(0.225, "S3", (), None),
        (0.12593918054482714, "S21", (0.10128650732345634,), (2, 1, 0)),
        (0.1323941527885062, "S21", (0.4701420641051151,), (2, 1, 0))],
    6: [(0.05084490637020683, "S21", (0.06308901449150223,), (2, 1, 0)),
        (0.1167862757263794, "S21", (0.24928674517091043,), (2, 1, 0)),
        (0.08285107561837358, "S111", (0.05314504984481694, 0.3103524510337844), None)],
    8: [(0.14431560767778717, "S3", (), None),
        (0.09509163426728462, "S21", (0.4592925882927231,), (2, 1, 0)),
        (0.10321737053471824, "S21", (0.1705693077517602,), (2, 1, 0)),
        (0.03245849762319808, "S21", (0.05054722831703096,), (2, 1, 0)),
        (0.027230314174434993, "S111", (0.008394777409957588, 0.2631128296346381), None)],
}
_TRIANGLE_RULES[7] = _TRIANGLE_RULES[8]  # Warp has no order-7 rule of its own

_TET_RULES = {
    1: [(1.0, "S4", (), None)],
    2: [(0.25, "S31", (0.138196601125011,), (0, 1, 2, 3))],
    3: [(0.0476331348432089, "S31", (0.0738349017262234,), (0, 1, 2, 3)),
        (0.134911243437861, "S22", (0.406244343884051,), None)],
    4: [(0.0070670747944695, "S31", (0.0323525947272439,), (0, 1, 2, 3)),
        (0.0469986689718877, "S211", (0.0603604415251421, 0.2626825838877789), "pair"),
        (0.101936918289868, "S31", (0.309769304272862,), (3, 2, 1, 0))],
    5: [(0.0021900463965388, "S31", (0.0267367755543735,), (0, 1, 2, 3)),
        (0.0143395670177665, "S211", (0.0391022406356488, 0.1740356302468934), "pair"),
        (0.0250305395686746, "S22", (0.454754599984483,), None),
        (0.0479839333057554, "S211", (0.223201037962315, 0.503118645014598), "odd"),
        (0.093174573119534, "S4", (), None)],
    6: [(0.001037311233614, "S31", (0.0149520651530592,), (0, 1, 2, 3)),
        (0.009601664539948, "S211", (0.0340960211962615, 0.77997600844154), "pair"),
        (0.0164493976798232, "S211", (0.0462051504150017, 0.35493405606397954), "pair"),
        (0.015374776651331, "S211", (0.228190461068761, 0.5381043228880005), "odd"),
        (0.029352011837523, "S211", (0.352305260087994, 0.19618375957455902), "odd"),
        (0.0366291366405108, "S31", (0.134478334792994,), (0, 1, 2, 3))],
}


def _with_odd(size: int, base: float, odd: float, position: int) -> tuple:
    return tuple(odd if k == position else base for k in range(size))


def _expand(weight: float, kind: str, params: tuple, layout, size: int) -> list[tuple]:
    """The barycentric points of one orbit on a simplex of `size` vertices, with weights."""
    if kind in ("S3", "S4"):
        points = [(1.0 / size,) * size]
    elif kind in ("S21", "S31"):
        a = params[0]
        points = [_with_odd(size, a, 1.0 - (size - 1) * a, k) for k in layout]
    elif kind == "S111":
        a, b = params
        points = list(permutations(sorted((a, b, 1.0 - a - b))))
    elif kind == "S22":
        a = params[0]
        points = [tuple(a if k in pair else 0.5 - a for k in range(4))
                  for pair in combinations(range(4), 2)]
    elif kind == "S211":
        points = _expand_s211(*params, layout)
    else:
        points = list(params)
    return [(p, weight) for p in points]


def _expand_s211(a: float, p: float, layout: str) -> list[tuple]:
    q = 1.0 - 2.0 * a - p
    points = []
    if layout == "pair":
        for i, j in combinations(range(4), 2):
            for first, second in ((p, q), (q, p)):
                point = [a] * 4
                point[i], point[j] = first, second
                points.append(tuple(point))
        return points
    for odd in (3, 2, 1, 0):
        for k in (k for k in range(4) if k != odd):
            point = [a] * 4
            point[odd], point[k] = q, p
            points.append(tuple(point))
    return points


def _symmetric_rule(rules: dict, order: int, size: int, name: str
                    ) -> tuple[list[tuple], list[float]]:
    order = max(1, order)
    if order not in rules:
        raise NotImplementedError(f"symmetric quadrature of order {order} on {name}s is not "
                                  f"available (at most {max(rules)})")
    pairs = [pt for orbit in rules[order] for pt in _expand(*orbit, size)]
    return [p for p, _ in pairs], [w for _, w in pairs]


def triangle_quadrature(order: int, family: Polynomial | None = None
                        ) -> tuple[list[tuple[float, float, float]], list[float]]:
    """Barycentric points and weights (summing to 1) of a rule exact to `order` on triangles."""
    if family is None:
        # Orders above 8 get the order-8 rule, as in Warp.
        return _symmetric_rule(_TRIANGLE_RULES, min(order, 8), 3, "triangle")
    from kernelc.fem.element import points_per_axis

    x, w = quadrature_1d(points_per_axis(order + 1, family), family)
    x, w = [float(v) for v in x], [float(v) for v in w]
    points = [(1.0 - a - b + a * b, a, b * (1.0 - a)) for a in x for b in x]
    weights = [2.0 * wa * (1.0 - a) * wb for a, wa in zip(x, w) for wb in w]
    return points, weights


def tetrahedron_quadrature(order: int, family: Polynomial | None = None
                           ) -> tuple[list[tuple[float, float, float]], list[float]]:
    """Points (l1, l2, l3) and weights (summing to 1) of a rule exact to `order` on tetrahedra."""
    if family is None:
        points, weights = _symmetric_rule(_TET_RULES, order, 4, "tetrahedron")
        return [tuple(p[1:]) for p in points], weights
    from kernelc.fem.element import points_per_axis

    x, w = quadrature_1d(points_per_axis(order + 1, family), family)
    x, w = [float(v) for v in x], [float(v) for v in w]
    points = [(a, b * (1.0 - a), c * (1.0 - a) * (1.0 - b)) for a in x for b in x for c in x]
    weights = [6.0 * wa * wb * wc * (1.0 - a) ** 2 * (1.0 - b)
               for a, wa in zip(x, w) for b, wb in zip(x, w) for wc in w]
    return points, weights
