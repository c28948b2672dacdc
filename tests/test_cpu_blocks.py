"""CPU blocks of several lanes (`config.enable_cpu_blocks`): tile operations run once per
block, per-lane code once per lane, and `tile(x)` / `untile` move values between them."""

import numpy as np
import pytest

import kernelc as kc
from kernelc.errors import KernelError

B = 8  # lanes per block


@pytest.fixture(autouse=True)
def cpu_blocks():
    kc.config.enable_cpu_blocks = True
    yield
    kc.config.enable_cpu_blocks = False


@kc.kernel
def gather_and_share(a: kc.array(dtype=float), out: kc.array(dtype=float),
                     lanes: kc.array(dtype=int)):
    i = kc.tid()
    x = a[i] * 2.0
    t = kc.tile(x)
    s = kc.tile_sum(t)
    third = kc.tile_from_thread(shape=B, value=x, thread_idx=3)
    out[i] = kc.tile_extract(s, 0) + kc.untile(third + t)
    lanes[i] = kc.block_dim()


def test_tile_gathers_one_value_per_lane():
    rng = np.random.default_rng(1)
    n = 4 * B
    a_np = rng.uniform(0.5, 2.0, n).astype(np.float32)
    out = kc.full(n, -999.0, dtype=float)
    lanes = kc.full(n, -1, dtype=int)
    kc.launch(gather_and_share, dim=n, inputs=[kc.array(a_np)], outputs=[out, lanes],
              block_dim=B)
    x = (a_np * 2.0).reshape(-1, B)
    expected = x.sum(axis=1, keepdims=True) + x[:, 3:4] + x
    np.testing.assert_allclose(out.numpy(), expected.ravel(), rtol=1e-6)
    assert (lanes.numpy() == B).all()


@kc.kernel
def partial_sum(a: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    s = kc.tile_sum(kc.tile(a[i]))
    out[i] = kc.tile_extract(s, 0)


def test_partial_last_block_gathers_zeros_for_missing_lanes():
    rng = np.random.default_rng(2)
    n = 2 * B + 3
    a_np = rng.uniform(-1.0, 1.0, n).astype(np.float32)
    out = kc.full(n, np.nan, dtype=float)
    kc.launch(partial_sum, dim=n, inputs=[kc.array(a_np)], outputs=[out], block_dim=B)
    expected = np.array([a_np[k - k % B:k - k % B + B].sum() for k in range(n)])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5)


@kc.kernel
def rows_tiled(a: kc.array2d(dtype=float), out: kc.array2d(dtype=float)):
    i, lane = kc.tid()
    row = kc.tile_load(a[i], shape=B)
    total = kc.tile_sum(row)
    out[i, lane] = kc.untile(row) * 2.0 + kc.tile_extract(total, 0) + float(lane)


def test_launch_tiled_appends_the_lanes():
    rng = np.random.default_rng(3)
    a_np = rng.uniform(-1.0, 1.0, (5, B)).astype(np.float32)
    out = kc.full((5, B), -999.0, dtype=float)
    kc.launch_tiled(rows_tiled, dim=5, inputs=[kc.array(a_np)], outputs=[out], block_dim=B)
    expected = a_np * 2.0 + a_np.sum(axis=1, keepdims=True) + np.arange(B)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5)


@kc.kernel
def loop_with_tiles(a: kc.array2d(dtype=float), stop: int, out: kc.array(dtype=float)):
    i = kc.tid()
    acc = float(0.0)
    k = int(0)
    for step in range(a.shape[0]):
        row = kc.tile_load(a[step], shape=B)
        if step == stop:
            break  # every lane takes it: the whole block leaves the loop
        acc += kc.untile(row) * float(step + 1)
        k += 1
    out[i] = acc + float(k) * 1000.0


def test_locals_live_per_lane_across_tile_operations():
    rng = np.random.default_rng(4)
    a_np = rng.uniform(-1.0, 1.0, (6, B)).astype(np.float32)
    out = kc.full(B, -999.0, dtype=float)
    kc.launch(loop_with_tiles, dim=B, inputs=[kc.array(a_np), 4], outputs=[out], block_dim=B)
    weights = np.arange(1, 5, dtype=np.float32)[:, None]
    expected = (a_np[:4] * weights).sum(axis=0) + 4000.0
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5)


@kc.kernel
def retire_negative(a: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    if a[i] < 0.0:
        return
    s = kc.tile_sum(kc.tile(a[i]))
    out[i] = kc.tile_extract(s, 0)


def test_a_returned_lane_sits_out_the_block():
    rng = np.random.default_rng(5)
    n = 3 * B
    a_np = rng.uniform(-1.0, 1.0, n).astype(np.float32)
    out = kc.full(n, -999.0, dtype=float)
    kc.launch(retire_negative, dim=n, inputs=[kc.array(a_np)], outputs=[out], block_dim=B)
    kept = np.where(a_np < 0.0, 0.0, a_np).reshape(-1, B).sum(axis=1).repeat(B)
    expected = np.where(a_np < 0.0, -999.0, kept)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5)


@kc.kernel
def assign_lanes(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    _i, j = kc.tid()
    t = kc.tile_zeros(shape=(B,), dtype=float)
    t[j] = x[j] * x[j]
    kc.tile_atomic_add(y, t, offset=(0,))


def test_gradients_flow_through_lanes():
    rng = np.random.default_rng(6)
    x_np = rng.uniform(0.5, 2.0, B).astype(np.float32)
    x = kc.array(x_np, requires_grad=True)
    y = kc.zeros(B, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(assign_lanes, dim=[1, B], inputs=[x], outputs=[y], block_dim=B)
    np.testing.assert_allclose(y.numpy(), x_np * x_np, rtol=1e-6)
    y.grad = kc.ones_like(y)
    tape.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * x_np, rtol=1e-6)


def test_without_the_switch_block_dim_does_not_make_lanes():
    kc.config.enable_cpu_blocks = False
    rng = np.random.default_rng(7)
    a_np = rng.uniform(-1.0, 1.0, 2 * B).astype(np.float32)
    out = kc.full(2 * B, np.nan, dtype=float)
    kc.launch(partial_sum, dim=2 * B, inputs=[kc.array(a_np)], outputs=[out], block_dim=B)
    np.testing.assert_allclose(out.numpy(), a_np, rtol=1e-6)  # one lane: its own value


@kc.func
def lane_of_tid() -> int:
    return kc.tid()


@kc.kernel
def func_reads_tid(out: kc.array(dtype=int)):
    t = kc.tile_zeros(shape=(B,), dtype=int)
    out[0] = lane_of_tid() + kc.tile_extract(t, 0)


def test_errors():
    out = kc.zeros(B, dtype=int)
    with pytest.raises(KernelError, match="a func cannot call tid"):
        kc.launch(func_reads_tid, dim=B, outputs=[out], block_dim=B)
    with pytest.raises(ValueError, match="at most 1024"):
        kc.launch(partial_sum, dim=4, inputs=[kc.zeros(4)], outputs=[kc.zeros(4)],
                  block_dim=2048)


@kc.kernel
def stack_round_trip(out: kc.array(dtype=int)):
    _i, j = kc.tid()
    s = kc.tile_stack(capacity=B, dtype=int)
    kc.tile_stack_push(s, j * 10 + 3, True)
    value, slot = kc.tile_stack_pop(s)
    if slot != -1:
        out[slot] = value


@kc.kernel
def lanes_update_one_element(a: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    t = kc.tile_zeros(shape=(1,), dtype=float)
    t[0] += a[i]
    out[i] = t[0]


def test_lanes_meet_at_stack_and_element_updates():
    out = kc.full(B, -1, dtype=int)
    kc.launch_tiled(stack_round_trip, dim=1, outputs=[out], block_dim=B)
    assert sorted(out.numpy().tolist()) == [j * 10 + 3 for j in range(B)]
    rng = np.random.default_rng(8)
    a_np = rng.integers(1, 100, 2 * B).astype(np.float32)
    total = kc.full(2 * B, np.nan, dtype=float)
    kc.launch(lanes_update_one_element, dim=2 * B, inputs=[kc.array(a_np)], outputs=[total],
              block_dim=B)
    np.testing.assert_array_equal(total.numpy(), a_np.reshape(-1, B).sum(axis=1).repeat(B))


@kc.kernel
def scaled_by_block(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] * float(kc.block_dim())


def test_recorded_launches_keep_their_block_size():
    x = kc.array(np.arange(1, 6, dtype=np.float32), requires_grad=True)
    y = kc.zeros(5, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(scaled_by_block, dim=5, inputs=[x], outputs=[y], block_dim=4)
    assert tape.launches[0][6] == 4
    kc.config.enable_cpu_blocks = False  # the backward launch still runs blocks of 4
    tape.backward(grads={y: kc.ones_like(y)})
    np.testing.assert_array_equal(x.grad.numpy(), np.full(5, 4.0, dtype=np.float32))
    kc.config.enable_cpu_blocks = True
    cmd = kc.launch(scaled_by_block, dim=5, inputs=[x], outputs=[y], block_dim=4,
                    record_cmd=True)
    assert cmd.block_dim == 4
    kc.config.enable_cpu_blocks = False
    y.zero_()
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), 4.0 * x.numpy())


@kc.kernel
def bvh_hits(bvh: kc.uint64, lower: kc.vec3, upper: kc.vec3, hits: kc.array(dtype=int)):
    query = kc.tile_bvh_query_aabb(bvh, lower, upper)
    while kc.tile_query_valid(query):
        item = kc.untile(kc.tile_bvh_query_next(query))
        if item >= 0:
            kc.atomic_add(hits, item, 1)


def test_tiled_queries_hand_each_lane_a_result():
    rng = np.random.default_rng(9)
    centers = rng.uniform(0.0, 10.0, (200, 3)).astype(np.float32)
    lowers, uppers = centers - 0.5, centers + 0.5
    bvh = kc.Bvh(kc.array(lowers, dtype=kc.vec3), kc.array(uppers, dtype=kc.vec3))
    lo, hi = np.array([2.0, 2.0, 2.0], np.float32), np.array([7.0, 6.0, 8.0], np.float32)
    hits = kc.zeros(200, dtype=int)
    kc.launch_tiled(bvh_hits, dim=1, inputs=[bvh.id, kc.vec3(*lo), kc.vec3(*hi)],
                    outputs=[hits], block_dim=B)
    overlap = np.all((lowers <= hi) & (uppers >= lo), axis=1)
    np.testing.assert_array_equal(hits.numpy(), overlap.astype(np.int32))


@kc.kernel
def show_tiles(x: kc.array(dtype=kc.int32)):
    t = kc.tile_load(x, shape=4)
    kc.print(t)
    m = kc.tile_ones(shape=(2, 3), dtype=float, storage="shared") * 1.5
    print(m)


def test_print_of_a_tile_is_the_blocks(capfd):
    rng = np.random.default_rng(10)
    x_np = rng.integers(-50, 50, 4).astype(np.int32)
    kc.launch_tiled(show_tiles, dim=1, inputs=[kc.array(x_np)], block_dim=B)
    out = capfd.readouterr().out
    row = " ".join(str(v) for v in x_np)
    # once per block (not once per lane), laid out as Warp prints tiles
    assert out.count(f"[{row}] = tile(shape=(4), storage=register)\n") == 1
    assert "[[1.5 1.5 1.5]\n [1.5 1.5 1.5]] = tile(shape=(2,3), storage=register)\n" in out


@kc.kernel
def shift_right(a: kc.array(dtype=float), out: kc.array(dtype=float), bumped: kc.array(dtype=float)):
    t = kc.tile_load(a, shape=B)
    t[1:] = t[:-1]  # a tile into a view: copied once for the block, as NumPy would
    kc.tile_store(out, t)
    u = kc.tile_zeros(shape=B, dtype=float)
    u[1] += 1.0  # an element updated by every lane, one after another (as in Warp)
    kc.tile_store(bumped, u)


def test_tile_copies_run_once_and_element_updates_once_per_lane():
    rng = np.random.default_rng(11)
    a_np = rng.uniform(-1.0, 1.0, B).astype(np.float32)
    out, bumped = kc.full(B, np.nan, dtype=float), kc.full(B, np.nan, dtype=float)
    kc.launch_tiled(shift_right, dim=1, inputs=[kc.array(a_np)], outputs=[out, bumped],
                    block_dim=B)
    np.testing.assert_array_equal(out.numpy(), np.concatenate([a_np[:1], a_np[:-1]]))
    np.testing.assert_array_equal(bumped.numpy(), np.eye(B, dtype=np.float32)[1] * B)


@kc.kernel
def gather_squares(x: kc.array(dtype=float), total: kc.array(dtype=float),
                   tripled: kc.array(dtype=float)):
    i = kc.tid()
    v = x[i] * x[i]
    kc.tile_atomic_add(total, kc.tile_sum(kc.tile(v)))
    tripled[i] = kc.untile(kc.tile(v) * 3.0)


def test_gradients_flow_through_gathers_on_a_partial_block():
    rng = np.random.default_rng(12)
    n = 2 * B + 4
    x_np = rng.uniform(0.5, 2.0, n).astype(np.float32)
    x = kc.array(x_np, requires_grad=True)
    total = kc.zeros(1, dtype=float, requires_grad=True)
    tripled = kc.full(n, np.nan, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(gather_squares, dim=n, inputs=[x], outputs=[total, tripled], block_dim=B)
    np.testing.assert_allclose(total.numpy(), [(x_np * x_np).sum()], rtol=1e-5)
    np.testing.assert_allclose(tripled.numpy(), 3.0 * x_np * x_np, rtol=1e-6)
    tape.backward(grads={total: kc.ones(1, dtype=float), tripled: kc.ones(n, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), 8.0 * x_np, rtol=1e-6)


def test_kernel_history_counts_a_blocked_launch():
    out = kc.zeros(1, dtype=float)
    tripled = kc.zeros(3 * B, dtype=float)
    x = kc.array(np.linspace(1.0, 2.0, 3 * B, dtype=np.float32))
    with kc.scoped_set_flag(kc.JitFlag.KernelHistory, True):
        kc.launch(gather_squares, dim=3 * B, inputs=[x], outputs=[out, tripled], block_dim=B)
        history = kc.kernel_history()
    assert [h["name"] for h in history] == ["gather_squares"]
    assert history[0]["dim"] in ((3 * B,), [3 * B], 3 * B)
