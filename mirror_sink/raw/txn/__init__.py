"""Raw mode's target transaction: its state in one object (``RawTransaction``), the coordinator requests
around it and the committer that drives a task's cycles through it."""
