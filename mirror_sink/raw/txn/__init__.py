"""Raw mode's target transaction: the coordinator requests around it and the committer that drives a
task's cycles through it."""
