"""Gradients of the index <-> world transforms of a volume with a general (non-symmetric) map.

kernelc keeps Warp's gradients: the float32 transforms pass the adjoint through the map
itself (M @ adj for index -> world, M^-1 @ adj for world -> index), the float64 ones
through its transpose. NumPy computes both from the volume's own map.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc


@kc.kernel
def _to_world(volume: kc.uint64, p: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    i = kc.tid()
    w = kc.vec3(0.5, -1.25, 2.0)
    out[i] = kc.dot(kc.volume_index_to_world(volume, p[i]), w) + kc.dot(
        kc.volume_index_to_world_dir(volume, p[i]), w)


@kc.kernel
def _to_index(volume: kc.uint64, p: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    i = kc.tid()
    w = kc.vec3(0.5, -1.25, 2.0)
    out[i] = kc.dot(kc.volume_world_to_index(volume, p[i]), w) + kc.dot(
        kc.volume_world_to_index_dir(volume, p[i]), w)


@kc.kernel
def _to_world_d(volume: kc.uint64, p: kc.array(dtype=kc.vec3d), out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    w = kc.vec3d(0.5, -1.25, 2.0)
    out[i] = kc.dot(kc.volume_index_to_world(volume, p[i]), w)


def _volume(rng) -> tuple[kc.Volume, np.ndarray]:
    matrix = rng.uniform(-1.0, 1.0, (3, 3)) + 2.0 * np.eye(3)
    tiles = kc.array(np.zeros((1, 3), np.int32), dtype=kc.int32)
    volume = kc.Volume.allocate_by_tiles(tiles, bg_value=1.0, transform=kc.mat33(*matrix.ravel()),
                                         translation=(0.5, 1.0, -2.0))
    return volume, np.array(volume.get_grid_info().transform_matrix, np.float64)


@pytest.mark.parametrize("kernel", [_to_world, _to_index])
def test_float32_transform_gradients_are_warps(rng, kernel):
    volume, m = _volume(rng)
    n = 8
    p = kc.array(rng.uniform(-4, 4, (n, 3)).astype(np.float32), dtype=kc.vec3, requires_grad=True)
    out = kc.full(n, np.nan, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(kernel, dim=n, inputs=[volume.id, p, out])
    tape.backward(grads={out: kc.ones(n, dtype=float)})
    w = np.array([0.5, -1.25, 2.0])
    linear = m if kernel is _to_world else np.linalg.inv(m)
    expected = np.tile(2.0 * (linear @ w), (n, 1))  # the map, not its transpose
    np.testing.assert_allclose(p.grad.numpy(), expected, rtol=1e-4, atol=1e-5)


def test_float64_transform_gradient_uses_the_transpose(rng):
    volume, m = _volume(rng)
    p = kc.array(rng.uniform(-4, 4, (4, 3)), dtype=kc.vec3d, requires_grad=True)
    out = kc.full(4, np.nan, dtype=kc.float64, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(_to_world_d, dim=4, inputs=[volume.id, p, out])
    tape.backward(grads={out: kc.ones(4, dtype=kc.float64)})
    expected = np.tile(m.T @ np.array([0.5, -1.25, 2.0]), (4, 1))
    np.testing.assert_allclose(p.grad.numpy(), expected, rtol=1e-6)
