"""Fuzzes the system-description loader and the analysis with atheris (libFuzzer for Python).

The property: any bytes given as a system YAML either load and analyse, or fail with
``InputError`` (a message that says where and what); any other exception, a hang or a crash
of the C++ analysis under it is a bug. Run by ``scripts/fuzz.sh`` (docs/fuzzing.md) as

    python python/fuzz/fuzz_system_yaml.py -runs=N -seed=1 <corpus dir>

with the paam package importable; the seeds are the examples shipped in ``paam.examples``.
"""
from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    import yaml

    from paam.analysis.bounds import analyze
    from paam.analysis.model import InputError, parse_system

# Bigger inputs add nothing but time (YAML aliases can expand a small file a lot: the size and
# the analysis' own limits bound that).
MAX_BYTES = 16 << 10


def test_one_input(data: bytes) -> None:
    if len(data) > MAX_BYTES:
        return
    try:
        doc = yaml.safe_load(data)
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError):
        return  # load_system turns these into InputError("not valid YAML")
    for planning in (False, True):
        try:
            spec = parse_system(doc, for_planning=planning)
        except InputError:
            continue
        if planning:
            continue  # a spec for planning may leave executors to `paam plan`
        try:
            analyze(spec)
        except InputError:
            pass


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
