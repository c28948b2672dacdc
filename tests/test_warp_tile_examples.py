"""Warp's tile examples (warp/examples/tile) run as scripts under kernelc.

Each script checks its own result against NumPy (matrix products, Cholesky solves, FFT
round trips, filters and convolutions) and raises if they differ; the block Cholesky
solver prints its errors instead, which are read back here. They run here from
Warp's source with `import kernelc as wp` and the device set to the CPU (the FFT examples
name "cuda:0"); kernelc runs tiles on the CPU with one lane per block, as Warp does there.
"""

from __future__ import annotations

import re
import runpy
import sys

import pytest

from tests import warp_examples

SCRIPTS = ["example_tile_matmul", "example_tile_cholesky", "example_tile_block_cholesky",
           "example_tile_fft", "example_tile_filtering", "example_tile_convolution"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_tile_example_script_checks_out(name, tmp_path, monkeypatch, capsys):
    folder = warp_examples.examples_dir("tile")
    if folder is None:
        pytest.skip("warp-lang (with its examples) is not installed")
    text = (folder / f"{name}.py").read_text().replace("import warp as wp\n",
                                                      "import kernelc as wp\n")
    text = re.sub(r"\"cuda(:0)?\"", '"cpu"', text)
    path = tmp_path / f"kernelc_{name}.py"  # kernels are read back from their source file
    path.write_text(text)
    report = name == "example_tile_block_cholesky"  # prints its errors unless headless
    argv = [str(path), "--device", "cpu", *([] if report else ["--headless"])]
    monkeypatch.setattr(sys, "argv", argv)
    runpy.run_path(str(path), run_name="__main__")
    if report:
        out = capsys.readouterr().out
        errors = [float(x) for x in re.findall(r"Warp solution residual norm: (\S+)", out)]
        assert len(errors) == 8 and max(errors) < 1e-4, out
        diffs = [float(x) for x in re.findall(r"between CPU and GPU solutions: (\S+)", out)]
        assert len(diffs) == 8 and max(diffs) < 1e-5, out
