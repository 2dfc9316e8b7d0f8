"""``mirror-sink audit CONFIG``: the connector's kept DR drills, chained by hash, as evidence."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.formats.drills import drills_topic
from mirror_sink.core.settings.config_files import load_connector_config
from mirror_sink.failover.rehearsal.audit import audit
from mirror_sink.failover.rehearsal.drill import read_drills


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``audit`` verb."""
    p = subparsers.add_parser(
        "audit",
        help="the kept DR drills (with their verifications) as an audit trail, its hash chain checked",
        description="Read every drill report kept on the target for the connector, check that each carries the "
        "SHA-256 of the report kept before it (a report deleted or edited afterwards breaks the next link), and "
        "print the last N as a table: outcome, RPO, time to ready, verification, hash. Exit 0: the chain is "
        "intact; 1: a link is broken (named) or the target cannot be read; 2: a bad config.",
    )
    p.add_argument("config", type=Path, help="the connector's config (Connect JSON or .properties)")
    p.add_argument("--last", type=int, default=20, metavar="N", help="entries shown (default 20; all are checked)")
    p.add_argument("--report", type=Path, metavar="PATH", help="also write the JSON report to PATH")
    p.add_argument("--markdown", type=Path, metavar="PATH", help="also write the Markdown report to PATH")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """0 when the chain is intact, 1 when broken or unreadable, 2 for a bad config."""
    try:
        config = MirrorSinkConfig.parse(load_connector_config(args.config))
    except ConfigError as exc:
        print(f"audit refused: {exc}", flush=True)
        return 2
    topic = drills_topic(config.source_alias)
    try:
        reports = read_drills(config.target_consumer(), topic, config.name, f"{config.name}-audit")
    except TaskFailure as exc:
        print(f"audit failed: {exc}", flush=True)
        return 1
    result = audit(config.name, reports, args.last)
    print(result.markdown(), flush=True)
    if args.report is not None:
        args.report.write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    if args.markdown is not None:
        args.markdown.write_text(result.markdown() + "\n")
    return 0 if result.intact else 1
