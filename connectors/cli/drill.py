"""``mirror-sink drill CONFIG``: a DR rehearsal while production runs, its report kept on the target."""

from __future__ import annotations

import argparse
import logging
import re
from pathlib import Path

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.settings.config_files import load_connector_config
from mirror_sink.failover.rehearsal.drill import Drill, DrillRefused

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``drill`` verb."""
    p = subparsers.add_parser(
        "drill",
        help="rehearse a failover while production runs: RPO, drill groups, time-to-ready, verify",
        description="Touches no real group and no real topic. Reads a cut (the source's ends, the mirror's "
        "positions: the report gives the window), measures the RPO at it (records, bytes, seconds not yet "
        "mirrored), places a copy of each selected source group on the target (mirror-sink-drill.{drill id}.{group}), "
        "reads a canary of N records from each copy and from the group on the source and compares them, times "
        "translate, commit and first canary read, verifies the last records of every partition, and keeps the "
        "report in mirror-sink-drills.{source alias}.internal on the target. The drill groups are deleted "
        "afterwards unless --keep. Exit 0: passed; 1: a mismatch, a group it could not place, or refused; "
        "2: a bad config.",
    )
    p.add_argument("config", type=Path, help="the connector's config (Connect JSON or .properties)")
    p.add_argument("--groups", metavar="REGEX", help="source groups to rehearse (default: the config's groups filter)")
    p.add_argument("--canary", type=int, default=10, metavar="N", help="records per partition read on both sides")
    p.add_argument(
        "--verify-last", type=int, default=1000, metavar="N", help="verify the last N target offsets of each partition"
    )
    p.add_argument("--keep", action="store_true", help="keep the drill groups on the target afterwards")
    p.add_argument("--report", type=Path, metavar="PATH", help="also write the JSON report to PATH")
    p.add_argument("--markdown", type=Path, metavar="PATH", help="also write the Markdown report to PATH")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """0 when the drill passed, 1 when it failed or was refused, 2 for a bad config."""
    try:
        config = MirrorSinkConfig.parse(load_connector_config(args.config))
        drill = Drill(config, groups=args.groups, canary=args.canary, verify_last=args.verify_last, keep=args.keep)
    except (ConfigError, re.error) as exc:
        log.error("cannot drill: %s", exc)
        print(f"drill refused: {exc}", flush=True)
        return 2
    try:
        report = drill.run()
    except (DrillRefused, TaskFailure) as exc:
        print(f"drill refused: {exc}", flush=True)
        return 1
    print(report.markdown(), flush=True)
    if args.report is not None:
        args.report.write_text(report.to_json() + "\n")
    if args.markdown is not None:
        args.markdown.write_text(report.markdown() + "\n")
    return 0 if report.passed else 1
