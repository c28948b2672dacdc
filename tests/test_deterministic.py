"""`kc.DeterministicMode`: order-dependent atomics give the same bits on every run."""

import types

import numpy as np
import pytest

import kernelc as kc
from kernelc.runtime.cuda_launch import check_deterministic_cuda

N = 40_000  # above the size one thread runs alone, so the workers share the launch


@kc.kernel
def scatter_add(bins: kc.array(dtype=kc.int32), values: kc.array(dtype=float),
                out: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(out, bins[i], values[i])


@kc.kernel
def compact_positive(values: kc.array(dtype=float), count: kc.array(dtype=kc.int32),
                     out: kc.array(dtype=float)):
    i = kc.tid()
    if values[i] > 0.0:
        slot = kc.atomic_add(count, 0, 1)
        out[slot] = values[i]


@kc.kernel
def histogram(bins: kc.array(dtype=kc.int32), counts: kc.array(dtype=kc.int32)):
    i = kc.tid()
    kc.atomic_add(counts, bins[i], 1)


@kc.kernel
def own_element(values: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] += values[i]


@kc.kernel
def gather(bins: kc.array(dtype=kc.int32), x: kc.array(dtype=float),
           y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[bins[i]] * 2.0


@pytest.fixture
def two_threads(monkeypatch):
    monkeypatch.setattr(kc.config, "num_threads", 2)
    yield
    kc.config.deterministic = kc.DeterministicMode.NOT_GUARANTEED


@pytest.fixture
def data(rng):
    bins = rng.integers(0, 16, size=N).astype(np.int32)
    values = rng.normal(size=N).astype(np.float32)
    return bins, values


def _scatter(bins, values):
    out = kc.full(16, value=0.0, dtype=float)
    kc.launch(scatter_add, N, inputs=[kc.array(bins), kc.array(values), out])
    return out.numpy()


def test_gpu_to_gpu_adds_in_thread_order(two_threads, data):
    kc.config.deterministic = kc.DeterministicMode.GPU_TO_GPU
    bins, values = data
    expected = np.zeros(16, np.float32)
    np.add.at(expected, bins, values)  # one update after another, in index order
    for _ in range(3):
        np.testing.assert_array_equal(_scatter(bins, values), expected)


def test_run_to_run_sums_fixed_ranges_then_combines_them(two_threads, data):
    kc.config.deterministic = kc.DeterministicMode.RUN_TO_RUN
    bins, values = data
    partials = np.zeros((2, 16), np.float32)
    for k, (lo, hi) in enumerate([(0, N // 2), (N // 2, N)]):
        np.add.at(partials[k], bins[lo:hi], values[lo:hi])
    expected = (np.float32(0) + partials[0]) + partials[1]  # added copy by copy
    for _ in range(3):
        np.testing.assert_array_equal(_scatter(bins, values), expected)


@pytest.mark.parametrize("mode", [kc.DeterministicMode.RUN_TO_RUN,
                                  kc.DeterministicMode.GPU_TO_GPU])
def test_counters_hand_out_slots_in_thread_order(two_threads, rng, mode):
    kc.config.deterministic = mode
    values = rng.normal(size=N).astype(np.float32)
    count = kc.zeros(1, dtype=kc.int32)
    out = kc.full(N, value=np.nan, dtype=float)
    kc.launch(compact_positive, N, inputs=[kc.array(values), count, out])
    kept = values[values > 0]
    assert count.numpy()[0] == kept.size
    np.testing.assert_array_equal(out.numpy()[:kept.size], kept)


def test_only_order_dependent_kernels_run_in_order(two_threads, data):
    kc.config.deterministic = kc.DeterministicMode.GPU_TO_GPU
    bins, values = data
    b, v = kc.array(bins), kc.array(values)
    out, counts = kc.zeros(N, dtype=float), kc.zeros(16, dtype=kc.int32)
    assert kc.launch(scatter_add, N, inputs=[b, v, out], record_cmd=True).in_order
    # Integer adds commute exactly, and each thread owns its element here.
    assert not kc.launch(histogram, N, inputs=[b, counts], record_cmd=True).in_order
    assert not kc.launch(own_element, N, inputs=[v, out], record_cmd=True).in_order
    kc.config.deterministic = kc.DeterministicMode.NOT_GUARANTEED
    assert not kc.launch(scatter_add, N, inputs=[b, v, out], record_cmd=True).in_order


def test_module_option_overrides_the_config(two_threads, data):
    bins, values = data
    kc.set_module_options({"deterministic": kc.DeterministicMode.GPU_TO_GPU}, __name__)
    try:
        assert kc.get_module_options(__name__)["deterministic"] is kc.DeterministicMode.GPU_TO_GPU
        expected = np.zeros(16, np.float32)
        np.add.at(expected, bins, values)
        np.testing.assert_array_equal(_scatter(bins, values), expected)
        # ...and the other way round: a module that opts out keeps atomics unordered.
        kc.config.deterministic = kc.DeterministicMode.GPU_TO_GPU
        kc.set_module_options({"deterministic": kc.DeterministicMode.NOT_GUARANTEED},
                              __name__)
        out = kc.zeros(16, dtype=float)
        launch = kc.launch(scatter_add, N, inputs=[kc.array(bins), kc.array(values), out],
                           record_cmd=True)
        assert not launch.in_order
    finally:
        kc.set_module_options({"deterministic": None}, __name__)  # follow the config
    assert kc.get_module_options(__name__)["deterministic"] is None


def test_backward_scatter_is_ordered_too(two_threads, data):
    kc.config.deterministic = kc.DeterministicMode.GPU_TO_GPU
    bins, values = data
    x = kc.array(np.random.default_rng(1).normal(size=16).astype(np.float32),
                 requires_grad=True)
    y = kc.zeros(N, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(gather, N, inputs=[kc.array(bins), x], outputs=[y])
    tape.backward(grads={y: kc.array(values)})
    expected = np.zeros(16, np.float32)
    np.add.at(expected, bins, values * np.float32(2.0))
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_settings_are_checked():
    with pytest.raises(ValueError, match="DeterministicMode"):
        kc.config.deterministic = 1
    with pytest.raises(ValueError, match="DeterministicMode"):
        kc.set_module_options({"deterministic": "run_to_run"})
    with pytest.raises(ValueError, match="non-negative"):
        kc.config.deterministic_max_records = -1
    with pytest.raises(TypeError, match="bool"):
        kc.set_module_options({"deterministic_max_records": True})
    assert kc.config.deterministic is kc.DeterministicMode.NOT_GUARANTEED
    kc.config.deterministic_max_records = 8
    assert kc.config.deterministic_max_records == 8
    kc.config.deterministic_max_records = 0


def test_cuda_launches_refuse_what_they_cannot_order():
    # The check reads the kernel's IR only, so it runs without a GPU.
    compiled = types.SimpleNamespace(types=scatter_add.param_types, order_dependent=None)
    check_deterministic_cuda(scatter_add, compiled)  # NOT_GUARANTEED: nothing to check
    kc.config.deterministic = kc.DeterministicMode.RUN_TO_RUN
    try:
        with pytest.raises(kc.WarpDeterminismError, match=r"test_deterministic\.py:\d+: "
                           r"kernel 'scatter_add'.*on the CPU only"):
            check_deterministic_cuda(scatter_add, compiled)
        ints = types.SimpleNamespace(types=histogram.param_types, order_dependent=None)
        check_deterministic_cuda(histogram, ints)
    finally:
        kc.config.deterministic = kc.DeterministicMode.NOT_GUARANTEED


def test_a_reused_launch_follows_a_change_of_mode(two_threads, data):
    bins, values = data
    b, v, out = kc.array(bins), kc.array(values), kc.zeros(16, dtype=float)
    kc.launch(scatter_add, N, inputs=[b, v, out])  # packed while unordered
    kc.config.deterministic = kc.DeterministicMode.GPU_TO_GPU
    out.zero_()
    kc.launch(scatter_add, N, inputs=[b, v, out])  # the same objects: normally reused
    expected = np.zeros(16, np.float32)
    np.add.at(expected, bins, values)
    np.testing.assert_array_equal(out.numpy(), expected)


def _unique_scatter(options):
    @kc.kernel(module="unique", module_options=options)
    def unique_scatter(bins: kc.array(dtype=kc.int32), values: kc.array(dtype=float),
                       out: kc.array(dtype=float)):
        i = kc.tid()
        kc.atomic_add(out, bins[i], values[i])

    return unique_scatter


def test_module_options_of_a_unique_kernel(two_threads, data):
    bins, values = data
    ordered = _unique_scatter({"deterministic": kc.DeterministicMode.GPU_TO_GPU})
    free = _unique_scatter({"deterministic": kc.DeterministicMode.NOT_GUARANTEED})
    assert ordered.module != free.module  # one function, two modules
    assert ordered.module.options["deterministic"] is kc.DeterministicMode.GPU_TO_GPU
    expected = np.zeros(16, np.float32)
    np.add.at(expected, bins, values)
    out = kc.zeros(16, dtype=float)
    launch = kc.launch(ordered, N, inputs=[kc.array(bins), kc.array(values), out],
                       record_cmd=True)
    assert launch.in_order
    launch.launch()
    np.testing.assert_array_equal(out.numpy(), expected)
    launch = kc.launch(free, N, inputs=[kc.array(bins), kc.array(values), out],
                       record_cmd=True)
    assert not launch.in_order


def test_module_options_are_checked():
    with pytest.raises(TypeError, match="must be a dict"):
        kc.kernel(module="unique", module_options=[("fast_math", True)])(lambda: None)
    with pytest.raises(ValueError, match="requires module=\"unique\""):
        kc.kernel(module_options={"fast_math": True})(lambda: None)
    with pytest.raises(ValueError, match="unknown module_options: 'fast_mth'"):
        kc.kernel(module="unique", module_options={"fast_mth": True})(lambda: None)
    with pytest.raises(ValueError, match="block_dim"):
        kc.kernel(module="unique", module_options={"block_dim": 0})(lambda: None)
