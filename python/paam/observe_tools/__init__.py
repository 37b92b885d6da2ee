"""The logic behind ``paam top``, ``paam trace`` and ``paam metrics``: each reads paamd's live
statistics or request trace through :mod:`paam.observe` and turns them into something to look
at (a terminal view, a Chrome trace-event file and its timeline plot, Prometheus metrics).
The command-line faces live in :mod:`paam.commands`; everything here works on plain snapshot and
record dicts (the schema of :mod:`paam.observe`), so it is tested without a server."""
