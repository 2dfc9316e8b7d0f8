"""``mirror-sink-dev``: the developer's command: local clusters (``kafka up|down|status``) and the demo.

It lives beside the product, never inside it: nothing in ``mirror_sink``, ``connectors`` or ``api``
imports this package.
"""

from __future__ import annotations

import argparse
import sys

from devkafka import demo
from devkafka.pair import DevClusters, print_clusters
from mirror_sink.core.logs import configure_logging


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``kafka`` verb."""
    p = subparsers.add_parser(
        "kafka",
        help="start, stop or show the local source and target Kafka clusters",
        description="Local single-node KRaft clusters named 'source' and 'target', from Maven Central jars.",
    )
    p.add_argument("action", choices=["up", "down", "status"])
    p.add_argument("--hard", action="store_true", help="with 'down': SIGKILL instead of SIGTERM")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Carry out one ``kafka`` action."""
    clusters = DevClusters()
    if args.action == "up":
        clusters.up()
    elif args.action == "down":
        clusters.down(hard=args.hard)
    print_clusters(clusters)
    print(f"data: {clusters.home}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The verbs of ``mirror-sink-dev``."""
    parser = argparse.ArgumentParser(prog="mirror-sink-dev", description=__doc__)
    parser.add_argument("--log-level", default=None, help="DEBUG, INFO (default), WARNING, ERROR")
    sub = parser.add_subparsers(dest="verb", required=True)
    demo.add_parser(sub)
    add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``mirror-sink-dev`` console script."""
    args = build_parser().parse_args(argv)
    configure_logging(args.log_level)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
