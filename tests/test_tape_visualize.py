"""`Tape.visualize` (Graphviz dot code of the recorded operations) and the read marks of
`verify_autograd_array_access` around gradient checks."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import kernelc as kc


@kc.kernel
def dot_product(x: kc.array(dtype=float), y: kc.array(dtype=float), z: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(z, 0, x[i] * y[i])


@kc.kernel
def scale(x: kc.array(dtype=float), s: float, y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] * s


@kc.struct
class Pair:
    a: kc.array(dtype=float)
    b: kc.array(dtype=float)


@kc.kernel
def add_pair(p: Pair, out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = p.a[i] + p.b[i]


def _edges(dot: str) -> set[tuple[str, str]]:
    """(from label, to label) of every edge, with node ids resolved to labels."""
    labels = dict(re.findall(r'^\s*(\w+) \[label="([^"]*)"', dot, re.M))
    return {(labels[a], labels[b]) for a, b in re.findall(r"^\s*(\w+) -> (\w+);", dot, re.M)}


def test_repeated_launches_in_a_scope_are_drawn_once(rng):
    x = kc.array(rng.random(8).astype(np.float32), requires_grad=True)
    y = kc.array(rng.random(8).astype(np.float32), requires_grad=True)
    z = kc.zeros(1, requires_grad=True)
    tape = kc.Tape()
    with tape:
        tape.record_scope_begin("my loop")
        for _ in range(16):
            kc.launch(dot_product, dim=8, inputs=[x, y], outputs=[z])
        tape.record_scope_end()
    dot = tape.visualize(simplify_graph=True)
    assert dot.startswith("digraph") and "rankdir=LR;" in dot
    assert "repeated 16x" in dot and "my loop" in dot
    assert dot.count("dot_product") == 1
    assert _edges(dot) == {("x", "dot_product"), ("y", "dot_product"), ("dot_product", "z")}
    assert 'tooltip="array: dtype=float32, shape=(8,)"' in dot
    full = tape.visualize(simplify_graph=False, ignore_graph_scopes=True)
    assert full.count("dot_product") == 16 and "my loop" not in full
    assert "repeated" not in full


def test_sequences_copies_labels_and_hidden_arrays(tmp_path):
    x = kc.ones(4, requires_grad=True)
    w = kc.zeros(4, requires_grad=True)
    total = kc.zeros(1, requires_grad=True)
    tape = kc.Tape()
    with tape:
        for _ in range(3):
            kc.launch(scale, dim=4, inputs=[x, 2.0], outputs=[w])
            kc.launch(dot_product, dim=4, inputs=[w, x], outputs=[total])
        copied = kc.clone(w)
    assert copied.shape == w.shape  # (named after this variable in the graph)
    path = tmp_path / "tape.dot"
    dot = tape.visualize(filename=str(path), array_labels={total: "loss"},
                         graph_direction="TB")
    assert path.read_text() == dot and "rankdir=TB;" in dot
    assert "repeated 3x" in dot and dot.count('label="scale"') == 1
    assert 'tooltip="dim=4; s=2.0"' in dot  # scalar arguments go in the tooltip
    edges = _edges(dot)
    assert ("dot_product", "loss") in edges and ("w", "copy") in edges
    assert ("copy", "copied") in edges
    hidden = tape.visualize(hide_readonly_arrays=True)
    assert '[label="x"' not in hidden and '[label="w"' in hidden
    tracked = tape.visualize(hide_readonly_arrays=True, track_inputs=[x],
                             track_input_names=["input"])
    assert '[label="input"' in tracked


def test_struct_fields_are_named_by_path_and_unknown_arrays_numbered():
    pair = Pair()
    pair.a = kc.ones(3, requires_grad=True)
    pair.b = kc.ones(3, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(add_pair, dim=3, inputs=[pair], outputs=[kc.zeros(3, requires_grad=True)])
    edges = _edges(tape.visualize())
    assert ("pair.a", "add_pair") in edges and ("pair.b", "add_pair") in edges
    assert any(src == "add_pair" and re.fullmatch(r"a\d+", dst) for src, dst in edges)


@kc.kernel
def square(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] * x[i]


@kc.kernel
def bump(x: kc.array(dtype=float)):
    i = kc.tid()
    x[i] = x[i] + 1.0


@pytest.mark.parametrize("check", [kc.autograd.jacobian, kc.autograd.jacobian_fd])
def test_gradient_checks_keep_a_pending_tapes_read_marks(check):
    def forward(x):
        y = kc.zeros_like(x)
        kc.launch(square, dim=x.size, inputs=[x], outputs=[y])
        return y

    saved = kc.config.verify_autograd_array_access
    kc.config.verify_autograd_array_access = True
    try:
        x = kc.array(np.arange(1.0, 5.0, dtype=np.float32), requires_grad=True)
        tape = kc.Tape()
        with tape:
            kc.launch(square, dim=4, inputs=[x], outputs=[kc.zeros(4, requires_grad=True)])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the check itself must not warn
            check(forward, inputs=[x])
        with pytest.warns(UserWarning, match="is overwritten by argument 'x' of kernel 'bump'"):
            with tape:
                kc.launch(bump, dim=4, inputs=[x])
    finally:
        kc.config.verify_autograd_array_access = saved
