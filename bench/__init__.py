"""Benchmarks: mirror-sink against baselines, measured side by side in one run."""
