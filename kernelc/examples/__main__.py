"""`python -m kernelc.examples [NAME [args]]`: list the examples or run one."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import kernelc.examples as pkg


def available() -> dict[str, str]:
    out = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"kernelc.examples.{info.name}")
        out[info.name] = (mod.__doc__ or "").strip().splitlines()[0]
    return out


def main(argv: list[str]) -> int:
    examples = available()
    if not argv or argv[0] in ("-h", "--help", "list"):
        print("kernelc examples (python -m kernelc.examples NAME [--help]):")
        for name, doc in sorted(examples.items()):
            print(f"  {name:<12} {doc}")
        return 0
    name = argv[0]
    if name not in examples:
        print(f"unknown example {name!r}; available: {', '.join(sorted(examples))}",
              file=sys.stderr)
        return 2
    return importlib.import_module(f"kernelc.examples.{name}").main(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
