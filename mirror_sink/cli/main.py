"""The ``mirror-sink`` command line."""

from __future__ import annotations

import argparse
import sys

from mirror_sink import __version__
from mirror_sink.cli import spark as spark_cli
from mirror_sink.cli import standalone
from mirror_sink.cli import worker as worker_cli
from mirror_sink.core.logs import configure_logging


def build_parser() -> argparse.ArgumentParser:
    """All verbs of the ``mirror-sink`` command."""
    parser = argparse.ArgumentParser(prog="mirror-sink", description=__doc__)
    parser.add_argument("--version", action="version", version=f"mirror-sink {__version__}")
    parser.add_argument("--log-level", default=None, help="DEBUG, INFO (default), WARNING, ERROR")
    sub = parser.add_subparsers(dest="verb", required=True)
    standalone.add_parser(sub)
    worker_cli.add_parsers(sub)
    spark_cli.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    configure_logging(args.log_level)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
