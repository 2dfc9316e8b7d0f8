"""What every benchmark shares, and nothing in bench/ below it.

- ``console``: progress lines (``log``, ``Progress``) and a log file's tail;
- ``machine``: the machine a run measured on, as the results state it;
- ``cpu``: CPU time of the whole machine, of one process, and of a process tree (the one sampler every
  mirror is measured with);
- ``markdown``: table cells and tables for the generated pages;
- ``paths``: where results, pages and their generated data go;
- ``section``: a scenario's part of a generated page, as the reports' registries list it.
"""
