"""kc.Mesh and kc.Bvh themselves: refit and new points, mesh_eval_* / mesh_get_*, empty
meshes, the BVH topology; the query kernels' CUDA-C compiled by NVRTC and run through the
host harness (and on a GPU when there is one); host-side and in-kernel errors, with their
positions. The queries themselves, against NumPy and Warp, are in
`tests/test_mesh_queries.py`; the shared kernels and references in `tests/mesh_kernels.py`.
"""

from __future__ import annotations

import inspect
import shutil

import numpy as np
import pytest

import kernelc as kc
from kernelc.spatial.bvh import build_topology
from tests.conftest import poisoned
from tests.mesh_kernels import (
    _bumpy_sphere,
    _closest,
    _corners,
    _make_mesh,
    _ray_hits,
    _run_lists,
    _run_points,
    _run_rays,
    _soup,
    _winding,
    list_queries,
    ray_queries,
    sphere_mesh,
)

# ---- kernels -------------------------------------------------------------------------------


@kc.kernel
def eval_queries(mesh: kc.uint64, faces: kc.array(dtype=int), bary: kc.array(dtype=kc.vec2),
                 vecs: kc.array(dtype=kc.vec3, ndim=2), ints: kc.array(dtype=int, ndim=2)):
    i = kc.tid()
    f = faces[i]
    vecs[i, 0] = kc.mesh_eval_position(mesh, f, bary[i][0], bary[i][1])
    vecs[i, 1] = kc.mesh_eval_velocity(mesh, f, bary[i][0], bary[i][1])
    vecs[i, 2] = kc.mesh_eval_face_normal(mesh, f)
    vecs[i, 3] = kc.mesh_get_point(mesh, 3 * f + 1)
    vecs[i, 4] = kc.mesh_get_velocity(mesh, 3 * f + 2)
    ints[i, 0] = kc.mesh_get_index(mesh, 3 * f)


@kc.kernel
def mesh_arrays(mesh: kc.uint64, points: kc.array(dtype=kc.vec3),
                velocities: kc.array(dtype=kc.vec3), indices: kc.array(dtype=int),
                sizes: kc.array(dtype=int)):
    i = kc.tid()
    m = kc.mesh_get(mesh)
    points[i] = m.points[i]
    if m.velocities.shape[0] > 0:
        velocities[i] = m.velocities[i]
    indices[i] = m.indices[i]
    if i == 0:
        sizes[0] = m.points.shape[0]
        sizes[1] = m.velocities.shape[0]
        sizes[2] = m.indices.shape[0]


@pytest.fixture(scope="module")
def sphere():
    return sphere_mesh()


# ---- refit, evaluation, empty meshes --------------------------------------------------------


def test_refit_and_new_points_follow_the_geometry(rng, sphere):
    points, tris = _bumpy_sphere()
    mesh = _make_mesh(points, tris)
    q = rng.uniform(-2, 2, (128, 3)).astype(np.float32)
    for step in range(2):
        moved = (points * np.float32(1.5) + np.float32([0.3, -0.2, 0.1])).astype(np.float32)
        if step == 0:
            mesh.points.assign(moved)  # in place, then refit
            mesh.refit()
        else:
            mesh.points = kc.array(moved[:, [1, 0, 2]], dtype=kc.vec3)  # the setter refits
            moved = moved[:, [1, 0, 2]]
        faces, bary, signs = _run_points(mesh, q, 1.0e6)
        dist = _closest(q, *_corners(moved, tris))[0]
        np.testing.assert_allclose(dist[np.arange(128), faces[:, 0]], dist.min(1), atol=1e-5)
        ints, floats, _ = _run_rays(mesh, q, -q, 1.0e6)
        t_all = _ray_hits(q, -q, *_corners(moved, tris))[0]
        np.testing.assert_allclose(floats[:, 0], t_all.min(1), rtol=1e-5)


def test_eval_and_get(rng):
    points, tris = _soup(rng, 50)
    velocities = rng.normal(size=points.shape).astype(np.float32)
    faces = rng.integers(0, 50, 40).astype(np.int32)
    bary = rng.uniform(0, 0.5, (40, 2)).astype(np.float32)
    a, b, c = _corners(points, tris)
    va, vb, vc = _corners(velocities, tris)
    for with_velocities in (True, False):
        mesh = _make_mesh(points, tris, velocities=kc.array(velocities, dtype=kc.vec3)
                          if with_velocities else None)
        vecs, ints = poisoned((40, 5, 3), np.float32), poisoned((40, 1), np.int32)
        vecs = kc.array(vecs.numpy(), dtype=kc.vec3)
        kc.launch(eval_queries, 40, [mesh.id, kc.array(faces), kc.array(bary, dtype=kc.vec2),
                                     vecs, ints])
        out, f, (u, v) = vecs.numpy(), faces, bary.T[:, :, None]
        np.testing.assert_allclose(out[:, 0], u * a[f] + v * b[f] + (1 - u - v) * c[f], atol=1e-5)
        n = np.cross(b[f] - a[f], c[f] - a[f])
        np.testing.assert_allclose(out[:, 2], n / np.linalg.norm(n, axis=1)[:, None], atol=1e-5)
        np.testing.assert_allclose(out[:, 3], b[f], atol=0)
        np.testing.assert_array_equal(ints.numpy()[:, 0], tris[f, 0])
        if with_velocities:
            np.testing.assert_allclose(out[:, 1], u * va[f] + v * vb[f] + (1 - u - v) * vc[f],
                                       atol=1e-5)
            np.testing.assert_allclose(out[:, 4], vc[f], atol=0)
        else:
            assert (out[:, [1, 4]] == 0).all()


def test_mesh_get_views_the_mesh_arrays(rng):
    points, tris = _soup(rng, 20)  # 60 points, 60 indices
    tris = rng.permutation(tris.ravel()).reshape(tris.shape).astype(np.int32)
    velocities = rng.normal(size=points.shape).astype(np.float32)
    n = len(points)
    for with_velocities in (True, False):
        mesh = _make_mesh(points, tris, velocities=kc.array(velocities, dtype=kc.vec3)
                          if with_velocities else None)
        got_points = kc.array(poisoned((n, 3), np.float32).numpy(), dtype=kc.vec3)
        got_velocities = kc.array(poisoned((n, 3), np.float32).numpy(), dtype=kc.vec3)
        got_indices, sizes = poisoned(n, np.int32), poisoned(3, np.int32)
        kc.launch(mesh_arrays, n, [mesh.id, got_points, got_velocities, got_indices, sizes])
        np.testing.assert_array_equal(got_points.numpy(), points)
        np.testing.assert_array_equal(got_indices.numpy(), tris.ravel()[:n])
        np.testing.assert_array_equal(sizes.numpy(), [n, n if with_velocities else 0,
                                                      3 * len(tris)])
        if with_velocities:
            np.testing.assert_array_equal(got_velocities.numpy(), velocities)
        else:
            assert np.isnan(got_velocities.numpy()).all()


def test_empty_mesh_and_bvh_find_nothing(rng):
    mesh = kc.Mesh(kc.zeros(3, dtype=kc.vec3), kc.zeros(0, dtype=kc.int32))
    bvh = kc.Bvh(kc.zeros(0, dtype=kc.vec3), kc.zeros(0, dtype=kc.vec3))
    q = rng.uniform(-1, 1, (8, 3)).astype(np.float32)
    faces, _, _ = _run_points(mesh, q, 1.0e6)
    assert (faces == np.iinfo(np.int32).min + 3).all()
    ints, _, _ = _run_rays(mesh, q, q, 1.0e6)
    assert (ints[:, 2:] == 0).all()
    _, counts = _run_lists(mesh, bvh, q - 1, q + 1, 1.0)
    assert (counts == 0).all()


@pytest.mark.parametrize("kind", ["uniform", "clustered", "identical"])
@pytest.mark.parametrize("leaf_size", [1, 4])
def test_topology_is_depth_first_and_bounded(rng, kind, leaf_size):
    n = 5000
    if kind == "uniform":
        centres = rng.uniform(-1, 1, (n, 3))
    elif kind == "clustered":  # ever denser clusters: Morton splits alone would go deep
        centres = np.cumprod(np.full((n, 3), 0.5), axis=0) * rng.uniform(0.5, 1, (n, 3))
    else:
        centres = np.zeros((n, 3))
    top = build_topology(centres - 1e-3, centres + 1e-3, leaf_size)
    info, count = top.info, top.info[:, 1]
    assert top.depth <= 62 and info[:, 3].max() == top.depth
    assert info[0, 2] == len(info) and (count <= leaf_size).all()
    slots = np.concatenate([np.arange(s, s + c) for s, c in info[count > 0, :2]])
    np.testing.assert_array_equal(np.sort(slots), np.arange(n))
    assert sorted(top.prims) == list(range(n))
    inner = np.flatnonzero(count == 0)
    np.testing.assert_array_equal(info[inner + 1, 2], info[inner, 0])  # left subtree ends at right
    np.testing.assert_array_equal(info[info[inner, 0], 2], info[inner, 2])


# ---- CUDA-C: compiled by NVRTC and run through the host harness ----------------------------


@kc.kernel
def signed_distance(mesh: kc.uint64, points: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    i = kc.tid()
    r = kc.mesh_query_point_sign_normal(mesh, points[i], 1.0e6)
    if r.result:
        out[i] = r.sign * kc.length(kc.mesh_eval_position(mesh, r.face, r.u, r.v) - points[i])


def _cuda_source(kernel):
    from kernelc.codegen.cuda import CudaOptions, emit_cuda

    return emit_cuda(kernel.get_ir(kernel.param_types), CudaOptions())


@pytest.mark.parametrize("kernel", [signed_distance, ray_queries, list_queries, eval_queries,
                                    mesh_arrays])
def test_query_kernels_compile_with_nvrtc(kernel):
    pytest.importorskip("cuda.bindings.nvrtc")
    from kernelc.codegen import nvrtc

    source = _cuda_source(kernel)
    image, fmt = nvrtc.compile_cuda(source.text, 80, name=source.kernel)
    assert fmt == "cubin" and source.entry.encode() in image


def test_query_cuda_c_runs_in_host_harness(rng, sphere):
    import cuda_harness

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    from kernelc.codegen.cuda_layout import ArrayArg

    points, tris, mesh = sphere  # a CPU mesh: host pointers the harness reads
    q = rng.uniform(-1.5, 1.5, (200, 3)).astype(np.float32)
    out = np.full(200, np.nan, np.float32)
    host = cuda_harness.build(_cuda_source(signed_distance))
    host.launch(200, [mesh.id, ArrayArg(q.ctypes.data, (200,), (12,)), out], workers=2)
    dist = np.sqrt(_closest(q, *_corners(points, tris))[0].min(1))
    inside = _winding(q, *_corners(points, tris)) > 0.5
    np.testing.assert_allclose(out, np.where(inside, -dist, dist), atol=1e-5)
    cpu = poisoned(200, np.float32)
    kc.launch(signed_distance, 200, [mesh.id, kc.array(q, dtype=kc.vec3), cpu])
    np.testing.assert_array_equal(out, cpu.numpy())


@pytest.mark.cuda
def test_gpu_queries_match_the_cpu(rng):
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    points, tris = _bumpy_sphere()
    q = rng.uniform(-1.5, 1.5, (4096, 3)).astype(np.float32)
    results = []
    for device in ("cpu", "cuda:0"):
        mesh = kc.Mesh(kc.array(points, dtype=kc.vec3, device=device),
                       kc.array(tris.ravel(), dtype=kc.int32, device=device))
        out = kc.full(4096, np.nan, dtype=float, device=device)
        kc.launch(signed_distance, 4096, [mesh.id, kc.array(q, dtype=kc.vec3, device=device),
                                          out], device=device)
        results.append(out.numpy())
    np.testing.assert_allclose(results[0], results[1], atol=1e-6)


# ---- errors --------------------------------------------------------------------------------


def test_host_side_errors():
    pts = kc.zeros(4, dtype=kc.vec3)
    idx = kc.array([0, 1, 2], dtype=kc.int32)
    with pytest.raises(TypeError, match="array of kc.vec3"):
        kc.Mesh(kc.zeros(4, dtype=kc.vec3d), idx)
    with pytest.raises(TypeError, match="kc.int32"):
        kc.Mesh(pts, kc.array([0, 1, 2], dtype=kc.int64))
    with pytest.raises(ValueError, match="three per face"):
        kc.Mesh(pts, kc.array([0, 1], dtype=kc.int32))
    with pytest.raises(ValueError, match=r"lie in \[0, 4\)"):
        kc.Mesh(pts, kc.array([0, 1, 4], dtype=kc.int32))
    with pytest.raises(ValueError, match="one per point"):
        kc.Mesh(pts, idx, velocities=kc.zeros(3, dtype=kc.vec3))
    with pytest.raises(ValueError, match="unknown BVH constructor"):
        kc.Mesh(pts, idx, bvh_constructor="octree")
    mesh = kc.Mesh(pts, idx)
    with pytest.raises(ValueError, match="shape"):
        mesh.points = kc.zeros(5, dtype=kc.vec3)
    with pytest.raises(ValueError, match="as many lowers as uppers"):
        kc.Bvh(pts, kc.zeros(3, dtype=kc.vec3))
    with pytest.raises(ValueError, match="leaf_size"):
        kc.Bvh(pts, pts, leaf_size=0)
    with pytest.raises(RuntimeError, match="inside a kernel"):
        kc.mesh_query_point(mesh.id, kc.vec3(), 1.0)


@kc.kernel
def bad_id(mesh: float, p: kc.vec3):
    kc.mesh_query_point(mesh, p, 1.0)  # error: mesh


@kc.kernel
def bad_point(mesh: kc.uint64, p: kc.vec3d):
    kc.mesh_query_ray(mesh, p, kc.vec3(1.0, 0.0, 0.0), 1.0)  # error: p


@kc.kernel
def bad_out_type(mesh: kc.uint64, p: kc.vec3):
    inside = int(0)
    face = int(0)
    u = float(0.0)
    v = float(0.0)
    kc.mesh_query_point(mesh, p, 1.0, inside, face, u, v)  # error: inside


@kc.kernel
def bad_out_expr(mesh: kc.uint64, p: kc.vec3):
    u = float(0.0)
    v = float(0.0)
    kc.mesh_query_point_no_sign(mesh, p, 1.0, int(0), u, v)  # error: int(0)


@kc.kernel
def bad_query(mesh: kc.uint64, p: kc.vec3):
    q = kc.bvh_query_aabb(mesh, p, p)
    index = int(0)
    while kc.mesh_query_aabb_next(q, index):  # error: q
        pass


@kc.kernel
def bad_count(mesh: kc.uint64, p: kc.vec3):
    kc.mesh_query_aabb(mesh, p)  # error: kc


@kc.kernel
def bad_keyword(mesh: kc.uint64, p: kc.vec3):
    kc.mesh_query_ray(mesh, p, p, 1.0, rot=0)  # error: 0


@pytest.mark.parametrize("kernel, message", [
    (bad_id, "takes the mesh or BVH as its uint64 id"),
    (bad_point, "'start' of mesh_query_ray() must be a vec3"),
    (bad_out_type, "'inside' of mesh_query_point() must be a float32 variable"),
    (bad_out_expr, "pass a variable"),
    (bad_query, "mesh_query_aabb_next() needs a query from mesh_query_aabb/sphere()"),
    (bad_count, "mesh_query_aabb() takes mesh_query_aabb(id, low, high)"),
    (bad_keyword, "unexpected argument 'rot'"),
])
def test_kernel_errors_point_at_the_argument(kernel, message):
    lines, first = inspect.getsourcelines(kernel.func)
    line = next(first + k for k, text in enumerate(lines) if "# error:" in text)
    code, marker = lines[line - first].split("# error: ")
    column = code.rindex(marker.strip()) + 1
    with pytest.raises(kc.KernelError) as err:
        kc.launch(kernel, 1, [1, kernel.param_types[1]()])
    text = str(err.value)
    assert message in text
    assert f"test_mesh.py:{line}:{column}" in text and "^" in text
