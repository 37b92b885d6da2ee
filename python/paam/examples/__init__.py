"""Example system descriptions shipped with paam (``paam analyze`` takes them by path)."""
from __future__ import annotations

from pathlib import Path

DIR = Path(__file__).resolve().parent


def path(name: str) -> Path:
    """The shipped example system ``name`` (``"case_study_1"``, ...) as a path to its YAML."""
    p = DIR / f"{name}.yaml"
    if not p.is_file():
        known = ", ".join(sorted(f.stem for f in DIR.glob("*.yaml")))
        raise FileNotFoundError(f"no example system named {name!r}; shipped: {known}")
    return p
