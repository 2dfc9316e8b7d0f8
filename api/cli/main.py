"""The ``mirror-sink`` command line."""

from __future__ import annotations

import argparse
import sys
from typing import TypeAlias

from api.cli import passwd as passwd_cli
from api.cli import spark as spark_cli
from api.cli import standalone
from api.cli import worker as worker_cli
from connectors.cli import acls as acls_cli
from connectors.cli import audit as audit_cli
from connectors.cli import drill as drill_cli
from connectors.cli import failback as failback_cli
from connectors.cli import failover as failover_cli
from connectors.cli import translate as translate_cli
from connectors.cli import verify as verify_cli
from mirror_sink import __version__
from mirror_sink.core.runtime.allocator import tune_malloc
from mirror_sink.core.runtime.logs import configure_logging

Verbs: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def verb_parser(prog: str, description: str | None) -> tuple[argparse.ArgumentParser, Verbs]:
    """A command with ``--version``, ``--log-level`` and verbs (each verb sets ``func``)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--version", action="version", version=f"{prog} {__version__}")
    parser.add_argument("--log-level", default=None, help="DEBUG, INFO (default), WARNING, ERROR")
    parser.add_argument(
        "--log-format",
        default=None,
        choices=("text", "json"),
        help="text (default) or json lines (connector, task fields)",
    )
    return parser, parser.add_subparsers(dest="verb", required=True)


def run_verb(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse ``argv``, set up logging and run the chosen verb; its exit code."""
    args = parser.parse_args(argv)
    configure_logging(args.log_level, args.log_format)
    return int(args.func(args))


def build_parser() -> argparse.ArgumentParser:
    """All verbs of the ``mirror-sink`` command."""
    parser, sub = verb_parser("mirror-sink", __doc__)
    standalone.add_parser(sub)
    worker_cli.add_parsers(sub)
    spark_cli.add_parser(sub)
    failover_cli.add_parser(sub)
    failback_cli.add_parser(sub)
    verify_cli.add_parser(sub)
    translate_cli.add_parser(sub)
    drill_cli.add_parser(sub)
    audit_cli.add_parser(sub)
    passwd_cli.add_parser(sub)
    acls_cli.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    tune_malloc()  # before any thread starts: see mirror_sink.core.runtime.allocator
    return run_verb(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
