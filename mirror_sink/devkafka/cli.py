"""``mirror-sink dev-kafka up|down|status``: the local source and target clusters from the shell."""

from __future__ import annotations

import argparse

from mirror_sink.devkafka.pair import DevClusters


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``dev-kafka`` verb."""
    p = subparsers.add_parser(
        "dev-kafka",
        help="start, stop or show the local source and target Kafka clusters",
        description="Local single-node KRaft clusters named 'source' and 'target', from Maven Central jars.",
    )
    p.add_argument("action", choices=["up", "down", "status"])
    p.add_argument("--hard", action="store_true", help="with 'down': SIGKILL instead of SIGTERM")
    p.set_defaults(func=run)


def print_clusters(clusters: DevClusters) -> None:
    """One line a cluster: name, bootstrap address, state, pid."""
    for name, c in clusters.clusters.items():
        state = f"running (pid {c.state.pid})" if c.is_running() else "stopped"
        print(f"{name:<7} {c.bootstrap_servers:<22} {state}")


def run(args: argparse.Namespace) -> int:
    """Carry out one ``dev-kafka`` action."""
    clusters = DevClusters()
    if args.action == "up":
        clusters.up()
    elif args.action == "down":
        clusters.down(hard=args.hard)
    print_clusters(clusters)
    print(f"data: {clusters.home}")
    return 0
