"""Case study 1 of the PAAM paper as ROS 2 processes (``paam eval case-study-1``; the command's
description is :mod:`.cli`'s). One module per concern:

* :mod:`.config`: the options (:class:`~.config.Config`) and one executor's plan;
* :mod:`.system`: the chain set placed on this machine, and its analysis bound;
* :mod:`.executor`: one executor process;
* :mod:`.runner`: the methods' runs and paamd;
* :mod:`.kpis`: what is computed from the runs;
* :mod:`.report` and :mod:`.plots`: the files and the figures;
* :mod:`.experiment`: all of it in order; :mod:`.cli`: the command line.
"""
from __future__ import annotations

from paam_experiments.case_study1.config import DEFAULT_SYSTEM, Config

__all__ = ["DEFAULT_SYSTEM", "Config"]
