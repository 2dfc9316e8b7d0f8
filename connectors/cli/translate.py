"""``mirror-sink translate CONFIG``: any consumer's offsets, or a Spark checkpoint, translated exactly."""

from __future__ import annotations

import argparse
import json
import logging
import re
from pathlib import Path

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.settings.config_files import load_connector_config
from mirror_sink.failover.checkpoints.offset_translator import Direction, OffsetTranslator, TopicOffset
from mirror_sink.failover.checkpoints.spark_checkpoint import CheckpointRefused, rewrite_checkpoint

log = logging.getLogger(__name__)

_OFFSET = re.compile(r"(?P<topic>[A-Za-z0-9._-]+):(?P<partition>\d+):(?P<offset>-?\d+)")


def _offset(value: str) -> TopicOffset:
    match = _OFFSET.fullmatch(value)
    if match is None:
        raise argparse.ArgumentTypeError(f"{value!r} is not TOPIC:PARTITION:OFFSET")
    if int(match["offset"]) < -2:
        raise argparse.ArgumentTypeError(f"{value!r}: an offset is >= 0, or -2 (earliest) or -1 (latest)")
    return TopicOffset(match["topic"], int(match["partition"]), int(match["offset"]))


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``translate`` verb."""
    p = subparsers.add_parser(
        "translate",
        help="translate any consumer's offsets (or a Spark checkpoint) exactly between the clusters",
        description="Translate offsets of consumers that keep them outside consumer groups (Spark checkpoints, "
        "Flink state, a database) with the connector's offset syncs, read from the target. Each answer is "
        "exact, or says why not: skipped-range (deleted on the source before it was mirrored), before-syncs "
        "(older than the offset syncs kept), not-yet-mirrored, not-mirrored. With --spark-checkpoint, a "
        "Structured Streaming query's checkpoint is copied to --out with its Kafka offsets rewritten for the "
        "target. Exit 0: every offset exact (the checkpoint written); 1: some offset has no exact answer "
        "(nothing written); 2: a bad config or arguments.",
    )
    p.add_argument("config", type=Path, help="the connector's config (Connect JSON or .properties)")
    p.add_argument(
        "--offset",
        type=_offset,
        action="append",
        default=[],
        metavar="TOPIC:PARTITION:OFFSET",
        help="an offset to translate (the next record to read, as Kafka commits it); repeat for more",
    )
    p.add_argument(
        "--direction",
        choices=[d.value for d in Direction],
        default=Direction.SOURCE_TO_TARGET.value,
        help="source-to-target (default; source topic names) or target-to-source (target topic names)",
    )
    p.add_argument("--spark-checkpoint", type=Path, metavar="DIR", help="a Structured Streaming checkpoint to rewrite")
    p.add_argument("--out", type=Path, metavar="DIR", help="where the rewritten checkpoint goes (a new directory)")
    p.add_argument("--dry-run", action="store_true", help="with --spark-checkpoint: report, write nothing")
    p.add_argument("--json", action="store_true", help="print the answers as JSON")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """0 when every offset translates exactly, 1 when one does not (or the target cannot be read), 2 for bad input."""
    try:
        if args.spark_checkpoint is None and not args.offset:
            raise ConfigError("--offset", "name at least one TOPIC:PARTITION:OFFSET, or --spark-checkpoint DIR")
        if args.spark_checkpoint is not None and (args.offset or (args.out is None and not args.dry_run)):
            raise ConfigError("--spark-checkpoint", "takes --out DIR (or --dry-run) and no --offset")
        config = MirrorSinkConfig.parse(load_connector_config(args.config))
        translator = OffsetTranslator(config)
    except ConfigError as exc:
        print(f"translate refused: {exc}", flush=True)
        return 2
    try:
        if args.spark_checkpoint is not None:
            return _checkpoint(translator, args)
        answers = translator.translate(args.offset, Direction(args.direction))
    except ConfigError as exc:
        print(f"translate refused: {exc}", flush=True)
        return 2
    except (TaskFailure, CheckpointRefused) as exc:
        print(f"translate refused: {exc}", flush=True)
        return 1
    finally:
        translator.close()
    if args.json:
        print(json.dumps({"direction": args.direction, "offsets": [a.to_dict() for a in answers]}, indent=2))
    else:
        for a in answers:
            answer = str(a.answer) if a.answer is not None else "-"
            print(f"{a.asked} -> {answer}  {a.outcome.value}  {a.reason}".rstrip(), flush=True)
    return 0 if all(a.exact for a in answers) else 1


def _checkpoint(translator: OffsetTranslator, args: argparse.Namespace) -> int:
    out = args.out or args.spark_checkpoint.with_name(args.spark_checkpoint.name + ".target")
    report = rewrite_checkpoint(translator.translate, args.spark_checkpoint, out, dry_run=args.dry_run)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print("\n".join(report.lines()), flush=True)
    return 0
