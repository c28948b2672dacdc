"""`@kc.kernel(module="unique")`: a definition repeated with the same code and captured
values is the same kernel (compiled once), as in Warp; anything that differs makes a new
kernel with a module of its own."""

from __future__ import annotations

import numpy as np

import kernelc as kc
from tests.conftest import poisoned


@kc.func
def add_ten(x: int) -> int:
    return x + 10


@kc.func
def add_twenty(x: int) -> int:
    return x + 20


def offset_kernel(offset: int, helper=add_ten):
    @kc.kernel(module="unique")
    def shifted(inp: kc.array(dtype=int), out: kc.array(dtype=int)):
        i = kc.tid()
        out[i] = helper(inp[i]) + offset

    return shifted


def _run(kernel) -> np.ndarray:
    out = poisoned(3, np.int32)
    kc.launch(kernel, 3, [kc.array(np.array([1, 2, 3], np.int32)), out])
    return out.numpy()


def test_the_same_definition_is_the_same_kernel():
    first, again = offset_kernel(5), offset_kernel(5)
    assert first is again and first.module is again.module
    np.testing.assert_array_equal(_run(again), [16, 17, 18])
    compiled = len(first.compiled)
    _run(offset_kernel(5))
    assert len(first.compiled) == compiled  # compiled once


def test_other_captured_values_make_other_kernels():
    kernels = [offset_kernel(5), offset_kernel(7), offset_kernel(5, add_twenty)]
    assert len({id(k) for k in kernels}) == 3
    assert len({str(k.module) for k in kernels}) == 3  # each has a module of its own
    np.testing.assert_array_equal(_run(kernels[1]), [18, 19, 20])
    np.testing.assert_array_equal(_run(kernels[2]), [26, 27, 28])


def test_mutable_captures_and_static_values_always_make_new_kernels():
    def with_list(values):
        @kc.kernel(module="unique")
        def k(out: kc.array(dtype=int)):
            out[kc.tid()] = values[0]

        return k

    def with_static(values):
        @kc.kernel(module="unique")
        def k(out: kc.array(dtype=int)):
            out[kc.tid()] = kc.static(values[0])

        return k

    shared = [4]
    assert with_list(shared) is not with_list(shared)  # a list may change in between
    first = with_static((1,))
    assert first is not with_static((1,))
    out = poisoned(2, np.int32)
    kc.launch(with_static((9,)), 2, [out])
    np.testing.assert_array_equal(out.numpy(), [9, 9])


def test_options_are_part_of_the_kernel():
    def make(backward):
        @kc.kernel(module="unique", enable_backward=backward)
        def k(out: kc.array(dtype=float)):
            out[kc.tid()] = 1.0

        return k

    assert make(False) is make(False)
    assert make(False) is not make(True)


SCALE = 2.0


def scaled_kernel():
    @kc.kernel(module="unique")
    def scaled(out: kc.array(dtype=float)):
        out[kc.tid()] = SCALE

    return scaled


def test_a_changed_global_makes_another_kernel():
    global SCALE
    first = scaled_kernel()
    assert scaled_kernel() is first
    out = poisoned(1, np.float32)
    kc.launch(first, 1, [out])
    assert out.numpy()[0] == 2.0
    SCALE = 5.0
    try:
        second = scaled_kernel()
        assert second is not first
        kc.launch(second, 1, [out])
        assert out.numpy()[0] == 5.0
    finally:
        SCALE = 2.0
