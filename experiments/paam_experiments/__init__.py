"""The evaluation experiments (``paam eval``): the PAAM paper's case studies and measurements,
each one command that writes raw data, figures and a summary table. See docs/evaluation.md."""
