"""Gradients through the arrays of `kc.mesh_get(id)`: reads of a mesh's points and
velocities add into the `.grad` of the arrays the mesh was built from, as in Warp, in
kernels and in funcs; a mesh whose arrays have no gradient gets none."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from kernelc import types as T
from kernelc.autodiff.kernel import adjoint_kernel

TETRA = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
                 np.float32)
FACES = np.array([0, 1, 2, 0, 2, 3, 0, 3, 1, 1, 3, 2], np.int32)


@kc.func
def triangle_area(mesh_id: kc.uint64, t: int):
    m = kc.mesh_get(mesh_id)
    a = m.points[m.indices[3 * t]]
    b = m.points[m.indices[3 * t + 1]]
    c = m.points[m.indices[3 * t + 2]]
    return kc.length(kc.cross(b - a, c - a)) * 0.5


@kc.kernel
def total_area(mesh_id: kc.uint64, out: kc.array(dtype=float)):
    kc.atomic_add(out, 0, triangle_area(mesh_id, kc.tid()))


@kc.kernel
def weighted(mesh_id: kc.uint64, w: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    i = kc.tid()
    m = kc.mesh_get(mesh_id)
    out[i] = kc.dot(m.points[i], w[i]) + 3.0 * kc.dot(m.velocities[i], w[i])


@kc.kernel
def weighted_points(mesh_id: kc.uint64, w: kc.array(dtype=kc.vec3),
                    out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = kc.dot(kc.mesh_get(mesh_id).points[i], w[i])


def _area(points: np.ndarray) -> float:
    tris = points[FACES.reshape(-1, 3)].astype(np.float64)
    cross = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    return float(0.5 * np.linalg.norm(cross, axis=1).sum())


def test_points_gradient_through_a_func_matches_finite_differences():
    points = kc.array(TETRA, dtype=kc.vec3, requires_grad=True)
    mesh = kc.Mesh(points=points, indices=kc.array(FACES))
    out = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(total_area, 4, [mesh.id, out])
    tape.backward(loss=out)
    assert out.numpy()[0] == pytest.approx(_area(TETRA), rel=1e-6)
    eps = 1e-3
    numeric = np.zeros_like(TETRA, dtype=np.float64)
    for i in range(4):
        for j in range(3):
            up, down = TETRA.astype(np.float64), TETRA.astype(np.float64)
            up[i, j] += eps
            down[i, j] -= eps
            numeric[i, j] = (_area(up) - _area(down)) / (2 * eps)
    np.testing.assert_allclose(points.grad.numpy(), numeric, atol=1e-4)


def test_points_and_velocities_gradients_in_a_kernel(rng):
    n = 4
    w_np = rng.uniform(-2.0, 2.0, (n, 3)).astype(np.float32)
    points = kc.array(TETRA, dtype=kc.vec3, requires_grad=True)
    velocities = kc.array(rng.uniform(-1, 1, (n, 3)).astype(np.float32), dtype=kc.vec3,
                          requires_grad=True)
    mesh = kc.Mesh(points=points, indices=kc.array(FACES), velocities=velocities)
    w = kc.array(w_np, dtype=kc.vec3, requires_grad=True)
    out = kc.zeros(n, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(weighted, n, [mesh.id, w, out])
    tape.backward(grads={out: kc.ones(n, dtype=float)})
    np.testing.assert_allclose(points.grad.numpy(), w_np, rtol=1e-6)
    np.testing.assert_allclose(velocities.grad.numpy(), 3.0 * w_np, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), TETRA + 3.0 * velocities.numpy(), rtol=1e-6)


def test_a_mesh_without_gradients_still_differentiates_the_rest(rng):
    w_np = rng.uniform(-2.0, 2.0, (4, 3)).astype(np.float32)
    mesh = kc.Mesh(points=kc.array(TETRA, dtype=kc.vec3), indices=kc.array(FACES))
    w = kc.array(w_np, dtype=kc.vec3, requires_grad=True)
    out = kc.zeros(4, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(weighted_points, 4, [mesh.id, w, out])
    tape.backward(grads={out: kc.ones(4, dtype=float)})
    np.testing.assert_allclose(w.grad.numpy(), TETRA, rtol=1e-6)


def test_backward_kernel_compiles_with_nvrtc():
    pytest.importorskip("cuda.bindings.nvrtc")
    types = [T.uint64, T.ArrayType(T.float32, 1)]
    c = kc.compile(adjoint_kernel(total_area), target="cuda", arch=90,
                   arg_types=[*types, *types, kc.uint64])
    assert c.format == "cubin" and "__global__" in c.source
