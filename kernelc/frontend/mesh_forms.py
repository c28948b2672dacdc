"""Special forms of mesh and BVH queries (filled in as they land)."""

from __future__ import annotations

from typing import Any

__all__: list[str] = []

SPECIAL_FORMS: dict[str, Any] = {}
