"""`fem.cache.dynamic_func`, `dynamic_kernel` and `dynamic_struct`: one object per
definition and suffix, reused when the definition is met again."""

import numpy as np

import kernelc as kc
import kernelc.fem as fem


def _scaled_kernel(scale: float, suffix: str):
    """A kernel closing over `scale`, cached under `suffix`."""

    @fem.cache.dynamic_func(suffix=suffix)
    def scaled(x: float):
        return x * scale

    @fem.cache.dynamic_kernel(suffix=suffix, kernel_options={"enable_backward": False})
    def apply(values: kc.array(dtype=float)):
        i = kc.tid()
        values[i] = scaled(values[i])

    return apply


def test_one_kernel_per_suffix():
    twice, again, thrice = (_scaled_kernel(2.0, "two"), _scaled_kernel(5.0, "two"),
                            _scaled_kernel(3.0, "three"))
    assert twice is again and twice is not thrice
    rng = np.random.default_rng(0)
    data = rng.uniform(1.0, 2.0, 16).astype(np.float32)
    for kernel, factor in ((again, 2.0), (thrice, 3.0)):  # the first definition's scale
        values = kc.array(data, dtype=float)
        kc.launch(kernel, len(data), [values])
        np.testing.assert_allclose(values.numpy(), factor * data, rtol=1e-6)


def _overloaded(dtype: type):
    @fem.cache.dynamic_func(suffix="half", allow_overloads=True)
    def half(x: dtype):
        return x * dtype(0.5)

    return half


@kc.kernel
def halves(a: kc.array(dtype=float), b: kc.array(dtype=kc.float64)):
    a[0] = _HALF(a[0])
    b[0] = _HALF(b[0])


_HALF = _overloaded(kc.float32)


def test_overloads_and_structs():
    assert _overloaded(kc.float64) is _HALF and _overloaded(kc.float32) is _HALF
    a, b = kc.array([3.0], dtype=float), kc.array([5.0], dtype=kc.float64)
    kc.launch(halves, 1, [a, b])
    assert a.numpy()[0] == 1.5 and b.numpy()[0] == 2.5

    def make(suffix):
        @fem.cache.dynamic_struct(suffix=suffix)
        class Pair:
            x: float
            y: int
        return Pair

    assert make("a") is make("a") and make("a") is not make("b")
    pair = make("a")()
    pair.x, pair.y = 1.5, 2
    assert (pair.x, pair.y) == (1.5, 2)
