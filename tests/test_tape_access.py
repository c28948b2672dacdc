"""`config.verify_autograd_array_access`: warnings when a tape's recorded reads are overwritten."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import kernelc as kc


@kc.kernel
def scale(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    v = x[i]
    y[i] = v * 2.0


@kc.kernel
def bump(x: kc.array(dtype=float)):
    i = kc.tid()
    x[i] = x[i] + 1.0


@kc.func
def put(a: kc.array(dtype=float), i: int, v: float):
    a[i] = v


@kc.kernel
def via_func(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    put(y, i, x[i])


@pytest.fixture
def verify(monkeypatch):
    monkeypatch.setattr(kc.config, "verify_autograd_array_access", True)


def _arrays(rng, n=3):
    return [kc.array(rng.uniform(0.5, 1.5, 8).astype(np.float32), requires_grad=True)
            for _ in range(n)]


def _messages(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, UserWarning)]


def test_overwriting_a_recorded_read_warns(rng, verify):
    x, y, _ = _arrays(rng)
    tape = kc.Tape()
    with tape, warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        kc.launch(scale, 8, [x, y])
        assert _messages(record) == []
        kc.launch(scale, 8, [y, x])  # x was read by the first launch
    [message] = _messages(record)
    assert "argument 'y' of kernel 'scale'" in message and "test_tape_access.py" in message
    assert record[0].filename == __file__  # attributed to the launch, not to kernelc
    np.testing.assert_allclose(x.numpy(), 2 * y.numpy())  # the launch still ran


def test_without_the_option_nothing_is_checked(rng):
    x, y, _ = _arrays(rng)
    with kc.Tape(), warnings.catch_warnings():
        warnings.simplefilter("error")
        kc.launch(scale, 8, [x, y])
        kc.launch(scale, 8, [y, x])
    assert not x._is_read


def test_writes_through_funcs_and_copies_count(rng, verify):
    x, y, z = _arrays(rng)
    with kc.Tape(), pytest.warns(UserWarning, match="kernel 'via_func'"):
        kc.launch(scale, 8, [x, y])
        kc.launch(via_func, 8, [y, x])
    x, y, z = _arrays(rng)
    with kc.Tape(), pytest.warns(UserWarning, match=r"an array copy \(.*test_tape_access"):
        kc.launch(scale, 8, [z, y])
        kc.copy(z, x)


def test_read_then_write_in_one_kernel_warns_once(rng, verify):
    x, _, _ = _arrays(rng)
    with kc.Tape(), warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        kc.launch(bump, 8, [x])
        kc.launch(bump, 8, [x])
    messages = _messages(record)
    assert any(re.search(r"kernel 'bump' writes its array argument 'x' after reading it "
                         r"\(.*test_tape_access.py:\d+\)", m) for m in messages)
    assert sum("after reading it" in m for m in messages) == 1


def test_backward_reset_and_initialisation_clear_the_marks(rng, verify):
    x, y, z = _arrays(rng)
    tape = kc.Tape()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tape:
            kc.launch(scale, 8, [x, y])
        tape.backward(grads={y: kc.ones(8, dtype=float)})
        np.testing.assert_allclose(x.grad.numpy(), 2.0)
        with tape:
            kc.launch(scale, 8, [y, x])  # the gradients were computed: writes are harmless
        tape.reset()
        with tape:
            kc.launch(scale, 8, [x, y])
            y.zero_()  # initialised again
            kc.launch(scale, 8, [z, y])
            x.fill_(3.0)
            kc.launch(scale, 8, [z, x])


def test_views_mark_what_they_view(rng, verify):
    x, y, z = _arrays(rng)
    with kc.Tape(), pytest.warns(UserWarning, match="kernel 'scale'"):
        kc.launch(scale, 4, [x[2:6], z[0:4]])  # reads a view of x
        assert x._is_read and x[2:6]._is_read is False  # a new view starts unmarked
        kc.launch(scale, 8, [y, x])


def test_warns_where_warp_does(rng, tmp_path):
    """The same program under Warp: both warn at the same launches (reads through a
    local, which Warp's check sees)."""
    program = """
import warnings
warnings.simplefilter("always")
wp.config.verify_autograd_array_access = True

@wp.kernel
def scale(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    y[i] = v * 2.0

x = wp.array(np.ones(8, np.float32), requires_grad=True)
y = wp.zeros(8, dtype=float, requires_grad=True)
z = wp.zeros(8, dtype=float, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(scale, 8, [x, y])
    print("STEP 1", flush=True)
    wp.launch(scale, 8, [y, z])
    print("STEP 2", flush=True)
    wp.launch(scale, 8, [z, x])
    print("STEP 3", flush=True)
tape.backward(grads={x: wp.ones(8, dtype=float)})
with tape:
    wp.launch(scale, 8, [y, x])
    print("STEP 4", flush=True)
"""
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    from tests.conftest import warp_available

    if not warp_available():
        pytest.skip("warp-lang is not installed")
    outputs = {}
    for module in ("warp", "kernelc"):
        path = tmp_path / f"access_{module}.py"
        path.write_text(f"import numpy as np\nimport {module} as wp\n" + textwrap.dedent(program))
        root = str(Path(__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [root, *filter(None, [os.environ.get("PYTHONPATH")])])}
        done = subprocess.run([sys.executable, str(path)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stdout
        text = done.stdout
        # which steps warned: the warning precedes the step's marker in the output
        warned = []
        for step in range(1, 5):
            before, _, text = text.partition(f"STEP {step}")
            warned.append("written" in before or "overwritten" in before)
        outputs[module] = warned
    assert outputs["kernelc"] == outputs["warp"] == [False, False, True, False]
