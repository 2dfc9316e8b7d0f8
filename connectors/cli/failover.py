"""``mirror-sink failover CONFIG``: commit every selected consumer group's exact position on the target."""

from __future__ import annotations

import argparse
import logging
import re
from pathlib import Path

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.settings.config_files import load_connector_config
from mirror_sink.failover.switch.failover import Failover
from mirror_sink.failover.switch.failover_plan import FailoverRefused
from mirror_sink.failover.switch.source_fence import lift

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``failover`` verb."""
    p = subparsers.add_parser(
        "failover",
        help="move consumer groups to the target at their exact positions",
        description="With the source reachable: translate each selected source group's committed offsets exactly "
        "(offset syncs) and commit them to the same-named groups on the target. With the source gone: use the "
        "newest checkpoints. Nothing is committed unless every selected group can be moved.",
    )
    p.add_argument("config", type=Path, help="the mirror's connector config (Connect JSON or .properties)")
    p.add_argument("--groups", help="regex of source groups to move (default: the config's groups / groups.exclude)")
    p.add_argument("--dry-run", action="store_true", help="print the table; commit nothing")
    p.add_argument(
        "--wait-caught-up",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="first wait up to this long for the mirror to reach the source's last stable offsets (refuse if not)",
    )
    p.add_argument(
        "--fence-source",
        action="store_true",
        help="planned mode only: before the cut, fence the producers of the mirrored topics on the source "
        "(transactional ones by their epoch; every principal by a DENY WRITE ACL where the source has an "
        "authorizer, lifted by the failback), then report records written after the cut",
    )
    p.add_argument(
        "--lift-source-fence",
        action="store_true",
        help="lift the DENY WRITE ACLs --fence-source added (after a failover that did not finish, to give the "
        "source back to its producers); nothing else",
    )
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """0 when every group moved (or the dry run planned), 1 when refused, 2 for a bad config or pattern."""
    try:
        config = MirrorSinkConfig.parse(load_connector_config(args.config))
        if args.groups:
            re.compile(args.groups)
    except ConfigError as exc:
        log.error("invalid connector config: %s", exc)
        return 2
    except re.error as exc:
        log.error("invalid --groups regex %r: %s", args.groups, exc)
        return 2
    failover = Failover(config)
    if args.lift_source_fence:
        return _lift(failover, args)
    try:
        if args.fence_source:
            failover.fence_source(args.groups, dry_run=args.dry_run)
        plan = failover.plan(args.groups, args.wait_caught_up)
        print(plan.table(), flush=True)
        if args.dry_run:
            print("dry run: nothing committed")
            return 0
        moved = failover.commit(plan)
    except (FailoverRefused, TaskFailure) as exc:
        print(f"failover refused: {exc}", flush=True)
        if failover.write_denied:
            print(
                f"the source stays fenced (writes denied on {', '.join(failover.write_denied)}): run the failover "
                "again to finish it, or lift the fence with --lift-source-fence",
                flush=True,
            )
        return 1
    print(f"failover done: {moved} groups moved ({plan.mode} mode)")
    if args.fence_source:
        late = failover.late_records(plan)
        for line in late:
            print(f"late: {line}", flush=True)
        print(
            f"records written on the source after the cut: {'none' if not late else f'on {len(late)} partitions'}"
            + ("" if not late else " (not lost: the mirror copies them while it runs, a failback keeps them after)"),
            flush=True,
        )
    return 0


def _lift(failover: Failover, args: argparse.Namespace) -> int:
    """``--lift-source-fence``: the DENY WRITE ACLs off every mirrored source topic."""
    try:
        topics = failover.mirrored_topics()
        if args.dry_run:
            print(f"dry run: would lift the write fence on {', '.join(topics)}")
            return 0
        lifted = lift(failover.config, topics, f"{failover.config.name}-failover")
    except (FailoverRefused, TaskFailure) as exc:
        print(f"lifting the source fence refused: {exc}", flush=True)
        return 1
    print(f"lifted {lifted} DENY WRITE ACLs on {', '.join(topics)}", flush=True)
    return 0
