"""Clients of a cluster: construction with the settings correctness needs, reachability, refusals, stable reads."""
