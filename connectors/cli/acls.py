"""``mirror-sink acls CONFIG``: the exact ACLs the connector's principal needs, as kafka-acls commands."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.clients import clients
from mirror_sink.core.clients.authorization import principal_of
from mirror_sink.core.settings.config_files import load_connector_config
from mirror_sink.topics.required_acls import required_acls, source_fence_acls, verify_and_drill_acls
from mirror_sink.topics.source_discovery import SourceDiscovery

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``acls`` verb."""
    p = subparsers.add_parser(
        "acls",
        help="print the ACLs the connector's principal needs on each cluster",
        description="The least-privilege ACLs for a connector config: a table, then kafka-acls.sh commands. "
        "Source topics come from --topics, or from the source cluster (listing it with the config's settings). "
        "The last rows (optional) are what mirror-sink verify and drill need besides.",
    )
    p.add_argument("config", type=Path, help="the connector config (Connect JSON or .properties)")
    p.add_argument("--topics", help="comma-separated source topics (default: those the config mirrors now)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Print the table and the commands; 2 on a bad config, 1 when the source cannot be listed."""
    try:
        config = MirrorSinkConfig.parse(load_connector_config(args.config))
    except ConfigError as exc:
        log.error("invalid connector config: %s", exc)
        return 2
    if args.topics:
        topics = [t.strip() for t in args.topics.split(",") if t.strip()]
    else:
        try:
            admin = clients.admin(config.source_admin(), f"{config.name}-acls")
            topics = sorted(m.source_topic for m in SourceDiscovery(config, admin).discover().values())
        except TaskFailure as exc:
            log.error("cannot list the source topics (give them with --topics): %s", exc)
            return 1
    acls = required_acls(config, topics) + verify_and_drill_acls(config) + source_fence_acls()
    principals = {"source": principal_of(config.source_admin()), "target": principal_of(config.target_admin())}
    print(f"{'cluster':<7} {'operation':<16} {'resource':<17} {'name':<48} {'pattern':<8} {'needed':<8} why")
    for a in acls:
        needed = "required" if a.required else "optional"
        print(
            f"{a.cluster:<7} {a.operation:<16} {a.resource_type:<17} {a.resource_name:<48} {a.pattern:<8} "
            f"{needed:<8} {a.why}"
        )
    for cluster in ("source", "target"):
        print(f"\n# {cluster} cluster ({principals[cluster]}):")
        for a in acls:
            if a.cluster == cluster:
                principal = principals[cluster].split(" ", 1)[0]
                print(f"kafka-acls.sh --bootstrap-server <{cluster}> {a.kafka_acls_args(principal)}")
    return 0
