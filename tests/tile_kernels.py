"""The tile kernels of `tests/test_tiles.py` (module level, so each compiles once).

Each kernel exercises one group of tile forms; the tests launch them with `launch_tiled`
(one lane per block in kernelc) and compare with NumPy. The `e_*` kernels each hold one
mistake on the line marked `# E`.
"""

from __future__ import annotations

import kernelc as kc

TILE = 8
ROWS, COLS = 4, 8
ONE_ROW = (1, ROWS, COLS)

# ---- global memory: loads and stores of 1-d to 4-d arrays --------------------------------


@kc.kernel
def load_store_1d(a: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    t = kc.tile_load(a, shape=TILE, offset=i * TILE)
    kc.tile_store(out, t * 2.0, offset=i * TILE)


@kc.kernel
def load_store_2d(a: kc.array2d(dtype=float), out: kc.array2d(dtype=float)):
    i, j = kc.tid()
    t = kc.tile_load(a, shape=(ROWS, COLS), offset=(i * ROWS, j * COLS))
    kc.tile_store(out, t + 1.0, offset=(i * ROWS, j * COLS))


@kc.kernel
def load_store_3d(a: kc.array3d(dtype=float), out: kc.array3d(dtype=float)):
    i, j, k, lane = kc.tid()
    t = kc.tile_load(a, shape=(2, 3, 4), offset=(i * 2, j * 3, k * 4))
    kc.tile_store(out, -t, offset=(i * 2, j * 3, k * 4))


@kc.kernel
def load_store_4d(a: kc.array4d(dtype=float), out: kc.array4d(dtype=float)):
    i, j, k = kc.tid()
    t = kc.tile_load(a, shape=(2, 2, 3, 2), offset=(i * 2, j * 2, k * 3, 1))
    kc.tile_store(out, t * t, offset=(i * 2, j * 2, k * 3, 1))


@kc.kernel
def load_unchecked(a: kc.array2d(dtype=float), out: kc.array2d(dtype=float)):
    i, j = kc.tid()
    t = kc.tile_load(a, shape=(ROWS, COLS), offset=(i * ROWS, j * COLS), bounds_check=False)
    kc.tile_store(out, t, offset=(i * ROWS, j * COLS), bounds_check=False)


@kc.kernel
def load_padded(a: kc.array2d(dtype=float), out: kc.array2d(dtype=float), oi: int, oj: int):
    """Reads an 8x8 tile at (oi, oj) of a smaller array: outside elements read as 0."""
    t = kc.tile_load(a, shape=(TILE, TILE), offset=(oi, oj))
    kc.tile_store(out, t)


@kc.kernel
def store_clipped(a: kc.array2d(dtype=float), out: kc.array2d(dtype=float), oi: int, oj: int):
    """Writes an 8x8 tile at (oi, oj) of a smaller array: outside elements are skipped."""
    t = kc.tile_load(a, shape=(TILE, TILE))
    kc.tile_store(out, t, offset=(oi, oj))


@kc.kernel
def atomic_add_tiles(a: kc.array2d(dtype=float), acc: kc.array2d(dtype=float),
                     old: kc.array3d(dtype=float)):
    i, j = kc.tid()
    t = kc.tile_load(a, shape=(ROWS, COLS), offset=(i * ROWS, 0))
    previous = kc.tile_atomic_add(acc, t, offset=(j * ROWS, 1))
    kc.tile_store(old, kc.tile_reshape(previous, (1, ROWS, COLS)), offset=(i * 2 + j, 0, 0))


@kc.kernel
def atomic_sum(a: kc.array(dtype=float), total: kc.array(dtype=float)):
    i = kc.tid()
    kc.tile_atomic_add(total, kc.tile_sum(kc.tile_load(a, shape=TILE, offset=i * TILE)))


# ---- vector tiles -----------------------------------------------------------------------


@kc.func
def shrink(v: kc.vec3) -> kc.vec3:
    return v * 0.5 - kc.vec3(1.0, 0.0, 2.0)


@kc.kernel
def vec3_tiles(a: kc.array(dtype=kc.vec3), out: kc.array(dtype=kc.vec3),
               sums: kc.array(dtype=kc.vec3), lengths: kc.array(dtype=float)):
    i = kc.tid()
    t = kc.tile_load(a, shape=TILE, offset=i * TILE)
    m = kc.tile_map(shrink, t)
    kc.tile_store(out, m, offset=i * TILE)
    kc.tile_store(sums, kc.tile_sum(t), offset=i)
    kc.tile_store(lengths, kc.tile_map(kc.length, m), offset=i * TILE)


# ---- maps, reductions, arithmetic -------------------------------------------------------


@kc.func
def blend(x: float, y: float) -> float:
    return x * 0.25 + kc.sin(y)


@kc.func
def cube(x: float) -> float:
    return x * x * x


@kc.kernel
def maps(a: kc.array2d(dtype=float), b: kc.array2d(dtype=float), out: kc.array3d(dtype=float)):
    t = kc.tile_load(a, shape=(ROWS, COLS), bounds_check=False)
    u = kc.tile_load(b, shape=(ROWS, COLS), bounds_check=False)
    results = (kc.tile_map(kc.exp, t), kc.tile_map(kc.max, t, u), kc.tile_map(cube, t),
               kc.tile_map(blend, t, u))
    kc.tile_store(out, kc.tile_reshape(results[0], ONE_ROW), offset=(0, 0, 0),
                  bounds_check=False)
    kc.tile_store(out, kc.tile_reshape(results[1], ONE_ROW), offset=(1, 0, 0),
                  bounds_check=False)
    kc.tile_store(out, kc.tile_reshape(results[2], ONE_ROW), offset=(2, 0, 0),
                  bounds_check=False)
    kc.tile_store(out, kc.tile_reshape(results[3], ONE_ROW), offset=(3, 0, 0),
                  bounds_check=False)


@kc.func
def bigger(x: float, y: float) -> float:
    return kc.max(x, y)


@kc.kernel
def reductions(a: kc.array2d(dtype=float), whole: kc.array(dtype=float),
               where: kc.array(dtype=int), rows: kc.array2d(dtype=float),
               cols: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(ROWS, COLS), bounds_check=False)
    kc.tile_store(whole, kc.tile_sum(t), offset=0, bounds_check=False)
    kc.tile_store(whole, kc.tile_min(t), offset=1, bounds_check=False)
    kc.tile_store(whole, kc.tile_max(t), offset=2, bounds_check=False)
    kc.tile_store(whole, kc.tile_reduce(bigger, t), offset=3, bounds_check=False)
    kc.tile_store(whole, kc.tile_reduce(kc.mul, t * 0.5), offset=4, bounds_check=False)
    kc.tile_store(where, kc.tile_argmin(t), offset=0, bounds_check=False)
    kc.tile_store(where, kc.tile_argmax(t), offset=1, bounds_check=False)
    kc.tile_store(where, kc.tile_argmax(kc.tile_transpose(t)), offset=2, bounds_check=False)
    kc.tile_store(rows, kc.tile_reshape(kc.tile_sum(t, axis=1), (1, ROWS)), offset=(0, 0),
                  bounds_check=False)
    kc.tile_store(rows, kc.tile_reshape(kc.tile_max(t, axis=-1), (1, ROWS)), offset=(1, 0),
                  bounds_check=False)
    kc.tile_store(rows, kc.tile_reshape(kc.tile_reduce(kc.min, t, axis=1), (1, ROWS)),
                  offset=(2, 0), bounds_check=False)
    kc.tile_store(cols, kc.tile_reshape(kc.tile_sum(t, axis=0), (1, COLS)), offset=(0, 0),
                  bounds_check=False)
    kc.tile_store(cols, kc.tile_reshape(kc.tile_min(t, axis=0), (1, COLS)), offset=(1, 0),
                  bounds_check=False)


@kc.kernel
def reduce_3d(a: kc.array3d(dtype=float), out0: kc.array2d(dtype=float),
              out1: kc.array2d(dtype=float), out2: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(2, 3, 4), bounds_check=False)
    kc.tile_store(out0, kc.tile_sum(t, axis=0), bounds_check=False)
    kc.tile_store(out1, kc.tile_sum(t, axis=1), bounds_check=False)
    kc.tile_store(out2, kc.tile_max(t, axis=2), bounds_check=False)


@kc.kernel
def arithmetic(a: kc.array2d(dtype=float), b: kc.array2d(dtype=float),
               out: kc.array3d(dtype=float)):
    t = kc.tile_load(a, shape=(ROWS, COLS))
    u = kc.tile_load(b, shape=(ROWS, COLS))
    kc.tile_store(out, kc.tile_reshape(t + u, ONE_ROW), offset=(0, 0, 0), bounds_check=False)
    kc.tile_store(out, kc.tile_reshape(t - u, ONE_ROW), offset=(1, 0, 0), bounds_check=False)
    kc.tile_store(out, kc.tile_reshape(t * u, ONE_ROW), offset=(2, 0, 0), bounds_check=False)
    kc.tile_store(out, kc.tile_reshape(t / u, ONE_ROW), offset=(3, 0, 0), bounds_check=False)
    kc.tile_store(out, kc.tile_reshape(t * 2.0, ONE_ROW), offset=(4, 0, 0), bounds_check=False)
    kc.tile_store(out, kc.tile_reshape(3.0 * t - u, ONE_ROW), offset=(5, 0, 0), bounds_check=False)
    kc.tile_store(out, kc.tile_reshape(1.0 / u, ONE_ROW), offset=(6, 0, 0), bounds_check=False)
    kc.tile_store(out, kc.tile_reshape(-t + (+u), ONE_ROW), offset=(7, 0, 0), bounds_check=False)
    kc.tile_store(out, kc.tile_reshape(t / 4.0, ONE_ROW), offset=(8, 0, 0), bounds_check=False)


@kc.kernel
def int_tiles(a: kc.array(dtype=int), out: kc.array(dtype=int), total: kc.array(dtype=int)):
    t = kc.tile_load(a, shape=TILE)
    u = t * 3 - kc.tile_arange(TILE, dtype=int)
    kc.tile_store(out, u)
    kc.tile_store(total, kc.tile_sum(u))


# ---- construction, element access, copies -------------------------------------------------


@kc.kernel
def construct(out: kc.array2d(dtype=float), ints: kc.array2d(dtype=int), v: float):
    kc.tile_store(out, kc.tile_reshape(kc.tile_zeros(shape=COLS, dtype=float), (1, COLS)))
    kc.tile_store(out, kc.tile_ones(shape=(1, COLS), dtype=float), offset=(1, 0))
    kc.tile_store(out, kc.tile_full(shape=(1, COLS), value=v, dtype=float), offset=(2, 0))
    e = kc.tile_empty(shape=(1, COLS), dtype=float)
    for k in range(COLS):
        e[0, k] = float(k) * v
    kc.tile_store(out, e, offset=(3, 0))
    kc.tile_store(out, kc.tile_reshape(kc.tile_arange(0.5, 4.5, 0.5), (1, COLS)),
                  offset=(4, 0))
    kc.tile_store(ints, kc.tile_reshape(kc.tile_arange(COLS, dtype=int), (1, COLS)))
    kc.tile_store(ints, kc.tile_reshape(kc.tile_arange(2, 26, 3, dtype=int), (1, COLS)),
                  offset=(1, 0))
    h = kc.tile_astype(kc.tile_full(shape=(1, COLS), value=v * 3.0), int)
    kc.tile_store(ints, h, offset=(2, 0))


@kc.kernel
def element_access(a: kc.array2d(dtype=float), out: kc.array2d(dtype=float),
                   info: kc.array(dtype=float)):
    t = kc.tile_load(a, shape=(ROWS, COLS), bounds_check=False)
    t[1, 2] = 7.0
    t[2, 3] += 10.0
    t[3, 4] = t[0, 0] + kc.tile_extract(t, 0, 1)
    info[0] = float(t.shape[0] * 100 + t.shape[1])
    info[1] = t[2, 5]
    row = t[1]
    info[2] = row[2] + row[7]
    kc.tile_store(out, t, bounds_check=False)


@kc.kernel
def assign_and_inplace(a: kc.array2d(dtype=float), b: kc.array2d(dtype=float),
                       out: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(ROWS, COLS), bounds_check=False)
    u = kc.tile_load(b, shape=(2, 3), bounds_check=False)
    kc.tile_assign(t, u, offset=(1, 4))
    kc.tile_assign(t, 9.0, offset=(0, 0))
    acc = kc.tile_ones(shape=(ROWS, COLS), dtype=float)
    kc.tile_add_inplace(acc, t)
    kc.tile_sub_inplace(acc, kc.tile_full(shape=(ROWS, COLS), value=0.25, dtype=float))
    kc.tile_store(out, acc, bounds_check=False)


# ---- views -------------------------------------------------------------------------------


@kc.kernel
def views_read(a: kc.array2d(dtype=float), row: kc.array(dtype=float),
               tr: kc.array2d(dtype=float), bc: kc.array2d(dtype=float),
               sub: kc.array2d(dtype=float), rs: kc.array2d(dtype=float),
               sq: kc.array(dtype=float)):
    t = kc.tile_load(a, shape=(ROWS, COLS), bounds_check=False)
    r = kc.tile_load(row, shape=COLS, bounds_check=False)
    kc.tile_store(tr, kc.tile_transpose(t), bounds_check=False)
    line = kc.tile_reshape(r, (1, COLS))
    kc.tile_store(bc, t + kc.tile_broadcast(line, shape=(ROWS, COLS)), bounds_check=False)
    kc.tile_store(sub, kc.tile_view(t, offset=(1, 2), shape=(2, 3)), bounds_check=False)
    kc.tile_store(rs, kc.tile_reshape(t, (-1, 4)) * 2.0, bounds_check=False)
    kc.tile_store(sq, kc.tile_squeeze(kc.tile_view(t, offset=(2,), shape=(1, COLS))),
                  bounds_check=False)
    kc.tile_store(sq, kc.tile_squeeze(kc.tile_transpose(line)) * 3.0, offset=COLS,
                  bounds_check=False)


@kc.kernel
def views_written(a: kc.array2d(dtype=float), out: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(ROWS, COLS), bounds_check=False)
    tt = kc.tile_transpose(t)
    tt[5, 1] = 100.0  # t[1, 5]
    v = kc.tile_view(t, offset=(2, 1), shape=(2, 2))
    v[1, 1] = 200.0  # t[3, 2]
    kc.tile_assign(v, kc.tile_full(shape=(1, 2), value=300.0, dtype=float), offset=(0, 0))
    r = kc.tile_reshape(t, (COLS * ROWS,))
    r[COLS - 1] = 400.0  # t[0, 7]
    s = kc.tile_squeeze(kc.tile_view(t, offset=(3,), shape=(1, COLS)))
    s[0] = 500.0  # t[3, 0]
    kc.tile_store(out, t, bounds_check=False)


# ---- reassignment ------------------------------------------------------------------------


@kc.kernel
def accumulate(a: kc.array2d(dtype=float), out: kc.array2d(dtype=float), n: int):
    t = kc.tile_load(a, shape=(ROWS, COLS), bounds_check=False)
    acc = kc.tile_zeros(shape=(ROWS, COLS), dtype=float)
    p = kc.tile_ones(shape=(ROWS, COLS), dtype=float)
    for _k in range(n):
        acc = acc + t * p
        p = p * 0.5
    x = kc.tile_zeros(shape=(ROWS, COLS), dtype=float)
    k = int(0)
    while k < n:
        x += t
        k += 1
    kc.tile_store(out, acc, bounds_check=False)
    kc.tile_store(out, x, offset=(ROWS, 0), bounds_check=False)


@kc.kernel
def transpose_in_loop(a: kc.array2d(dtype=float), out: kc.array2d(dtype=float), n: int):
    t = kc.tile_load(a, shape=(TILE, TILE), bounds_check=False)
    for _k in range(n):
        t = kc.tile_transpose(t)
    if n > 10:
        t = kc.tile_transpose(t)
    kc.tile_store(out, t, bounds_check=False)


@kc.kernel
def rebind_straight_line(a: kc.array2d(dtype=float), out: kc.array2d(dtype=float),
                         out2: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(ROWS, COLS), bounds_check=False)
    v = kc.tile_transpose(t)
    t = t + 1.0  # a new tile: v still sees the old values
    t = kc.tile_transpose(t)  # rebinding to another shape is fine in straight-line code
    kc.tile_store(out, t - v, bounds_check=False)
    t += v  # in place
    kc.tile_store(out2, t, bounds_check=False)


# ---- tile(x), untile, launch shapes -------------------------------------------------------


@kc.kernel
def tile_untile(a: kc.array(dtype=float), v: kc.array(dtype=kc.vec3),
                out: kc.array(dtype=float), vout: kc.array(dtype=kc.vec3),
                shapes: kc.array(dtype=int)):
    i = kc.tid()
    t = kc.tile(a[i])
    s = kc.tile_sum(t * 2.0)
    out[i] = kc.untile(s) + kc.untile(t)
    w = kc.tile(v[i])
    vout[i] = kc.untile(w * 3.0)
    shapes[0] = t.shape[0]
    shapes[1] = w.shape[0] * 10 + w.shape[1]
    shapes[2] = kc.tile(v[i], preserve_type=True).shape[0]


@kc.kernel
def grid_1d(out: kc.array(dtype=int)):
    i, lane = kc.tid()
    kc.tile_store(out, kc.tile(i * 10 + lane), offset=i)


@kc.kernel
def grid_2d(out: kc.array2d(dtype=int), lanes: kc.array2d(dtype=int)):
    i, j = kc.tid()
    out[i, j] = i * 100 + j
    b, c, lane = kc.tid()
    lanes[b, c] = lane + 1


@kc.kernel
def grid_3d(out: kc.array3d(dtype=int)):
    i, j, k, lane = kc.tid()
    out[i, j, k] = i * 10000 + j * 100 + k + lane


# ---- autodiff ------------------------------------------------------------------------------


@kc.kernel
def tile_loss(x: kc.array2d(dtype=float), y: kc.array2d(dtype=float),
              loss: kc.array(dtype=float)):
    i = kc.tid()
    t = kc.tile_load(x, shape=(1, COLS), offset=(i, 0))
    s = kc.tile_map(kc.sin, t) * t
    kc.tile_store(y, s * 3.0, offset=(i, 0))
    kc.tile_atomic_add(loss, kc.tile_sum(s * s))


@kc.kernel
def square_sum(y: kc.array2d(dtype=float), loss: kc.array(dtype=float)):
    i, j = kc.tid()
    kc.atomic_add(loss, 0, y[i, j] * y[i, j])


@kc.kernel
def tile_grad_mix(x: kc.array2d(dtype=float), loss: kc.array(dtype=float), n: int):
    t = kc.tile_load(x, shape=(2, 4))
    acc = kc.tile_zeros(shape=(2, 4), dtype=float)
    for _k in range(n):
        acc = acc + t * t
    s = kc.tile_sum(kc.tile_transpose(acc), axis=0)
    kc.tile_atomic_add(loss, kc.tile_sum(s) + kc.tile_max(t) * 2.0)


@kc.kernel
def decaying_loss(x: kc.array2d(dtype=float), loss: kc.array(dtype=float), n: int):
    t = kc.tile_load(x, shape=(2, 4))
    acc = kc.tile_zeros(shape=(2, 4), dtype=float)
    for _k in range(n):
        acc = acc + t * t
        t = t * 0.5
    kc.tile_atomic_add(loss, kc.tile_sum(acc))


# ---- matrices, components --------------------------------------------------------------


@kc.kernel
def matrix_tiles(m: kc.array(dtype=kc.mat22), v: kc.array(dtype=kc.vec3),
                 out: kc.array(dtype=kc.mat22), total: kc.array(dtype=kc.mat22),
                 parts: kc.array2d(dtype=float)):
    i = kc.tid()
    t = kc.tile_load(m, shape=4, offset=i * 4)
    kc.tile_store(out, t * 2.0, offset=i * 4)
    kc.tile_atomic_add(total, kc.tile_sum(t))
    parts[i, 0] = kc.tile_extract(t, 1, 0, 1)
    row = kc.tile_extract(t, 2, 1)
    parts[i, 1] = row[0]
    parts[i, 2] = kc.untile(kc.tile(m[i]))[1, 0]
    w = kc.tile_load(v, shape=(2,), offset=i)
    parts[i, 3] = kc.tile_extract(w, 1, 2)


# ---- mistakes: each kernel holds one, on the line marked `# E` -----------------------------


@kc.func
def scale(x: float) -> float:
    return x * 2.0


@kc.func
def make_tile() -> float:
    return kc.tile_zeros(shape=4, dtype=float)  # E


@kc.kernel
def e_ndim(a: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=8)  # E
    kc.tile_store(a, t)


@kc.kernel
def e_shapes(a: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(4, 8))
    u = kc.tile_load(a, shape=(8, 4))
    kc.tile_store(a, t + u)  # E


@kc.kernel
def e_runtime_shape(a: kc.array(dtype=float), n: int):
    t = kc.tile_zeros(shape=n, dtype=float)  # E
    kc.tile_store(a, t)


@kc.kernel
def e_untile_wide(a: kc.array(dtype=float)):
    a[0] = kc.untile(kc.tile_load(a, shape=8))  # E


@kc.kernel
def e_func_argument(a: kc.array(dtype=float)):
    t = kc.tile_load(a, shape=8)
    a[0] = scale(t)  # E


@kc.kernel
def e_as_scalar(a: kc.array(dtype=float)):
    t = kc.tile_load(a, shape=8)
    a[0] = t  # E


@kc.kernel
def e_too_large(a: kc.array(dtype=float)):
    t = kc.tile_zeros(shape=(512, 256), dtype=float)  # E
    kc.tile_store(a, kc.tile_sum(t))


@kc.kernel
def e_store_dtype(a: kc.array(dtype=float)):
    t = kc.tile_zeros(shape=8, dtype=int)
    kc.tile_store(a, t)  # E


@kc.kernel
def e_loop_reshape(a: kc.array2d(dtype=float), n: int):
    t = kc.tile_load(a, shape=(4, 8))
    for _k in range(n):
        t = kc.tile_transpose(t)  # E
    kc.tile_store(a, t)


@kc.kernel
def e_func_returns_tile(a: kc.array(dtype=float)):
    a[0] = make_tile()


@kc.kernel
def e_transpose_1d(a: kc.array(dtype=float)):
    kc.tile_store(a, kc.tile_transpose(kc.tile_load(a, shape=8)))  # E


@kc.kernel
def e_view_offset(a: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(4, 8))
    kc.tile_store(a, kc.tile_view(t, offset=(4,)))  # E


@kc.kernel
def e_offset_count(a: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(4, 8), offset=(1, 2, 3))  # E
    kc.tile_store(a, t)


@kc.kernel
def e_if_tile(a: kc.array(dtype=float)):
    if kc.tile_load(a, shape=8):  # E
        a[0] = 1.0


# ---- a Warp program, run unchanged by Warp 1.19 and by kernelc (`wp` is either) ----------

WARP_PROGRAM = '''
TILE_M = wp.constant(4)
TILE_N = wp.constant(8)


@wp.func
def soft(x: float, y: float):
    return x * wp.sin(y) + 0.5 * x


@wp.kernel
def w_map_store(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float),
                out: wp.array2d(dtype=float), total: wp.array(dtype=float)):
    i, j = wp.tid()
    t = wp.tile_load(a, shape=(TILE_M, TILE_N), offset=(i * TILE_M, j * TILE_N))
    u = wp.tile_load(b, shape=(TILE_M, TILE_N), offset=(i * TILE_M, j * TILE_N))
    r = wp.tile_map(soft, t, u) + t * u - wp.tile_map(wp.exp, u * 0.25)
    wp.tile_store(out, r, offset=(i * TILE_M, j * TILE_N))
    wp.tile_atomic_add(total, wp.tile_sum(r))


@wp.kernel
def w_reduce(a: wp.array2d(dtype=float), rows: wp.array(dtype=float),
             cols: wp.array(dtype=float), best: wp.array(dtype=int),
             extremes: wp.array(dtype=float)):
    t = wp.tile_load(a, shape=(TILE_M, TILE_N))
    wp.tile_store(rows, wp.tile_sum(t, axis=1))
    wp.tile_store(cols, wp.tile_reduce(wp.max, t, axis=0))
    wp.tile_store(best, wp.tile_argmax(t))
    wp.tile_store(extremes, wp.tile_min(t), offset=0)
    wp.tile_store(extremes, wp.tile_max(t), offset=1)


@wp.kernel
def w_views(a: wp.array2d(dtype=float), row: wp.array(dtype=float),
            tr: wp.array2d(dtype=float), sub: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(TILE_M, TILE_N))
    r = wp.tile_load(row, shape=TILE_N)
    b = t + wp.tile_broadcast(wp.tile_reshape(r, shape=(1, TILE_N)), shape=(TILE_M, TILE_N))
    wp.tile_store(tr, wp.tile_transpose(b))
    wp.tile_store(sub, wp.tile_view(b, offset=(1, 2), shape=(2, 3)))


@wp.kernel
def w_loop(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float), n: int):
    t = wp.tile_load(a, shape=(TILE_M, TILE_N))
    acc = wp.tile_zeros(shape=(TILE_M, TILE_N), dtype=float)
    for k in range(n):
        acc += t * 0.5
    wp.tile_store(out, acc)


@wp.kernel
def w_vec3(a: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3),
           sums: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    t = wp.tile_load(a, shape=TILE_N, offset=i * TILE_N)
    m = wp.tile_map(wp.normalize, t)
    wp.tile_store(out, m, offset=i * TILE_N)
    wp.tile_store(sums, wp.tile_sum(t), offset=i)


def run_all(inputs):
    """Runs every kernel above on `inputs` (NumPy arrays); returns the outputs by name."""
    def arr(x, dtype=float):
        return wp.array(np.ascontiguousarray(x), dtype=dtype)
    res = {}
    a, b, s = arr(inputs["a"]), arr(inputs["b"]), arr(inputs["s"])
    out, total = arr(np.full((10, 13), np.nan, np.float32)), wp.zeros(1, dtype=float)
    wp.launch_tiled(w_map_store, dim=(3, 2), inputs=[a, b, out, total], block_dim=64)
    res["map_store"], res["total"] = out.numpy(), total.numpy()
    rows, cols = wp.zeros(4, dtype=float), wp.zeros(8, dtype=float)
    best, ext = wp.zeros(1, dtype=int), wp.zeros(2, dtype=float)
    wp.launch_tiled(w_reduce, dim=1, inputs=[s, rows, cols, best, ext], block_dim=64)
    res.update(rows=rows.numpy(), cols=cols.numpy(), best=best.numpy(), ext=ext.numpy())
    tr, sub = wp.zeros((8, 4), dtype=float), wp.zeros((2, 3), dtype=float)
    wp.launch_tiled(w_views, dim=1, inputs=[s, arr(inputs["row"]), tr, sub], block_dim=64)
    res["tr"], res["sub"] = tr.numpy(), sub.numpy()
    acc = wp.zeros((4, 8), dtype=float)
    wp.launch_tiled(w_loop, dim=1, inputs=[s, acc, 3], block_dim=64)
    res["loop"] = acc.numpy()
    vo, vs = wp.zeros(16, dtype=wp.vec3), wp.zeros(2, dtype=wp.vec3)
    wp.launch_tiled(w_vec3, dim=2, inputs=[arr(inputs["v"], wp.vec3), vo, vs], block_dim=64)
    res["vec_out"], res["vec_sums"] = vo.numpy(), vs.numpy()
    return res
'''
