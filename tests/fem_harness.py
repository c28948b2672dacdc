"""The machinery shared by the tests that compare kernelc.fem with Warp's warp.fem.

A comparison runs the same programs twice: in the test process with kernelc, and in Warp
subprocesses started in the background (`WarpRun`, `started_warp_run`), which run a copy of
the programs module with its imports rewritten to Warp (`as_warp`) and save their results
to an .npz file. Warp's own fem examples run with kernelc from copies whose imports are
rewritten the other way (`kernelc_example_source`, `kernelc_examples`).

The programs modules import `flat`, `block_csr` and `prefixed` from here in both processes:
the flat dicts of NumPy arrays these build are what the tests match key by key.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.conftest import warp_available

# The Warp subprocess imports the programs' copy from its folder, and `tests.fem_harness`
# (imported by that copy) from the repository root.
ROOT = Path(__file__).resolve().parents[1]

_WARP_PROLOGUE = """
import importlib, sys
import numpy as np
import warp as wp
wp.config.quiet = True
wp.config.enable_backward = False  # halves Warp's compile time; nothing here differentiates
wp.init()
sys.path.insert(0, {folder!r})
sys.path.append({root!r})  # after site-packages: shadows nothing
results = {{}}
"""


# ---- results as flat dicts of arrays (used by the programs, in both processes) -------------


def flat(prefix: str, parts: dict, out: dict) -> None:
    """Stores each of `parts` in `out` as a NumPy array under `"<prefix>.<key>"`."""
    for key, value in parts.items():
        out[f"{prefix}.{key}"] = np.asarray(value)


def block_csr(matrix) -> dict:
    """A BSR matrix as offsets, columns and (blocks, rows, cols) values (NumPy)."""
    n = matrix.nnz_sync() if hasattr(matrix, "nnz_sync") else matrix.nnz
    values = matrix.values.numpy()[:n].reshape(n, *matrix.block_shape)
    return {"offsets": matrix.offsets.numpy()[: matrix.nrow + 1].copy(),
            "columns": matrix.columns.numpy()[:n].copy(), "values": values.copy()}


def prefixed(parts: Mapping[str, dict]) -> dict:
    """The results of several programs in one dict, each key prefixed with its program's name
    (`{"2d": {"mass": m}}` gives `{"2d.mass": m}`)."""
    out = {}
    for prefix, part in parts.items():
        out.update({f"{prefix}.{k}": v for k, v in part.items()})
    return out


def assert_results_match(got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray],
                         tolerance: float = 1e-5) -> None:
    """kernelc's results `got` have Warp's `want` keys, shapes and dtypes; integer arrays
    (topology, offsets, columns) are equal, the others within `tolerance` of their largest
    magnitude (float rounding)."""
    assert want and set(want) == set(got)
    for key, expected in want.items():
        value = np.asarray(got[key])
        assert value.shape == expected.shape, key
        assert value.dtype == expected.dtype, key
        if expected.dtype.kind in "iu":
            np.testing.assert_array_equal(value, expected, err_msg=key)
            continue
        scale = float(np.abs(expected).max()) if expected.size else 0.0
        np.testing.assert_allclose(value, expected, rtol=0, atol=tolerance * scale + 1e-12,
                                   err_msg=key)


# ---- source rewrites -----------------------------------------------------------------------


def warp_examples_dir() -> Path | None:
    """The folder of Warp's fem examples, or None where warp-lang (or its examples) is absent."""
    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "examples" / "fem"
    return path if path.is_dir() else None


def as_warp(text: str) -> str:
    """A programs module's source with its kernelc imports (`import kernelc as wp`,
    `import kernelc.fem as fem`) turned into Warp's, and its imports of other programs
    modules (`from tests.fem_mesh_programs import ...`) into imports of their Warp copies."""
    text = re.sub(r"^import kernelc as wp$", "import warp as wp", text, flags=re.M)
    text = re.sub(r"^from tests\.(\w+_programs) import", r"from \1_warp import", text, flags=re.M)
    return re.sub(r"^import kernelc\.fem as fem$", "import warp.fem as fem", text, flags=re.M)


def kernelc_example_source(text: str, modules: Mapping[str, str]) -> str:
    """A Warp fem example's (or utils.py's) source with kernelc for warp.

    Args:
        text: The source, as Warp ships it.
        modules: For each example file stem (`"utils"`, `"example_diffusion"`) the name its
            rewritten copy is loaded under; the examples' imports of each other
            (`import warp.examples.fem.utils as ...`, `from warp.examples.fem.<stem> import`)
            are pointed at these copies.

    Returns:
        The source with every other `import warp...` / `from warp...` reading kernelc.
    """
    text = text.replace("import warp.examples.fem.utils as fem_example_utils",
                        f"import {modules['utils']} as fem_example_utils")
    examples = warp_examples_dir()
    if examples is not None:  # the examples' assets stay where Warp installed them
        text = text.replace("warp.examples.get_asset_directory()",
                            repr(str(examples.parent / "assets")))
    for stem, name in modules.items():
        text = text.replace(f"from warp.examples.fem.{stem} import", f"from {name} import")
    return re.sub(r"^(\s*)(import|from) warp\b", r"\1\2 kernelc", text, flags=re.M)


@contextlib.contextmanager
def kernelc_examples(tmp_path_factory: pytest.TempPathFactory, basename: str,
                     modules: Mapping[str, str], replacements: Mapping[str, str] | None = None
                     ) -> Iterator[dict[str, ModuleType]]:
    """Warp's example modules (and their utils) with kernelc for warp, loaded from a
    temporary folder; skips the test where Warp's examples are not installed.

    Args:
        tmp_path_factory: pytest's factory for the folder the rewritten copies are written to.
        basename: The folder's name.
        modules: Example file stem to module name, in import order (a module after those it
            imports); see `kernelc_example_source`.
        replacements: Source text to replace in every module (old: new), applied first.

    Yields:
        The loaded modules by module name; they leave `sys.modules` on exit.
    """
    if warp_examples_dir() is None:
        pytest.skip("warp-lang's examples are not installed")
    try:
        yield load_kernelc_examples(tmp_path_factory.mktemp(basename), modules, replacements)
    finally:
        for name in modules:
            sys.modules.pop(name, None)


def load_kernelc_examples(folder: Path, modules: Mapping[str, str],
                          replacements: Mapping[str, str] | None = None
                          ) -> dict[str, ModuleType]:
    """Writes Warp's example modules with kernelc for warp to `folder` (kernels and
    integrands are read back from their file) and imports them, in order, under the names
    `modules` gives (see `kernelc_example_source`), after replacing the `replacements`
    texts; they stay in `sys.modules`."""
    source = warp_examples_dir()
    loaded = {}
    for stem, name in modules.items():
        path = Path(folder) / f"{name}.py"
        text = (source / f"{stem}.py").read_text()
        for old, new in (replacements or {}).items():
            text = text.replace(old, new)
        path.write_text(kernelc_example_source(text, modules))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        loaded[name] = module
    return loaded


# ---- the Warp subprocesses -----------------------------------------------------------------


class WarpRun:
    """Warp subprocesses, started at once and waited for when a result is first needed, so
    that Warp's cold compiles overlap kernelc's.

    Each script runs after a prologue that initialises Warp, puts `folder` (which holds the
    programs' copy, importable as `<programs stem>_warp`) and the repository root on
    `sys.path` and sets `results = {}`; what it leaves in `results` is saved to
    `warp_<part>.npz`.
    """

    def __init__(self, folder: Path, programs: Path, scripts: Mapping[str, str],
                 timeout: float, helpers: Sequence[Path] = ()) -> None:
        """Writes the programs' Warp copy and the scripts to `folder` and starts the scripts.

        Args:
            folder: An empty folder for the copy, the scripts and their results.
            programs: The programs module, written for kernelc.
            scripts: Part name to script body (`warp_<part>.py` in `folder`).
            timeout: Seconds `results` waits for each subprocess.
            helpers: Other programs modules that `programs` imports from (`from
                tests.<stem> import ...`); their Warp copies are written next to its own.
        """
        for module in (programs, *helpers):
            (folder / f"{module.stem}_warp.py").write_text(as_warp(module.read_text()))
        prologue = textwrap.dedent(_WARP_PROLOGUE).format(folder=str(folder), root=str(ROOT))
        self.timeout = timeout
        self.runs = []
        for part, body in scripts.items():
            out = folder / f"warp_{part}.npz"
            script = folder / f"warp_{part}.py"
            epilogue = f"np.savez({str(out)!r}, **results)\n"
            script.write_text(prologue + textwrap.dedent(body) + epilogue)
            proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            self.runs.append((proc, out))
        self._results = None

    def results(self) -> dict:
        """Every script's results in one dict (waiting for the subprocesses the first time)."""
        if self._results is None:
            merged = {}
            for proc, out in self.runs:
                _, err = proc.communicate(timeout=self.timeout)
                assert proc.returncode == 0, err[-3000:]
                merged.update(np.load(out))
            self._results = merged
        return self._results

    def kill(self) -> None:
        """Stops the subprocesses still running."""
        for proc, _ in self.runs:
            if proc.poll() is None:
                proc.kill()


@contextlib.contextmanager
def started_warp_run(tmp_path_factory: pytest.TempPathFactory, basename: str, programs: Path,
                     scripts: Mapping[str, str], timeout: float,
                     helpers: Sequence[Path] = ()) -> Iterator[WarpRun]:
    """A `WarpRun` in a new temporary folder named `basename`, killed on exit; skips the test
    where warp-lang (with its examples) is not installed."""
    if not warp_available() or warp_examples_dir() is None:
        pytest.skip("warp-lang (with its examples) is not installed")
    run = WarpRun(tmp_path_factory.mktemp(basename), programs, scripts, timeout, helpers)
    try:
        yield run
    finally:
        run.kill()
