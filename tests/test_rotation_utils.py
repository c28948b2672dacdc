"""`quat_between_vectors` and `transform_expand` (Warp's utilities), bit for bit with Warp."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import run_warp


@kc.kernel
def between(a: kc.array(dtype=kc.vec3), b: kc.array(dtype=kc.vec3), q: kc.array(dtype=kc.quat)):
    i = kc.tid()
    q[i] = kc.quat_between_vectors(a[i], b[i])


def test_quat_between_vectors_matches_warp(rng, tmp_path):
    n = 64
    an = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    bn = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    q = kc.full(n, np.nan, dtype=kc.quat)
    kc.launch(between, n, [kc.array(an, dtype=kc.vec3), kc.array(bn, dtype=kc.vec3), q])
    host = np.array([np.asarray(kc.quat_between_vectors(kc.vec3(*x), kc.vec3(*y)))
                     for x, y in zip(an, bn)])
    want = run_warp("""
        @wp.kernel
        def between(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3),
                    q: wp.array(dtype=wp.quat)):
            i = wp.tid()
            q[i] = wp.quat_between_vectors(a[i], b[i])

        a = wp.array(inputs["a"], dtype=wp.vec3)
        b = wp.array(inputs["b"], dtype=wp.vec3)
        q = wp.zeros(len(a), dtype=wp.quat)
        wp.launch(between, len(a), [a, b, q])
        results["q"] = q.numpy()
        results["expand"] = np.array(wp.transform_expand([1.0, 2.0, 3.0, 0.0, 0.6, 0.0, 0.8]))
    """, tmp_path, a=an, b=bn)
    np.testing.assert_array_equal(q.numpy(), want["q"])
    np.testing.assert_allclose(host, want["q"], rtol=1e-6, atol=1e-7)  # host: NumPy's rounding
    # the rotation takes a's direction onto b's
    for x, y, r in zip(an, bn, q.numpy()):
        rotated = kc.quat_rotate(kc.quat(*r), kc.vec3(*(x / np.linalg.norm(x))))
        np.testing.assert_allclose(np.asarray(rotated), y / np.linalg.norm(y), atol=1e-5)
    expand = kc.transform_expand([1.0, 2.0, 3.0, 0.0, 0.6, 0.0, 0.8])
    np.testing.assert_array_equal(np.array(expand), want["expand"])


def test_transform_expand_needs_seven_numbers():
    t = kc.transform_expand(np.arange(7.0))
    np.testing.assert_array_equal(np.asarray(kc.transform_get_translation(t)), [0, 1, 2])
    with pytest.raises(ValueError, match="7 numbers"):
        kc.transform_expand([0.0, 1.0, 2.0])
