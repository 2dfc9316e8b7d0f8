"""``mirror-sink verify CONFIG``: the target equals the source, record for record, through the offset map."""

from __future__ import annotations

import argparse
import logging
import re
from pathlib import Path

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.config_files import load_connector_config
from mirror_sink.core.errors import ConfigError, TaskFailure
from mirror_sink.failover.verify import Verifier

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``verify`` verb."""
    p = subparsers.add_parser(
        "verify",
        help="compare the target with the source, record for record, through the offset syncs",
        description="Read the connector's committed offset syncs on the target, then both clusters' committed "
        "records of every synced partition, and compare each target record with the source record it was "
        "mirrored from (key, value, headers, timestamp). A committed target record that maps to no source "
        "offset is a mismatch too. Records that cannot be verified (gone by compaction or retention on either "
        "side, mirrored before the offset syncs kept, skipped on purpose) are counted by reason. Exit 0: no "
        "mismatch; 1: mismatches (the first is named with both offsets); 2: a bad config or offset syncs off.",
    )
    p.add_argument("config", type=Path, help="the connector's config (Connect JSON or .properties)")
    p.add_argument("--topics", metavar="REGEX", help="only target topics matching REGEX (default: every synced one)")
    p.add_argument(
        "--max-bytes-per-second",
        type=float,
        default=None,
        metavar="N",
        help="cap on the bytes read (both clusters together), so verification never competes with mirroring",
    )
    p.add_argument("--report", type=Path, metavar="PATH", help="also write the report as JSON to PATH")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """0 when every verifiable record is equal, 1 on a mismatch or a failure to read, 2 for a bad config."""
    try:
        config = MirrorSinkConfig.parse(load_connector_config(args.config))
        topics = re.compile(args.topics) if args.topics else None
        verifier = Verifier(config, max_bytes_per_s=args.max_bytes_per_second, topics=topics)
    except (ConfigError, re.error) as exc:
        log.error("cannot verify: %s", exc)
        print(f"verify refused: {exc}", flush=True)
        return 2
    try:
        report = verifier.run()
    except TaskFailure as exc:
        print(f"verify failed: {exc}", flush=True)
        return 1
    finally:
        verifier.close()
    print(report.table(), flush=True)
    if args.report is not None:
        args.report.write_text(report.to_json() + "\n")
    return 1 if report.mismatches else 0
