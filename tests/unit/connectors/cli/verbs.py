"""What the tests of the connector's verbs (``connectors.cli``) share: a connector config on disk, and a
verb parsed and run as ``mirror-sink`` runs it: its own sub-parser, then ``args.func(args)``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Protocol

#: A mirror from east to west: valid, and touching no cluster until a verb connects.
CONFIG: dict[str, str] = {
    "source.cluster.alias": "east",
    "source.cluster.bootstrap.servers": "east:9092",
    "target.cluster.bootstrap.servers": "west:9092",
}


class Verb(Protocol):
    """A module of ``connectors.cli``."""

    def add_parser(self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None: ...


def config_file(directory: Path, name: str = "orders-mirror", **keys: str) -> Path:
    """The connector ``name``'s config, ``CONFIG`` with ``keys`` over it, as Connect JSON in ``directory``."""
    path = directory / f"{name}.json"
    path.write_text(json.dumps({"name": name, "config": {**CONFIG, **keys}}))
    return path


def broken_file(directory: Path) -> Path:
    """A config that is not JSON."""
    path = directory / "broken.json"
    path.write_text('{"name": "orders-mirror", "config": {')
    return path


def invalid_file(directory: Path) -> Path:
    """A connector config without its target cluster."""
    path = directory / "invalid.json"
    path.write_text(json.dumps({"name": "orders-mirror", "config": {"source.cluster.bootstrap.servers": "east:9092"}}))
    return path


def parse(verb: Verb, *argv: str) -> argparse.Namespace:
    """``mirror-sink ARGV`` parsed with ``verb`` the only one known."""
    parser = argparse.ArgumentParser(prog="mirror-sink")
    verb.add_parser(parser.add_subparsers(dest="verb", required=True))
    return parser.parse_args(list(argv))


def run(verb: Verb, *argv: str) -> int:
    """The exit code of ``mirror-sink ARGV``."""
    args = parse(verb, *argv)
    return int(args.func(args))
