"""Generates the builtin reference (docs/builtins.md) from the builtin table.

`python -m kernelc.builtins.docs > docs/builtins.md`; a test keeps the file in step.
"""

from __future__ import annotations

import sys

from kernelc.builtins import BUILTINS


def render() -> str:
    groups: dict[str, list] = {}
    for b in BUILTINS.values():
        if not b.public:
            continue
        groups.setdefault(b.group, []).append(b)
    lines = [
        "# Builtins",
        "",
        "Generated from kernelc's builtin table (`python -m kernelc.builtins.docs`). Every",
        "builtin is available as `kc.<name>` inside `@kc.kernel` and `@kc.func` functions.",
        "",
        "They can also be called on the host (`kc.sin(0.5)`, `kc.dot(v, w)`,",
        "`kc.quat_identity()`), with the meaning they have in kernels: each builtin and",
        "argument-type combination is compiled once by the CPU backend. Python floats and ints",
        "are literals (float32, int32); float32, int32 and bool results come back as Python",
        "numbers, other scalars as NumPy scalars, vectors and matrices as host values.",
        "Builtins that take arrays (atomics) work only in kernels; random-number builtins",
        "return their value and leave the state argument unchanged, as in Warp.",
        "Arguments may be passed by keyword with the parameter names shown below.",
        "",
    ]
    for group in sorted(groups):
        lines += [f"## {group.capitalize()}", ""]
        for b in sorted(groups[group], key=lambda x: x.name):
            sigs = ", ".join(f"`{s}`" for s in b.signatures())
            lines.append(f"- {sigs}: {b.doc}")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render())
