"""``mirror-sink verify CONFIG``: the target equals the source, record for record, through the offset map."""

from __future__ import annotations

import argparse
import json
import logging
import re
from pathlib import Path

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.settings.config_files import load_connector_config
from mirror_sink.failover.rehearsal.partial_transactions import check_copy
from mirror_sink.failover.rehearsal.verify import Verifier

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
        "side, mirrored before the offset syncs kept, skipped on purpose) are counted by reason. With "
        "--source-transactions, source transactions the copy holds only in part are named too. Exit 0: no "
        "mismatch; 1: mismatches (the first is named with both offsets) or a partial source transaction; 2: a bad "
        "config or offset syncs off.",
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
    p.add_argument(
        "--source-transactions",
        action="store_true",
        help="also look for committed source transactions the copy holds only in part (at the shadow group's "
        "offsets), from the source's transaction markers and __transaction_state (READ on it); exit 1 when one "
        "is found",
    )
    p.add_argument(
        "--transactions-window",
        type=int,
        default=10_000,
        metavar="N",
        help="offsets read on each side of each partition's position for --source-transactions (default 10000)",
    )
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
        check = (
            check_copy(config, window=args.transactions_window, client_id=f"{config.name}-verify")
            if args.source_transactions
            else None
        )
    except TaskFailure as exc:
        print(f"verify failed: {exc}", flush=True)
        return 1
    finally:
        verifier.close()
    print(report.table(), flush=True)
    if check is not None:
        print("\n".join(check.lines()), flush=True)
    if args.report is not None:
        body = json.loads(report.to_json())
        if check is not None:
            body["source_transactions"] = check.to_dict()
        args.report.write_text(json.dumps(body, indent=2) + "\n")
    return 1 if report.mismatches or (check is not None and check.partial) else 0
