"""``mirror-sink demo``: the main job on the embedded default (the two local clusters)."""

from __future__ import annotations

import argparse

from mirror_sink.devkafka.cli import print_clusters
from mirror_sink.devkafka.pair import DevClusters


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``demo`` verb."""
    p = subparsers.add_parser("demo", help="start the local clusters and run the demo mirror job")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Start the local ``source`` and ``target`` clusters and print their addresses."""
    clusters = DevClusters()
    clusters.up()
    print_clusters(clusters)
    return 0
