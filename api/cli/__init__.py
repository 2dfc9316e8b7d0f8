"""The ``mirror-sink`` command line: one module per group of verbs."""
