"""Threads as SIMD lanes on the CPU (kernelc/codegen/llvm_simd.py).

Each kernel runs with `config.cpu_simd = "all"` (every kernel as lanes) and "off" (one
thread at a time) and is checked against NumPy; sizes are not multiples of the packet
width, so the last packet runs with lanes masked off.
"""

import numpy as np
import pytest
from conftest import nonzero, poisoned

import kernelc as kc


@pytest.fixture(params=["all", "off"])
def simd(request):
    previous = kc.config.cpu_simd
    kc.config.cpu_simd = request.param
    yield request.param
    kc.config.cpu_simd = previous


@kc.kernel
def pair_sum(pos: kc.array(dtype=kc.vec3), w: kc.array(dtype=float), out: kc.array(dtype=kc.vec3),
             pot: kc.array(dtype=float)):
    i = kc.tid()
    p = pos[i]
    acc = kc.vec3()
    total = float(0.0)
    for j in range(pos.shape[0]):
        d = pos[j] - p
        r = 1.0 / kc.sqrt(kc.dot(d, d) + 0.1)
        acc += d * (w[j] * r * r * r)
        total -= w[j] * r
    out[i] = acc
    pot[i] = total


def test_uniform_loop_over_all_pairs(simd, rng):
    n = 77
    p = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    w = nonzero(rng, n, np.float32, 0.5, 2.0)
    out, pot = poisoned((n, 3), np.float32), poisoned(n, np.float32)
    out = kc.array(out.numpy(), dtype=kc.vec3)
    kc.launch(pair_sum, n, inputs=[kc.array(p, dtype=kc.vec3), kc.array(w), out, pot])
    d = p[None, :, :] - p[:, None, :]
    r = 1.0 / np.sqrt((d * d).sum(-1) + 0.1)
    np.testing.assert_allclose(out.numpy(), (d * (w * r**3)[..., None]).sum(1), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(pot.numpy(), -(w * r).sum(1), rtol=1e-5)


@kc.kernel
def divergent(x: kc.array(dtype=float), n: kc.array(dtype=int), out: kc.array(dtype=float),
              count: kc.array(dtype=int)):
    i = kc.tid()
    if i % 7 == 3:
        return  # these threads leave their outputs alone
    s = float(0.0)
    c = int(0)
    for j in range(n[i]):  # a different trip count in every lane
        if j % 3 == 1:
            continue
        v = x[(i + j) % x.shape[0]]
        if v > 3.0:
            break
        if v < 0.0:
            s -= v * float(j)
        else:
            s += kc.sin(v)
        c += 1
    k = int(0)
    while s > 1.0 and k < 50:  # a varying condition
        s = s * 0.5
        k += 1
    out[i] = s
    count[i] = c * 100 + k


def test_divergent_control_flow(simd, rng):
    m = 45
    x = nonzero(rng, m, np.float32, -2.0, 4.0)
    n = rng.integers(0, 20, m).astype(np.int32)
    out, count = poisoned(m, np.float32), poisoned(m, np.int32)
    before_out, before_count = out.numpy().copy(), count.numpy().copy()
    kc.launch(divergent, m, inputs=[kc.array(x), kc.array(n), out, count])
    want_out, want_count = before_out.copy(), before_count.copy()
    for i in range(m):
        if i % 7 == 3:
            continue
        s, c = np.float32(0.0), 0
        for j in range(n[i]):
            if j % 3 == 1:
                continue
            v = x[(i + j) % m]
            if v > 3.0:
                break
            s = np.float32(s - v * np.float32(j)) if v < 0 else np.float32(s + np.sin(v))
            c += 1
        k = 0
        while s > 1.0 and k < 50:
            s, k = np.float32(s * np.float32(0.5)), k + 1
        want_out[i], want_count[i] = s, c * 100 + k
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-5, equal_nan=True)
    np.testing.assert_array_equal(count.numpy(), want_count)


@kc.func
def clamp_index(i: int, n: int):
    return kc.max(0, kc.min(i, n - 1))


@kc.func
def bump(counter: kc.array(dtype=int), i: int):
    kc.atomic_add(counter, i % 4, 1)


@kc.kernel
def memory_kinds(a: kc.array(dtype=float), b2: kc.array(dtype=float, ndim=2),
                 v: kc.array(dtype=kc.vec3), out: kc.array(dtype=float),
                 vout: kc.array(dtype=kc.vec3), counter: kc.array(dtype=int)):
    i = kc.tid()
    n = a.shape[0]
    local = kc.zeros(shape=4, dtype=float)
    total = float(0.0)
    for k in range(3):
        local[(i + k) % 4] = a[clamp_index(i + k - 1, n)]  # contiguous, then clamped
        total += b2[i % b2.shape[0], k] * float(k + 1)  # a 2-d gather
        bump(counter, i + k)  # a func with effects: lane by lane
        kc.atomic_add(counter, 4, 1)
    for k in range(4):
        total += local[k] * float(k)
    out[i] = total + a[n - 1]  # a uniform load
    vout[i] = v[(i * 5) % n] * total  # a vector gather, a vector store


def test_memory_kinds(simd, rng):
    n = 37
    a = nonzero(rng, n, np.float32)
    b2 = nonzero(rng, (5, 3), np.float32)
    v = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    out = poisoned(n, np.float32)
    vout = kc.array(np.full((n, 3), np.nan, np.float32), dtype=kc.vec3)
    counter = kc.zeros(5, dtype=int)
    kc.launch(memory_kinds, n, inputs=[kc.array(a), kc.array(b2), kc.array(v, dtype=kc.vec3),
                                      out, vout, counter])
    want, vwant, want_counter = np.zeros(n, np.float32), np.zeros((n, 3), np.float32), np.zeros(5)
    for i in range(n):
        local = np.zeros(4, np.float32)
        total = np.float32(0)
        for k in range(3):
            local[(i + k) % 4] = a[max(0, min(i + k - 1, n - 1))]
            total += b2[i % 5, k] * np.float32(k + 1)
            want_counter[(i + k) % 4] += 1
            want_counter[4] += 1
        for k in range(4):
            total += local[k] * np.float32(k)
        want[i] = total + a[n - 1]
        vwant[i] = v[(i * 5) % n] * total
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(vout.numpy(), vwant, rtol=1e-5)
    np.testing.assert_array_equal(counter.numpy(), want_counter)


@kc.kernel
def strided_rows(src: kc.array(dtype=float, ndim=2), dst: kc.array(dtype=float, ndim=2)):
    i, j = kc.tid()
    s = float(0.0)
    for k in range(2):
        s += src[i, j] * float(k + 1) + kc.atan2(src[i, j], 2.0)  # (a C library call)
    dst[i, j] = s + float(i % 3) - float(j // 4)


def test_two_dimensional_launch_on_strided_views(simd, rng):
    whole = nonzero(rng, (9, 46), np.float32)
    src = kc.array(whole)[:, ::2]  # a stride of two elements: gathers, not vector loads
    dst = poisoned((9, 23), np.float32)
    kc.launch(strided_rows, (9, 23), inputs=[src, dst])
    x = whole[:, ::2]
    i, j = np.meshgrid(np.arange(9), np.arange(23), indexing="ij")
    want = 3 * x + 2 * np.arctan2(x, np.float32(2.0)) + (i % 3) - (j // 4)
    np.testing.assert_allclose(dst.numpy(), want, rtol=1e-5, atol=1e-5)


@kc.kernel
def int_ops(a: kc.array(dtype=int), b: kc.array(dtype=int), out: kc.array(dtype=int),
            flags: kc.array(dtype=kc.bool)):
    i = kc.tid()
    r = int(0)
    for k in range(2):
        x, y = a[i] + k, b[i]
        r += x // y + x % y * 3 + (x << 2) + (x >> 1) + kc.min(x, y) - (x ^ y)
    out[i] = r
    flags[i] = r > 0 and a[i] % 2 == 0


def test_integer_ops_and_bools(simd, rng):
    n = 50
    a = nonzero(rng, n, np.int32, -100, 100)
    b = nonzero(rng, n, np.int32, -9, 9)
    out, flags = poisoned(n, np.int32), poisoned(n, np.bool_)
    kc.launch(int_ops, n, inputs=[kc.array(a), kc.array(b), out, flags])
    want = np.zeros(n, np.int64)
    for k in range(2):
        x = a.astype(np.int64) + k
        q = np.trunc(x / b).astype(np.int64)  # `%` truncates as in C, `//` floors
        want += x // b + (x - q * b) * 3 + (x << 2) + (x >> 1) + np.minimum(x, b) - (x ^ b)
    np.testing.assert_array_equal(out.numpy(), want.astype(np.int32))
    np.testing.assert_array_equal(flags.numpy(), (want > 0) & (a % 2 == 0))


@kc.kernel
def scale(a: kc.array(dtype=float)):
    a[kc.tid()] = a[kc.tid()] * 2.0


@kc.kernel
def closest_faces(mesh: kc.uint64, points: kc.array(dtype=kc.vec3),
                  faces: kc.array(dtype=int)):
    i = kc.tid()  # no loop of its own: the query's traversal loop is in its funcs
    faces[i] = kc.mesh_query_point_no_sign(mesh, points[i], 10.0).face


def test_auto_mode_picks_kernels_with_loops():
    previous = kc.config.cpu_simd
    kc.config.cpu_simd = "auto"
    try:
        assert "packet.cond" in kc.compile(pair_sum, target="cpu").source
        assert "packet.cond" in kc.compile(strided_rows, target="cpu").source
        # no loop: LLVM vectorises the loop over threads itself
        assert "packet.cond" not in kc.compile(scale, target="cpu").source
        # a func with effects in the loop would run one lane at a time
        assert "packet.cond" not in kc.compile(memory_kinds, target="cpu").source
        # a mesh query's traversal reads the tree at per-lane addresses, even called once
        assert "packet.cond" not in kc.compile(closest_faces, target="cpu").source
    finally:
        kc.config.cpu_simd = previous


def test_bad_mode_is_a_clear_error():
    previous = kc.config.cpu_simd
    kc.config.cpu_simd = "sometimes"
    try:
        with pytest.raises(ValueError, match="cpu_simd"):
            kc.launch(pair_sum, 1, inputs=[kc.zeros(1, dtype=kc.vec3), kc.zeros(1, dtype=float),
                                           kc.zeros(1, dtype=kc.vec3), kc.zeros(1, dtype=float)])
    finally:
        kc.config.cpu_simd = previous


@kc.func
def first_above(x: kc.array(dtype=float), start: int, limit: float):
    """The first index from `start` whose value exceeds `limit`, or -1: a loop that lanes
    leave at different iterations through `return`."""
    for k in range(start, x.shape[0]):
        if x[k] > limit:
            return k
    return -1


@kc.func
def split(v: float):
    if v < 0.0:
        return -v, 1
    return v * 2.0, 0


@kc.kernel
def calls(x: kc.array(dtype=float), out: kc.array(dtype=float), where: kc.array(dtype=int)):
    i = kc.tid()
    s = float(0.0)
    negatives = int(0)
    for k in range(3):
        a, neg = split(x[(i + k) % x.shape[0]])
        s += a
        negatives += neg
    out[i] = s
    where[i] = first_above(x, i, 2.5) * 10 + negatives


def test_inlined_funcs_with_returns(simd, rng):
    n = 41
    x = nonzero(rng, n, np.float32, -3.0, 3.0)
    out, where = poisoned(n, np.float32), poisoned(n, np.int32)
    kc.launch(calls, n, inputs=[kc.array(x), out, where])
    want, want_where = np.zeros(n, np.float32), np.zeros(n, np.int32)
    for i in range(n):
        negatives = 0
        for k in range(3):
            v = x[(i + k) % n]
            want[i] += -v if v < 0 else v * np.float32(2)
            negatives += v < 0
        above = [k for k in range(i, n) if x[k] > 2.5]
        want_where[i] = (above[0] if above else -1) * 10 + negatives
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(where.numpy(), want_where)
    if simd == "all":
        previous = kc.config.cpu_simd
        kc.config.cpu_simd = "auto"  # funcs with varying arguments are inlined as lanes
        try:
            assert "packet.cond" in kc.compile(calls, target="cpu").source
        finally:
            kc.config.cpu_simd = previous


vec1 = kc.types.vector(1, float)
mat11 = kc.types.matrix((1, 1), float)


@kc.kernel
def one_component(m: kc.array(dtype=mat11), v: kc.array(dtype=vec1), out: kc.array(dtype=vec1)):
    i = kc.tid()
    s = float(0.0)
    for k in range(2):
        s += m[(i + k) % m.shape[0]][0, 0] * v[i][0]
    out[i] = vec1(s)


def test_one_component_vectors_and_matrices(simd, rng):
    """One-component vectors and matrices keep their array form as lanes."""
    n = 21
    m, v = nonzero(rng, n, np.float32), nonzero(rng, n, np.float32)
    out = kc.array(np.full((n, 1), np.nan, np.float32), dtype=vec1)
    kc.launch(one_component, n, inputs=[kc.array(m.reshape(n, 1, 1), dtype=mat11),
                                        kc.array(v.reshape(n, 1), dtype=vec1), out])
    want = (m + np.roll(m, -1)) * v
    np.testing.assert_allclose(out.numpy()[:, 0], want, rtol=1e-6)


@kc.func
def must_be_finite(x: float):
    assert kc.isfinite(x)  # a func without a result or effects (the check is debug-only)


@kc.kernel
def checked_sum(x: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    s = float(0.0)
    for k in range(x.shape[0]):
        must_be_finite(x[k] * float(i))
        s += x[k] * float(i)
    out[i] = s


def test_void_func_with_varying_arguments(simd, rng):
    n = 19
    x = nonzero(rng, n, np.float32)
    out = poisoned(n, np.float32)
    kc.launch(checked_sum, n, inputs=[kc.array(x), out])
    np.testing.assert_allclose(out.numpy(), x.sum() * np.arange(n, dtype=np.float32), rtol=1e-5)


@kc.kernel
def where_am_i(x: kc.array(dtype=float, ndim=3), out: kc.array(dtype=kc.vec3i),
               total: kc.array(dtype=float, ndim=3)):
    i, j, k = kc.tid()
    s = float(0.0)
    for m in range(j + 1):  # (a loop: "auto" would pick this kernel too)
        s += x[i, m, k]
    out[(i * x.shape[1] + j) * x.shape[2] + k] = kc.vec3i(i, j, k)
    total[i, j, k] = s


@pytest.mark.parametrize("shape", [(37, 3, 1), (5, 1, 21), (2, 17, 3), (1, 1, 40), (300, 7, 2)])
def test_packets_span_rows_of_short_launch_dimensions(simd, rng, shape):
    # Packets take consecutive linear thread indices, so a packet may hold several rows;
    # each lane's tid() components come from dividing its index lane-wise.
    x = nonzero(rng, shape, np.float32)
    out = kc.array(np.full((int(np.prod(shape)), 3), -7, np.int32), dtype=kc.vec3i)
    total = poisoned(shape, np.float32)
    kc.launch(where_am_i, shape, inputs=[kc.array(x), out, total])
    want = np.stack(np.meshgrid(*(np.arange(n) for n in shape), indexing="ij"), -1)
    np.testing.assert_array_equal(out.numpy(), want.reshape(-1, 3))
    np.testing.assert_allclose(total.numpy(), np.cumsum(x, axis=1), rtol=1e-5)


def test_lane_division_is_exact_near_the_int_range():
    # The lane-wise divmod (a double multiply by 1/d, corrected) against Python's, at
    # exact multiples (for d = 49, x * (1/d) falls just below the quotient) and the top.
    from llvmlite import ir as ll

    from kernelc.codegen.llvm_lanes import divmod_by
    from kernelc.runtime.cpu import CpuJit

    width, i32 = 16, ll.IntType(32)
    vt = ll.VectorType(i32, width)
    mod = ll.Module()
    fn = ll.Function(mod, ll.FunctionType(ll.VoidType(), [ll.PointerType(), i32,
                                                          ll.PointerType()]), "divmod16")
    b = ll.IRBuilder(fn.append_basic_block())
    xs, d, out = fn.args
    q, r = divmod_by(b, b.load(xs, typ=vt, align=4), d)  # (NumPy's data: 4-byte aligned)
    b.store(q, out, align=4)
    b.store(r, b.gep(out, [i32(width)], source_etype=i32), align=4)
    b.ret_void()
    jit = CpuJit()
    address = jit.load(jit.compile(str(mod)), "divmod16")
    import ctypes

    call = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p)(address)
    rng = np.random.default_rng(5)
    top = 2**31 - 1
    for d in (1, 2, 3, 7, 16, 49, 103, 1000, 46341, 2**20 + 1, 2**30 - 3, top):
        near = [top - k for k in range(8)] + [d * m + o for m in (1, 5, 2**31 // d - 1)
                                              for o in (-1, 0, 1) if 0 <= d * m + o <= top]
        xs_np = np.array((near + list(rng.integers(0, top, 32)))[:width], dtype=np.int32)
        got = np.empty(2 * width, dtype=np.int32)
        call(xs_np.ctypes.data, d, got.ctypes.data)
        np.testing.assert_array_equal(got[:width], xs_np // d, err_msg=f"d={d}")
        np.testing.assert_array_equal(got[width:], xs_np % d, err_msg=f"d={d}")


@kc.func
def my_cell(scale: float):
    i, j = kc.tid()
    return float(i) * scale + float(j)


@kc.func
def twice_my_cell(scale: float):  # reads the thread through the func it calls
    return my_cell(scale) * 2.0


@kc.kernel
def tid_in_funcs(x: kc.array2d(dtype=float), out: kc.array2d(dtype=float)):
    i, j = kc.tid()
    s = float(0.0)
    for _k in range(j % 3 + 1):
        s += twice_my_cell(1.5) + my_cell(x[i, j])
    out[i, j] = s


def test_funcs_that_read_the_thread_index(simd, rng):
    # Called with uniform arguments too, such funcs still see each lane's own tid().
    shape = (6, 11)
    x = nonzero(rng, shape, np.float32)
    out = poisoned(shape, np.float32)
    kc.launch(tid_in_funcs, shape, inputs=[kc.array(x), out])
    i, j = np.meshgrid(np.arange(6), np.arange(11), indexing="ij")
    want = (j % 3 + 1) * (2 * (i * 1.5 + j) + (i * x + j))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)


@kc.kernel
def neighbour_sums(grid: kc.uint64, points: kc.array(dtype=kc.vec3), w: kc.array(dtype=float),
                   radius: float, count: kc.array(dtype=int), total: kc.array(dtype=float)):
    i = kc.hash_grid_point_id(grid, kc.tid())
    p = points[i]
    n = int(0)
    s = float(0.0)
    for j in kc.hash_grid_query(grid, p, radius):  # reads the grid at per-lane addresses
        if kc.length(points[j] - p) <= radius:
            n += 1
            s += w[j]
    count[i] = n
    total[i] = s


def test_hash_grid_queries_as_lanes(simd, rng):
    n = 700
    pts = rng.random((n, 3)).astype(np.float32)
    w = nonzero(rng, n, np.float32)
    d = np.linalg.norm(pts[:, None, :].astype(np.float64) - pts[None, :, :], axis=-1)
    ds = np.unique(d)
    k = np.searchsorted(ds, 0.11)
    radius = float(ds[k - 1] + ds[k]) / 2  # (no pair within float32 rounding of it)
    assert ds[k] - ds[k - 1] > 1e-7
    grid = kc.HashGrid(12, 12, 12)
    points = kc.array(pts, dtype=kc.vec3)
    grid.build(points, radius)
    count, total = poisoned(n, np.int32), poisoned(n, np.float32)
    kc.launch(neighbour_sums, n, inputs=[grid.id, points, kc.array(w), radius, count, total])
    near = d <= radius
    np.testing.assert_array_equal(count.numpy(), near.sum(1))
    np.testing.assert_allclose(total.numpy(), (near * w[None, :]).sum(1), rtol=1e-5, atol=1e-5)
    if simd == "all":  # the grid's reads are gathers, not lane by lane
        assert "lane.loop" not in kc.compile(neighbour_sums, target="cpu").source
        kc.config.cpu_simd = "auto"  # (the fixture restores it)
        # but "auto" leaves such traversals scalar: their lanes diverge (example_sph)
        assert "packet.cond" not in kc.compile(neighbour_sums, target="cpu").source
