"""Warp's bundled examples run under kernelc with the same results as under Warp.

Each example in `tests/warp_examples.py` runs from Warp's own source twice: in a Warp
subprocess, and here with `import kernelc as wp`. Their state after a few steps must agree
to rounding (the simulations are short, so rounding differences cannot grow far).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests import warp_examples
from tests.conftest import run_warp

ROOT = Path(__file__).resolve().parents[1]

_WARP_DRIVER = f"""
import sys
import traceback
from pathlib import Path

sys.path.insert(0, {str(ROOT)!r})
from tests import warp_examples

folder = Path(sys.argv[0]).parent
for name in warp_examples.SPECS:
    try:
        outputs = warp_examples.run(name, "warp", folder)
    except Exception as err:
        traceback.print_exc()
        results[name + ":error"] = np.array(type(err).__name__ + ": " + str(err))
    else:
        for key, value in outputs.items():
            results[name + ":" + key] = value
"""


@pytest.fixture(scope="module")
def warp_results(tmp_path_factory) -> dict[str, dict[str, np.ndarray]]:
    if warp_examples.examples_dir() is None:
        pytest.skip("warp-lang (with its examples) is not installed")
    flat = run_warp(_WARP_DRIVER, tmp_path_factory.mktemp("warp_examples"))
    by_example: dict[str, dict[str, np.ndarray]] = {}
    for key, value in flat.items():
        name, _, field = key.partition(":")
        by_example.setdefault(name, {})[field] = value
    return by_example


@pytest.mark.parametrize("name", list(warp_examples.SPECS))
def test_warp_example_matches_warp(name, warp_results, tmp_path):
    expected = warp_results.get(name, {})
    assert "error" not in expected, f"the example fails under Warp: {expected.get('error')}"
    got = warp_examples.run(name, "kernelc", tmp_path)
    assert set(got) == set(expected)
    for field, want in expected.items():
        have = got[field]
        assert have.shape == want.shape and have.dtype == want.dtype, field
        assert np.isfinite(want).all(), field
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-4 * scale, err_msg=field)
