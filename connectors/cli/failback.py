"""``mirror-sink failback CONFIG``: the way back after a failover, from its durable record."""

from __future__ import annotations

import argparse
import json
import logging
import shlex
from pathlib import Path

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.settings.config_files import load_connector_config
from mirror_sink.failover.failback.failback import Failback
from mirror_sink.failover.failback.failback_link import FailbackRefused
from mirror_sink.failover.switch.failover_plan import FailoverRefused

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``failback`` verb."""
    p = subparsers.add_parser(
        "failback",
        help="start the way back after a failover: keep what diverged, set up the reverse link",
        description="From the config of the connector that failed over (old primary -> new primary): read its "
        "newest failover record on the new primary and check it belongs to these clusters; report the records "
        "the old primary holds past the failover's cut (never mirrored) and copy them byte for byte into "
        "{topic}.diverged-{failover id}.internal there; write the reverse link's connector config and start its "
        "offsets at the cut, so only what was written on the new primary since the failover goes home, under "
        "the original names. Nothing is deleted. Then run the reverse link until it has caught up, and move the "
        "groups home with 'mirror-sink failover' on its config.",
    )
    p.add_argument("config", type=Path, help="the forward connector's config (Connect JSON or .properties)")
    p.add_argument("--dry-run", action="store_true", help="report what diverged; keep, write and commit nothing")
    p.add_argument(
        "--reverse-config",
        type=Path,
        metavar="PATH",
        help="where to write the reverse link's config (default: {name}-failback.json beside CONFIG)",
    )
    p.add_argument("--report", type=Path, metavar="PATH", help="also write the divergence report as JSON to PATH")
    p.add_argument(
        "--finish",
        action="store_true",
        help="once the reverse link has caught up and is stopped: move the groups home exactly and set the forward "
        "link to go on from the old primary's end",
    )
    p.add_argument("--groups", help="with --finish: regex of groups to move home (default: the reverse link's groups)")
    p.add_argument(
        "--wait-caught-up",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="with --finish: first wait up to this long for the reverse link to have caught up (refuse if not)",
    )
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """0 when the reverse link is ready (or the dry run reported), 1 when refused, 2 for a bad config."""
    try:
        forward = MirrorSinkConfig.parse(load_connector_config(args.config))
    except ConfigError as exc:
        log.error("invalid connector config: %s", exc)
        return 2
    failback = Failback(forward)
    if args.finish:
        return _finish(failback, args)
    try:
        plan = failback.plan()
        print(plan.report.table(), flush=True)
        print(plan.drift.text(), flush=True)
        if args.dry_run:
            _write_report(args.report, plan.to_json())
            print("dry run: nothing kept, written or committed")
            return 0
        report = failback.start(plan)
    except (FailbackRefused, TaskFailure) as exc:
        print(f"failback refused: {exc}", flush=True)
        return 1
    _write_report(args.report, plan.to_json(report))
    path = args.reverse_config or args.config.with_name(f"{forward.name}-failback.json")
    name = plan.reverse["name"]
    path.write_text(json.dumps({"name": name, "config": plan.reverse}, indent=2) + "\n")
    print(f"{report.records} records diverged and are kept on the old primary; reverse link config: {path}")
    print(f"next: mirror-sink run {shlex.quote(str(path))}; stop the producers on the new primary; once it has")
    print(f"      caught up, stop it and run: {finish_command(args.config, path, forward)}")
    return 0


def finish_command(config: Path, reverse: Path, forward: MirrorSinkConfig) -> str:
    """The complete ``--finish`` command for this failback. It names the reverse link's config as
    written (an operator's edits count); that config keeps the forward link's ``groups`` and
    ``groups.exclude``, so the finish moves home exactly the groups that may have failed over."""
    words = ["mirror-sink", "failback", str(config), "--finish", "--reverse-config", str(reverse)]
    command = " ".join(shlex.quote(w) for w in [*words, "--wait-caught-up", "300"])
    return f"{command}  (moves groups {forward.groups!r}, except {forward.groups_exclude!r})"


def _finish(failback: Failback, args: argparse.Namespace) -> int:
    try:
        if args.reverse_config is not None:
            reverse = MirrorSinkConfig.parse(load_connector_config(args.reverse_config))
        else:
            reverse = failback.reverse()
        moved = failback.finish(reverse, args.groups, args.wait_caught_up, dry_run=args.dry_run)
    except ConfigError as exc:
        log.error("invalid reverse link config: %s", exc)
        return 2
    except (FailbackRefused, FailoverRefused, TaskFailure) as exc:
        print(f"failback refused: {exc}", flush=True)
        return 1
    if not args.dry_run:
        home = failback.forward.source_bootstrap
        print(f"failback done: {moved} groups moved home")
        print(f"switch producers and consumers to the old primary now ({home}): transactional producers resume")
        print("there with their transactional.id; then start the forward connector again")
    return 0


def _write_report(path: Path | None, text: str) -> None:
    if path is not None:
        path.write_text(text + "\n")
