"""Prometheus metrics under MirrorMaker 2's and Kafka Connect's names."""
