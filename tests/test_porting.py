"""Warp programs run unchanged under kernelc (the evidence behind docs/porting.md).

Every program in `tests/porting_programs.py` and its two companion modules runs twice from the same source: once in a
Warp subprocess (`import warp as wp`, device "cpu"; all programs in one process) and once
here with `wp` = kernelc. Their results must agree: integers and strings exactly, floats to
rounding. Programs marked xfail are differences from Warp that kernelc still has to fix;
the two `*_on_cpu` programs pin kernelc's documented extensions (CPU activity timing, CPU
streams and events), which Warp rejects.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
from tests import porting_programs as programs
from tests.conftest import run_warp

PROGRAMS = programs.load_all()

ROOT = Path(__file__).resolve().parents[1]

# Differences from Warp that are bugs or gaps in kernelc (see the porting report); each test
# fails today. Remove the mark when the difference is fixed.
KNOWN_DIFFERENCES: dict[str, str] = {}
EXTENSIONS = {"timing_filter_on_cpu", "streams_events_on_cpu"}
COMPARED = [name for name in PROGRAMS if name not in EXTENSIONS]

_WARP_DRIVER = f"""
import os
import sys
import traceback

sys.path.insert(0, {str(ROOT)!r})
os.environ["KERNELC_PORTING_MODULE"] = "warp"
from tests import porting_programs

for name, program in porting_programs.load_all().items():
    try:
        outputs = program()
    except Exception as err:
        traceback.print_exc()
        results[name + ":error"] = np.array(type(err).__name__ + ": " + str(err))
    else:
        for key, value in outputs.items():
            results[name + ":" + key] = np.asarray(value)
"""


@pytest.fixture(scope="session")
def warp_results(tmp_path_factory) -> dict[str, dict[str, np.ndarray]]:
    """Every program's results under Warp, by program name (one Warp process)."""
    flat = run_warp(_WARP_DRIVER, tmp_path_factory.mktemp("warp_porting"))
    by_program: dict[str, dict[str, np.ndarray]] = {}
    for key, value in flat.items():
        name, _, field = key.partition(":")
        by_program.setdefault(name, {})[field] = value
    return by_program


def run_kernelc(name: str) -> dict[str, np.ndarray]:
    return {key: np.asarray(value) for key, value in PROGRAMS[name]().items()}


def assert_same(name: str, warp: dict[str, np.ndarray], ours: dict[str, np.ndarray]) -> None:
    assert "error" not in warp, f"{name} failed under Warp: {warp['error']}"
    assert sorted(ours) == sorted(warp)
    for key, expected in warp.items():
        got = ours[key]
        where = f"{name}:{key}"
        assert got.shape == expected.shape, f"{where}: shape {got.shape} != Warp's {expected.shape}"
        if expected.dtype.kind == "f":
            assert not np.isnan(got).any(), f"{where}: an output was never written"
            np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-6, err_msg=where)
        else:
            if expected.dtype.kind in "iu" and expected.dtype.itemsize >= 4:
                sentinel = np.iinfo(got.dtype).max - 3
                assert not (got == sentinel).any(), f"{where}: an output was never written"
            np.testing.assert_array_equal(got, expected, err_msg=where)


def test_programs_import_kernelc():
    assert programs.wp is kc


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[name]))
        if name in KNOWN_DIFFERENCES
        else name
        for name in COMPARED
    ],
)
def test_program_matches_warp(name, warp_results):
    assert_same(name, warp_results[name], run_kernelc(name))


def test_activity_timing_also_covers_the_cpu(warp_results):
    """Warp times activities on CUDA devices only; kernelc times CPU launches too (+)."""
    warp, ours = warp_results["timing_filter_on_cpu"], run_kernelc("timing_filter_on_cpu")
    np.testing.assert_array_equal(ours["filters"], warp["filters"])
    assert int(warp["timer_results"]) == 0 and int(warp["results"]) == 0
    assert int(ours["timer_results"]) == 1 and int(ours["results"]) == 1
    assert str(ours["names"]) == "forward kernel accumulate"


def test_streams_and_events_also_work_on_the_cpu(warp_results):
    """Warp raises RuntimeError for a CPU stream or event; kernelc provides both (+)."""
    warp, ours = warp_results["streams_events_on_cpu"], run_kernelc("streams_events_on_cpu")
    assert {k: str(v) for k, v in warp.items()} == dict.fromkeys(warp, "RuntimeError")
    assert {k: str(v) for k, v in ours.items()} == dict.fromkeys(warp, "ok")
