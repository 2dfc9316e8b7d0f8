"""``mirror-sink-dev``: the developer's command: local clusters (``kafka up|down|status``) and the demo.

It lives beside the product, never inside it: nothing in ``mirror_sink``, ``connectors`` or ``api``
imports this package.
"""

from __future__ import annotations

import argparse
import sys

from api.cli.main import run_verb, verb_parser
from devkafka import demo
from devkafka.pair import DevClusters, print_clusters
from devkafka.replicated import ReplicatedPair


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``kafka`` verb."""
    p = subparsers.add_parser(
        "kafka",
        help="start, stop or show the local source and target Kafka clusters",
        description="Local KRaft clusters named 'source' and 'target', from Maven Central jars: single-node by "
        "default, or replicated (--brokers 3: three broker+controller nodes each, replication factor 3, "
        "min.insync.replicas 2).",
    )
    p.add_argument("action", choices=["up", "down", "status"])
    p.add_argument("--hard", action="store_true", help="with 'down': SIGKILL instead of SIGTERM")
    p.add_argument(
        "--secured",
        action="store_true",
        help="a second pair with SASL_SSL (SCRAM-SHA-512), mTLS and an authorizer; prints its client settings",
    )
    p.add_argument(
        "--brokers",
        type=int,
        default=1,
        help="nodes per cluster: 1 (default) or 3 or more for a replicated pair (kept apart from the single-node one)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Carry out one ``kafka`` action."""
    if args.brokers != 1 and (args.secured or args.brokers < 3):
        print("--brokers takes 1, or 3 or more (a quorum that survives one loss), and not with --secured")
        return 2
    clusters: DevClusters | ReplicatedPair
    if args.secured:
        clusters = DevClusters(DevClusters().home.with_name("dev-kafka-secured"), secured=True)
    elif args.brokers > 1:
        clusters = ReplicatedPair(DevClusters().home.with_name(f"dev-kafka-{args.brokers}x"), size=args.brokers)
    else:
        clusters = DevClusters()
    if args.action == "up":
        clusters.up()
    elif args.action == "down":
        clusters.down(hard=args.hard)
    print_clusters(clusters)
    print(f"data: {clusters.home}")
    if isinstance(clusters, DevClusters) and args.secured and args.action != "down":
        print_client_settings(clusters)
    return 0


def print_client_settings(clusters: DevClusters) -> None:
    """The secured pair's client settings, as connector keys: super user ``admin`` and least-privilege ``mirror``."""
    for name, cluster in clusters.clusters.items():
        assert cluster.security is not None
        print(f"\n# {name}: SASL_SSL {cluster.bootstrap_servers}, mTLS {cluster.listener('MTLS')}")
        for user in ("admin", "mirror"):
            print(f"#   as {user}:")
            for key, value in cluster.security.sasl_ssl(cluster.bootstrap_servers, user).items():
                print(f"{name}.cluster.{key}={value}")


def build_parser() -> argparse.ArgumentParser:
    """The verbs of ``mirror-sink-dev``."""
    parser, sub = verb_parser("mirror-sink-dev", __doc__)
    demo.add_parser(sub)
    add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``mirror-sink-dev`` console script."""
    return run_verb(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
