"""The generated docs stay in step with the code; the README's commands stay runnable."""

from __future__ import annotations

from pathlib import Path

import kernelc as kc
from kernelc.builtins import BUILTINS
from kernelc.builtins.docs import render

ROOT = Path(__file__).resolve().parents[1]


def test_builtin_reference_is_current():
    text = (ROOT / "docs" / "builtins.md").read_text()
    assert text == render(), "regenerate with: python -m kernelc.builtins.docs > docs/builtins.md"


def test_every_builtin_is_public_and_documented():
    for name, entry in BUILTINS.items():
        assert entry.doc
        if entry.public:
            assert getattr(kc, name) is entry
        else:  # internal: serves kernelc's own library funcs, hidden from users
            assert name.startswith("_") and not hasattr(kc, name)


def test_readme_names_the_two_setup_commands():
    readme = (ROOT / "README.md").read_text()
    assert 'pip install -e . && python3 -m kernelc.examples wave' in readme
    assert 'pip install -e ".[test]" && python3 -m pytest' in readme
