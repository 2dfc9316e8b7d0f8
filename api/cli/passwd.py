"""``mirror-sink passwd FILE USER``: set a REST user's password in a credentials file (an argon2 hash)."""

from __future__ import annotations

import argparse
import getpass
import logging
import sys
from pathlib import Path

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``passwd`` verb."""
    p = subparsers.add_parser(
        "passwd",
        help="set a REST API user's password in a credentials file (rest.basic.auth.credentials.file)",
        description="Write USER's line into FILE with a fresh salted Argon2id hash of the password, "
        "read from stdin when it is not a terminal, else asked for twice. The file is created with mode 0600.",
    )
    p.add_argument("file", type=Path, help="the credentials file (rest.basic.auth.credentials.file)")
    p.add_argument("user", help="the username")
    p.set_defaults(func=main)


def _read_password() -> str:
    if not sys.stdin.isatty():
        # One line from a pipe or a file: scripts and secrets managers feed it so, never on argv
        # (which any user of the host can read in the process table).
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("Password: ")
    if getpass.getpass("Password again: ") != first:
        raise ValueError("the passwords do not match")
    return first


def main(args: argparse.Namespace) -> int:
    """Read the password and write the user's line; 2 if refused."""
    # Imported here: argon2 is start-up cost that the other verbs need not pay.
    from api.rest_credentials import set_password

    try:
        created = set_password(args.file, args.user, _read_password())
    except (ValueError, OSError) as exc:
        log.error("passwd: %s", exc)
        return 2
    log.info("%s user %s in %s", "added" if created else "updated", args.user, args.file)
    return 0
