"""``mirror-sink spark connector.json``: run a connector's pipeline as a Spark Structured Streaming query."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.runtime.paths import data_dir
from mirror_sink.core.settings.config_files import load_connector_config
from mirror_sink.spark.driver import run_query

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``spark`` verb."""
    p = subparsers.add_parser("spark", help="run a connector (runtime=spark) as a Spark streaming query")
    p.add_argument("config", type=Path, help="connector config (JSON or .properties) with runtime=spark")
    p.add_argument(
        "--master",
        default="local[*]",
        help="spark.master (default local[*], embedded); 'submit' leaves it to spark-submit",
    )
    p.add_argument("--checkpoint", type=Path, help="checkpoint location (default: under the data dir)")
    p.add_argument(
        "--trigger",
        default="available-now",
        help="available-now (mirror what is there, then stop) or processing-time:<interval>",
    )
    p.add_argument(
        "--max-records-per-trigger", type=_count, default=0, help="cap on source offsets per micro-batch (0: none)"
    )
    p.add_argument(
        "--max-bytes-per-trigger",
        type=_count,
        default=0,
        help="cap on source bytes per micro-batch, estimated from the partitions' log sizes "
        "(0: none; needs DESCRIBE on the source cluster)",
    )
    p.set_defaults(func=main)


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative (0 means no cap)")
    return value


def main(args: argparse.Namespace) -> int:
    """Load the config and run the query."""
    try:
        props = load_connector_config(args.config)
        checkpoint = args.checkpoint or data_dir() / "spark-checkpoints" / props.get("name", "connector")
        return run_query(
            props,
            master=None if args.master == "submit" else args.master,
            checkpoint=checkpoint,
            trigger=args.trigger,
            max_records=args.max_records_per_trigger,
            max_bytes=args.max_bytes_per_trigger,
        )
    except ConfigError as exc:
        log.error("invalid connector config: %s", exc)
        return 2
    except TaskFailure as exc:
        log.error("cannot run on Spark: %s", exc)
        return 1
