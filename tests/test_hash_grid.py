"""kc.HashGrid and the in-kernel query loop, against brute-force NumPy and against Warp."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import poisoned, run_warp


@kc.kernel
def count_while(grid: kc.uint64, points: kc.array(dtype=kc.vec3), radius: float,
                counts: kc.array(dtype=int), sums: kc.array(dtype=int)):
    tid = kc.tid()
    i = kc.hash_grid_point_id(grid, tid)
    p = points[i]
    query = kc.hash_grid_query(grid, p, radius)
    index = int(0)
    c = int(0)
    s = int(0)
    while kc.hash_grid_query_next(query, index):
        if kc.length(points[index] - p) <= radius:
            c += 1
            s += index
    counts[i] = c
    sums[i] = s


@kc.kernel
def count_for(grid: kc.uint64, points: kc.array(dtype=kc.vec3), radius: float,
              counts: kc.array(dtype=int)):
    i = kc.tid()
    p = points[i]
    c = int(0)
    for index in kc.hash_grid_query(grid, p, radius):
        if index == i:
            continue  # `continue` advances the query
        if kc.length(points[index] - p) <= radius:
            c += 1
    counts[i] = c


@kc.kernel
def visit_order(grid: kc.uint64, points: kc.array(dtype=kc.vec3), radius: float,
                order_hash: kc.array(dtype=kc.uint32), weighted: kc.array(dtype=float),
                candidates: kc.array(dtype=int)):
    # Order-sensitive results: equal to Warp's only if the same points come in the same order.
    i = kc.tid()
    p = points[i]
    h = kc.uint32(2166136261)
    w = float(0.0)
    n = int(0)
    query = kc.hash_grid_query(grid, p, radius)
    index = int(0)
    while kc.hash_grid_query_next(query, index):
        h = (h ^ kc.uint32(index)) * kc.uint32(16777619)
        w = w * 0.5 + kc.length(points[index] - p)
        n += 1
    order_hash[i] = h
    weighted[i] = w
    candidates[i] = n


@kc.kernel
def sorted_ids(grid: kc.uint64, out: kc.array(dtype=int)):
    i = kc.tid()
    out[i] = kc.hash_grid_point_id(grid, i)


@kc.kernel
def count_f64(grid: kc.uint64, points: kc.array(dtype=kc.vec3d), radius: kc.float64,
              counts: kc.array(dtype=int)):
    i = kc.tid()
    p = points[i]
    c = int(0)
    for index in kc.hash_grid_query(grid, p, radius):
        if kc.length(points[index] - p) <= radius:
            c += 1
    counts[i] = c


def _points(rng, n, scale=10.0, dtype=np.float32):
    return ((rng.random((n, 3)) - 0.5) * scale).astype(dtype)  # negative coordinates too


def _brute(pts, radius, exclude_self=False):
    d = np.linalg.norm(pts[:, None, :].astype(np.float64) - pts[None, :, :], axis=-1)
    near = d <= radius
    if exclude_self:
        np.fill_diagonal(near, False)
    return near


@pytest.mark.parametrize("dims", [(16, 16, 16), (3, 2, 5)])  # (3, 2, 5): cells wrap and collide
@pytest.mark.parametrize("query_radius", [0.7, 1.9])  # build width 0.7: bigger queries too
def test_neighbours_match_brute_force(rng, dims, query_radius):
    pts = _points(rng, 1500)
    grid = kc.HashGrid(*dims)
    points = kc.array(pts, dtype=kc.vec3)
    grid.build(points, 0.7)
    # kernel distances are float32: count on pairs clear of the boundary only
    d = np.linalg.norm(pts[:, None, :].astype(np.float64) - pts[None, :, :], axis=-1)
    assert not (np.abs(d - query_radius) < 1e-5).any()
    counts, sums = poisoned(1500, np.int32), poisoned(1500, np.int32)
    kc.launch(count_while, 1500, [grid.id, points, query_radius, counts, sums])
    near = _brute(pts, query_radius)
    np.testing.assert_array_equal(counts.numpy(), near.sum(1))
    np.testing.assert_array_equal(sums.numpy(), (near * np.arange(1500)).sum(1))
    others = poisoned(1500, np.int32)
    kc.launch(count_for, 1500, [grid.id, points, query_radius, others])
    np.testing.assert_array_equal(others.numpy(), near.sum(1) - 1)


def test_build_sorts_points_by_cell(rng):
    pts = _points(rng, 777)
    grid = kc.HashGrid(8, 8, 8)
    grid.build(kc.array(pts, dtype=kc.vec3), 1.25)
    ids = grid.point_ids.numpy()
    assert sorted(ids) == list(range(777))
    cell = np.floor(pts * np.float32(1 / np.float32(1.25))).astype(np.int64) % 8
    key = cell[:, 2] * 64 + cell[:, 1] * 8 + cell[:, 0]
    np.testing.assert_array_equal(ids, np.argsort(key, kind="stable"))
    starts, ends = grid.cell_starts.numpy(), grid.cell_ends.numpy()
    for c in np.unique(key):
        assert (key[ids[starts[c]:ends[c]]] == c).all()
    empty = np.setdiff1d(np.arange(512), key)
    assert (starts[empty] == 0).all() and (ends[empty] == 0).all()
    out = poisoned(777, np.int32)
    kc.launch(sorted_ids, 777, [grid.id, out])
    np.testing.assert_array_equal(out.numpy(), ids)


def test_float64_grid(rng):
    pts = _points(rng, 600, dtype=np.float64)
    grid = kc.HashGrid(10, 10, 10, dtype=kc.float64)
    points = kc.array(pts, dtype=kc.vec3d)
    grid.build(points, 0.9)
    counts = poisoned(600, np.int32)
    kc.launch(count_f64, 600, [grid.id, points, 0.9, counts])
    np.testing.assert_array_equal(counts.numpy(), _brute(pts, 0.9).sum(1))


def test_unbuilt_empty_and_rebuilt_grids(rng):
    grid = kc.HashGrid(4, 4, 4)
    pts = _points(rng, 50)
    points = kc.array(pts, dtype=kc.vec3)
    counts, sums = poisoned(50, np.int32), poisoned(50, np.int32)
    out = poisoned(50, np.int32)
    kc.launch(sorted_ids, 50, [grid.id, out])  # never built: no points, ids -1
    assert (out.numpy() == -1).all()
    kc.launch(count_for, 50, [grid.id, points, 1.0, counts])
    assert (counts.numpy() == 0).all()
    grid.build(kc.zeros(0, dtype=kc.vec3), 1.0)
    kc.launch(count_for, 50, [grid.id, points, 1.0, counts])
    assert (counts.numpy() == 0).all()
    for n, radius in ((50, 1.0), (20, 2.0), (50, 0.5)):  # shrink, regrow, new width
        pts = _points(rng, n)
        points = kc.array(pts, dtype=kc.vec3)
        grid.build(points, radius)
        kc.launch(count_while, n, [grid.id, points, radius, counts[:n], sums[:n]])
        np.testing.assert_array_equal(counts.numpy()[:n], _brute(pts, radius).sum(1))


def test_visit_order_matches_warp(rng, tmp_path):
    pts = _points(rng, 400, scale=6.0)
    grid = kc.HashGrid(5, 7, 6)
    points = kc.array(pts, dtype=kc.vec3)
    grid.build(points, 0.8)
    h, w, n = poisoned(400, np.uint32), poisoned(400, np.float32), poisoned(400, np.int32)
    kc.launch(visit_order, 400, [grid.id, points, 1.1, h, w, n])
    ids = poisoned(400, np.int32)
    kc.launch(sorted_ids, 400, [grid.id, ids])
    script = """
    @wp.kernel
    def visit_order(grid: wp.uint64, points: wp.array(dtype=wp.vec3), radius: float,
                    order_hash: wp.array(dtype=wp.uint32), weighted: wp.array(dtype=float),
                    candidates: wp.array(dtype=int)):
        i = wp.tid()
        p = points[i]
        h = wp.uint32(2166136261)
        w = float(0.0)
        n = int(0)
        query = wp.hash_grid_query(grid, p, radius)
        index = int(0)
        while wp.hash_grid_query_next(query, index):
            h = (h ^ wp.uint32(index)) * wp.uint32(16777619)
            w = w * 0.5 + wp.length(points[index] - p)
            n += 1
        order_hash[i] = h
        weighted[i] = w
        candidates[i] = n

    @wp.kernel
    def sorted_ids(grid: wp.uint64, out: wp.array(dtype=int)):
        i = wp.tid()
        out[i] = wp.hash_grid_point_id(grid, i)

    grid = wp.HashGrid(5, 7, 6, device="cpu")
    points = wp.array(inputs["pts"], dtype=wp.vec3, device="cpu")
    grid.build(points, 0.8)
    h = wp.zeros(400, dtype=wp.uint32, device="cpu")
    w = wp.zeros(400, dtype=float, device="cpu")
    n = wp.zeros(400, dtype=int, device="cpu")
    ids = wp.zeros(400, dtype=int, device="cpu")
    wp.launch(visit_order, 400, [grid.id, points, 1.1, h, w, n], device="cpu")
    wp.launch(sorted_ids, 400, [grid.id, ids], device="cpu")
    results.update(h=h.numpy(), w=w.numpy(), n=n.numpy(), ids=ids.numpy())
    """
    ref = run_warp(script, tmp_path, pts=pts)
    np.testing.assert_array_equal(ids.numpy(), ref["ids"])
    np.testing.assert_array_equal(n.numpy(), ref["n"])
    np.testing.assert_array_equal(h.numpy(), ref["h"])
    np.testing.assert_allclose(w.numpy(), ref["w"], rtol=2e-6)


# ---- errors ------------------------------------------------------------------------------


def test_host_side_errors():
    with pytest.raises(RuntimeError, match="positive"):
        kc.HashGrid(0, 4, 4)
    with pytest.raises(TypeError, match="integers"):
        kc.HashGrid(2.5, 4, 4)
    with pytest.raises(RuntimeError, match="cell count exceeds supported limit"):
        kc.HashGrid(2048, 2048, 2048)
    with pytest.raises(TypeError, match="float16, float32, float64"):
        kc.HashGrid(4, 4, 4, dtype=kc.int32)
    grid = kc.HashGrid(4, 4, 4)
    with pytest.raises(TypeError, match="vec3"):
        grid.build(kc.zeros(8, dtype=kc.vec3d), 1.0)
    with pytest.raises(ValueError, match="positive"):
        grid.build(kc.zeros(8, dtype=kc.vec3), 0.0)
    with pytest.raises(RuntimeError, match="inside a kernel"):
        kc.hash_grid_query(grid.id, kc.vec3(), 1.0)


@kc.kernel
def bad_index_type(grid: kc.uint64, points: kc.array(dtype=kc.vec3)):
    query = kc.hash_grid_query(grid, points[0], 1.0)
    index = float(0.0)
    while kc.hash_grid_query_next(query, index):
        pass


@kc.kernel
def bad_state_expr(grid: kc.uint64, points: kc.array(dtype=kc.vec3)):
    index = int(0)
    while kc.hash_grid_query_next(kc.hash_grid_query(grid, points[0], 1.0), index):
        pass


@kc.kernel
def bad_grid(grid: float, points: kc.array(dtype=kc.vec3)):
    kc.hash_grid_query(grid, points[0], 1.0)


@kc.kernel
def bad_point(grid: kc.uint64, points: kc.array(dtype=kc.vec2)):
    kc.hash_grid_query(grid, points[0], 1.0)


@kc.kernel
def bad_query(grid: kc.uint64, points: kc.array(dtype=kc.vec3)):
    query = int(3)
    index = int(0)
    while kc.hash_grid_query_next(query, index):
        pass


@pytest.mark.parametrize("kernel, message", [
    (bad_index_type, "index of hash_grid_query_next() must be an int32"),
    (bad_state_expr, "pass two variables"),
    (bad_grid, "uint64 id"),
    (bad_point, "vec3h, vec3 or vec3d point"),
    (bad_query, "needs a query from hash_grid_query()"),
])
def test_kernel_errors_point_at_the_call(kernel, message):
    points = kc.zeros(4, dtype=kernel.param_types[1].dtype)
    with pytest.raises(kc.KernelError) as err:
        kc.launch(kernel, 1, [1, points])
    text = str(err.value)
    assert message in text
    assert "test_hash_grid.py:" in text and "^" in text


# ---- CUDA-C: compiled by NVRTC and run through the host harness --------------------------


def _cuda_source(kernel, types=None):
    from kernelc.codegen.cuda import CudaOptions, emit_cuda

    return emit_cuda(kernel.get_ir(types or kernel.param_types), CudaOptions())


@pytest.mark.parametrize("kernel", [count_while, count_for, visit_order, sorted_ids, count_f64])
def test_query_kernels_compile_with_nvrtc(kernel):
    pytest.importorskip("cuda.bindings.nvrtc")
    from kernelc.codegen import nvrtc

    source = _cuda_source(kernel)
    image, fmt = nvrtc.compile_cuda(source.text, 80, name=source.kernel)
    assert fmt == "cubin" and source.entry.encode() in image


def test_query_cuda_c_runs_in_host_harness(rng):
    import cuda_harness

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    pts = _points(rng, 300)
    grid = kc.HashGrid(6, 6, 6)
    grid.build(kc.array(pts, dtype=kc.vec3), 0.8)  # a CPU grid: host pointers the harness reads
    counts = np.full(300, -1, np.int32)
    host = cuda_harness.build(_cuda_source(count_for))
    from kernelc.codegen.cuda_layout import ArrayArg

    points = ArrayArg(pts.ctypes.data, (300,), (12,))  # one vec3 per element
    host.launch(300, [grid.id, points, 1.2, counts], workers=2)
    np.testing.assert_array_equal(counts, _brute(pts, 1.2, exclude_self=True).sum(1))


@pytest.mark.cuda
def test_grid_on_the_gpu_matches_the_cpu(rng):
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    pts = _points(rng, 5000)
    results = {}
    for device in ("cpu", "cuda:0"):
        grid = kc.HashGrid(12, 12, 12, device=device)
        points = kc.array(pts, dtype=kc.vec3, device=device)
        grid.build(points, 0.6)
        counts = kc.full(5000, -1, dtype=int, device=device)
        sums = kc.full(5000, -1, dtype=int, device=device)
        kc.launch(count_while, 5000, [grid.id, points, 0.6, counts, sums], device=device)
        results[device] = (grid.point_ids.numpy(), counts.numpy(), sums.numpy())
    for cpu, gpu in zip(results["cpu"], results["cuda:0"]):
        np.testing.assert_array_equal(cpu, gpu)


def test_build_reports_builtin_activities(rng):
    grid = kc.HashGrid(8, 8, 8)
    points = kc.array(_points(rng, 100), dtype=kc.vec3)
    with kc.ScopedTimer("user", print=False, cuda_filter=kc.TIMING_KERNEL) as user:
        grid.build(points, 1.0)
    with kc.ScopedTimer("all", print=False, cuda_filter=kc.TIMING_KERNEL_BUILTIN) as builtin:
        grid.build(points, 1.0)
    assert user.timing_results == []
    names = [r.name for r in builtin.timing_results]
    assert "builtin kernel cell_keys" in names and "builtin kernel mark_cells" in names
