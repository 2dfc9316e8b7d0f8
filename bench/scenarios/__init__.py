"""The benchmark scenarios, one module each: ``run`` measures and returns the results dict, ``render`` turns
saved results into the scenario's Markdown section.

The sections of docs/benchmarks.md also have a ``SECTION`` (``bench.common.section.Section``), which
``bench.report`` iterates; docs/failover-benchmarks.md is ``bench.failover_report``'s. The command lines
(``python -m bench.compare``, ``bench.wan``, ...) are the modules of the same name in ``bench``: they parse
the arguments, call ``run`` and publish, so nothing here imports a report or a command.
"""
