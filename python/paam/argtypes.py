"""argparse ``type=`` callables shared by the ``paam`` sub-commands."""
from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """A whole number of 1 or more."""
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, got {text!r}")
