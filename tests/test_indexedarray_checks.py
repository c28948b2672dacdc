"""`kc.indexedarray`: debug-mode bounds checks, error reports (launch and compile errors,
with their positions), and gradients (none flow through indexed arrays, as in Warp)."""

from __future__ import annotations

import re

import indexedarray_kernels as K
import numpy as np
import pytest

import kernelc as wp
from tests.conftest import poisoned


def _ints(values) -> wp.array:
    return wp.array(np.asarray(values, dtype=np.int32), dtype=wp.int32)


# ---- debug checks ---------------------------------------------------------------------------------


def test_debug_mode_bounds_checks(debug_mode):
    data = wp.array(np.arange(10, dtype=np.float32))
    a = data[_ints([9, 3, 5])]
    out = wp.zeros(3)
    with pytest.raises(wp.KernelRuntimeError,
                       match=re.escape("array index (3,) out of bounds for shape (3,)")):
        wp.launch(K.read_at, dim=3, inputs=[a, out, 1])  # past the dimension
    with pytest.raises(wp.KernelRuntimeError, match=re.escape("(-1,) out of bounds")):
        wp.launch(K.read_at, dim=3, inputs=[a, out, -4])  # before it, even counted from the end
    bad = data[_ints([9, 30, 5])]
    with pytest.raises(wp.KernelRuntimeError,
                       match=re.escape("array index (30,) out of bounds for shape (10,)")):
        wp.launch(K.read_at, dim=3, inputs=[bad, out, 0])  # an entry past the data
    unindexed = wp.indexedarray(data)
    with pytest.raises(wp.KernelRuntimeError, match=re.escape("(10,) out of bounds")):
        wp.launch(K.read_at, dim=2, inputs=[unindexed, out, 9])
    err = None
    try:
        wp.launch(K.read_at, dim=3, inputs=[a, out, 1])
    except wp.KernelRuntimeError as e:
        err = str(e)
    assert "indexedarray_kernels.py:" in err and "in kernel 'read_at'" in err and "^" in err


def test_release_mode_reads_in_range():
    data = wp.array(np.arange(10, dtype=np.float32))
    out = poisoned(3, np.float32)
    wp.launch(K.read_at, dim=3, inputs=[data[_ints([9, 3, 5])], out, -3])
    assert out.numpy().tolist() == [9, 3, 5]


# ---- errors -------------------------------------------------------------------------------------


def test_launch_errors():
    data = wp.zeros(6)
    a = data[_ints([1, 2])]
    cases = [
        (K.read_at, [data, wp.zeros(2), 0], "argument 'a': expected indexedarray(dtype=float32, "
                                            "ndim=1), got a kc.array"),
        (K.scale_generic, [wp.zeros((2, 2))[_ints([0])], 1.0], "expected a 1-d indexedarray, "
                                                               "got a 2-d one"),
        (K.read_at, [wp.zeros(6, dtype=wp.float64)[_ints([0])], wp.zeros(2), 0],
         "expected an indexedarray of float32, got one of float64"),
        (K.read_at, [wp.indexedarray(dtype=float), wp.zeros(2), 0], "type-only indexedarray"),
        (K.weighted_square, [a, a, wp.zeros(2)], "argument 'x': expected array(dtype=float32, "
                                                 "ndim=1), got a kc.indexedarray"),
        (K.read_at, [np.zeros(2, np.float32), wp.zeros(2), 0], "got ndarray"),
    ]
    for kernel, args, message in cases:
        with pytest.raises(wp.KernelError) as info:
            wp.launch(kernel, dim=2, inputs=args)
        assert message in str(info.value)
        assert "indexedarray_kernels.py:" in str(info.value)


def test_compile_errors_point_at_the_source():
    import indexedarray_bad_kernels as B

    a1, a2 = wp.zeros(3)[_ints([0])], wp.zeros((2, 2))[_ints([0])]
    for kernel, args, where, message in (
            (B.too_many, [a1], ":10:5", "a 1-d array needs 1 indices, got 2"),
            (B.wrong_value, [a1], ":15:5", "cannot store a float64 value in an array of float32"),
            (B.no_data, [a1], ":20:9", "has no attribute 'data'"),
            (B.atomic_ndim, [a2], ":25:5", "2-d array indexed with 1 indices"),
            (B.passes_indexed, [a1, wp.zeros(1)], ":35:14",
             "argument 'a' of 'takes_array' expects array(dtype=float32, ndim=1), got "
             "indexedarray(dtype=float32, ndim=1)")):
        with pytest.raises(wp.KernelError) as info:
            wp.launch(kernel, dim=1, inputs=args)
        text = str(info.value)
        assert f"indexedarray_bad_kernels.py{where}" in text, text
        assert message in text and "^" in text


# ---- gradients ---------------------------------------------------------------------------------


def test_no_gradients_through_indexed_arrays(rng):
    """As Warp's kernels: values read through an indexed array are constants in backward
    passes (Warp's adjoints of indexed accesses are empty), other gradients are exact."""
    values = rng.uniform(1, 2, 6).astype(np.float32)
    data = wp.array(values, requires_grad=True)
    a = data[_ints([5, 0, 2])]
    x = wp.array(rng.uniform(1, 2, 3).astype(np.float32), requires_grad=True)
    y = wp.zeros(3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(K.weighted_square, dim=3, inputs=[a, x], outputs=[y])
    tape.backward(grads={y: wp.ones(3)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * values[[5, 0, 2]] * x.numpy(), rtol=1e-6)
    assert (data.grad.numpy() == 0).all()
    adj_x = wp.zeros(3)
    wp.launch(K.weighted_square, dim=3, inputs=[a, x, y], adj_inputs=[None, adj_x, wp.ones(3)],
              adjoint=True)
    np.testing.assert_allclose(adj_x.numpy(), 2 * values[[5, 0, 2]] * x.numpy(), rtol=1e-6)
