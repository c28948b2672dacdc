"""kernelc.fem's node and element operators (`fem.node_index`, `fem.node_*_weight*`,
`fem.at_node` of test, trial and discrete fields, `inner` / `grad` / `div` of one node,
`fem.to_inner_cell`, `fem.to_outer_cell`, `fem.to_cell_side`, `fem.element_coordinates`,
`fem.element_closest_point`, `fem.environment_index`), `fem.ExplicitQuadrature` and
`fem.interpolate` at `PicQuadrature` particles and into arrays at the nodes of a
`dest_space`, against Warp's warp.fem and on their own.

The programs of `tests/fem_nodeops_programs.py` (every geometry kind) and
`tests/fem_points_programs.py` run here with kernelc and in Warp subprocesses started when
the module's first comparison needs them: node numbers, element indices and sparsity must
be Warp's exactly, values its to float rounding. The other checks need no Warp.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from tests import fem_harness as H
from tests import fem_mesh_programs as M
from tests import fem_nodeops_programs as P
from tests import fem_points_programs as Q
from tests import fem_quadhex_programs as QH

_NAMES = list(P.GEOMETRIES)
# two subprocesses for the geometries (Warp's compiles dominate), one for the rest
_SPLIT = {"nodeops_a": _NAMES[: len(_NAMES) // 2], "nodeops_b": _NAMES[len(_NAMES) // 2:]}
_SCRIPTS = {**{part: f"""
import fem_nodeops_programs_warp as P
results = P.run_geometries({names!r})
""" for part, names in _SPLIT.items()}, "points": """
import fem_nodeops_programs_warp as P
import fem_points_programs_warp as Q
results = {"extras." + k: v for k, v in P.grid_extras().items()}
results.update({"points." + k: v for k, v in Q.run_all().items()})
"""}


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    with H.started_warp_run(tmp_path_factory, "warp_fem_nodeops", Path(P.__file__), _SCRIPTS,
                            timeout=900, helpers=[Path(M.__file__), Path(QH.__file__),
                                                  Path(Q.__file__)]) as run:
        yield run


def _part(results: dict, prefixes: tuple) -> dict:
    return {k: v for k, v in results.items() if k.startswith(prefixes)}


def test_node_and_element_operators_match_warp(warp_run):
    got = P.run_geometries(_NAMES)
    want = _part(warp_run.results(), tuple(f"{n}." for n in _NAMES))
    H.assert_results_match(got, want)


def test_extras_and_point_interpolation_match_warp(warp_run):
    got = {f"extras.{k}": v for k, v in P.grid_extras().items()}
    got.update({f"points.{k}": v for k, v in Q.run_all().items()})
    H.assert_results_match(got, _part(warp_run.results(), ("extras.", "points.")))


# ---- without Warp ---------------------------------------------------------------------------


@fem.integrand
def _nodal_checks(s: fem.Sample, domain: fem.Domain, u: fem.Field,
                  out: kc.array2d(dtype=float)):
    # partition of unity, Kronecker property at the nodes, coordinates round trip
    i = s.qp_index
    total = float(0.0)
    kron = float(0.0)
    for k in range(fem.node_count(u, s)):
        total += fem.node_inner_weight(u, s, k)
        at = fem.at_node(u, s, k)
        for m in range(fem.node_count(u, s)):
            expected = float(0.0)
            if m == k:
                expected = 1.0
            kron = kc.max(kron, kc.abs(fem.node_inner_weight(u, at, m) - expected))
    out[i, 0] = total
    out[i, 1] = kron
    back = fem.element_coordinates(domain, s.element_index, domain(s))
    out[i, 2] = kc.length(back - s.element_coords)
    closest, dist = fem.element_closest_point(domain, s.element_index, domain(s))
    out[i, 3] = kc.length(closest - s.element_coords) + dist


@pytest.mark.parametrize("make", [lambda: QH.make_quadmesh(res=(3, 2)),
                                  lambda: M.make_tetmesh(), lambda: QH.make_hexmesh()],
                         ids=["quadmesh", "tetmesh", "hexmesh"])
def test_node_weights_and_coordinates(make):
    geo = make()
    u = fem.make_polynomial_space(geo, degree=2).make_field()
    quadrature = fem.RegularQuadrature(fem.Cells(geo), order=3)
    out = kc.zeros((quadrature.total_point_count(), 4), dtype=float)
    fem.interpolate(_nodal_checks, at=quadrature, fields={"u": u}, values={"out": out})
    out = out.numpy()
    np.testing.assert_allclose(out[:, 0], 1.0, atol=2e-6)
    assert out[:, 1].max() < 2e-6
    # Warp's Newton steps stop before a step shorter than 2^-10 (on curved cells)
    assert out[:, 2].max() < 2.0 ** -10
    assert out[:, 3].max() < 2.0 ** -10


@fem.integrand
def _node_gradient_stiffness(s: fem.Sample, u: fem.Field, v: fem.Field):
    return kc.dot(fem.node_inner_weight_gradient(u, s), fem.node_inner_weight_gradient(v, s))


@fem.integrand
def _stiffness(s: fem.Sample, u: fem.Field, v: fem.Field):
    return kc.dot(fem.grad(u, s), fem.grad(v, s))


def test_node_weight_gradients_give_the_stiffness_matrix():
    geo = QH.make_quadmesh(res=(3, 2))
    space = fem.make_polynomial_space(geo, degree=2)
    cells = fem.Cells(geo)
    fields = {"u": fem.make_trial(space, domain=cells), "v": fem.make_test(space, domain=cells)}
    a = fem.integrate(_node_gradient_stiffness, fields=fields)
    b = fem.integrate(_stiffness, fields=fields)
    np.testing.assert_array_equal(a.columns.numpy()[: a.nnz], b.columns.numpy()[: b.nnz])
    np.testing.assert_allclose(a.values.numpy()[: a.nnz], b.values.numpy()[: b.nnz],
                               atol=1e-6 * float(np.abs(b.values.numpy()).max()))


@fem.integrand
def _one(s: fem.Sample):
    return 1.0


def test_explicit_quadrature_measures_and_errors():
    geo = M.make_trimesh(res=(3, 2))
    cells = fem.Cells(geo)
    rule_points, rule_weights = [np.array(a) for a in
                                 fem.element.element_quadrature(geo.reference_cell(), 2)]
    n = geo.cell_count()
    points = kc.array(np.tile(rule_points.astype(np.float32), (n, 1, 1)), dtype=kc.vec3)
    weights = kc.array(np.tile(rule_weights.astype(np.float32), (n, 1)), dtype=float)
    quadrature = fem.ExplicitQuadrature(cells, points, weights)
    assert quadrature.total_point_count() == n * len(rule_weights)
    explicit = fem.integrate(_one, quadrature=quadrature)
    regular = fem.integrate(_one, quadrature=fem.RegularQuadrature(cells, order=2))
    assert abs(explicit - regular) < 1e-6 * abs(regular)
    with pytest.raises(ValueError, match="same shape"):
        fem.ExplicitQuadrature(cells, points, kc.zeros((n, 1), dtype=float))
    with pytest.raises(NotImplementedError, match="element count"):
        fem.ExplicitQuadrature(cells, kc.zeros((n + 1, 2), dtype=kc.vec3),
                               kc.zeros((n + 1, 2), dtype=float))


@fem.integrand
def _discrete_at_node_without_node(s: fem.Sample, u: fem.Field):
    return u(fem.at_node(u, s))


@fem.integrand
def _test_node_index_with_node(s: fem.Sample, v: fem.Field):
    return float(fem.node_index(v, s, 0)) * v(s)


@fem.integrand
def _to_inner_cell_on_cells(s: fem.Sample, domain: fem.Domain, u: fem.Field):
    return u(fem.to_inner_cell(domain, s))


@fem.integrand
def _coordinates_without_point(s: fem.Sample, domain: fem.Domain):
    return fem.element_coordinates(domain, s.element_index)[0]


def test_operator_errors():
    geo = fem.Grid2D(res=kc.vec2i(2, 2))
    space = fem.make_polynomial_space(geo, degree=1)
    u = space.make_field()
    cells = fem.Cells(geo)
    with pytest.raises(kc.KernelError, match="needs the node"):
        fem.integrate(_discrete_at_node_without_node, domain=cells, fields={"u": u})
    with pytest.raises(kc.KernelError, match="take no node index"):
        fem.integrate(_test_node_index_with_node, fields={"v": fem.make_test(space)})
    with pytest.raises(kc.KernelError, match="to_inner_cell is not available"):
        fem.integrate(_to_inner_cell_on_cells, domain=cells, fields={"u": u})
    with pytest.raises(kc.KernelError, match=r"element_coordinates\(domain, element_index, x\)"):
        fem.integrate(_coordinates_without_point, domain=cells)


@fem.integrand
def _domain_indices(s: fem.Sample, domain: fem.Domain, out: kc.array2d(dtype=int)):
    out[s.qp_index, 0] = fem.element_index(domain, s.qp_index)
    out[s.qp_index, 1] = fem.element_partition_index(domain, s.element_index)
    out[s.qp_index, 2] = fem.partition_lookup(domain, fem.position(domain, s)).element_index


@fem.integrand
def _index_of_side_cells(s: fem.Sample, domain: fem.Domain):
    return float(fem.element_index(fem.cells(domain), 0))


def test_domain_indices_follow_partition_rebuilds():
    geo = fem.Grid2D(res=kc.vec2i(4, 3))
    mask = np.zeros(geo.cell_count(), dtype=np.int32)
    mask[[1, 2, 7, 11]] = 1
    partition = fem.ExplicitGeometryPartition(geo, kc.array(mask, dtype=int))
    cells = fem.Cells(partition)
    for _ in range(2):
        expected = partition.cell_indices().numpy()
        out = kc.zeros((len(expected), 3), dtype=int)
        fem.interpolate(_domain_indices, at=cells, values={"out": out})
        np.testing.assert_array_equal(out.numpy()[:, 0], expected)
        np.testing.assert_array_equal(out.numpy()[:, 1], np.arange(len(expected)))
        np.testing.assert_array_equal(out.numpy()[:, 2], expected)  # cell centres
        mask = 1 - mask
        partition.rebuild(kc.array(mask, dtype=int))
    with pytest.raises(kc.KernelError, match="not available on the cells of a side domain"):
        fem.integrate(_index_of_side_cells, domain=fem.Sides(geo))
