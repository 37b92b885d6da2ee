"""Example system descriptions shipped with paam (``paam analyze`` takes them by path).

- ``mobile_robot``: a small robot with four critical chains on one GPU; schedulable, a starting
  point for a system of your own.
- ``case_study_1``: the PAAM paper's case study 1 as published; not schedulable (its
  ``description``, which ``paam analyze`` prints first, says why).
"""
from __future__ import annotations

from pathlib import Path

DIR = Path(__file__).resolve().parent


def path(name: str) -> Path:
    """The shipped example system ``name`` (``"mobile_robot"``, ``"case_study_1"``) as a path
    to its YAML."""
    p = DIR / f"{name}.yaml"
    if not p.is_file():
        known = ", ".join(sorted(f.stem for f in DIR.glob("*.yaml")))
        raise FileNotFoundError(f"no example system named {name!r}; shipped: {known}")
    return p
