"""Every builtin kernelc shares with Warp, compared with Warp 1.19 on the CPU bit for bit.

The kernels (`tests/bitexact_kernels.py`) are written as Warp programs (`wp.*`) and run
twice from the same source by the programs of `tests/bitexact_programs.py`: here with `wp`
= kernelc, and in one Warp subprocess (`run_warp` loads the programs with
KERNELC_BITEXACT_MODULE=warp and declares every overload before the first launch, so Warp
builds one module). Each kernel writes one column per builtin; the column names are the
lists next to the kernels, and a mismatch names the builtin, the precision and an input.

Inputs are random and non-zero with awkward cases mixed in: signed zeros, NaN, infinities,
huge and tiny magnitudes, near-cancelling pairs, halfway cases for rounding, singular and
nearly singular matrices. Results must agree in every bit (any NaN equals any NaN), except
for the few columns of `TOLERANT`, each with the reason it cannot or should not agree.
"""

import typing
from pathlib import Path

import numpy as np
import pytest

from tests.bitexact_programs import make_inputs, run_program, warp_cases

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS_FILE = Path(__file__).resolve().with_name("bitexact_programs.py")

_WARP_DRIVER = f"""
import importlib.util
import os
import sys
import traceback

sys.path.insert(0, {str(ROOT)!r})
os.environ["KERNELC_BITEXACT_MODULE"] = "warp"
spec = importlib.util.spec_from_file_location("bitexact_programs", {str(PROGRAMS_FILE)!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
# Every overload declared before the first launch: Warp then builds the module once.
for name, precision in module.warp_cases():
    if name not in ("f32", "host"):
        args = module.program_args(name, precision)
        wp.overload(module.PROGRAMS[name][0],
                    [wp.array(dtype=a.dtype, ndim=a.ndim) for a in args])
for name, precision in module.warp_cases():
    try:
        outputs = module.run_program(name, precision)
    except Exception as err:
        traceback.print_exc()
        results[name + ":" + precision + ":error"] = np.array(repr(err))
    else:
        for key, value in outputs.items():
            results[name + ":" + precision + ":" + key] = value
"""


@pytest.fixture(scope="module")
def warp_results(tmp_path_factory) -> dict[str, dict[str, np.ndarray]]:
    """Every program's columns under Warp, by "program:precision" (one Warp process)."""
    from tests.conftest import run_warp

    flat = run_warp(_WARP_DRIVER, tmp_path_factory.mktemp("warp_bitexact"))
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, value in flat.items():
        name, precision, column = key.split(":", 2)
        out.setdefault(f"{name}:{precision}", {})[column] = value
    return out


def _same_bits_each(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per component: the same bits, or both NaN (any payload)."""
    if a.dtype.kind != "f":
        return a == b
    bits = f"u{a.dtype.itemsize}"
    return (a.view(bits) == b.view(bits)) | (np.isnan(a) & np.isnan(b))


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row (first axis): every component has the same bits, or is NaN on both sides."""
    a, b = np.asarray(a), np.asarray(b)
    return _same_bits_each(a, b).reshape(len(a), -1).all(axis=1)


class Tolerance(typing.NamedTuple):
    """How a column may differ from Warp: relative error by precision (0: same bits), on
    the rows `rows` selects from the inputs (None: all), +-0.0 equal when `zero_sign`."""

    rtol: dict[str, float]
    rows: typing.Callable[[dict], np.ndarray] | None
    zero_sign: bool
    why: str


def _not_near_zero(x: dict) -> np.ndarray:
    return (np.abs(x["u"]) >= 1e-6) & (np.abs(x["u"] + 1) >= 1e-6)


_ERFINV = Tolerance(
    {"float16": 0.0, "float32": 1.2e-7, "float64": 1e-10}, _not_near_zero, True,
    "Warp's CPU erfinv is Cephes' ndtri((z + 1) / 2) / sqrt(2) in double (erfcinv(x) is "
    "erfinv(1 - x)): it loses the relative accuracy near z = 0 (erfinv(1e-30) is 0) and near "
    "|z| = 1 (4e-12 off at 0.999999), and gives +0.0 for -0.0; Warp's CUDA erfinv is another "
    "function again. kernelc's is correctly rounded in float32 and within an ulp in float64 "
    "on both backends; off those ranges the results agree to the last float32 bit.")
TOLERANT: dict[tuple[str, str], Tolerance] = {
    ("scalar", "erfinv"): _ERFINV,
    ("scalar", "erfcinv"): _ERFINV,
}


def _mismatches(name: str, column: str, precision: str, ours: np.ndarray,
                theirs: np.ndarray) -> np.ndarray:
    """Rows where kernelc and Warp differ by more than the column allows."""
    tol = TOLERANT.get((name, column))
    if tol is None or ours.dtype.kind != "f":
        return ~same_bits(ours, theirs)
    close = _same_bits_each(ours, theirs)
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    if tol.zero_sign:
        close |= a == b
    rtol = tol.rtol.get(precision, 0.0)
    if rtol:
        with np.errstate(invalid="ignore"):
            close |= np.abs(a - b) <= rtol * np.abs(b)
    bad = ~close.reshape(len(a), -1).all(axis=1)
    if tol.rows is not None:
        bad &= tol.rows(make_inputs())
    return bad


def _report(name: str, ours: np.ndarray, theirs: np.ndarray, bad: np.ndarray) -> str:
    i = int(np.flatnonzero(bad)[0])
    return (f"{name}: {int(bad.sum())}/{len(bad)} differ, e.g. row {i}: kernelc "
            f"{ours[i].tolist()} Warp {theirs[i].tolist()}")


@pytest.mark.parametrize("name, precision", warp_cases())
def test_builtins_match_warp_bit_for_bit(name, precision, warp_results):
    warp = warp_results[f"{name}:{precision}"]
    assert "error" not in warp, f"Warp failed: {warp.get('error')}"
    ours = run_program(name, precision)
    if name == "host":  # Warp has no host form of a few builtins for some types
        assert set(warp) <= set(ours)
    else:
        assert sorted(ours) == sorted(warp)
    problems = []
    for column, theirs in warp.items():
        bad = _mismatches(name, column, precision, ours[column], theirs)
        if bad.any():
            problems.append(_report(column, ours[column], theirs, bad))
    assert not problems, "\n".join(problems)
