"""The PAAM response-time analysis from Python.

Load a system description, analyse it, plan it::

    from paam import examples
    from paam.analysis import load_system, analyze, plan, options_for
    spec = load_system(examples.path("mobile_robot"))   # or the path of your own YAML
    result = analyze(spec)            # Analysis: .schedulable, .chains[i].wcrt, ...
    planned = plan(spec, options_for(spec))

The bound itself is computed in C++ (``paam._core.rta``; core/src/analysis/rta.h); see
docs/analysis.md for what it assumes. Command line: ``paam analyze``, ``paam plan``,
``paam experiment schedulability``.
"""
from paam.analysis.bounds import Analysis, ChainBound, SubChainBound, analyze, to_core
from paam.analysis.model import InputError, SystemSpec, dump_yaml, load_system, parse_system
from paam.analysis.plan import PlanOptions, options_for, plan

__all__ = [
    "Analysis", "ChainBound", "InputError", "PlanOptions", "SubChainBound", "SystemSpec",
    "analyze", "dump_yaml", "load_system", "options_for", "parse_system", "plan", "to_core",
]
