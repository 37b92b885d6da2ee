"""The three methods the case studies compare, their ``--methods`` keys and colors, and the
bound's preemption cost where none is given."""
from __future__ import annotations

#: the case studies' three methods, in their order, and their ``--methods`` keys
METHODS = ("ROS 2", "PiCAS", "PAAM")
METHOD_KEYS = {"ros2": "ROS 2", "picas": "PiCAS", "paam": "PAAM"}
#: a method's name back to its key (the case studies' run functions take the key)
KEY_OF_METHOD = {name: key for key, name in METHOD_KEYS.items()}
#: each method's color in every figure, and the bound's
COLORS = {"ROS 2": "#e8a04c", "PiCAS": "#8c6bb1", "PAAM": "#4c9be8", "bound": "#333333"}


def parse_methods(text: str) -> list[str]:
    """``--methods`` ("ros2,picas,paam" or a subset) as method names; exits naming the keys."""
    methods = [METHOD_KEYS.get(m.strip()) for m in text.split(",") if m.strip()]
    if None in methods or not methods:
        raise SystemExit(f"--methods: choose from {', '.join(METHOD_KEYS)}")
    return methods


def default_kappa(backend: str) -> float:
    """kappa (ms) for a bound where none is given: the paper's 0.13 on a GPU; 0.02 on the CPU
    backend, whose buckets' workers the OS switches."""
    return 0.13 if backend == "cuda" else 0.02
