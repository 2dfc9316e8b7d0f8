"""Helpers for integration tests, one module per concern; import from the module, not from here.

- ``waiting``: ``wait_until``.
- ``configs``: the connector configs tests run with (``mirror_config``, ``connector_config``, ``FAST_SETTINGS``).
- ``processes``: the mirror as child processes (``MirrorProcess``, ``WorkerProcess``) and one-shot verbs (``run_*``).
- ``records``: what tests write and read (``TransactionalLoad``, ``tricky_records``, ``LiveReader``).
- ``exactness``: what a mirror wrote, checked (``shadow_caught_up``, ``assert_exact_mirror``, offset syncs).
- ``topics``: per-test names and topics of a special shape (``compacted_with_gaps``).
- ``clusters``: a cluster's address, group offsets and state (``commit_group_offsets``, ``assert_refused_alike``).
- ``metrics``: a worker's Prometheus samples (``scrape``, ``total``).
"""
